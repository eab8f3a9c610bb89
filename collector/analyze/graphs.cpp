// collector/analyze/graphs.cpp: graph work. The shim marks each launch, copy and memset issued into a
// stream capture with the CUgraph it joins, cuStreamEndCapture with the graph it made, and each
// instantiation (and cuGraphExecUpdate) with the exec and its graph; from these the nodes of every
// executable graph are rebuilt here. Graphs built node by node (cuGraphAdd*Node) are recorded the
// same way: each node's call is marked with its CUgraph. A child graph node, or a graph launched into
// a capture, adds the child's nodes; cuGraph(Exec)KernelNodeSetParams changes a node's kernel. Each
// graph launch counts its nodes in the kernel and transfer rows (at the launch's call site), its
// measured GPU time split over them as an estimate.
#include "collector/analyze/internal.h"

#include <algorithm>

namespace gpuspy::collect::detail {

namespace {

bool isGraphNode(const wire::CallBody& c)
{
    return hasFlag(c, wire::kCallCapturing) && succeeded(c) &&
           (c.category == wire::Category::Launch || c.category == wire::Category::Transfer);
}

// An event record or wait node (captured with the EXTERNAL flag, or added by the node API): a node of
// its graph that runs no device work, counted with each launch, never timed.
bool isEventNode(const wire::CallBody& c)
{
    const uint64_t kind = c.args.raw[wire::kEventNodeSlot];
    return hasFlag(c, wire::kCallCapturing) && succeeded(c) &&
           (c.category == wire::Category::Other || c.category == wire::Category::Sync) &&
           (kind == wire::kEventNodeRecord || kind == wire::kEventNodeWait);
}

bool startsWith(const std::string& s, const char* prefix)
{
    return s.compare(0, std::char_traits<char>::length(prefix), prefix) == 0;
}

// A host function captured into a graph, or a host node added to one (by cuGraphAddNode: grid 0, which
// no kernel node has).
bool isHostFunction(const ProcView& pv, const wire::CallBody& c)
{
    if (c.args.launch.kernelId != 0) return false;
    const std::string api = pv.apiName(c);
    return startsWith(api, "cuLaunchHostFunc") || startsWith(api, "cuGraphAddHostNode") ||
           (startsWith(api, "cuGraphAddNode") && c.args.launch.grid[0] == 0);
}

// What a node would take on its own, from the same kernel's standalone timings or the bandwidth of
// standalone copies alike; 0 when there are none.
uint64_t standaloneNs(Context& cx, const ProcView& pv, const wire::CallBody& n)
{
    if (n.category == wire::Category::Launch) {
        const KernelRow& k = kernelAccOf(cx, pv, n, isHostFunction(pv, n)).row;
        return k.timedCount ? k.gpuNs / k.timedCount : 0;
    }
    const wire::TransferArgs& t = n.args.transfer;
    const bool async = hasFlag(n, wire::kCallAsync);
    const uint32_t code = uint32_t(t.direction) | uint32_t(t.srcMem) << 8 | uint32_t(t.dstMem) << 16 | uint32_t(async) << 24;
    auto it = cx.transferOf.find(code);
    if (it == cx.transferOf.end() || !it->second->row.timedBytes || !it->second->row.gpuNs) return 0;
    const TransferRow& row = it->second->row;
    return uint64_t(double(t.bytes) * double(row.gpuNs) / double(row.timedBytes) + 0.5);
}

// The nodes of a graph, once known: a captured graph's from its capture's end, a graph built node by
// node's as they stand (the graph may be instantiated before more nodes are added); null when part of
// it is unknown (a child graph the collector could not rebuild) or nothing was recorded of it.
std::shared_ptr<const GraphBook::Nodes> nodesOf(const GraphBook& book, uint64_t graph)
{
    if (book.incomplete.count(graph)) return nullptr;
    auto done = book.graphs.find(graph);
    if (done != book.graphs.end()) return done->second;
    auto building = book.capturing.find(graph);
    if (building == book.capturing.end() || !building->second) return nullptr;
    return std::make_shared<const GraphBook::Nodes>(*building->second);
}

// A graph's child (a child graph node, or a graph launched into its capture) adds its nodes to it.
void addChildNodes(GraphBook& book, uint64_t graph, std::shared_ptr<const GraphBook::Nodes> child)
{
    if (!graph) return;
    if (!child) {
        book.incomplete.insert(graph);
        return;
    }
    auto& nodes = book.capturing[graph];
    if (!nodes) nodes = std::make_shared<GraphBook::Nodes>();
    nodes->insert(nodes->end(), child->begin(), child->end());
}

// The node of category cat made by the call with seq nodeSeq; in a graph's own list (graph != 0) only
// where it was made in that graph: the copies a child graph node or a clone took of it are other nodes.
bool isNode(const wire::CallBody& n, uint64_t nodeSeq, wire::Category cat, uint64_t graph)
{
    return n.seq == nodeSeq && n.category == cat && (!graph || n.args.raw[wire::kCaptureGraphSlot] == graph);
}

bool holdsNode(const GraphBook::Nodes& nodes, uint64_t nodeSeq, wire::Category cat, uint64_t graph)
{
    for (const wire::CallBody& n : nodes)
        if (isNode(n, nodeSeq, cat, graph)) return true;
    return false;
}

// That node changed by edit(wire::CallBody&).
template <class Edit>
void editIn(GraphBook::Nodes& nodes, uint64_t nodeSeq, wire::Category cat, uint64_t graph, const Edit& edit)
{
    for (wire::CallBody& n : nodes)
        if (isNode(n, nodeSeq, cat, graph)) edit(n);
}

// A node given new parameters: in the exec `exec`, or (exec 0) in the graph that holds it, for later
// instantiations and updates. The node is the one added (or captured) by the call with seq nodeSeq; one
// the shim did not see made (nodeSeq 0) is left as it was.
template <class Edit>
void editNode(GraphBook& book, uint64_t exec, uint64_t nodeSeq, wire::Category cat, const Edit& edit)
{
    if (!nodeSeq) return;
    if (exec) {
        auto it = book.execs.find(exec);
        if (it == book.execs.end() || !holdsNode(*it->second, nodeSeq, cat, 0)) return;
        // Copied before the change: other execs and graphs may share the node list.
        auto nodes = std::make_shared<GraphBook::Nodes>(*it->second);
        editIn(*nodes, nodeSeq, cat, 0, edit);
        it->second = std::move(nodes);
        return;
    }
    for (auto& building : book.capturing)
        if (building.second) editIn(*building.second, nodeSeq, cat, building.first, edit);
    for (auto& done : book.graphs) {
        if (!holdsNode(*done.second, nodeSeq, cat, done.first)) continue;  // a copy only of the graph that holds it
        auto copy = std::make_shared<GraphBook::Nodes>(*done.second);
        editIn(*copy, nodeSeq, cat, done.first, edit);
        done.second = std::move(copy);
    }
}

// cuGraphExecKernelNodeSetParams (raw[0] the exec) and cuGraphKernelNodeSetParams (raw[0] 0): the node
// made by the call with seq raw[1] runs kernel raw[2] (its grid and block stay as recorded).
void setNodeKernel(GraphBook& book, const wire::CallBody& c)
{
    const uint32_t kernelId = uint32_t(c.args.raw[2]);
    if (!kernelId) return;
    editNode(book, c.args.raw[0], c.args.raw[1], wire::Category::Launch,
             [&](wire::CallBody& n) { n.args.launch.kernelId = kernelId; });
}

// cuGraph(Exec)MemcpyNodeSetParams and cuGraph(Exec)MemsetNodeSetParams: the node's new transfer (bytes,
// direction, memory kinds); the record's dst is the exec (0: the graph's node), its src the seq of the
// call that made the node.
void setNodeTransfer(GraphBook& book, const wire::CallBody& c)
{
    const wire::TransferArgs& t = c.args.transfer;
    editNode(book, t.dst, t.src, wire::Category::Transfer, [&](wire::CallBody& n) {
        wire::TransferArgs& to = n.args.transfer;
        to.bytes = t.bytes;
        to.direction = t.direction;
        to.srcMem = t.srcMem;
        to.dstMem = t.dstMem;
        to.peerDevice = t.peerDevice;
    });
}

}  // namespace

void addGraphCall(Context&, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    GraphBook& book = pv.graphs;
    if (isGraphNode(c) || isEventNode(c)) {
        const uint64_t graph = c.args.raw[wire::kCaptureGraphSlot];
        if (!graph) return;
        auto& nodes = book.capturing[graph];
        if (!nodes) nodes = std::make_shared<GraphBook::Nodes>();
        nodes->push_back(c);
        return;
    }
    if (c.category != wire::Category::Graph || !succeeded(c)) return;
    if (hasFlag(c, wire::kCallDeviceWork)) {
        // A graph launched into a capture ran nothing: its nodes join the graph being captured (a
        // child graph), and run with each launch of that graph.
        if (!hasFlag(c, wire::kCallCapturing)) return;
        auto child = book.execs.find(c.args.sync.object);
        addChildNodes(book, c.args.raw[wire::kCaptureGraphSlot], child == book.execs.end() ? nullptr : child->second);
        return;
    }
    const std::string& api = ci.api->name;
    if (startsWith(api, "cuGraphCreate")) {
        // A new, empty graph; its handle may be a destroyed graph's.
        const uint64_t graph = c.args.raw[0];
        book.capturing[graph] = std::make_shared<GraphBook::Nodes>();
        book.graphs.erase(graph);
        book.incomplete.erase(graph);
    } else if (startsWith(api, "cuGraphAddChildGraphNode") || startsWith(api, "cuGraphAddNode")) {
        // cuGraphAddNode is a Graph call only for a child graph node (its other kinds are Launch or
        // Transfer nodes, or run nothing counted: Other).
        addChildNodes(book, c.args.raw[wire::kCaptureGraphSlot], nodesOf(book, c.args.raw[0]));
    } else if (startsWith(api, "cuGraphExecKernelNodeSetParams") || startsWith(api, "cuGraphKernelNodeSetParams")) {
        setNodeKernel(book, c);
    } else if (startsWith(api, "cuGraphExecMemcpyNodeSetParams") || startsWith(api, "cuGraphMemcpyNodeSetParams") ||
               startsWith(api, "cuGraphExecMemsetNodeSetParams") || startsWith(api, "cuGraphMemsetNodeSetParams")) {
        setNodeTransfer(book, c);
    } else if (startsWith(api, "cuGraphNodeSetParams") || startsWith(api, "cuGraphExecNodeSetParams")) {
        if (c.args.raw[4] == wire::kNodeEditKernel) setNodeKernel(book, c);
        else if (c.args.raw[4] == wire::kNodeEditTransfer) setNodeTransfer(book, c);
    } else if (startsWith(api, "cuGraphClone")) {
        // A new graph holding the original's nodes (nodes may be added to it later, as to any graph).
        const uint64_t clone = c.args.raw[0];
        if (!clone) return;
        book.graphs.erase(clone);
        book.incomplete.erase(clone);
        if (auto nodes = nodesOf(book, c.args.raw[1])) {
            book.capturing[clone] = std::make_shared<GraphBook::Nodes>(*nodes);
        } else {
            book.capturing.erase(clone);
            book.incomplete.insert(clone);
        }
    } else if (startsWith(api, "cuStreamEndCapture")) {
        const uint64_t graph = c.args.raw[0];
        if (!graph) return;
        auto it = book.capturing.find(graph);
        if (book.incomplete.erase(graph)) {
            // Part of it is a graph whose nodes are unknown: so is the whole (its launches count as unknown).
            book.graphs.erase(graph);
        } else {
            // A capture that recorded no node still makes a graph: an empty one.
            book.graphs[graph] = it == book.capturing.end() ? std::make_shared<GraphBook::Nodes>() : std::move(it->second);
        }
        if (it != book.capturing.end()) book.capturing.erase(it);
    } else if (startsWith(api, "cuGraphInstantiate") || startsWith(api, "cuGraphExecUpdate")) {
        const uint64_t exec = c.args.raw[0], graph = c.args.raw[1];
        if (!exec) return;
        if (auto nodes = nodesOf(book, graph)) book.execs[exec] = std::move(nodes);
        else book.execs.erase(exec);  // its nodes are unknown
    }
}

void addGraphLaunch(Context& cx, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    auto it = pv.graphs.execs.find(c.args.sync.object);
    if (it == pv.graphs.execs.end()) {
        ++cx.launches.graphsUnknown;
        return;
    }
    const GraphBook::Nodes& nodes = *it->second;
    // The launch's measured time over its nodes, all of it: each node with standalone timings gets
    // them, the others an even share of what is left; the estimates scaled to the measurement when
    // they exceed it, or when every node has one (a graph launch does the same work faster or slower).
    std::vector<uint64_t> est(nodes.size());
    uint64_t known = 0, unknown = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (isEventNode(nodes[i])) continue;  // no device work: no share of the launch's time
        est[i] = ci.timed ? standaloneNs(cx, pv, nodes[i]) : 0;
        known += est[i];
        unknown += est[i] == 0;
    }
    const uint64_t total = ci.timed ? ci.gpuNs : 0;
    const double scale = known && (known > total || !unknown) ? double(total) / double(known) : 1.0;
    const uint64_t rest = known < total && unknown ? (total - known) / unknown : 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
        const wire::CallBody& n = nodes[i];
        if (isEventNode(n)) {
            ++cx.launches.graphEventNodes;
            continue;
        }
        const uint64_t share = est[i] ? uint64_t(double(est[i]) * scale + 0.5) : rest;
        ++cx.launches.graphNodes;
        if (n.category == wire::Category::Launch) {
            KernelAcc& k = kernelAccOf(cx, pv, n, isHostFunction(pv, n));
            ++k.row.count;
            ++k.row.graphCount;
            k.row.graphGpuNs += share;
            k.sites[ci.rawSite] += 0;  // the graph launch's site, which holds its host time
            continue;
        }
        const wire::TransferArgs& t = n.args.transfer;
        TransferAcc& a = transferAccOf(cx, t, "graph");
        TransferRow& row = a.row;
        ++row.count;
        row.bytes += t.bytes;
        ++row.graphCount;
        row.graphGpuNs += share;
        addToBucket(row, t.bytes);
        const std::string api = pv.apiName(n);
        if (std::find(row.apis.begin(), row.apis.end(), api) == row.apis.end()) row.apis.push_back(api);
        a.sites[ci.rawSite] += 0;
    }
}

}  // namespace gpuspy::collect::detail
