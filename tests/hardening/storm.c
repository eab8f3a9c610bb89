/* tests/hardening/storm.c: a driver-API program that launches as fast as the driver lets it.
 *
 *   storm THREADS LAUNCHES [pause]
 *
 * THREADS threads each launch a kernel LAUNCHES times, then synchronize. With `pause` it then prints
 * "paused", waits for a line on stdin (the test stalls, kills or restarts the collector meanwhile) and
 * makes kAfterPause synchronous memsets on the main thread: a phase the test can count in a capture.
 * The output depends only on the arguments and the results the driver returned. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kAfterPause = 1000 };

static CUcontext g_ctx;
static CUfunction g_fn;
static CUdeviceptr g_buf;
static long g_launches;

static void* worker(void* arg)
{
    long* failures = arg;
    void* params[] = {&g_buf};
    cuCtxSetCurrent(g_ctx);
    for (long i = 0; i < g_launches; ++i)
        if (cuLaunchKernel(g_fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++*failures;
    if (cuStreamSynchronize(NULL) != CUDA_SUCCESS) ++*failures;
    return NULL;
}

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: storm THREADS LAUNCHES [pause]\n");
        return 2;
    }
    const int threads = atoi(argv[1]);
    g_launches = atol(argv[2]);
    const int pause = argc > 3 && strcmp(argv[3], "pause") == 0;
    if (threads < 1 || threads > 64 || g_launches < 0) return 2;

    /* The simulated driver loads no code: any image names a module, any name a kernel in it. */
    static const char image[] = "storm module";
    CUdevice dev;
    CUmodule mod;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&g_ctx, dev) || cuCtxSetCurrent(g_ctx) ||
        cuModuleLoadData(&mod, image) || cuModuleGetFunction(&g_fn, mod, "storm_kernel") || cuMemAlloc(&g_buf, 4096)) {
        fprintf(stderr, "storm: driver set-up failed\n");
        return 1;
    }
    pthread_t t[64];
    long failures[64] = {0};
    for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, &failures[i]);
    long failed = 0;
    for (int i = 0; i < threads; ++i) {
        pthread_join(t[i], NULL);
        failed += failures[i];
    }
    printf("%d threads x %ld launches, %ld failed\n", threads, g_launches, failed);
    if (pause) {
        printf("paused\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) return 3;
        long memsetFailures = 0;
        for (int i = 0; i < kAfterPause; ++i)
            if (cuMemsetD8(g_buf, (unsigned char)i, 4096) != CUDA_SUCCESS) ++memsetFailures;
        printf("%d memsets after the pause, %ld failed\n", kAfterPause, memsetFailures);
    }
    cuMemFree(g_buf);
    cuModuleUnload(mod);
    cuDevicePrimaryCtxRelease(dev);
    return failed ? 1 : 0;
}
