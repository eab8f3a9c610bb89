// Measures the driver calls a profiler makes on every hooked call (cuCtxGetCurrent, cuCtxGetDevice, cuStreamGetId,
// cuStreamGetCtx, cuPointerGetAttribute), from N threads at once, optionally interleaved with kernel launches.
// Usage: simcuda_hot_calls_bench [threads=8] [iterations=200000] [launch_every=0] [copy_mb=0]   (links -lcuda)
// copy_mb > 0 adds a thread that keeps doing synchronous host-to-device copies of that size meanwhile.
#include <cuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int g_iters = 200000, g_launchEvery = 0, g_copyMb = 0;
static volatile int g_stop = 0;
static CUcontext g_ctx;
static CUfunction g_kernel;

static double nowSec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CK(x)                                                              \
    do {                                                                   \
        CUresult rc_ = (x);                                                \
        if (rc_ != CUDA_SUCCESS) {                                         \
            fprintf(stderr, "hot_calls_bench: %s -> %d\n", #x, (int)rc_); \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

static void* worker(void* out)
{
    CK(cuCtxSetCurrent(g_ctx));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 1 << 20));
    const double t0 = nowSec();
    double worstIter = 0;
    for (int i = 0; i < g_iters; ++i) {
        const double it0 = nowSec();
        CUcontext c;
        CUdevice dev;
        unsigned long long id;
        CUcontext sc;
        unsigned mt;
        CK(cuCtxGetCurrent(&c));
        CK(cuCtxGetDevice(&dev));
        CK(cuStreamGetId(s, &id));
        CK(cuStreamGetCtx(s, &sc));
        CK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 64));
        if (g_launchEvery && i % g_launchEvery == 0) CK(cuLaunchKernel(g_kernel, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        const double it = nowSec() - it0;
        if (it > worstIter) worstIter = it;
    }
    ((double*)out)[0] = nowSec() - t0;
    ((double*)out)[1] = worstIter;
    CK(cuStreamSynchronize(s));
    CK(cuMemFree(d));
    CK(cuStreamDestroy(s));
    return NULL;
}

static void* copier(void* unused)
{
    (void)unused;
    CK(cuCtxSetCurrent(g_ctx));
    const size_t bytes = (size_t)g_copyMb << 20;
    CUdeviceptr d;
    CK(cuMemAlloc(&d, bytes));
    char* h = calloc(1, bytes);
    while (!g_stop) CK(cuMemcpyHtoD(d, h, bytes));
    free(h);
    CK(cuMemFree(d));
    return NULL;
}

int main(int argc, char** argv)
{
    const int threads = argc > 1 ? atoi(argv[1]) : 8;
    if (argc > 2) g_iters = atoi(argv[2]);
    if (argc > 3) g_launchEvery = atoi(argv[3]);
    if (argc > 4) g_copyMb = atoi(argv[4]);
    if (threads < 1 || threads > 256 || g_iters < 1) return 2;
    CK(cuInit(0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, 0));
    CK(cuCtxSetCurrent(g_ctx));
    static const char image[16] = "not a fatbin";
    CUmodule mod;
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&g_kernel, mod, "bench_kernel"));
    pthread_t tids[256];
    double secs[256][2];
    pthread_t copyTid;
    if (g_copyMb > 0) pthread_create(&copyTid, NULL, copier, NULL);
    const double t0 = nowSec();
    for (int t = 0; t < threads; ++t) pthread_create(&tids[t], NULL, worker, &secs[t]);
    double worst = 0, worstIter = 0;
    for (int t = 0; t < threads; ++t) {
        pthread_join(tids[t], NULL);
        if (secs[t][0] > worst) worst = secs[t][0];
        if (secs[t][1] > worstIter) worstIter = secs[t][1];
    }
    const double wall = nowSec() - t0;
    g_stop = 1;
    if (g_copyMb > 0) pthread_join(copyTid, NULL);
    const double calls = 5.0 * g_iters;
    printf("hot_calls_bench: %d threads x %d iterations x 5 calls%s%s: %.1f ns per call per thread (slowest thread), "
           "slowest iteration %.1f us, wall %.3f s\n",
           threads, g_iters, g_launchEvery ? " + launches" : "", g_copyMb ? " + copier" : "", worst / calls * 1e9, worstIter * 1e6, wall);
    return 0;
}
