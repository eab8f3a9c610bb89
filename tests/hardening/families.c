/* tests/hardening/families.c: calls a few entry points of every family the shim hooks (context and
 * events, module, alloc, transfer, launch, sync, graph) and prints each result code, going on after
 * failures. Run with SIMCUDA_FAIL failing a family: the app must see the same codes, exit status and
 * output with and without gpuspy. The exit status is the number of failed calls (at most 100). */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

static int g_failed;

static void show(const char* what, CUresult rc)
{
    const char* name = "?";
    if (cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = "unknown";
    printf("%-24s %d %s\n", what, (int)rc, name);
    if (rc != CUDA_SUCCESS) ++g_failed;
}

static void CUDA_CB hostFn(void* arg) { ++*(int*)arg; }

int main(void)
{
    static const char image[] = "families module"; /* the simulated driver loads no code */
    static unsigned char host[1 << 16];
    CUdevice dev = 0;
    CUcontext ctx = NULL, own = NULL, popped = NULL;
    CUmodule mod = NULL;
    CUlibrary lib = NULL;
    CUkernel kern = NULL;
    CUfunction fn = NULL, fromKernel = NULL;
    CUdeviceptr d = 0, d2 = 0, managed = 0, async = 0;
    void* pinned = NULL;
    void* hostAlloc = NULL;
    CUstream stream = NULL;
    CUevent ev = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    int hostRuns = 0;

    show("cuInit", cuInit(0));
    show("cuDeviceGet", cuDeviceGet(&dev, 0));
    /* context and events */
    show("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    show("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    show("cuCtxCreate", cuCtxCreate(&own, NULL, 0, dev));
    show("cuCtxPopCurrent", cuCtxPopCurrent(&popped));
    show("cuCtxPushCurrent", cuCtxPushCurrent(own));
    show("cuCtxPopCurrent", cuCtxPopCurrent(&popped));
    show("cuCtxDestroy", cuCtxDestroy(own));
    show("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    /* module */
    show("cuModuleLoadData", cuModuleLoadData(&mod, image));
    show("cuModuleGetFunction", cuModuleGetFunction(&fn, mod, "families_kernel"));
    show("cuLibraryLoadData", cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    show("cuLibraryGetKernel", cuLibraryGetKernel(&kern, lib, "families_kernel"));
    show("cuKernelGetFunction", cuKernelGetFunction(&fromKernel, kern));
    /* alloc */
    show("cuMemAlloc", cuMemAlloc(&d, sizeof host));
    show("cuMemAlloc", cuMemAlloc(&d2, sizeof host));
    show("cuMemAllocHost", cuMemAllocHost(&pinned, sizeof host));
    show("cuMemHostAlloc", cuMemHostAlloc(&hostAlloc, 4096, 0));
    show("cuMemAllocManaged", cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL));
    show("cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    show("cuMemAllocAsync", cuMemAllocAsync(&async, 4096, stream));
    /* transfer */
    memset(host, 7, sizeof host);
    show("cuMemcpyHtoD", cuMemcpyHtoD(d, host, sizeof host));
    show("cuMemcpyDtoD", cuMemcpyDtoD(d2, d, sizeof host));
    show("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(d, pinned, sizeof host, stream));
    show("cuMemsetD8", cuMemsetD8(d, 1, sizeof host));
    show("cuMemsetD32Async", cuMemsetD32Async(d2, 2, sizeof host / 4, stream));
    show("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync(pinned, d2, sizeof host, stream));
    show("cuMemcpyDtoH", cuMemcpyDtoH(host, d, sizeof host));
    /* launch */
    void* params[] = {&d};
    show("cuLaunchKernel", cuLaunchKernel(fn, 2, 1, 1, 64, 1, 1, 0, stream, params, NULL));
    show("cuLaunchKernel", cuLaunchKernel(fromKernel ? fromKernel : fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    show("cuLaunchHostFunc", cuLaunchHostFunc(stream, hostFn, &hostRuns));
    /* sync */
    show("cuEventCreate", cuEventCreate(&ev, 0));
    show("cuEventRecord", cuEventRecord(ev, stream));
    show("cuStreamWaitEvent", cuStreamWaitEvent(NULL, ev, 0));
    show("cuEventSynchronize", cuEventSynchronize(ev));
    show("cuEventQuery", cuEventQuery(ev));
    show("cuStreamQuery", cuStreamQuery(stream));
    show("cuStreamSynchronize", cuStreamSynchronize(stream));
    show("cuCtxSynchronize", cuCtxSynchronize());
    /* graph */
    show("cuStreamBeginCapture", cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    show("cuLaunchKernel", cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, NULL));
    show("cuMemsetD8Async", cuMemsetD8Async(d, 3, sizeof host, stream));
    show("cuStreamEndCapture", cuStreamEndCapture(stream, &graph));
    show("cuGraphInstantiate", cuGraphInstantiate(&exec, graph, 0));
    show("cuGraphLaunch", cuGraphLaunch(exec, stream));
    show("cuGraphLaunch", cuGraphLaunch(exec, stream));
    show("cuStreamSynchronize", cuStreamSynchronize(stream));
    /* and back */
    show("cuMemFreeAsync", cuMemFreeAsync(async, stream));
    show("cuStreamSynchronize", cuStreamSynchronize(stream));
    show("cuMemFree", cuMemFree(d));
    show("cuMemFree", cuMemFree(d2));
    show("cuMemFree", cuMemFree(managed));
    show("cuMemFreeHost", cuMemFreeHost(pinned));
    show("cuMemFreeHost", cuMemFreeHost(hostAlloc));
    show("cuModuleUnload", cuModuleUnload(mod));
    show("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(dev));
    printf("host function ran %d time(s); %d call(s) failed\n", hostRuns, g_failed);
    return g_failed > 100 ? 100 : g_failed;
}
