/* tests/hardening/quiet_after_burst.c: quiet threads after other threads' burst.
 *
 *   quiet_after_burst THREADS LAUNCHES QUIET
 *
 * An "early" thread makes one memset, then waits. THREADS burst threads each launch a kernel LAUNCHES
 * times as fast as the driver lets them, synchronize, and stay alive (idle, like a worker pool) until
 * the end. The program prints "paused" and waits for a line on stdin (the test stalls the collector
 * during the burst and lets it run again meanwhile). Then the early thread makes QUIET spaced
 * cuMemsetD8 calls while a new thread, started only now, makes QUIET spaced cuMemsetD16 calls (no
 * thread has exited yet: none leaves its share of gpuspy's queue behind for them). A capture must hold
 * every one of them, whatever the burst did to the other threads' share.
 * The output depends only on the arguments and the results the driver returned. */
#include "driver_setup.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static struct HzDriver g_drv;
static long g_launches;
static int g_quiet;
static pthread_barrier_t g_burstDone;  /* the burst threads and main */
static pthread_barrier_t g_end;        /* the burst threads and main: they may exit */
static pthread_barrier_t g_earlyReady; /* the early thread made its first call */
static pthread_barrier_t g_earlyGo;    /* the early thread may start its quiet calls */

static void* burstWorker(void* arg)
{
    long* failures = arg;
    void* params[] = {&g_drv.buf};
    cuCtxSetCurrent(g_drv.ctx);
    for (long i = 0; i < g_launches; ++i)
        if (cuLaunchKernel(g_drv.fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS) ++*failures;
    if (cuStreamSynchronize(NULL) != CUDA_SUCCESS) ++*failures;
    pthread_barrier_wait(&g_burstDone);
    pthread_barrier_wait(&g_end);
    return NULL;
}

/* QUIET synchronous memsets, one about every 20 us: far below what gpuspy's drain thread keeps up with. */
static long quietCalls(int elementBytes)
{
    long failures = 0;
    const struct timespec gap = {0, 20000};
    for (int i = 0; i < g_quiet; ++i) {
        const CUresult rc = elementBytes == 1 ? cuMemsetD8(g_drv.buf, (unsigned char)i, 4096)
                                              : cuMemsetD16(g_drv.buf, (unsigned short)i, 2048);
        if (rc != CUDA_SUCCESS) ++failures;
        nanosleep(&gap, NULL);
    }
    return failures;
}

static void* earlyThread(void* arg)
{
    long* failures = arg;
    cuCtxSetCurrent(g_drv.ctx);
    if (cuMemsetD8(g_drv.buf, 0, 4096) != CUDA_SUCCESS) ++*failures;
    pthread_barrier_wait(&g_earlyReady);
    pthread_barrier_wait(&g_earlyGo);
    *failures += quietCalls(1);
    return NULL;
}

static void* newThread(void* arg)
{
    long* failures = arg;
    cuCtxSetCurrent(g_drv.ctx);
    *failures += quietCalls(2);
    return NULL;
}

int main(int argc, char** argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: quiet_after_burst THREADS LAUNCHES QUIET\n");
        return 2;
    }
    const int threads = atoi(argv[1]);
    g_launches = atol(argv[2]);
    g_quiet = atoi(argv[3]);
    if (threads < 1 || threads > 64 || g_launches < 0 || g_quiet < 0) return 2;

    if (hzDriverSetUp(&g_drv, "quiet_after_burst", "burst_kernel")) return 1;
    pthread_barrier_init(&g_burstDone, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&g_end, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&g_earlyReady, NULL, 2);
    pthread_barrier_init(&g_earlyGo, NULL, 2);

    long earlyFailures = 0, newFailures = 0, failures[64] = {0};
    pthread_t early, fresh, t[64];
    pthread_create(&early, NULL, earlyThread, &earlyFailures);
    pthread_barrier_wait(&g_earlyReady);
    for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, burstWorker, &failures[i]);
    pthread_barrier_wait(&g_burstDone);
    long failed = 0;
    for (int i = 0; i < threads; ++i) failed += failures[i];
    printf("%d threads x %ld launches, %ld failed\n", threads, g_launches, failed);
    if (hzPause()) return 3;

    pthread_create(&fresh, NULL, newThread, &newFailures);
    pthread_barrier_wait(&g_earlyGo);
    pthread_join(fresh, NULL);
    pthread_join(early, NULL);
    printf("%d memsets by the early thread, %d by a new thread, %ld failed\n", g_quiet, g_quiet,
           earlyFailures + newFailures);

    pthread_barrier_wait(&g_end);
    for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
    hzDriverTearDown(&g_drv);
    return failed || earlyFailures || newFailures ? 1 : 0;
}
