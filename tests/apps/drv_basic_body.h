/* drv_basic_body.h: the driver-API program shared by drv_basic.c (legacy default stream) and drv_ptds.c
 * (CUDA_API_PER_THREAD_DEFAULT_STREAM, so cuda.h maps the calls to their _ptsz/_ptds symbols): create a
 * context, load the embedded fatbin, copy in, launch, synchronize, copy out, free. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "drv_fatbin.h"

enum { kLaunches = 10 };
enum { kElems = 4096 };
enum { kThreads = 128 };
enum { kBlocks = kElems / kThreads };
enum { kBytes = kElems * 4 }; /* floats */

#include "drv_check.h"

int main(void)
{
    static float host[kElems];
    for (int i = 0; i < kElems; ++i) host[i] = (float)i;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr buf;
    DCK(cuInit(0));
    DCK(cuDeviceGet(&dev, 0));
    DCK(cuCtxCreate(&ctx, NULL, 0, dev));
    DCK(cuModuleLoadData(&mod, drv_fatbin));
    DCK(cuModuleGetFunction(&fn, mod, "drv_scale"));
    DCK(cuMemAlloc(&buf, kBytes));
    DCK(cuMemcpyHtoD(buf, host, kBytes));
    float a = 2.0f;
    int n = kElems;
    void* args[] = {&buf, &a, &n};
    for (int i = 0; i < kLaunches; ++i) {
        DCK(cuLaunchKernel(fn, kBlocks, 1, 1, kThreads, 1, 1, 0, NULL, args, NULL));
    }
    DCK(cuCtxSynchronize());
    DCK(cuMemcpyDtoH(host, buf, kBytes));
    DCK(cuMemFree(buf));
    DCK(cuModuleUnload(mod));
    DCK(cuCtxDestroy(ctx));
    return 0;
}
