/* hostile_kernel: a driver-API program whose kernel is named like an HTML injection, so that the viewer
 * test can check the page shows capture strings as text. The simulated driver accepts any module image
 * and any function name. Two threads, each with its own stream: copies in, launches, waits, copies out. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define HOSTILE_NAME "<img src=x onerror=alert(1)>"

enum { kLaunches = 20, kElems = 4096, kBytes = kElems * 4 };

#define CK(call)                                                                                   \
    do {                                                                                           \
        const CUresult ck_rc_ = (call);                                                            \
        if (ck_rc_ != CUDA_SUCCESS) {                                                              \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)ck_rc_);     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUcontext g_ctx;
static CUfunction g_fn;

static void work(CUstream stream)
{
    static __thread float host[kElems];
    CUdeviceptr buf;
    CK(cuMemAlloc(&buf, kBytes));
    CK(cuMemcpyHtoD(buf, host, kBytes));
    int n = kElems;
    void* args[] = {&buf, &n};
    for (int i = 0; i < kLaunches; ++i) {
        CK(cuLaunchKernel(g_fn, kElems / 128, 1, 1, 128, 1, 1, 0, stream, args, NULL));
        if (i % 5 == 4) CK(stream ? cuStreamSynchronize(stream) : cuCtxSynchronize());
    }
    CK(cuMemcpyDtoH(host, buf, kBytes));
    CK(cuMemFree(buf));
}

static void* worker(void* arg)
{
    (void)arg;
    CUstream stream;
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    work(stream);
    CK(cuStreamDestroy(stream));
    return NULL;
}

int main(void)
{
    /* A module the driver can load (the simulated driver parses images as a real one does and refuses
       what no device could run); the function is looked up by the hostile name all the same. */
    static const char image[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n";
    CUdevice dev;
    CUmodule mod;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&g_ctx, NULL, 0, dev));
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&g_fn, mod, HOSTILE_NAME));
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    work(NULL);
    pthread_join(t, NULL);
    CK(cuModuleUnload(mod));
    CK(cuCtxDestroy(g_ctx));
    return 0;
}
