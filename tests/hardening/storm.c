/* tests/hardening/storm.c: a driver-API program that launches as fast as the driver lets it.
 *
 *   storm THREADS LAUNCHES [pause]
 *
 * THREADS threads each launch a kernel LAUNCHES times, then synchronize. With `pause` it then prints
 * "paused", waits for a line on stdin (the test stalls, kills or restarts the collector meanwhile) and
 * makes kAfterPause synchronous memsets on the main thread: a phase the test can count in a capture.
 * The output depends only on the arguments and the results the driver returned. */
#include "driver_setup.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kAfterPause = 1000 };

static struct HzDriver g_drv;
static long g_launches;

static void* worker(void* arg)
{
    long* failures = arg;
    void* params[] = {&g_drv.buf};
    cuCtxSetCurrent(g_drv.ctx);
    for (long i = 0; i < g_launches; ++i)
        if (cuLaunchKernel(g_drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++*failures;
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

    if (hzDriverSetUp(&g_drv, "storm", "storm_kernel")) return 1;
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
        if (hzPause()) return 3;
        long memsetFailures = 0;
        for (int i = 0; i < kAfterPause; ++i)
            if (cuMemsetD8(g_drv.buf, (unsigned char)i, 4096) != CUDA_SUCCESS) ++memsetFailures;
        printf("%d memsets after the pause, %ld failed\n", kAfterPause, memsetFailures);
    }
    hzDriverTearDown(&g_drv);
    return failed ? 1 : 0;
}
