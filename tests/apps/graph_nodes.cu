// graph_nodes: graph nodes stream capture makes beside kernels and copies. A child graph (a kernel and a
// DtoD copy, captured and instantiated first) is launched into a capture, which makes it part of the
// parent; the parent's capture forks into a second stream through an event and joins back through
// another (cudaEventRecord + cudaStreamWaitEvent inside the capture: dependencies, no device work) and
// holds a host function (cudaLaunchHostFunc). The parent is replayed kReplays times, the child on its
// own kChildReplays times. Prints how often the host function ran.
#include "app_common.h"

constexpr int kReplays = 50;
constexpr int kChildReplays = 3;
constexpr int kElems = 1 << 12;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kThreads = 128;
constexpr int kBlocks = kElems / kThreads;
// The child graph: one node_child kernel and one DtoD copy.
constexpr int kChildKernels = 1;
constexpr int kChildCopies = 1;
// The parent: node_main on the origin stream, node_side and a memset on the forked stream, a host
// function, then the child graph.
constexpr int kMainKernels = 1;
constexpr int kSideKernels = 1;
constexpr int kSideMemsets = 1;
constexpr int kHostFuncs = 1;
constexpr int kChildLaunchesPerParent = 1;
constexpr int kParentKernels = kMainKernels + kSideKernels + kChildLaunchesPerParent * kChildKernels;
constexpr int kParentNodes = kParentKernels + kSideMemsets + kHostFuncs + kChildLaunchesPerParent * kChildCopies;

__global__ void node_child(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 0.5f;
}

__global__ void node_main(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

__global__ void node_side(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] -= 1.0f;
}

void CUDART_CB countCall(void* p) { ++*static_cast<int*>(p); }

int main()
{
    float *a = nullptr, *b = nullptr;
    CK(cudaMalloc(&a, kBytes));
    CK(cudaMalloc(&b, kBytes));
    cudaStream_t s, side;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

    cudaGraph_t child;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < kChildKernels; ++i) {
        node_child<<<kBlocks, kThreads, 0, s>>>(a, kElems);
        CK_LAUNCH();
    }
    for (int i = 0; i < kChildCopies; ++i) CK(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, s));
    CK(cudaStreamEndCapture(s, &child));
    cudaGraphExec_t childExec;
    CK(cudaGraphInstantiate(&childExec, child, 0));

    int hostCalls = 0;
    cudaGraph_t parent;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < kMainKernels; ++i) {
        node_main<<<kBlocks, kThreads, 0, s>>>(a, kElems);
        CK_LAUNCH();
    }
    CK(cudaEventRecord(fork, s));
    CK(cudaStreamWaitEvent(side, fork, 0));
    for (int i = 0; i < kSideKernels; ++i) {
        node_side<<<kBlocks, kThreads, 0, side>>>(b, kElems);
        CK_LAUNCH();
    }
    for (int i = 0; i < kSideMemsets; ++i) CK(cudaMemsetAsync(b, 0, kBytes, side));
    for (int i = 0; i < kHostFuncs; ++i) CK(cudaLaunchHostFunc(s, countCall, &hostCalls));
    CK(cudaEventRecord(join, side));
    CK(cudaStreamWaitEvent(s, join, 0));
    for (int i = 0; i < kChildLaunchesPerParent; ++i) CK(cudaGraphLaunch(childExec, s));
    CK(cudaStreamEndCapture(s, &parent));
    cudaGraphExec_t parentExec;
    CK(cudaGraphInstantiate(&parentExec, parent, 0));

    for (int r = 0; r < kReplays; ++r) CK(cudaGraphLaunch(parentExec, s));
    for (int r = 0; r < kChildReplays; ++r) CK(cudaGraphLaunch(childExec, s));
    CK(cudaStreamSynchronize(s));
    std::printf("graph_nodes: host function ran %d times in %d replays\n", hostCalls, kReplays);

    CK(cudaGraphExecDestroy(parentExec));
    CK(cudaGraphExecDestroy(childExec));
    CK(cudaGraphDestroy(parent));
    CK(cudaGraphDestroy(child));
    CK(cudaEventDestroy(join));
    CK(cudaEventDestroy(fork));
    CK(cudaStreamDestroy(side));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(b));
    CK(cudaFree(a));
    return 0;
}
