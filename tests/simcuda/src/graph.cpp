// Stream capture into graphs and graph replay: captured ops are stored, not run, and replayed by cuGraphLaunch.
//
// A graph here is a flat, ordered list of ops: replay submits them in capture order on the launch stream.
#include "sim.h"

#include <atomic>
#include <cstring>

namespace simcuda {
namespace {

struct GraphExec {
    Graph* graph = nullptr;  // the graph it was instantiated from (or last updated to)
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
    ex->graph = graph;
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
    // The driver's work per node (SIMCUDA_GRAPH_NODE_NS), before anything is submitted; then every node
    // is submitted at the launch's return: one doorbell for the whole graph.
    spinFor(config().graphNodeCost * static_cast<Ns>(ex->ops.size()));
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

namespace {

GraphNode* addNode(Graph* g, size_t index, CUgraphNodeType type)
{
    auto* node = new GraphNode;
    node->graph = g;
    node->index = index;
    node->type = type;
    registerHandle(node, HandleKind::GraphNode);
    g->nodes.push_back(node);
    return node;
}

CUgraphNodeType nodeTypeOf(OpKind kind)
{
    switch (kind) {
    case OpKind::Kernel: return CU_GRAPH_NODE_TYPE_KERNEL;
    case OpKind::Memcpy: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case OpKind::Memset: return CU_GRAPH_NODE_TYPE_MEMSET;
    case OpKind::HostFunc: return CU_GRAPH_NODE_TYPE_HOST;
    case OpKind::MemOp: return CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;  // never captured (stream_memops.cpp)
    case OpKind::EventRecord: return CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    case OpKind::EventWait: return CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    }
    return CU_GRAPH_NODE_TYPE_EMPTY;
}

}  // namespace

CUresult eventNodeOp(CUevent e, OpKind kind, Op* out)
{
    if (!liveHandle<Event>(e, HandleKind::Event)) return CUDA_ERROR_INVALID_VALUE;
    out->kind = kind;
    out->duration = 0;
    out->event = e;
    return CUDA_SUCCESS;
}

void captureOp(Graph* g, Op op)
{
    const CUgraphNodeType type = nodeTypeOf(op.kind);
    g->ops.push_back(std::move(op));
    addNode(g, g->ops.size() - 1, type);
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
    *type = n->type;
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

// ---- graphs built node by node. Ops stay a flat list in the order nodes are added (a node can depend
// only on nodes added before it, so that order is a valid one); dependencies are checked, not kept. A
// child graph node copies its graph's ops, as the real driver clones the child graph.
namespace simcuda {
namespace {

CUresult checkDeps(Graph* g, const CUgraphNode* deps, size_t n)
{
    if (n && !deps) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; ++i) {
        auto* d = liveHandle<GraphNode>(deps[i], HandleKind::GraphNode);
        if (!d || d->graph != g) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

// Adds a node running op (none for an empty node) after checking the graph and the dependencies.
CUresult addOpNode(CUgraphNode* out, CUgraph hg, const CUgraphNode* deps, size_t n, Op* op, CUgraphNodeType type)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    Graph* graph = asGraph(hg);
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = checkDeps(graph, deps, n)) return rc;
    size_t index = SIZE_MAX;
    if (op) {
        graph->ops.push_back(std::move(*op));
        index = graph->ops.size() - 1;
    }
    *out = reinterpret_cast<CUgraphNode>(addNode(graph, index, type));
    return CUDA_SUCCESS;
}

CUresult hostNodeOp(CUhostFn fn, void* user, Op* op)
{
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    op->kind = OpKind::HostFunc;
    op->duration = config().hostFuncNs;
    op->hostFn = [fn, user] { fn(user); };
    return CUDA_SUCCESS;
}

CUresult kernelNodeOp(const CUDA_KERNEL_NODE_PARAMS* p, Op* op)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ}, block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    return kernelOp(p->func ? p->func : reinterpret_cast<CUfunction>(p->kern), grid, block, p->sharedMemBytes, op);
}

// The v1 params are the v2 ones without kern and ctx.
CUresult kernelNodeOpV1(const CUDA_KERNEL_NODE_PARAMS_v1* p, Op* op)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ}, block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    return kernelOp(p->func, grid, block, p->sharedMemBytes, op);
}

CUresult addKernelNode(CUgraphNode* out, CUgraph hg, const CUgraphNode* deps, size_t n, CUresult made, Op* op)
{
    if (made) return made;
    return addOpNode(out, hg, deps, n, op, CU_GRAPH_NODE_TYPE_KERNEL);
}

CUresult addChildNode(CUgraphNode* out, CUgraph hg, const CUgraphNode* deps, size_t n, CUgraph hchild)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    Graph *graph = asGraph(hg), *child = asGraph(hchild);
    if (!graph || !child || graph == child) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = checkDeps(graph, deps, n)) return rc;
    const size_t first = child->ops.empty() ? SIZE_MAX : graph->ops.size();
    graph->ops.insert(graph->ops.end(), child->ops.begin(), child->ops.end());
    *out = reinterpret_cast<CUgraphNode>(addNode(graph, first, CU_GRAPH_NODE_TYPE_GRAPH));
    return CUDA_SUCCESS;
}

// A node's new parameters (a node of that type): in the graph (exec null) or in an executable graph
// made from it. In an exec, a copy stays a copy between the same kinds of memory and is not empty
// (CUDA: the operands' contexts and mappings may not change, zero-length copies are not supported).
CUresult setNodeOp(GraphExec* ex, CUgraphNode hn, CUgraphNodeType type, CUresult made, Op* op)
{
    if (made) return made;
    Lock g(bigLock());
    auto* n = liveHandle<GraphNode>(hn, HandleKind::GraphNode);
    if (!n || n->type != type) return CUDA_ERROR_INVALID_VALUE;
    if (ex && ex->graph != n->graph) return CUDA_ERROR_INVALID_VALUE;
    std::vector<Op>& ops = ex ? ex->ops : n->graph->ops;
    if (n->index >= ops.size()) return CUDA_ERROR_INVALID_VALUE;
    if (ex && type == CU_GRAPH_NODE_TYPE_MEMCPY &&
        (!op->bytes || std::strcmp(op->dir, ops[n->index].dir) != 0 || std::strcmp(op->hostMem, ops[n->index].hostMem) != 0))
        return CUDA_ERROR_INVALID_VALUE;
    ops[n->index] = std::move(*op);
    return CUDA_SUCCESS;
}

CUresult setKernelParams(GraphExec* ex, CUgraphNode hn, CUresult made, Op* op)
{
    return setNodeOp(ex, hn, CU_GRAPH_NODE_TYPE_KERNEL, made, op);
}

// A copy of a graph: the same ops, and a node for each of the original's (same types, same ops), which
// cuGraphNodeFindInClone pairs with the original's.
CUresult cloneGraph(CUgraph* out, CUgraph hg)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    Graph* from = asGraph(hg);
    if (!from) return CUDA_ERROR_INVALID_VALUE;
    Graph* to = newGraph();
    to->ops = from->ops;
    for (GraphNode* n : from->nodes) {
        GraphNode* copy = addNode(to, n->index, n->type);
        copy->original = n;
    }
    *out = reinterpret_cast<CUgraph>(to);
    return CUDA_SUCCESS;
}

// The exec takes the graph's ops when they are the same kinds in the same order (kernels may change
// function, copies and memsets their parameters); anything else is a topology change.
CUresult execUpdate(CUgraphExec he, CUgraph hg, CUgraphExecUpdateResult* result, CUgraphNode* errNode)
{
    Lock g(bigLock());
    GraphExec* ex = asExec(he);
    Graph* graph = asGraph(hg);
    if (errNode) *errNode = nullptr;
    if (!ex || !graph) return CUDA_ERROR_INVALID_VALUE;
    bool same = graph->ops.size() == ex->ops.size();
    for (size_t i = 0; same && i < ex->ops.size(); ++i) same = graph->ops[i].kind == ex->ops[i].kind;
    if (!same) {
        if (result) *result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    ex->graph = graph;
    ex->ops = graph->ops;
    if (result) *result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda

SIM_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                         const CUDA_KERNEL_NODE_PARAMS_v1* p)
{
    SIM_API(cuGraphAddKernelNode);
    Op op;
    return scope.ret(addKernelNode(out, g, deps, n, kernelNodeOpV1(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                            const CUDA_KERNEL_NODE_PARAMS* p)
{
    SIM_API(cuGraphAddKernelNode_v2);
    Op op;
    return scope.ret(addKernelNode(out, g, deps, n, kernelNodeOp(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                         const CUDA_MEMCPY3D* c, CUcontext)
{
    SIM_API(cuGraphAddMemcpyNode);
    Op op;
    if (CUresult rc = memcpyNodeOp(c, &op)) return scope.ret(rc);
    return scope.ret(addOpNode(out, g, deps, n, &op, CU_GRAPH_NODE_TYPE_MEMCPY));
}

SIM_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                         const CUDA_MEMSET_NODE_PARAMS* p, CUcontext)
{
    SIM_API(cuGraphAddMemsetNode);
    Op op;
    if (CUresult rc = memsetNodeOp(p, &op)) return scope.ret(rc);
    return scope.ret(addOpNode(out, g, deps, n, &op, CU_GRAPH_NODE_TYPE_MEMSET));
}

SIM_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n, CUgraph child)
{
    SIM_API(cuGraphAddChildGraphNode);
    return scope.ret(addChildNode(out, g, deps, n, child));
}

SIM_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n)
{
    SIM_API(cuGraphAddEmptyNode);
    return scope.ret(addOpNode(out, g, deps, n, nullptr, CU_GRAPH_NODE_TYPE_EMPTY));
}

SIM_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* p)
{
    SIM_API(cuGraphKernelNodeSetParams);
    Op op;
    return scope.ret(setKernelParams(nullptr, node, kernelNodeOpV1(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p)
{
    SIM_API(cuGraphKernelNodeSetParams_v2);
    Op op;
    return scope.ret(setKernelParams(nullptr, node, kernelNodeOp(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* p)
{
    SIM_API(cuGraphExecKernelNodeSetParams);
    GraphExec* ex = asExec(e);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Op op;
    return scope.ret(setKernelParams(ex, node, kernelNodeOpV1(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p)
{
    SIM_API(cuGraphExecKernelNodeSetParams_v2);
    GraphExec* ex = asExec(e);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Op op;
    return scope.ret(setKernelParams(ex, node, kernelNodeOp(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D* c)
{
    SIM_API(cuGraphMemcpyNodeSetParams);
    Op op;
    return scope.ret(setNodeOp(nullptr, node, CU_GRAPH_NODE_TYPE_MEMCPY, memcpyNodeOp(c, &op), &op));
}

SIM_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_MEMCPY3D* c, CUcontext)
{
    SIM_API(cuGraphExecMemcpyNodeSetParams);
    GraphExec* ex = asExec(e);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Op op;
    return scope.ret(setNodeOp(ex, node, CU_GRAPH_NODE_TYPE_MEMCPY, memcpyNodeOp(c, &op), &op));
}

SIM_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p)
{
    SIM_API(cuGraphMemsetNodeSetParams);
    Op op;
    return scope.ret(setNodeOp(nullptr, node, CU_GRAPH_NODE_TYPE_MEMSET, memsetNodeOp(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext)
{
    SIM_API(cuGraphExecMemsetNodeSetParams);
    GraphExec* ex = asExec(e);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Op op;
    return scope.ret(setNodeOp(ex, node, CU_GRAPH_NODE_TYPE_MEMSET, memsetNodeOp(p, &op), &op));
}

SIM_EXPORT CUresult cuGraphClone(CUgraph* out, CUgraph original)
{
    SIM_API(cuGraphClone);
    return scope.ret(cloneGraph(out, original));
}

SIM_EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode* out, CUgraphNode original, CUgraph hclone)
{
    SIM_API(cuGraphNodeFindInClone);
    Lock g(bigLock());
    Graph* clone = asGraph(hclone);
    if (!out || !clone) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    for (GraphNode* n : clone->nodes)
        if (n->original && n->original == liveHandle<GraphNode>(original, HandleKind::GraphNode)) {
            *out = reinterpret_cast<CUgraphNode>(n);
            return scope.ret(CUDA_SUCCESS);
        }
    return scope.ret(CUDA_ERROR_INVALID_VALUE);
}

SIM_EXPORT CUresult cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode* errNode, CUgraphExecUpdateResult* result)
{
    SIM_API(cuGraphExecUpdate);
    return scope.ret(execUpdate(e, g, result, errNode));
}

SIM_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* info)
{
    SIM_API(cuGraphExecUpdate_v2);
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    CUgraphNode errNode = nullptr;
    const CUresult rc = execUpdate(e, g, &result, &errNode);
    if (info) {
        info->result = result;
        info->errorNode = errNode;
        info->errorFromNode = nullptr;
    }
    return scope.ret(rc);
}

SIM_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                                       const CUDA_HOST_NODE_PARAMS* p)
{
    SIM_API(cuGraphAddHostNode);
    Op op;
    if (CUresult rc = hostNodeOp(p ? p->fn : nullptr, p ? p->userData : nullptr, &op)) return scope.ret(rc);
    return scope.ret(addOpNode(out, g, deps, n, &op, CU_GRAPH_NODE_TYPE_HOST));
}

// ---- the generic node API (12.2): one entry point for every kind of node, by CUgraphNodeParams::type.
// Kinds the simulator does not run (semaphore, allocation, memop, conditional nodes) are refused.
namespace simcuda {
namespace {

CUresult kernelNodeOpV3(const CUDA_KERNEL_NODE_PARAMS_v3& p, Op* op)
{
    const unsigned grid[3] = {p.gridDimX, p.gridDimY, p.gridDimZ}, block[3] = {p.blockDimX, p.blockDimY, p.blockDimZ};
    return kernelOp(p.func ? p.func : reinterpret_cast<CUfunction>(p.kern), grid, block, p.sharedMemBytes, op);
}

CUresult memsetNodeOpV2(const CUDA_MEMSET_NODE_PARAMS_v2& p, Op* op)
{
    CUDA_MEMSET_NODE_PARAMS v1{};
    v1.dst = p.dst;
    v1.pitch = p.pitch;
    v1.value = p.value;
    v1.elementSize = p.elementSize;
    v1.width = p.width;
    v1.height = p.height;
    return memsetNodeOp(&v1, op);
}

// The op a node of these parameters runs; CUDA_ERROR_NOT_SUPPORTED for a kind the simulator cannot run.
CUresult genericNodeOp(const CUgraphNodeParams* p, Op* op)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return kernelNodeOpV3(p->kernel, op);
    case CU_GRAPH_NODE_TYPE_MEMCPY: return p->memcpy.flags ? CUDA_ERROR_INVALID_VALUE : memcpyNodeOp(&p->memcpy.copyParams, op);
    case CU_GRAPH_NODE_TYPE_MEMSET: return memsetNodeOpV2(p->memset, op);
    case CU_GRAPH_NODE_TYPE_HOST: return hostNodeOp(p->host.fn, p->host.userData, op);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return eventNodeOp(p->eventRecord.event, OpKind::EventRecord, op);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return eventNodeOp(p->eventWait.event, OpKind::EventWait, op);
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult addGenericNode(CUgraphNode* out, CUgraph hg, const CUgraphNode* deps, size_t n, CUgraphNodeParams* p)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    if (p->type == CU_GRAPH_NODE_TYPE_GRAPH) return addChildNode(out, hg, deps, n, p->graph.graph);
    if (p->type == CU_GRAPH_NODE_TYPE_EMPTY) return addOpNode(out, hg, deps, n, nullptr, CU_GRAPH_NODE_TYPE_EMPTY);
    Op op;
    if (CUresult rc = genericNodeOp(p, &op)) return rc;
    return addOpNode(out, hg, deps, n, &op, p->type);
}

// New parameters of a kernel, copy, memset or host node (of the node's own type), in the graph or an exec.
CUresult setGenericNode(GraphExec* ex, CUgraphNode node, CUgraphNodeParams* p)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    Op op;
    const CUresult made = genericNodeOp(p, &op);
    return setNodeOp(ex, node, p->type, made, &op);
}

}  // namespace
}  // namespace simcuda

SIM_EXPORT CUresult cuGraphAddNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n, CUgraphNodeParams* p)
{
    SIM_API(cuGraphAddNode);
    return scope.ret(addGenericNode(out, g, deps, n, p));
}

// Edge data (12.3) other than the default (all zero) is a port or an edge type the simulator has no use for.
SIM_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* edges,
                                      size_t n, CUgraphNodeParams* p)
{
    SIM_API(cuGraphAddNode_v2);
    for (size_t i = 0; edges && i < n; ++i)
        if (edges[i].from_port || edges[i].to_port || edges[i].type) return scope.ret(CUDA_ERROR_NOT_SUPPORTED);
    return scope.ret(addGenericNode(out, g, deps, n, p));
}

SIM_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams* p)
{
    SIM_API(cuGraphNodeSetParams);
    return scope.ret(setGenericNode(nullptr, node, p));
}

SIM_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode node, CUgraphNodeParams* p)
{
    SIM_API(cuGraphExecNodeSetParams);
    GraphExec* ex = asExec(e);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(setGenericNode(ex, node, p));
}

// Event record and wait nodes: they order the launch's stream against the event, and run no device work.
SIM_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n, CUevent e)
{
    SIM_API(cuGraphAddEventRecordNode);
    Op op;
    if (CUresult rc = eventNodeOp(e, OpKind::EventRecord, &op)) return scope.ret(rc);
    return scope.ret(addOpNode(out, g, deps, n, &op, CU_GRAPH_NODE_TYPE_EVENT_RECORD));
}

SIM_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n, CUevent e)
{
    SIM_API(cuGraphAddEventWaitNode);
    Op op;
    if (CUresult rc = eventNodeOp(e, OpKind::EventWait, &op)) return scope.ret(rc);
    return scope.ret(addOpNode(out, g, deps, n, &op, CU_GRAPH_NODE_TYPE_WAIT_EVENT));
}

// An event node's event: read, or changed in the graph or in an exec made from it.
namespace simcuda {
namespace {

CUresult nodeEvent(CUgraphNode hn, CUgraphNodeType type, CUevent* out)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    auto* n = liveHandle<GraphNode>(hn, HandleKind::GraphNode);
    if (!n || n->type != type || n->index >= n->graph->ops.size()) return CUDA_ERROR_INVALID_VALUE;
    *out = n->graph->ops[n->index].event;
    return CUDA_SUCCESS;
}

CUresult setNodeEvent(CUgraphExec he, CUgraphNode node, CUevent e, OpKind kind)
{
    GraphExec* ex = nullptr;
    if (he && !(ex = asExec(he))) return CUDA_ERROR_INVALID_VALUE;
    const CUgraphNodeType type = kind == OpKind::EventRecord ? CU_GRAPH_NODE_TYPE_EVENT_RECORD : CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    Op op;
    const CUresult made = eventNodeOp(e, kind, &op);
    return setNodeOp(ex, node, type, made, &op);
}

}  // namespace
}  // namespace simcuda

SIM_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent* out)
{
    SIM_API(cuGraphEventRecordNodeGetEvent);
    return scope.ret(nodeEvent(node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, out));
}

SIM_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent* out)
{
    SIM_API(cuGraphEventWaitNodeGetEvent);
    return scope.ret(nodeEvent(node, CU_GRAPH_NODE_TYPE_WAIT_EVENT, out));
}

SIM_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode node, CUevent e)
{
    SIM_API(cuGraphEventRecordNodeSetEvent);
    return scope.ret(setNodeEvent(nullptr, node, e, OpKind::EventRecord));
}

SIM_EXPORT CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode node, CUevent e)
{
    SIM_API(cuGraphEventWaitNodeSetEvent);
    return scope.ret(setNodeEvent(nullptr, node, e, OpKind::EventWait));
}

SIM_EXPORT CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec ex, CUgraphNode node, CUevent e)
{
    SIM_API(cuGraphExecEventRecordNodeSetEvent);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(setNodeEvent(ex, node, e, OpKind::EventRecord));
}

SIM_EXPORT CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec ex, CUgraphNode node, CUevent e)
{
    SIM_API(cuGraphExecEventWaitNodeSetEvent);
    if (!ex) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(setNodeEvent(ex, node, e, OpKind::EventWait));
}
