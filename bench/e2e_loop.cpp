// bench/e2e_loop.cpp: a launch-bound driver-API loop on the simulated driver with its modelled host
// costs on (cuLaunchKernel 3 us, async copy 2 us, ...), linked with -lcuda like an application, so
// that LD_PRELOAD=libgpuspy.so interposes exactly as it would in production. Prints one JSON line
// with the wall time of the timed loop (set-up and a warm-up excluded, the same for every run).
//
//   e2e_loop launch N   N launches of a short kernel, a stream synchronize every 100
//   e2e_loop mixed N    N steps of: 4 KiB pinned HtoD copy, 3 launches, a stream query;
//                       a stream synchronize every 32 steps
#include "bench/bench_common.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void check(CUresult rc, const char* what)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "e2e_loop: %s failed (%d)\n", what, int(rc));
        exit(2);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 3 || (strcmp(argv[1], "launch") != 0 && strcmp(argv[1], "mixed") != 0)) {
        fprintf(stderr, "usage: e2e_loop launch|mixed ITERATIONS\n");
        return 2;
    }
    const bool mixed = strcmp(argv[1], "mixed") == 0;
    const long n = atol(argv[2]);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUstream stream;
    CUdeviceptr buf;
    void* pinned = nullptr;
    constexpr size_t kBytes = 4096;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    static const char kImage[] = "bench module";  // opaque to the simulated driver: loaded as if built for the device
    check(cuModuleLoadData(&mod, kImage), "cuModuleLoadData");
    check(cuModuleGetFunction(&fn, mod, "_Z10e2e_kernelPfi"), "cuModuleGetFunction");
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuMemAlloc(&buf, kBytes), "cuMemAlloc");
    check(cuMemAllocHost(&pinned, kBytes), "cuMemAllocHost");
    int count = 1024;
    void* args[] = {&buf, &count};

    auto step = [&](long i) {
        if (mixed) {
            check(cuMemcpyHtoDAsync(buf, pinned, kBytes, stream), "cuMemcpyHtoDAsync");
            for (int k = 0; k < 3; ++k)
                check(cuLaunchKernel(fn, 8, 1, 1, 128, 1, 1, 0, stream, args, nullptr), "cuLaunchKernel");
            const CUresult q = cuStreamQuery(stream);
            if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY) check(q, "cuStreamQuery");
            if ((i + 1) % 32 == 0) check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        } else {
            check(cuLaunchKernel(fn, 8, 1, 1, 128, 1, 1, 0, stream, args, nullptr), "cuLaunchKernel");
            if ((i + 1) % 100 == 0) check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        }
    };
    const long warm = n / 20 + 1;
    for (long i = 0; i < warm; ++i) step(i);
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");

    const uint64_t t0 = gpuspy::bench::monoNs();
    for (long i = 0; i < n; ++i) step(i);
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    const uint64_t t1 = gpuspy::bench::monoNs();
    printf("{\"mode\":\"%s\",\"iterations\":%ld,\"wall_ns\":%llu,\"ns_per_iteration\":%.1f}\n", argv[1], n,
           (unsigned long long)(t1 - t0), double(t1 - t0) / double(n));
    return 0;
}
