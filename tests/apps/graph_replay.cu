// graph_replay: stream capture of a copy in, a few kernels and a copy out, instantiated once and launched
// as a graph many times, with one synchronization at the end.
#include "app_common.h"

constexpr int kReplays = 20;
constexpr int kScaleKernelsPerGraph = 2;
constexpr int kShiftKernelsPerGraph = 1;
constexpr int kKernelsPerGraph = kScaleKernelsPerGraph + kShiftKernelsPerGraph;
constexpr int kCopiesInPerGraph = 1;
constexpr int kCopiesOutPerGraph = 1;
constexpr int kElems = 1 << 14;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kThreads = 256;
constexpr int kBlocks = kElems / kThreads;

__global__ void graph_scale(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

__global__ void graph_shift(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

int main()
{
    float* host = nullptr;
    float* dev = nullptr;
    CK(cudaMallocHost(&host, kBytes));
    CK(cudaMalloc(&dev, kBytes));
    for (int i = 0; i < kElems; ++i) host[i] = float(i);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < kCopiesInPerGraph; ++i) {
        CK(cudaMemcpyAsync(dev, host, kBytes, cudaMemcpyHostToDevice, s));
    }
    for (int i = 0; i < kScaleKernelsPerGraph; ++i) {
        graph_scale<<<kBlocks, kThreads, 0, s>>>(dev, kElems);
        CK_LAUNCH();
    }
    for (int i = 0; i < kShiftKernelsPerGraph; ++i) {
        graph_shift<<<kBlocks, kThreads, 0, s>>>(dev, kElems);
        CK_LAUNCH();
    }
    for (int i = 0; i < kCopiesOutPerGraph; ++i) {
        CK(cudaMemcpyAsync(host, dev, kBytes, cudaMemcpyDeviceToHost, s));
    }
    cudaGraph_t graph;
    CK(cudaStreamEndCapture(s, &graph));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(graph, nullptr, &nodes));
    if (nodes != size_t(kKernelsPerGraph + kCopiesInPerGraph + kCopiesOutPerGraph)) {
        std::fprintf(stderr, "graph_replay: captured %zu nodes, expected %d\n", nodes,
                     kKernelsPerGraph + kCopiesInPerGraph + kCopiesOutPerGraph);
        return 1;
    }
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));

    for (int r = 0; r < kReplays; ++r) CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));

    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dev));
    CK(cudaFreeHost(host));
    return 0;
}
