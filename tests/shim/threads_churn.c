/* tests/shim/threads_churn.c: thousands of short-lived threads, each making driver calls, four at a
 * time: the shim's per-thread state must be reused (bounded memory) and every call still recorded. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>

static CUcontext g_ctx;
static CUdeviceptr g_buf;

static void* worker(void* arg)
{
    (void)arg;
    cuCtxSetCurrent(g_ctx);
    cuMemsetD8Async(g_buf, 1, 256, 0);
    cuStreamSynchronize(0);
    return NULL;
}

int main(void)
{
    CUdevice dev;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&g_ctx, dev) || cuCtxSetCurrent(g_ctx)) return 1;
    if (cuMemAlloc(&g_buf, 4096)) return 1;
    for (int round = 0; round < 500; ++round) {
        pthread_t t[4];
        for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, worker, NULL);
        for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
    }
    printf("2000 threads done\n");
    return 0;
}
