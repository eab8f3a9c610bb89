/* drv_late_dlopen: a program that is not linked with libcuda: it works a while, then dlopens libcuda.so.1,
 * takes cuGetProcAddress_v2 with dlsym and fetches every other entry point through it, the way cuBLAS and
 * other libraries do. It launches with both the legacy and the per-thread cuLaunchKernel. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "drv_fatbin.h"

enum { kLegacyLaunches = 6 };
enum { kPerThreadLaunches = 4 };
enum { kElems = 2048 };
enum { kThreads = 128 };
enum { kBlocks = kElems / kThreads };
enum { kBytes = kElems * 4 }; /* floats */

static PFN_cuGetProcAddress_v12000 g_getProc;

static void* entry(const char* name, cuuint64_t flags)
{
    void* fn = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult rc = g_getProc(name, &fn, CUDA_VERSION, flags, &found);
    if (rc != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || fn == NULL) {
        fprintf(stderr, "drv_late_dlopen: cuGetProcAddress_v2(%s, flags=%llu) failed: rc=%d found=%d\n", name,
                (unsigned long long)flags, (int)rc, (int)found);
        exit(1);
    }
    return fn;
}

#define DCK(call)                                                                                  \
    do {                                                                                           \
        const CUresult dck_rc_ = (call);                                                           \
        if (dck_rc_ != CUDA_SUCCESS) {                                                             \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)dck_rc_);    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(void)
{
    /* Some host work first, so libcuda arrives well after the process started. */
    volatile double acc = 0;
    for (int i = 0; i < 2000000; ++i) acc += i * 0.5;
    const struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);

    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "drv_late_dlopen: dlopen(libcuda.so.1): %s\n", dlerror());
        return 1;
    }
    g_getProc = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    if (!g_getProc) {
        fprintf(stderr, "drv_late_dlopen: dlsym(cuGetProcAddress_v2): %s\n", dlerror());
        return 1;
    }
    const cuuint64_t legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)entry("cuInit", legacy);
    PFN_cuDeviceGet_v2000 deviceGet = (PFN_cuDeviceGet_v2000)entry("cuDeviceGet", legacy);
    PFN_cuDevicePrimaryCtxRetain_v7000 retain = (PFN_cuDevicePrimaryCtxRetain_v7000)entry("cuDevicePrimaryCtxRetain", legacy);
    PFN_cuDevicePrimaryCtxRelease_v11000 release =
        (PFN_cuDevicePrimaryCtxRelease_v11000)entry("cuDevicePrimaryCtxRelease", legacy);
    PFN_cuCtxSetCurrent_v4000 setCurrent = (PFN_cuCtxSetCurrent_v4000)entry("cuCtxSetCurrent", legacy);
    PFN_cuModuleLoadData_v2000 loadData = (PFN_cuModuleLoadData_v2000)entry("cuModuleLoadData", legacy);
    PFN_cuModuleGetFunction_v2000 getFunction = (PFN_cuModuleGetFunction_v2000)entry("cuModuleGetFunction", legacy);
    PFN_cuModuleUnload_v2000 unload = (PFN_cuModuleUnload_v2000)entry("cuModuleUnload", legacy);
    PFN_cuMemAlloc_v3020 memAlloc = (PFN_cuMemAlloc_v3020)entry("cuMemAlloc", legacy);
    PFN_cuMemFree_v3020 memFree = (PFN_cuMemFree_v3020)entry("cuMemFree", legacy);
    PFN_cuMemcpyHtoD_v3020 htod = (PFN_cuMemcpyHtoD_v3020)entry("cuMemcpyHtoD", legacy);
    PFN_cuMemcpyDtoH_v3020 dtoh = (PFN_cuMemcpyDtoH_v3020)entry("cuMemcpyDtoH", legacy);
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)entry("cuLaunchKernel", legacy);
    PFN_cuLaunchKernel_v4000 launchPerThread = /* same signature as the _ptsz entry */
        (PFN_cuLaunchKernel_v4000)entry("cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    PFN_cuCtxSynchronize_v13000 ctxSync = (PFN_cuCtxSynchronize_v13000)entry("cuCtxSynchronize", legacy);

    static float host[kElems];
    for (int i = 0; i < kElems; ++i) host[i] = (float)i;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr buf;
    DCK(init(0));
    DCK(deviceGet(&dev, 0));
    DCK(retain(&ctx, dev));
    DCK(setCurrent(ctx));
    DCK(loadData(&mod, drv_fatbin));
    DCK(getFunction(&fn, mod, "drv_scale"));
    DCK(memAlloc(&buf, kBytes));
    DCK(htod(buf, host, kBytes));
    float a = 0.5f;
    int n = kElems;
    void* args[] = {&buf, &a, &n};
    for (int i = 0; i < kLegacyLaunches; ++i) DCK(launch(fn, kBlocks, 1, 1, kThreads, 1, 1, 0, NULL, args, NULL));
    for (int i = 0; i < kPerThreadLaunches; ++i) {
        DCK(launchPerThread(fn, kBlocks, 1, 1, kThreads, 1, 1, 0, NULL, args, NULL));
    }
    DCK(ctxSync(ctx));
    DCK(dtoh(host, buf, kBytes));
    DCK(memFree(buf));
    DCK(unload(mod));
    DCK(release(dev));
    return 0;
}
