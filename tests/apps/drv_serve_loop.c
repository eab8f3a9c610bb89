/* drv_serve_loop: a server that keeps using the GPU until its standard input closes, for the live
 * metrics' test with the real shim (tests/collector/metrics_sim_test.py): rounds of kLaunches launches
 * of drv_scale, a copy in and out and a context synchronize, a round about every millisecond. Prints
 * "ready" once its first round is done, "rounds N" at the end. */
#include <cuda.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "drv_fatbin.h"

enum { kLaunches = 8 };
enum { kElems = 4096 };
enum { kThreads = 128 };
enum { kBytes = kElems * 4 };

#include "drv_check.h"

int main(void)
{
    static float host[kElems];
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
    float a = 1.0f;
    int n = kElems;
    void* args[] = {&buf, &a, &n};
    unsigned long rounds = 0;
    for (;;) {
        DCK(cuMemcpyHtoD(buf, host, kBytes));
        for (int i = 0; i < kLaunches; ++i)
            DCK(cuLaunchKernel(fn, kElems / kThreads, 1, 1, kThreads, 1, 1, 0, NULL, args, NULL));
        DCK(cuCtxSynchronize());
        DCK(cuMemcpyDtoH(host, buf, kBytes));
        if (rounds++ == 0) {
            printf("ready\n");
            fflush(stdout);
        }
        /* Standard input closed (or written to): the server stops. */
        struct pollfd in = {0, POLLIN, 0};
        if (poll(&in, 1, 1) > 0) break;
    }
    DCK(cuMemFree(buf));
    DCK(cuModuleUnload(mod));
    DCK(cuCtxDestroy(ctx));
    printf("rounds %lu\n", rounds);
    return 0;
}
