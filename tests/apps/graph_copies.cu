// graph_copies: a captured graph of copies in every direction, memsets of each width and kernels, replayed
// many times: an HtoD and a DtoH copy with pinned host memory, a DtoD copy, a 2D DtoH copy, cudaMemsetAsync
// (D8), cuMemsetD32Async (looked up by cudaGetDriverEntryPointByVersion: cudart has no 32-bit memset),
// cudaMemset2DAsync (D2D8) and two kernels. Outside the graph, one DtoD copy and one kernel launch, so the
// graph rows and the plain rows must be told apart. Pageable host memory cannot be captured (a staged
// copy blocks the host), so the graph holds pinned copies only. Prints what the copies and memsets
// left in host memory: kernels do not run on the simulated GPU, copies and memsets do.
#include "app_common.h"

#include <cuda.h>

constexpr int kReplays = 100;
constexpr int kElems = 1 << 12;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kThreads = 128;
constexpr int kBlocks = kElems / kThreads;
constexpr int kFillKernelsPerGraph = 2;
constexpr int kMixKernelsPerGraph = 1;
constexpr int kHtoDPerGraph = 1;
constexpr int kDtoHPerGraph = 1;    // linear, kBytes
constexpr int kDtoH2DPerGraph = 1;  // kWidth x kHeight
constexpr int kDtoDPerGraph = 1;
constexpr int kMemsetD8PerGraph = 1;
constexpr int kMemsetD32PerGraph = 1;
constexpr int kMemset2DPerGraph = 1;
constexpr size_t kWidth = 256;  // bytes per row of the 2D memset and copy
constexpr size_t kHeight = 8;
constexpr size_t kBytes2D = kWidth * kHeight;
constexpr int kCopiesPerGraph = kHtoDPerGraph + kDtoHPerGraph + kDtoH2DPerGraph + kDtoDPerGraph;
constexpr int kMemsetsPerGraph = kMemsetD8PerGraph + kMemsetD32PerGraph + kMemset2DPerGraph;
constexpr int kKernelsPerGraph = kFillKernelsPerGraph + kMixKernelsPerGraph;
constexpr int kNodesPerGraph = kCopiesPerGraph + kMemsetsPerGraph + kKernelsPerGraph;
constexpr int kPlainDtoD = 1;
constexpr int kPlainMixKernels = 1;

__global__ void graph_fill(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = float(i);
}

__global__ void graph_mix(float* x, const float* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

using MemsetD32Async = CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream);

int main()
{
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CK(cudaGetDriverEntryPointByVersion("cuMemsetD32Async", &fn, 3020, cudaEnableDefault, &found));
    if (!fn || found != cudaDriverEntryPointSuccess) {
        std::fprintf(stderr, "graph_copies: cuMemsetD32Async not found\n");
        return 1;
    }
    const auto memsetD32Async = reinterpret_cast<MemsetD32Async>(fn);

    float *hostIn = nullptr, *hostOut = nullptr, *a = nullptr, *b = nullptr;
    unsigned char *host2D = nullptr, *pitched = nullptr;
    size_t pitch = 0;
    CK(cudaMallocHost(&hostIn, kBytes));
    CK(cudaMallocHost(&hostOut, kBytes));
    CK(cudaMallocHost(&host2D, kBytes2D));
    CK(cudaMalloc(&a, kBytes));
    CK(cudaMalloc(&b, kBytes));
    CK(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, kWidth, kHeight));
    for (int i = 0; i < kElems; ++i) hostIn[i] = float(i);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < kMemsetD8PerGraph; ++i) CK(cudaMemsetAsync(b, 0, kBytes, s));
    for (int i = 0; i < kHtoDPerGraph; ++i) CK(cudaMemcpyAsync(a, hostIn, kBytes, cudaMemcpyHostToDevice, s));
    for (int i = 0; i < kFillKernelsPerGraph; ++i) {
        graph_fill<<<kBlocks, kThreads, 0, s>>>(b, kElems);
        CK_LAUNCH();
    }
    for (int i = 0; i < kMixKernelsPerGraph; ++i) {
        graph_mix<<<kBlocks, kThreads, 0, s>>>(b, a, kElems);
        CK_LAUNCH();
    }
    for (int i = 0; i < kDtoDPerGraph; ++i) CK(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, s));
    for (int i = 0; i < kMemsetD32PerGraph; ++i) {
        // 2.0f's bit pattern over the first half of a: the copy out shows it.
        if (CUresult rc = memsetD32Async(CUdeviceptr(a), 0x40000000u, kElems / 2, s)) {
            std::fprintf(stderr, "graph_copies: cuMemsetD32Async failed: %d\n", int(rc));
            return 1;
        }
    }
    for (int i = 0; i < kDtoHPerGraph; ++i) CK(cudaMemcpyAsync(hostOut, a, kBytes, cudaMemcpyDeviceToHost, s));
    for (int i = 0; i < kMemset2DPerGraph; ++i) CK(cudaMemset2DAsync(pitched, pitch, 7, kWidth, kHeight, s));
    for (int i = 0; i < kDtoH2DPerGraph; ++i) {
        CK(cudaMemcpy2DAsync(host2D, kWidth, pitched, pitch, kWidth, kHeight, cudaMemcpyDeviceToHost, s));
    }
    cudaGraph_t graph;
    CK(cudaStreamEndCapture(s, &graph));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(graph, nullptr, &nodes));
    if (nodes != size_t(kNodesPerGraph)) {
        std::fprintf(stderr, "graph_copies: captured %zu nodes, expected %d\n", nodes, kNodesPerGraph);
        return 1;
    }
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));

    for (int r = 0; r < kReplays; ++r) CK(cudaGraphLaunch(exec, s));
    for (int i = 0; i < kPlainDtoD; ++i) CK(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, s));
    for (int i = 0; i < kPlainMixKernels; ++i) {
        graph_mix<<<kBlocks, kThreads, 0, s>>>(b, a, kElems);
        CK_LAUNCH();
    }
    CK(cudaStreamSynchronize(s));

    size_t sevens = 0;
    for (size_t i = 0; i < kBytes2D; ++i) sevens += host2D[i] == 7;
    std::printf("graph_copies: %d replays of %zu nodes; out[0]=%g out[%d]=%g; 2D bytes set: %zu of %zu\n", kReplays,
                nodes, double(hostOut[0]), kElems - 1, double(hostOut[kElems - 1]), sevens, kBytes2D);

    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(pitched));
    CK(cudaFree(b));
    CK(cudaFree(a));
    CK(cudaFreeHost(host2D));
    CK(cudaFreeHost(hostOut));
    CK(cudaFreeHost(hostIn));
    return 0;
}
