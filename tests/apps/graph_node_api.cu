// graph_node_api: a graph built node by node (cudaGraphAdd*Node, with dependencies), no stream capture:
// an HtoD copy (pinned), a memset, two kernels, an empty node joining them, a child graph (one kernel),
// a DtoH copy, a host node. Launched kReplays times; then its api_scale node is switched to api_shift in the exec
// (cudaGraphExecKernelNodeSetParams) and launched kReplaysAfterSwitch times; then the graph's api_add
// node is switched to api_shift (cudaGraphKernelNodeSetParams) and the exec updated from the graph
// (cudaGraphExecUpdate: api_scale is back, api_add is api_shift) and launched kReplaysAfterUpdate times.
#include "app_common.h"

constexpr int kReplays = 40;
constexpr int kReplaysAfterSwitch = 10;
constexpr int kReplaysAfterUpdate = 5;
constexpr int kElems = 1 << 12;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kThreads = 128;
constexpr int kBlocks = kElems / kThreads;
constexpr size_t kMemsetBytes = kBytes / 4;  // set as 32-bit elements
constexpr int kScaleNodes = 1;  // the node switched to api_shift after kReplays launches
constexpr int kAddNodes = 1;
constexpr int kChildKernels = 1;
constexpr int kCopiesIn = 1;
constexpr int kCopiesOut = 1;
constexpr int kMemsets = 1;
constexpr int kHostNodes = 1;
constexpr int kKernelNodes = kScaleNodes + kAddNodes + kChildKernels;
static_assert(kScaleNodes == 1 && kAddNodes == 1 && kChildKernels == 1 && kCopiesIn == 1 && kCopiesOut == 1 && kMemsets == 1 &&
                  kHostNodes == 1,
              "main() adds one node of each");

__global__ void api_scale(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

__global__ void api_add(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 3.0f;
}

__global__ void api_child(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] -= 1.0f;
}

__global__ void api_shift(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

void CUDART_CB countCall(void* p) { ++*static_cast<int*>(p); }

cudaKernelNodeParams kernelParams(void* func, void** args)
{
    cudaKernelNodeParams p{};
    p.func = func;
    p.gridDim = dim3(kBlocks);
    p.blockDim = dim3(kThreads);
    p.sharedMemBytes = 0;
    p.kernelParams = args;
    return p;
}

int main()
{
    float *host = nullptr, *dev = nullptr, *scratch = nullptr;
    CK(cudaMallocHost(&host, kBytes));
    CK(cudaMalloc(&dev, kBytes));
    CK(cudaMalloc(&scratch, kBytes));
    for (int i = 0; i < kElems; ++i) host[i] = float(i);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int n = kElems;
    void* args[] = {&dev, &n};
    void* scratchArgs[] = {&scratch, &n};

    cudaGraph_t child;
    CK(cudaGraphCreate(&child, 0));
    cudaGraphNode_t childKernel;
    cudaKernelNodeParams childParams = kernelParams(reinterpret_cast<void*>(api_child), scratchArgs);
    CK(cudaGraphAddKernelNode(&childKernel, child, nullptr, 0, &childParams));

    cudaGraph_t graph;
    CK(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t copyIn, memset, scale, add, join, childNode, copyOut;
    CK(cudaGraphAddMemcpyNode1D(&copyIn, graph, nullptr, 0, dev, host, kBytes, cudaMemcpyHostToDevice));
    cudaMemsetParams ms{};
    ms.dst = scratch;
    ms.value = 0;
    ms.elementSize = sizeof(unsigned);
    ms.width = kMemsetBytes / sizeof(unsigned);
    ms.height = 1;
    CK(cudaGraphAddMemsetNode(&memset, graph, nullptr, 0, &ms));
    cudaKernelNodeParams scaleParams = kernelParams(reinterpret_cast<void*>(api_scale), args);
    CK(cudaGraphAddKernelNode(&scale, graph, &copyIn, 1, &scaleParams));
    cudaKernelNodeParams addParams = kernelParams(reinterpret_cast<void*>(api_add), scratchArgs);
    CK(cudaGraphAddKernelNode(&add, graph, &memset, 1, &addParams));
    const cudaGraphNode_t both[] = {scale, add};
    CK(cudaGraphAddEmptyNode(&join, graph, both, 2));
    CK(cudaGraphAddChildGraphNode(&childNode, graph, &join, 1, child));
    CK(cudaGraphAddMemcpyNode1D(&copyOut, graph, &childNode, 1, host, dev, kBytes, cudaMemcpyDeviceToHost));
    int hostCalls = 0;
    cudaHostNodeParams hp{};
    hp.fn = countCall;
    hp.userData = &hostCalls;
    cudaGraphNode_t hostNode;
    CK(cudaGraphAddHostNode(&hostNode, graph, &copyOut, 1, &hp));

    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < kReplays; ++r) CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));

    cudaKernelNodeParams shiftParams = kernelParams(reinterpret_cast<void*>(api_shift), args);
    CK(cudaGraphExecKernelNodeSetParams(exec, scale, &shiftParams));
    for (int r = 0; r < kReplaysAfterSwitch; ++r) CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));

    cudaKernelNodeParams shiftScratchParams = kernelParams(reinterpret_cast<void*>(api_shift), scratchArgs);
    CK(cudaGraphKernelNodeSetParams(add, &shiftScratchParams));
    cudaGraphExecUpdateResultInfo info{};
    CK(cudaGraphExecUpdate(exec, graph, &info));
    for (int r = 0; r < kReplaysAfterUpdate; ++r) CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    std::printf("graph_node_api: %d + %d + %d replays of %d kernel nodes, host[1]=%g, host node ran %d times\n", kReplays,
                kReplaysAfterSwitch, kReplaysAfterUpdate, kKernelNodes, double(host[1]), hostCalls);

    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaGraphDestroy(child));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(scratch));
    CK(cudaFree(dev));
    CK(cudaFreeHost(host));
    return 0;
}
