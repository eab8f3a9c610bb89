/* A program that dlopen()s libcuda.so.1 late, after main started, and finds everything through cuGetProcAddress,
 * as cudart and profilers do. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*GetProc)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

static GetProc g_getProc;

static void* lookup(const char* name, int version)
{
    void* fn = NULL;
    CUdriverProcAddressQueryResult st;
    if (g_getProc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS) return NULL;
    return fn;
}

int main(void)
{
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "late_dlopen_app: %s\n", dlerror());
        return 1;
    }
    g_getProc = (GetProc)dlsym(lib, "cuGetProcAddress_v2");
    if (!g_getProc) return 1;
    /* cudart re-fetches cuGetProcAddress through itself; at >= 12000 it must be the _v2 ABI. */
    if (lookup("cuGetProcAddress", 12000) != (void*)g_getProc) {
        fprintf(stderr, "late_dlopen_app: cuGetProcAddress@12000 is not cuGetProcAddress_v2\n");
        return 1;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))lookup("cuInit", 13000);
    CUresult (*retain)(CUcontext*, CUdevice) = (CUresult(*)(CUcontext*, CUdevice))lookup("cuDevicePrimaryCtxRetain", 13000);
    CUresult (*setCurrent)(CUcontext) = (CUresult(*)(CUcontext))lookup("cuCtxSetCurrent", 13000);
    CUresult (*alloc)(CUdeviceptr*, size_t) = (CUresult(*)(CUdeviceptr*, size_t))lookup("cuMemAlloc", 13000);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t) =
        (CUresult(*)(CUdeviceptr, unsigned char, size_t))lookup("cuMemsetD8", 13000);
    CUresult (*sync)(CUcontext) = (CUresult(*)(CUcontext))lookup("cuCtxSynchronize", 13000);
    CUcontext ctx;
    CUdeviceptr d;
    if (!init || !retain || !setCurrent || !alloc || !memset8 || !sync) return 1;
    if (init(0) || retain(&ctx, 0) || setCurrent(ctx) || alloc(&d, 64) || memset8(d, 0x7f, 64) || sync(ctx)) return 1;
    if (((unsigned char*)d)[63] != 0x7f) return 1;
    printf("late_dlopen_app: ok\n");
    return 0;
}
