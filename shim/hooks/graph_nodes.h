// shim/hooks/graph_nodes.h: graph nodes added by the node API (cuGraphAdd*Node), shared by the
// families that describe them (launch.cpp: kernels, transfer.cpp: copies and memsets, graph.cpp:
// child graphs and the node table).
#pragma once

#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {

// Nodes by the seq of the call that added them (graph.cpp).
void noteGraphNode(CUgraphNode node, uint64_t seq);
uint64_t graphNodeSeq(CUgraphNode node);  // 0: not one the shim saw added

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
