// shim/hooks/graph.cpp: graph launches (timed as a whole) and stream capture, during which no
// timing events may be recorded (they would become graph nodes).
#include "shim/hooks/graph_nodes.h"

#include <mutex>
#include <unordered_map>

namespace gpuspy::shim {
namespace {

template <Api A>
CUresult graphLaunch(CUgraphExec g, CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuGraphLaunch)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        s.body().args.sync.object = uint64_t(uintptr_t(g));
        s.setStream(stream);
        s.setFlags(wire::kCallDeviceWork | wire::kCallAsync);
        gpuBefore(s, stream, GpuTiming::Preferred);
    }
    s.beforeReal();
    return s.finish(real(g, stream));
}

template <Api A>
CUresult beginCapture(CUstream stream, CUstreamCaptureMode mode)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamBeginCapture_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.beforeReal();
    const CUresult rc = real(stream, mode);
    if (rc == CUDA_SUCCESS) gpuCaptureBegin(stream, kApis[size_t(A)].perThread);
    return s.finish(rc);
}

// The 10.0 ABI: no mode (global capture).
template <Api A>
CUresult beginCaptureV1(CUstream stream)
{
    CallScope s(A);
    auto real = realAs<CUresult (*)(CUstream)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.beforeReal();
    const CUresult rc = real(stream);
    if (rc == CUDA_SUCCESS) gpuCaptureBegin(stream, kApis[size_t(A)].perThread);
    return s.finish(rc);
}

template <Api A>
CUresult beginCaptureToGraph(CUstream stream, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* data,
                             size_t n, CUstreamCaptureMode mode)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamBeginCaptureToGraph)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.beforeReal();
    const CUresult rc = real(stream, graph, deps, data, n, mode);
    if (rc == CUDA_SUCCESS) gpuCaptureBegin(stream, kApis[size_t(A)].perThread);
    return s.finish(rc);
}

template <Api A>
CUresult endCapture(CUstream stream, CUgraph* graph)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamEndCapture)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.beforeReal();
    const CUresult rc = real(stream, graph);
    gpuCaptureEnd(stream, kApis[size_t(A)].perThread);
    if (s.active() && rc == CUDA_SUCCESS && graph) s.body().args.raw[0] = uint64_t(uintptr_t(*graph));
    return s.finish(rc);
}

// Instantiation and update: one-off calls that tie an executable graph to the graph it runs; the
// collector gives each launch of the exec the nodes captured into that graph.
void graphExecMade(CallScope& s, CUresult rc, const CUgraphExec* exec, CUgraph graph)
{
    if (!s.active() || rc != CUDA_SUCCESS || !exec) return;
    s.body().args.raw[0] = uint64_t(uintptr_t(*exec));
    s.body().args.raw[1] = uint64_t(uintptr_t(graph));
}

template <Api A>
CUresult instantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuGraphInstantiateWithFlags)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(exec, graph, flags);
    graphExecMade(s, rc, exec, graph);
    return s.finish(rc);
}

template <Api A>
CUresult instantiateWithParams(CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuGraphInstantiateWithParams)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(exec, graph, params);
    graphExecMade(s, rc, exec, graph);
    return s.finish(rc);
}

template <Api A>
CUresult execUpdate(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuGraphExecUpdate_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(exec, graph, info);
    graphExecMade(s, rc, &exec, graph);
    return s.finish(rc);
}

// A new graph (args.raw[0]): a destroyed graph's handle may come back, and must not bring its nodes.
template <Api A>
CUresult graphCreate(CUgraph* graph, unsigned flags)
{
    CallScope s(A);
    auto real = realAs<CUresult (*)(CUgraph*, unsigned)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(graph, flags);
    if (s.active() && rc == CUDA_SUCCESS && graph) s.body().args.raw[0] = uint64_t(uintptr_t(*graph));
    return s.finish(rc);
}

// A clone (args.raw[0]) of a graph (args.raw[1]): it runs the original's nodes.
template <Api A>
CUresult graphClone(CUgraph* clone, CUgraph original)
{
    CallScope s(A);
    auto real = realAs<CUresult (*)(CUgraph*, CUgraph)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(clone, original);
    if (s.active() && rc == CUDA_SUCCESS && clone) {
        s.body().args.raw[0] = uint64_t(uintptr_t(*clone));
        s.body().args.raw[1] = uint64_t(uintptr_t(original));
    }
    return s.finish(rc);
}

// A clone's node found from the original's: it is named as the original's node is (the same call
// made both), so that an exec of the clone can have it changed.
template <Api A>
CUresult nodeFindInClone(CUgraphNode* out, CUgraphNode original, CUgraph clone)
{
    using Fn = CUresult (*)(CUgraphNode*, CUgraphNode, CUgraph);
    const CUresult rc = forwardCall<A, Fn>([](CallScope&) {}, out, original, clone);
    if (rc == CUDA_SUCCESS && out && *out)
        if (const uint64_t seq = graphNodeSeq(original)) noteGraphNode(*out, seq);
    return rc;
}

// A child graph node: args.raw[0] the child CUgraph (its nodes, cloned, become the parent's).
template <Api A>
CUresult addChildGraphNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n, CUgraph child)
{
    using Fn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUgraph);
    return addGraphNode<A, Fn>(
        out, graph, [&](CallScope& s) { s.body().args.raw[0] = uint64_t(uintptr_t(child)); }, deps, n, child);
}

// An event record or wait node: the event, and which kind (wire::kEventNodeSlot).
void describeEventNode(CallScope& s, CUevent event, uint64_t kind)
{
    s.body().args.sync.object = uint64_t(uintptr_t(event));
    s.body().args.raw[wire::kEventNodeSlot] = kind;
}

template <Api A>
CUresult addEventNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n, CUevent event)
{
    using Fn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUevent);
    const uint64_t kind = A == Api::cuGraphAddEventRecordNode ? wire::kEventNodeRecord : wire::kEventNodeWait;
    return addGraphNode<A, Fn>(out, graph, [&](CallScope& s) { describeEventNode(s, event, kind); }, deps, n, event);
}

// ---- the generic node API (cuGraphAddNode, cuGraph(Exec)NodeSetParams, 12.2): each kind recorded as its
// own entry point records it. A kernel or host node is a Launch (a host node: kernel id 0, grid 0), a
// copy or memset node a Transfer, a child graph node a Graph call with the child in args.raw[0]; other
// kinds run no work the report counts.
void describeGenericNode(CallScope& s, const CUgraphNodeParams* p)
{
    if (!p) return;
    wire::CallBody& b = s.body();
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        b.category = wire::Category::Launch;
        describeKernelNodeV3(s, p->kernel);
        break;
    case CU_GRAPH_NODE_TYPE_HOST: b.category = wire::Category::Launch; break;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        b.category = wire::Category::Transfer;
        describeCopyNode(s, p->memcpy.copyParams);
        break;
    case CU_GRAPH_NODE_TYPE_MEMSET:
        b.category = wire::Category::Transfer;
        describeMemsetNodeV2(s, p->memset);
        break;
    case CU_GRAPH_NODE_TYPE_GRAPH: b.args.raw[0] = uint64_t(uintptr_t(p->graph.graph)); break;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        b.category = wire::Category::Other;
        describeEventNode(s, p->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? p->eventRecord.event : p->eventWait.event,
                          p->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? wire::kEventNodeRecord : wire::kEventNodeWait);
        break;
    default: b.category = wire::Category::Other; break;
    }
}

template <Api A>
CUresult addNodeV1(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n, CUgraphNodeParams* p)
{
    using Fn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUgraphNodeParams*);
    return addGraphNode<A, Fn>(out, graph, [&](CallScope& s) { describeGenericNode(s, p); }, deps, n, p);
}

template <Api A>
CUresult addNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t n,
                 CUgraphNodeParams* p)
{
    using Fn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, const CUgraphEdgeData*, size_t, CUgraphNodeParams*);
    return addGraphNode<A, Fn>(out, graph, [&](CallScope& s) { describeGenericNode(s, p); }, deps, edges, n, p);
}

// A node's new parameters through the generic API: recorded as the per-kind entry points record them
// (a kernel: raw [0] the exec, [1] the node's seq, [2] the kernel id; a copy or memset: the transfer with
// dst the exec and src the node's seq), with raw[4] saying which (wire::kNodeEditKernel, kNodeEditTransfer).
void describeNodeEdit(CallScope& s, CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams* p)
{
    if (!p) return;
    wire::CallBody& b = s.body();
    if (p->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        b.args.raw[0] = uint64_t(uintptr_t(exec));
        b.args.raw[1] = graphNodeSeq(node);
        b.args.raw[2] = kernelIdOf(p->kernel.func ? static_cast<const void*>(p->kernel.func) : p->kernel.kern);
        b.args.raw[4] = wire::kNodeEditKernel;
    } else if (p->type == CU_GRAPH_NODE_TYPE_MEMCPY || p->type == CU_GRAPH_NODE_TYPE_MEMSET) {
        if (p->type == CU_GRAPH_NODE_TYPE_MEMCPY) describeCopyNode(s, p->memcpy.copyParams);
        else describeMemsetNodeV2(s, p->memset);
        b.args.transfer.dst = uint64_t(uintptr_t(exec));
        b.args.transfer.src = graphNodeSeq(node);
        b.args.raw[4] = wire::kNodeEditTransfer;
    }
}

template <Api A>
CUresult nodeSetParams(CUgraphNode node, CUgraphNodeParams* p)
{
    using Fn = CUresult (*)(CUgraphNode, CUgraphNodeParams*);
    return forwardCall<A, Fn>([&](CallScope& s) { describeNodeEdit(s, nullptr, node, p); }, node, p);
}

template <Api A>
CUresult execNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams* p)
{
    using Fn = CUresult (*)(CUgraphExec, CUgraphNode, CUgraphNodeParams*);
    return forwardCall<A, Fn>([&](CallScope& s) { describeNodeEdit(s, exec, node, p); }, exec, node, p);
}

std::mutex g_nodesLock;
// Node handle -> the call that added it. Bounded: a server that builds graphs node by node for every
// request for days must not grow it without end; past the bound it starts again (a parameter change
// on a node added before that is then not tied to its node: counted under the node's old kernel).
std::unordered_map<CUgraphNode, uint64_t> g_nodeSeq;
constexpr size_t kMaxNodes = 1u << 16;

}  // namespace

void noteGraphNode(CUgraphNode node, uint64_t seq)
{
    std::lock_guard<std::mutex> g(g_nodesLock);
    if (g_nodeSeq.size() >= kMaxNodes) g_nodeSeq.clear();
    g_nodeSeq[node] = seq;
}

void noteCapturedNode(CallScope& s, CUresult rc)
{
    const wire::CallBody& c = s.body();
    // Work issued into a stream only (kCallDeviceWork): a node added by the node API has no stream
    // to ask, and asking the legacy stream during a global capture would invalidate that capture.
    const uint16_t both = wire::kCallCapturing | wire::kCallDeviceWork;
    if (rc != CUDA_SUCCESS || (c.flags & both) != both || !c.args.raw[wire::kCaptureGraphSlot]) return;
    if (c.category != wire::Category::Launch && c.category != wire::Category::Transfer) return;
    // Right after a captured call, its stream's capture depends on exactly the node that call added
    // (CUDA: the set the next captured node will depend on); the ABI the app used names the stream.
    const Driver& d = driver();
    const bool pt = s.perThread();
    auto info3 = pt && d.streamGetCaptureInfo3Ptsz ? d.streamGetCaptureInfo3Ptsz : d.streamGetCaptureInfo3;
    auto info = pt && d.streamGetCaptureInfoPtsz ? d.streamGetCaptureInfoPtsz : d.streamGetCaptureInfo;
    const CUstream stream = reinterpret_cast<CUstream>(uintptr_t(c.stream));
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUgraphNode* deps = nullptr;
    size_t n = 0;
    CUresult q = CUDA_ERROR_NOT_SUPPORTED;
    if (info3) q = info3(stream, &st, nullptr, nullptr, &deps, nullptr, &n);
    else if (info) q = info(stream, &st, nullptr, nullptr, &deps, &n);
    if (q == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_ACTIVE && n == 1 && deps && deps[0])
        noteGraphNode(deps[0], c.seq);
}

void noteCapturedEventNode(CallScope& s, CUstream stream, uint64_t kind)
{
    if (!s.active()) return;
    const Driver& d = driver();
    const bool pt = s.perThread();
    auto info3 = pt && d.streamGetCaptureInfo3Ptsz ? d.streamGetCaptureInfo3Ptsz : d.streamGetCaptureInfo3;
    auto info = pt && d.streamGetCaptureInfoPtsz ? d.streamGetCaptureInfoPtsz : d.streamGetCaptureInfo;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = nullptr;
    CUresult q = CUDA_ERROR_NOT_SUPPORTED;
    if (info3) q = info3(stream, &st, nullptr, &graph, nullptr, nullptr, nullptr);
    else if (info) q = info(stream, &st, nullptr, &graph, nullptr, nullptr);
    if (q != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_ACTIVE || !graph) return;
    s.setFlags(wire::kCallCapturing);
    s.body().args.raw[wire::kCaptureGraphSlot] = uint64_t(uintptr_t(graph));
    s.body().args.raw[wire::kEventNodeSlot] = kind;
}

uint64_t graphNodeSeq(CUgraphNode node)
{
    std::lock_guard<std::mutex> g(g_nodesLock);
    auto it = g_nodeSeq.find(node);
    return it == g_nodeSeq.end() ? 0 : it->second;
}

}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(graphLaunch, cuGraphLaunch, (CUgraphExec g, CUstream s), (g, s))
GS_WRAP(graphLaunch, cuGraphLaunch_ptsz, (CUgraphExec g, CUstream s), (g, s))
GS_WRAP(beginCapture, cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode m), (s, m))
GS_WRAP(beginCapture, cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode m), (s, m))
GS_WRAP(beginCaptureToGraph, cuStreamBeginCaptureToGraph,
        (CUstream s, CUgraph g, const CUgraphNode* d, const CUgraphEdgeData* e, size_t n, CUstreamCaptureMode m), (s, g, d, e, n, m))
GS_WRAP(beginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz,
        (CUstream s, CUgraph g, const CUgraphNode* d, const CUgraphEdgeData* e, size_t n, CUstreamCaptureMode m), (s, g, d, e, n, m))
GS_WRAP(endCapture, cuStreamEndCapture, (CUstream s, CUgraph* g), (s, g))
GS_WRAP(endCapture, cuStreamEndCapture_ptsz, (CUstream s, CUgraph* g), (s, g))
GS_WRAP(instantiateWithFlags, cuGraphInstantiateWithFlags, (CUgraphExec* e, CUgraph g, unsigned long long f), (e, g, f))
GS_WRAP(instantiateWithParams, cuGraphInstantiateWithParams, (CUgraphExec* e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p),
        (e, g, p))
GS_WRAP(instantiateWithParams, cuGraphInstantiateWithParams_ptsz,
        (CUgraphExec* e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p), (e, g, p))
GS_WRAP(execUpdate, cuGraphExecUpdate_v2, (CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* i), (e, g, i))
GS_WRAP(beginCaptureV1, cuStreamBeginCapture, (CUstream s), (s))
GS_WRAP(beginCaptureV1, cuStreamBeginCapture_ptsz, (CUstream s), (s))
GS_WRAP(addChildGraphNode, cuGraphAddChildGraphNode,
        (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, CUgraph child), (o, g, d, n, child))
GS_WRAP(graphCreate, cuGraphCreate, (CUgraph* g, unsigned f), (g, f))
GS_WRAP(graphClone, cuGraphClone, (CUgraph* c, CUgraph g), (c, g))
GS_WRAP(nodeFindInClone, cuGraphNodeFindInClone, (CUgraphNode* o, CUgraphNode n, CUgraph c), (o, n, c))
GS_WRAP(addNodeV1, cuGraphAddNode, (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, CUgraphNodeParams* p),
        (o, g, d, n, p))
GS_WRAP(addNode, cuGraphAddNode_v2,
        (CUgraphNode* o, CUgraph g, const CUgraphNode* d, const CUgraphEdgeData* e, size_t n, CUgraphNodeParams* p),
        (o, g, d, e, n, p))
GS_WRAP(nodeSetParams, cuGraphNodeSetParams, (CUgraphNode node, CUgraphNodeParams* p), (node, p))
GS_WRAP(execNodeSetParams, cuGraphExecNodeSetParams, (CUgraphExec e, CUgraphNode node, CUgraphNodeParams* p), (e, node, p))
GS_WRAP(addEventNode, cuGraphAddEventRecordNode, (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, CUevent e),
        (o, g, d, n, e))
GS_WRAP(addEventNode, cuGraphAddEventWaitNode, (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, CUevent e),
        (o, g, d, n, e))
