/* drv_setup_fail: a program whose CUDA calls fail only in the driver's setup and query entry points, which
 * gpuspy hooks for their failures only (shim/hooks/failure_only.cpp). It takes the driver API the way cudart
 * and Python bindings do: dlopen("libcuda.so.1"), then cuGetProcAddress_v2 for most entry points and dlsym
 * for one (ctypes' way).
 *   drv_setup_fail binding: as numba 0.56 on a CUDA 13 driver. cuInit succeeds; cuCtxGetDevice, which CUDA 13
 *     answers with cuCtxGetDevice_v2 (it takes a context), is called with none, as the old one-argument
 *     binding leaves it: CUDA_ERROR_INVALID_CONTEXT. It then asks for a device the driver does not have
 *     (CUDA_ERROR_INVALID_DEVICE) and gives up with exit status 1. Nothing it calls succeeds and is recorded.
 *   drv_setup_fail mixed: a program that works (a primary context, a module, an allocation, a copy), among
 *     whose calls a few setup calls fail: cuModuleGetGlobal of a name the module does not define
 *     (CUDA_ERROR_NOT_FOUND, twice), an attribute of a device it does not have (CUDA_ERROR_INVALID_DEVICE).
 *     Exit status 0.
 * It prints each call's result, the same with and without gpuspy. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "drv_fatbin.h"

enum { kBadOrdinal = 99 };
enum { kBytes = 4096 };

static PFN_cuGetProcAddress_v12000 g_getProc;

static void* entry(const char* name, int version)
{
    void* fn = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (g_getProc(name, &fn, version, 0, &found) != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS) return NULL;
    return fn;
}

static void report(const char* what, CUresult rc) { printf("%s: %d\n", what, (int)rc); }

/* The binding's first query of its context's device: where it fails. */
static CUresult askContextDevice(PFN_cuCtxGetDevice_v13000 getDevice, CUdevice* dev)
{
    return getDevice(dev, NULL); /* the old binding passes one argument: no context */
}

static int binding(void* lib)
{
    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)entry("cuInit", 2000);
    PFN_cuCtxGetDevice_v13000 getDevice = (PFN_cuCtxGetDevice_v13000)entry("cuCtxGetDevice", 13000);
    PFN_cuDeviceGet_v2000 deviceGet = (PFN_cuDeviceGet_v2000)dlsym(lib, "cuDeviceGet");
    if (!init || !getDevice || !deviceGet) {
        fprintf(stderr, "drv_setup_fail: an entry point is missing\n");
        return 2;
    }
    report("cuInit", init(0));
    CUdevice dev = -1;
    const CUresult rc = askContextDevice(getDevice, &dev);
    report("cuCtxGetDevice_v2", rc);
    report("cuDeviceGet(99)", deviceGet(&dev, kBadOrdinal));
    return rc == CUDA_SUCCESS ? 0 : 1;
}

/* The module's global the program looks up under a name it does not define. */
static CUresult lookUpGlobal(PFN_cuModuleGetGlobal_v3020 getGlobal, CUmodule mod, CUdeviceptr* p, size_t* n)
{
    return getGlobal(p, n, mod, "drv_missing_global");
}

static int mixed(void)
{
    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)entry("cuInit", 2000);
    PFN_cuDeviceGet_v2000 deviceGet = (PFN_cuDeviceGet_v2000)entry("cuDeviceGet", 2000);
    PFN_cuDeviceGetAttribute_v2000 attr = (PFN_cuDeviceGetAttribute_v2000)entry("cuDeviceGetAttribute", 2000);
    PFN_cuDevicePrimaryCtxRetain_v7000 retain = (PFN_cuDevicePrimaryCtxRetain_v7000)entry("cuDevicePrimaryCtxRetain", 7000);
    PFN_cuCtxSetCurrent_v4000 setCurrent = (PFN_cuCtxSetCurrent_v4000)entry("cuCtxSetCurrent", 4000);
    PFN_cuCtxGetDevice_v13000 getDevice = (PFN_cuCtxGetDevice_v13000)entry("cuCtxGetDevice", 13000);
    PFN_cuModuleLoadData_v2000 load = (PFN_cuModuleLoadData_v2000)entry("cuModuleLoadData", 2000);
    PFN_cuModuleGetGlobal_v3020 getGlobal = (PFN_cuModuleGetGlobal_v3020)entry("cuModuleGetGlobal", 3020);
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)entry("cuMemAlloc", 3020);
    PFN_cuMemcpyHtoD_v3020 copy = (PFN_cuMemcpyHtoD_v3020)entry("cuMemcpyHtoD", 3020);
    PFN_cuMemFree_v3020 release = (PFN_cuMemFree_v3020)entry("cuMemFree", 3020);
    if (!init || !deviceGet || !attr || !retain || !setCurrent || !getDevice || !load || !getGlobal || !alloc || !copy ||
        !release) {
        fprintf(stderr, "drv_setup_fail: an entry point is missing\n");
        return 2;
    }
    report("cuInit", init(0));
    CUdevice dev = -1;
    report("cuDeviceGet(0)", deviceGet(&dev, 0));
    int value = 0;
    report("cuDeviceGetAttribute(0)", attr(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    report("cuDeviceGetAttribute(99)", attr(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, kBadOrdinal));
    CUcontext ctx = NULL;
    report("cuDevicePrimaryCtxRetain", retain(&ctx, dev));
    report("cuCtxSetCurrent", setCurrent(ctx));
    CUdevice current = -1;
    report("cuCtxGetDevice_v2(current)", getDevice(&current, NULL));
    CUmodule mod = NULL;
    report("cuModuleLoadData", load(&mod, drv_fatbin));
    CUdeviceptr global = 0;
    size_t globalBytes = 0;
    for (int i = 0; i < 2; ++i) report("cuModuleGetGlobal_v2(drv_missing_global)", lookUpGlobal(getGlobal, mod, &global, &globalBytes));
    CUdeviceptr d = 0;
    static unsigned char host[kBytes];
    memset(host, 7, sizeof host);
    report("cuMemAlloc_v2", alloc(&d, kBytes));
    report("cuMemcpyHtoD_v2", copy(d, host, kBytes));
    report("cuMemFree_v2", release(d));
    return 0;
}

int main(int argc, char** argv)
{
    if (argc != 2 || (strcmp(argv[1], "binding") != 0 && strcmp(argv[1], "mixed") != 0)) {
        fprintf(stderr, "usage: %s binding|mixed\n", argv[0]);
        return 2;
    }
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "drv_setup_fail: dlopen(libcuda.so.1): %s\n", dlerror());
        return 2;
    }
    g_getProc = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    if (!g_getProc) {
        fprintf(stderr, "drv_setup_fail: dlsym(cuGetProcAddress_v2): %s\n", dlerror());
        return 2;
    }
    return strcmp(argv[1], "binding") == 0 ? binding(lib) : mixed();
}
