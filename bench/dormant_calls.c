// bench/dormant_calls.c: N rounds of four hooked driver calls (cuLaunchKernel, cuMemcpyHtoDAsync of
// 256 pinned bytes, cuStreamQuery, cuEventRecord) on the simulated driver, for
// bench/dormant_instructions.sh: run under callgrind with and without the shim (dormant: GPUSPY_PAUSED=1)
// at two N, the difference is what the dormant path executes per call, whatever the machine's load.
// Usage: dormant_calls N   (links -lcuda)
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                            \
    do {                                                                 \
        CUresult rc_ = (x);                                              \
        if (rc_ != CUDA_SUCCESS) {                                       \
            fprintf(stderr, "dormant_calls: %s -> %d\n", #x, (int)rc_); \
            exit(1);                                                     \
        }                                                                \
    } while (0)

int main(int argc, char** argv)
{
    const long n = argc > 1 ? atol(argv[1]) : 10000;
    CUcontext ctx;
    CUmodule mod;
    CUfunction kernel;
    CUstream s;
    CUevent ev;
    CUdeviceptr d;
    void* host;
    static const char image[16] = "not a fatbin";
    CK(cuInit(0));
    CK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&kernel, mod, "bench_kernel"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuMemAlloc(&d, 256));
    CK(cuMemAllocHost(&host, 256));
    for (long i = 0; i < n; ++i) {
        CK(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        CK(cuMemcpyHtoDAsync(d, host, 256, s));
        (void)cuStreamQuery(s);
        CK(cuEventRecord(ev, s));
    }
    CK(cuStreamSynchronize(s));
    printf("%ld\n", n);
    return 0;
}
