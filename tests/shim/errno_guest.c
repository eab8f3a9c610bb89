/* tests/shim/errno_guest.c: the shim is a guest: errno and every result and out-parameter the app sees
 * are what the driver gave. Prints them after each call; run_under_shim.sh requires the same stdout
 * with and without gpuspy (errno is seeded before each call, so a clobber shows). */
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define SHOW(call)                                                                      \
    do {                                                                                \
        errno = 4242;                                                                   \
        CUresult rc_ = (call);                                                          \
        printf("%-40s rc=%d errno=%d\n", #call, (int)rc_, errno);                       \
    } while (0)

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d = 0, bad = 0;
    void* pinned = NULL;
    char host[4096];
    SHOW(cuInit(0));
    SHOW(cuDeviceGet(&dev, 0));
    SHOW(cuDevicePrimaryCtxRetain(&ctx, dev));
    SHOW(cuCtxSetCurrent(ctx));
    SHOW(cuMemAlloc(&d, sizeof host));
    SHOW(cuMemAlloc(&bad, (size_t)1 << 62));  /* fails: the out-parameter and code must be the driver's */
    printf("bad=%llu\n", (unsigned long long)bad);
    SHOW(cuMemcpyHtoD(d, host, sizeof host));
    SHOW(cuMemAllocHost(&pinned, 4096));
    SHOW(cuMemcpyDtoHAsync(pinned, d, 4096, 0));
    SHOW(cuStreamQuery(0));
    SHOW(cuStreamSynchronize(0));
    SHOW(cuMemFreeHost(pinned));
    SHOW(cuMemFree(d));
    SHOW(cuMemFree(d));  /* double free: an error code, unchanged */
    return 0;
}
