/* tests/shim/exit_from_thread.c: a driver-API program whose worker threads keep calling the driver
 * while another thread calls exit(3). Under the shim the exit status must stay 3, the process must
 * not hang, and the capture must end cleanly (End record) with what was recorded. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static CUcontext g_ctx;
static CUdeviceptr g_buf;

static void* worker(void* arg)
{
    (void)arg;
    cuCtxSetCurrent(g_ctx);
    for (;;) {
        cuMemsetD8Async(g_buf, 1, 4096, 0);
        cuStreamSynchronize(0);
    }
    return NULL;
}

static void* exiter(void* arg)
{
    (void)arg;
    usleep(50000);
    printf("exiting from a thread\n");
    fflush(stdout);
    exit(3);
}

int main(void)
{
    CUdevice dev;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&g_ctx, dev) || cuCtxSetCurrent(g_ctx)) return 1;
    if (cuMemAlloc(&g_buf, 4096)) return 1;
    pthread_t t[4];
    for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, worker, NULL);
    pthread_create(&t[3], NULL, exiter, NULL);
    pthread_join(t[3], NULL);
    return 0;
}
