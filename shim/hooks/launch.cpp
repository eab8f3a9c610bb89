// shim/hooks/launch.cpp: kernel launches and host functions: kernel, grid, block, shared memory,
// stream; kernels may be sampled out of GPU timing when they come too fast.
#include "shim/hooks/graph_nodes.h"

namespace gpuspy::shim {
namespace {

void fillLaunch(CallScope& s, const void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned smem)
{
    wire::LaunchArgs& l = s.body().args.launch;
    l.kernelId = kernelIdOf(f);
    l.grid[0] = gx;
    l.grid[1] = gy;
    l.grid[2] = gz;
    l.block[0] = bx;
    l.block[1] = by;
    l.block[2] = bz;
    l.sharedMem = smem;
}

void describeLaunch(CallScope& s, const void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, unsigned smem, CUstream stream)
{
    fillLaunch(s, f, gx, gy, gz, bx, by, bz, smem);
    const wire::LaunchArgs& l = s.body().args.launch;
    s.setStream(stream);
    s.setFlags(wire::kCallDeviceWork | wire::kCallAsync);
    // A kernel timed fewer than twice is timed whatever the budget says (and charged to it): every
    // kernel gets a GPU time even when copies and a few hot kernels spend all of the budget.
    // The kernel of an NCCL collective is timed too: collectives are few, long, and compared across ranks
    // (which rank arrived last), so every one of them needs its span (hooks/nccl_profiler.cpp).
    const bool first = kernelNeedsFirstTimings(l.kernelId);
    gpuBefore(s, stream, first || ncclLaunchUnderWay() ? GpuTiming::Always : GpuTiming::Sampled);
    if (first && s.item().evBegin) noteKernelTimed(l.kernelId);
}

template <Api A>
CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned smem, CUstream stream, void** params, void** extra)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchKernel)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeLaunch(s, f, gx, gy, gz, bx, by, bz, smem, stream);
    s.beforeReal();
    return s.finish(real(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra));
}

template <Api A>
CUresult launchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchKernelEx)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active() && config)
        describeLaunch(s, f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                       config->blockDimZ, config->sharedMemBytes, config->hStream);
    s.beforeReal();
    return s.finish(real(config, f, params, extra));
}

template <Api A>
CUresult launchCooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned smem, CUstream stream, void** params)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchCooperativeKernel)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeLaunch(s, f, gx, gy, gz, bx, by, bz, smem, stream);
    s.beforeReal();
    return s.finish(real(f, gx, gy, gz, bx, by, bz, smem, stream, params));
}

template <Api A>
CUresult launchHostFunc(CUstream stream, CUhostFn fn, void* user)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchHostFunc)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        s.setStream(stream);
        s.setFlags(wire::kCallDeviceWork | wire::kCallAsync);
        gpuBefore(s, stream, GpuTiming::Sampled);
    }
    s.beforeReal();
    return s.finish(real(stream, fn, user));
}

// The kernel a node runs: its CUfunction, else its CUkernel.
const void* nodeKernel(const CUDA_KERNEL_NODE_PARAMS* p) { return p->func ? static_cast<const void*>(p->func) : p->kern; }

using AddKernelNodeFn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_KERNEL_NODE_PARAMS*);

template <Api A>
CUresult addKernelNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n, const CUDA_KERNEL_NODE_PARAMS* p)
{
    return addGraphNode<A, AddKernelNodeFn>(
        out, graph,
        [&](CallScope& s) {
            if (p)
                fillLaunch(s, nodeKernel(p), p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                           p->blockDimZ, p->sharedMemBytes);
        },
        deps, n, p);
}

// A host node: recorded as a captured host function (kernel id 0) into its graph.
template <Api A>
CUresult addHostNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n, const CUDA_HOST_NODE_PARAMS* p)
{
    using Fn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_HOST_NODE_PARAMS*);
    return addGraphNode<A, Fn>(out, graph, [](CallScope&) {}, deps, n, p);
}

// A kernel node of an executable graph given new parameters: args.raw [0] the exec, [1] the seq of the
// call that added the node, or that was captured into it (0: a node the shim did not see made),
// [2] the kernel id it runs from now on.
template <Api A>
CUresult execKernelNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p)
{
    using Fn = CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            s.body().args.raw[0] = uint64_t(uintptr_t(exec));
            s.body().args.raw[1] = graphNodeSeq(node);
            s.body().args.raw[2] = p ? kernelIdOf(nodeKernel(p)) : 0;
        },
        exec, node, p);
}

// A kernel node of a graph given new parameters (later instantiations and cuGraphExecUpdate take them):
// args.raw [0] 0 (no exec), [1] and [2] as for an exec's node.
template <Api A>
CUresult kernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p)
{
    using Fn = CUresult (*)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            s.body().args.raw[1] = graphNodeSeq(node);
            s.body().args.raw[2] = p ? kernelIdOf(nodeKernel(p)) : 0;
        },
        node, p);
}

}  // namespace

void describeKernelNodeV3(CallScope& s, const CUDA_KERNEL_NODE_PARAMS_v3& p)
{
    fillLaunch(s, p.func ? static_cast<const void*>(p.func) : p.kern, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX,
               p.blockDimY, p.blockDimZ, p.sharedMemBytes);
}

}  // namespace gpuspy::shim

using namespace gpuspy::shim;

#define GS_LAUNCH_PARAMS \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream st, void** p, void** e)
GS_WRAP(launchKernel, cuLaunchKernel, GS_LAUNCH_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p, e))
GS_WRAP(launchKernel, cuLaunchKernel_ptsz, GS_LAUNCH_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p, e))
GS_WRAP(launchKernelEx, cuLaunchKernelEx, (const CUlaunchConfig* c, CUfunction f, void** p, void** e), (c, f, p, e))
GS_WRAP(launchKernelEx, cuLaunchKernelEx_ptsz, (const CUlaunchConfig* c, CUfunction f, void** p, void** e), (c, f, p, e))
#define GS_COOP_PARAMS \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream st, void** p)
GS_WRAP(launchCooperative, cuLaunchCooperativeKernel, GS_COOP_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p))
GS_WRAP(launchCooperative, cuLaunchCooperativeKernel_ptsz, GS_COOP_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p))
GS_WRAP(launchHostFunc, cuLaunchHostFunc, (CUstream st, CUhostFn fn, void* u), (st, fn, u))
GS_WRAP(launchHostFunc, cuLaunchHostFunc_ptsz, (CUstream st, CUhostFn fn, void* u), (st, fn, u))
GS_WRAP(addKernelNode, cuGraphAddKernelNode_v2,
        (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, const CUDA_KERNEL_NODE_PARAMS* p), (o, g, d, n, p))
GS_WRAP(execKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2,
        (CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p), (e, node, p))
GS_WRAP(kernelNodeSetParams, cuGraphKernelNodeSetParams_v2, (CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p), (node, p))
GS_WRAP(addHostNode, cuGraphAddHostNode,
        (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, const CUDA_HOST_NODE_PARAMS* p), (o, g, d, n, p))
