// Stream capture into graphs and graph replay: captured ops are stored, not run, and replayed by cuGraphLaunch.
//
// A graph here is a flat, ordered list of ops: replay submits them in capture order on the launch stream.
#include "sim.h"

#include <atomic>

namespace simcuda {
namespace {

struct GraphExec {
    std::vector<Op> ops;
    unsigned long long flags = 0;
};

std::atomic<unsigned long long> g_nextCaptureId{1};
thread_local CUstreamCaptureMode t_captureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;

Graph* asGraph(CUgraph g) { return liveHandle<Graph>(g, HandleKind::Graph); }
GraphExec* asExec(CUgraphExec e) { return liveHandle<GraphExec>(e, HandleKind::GraphExec); }

Graph* newGraph()
{
    auto* g = new Graph;
    registerHandle(g, HandleKind::Graph);
    return g;
}

CUresult beginCapture(CUstream h, bool pt, CUstreamCaptureMode mode, Graph* into)
{
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    Lock g(bigLock());
    if (s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
    if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
    Graph* graph = into ? into : newGraph();
    graph->captureId = g_nextCaptureId++;
    graph->origin = s;
    graph->invalidated = false;
    s->capture = graph;
    s->captureMode = mode;
    return CUDA_SUCCESS;
}

CUresult endCapture(CUstream h, bool pt, CUgraph* out)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    Lock g(bigLock());
    Graph* graph = s->capture;
    if (!graph) return CUDA_ERROR_ILLEGAL_STATE;
    if (graph->origin != s) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    for (Stream* other : s->ctx->streams)  // streams that joined through cuStreamWaitEvent leave with it
        if (other->capture == graph) other->capture = nullptr;
    graph->origin = nullptr;
    if (graph->invalidated) {
        *out = nullptr;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *out = reinterpret_cast<CUgraph>(graph);
    return CUDA_SUCCESS;
}

CUresult isCapturing(CUstream h, bool pt, CUstreamCaptureStatus* st)
{
    if (!st) return CUDA_ERROR_INVALID_VALUE;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    Lock g(bigLock());
    *st = !s->capture ? CU_STREAM_CAPTURE_STATUS_NONE
          : s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                    : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

// The capture's current dependency set is its last node (ops are a chain here).
CUresult captureInfo(CUstream h, bool pt, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* graphOut,
                     const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* numDeps)
{
    if (CUresult rc = isCapturing(h, pt, st)) return rc;
    Stream* s = resolveStream(h, pt);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    Lock g(bigLock());
    Graph* graph = s->capture;
    if (id) *id = graph ? graph->captureId : 0;
    if (graphOut) *graphOut = reinterpret_cast<CUgraph>(graph);
    if (edges) *edges = nullptr;
    const bool any = graph && !graph->nodes.empty();
    if (deps) *deps = any ? reinterpret_cast<const CUgraphNode*>(&graph->nodes.back()) : nullptr;
    if (numDeps) *numDeps = any ? 1 : 0;
    return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* out, CUgraph hg, unsigned long long flags)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    Graph* graph = asGraph(hg);
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    auto* ex = new GraphExec;
    ex->ops = graph->ops;
    ex->flags = flags;
    registerHandle(ex, HandleKind::GraphExec);
    *out = reinterpret_cast<CUgraphExec>(ex);
    return CUDA_SUCCESS;
}

CUresult graphLaunch(CUgraphExec he, CUstream h, bool pt, const char* api)
{
    GraphExec* ex = asExec(he);
    if (!ex) return CUDA_ERROR_INVALID_VALUE;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    // Every node is submitted at the launch's return: one doorbell for the whole graph.
    submissionInstant(static_cast<int>(ex->ops.size()));
    for (const Op& op : ex->ops)
        if (CUresult rc = submitOp(s, op, api, true)) return rc;
    return CUDA_SUCCESS;
}

CUresult graphUpload(CUgraphExec he, CUstream h, bool pt)
{
    if (!asExec(he)) return CUDA_ERROR_INVALID_VALUE;
    return streamStatus(h, pt);
}

CUresult instantiateWithParams(CUgraphExec* out, CUgraph hg, CUDA_GRAPH_INSTANTIATE_PARAMS* p)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    const CUresult rc = instantiate(out, hg, p->flags);
    p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    p->hErrNode_out = nullptr;
    return rc;
}

}  // namespace

void captureOp(Graph* g, Op op)
{
    auto* node = new GraphNode;
    node->graph = g;
    node->index = g->ops.size();
    registerHandle(node, HandleKind::GraphNode);
    g->ops.push_back(std::move(op));
    g->nodes.push_back(node);
}

void invalidateCapture(Stream* s)
{
    if (s->capture) s->capture->invalidated = true;
}

}  // namespace simcuda

using namespace simcuda;

SIM_PAIR(cuStreamBeginCapture, cuStreamBeginCapture_ptsz, (CUstream h),
         beginCapture(h, pt, CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr))
SIM_PAIR(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz, (CUstream h, CUstreamCaptureMode mode),
         beginCapture(h, pt, mode, nullptr))
SIM_PAIR(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz,
         (CUstream h, CUgraph hg, const CUgraphNode*, const CUgraphEdgeData*, size_t, CUstreamCaptureMode mode),
         asGraph(hg) ? beginCapture(h, pt, mode, asGraph(hg)) : CUDA_ERROR_INVALID_VALUE)
SIM_PAIR(cuStreamEndCapture, cuStreamEndCapture_ptsz, (CUstream h, CUgraph* out), endCapture(h, pt, out))
SIM_PAIR(cuStreamIsCapturing, cuStreamIsCapturing_ptsz, (CUstream h, CUstreamCaptureStatus* st), isCapturing(h, pt, st))
SIM_PAIR(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_ptsz, (CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id),
         captureInfo(h, pt, st, id, nullptr, nullptr, nullptr, nullptr))
SIM_PAIR(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz,
         (CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g, const CUgraphNode** deps, size_t* n),
         captureInfo(h, pt, st, id, g, deps, nullptr, n))
SIM_PAIR(cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz,
         (CUstream h, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* g, const CUgraphNode** deps,
          const CUgraphEdgeData** edges, size_t* n),
         captureInfo(h, pt, st, id, g, deps, edges, n))
SIM_PAIR(cuGraphLaunch, cuGraphLaunch_ptsz, (CUgraphExec e, CUstream h), graphLaunch(e, h, pt, scope.name()))
SIM_PAIR(cuGraphUpload, cuGraphUpload_ptsz, (CUgraphExec e, CUstream h), graphUpload(e, h, pt))
SIM_PAIR(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz,
         (CUgraphExec* out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p), instantiateWithParams(out, g, p))

SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode)
{
    SIM_API(cuThreadExchangeStreamCaptureMode);
    if (!mode) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    std::swap(*mode, t_captureMode);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGraphCreate(CUgraph* out, unsigned flags)
{
    SIM_API(cuGraphCreate);
    if (!out || flags) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *out = reinterpret_cast<CUgraph>(newGraph());
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph hg)
{
    SIM_API(cuGraphDestroy);
    Lock g(bigLock());
    Graph* graph = asGraph(hg);
    if (!graph) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    retireHandle(graph);  // leaked: node handles may still be held by the caller
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGraphGetNodes(CUgraph hg, CUgraphNode* nodes, size_t* num)
{
    SIM_API(cuGraphGetNodes);
    Lock g(bigLock());
    Graph* graph = asGraph(hg);
    if (!graph || !num) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (nodes) {
        const size_t n = std::min(*num, graph->nodes.size());
        for (size_t i = 0; i < n; ++i) nodes[i] = reinterpret_cast<CUgraphNode>(graph->nodes[i]);
        for (size_t i = n; i < *num; ++i) nodes[i] = nullptr;
    }
    *num = graph->nodes.size();
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hn, CUgraphNodeType* type)
{
    SIM_API(cuGraphNodeGetType);
    Lock g(bigLock());
    auto* n = liveHandle<GraphNode>(hn, HandleKind::GraphNode);
    if (!n || !type) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    switch (n->graph->ops[n->index].kind) {
    case OpKind::Kernel: *type = CU_GRAPH_NODE_TYPE_KERNEL; break;
    case OpKind::Memcpy: *type = CU_GRAPH_NODE_TYPE_MEMCPY; break;
    case OpKind::Memset: *type = CU_GRAPH_NODE_TYPE_MEMSET; break;
    case OpKind::HostFunc: *type = CU_GRAPH_NODE_TYPE_HOST; break;
    }
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGraphInstantiate(CUgraphExec* out, CUgraph g, CUgraphNode* errNode, char* log, size_t logSize)
{
    SIM_API(cuGraphInstantiate);
    if (errNode) *errNode = nullptr;
    if (log && logSize) log[0] = '\0';
    return scope.ret(instantiate(out, g, 0));
}

SIM_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* out, CUgraph g, CUgraphNode* errNode, char* log, size_t logSize)
{
    SIM_API(cuGraphInstantiate_v2);
    if (errNode) *errNode = nullptr;
    if (log && logSize) log[0] = '\0';
    return scope.ret(instantiate(out, g, 0));
}

SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph g, unsigned long long flags)
{
    SIM_API(cuGraphInstantiateWithFlags);
    return scope.ret(instantiate(out, g, flags));
}

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
    SIM_API(cuGraphExecDestroy);
    Lock g(bigLock());
    GraphExec* ex = asExec(e);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    retireHandle(ex);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec e, cuuint64_t* flags)
{
    SIM_API(cuGraphExecGetFlags);
    GraphExec* ex = asExec(e);
    if (!ex || !flags) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *flags = ex->flags;
    return scope.ret(CUDA_SUCCESS);
}
