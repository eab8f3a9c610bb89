// graph_edit: graphs whose nodes are changed after they were made; the argument picks the case.
//   kernels  a captured graph (edit_a, edit_b, an HtoD copy, a memset); the node handles taken while
//            capturing (cudaStreamGetCaptureInfo). Its edit_a node switched to edit_c in the graph
//            (cudaGraphKernelNodeSetParams) before instantiation, kReplays launches; then its edit_b node
//            switched to edit_d with half the grid in the exec (cudaGraphExecKernelNodeSetParams),
//            kReplaysAfterSwitch launches.
//   copies   a captured graph (edit_a, an HtoD copy of kBytes, a memset of kMemsetBytes, a DtoH copy of
//            kBytes). In the graph before instantiation: the memset made kMemsetBytes / 2 long
//            (cudaGraphMemsetNodeSetParams) and the DtoH copy a DtoD copy of kHalfBytes
//            (cudaGraphMemcpyNodeSetParams1D); kReplays launches. Then in the exec: the HtoD copy
//            kQuarterBytes long (cudaGraphExecMemcpyNodeSetParams1D) and the memset kMemsetBytes long
//            again (cudaGraphExecMemsetNodeSetParams); kReplaysAfterSwitch launches.
//   clone    a captured graph (edit_a, an HtoD copy) cloned (cudaGraphClone); the original instantiated
//            and launched kReplays times, the clone kCloneReplays times; then the clone's exec has its
//            edit_a node (cudaGraphNodeFindInClone) switched to edit_c, kCloneReplays launches.
//   generic  a graph built with cudaGraphAddNode alone: an HtoD copy of kBytes, edit_a, a memset of
//            kMemsetBytes, a child graph (edit_b, itself added with cudaGraphAddNode), a host node; kReplays
//            launches; its edit_a node switched to edit_c in the exec (cudaGraphExecNodeSetParams),
//            kReplaysAfterSwitch launches; its memset made kMemsetBytes / 2 long in the graph
//            (cudaGraphNodeSetParams) and the exec updated from the graph (cudaGraphExecUpdate: edit_a is
//            back), kReplaysAfterUpdate launches.
//   events   a graph captured across two streams (edit_a on the origin stream; a fork to a second stream
//            running edit_b and a join back, through plain cudaEventRecord/cudaStreamWaitEvent: dependencies,
//            no nodes), with an event record node (cudaEventRecordWithFlags, cudaEventRecordExternal) and
//            an event wait node (cudaStreamWaitEvent, cudaEventWaitExternal); kReplays launches. Then a graph
//            built node by node: edit_c, an event record node (cudaGraphAddEventRecordNode), an event wait
//            node (cudaGraphAddEventWaitNode) and an event record node added with cudaGraphAddNode;
//            kReplaysAfterSwitch launches.
#include "app_common.h"

#include <cstring>

constexpr int kReplays = 30;
constexpr int kReplaysAfterSwitch = 12;
constexpr int kCloneReplays = 7;
constexpr int kReplaysAfterUpdate = 5;
constexpr int kElems = 1 << 12;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr size_t kHalfBytes = kBytes / 2;
constexpr size_t kQuarterBytes = kBytes / 4;
constexpr size_t kMemsetBytes = kBytes / 2;  // set as 32-bit elements
constexpr int kThreads = 128;
constexpr int kBlocks = kElems / kThreads;

__global__ void edit_a(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

__global__ void edit_b(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 3.0f;
}

__global__ void edit_c(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] -= 1.0f;
}

__global__ void edit_d(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

struct Buffers {
    float* host = nullptr;
    float* dev = nullptr;
    float* scratch = nullptr;
    int n = kElems;
    void* args[2] = {&dev, &n};
};

cudaKernelNodeParams kernelParams(void* func, void** args, unsigned blocks)
{
    cudaKernelNodeParams p{};
    p.func = func;
    p.gridDim = dim3(blocks);
    p.blockDim = dim3(kThreads);
    p.sharedMemBytes = 0;
    p.kernelParams = args;
    return p;
}

cudaMemsetParams memsetParams(void* dst, size_t bytes)
{
    cudaMemsetParams ms{};
    ms.dst = dst;
    ms.value = 0;
    ms.elementSize = sizeof(unsigned);
    ms.width = bytes / sizeof(unsigned);
    ms.height = 1;
    return ms;
}

// The node the last call captured into s made: the capture's dependency set right after it.
cudaGraphNode_t lastNode(cudaStream_t s)
{
    cudaStreamCaptureStatus st;
    const cudaGraphNode_t* deps = nullptr;
    size_t n = 0;
    CK(cudaStreamGetCaptureInfo(s, &st, nullptr, nullptr, &deps, nullptr, &n));
    if (st != cudaStreamCaptureStatusActive || n != 1) {
        std::fprintf(stderr, "graph_edit: capture status %d with %zu dependencies, expected one node\n", int(st), n);
        std::exit(1);
    }
    return deps[0];
}

void launchMany(cudaGraphExec_t exec, cudaStream_t s, int times)
{
    for (int r = 0; r < times; ++r) CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
}

int kernels(Buffers& b, cudaStream_t s)
{
    cudaGraphNode_t a, bNode;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    edit_a<<<kBlocks, kThreads, 0, s>>>(b.dev, b.n);
    CK_LAUNCH();
    a = lastNode(s);
    edit_b<<<kBlocks, kThreads, 0, s>>>(b.dev, b.n);
    CK_LAUNCH();
    bNode = lastNode(s);
    CK(cudaMemcpyAsync(b.dev, b.host, kBytes, cudaMemcpyHostToDevice, s));
    CK(cudaMemsetAsync(b.scratch, 0, kMemsetBytes, s));
    cudaGraph_t graph;
    CK(cudaStreamEndCapture(s, &graph));

    cudaKernelNodeParams c = kernelParams(reinterpret_cast<void*>(edit_c), b.args, kBlocks);
    CK(cudaGraphKernelNodeSetParams(a, &c));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    launchMany(exec, s, kReplays);
    cudaKernelNodeParams d = kernelParams(reinterpret_cast<void*>(edit_d), b.args, kBlocks / 2);
    CK(cudaGraphExecKernelNodeSetParams(exec, bNode, &d));
    launchMany(exec, s, kReplaysAfterSwitch);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    return kReplays + kReplaysAfterSwitch;
}

int copies(Buffers& b, cudaStream_t s)
{
    cudaGraphNode_t in, set, out;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    edit_a<<<kBlocks, kThreads, 0, s>>>(b.dev, b.n);
    CK_LAUNCH();
    CK(cudaMemcpyAsync(b.dev, b.host, kBytes, cudaMemcpyHostToDevice, s));
    in = lastNode(s);
    CK(cudaMemsetAsync(b.scratch, 0, kMemsetBytes, s));
    set = lastNode(s);
    CK(cudaMemcpyAsync(b.host, b.dev, kBytes, cudaMemcpyDeviceToHost, s));
    out = lastNode(s);
    cudaGraph_t graph;
    CK(cudaStreamEndCapture(s, &graph));

    cudaMemsetParams half = memsetParams(b.scratch, kMemsetBytes / 2);
    CK(cudaGraphMemsetNodeSetParams(set, &half));
    CK(cudaGraphMemcpyNodeSetParams1D(out, b.scratch, b.dev, kHalfBytes, cudaMemcpyDeviceToDevice));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    launchMany(exec, s, kReplays);
    CK(cudaGraphExecMemcpyNodeSetParams1D(exec, in, b.dev, b.host, kQuarterBytes, cudaMemcpyHostToDevice));
    cudaMemsetParams whole = memsetParams(b.scratch, kMemsetBytes);
    CK(cudaGraphExecMemsetNodeSetParams(exec, set, &whole));
    launchMany(exec, s, kReplaysAfterSwitch);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    return kReplays + kReplaysAfterSwitch;
}

int clone(Buffers& b, cudaStream_t s)
{
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    edit_a<<<kBlocks, kThreads, 0, s>>>(b.dev, b.n);
    CK_LAUNCH();
    const cudaGraphNode_t a = lastNode(s);
    CK(cudaMemcpyAsync(b.dev, b.host, kBytes, cudaMemcpyHostToDevice, s));
    cudaGraph_t graph, copy;
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphClone(&copy, graph));
    cudaGraphExec_t exec, copyExec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphInstantiate(&copyExec, copy, 0));
    launchMany(exec, s, kReplays);
    launchMany(copyExec, s, kCloneReplays);
    cudaGraphNode_t copyA;
    CK(cudaGraphNodeFindInClone(&copyA, a, copy));
    cudaKernelNodeParams c = kernelParams(reinterpret_cast<void*>(edit_c), b.args, kBlocks);
    CK(cudaGraphExecKernelNodeSetParams(copyExec, copyA, &c));
    launchMany(copyExec, s, kCloneReplays);
    CK(cudaGraphExecDestroy(copyExec));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(copy));
    CK(cudaGraphDestroy(graph));
    return kReplays + 2 * kCloneReplays;
}

cudaGraphNodeParams kernelNode(void* func, void** args)
{
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeKernel;
    p.kernel.func = func;
    p.kernel.gridDim = dim3(kBlocks);
    p.kernel.blockDim = dim3(kThreads);
    p.kernel.kernelParams = args;
    return p;
}

cudaGraphNodeParams memsetNode(void* dst, size_t bytes)
{
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeMemset;
    p.memset.dst = dst;
    p.memset.value = 0;
    p.memset.elementSize = sizeof(unsigned);
    p.memset.width = bytes / sizeof(unsigned);
    p.memset.height = 1;
    return p;
}

void CUDART_CB countCall(void* p) { ++*static_cast<int*>(p); }

int generic(Buffers& b, cudaStream_t s)
{
    cudaGraph_t child, graph;
    CK(cudaGraphCreate(&child, 0));
    cudaGraphNode_t childB, in, a, set, childNode, host;
    cudaGraphNodeParams bp = kernelNode(reinterpret_cast<void*>(edit_b), b.args);
    CK(cudaGraphAddNode(&childB, child, nullptr, nullptr, 0, &bp));

    CK(cudaGraphCreate(&graph, 0));
    cudaGraphNodeParams cp{};
    cp.type = cudaGraphNodeTypeMemcpy;
    cp.memcpy.copyParams.srcPtr = make_cudaPitchedPtr(b.host, kBytes, kBytes, 1);
    cp.memcpy.copyParams.dstPtr = make_cudaPitchedPtr(b.dev, kBytes, kBytes, 1);
    cp.memcpy.copyParams.extent = make_cudaExtent(kBytes, 1, 1);
    cp.memcpy.copyParams.kind = cudaMemcpyHostToDevice;
    CK(cudaGraphAddNode(&in, graph, nullptr, nullptr, 0, &cp));
    cudaGraphNodeParams ap = kernelNode(reinterpret_cast<void*>(edit_a), b.args);
    CK(cudaGraphAddNode(&a, graph, &in, nullptr, 1, &ap));
    cudaGraphNodeParams mp = memsetNode(b.scratch, kMemsetBytes);
    CK(cudaGraphAddNode(&set, graph, nullptr, nullptr, 0, &mp));
    cudaGraphNodeParams gp{};
    gp.type = cudaGraphNodeTypeGraph;
    gp.graph.graph = child;
    const cudaGraphNode_t both[] = {a, set};
    CK(cudaGraphAddNode(&childNode, graph, both, nullptr, 2, &gp));
    int hostCalls = 0;
    cudaGraphNodeParams hp{};
    hp.type = cudaGraphNodeTypeHost;
    hp.host.fn = countCall;
    hp.host.userData = &hostCalls;
    CK(cudaGraphAddNode(&host, graph, &childNode, nullptr, 1, &hp));

    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    launchMany(exec, s, kReplays);
    cudaGraphNodeParams c = kernelNode(reinterpret_cast<void*>(edit_c), b.args);
    CK(cudaGraphExecNodeSetParams(exec, a, &c));
    launchMany(exec, s, kReplaysAfterSwitch);
    cudaGraphNodeParams half = memsetNode(b.scratch, kMemsetBytes / 2);
    CK(cudaGraphNodeSetParams(set, &half));
    cudaGraphExecUpdateResultInfo info{};
    CK(cudaGraphExecUpdate(exec, graph, &info));
    launchMany(exec, s, kReplaysAfterUpdate);
    std::printf("graph_edit generic: host node ran %d times\n", hostCalls);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaGraphDestroy(child));
    return kReplays + kReplaysAfterSwitch + kReplaysAfterUpdate;
}

int events(Buffers& b, cudaStream_t s)
{
    cudaStream_t side;
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cudaEvent_t fork, join, marker, gate;
    for (cudaEvent_t* e : {&fork, &join, &marker, &gate}) CK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    CK(cudaEventRecord(gate, s));  // the wait nodes' event: recorded once, outside any graph

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    edit_a<<<kBlocks, kThreads, 0, s>>>(b.dev, b.n);
    CK_LAUNCH();
    CK(cudaEventRecordWithFlags(marker, s, cudaEventRecordExternal));
    CK(cudaEventRecord(fork, s));
    CK(cudaStreamWaitEvent(side, fork, 0));
    edit_b<<<kBlocks, kThreads, 0, side>>>(b.scratch, b.n);
    CK_LAUNCH();
    CK(cudaEventRecord(join, side));
    CK(cudaStreamWaitEvent(s, join, 0));
    CK(cudaStreamWaitEvent(s, gate, cudaEventWaitExternal));
    cudaGraph_t captured;
    CK(cudaStreamEndCapture(s, &captured));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, captured, 0));
    launchMany(exec, s, kReplays);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(captured));

    cudaGraph_t graph;
    CK(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t c, rec, wait, rec2;
    cudaKernelNodeParams cp = kernelParams(reinterpret_cast<void*>(edit_c), b.args, kBlocks);
    CK(cudaGraphAddKernelNode(&c, graph, nullptr, 0, &cp));
    CK(cudaGraphAddEventRecordNode(&rec, graph, &c, 1, marker));
    CK(cudaGraphAddEventWaitNode(&wait, graph, &rec, 1, gate));
    cudaGraphNodeParams rp{};
    rp.type = cudaGraphNodeTypeEventRecord;
    rp.eventRecord.event = marker;
    CK(cudaGraphAddNode(&rec2, graph, &wait, nullptr, 1, &rp));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    launchMany(exec, s, kReplaysAfterSwitch);
    CK(cudaEventSynchronize(marker));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    for (cudaEvent_t e : {fork, join, marker, gate}) CK(cudaEventDestroy(e));
    CK(cudaStreamDestroy(side));
    return kReplays + kReplaysAfterSwitch;
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "";
    int (*run)(Buffers&, cudaStream_t) = std::strcmp(mode, "kernels") == 0 ? kernels
                                         : std::strcmp(mode, "copies") == 0 ? copies
                                         : std::strcmp(mode, "clone") == 0  ? clone
                                         : std::strcmp(mode, "generic") == 0 ? generic
                                         : std::strcmp(mode, "events") == 0  ? events
                                                                            : nullptr;
    if (!run) {
        std::fprintf(stderr, "usage: graph_edit kernels|copies|clone|generic|events\n");
        return 2;
    }
    Buffers b;
    CK(cudaMallocHost(&b.host, kBytes));
    CK(cudaMalloc(&b.dev, kBytes));
    CK(cudaMalloc(&b.scratch, kBytes));
    for (int i = 0; i < kElems; ++i) b.host[i] = float(i);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int launches = run(b, s);
    std::printf("graph_edit %s: %d graph launches, host[1]=%g\n", mode, launches, double(b.host[1]));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(b.scratch));
    CK(cudaFree(b.dev));
    CK(cudaFreeHost(b.host));
    return 0;
}
