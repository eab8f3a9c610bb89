/* tests/shim/lib_entry_points.c: the entry points NVIDIA's libraries reach beside launches and copies,
 * resolved as they resolve them (cudart through cuGetProcAddress at the ABI version it was built for,
 * cuFFT by dlsym of the exported name): stream memory operations, a stream callback, a captured graph
 * (the 10.0 capture ABI) instantiated, uploaded and launched, a virtual address reservation with its
 * access, the 8.0 prefetch and the 7.0 primary context reset. Prints each result: the same with and
 * without gpuspy, which must record every one of them (compare_capture --require-api). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void* resolve(const char* name, int version)
{
    void* fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (cuGetProcAddress_v2(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) return NULL;
    return fn;
}

#define SHOW(what, rc) printf("%-28s rc=%d\n", what, (int)(rc))

static void CUDA_CB callback(CUstream s, CUresult status, void* user)
{
    (void)s;
    (void)status;
    ++*(int*)user;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUdeviceptr flag = 0, buf = 0, managed = 0, va = 0;
    int calls = 0;
    SHOW("cuInit", cuInit(0));
    SHOW("cuDeviceGet", cuDeviceGet(&dev, 0));
    SHOW("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    SHOW("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    SHOW("cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    SHOW("cuMemAlloc", cuMemAlloc(&flag, 64));
    SHOW("cuMemAlloc", cuMemAlloc(&buf, 1 << 16));

    CUresult (*writeValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = resolve("cuStreamWriteValue32", 12000);
    CUresult (*waitValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = resolve("cuStreamWaitValue32", 12000);
    CUresult (*addCallback)(CUstream, CUstreamCallback, void*, unsigned) = resolve("cuStreamAddCallback", 12000);
    if (!writeValue32 || !waitValue32 || !addCallback) return 1;
    SHOW("cuStreamWriteValue32", writeValue32(stream, flag, 1, 0));
    SHOW("cuStreamWaitValue32", waitValue32(stream, flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
    SHOW("cuStreamAddCallback", addCallback(stream, callback, &calls, 0));

    /* A graph as cudart 10.0 captured one: a memset node, replayed 3 times after an upload. */
    CUresult (*beginCapture)(CUstream) = resolve("cuStreamBeginCapture", 10000);
    CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long) = resolve("cuGraphInstantiate", 12000);
    CUresult (*upload)(CUgraphExec, CUstream) = resolve("cuGraphUpload", 12000);
    if (!beginCapture || !instantiate || !upload) return 1;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    SHOW("cuStreamBeginCapture", beginCapture(stream));
    SHOW("cuMemsetD32Async", cuMemsetD32Async(buf, 7, 1 << 14, stream));
    SHOW("cuStreamEndCapture", cuStreamEndCapture(stream, &graph));
    SHOW("cuGraphInstantiate", instantiate(&exec, graph, 0));
    /* The same ABI asked for by its own 11.4 name (cudaGraphInstantiateWithFlags). */
    CUresult (*instantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long) =
        resolve("cuGraphInstantiateWithFlags", 11040);
    CUgraphExec exec2 = NULL;
    if (!instantiateWithFlags) return 1;
    SHOW("cuGraphInstantiateWithFlags", instantiateWithFlags(&exec2, graph, 0));
    SHOW("cuGraphExecDestroy", cuGraphExecDestroy(exec2));
    SHOW("cuGraphUpload", upload(exec, stream));
    for (int i = 0; i < 3; ++i) SHOW("cuGraphLaunch", cuGraphLaunch(exec, stream));
    SHOW("cuStreamSynchronize", cuStreamSynchronize(stream));
    printf("callbacks=%d\n", calls);

    /* Virtual memory as NCCL maps it, by dlsym of the exported names as cuFFT resolves them. */
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) =
        lib ? dlsym(lib, "cuMemAddressReserve") : NULL;
    CUresult (*freeVa)(CUdeviceptr, size_t) = lib ? dlsym(lib, "cuMemAddressFree") : NULL;
    if (!reserve || !freeVa) return 1;
    SHOW("cuMemAddressReserve", reserve(&va, 1 << 21, 0, 0, 0));
    SHOW("cuMemAddressFree", freeVa(va, 1 << 21));

    CUresult (*prefetch)(CUdeviceptr, size_t, CUdevice, CUstream) = resolve("cuMemPrefetchAsync", 8000);
    if (!prefetch) return 1;
    SHOW("cuMemAllocManaged", cuMemAllocManaged(&managed, 1 << 16, CU_MEM_ATTACH_GLOBAL));
    SHOW("cuMemPrefetchAsync", prefetch(managed, 1 << 16, dev, stream));
    SHOW("cuStreamSynchronize", cuStreamSynchronize(stream));

    SHOW("cuGraphExecDestroy", cuGraphExecDestroy(exec));
    SHOW("cuGraphDestroy", cuGraphDestroy(graph));
    SHOW("cuMemFree", cuMemFree(managed));
    SHOW("cuMemFree", cuMemFree(buf));
    SHOW("cuMemFree", cuMemFree(flag));
    SHOW("cuStreamDestroy", cuStreamDestroy(stream));
    CUresult (*reset)(CUdevice) = resolve("cuDevicePrimaryCtxReset", 7000);
    if (!reset) return 1;
    SHOW("cuDevicePrimaryCtxReset", reset(dev));
    return 0;
}
