/* A direct driver-API user linked with -lcuda: resolves the real ABI names (cuMemAlloc_v2, cuMemcpyHtoD_v2 or, built
 * with CUDA_API_PER_THREAD_DEFAULT_STREAM, cuMemcpyHtoD_v2_ptds and cuLaunchKernel_ptsz) at link time. */
#include <cuda.h>
#include <stdio.h>

#define CHECK(x)                                                                     \
    do {                                                                             \
        CUresult r_ = (x);                                                           \
        if (r_ != CUDA_SUCCESS) {                                                    \
            fprintf(stderr, "driver_app: %s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)r_); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUstream stream;
    CUevent start, stop;
    CUdeviceptr d;
    float h[4] = {1, 2, 3, 4}, g[4] = {0, 0, 0, 0}, ms = 0;
    static const char image[] = "no fatbin";
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, image));
    CHECK(cuModuleGetFunction(&fn, mod, "driver_app_kernel"));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CHECK(cuMemAlloc(&d, sizeof h));
    CHECK(cuMemcpyHtoD(d, h, sizeof h));
    CHECK(cuEventRecord(start, stream));
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuEventRecord(stop, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuEventElapsedTime(&ms, start, stop));
    CHECK(cuMemcpyDtoH(g, d, sizeof g));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree(d));
    if (g[0] != 1 || g[3] != 4 || ms <= 0) {
        fprintf(stderr, "driver_app: wrong result %g %g elapsed %g\n", g[0], g[3], ms);
        return 1;
    }
    printf("driver_app: ok\n");
    return 0;
}
