// bench/thread_mem.cpp: the application's memory per thread that calls CUDA: T threads each make
// the context current and issue a few launches, copies and queries on their own stream, then wait;
// with every thread alive and past its calls, the process's resident set is read. Run with and
// without LD_PRELOAD=libgpuspy.so; (with - without) / T is gpuspy's resident memory per thread.
//
//   thread_mem T   prints {"threads":T,"rss_base_kib":..,"rss_kib":..,"growth_kib":..}
#include "bench/bench_common.h"

#include <cuda.h>

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

CUcontext g_ctx;
CUfunction g_fn;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
int g_ready = 0;
bool g_release = false;

void check(CUresult rc, const char* what)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "thread_mem: %s failed (%d)\n", what, int(rc));
        exit(2);
    }
}

void calls(CUstream s, CUdeviceptr d, void* host)
{
    void* args[] = {&d};
    for (int i = 0; i < 16; ++i) {
        check(cuLaunchKernel(g_fn, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr), "cuLaunchKernel");
        check(cuMemcpyHtoDAsync(d, host, 256, s), "cuMemcpyHtoDAsync");
        const CUresult q = cuStreamQuery(s);
        if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY) check(q, "cuStreamQuery");
    }
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
}

void* worker(void*)
{
    check(cuCtxSetCurrent(g_ctx), "cuCtxSetCurrent");
    CUstream s;
    CUdeviceptr d;
    static thread_local unsigned char host[256];
    check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuMemAlloc(&d, 256), "cuMemAlloc");
    calls(s, d, host);
    pthread_mutex_lock(&g_lock);
    ++g_ready;
    pthread_cond_broadcast(&g_cond);
    while (!g_release) pthread_cond_wait(&g_cond, &g_lock);
    pthread_mutex_unlock(&g_lock);
    return nullptr;
}

}  // namespace

int main(int argc, char** argv)
{
    const int threads = argc > 1 ? atoi(argv[1]) : 8;
    CUdevice dev;
    CUmodule mod;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&g_ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(g_ctx), "cuCtxSetCurrent");
    static const char kImage[] = "bench module";  // opaque to the simulated driver: loaded as if built for the device
    check(cuModuleLoadData(&mod, kImage), "cuModuleLoadData");
    check(cuModuleGetFunction(&g_fn, mod, "_Z10mem_kernelPf"), "cuModuleGetFunction");
    // The main thread's calls first: gpuspy's per-process start-up (queue, tables, drain thread) is
    // in the base, not in the per-thread growth.
    {
        CUstream s;
        CUdeviceptr d;
        static unsigned char host[256];
        check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        check(cuMemAlloc(&d, 256), "cuMemAlloc");
        calls(s, d, host);
    }
    const long base = gpuspy::bench::rssKiB();
    std::vector<pthread_t> ts(static_cast<size_t>(threads));
    for (pthread_t& t : ts)
        if (pthread_create(&t, nullptr, worker, nullptr) != 0) {
            perror("pthread_create");
            return 2;
        }
    pthread_mutex_lock(&g_lock);
    while (g_ready < threads) pthread_cond_wait(&g_cond, &g_lock);
    const long rss = gpuspy::bench::rssKiB();
    g_release = true;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
    for (pthread_t& t : ts) pthread_join(t, nullptr);
    printf("{\"threads\":%d,\"rss_base_kib\":%ld,\"rss_kib\":%ld,\"growth_kib\":%ld}\n", threads, base, rss, rss - base);
    return 0;
}
