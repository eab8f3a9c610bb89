// shim/hooks/graph_nodes.h: graph nodes added by the node API (cuGraphAdd*Node), shared by the
// families that describe them (launch.cpp: kernels, transfer.cpp: copies and memsets, graph.cpp:
// child graphs and the node table).
#pragma once

#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {

// Nodes by the seq of the call that added them (graph.cpp).
void noteGraphNode(CUgraphNode node, uint64_t seq);
uint64_t graphNodeSeq(CUgraphNode node);  // 0: not one the shim saw added

// An event record or wait (kind: wire::kEventNodeRecord, kEventNodeWait) into a stream that is
// capturing: recorded as that graph's event node (graph.cpp). Call before the real call.
void noteCapturedEventNode(CallScope& s, CUstream stream, uint64_t kind);

// The generic node API's kinds described as the per-kind entry points describe them (launch.cpp,
// transfer.cpp): a kernel node's launch, a copy or memset node's transfer.
void describeKernelNodeV3(CallScope& s, const CUDA_KERNEL_NODE_PARAMS_v3& p);
void describeCopyNode(CallScope& s, const CUDA_MEMCPY3D& c);
void describeMemsetNodeV2(CallScope& s, const CUDA_MEMSET_NODE_PARAMS_v2& p);

// A node added by the node API (no stream): recorded like work issued into a stream capture
// (kCallCapturing, the CUgraph in raw[kCaptureGraphSlot]), which the collector adds to that graph's
// nodes. Once made, the node is tied to the call's seq so that a later change of its parameters names
// the node it changes. `describe(CallScope&)` fills the arguments, only while recording.
template <Api A, class Fn, class Describe, class... Args>
inline CUresult addGraphNode(CUgraphNode* out, CUgraph graph, Describe&& describe, Args... args)
{
    CallScope s(A);
    const auto real = realAs<Fn>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        describe(s);
        s.setFlags(wire::kCallCapturing);
        s.body().args.raw[wire::kCaptureGraphSlot] = uint64_t(uintptr_t(graph));
    }
    s.beforeReal();
    const CUresult rc = s.finish(real(out, graph, args...));
    if (rc == CUDA_SUCCESS && out && s.active()) noteGraphNode(*out, s.body().seq);
    return rc;
}

}  // namespace gpuspy::shim
