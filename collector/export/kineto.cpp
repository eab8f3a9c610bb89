// collector/export/kineto.cpp: the Kineto-form writer. The fields and their places are those HTA's
// parser reads (hta/common/trace_file.py finds a file's rank by the first `"rank": N` of its text, so
// distributedInfo comes first and is the only "rank" key spelt that way; hta/common/trace_parser.py
// keeps the "X" events with a dur and a cat; hta/common/trace.py pairs a call with its GPU work by
// args.correlation and tells GPU work by args.stream > 0, so host calls carry no stream), in the layout
// libkineto's output_json.cpp writes. Written by hand: a capture of a million calls makes millions of events.
#include "collector/export/kineto.h"

#include "collector/analyze/internal.h"
#include "collector/export/common.h"
#include "collector/export/nccl_launches.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

namespace gpuspy::collect {

namespace {

using namespace exporting;

// Kineto's copy names: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)" (HTA's memory kernels
// are the names that begin with Memcpy or Memset).
const char* copyKind(wire::Direction d) { return wire::directionName(d); }  // "HtoD", "DtoH", "PtoP"...
const char* memoryKind(wire::MemKind m)
{
    switch (m) {
    case wire::MemKind::Pageable: return "Pageable";
    case wire::MemKind::Pinned: return "Pinned";
    case wire::MemKind::Managed: return "Managed";
    case wire::MemKind::Device: return "Device";
    case wire::MemKind::Array: return "Array";
    default: return "Unknown";
    }
}

// A call's name as CUPTI gives it: cudaLaunchKernelEx is a C++ template over the runtime's entry point
// cudaLaunchKernelExC, the name Kineto writes and HTA counts among kernel launches.
std::string kinetoCallName(const std::string& label) { return label == "cudaLaunchKernelEx" ? "cudaLaunchKernelExC" : label; }

class Writer {
public:
    std::string out;

    void event(char ph, const std::string& cat, std::string_view name, uint64_t pid, uint64_t tid, uint64_t tsNs)
    {
        out += m_first ? "\n  {" : ",\n  {";
        m_first = false;
        out += "\"ph\": \"";
        out += ph;
        out += "\"";
        if (!cat.empty()) {
            out += ", \"cat\": ";
            appendJsonString(out, cat);
        }
        out += ", \"name\": ";
        appendJsonString(out, name);
        out += ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": ";
        appendMicros(out, tsNs);
    }
    void dur(uint64_t ns)
    {
        out += ", \"dur\": ";
        appendMicros(out, ns);
    }
    void metadata(const char* what, uint64_t pid, uint64_t tid, const char* key, const std::string& value, bool quoted = true)
    {
        event('M', "", what, pid, tid, 0);
        out += std::string(", \"args\": {\"") + key + "\": ";
        if (quoted) appendJsonString(out, value);
        else out += value;
        out += "}}";
    }

private:
    bool m_first = true;
};

// The fields PyTorch's record_param_comms gives an NCCL kernel (Kineto copies them onto it), from the
// operations the launch carried. A fused launch's operations are joined ("allreduce+all_gather"), their
// element counts summed where they share a type, else counted in bytes (dtype "Byte"): NCCL itself gives
// an all-gather's count in bytes (ncclInt8) beside a float all-reduce.
void appendCollectiveArgs(std::string& o, const Process& p, const std::vector<const wire::CollectiveBody*>& ops)
{
    auto text = [&](uint32_t id) {
        auto it = p.strings.find(id);
        return id && it != p.strings.end() ? it->second : std::string();
    };
    std::string names, dtype;
    bool mixed = false;
    for (const wire::CollectiveBody* b : ops) {
        const std::string t = c10DtypeName(text(b->datatypeId));
        mixed = mixed || (!dtype.empty() && dtype != t);
        dtype = t;
        names += (names.empty() ? "" : "+") + c10dCollectiveName(text(b->funcId));
    }
    uint64_t in = 0, out = 0;
    for (const wire::CollectiveBody* b : ops) {
        const std::string op = text(b->funcId);
        const uint64_t unit = mixed ? ncclTypeBytes(text(b->datatypeId)) : 1;
        const uint64_t n = b->count * unit, all = n * uint64_t(std::max(b->nranks, 1));
        // NCCL's count: per rank for an all-gather (what each sends) and a reduce-scatter (what each receives).
        if (op == "AllGather") in += n, out += all;
        else if (op == "ReduceScatter") in += all, out += n;
        else if (op == "Send") in += n;
        else if (op == "Recv") out += n;
        else in += n, out += n;
    }
    if (mixed) dtype = "Byte";
    const wire::CollectiveBody& first = *ops.front();
    o += ", \"Collective name\": ";
    appendJsonString(o, names);
    o += ", \"In msg nelems\": " + std::to_string(in) + ", \"Out msg nelems\": " + std::to_string(out);
    o += ", \"Group size\": " + std::to_string(first.nranks) + ", \"dtype\": ";
    appendJsonString(o, dtype);
    o += ", \"Rank\": " + std::to_string(first.rank);
    if (first.kind == wire::CollectiveKind::PointToPoint) {
        const std::string op = text(first.funcId);
        o += std::string(op == "Recv" ? ", \"Src Rank\": " : ", \"Dst Rank\": ") + std::to_string(first.peer);
    } else {
        o += ", \"Seq\": " + std::to_string(first.seq);
    }
    o += ", \"Comms Id\": " + std::to_string(first.commId);
    if (ops.size() > 1) o += ", \"fused operations\": " + std::to_string(ops.size());
}

// The devices a rank holds in its process, and whether one is the rank's.
struct DeviceSet {
    const JobRank* rank;
    std::set<int> claimed;  // devices some rank of the process holds
    bool holds(int device) const
    {
        if (rank->devices.empty()) return true;
        if (std::find(rank->devices.begin(), rank->devices.end(), device) != rank->devices.end()) return true;
        return rank->strays && !claimed.count(device);
    }
};

// Wall-clock time of a CLOCK_MONOTONIC instant, by the first process that recorded the pair; 0: unknown.
uint64_t realtimeOf(const Capture& capture, uint64_t monoNs)
{
    for (const Process& p : capture.processes)
        if (p.startRealtimeNs && p.startNs) return uint64_t(int64_t(p.startRealtimeNs) + (int64_t(monoNs) - int64_t(p.startNs)));
    return 0;
}

}  // namespace

std::vector<KinetoFile> exportKineto(const Capture& capture)
{
    std::vector<KinetoFile> files;
    exportKineto(capture, [&](KinetoFile&& f) { files.push_back(std::move(f)); });
    return files;
}

size_t exportKineto(const Capture& capture, const std::function<void(KinetoFile&&)>& sink)
{
    const Index ix = buildIndex(capture);
    const std::vector<JobRank> ranks = jobRanks(capture);
    const uint64_t base = ix.firstNs;
    const uint64_t baseWall = realtimeOf(capture, base);
    auto rel = [&](uint64_t ns) { return ns > base ? ns - base : 0; };

    // Stream numbers as Kineto's tids (CUPTI's stream ids are small integers, HTA needs them above 0):
    // the process's streams numbered from 1, in the Index's order (by device, then handle).
    std::vector<uint64_t> streamNo(ix.tracks.size(), 0);
    std::vector<uint64_t> counter(capture.processes.size(), 0);
    for (size_t t = 0; t < ix.tracks.size(); ++t)
        if (ix.tracks[t].kind == TrackKind::Stream) streamNo[t] = ++counter[ix.tracks[t].process];

    // Per process: its collectives by the launch that carried them, its claimed devices, its names.
    std::vector<std::unordered_map<const wire::CallBody*, std::vector<const wire::CollectiveBody*>>> opsOf(capture.processes.size());
    std::vector<std::set<int>> claimed(capture.processes.size());
    for (const JobRank& r : ranks)
        for (int d : r.devices) claimed[r.process].insert(d);

    size_t made = 0;
    for (const JobRank& r : ranks) {
        const size_t pi = r.process;
        const Process& p = capture.processes[pi];
        const ProcIndex& px = ix.procs[pi];
        if (opsOf[pi].empty() && !p.collectives.empty()) {
            const std::vector<const wire::CallBody*> launches = ncclLaunchesOf(p);
            for (size_t i = 0; i < launches.size(); ++i)
                if (launches[i]) opsOf[pi][launches[i]].push_back(&p.collectives[i]);
        }
        const DeviceSet mine{&r, claimed[pi]};
        ProcNames names(p);
        KinetoFile f;
        f.rank = r;
        f.name = "rank-" + std::to_string(r.rank) + ".pt.trace.json";
        Writer w;
        std::string& o = w.out;
        // Reserved up front, as the Perfetto writer does: growing a string of a gigabyte copies it again and again.
        o.reserve((1 << 16) + 200 * px.calls.size() + 330 * ix.spans.size() / std::max<size_t>(1, ranks.size()));
        o += "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {";
        if (!p.collectives.empty()) o += "\"backend\": \"nccl\", ";  // it used NCCL
        o += "\"rank\": " + std::to_string(r.rank) + ", \"world_size\": " + std::to_string(r.worldSize) + "},\n";
        o += "  \"deviceProperties\": [";
        bool firstDevice = true;
        for (const auto& [ordinal, name] : p.devices) {
            if (!mine.holds(ordinal)) continue;
            o += firstDevice ? "\n    {" : ",\n    {";
            firstDevice = false;
            o += "\"id\": " + std::to_string(ordinal) + ", \"name\": ";
            appendJsonString(o, name);
            o += "}";
        }
        o += "],\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " + std::to_string(baseWall) + ",\n  \"traceEvents\": [";

        // Names: the process and its threads; each device as a process, its streams as threads.
        w.metadata("process_name", p.pid, 0, "name", px.label);
        w.metadata("process_labels", p.pid, 0, "labels", "CPU");
        std::set<int> devices;
        for (size_t t = 0; t < ix.tracks.size(); ++t) {
            const Track& tr = ix.tracks[t];
            if (tr.process != pi) continue;
            if (tr.kind == TrackKind::Thread) {
                w.metadata("thread_name", p.pid, tr.tid, "name", tr.name);
                continue;
            }
            if (!mine.holds(tr.device)) continue;
            if (devices.insert(tr.device).second) {
                w.metadata("process_name", uint64_t(tr.device), 0, "name", "GPU " + std::to_string(tr.device));
                std::string label = "rank " + std::to_string(r.rank);
                auto dn = p.devices.find(tr.device);
                if (dn != p.devices.end()) label = dn->second + ", " + label;
                w.metadata("process_labels", uint64_t(tr.device), 0, "labels", label);
            }
            w.metadata("thread_name", uint64_t(tr.device), streamNo[t], "name", "stream " + std::to_string(streamNo[t]) + " (" + tr.name + ")");
        }

        // The CUDA calls of this rank: those on its devices (and, for the rank holding strays, the others).
        for (size_t i = 0; i < px.calls.size(); ++i) {
            const wire::CallBody& c = *px.calls[i];
            if (!mine.holds(c.device)) continue;
            const std::string label = kinetoCallName(names.label(c));
            w.event('X', label.rfind("cuda", 0) == 0 ? "cuda_runtime" : "cuda_driver", label, p.pid, c.tid, rel(c.beginNs));
            w.dur(c.endNs > c.beginNs ? c.endNs - c.beginNs : 0);
            o += ", \"args\": {\"correlation\": " + std::to_string(c.seq) + ", \"device\": " + std::to_string(c.device);
            if (c.result != 0) o += ", \"result\": " + std::to_string(c.result);
            o += "}}";
            ++f.calls;
        }

        // Its GPU work, each piece with its call's correlation id; the first piece of a call gets the arrow.
        std::set<uint64_t> flowed;
        for (const Span& s : ix.spans) {
            if (ix.tracks[s.track].process != pi || !mine.holds(s.body->device)) continue;
            const char* cat = s.kind == WorkKind::Kernel ? "kernel" : s.kind == WorkKind::Copy ? "gpu_memcpy" : s.kind == WorkKind::Memset ? "gpu_memset" : nullptr;
            if (!cat || !s.call) {
                ++f.skipped;
                continue;
            }
            const wire::CallBody& c = *s.call;
            std::string name;
            if (s.kind == WorkKind::Kernel) name = names.kernel(c);
            else if (s.kind == WorkKind::Copy)
                name = std::string("Memcpy ") + copyKind(c.args.transfer.direction) + " (" + memoryKind(c.args.transfer.srcMem) + " -> " +
                       memoryKind(c.args.transfer.dstMem) + ")";
            else name = std::string("Memset (") + memoryKind(c.args.transfer.dstMem) + ")";
            const uint64_t pid = uint64_t(s.body->device), tid = streamNo[s.track];
            const uint64_t begin = s.body->beginNs, len = s.body->endNs > begin ? s.body->endNs - begin : 0;
            w.event('X', cat, name, pid, tid, rel(begin));
            w.dur(len);
            o += ", \"args\": {\"device\": " + std::to_string(s.body->device) + ", \"stream\": " + std::to_string(tid) +
                 ", \"correlation\": " + std::to_string(c.seq);
            if (s.kind == WorkKind::Kernel) {
                const wire::LaunchArgs& l = c.args.launch;
                o += ", \"grid\": [" + std::to_string(l.grid[0]) + ", " + std::to_string(l.grid[1]) + ", " + std::to_string(l.grid[2]) +
                     "], \"block\": [" + std::to_string(l.block[0]) + ", " + std::to_string(l.block[1]) + ", " + std::to_string(l.block[2]) +
                     "], \"shared memory\": " + std::to_string(l.sharedMem);
                auto ops = opsOf[pi].find(&c);
                if (ops != opsOf[pi].end()) appendCollectiveArgs(o, p, ops->second);
                ++f.kernels;
            } else {
                const uint64_t bytes = c.args.transfer.bytes;
                o += ", \"bytes\": " + std::to_string(bytes);
                if (s.kind == WorkKind::Copy) {
                    o += ", \"copy kind\": \"" + std::string(copyKind(c.args.transfer.direction)) + "\"";
                    if (len && !s.estimated) o += ", \"memory bandwidth (GB/s)\": " + std::to_string(double(bytes) / double(len));
                    ++f.memcpys;
                } else {
                    ++f.memsets;
                }
            }
            // An untimed operation where gpuspy's device timeline placed it: said so, never passed off as
            // measured; a blocking copy's span on an idle stream covers the driver's host time too (a bound).
            if (s.estimated) {
                o += ", \"estimated\": true";
                ++f.estimated;
            } else if (detail::gpuSpanIsUpperBound(c, *s.body)) {
                o += ", \"gpu_time\": \"upper_bound\"";
            }
            o += "}}";
            if (flowed.insert(c.seq).second) {
                const size_t callTrack = px.callTrack[s.callIndex];
                w.event('s', "ac2g", "ac2g", p.pid, ix.tracks[callTrack].tid, rel(c.beginNs));
                o += ", \"id\": " + std::to_string(c.seq) + "}";
                w.event('f', "ac2g", "ac2g", pid, tid, rel(begin));
                o += ", \"id\": " + std::to_string(c.seq) + ", \"bp\": \"e\"}";
                ++f.flows;
            }
        }

        // NVTX push/pop ranges of the process's threads, as Kineto writes record_function ranges.
        for (const NvtxRange& n : ix.nvtx) {
            if (!n.pushPop || n.mark || ix.tracks[n.track].process != pi) continue;
            w.event('X', "user_annotation", n.name, p.pid, ix.tracks[n.track].tid, rel(n.begin));
            w.dur(n.end > n.begin ? n.end - n.begin : 0);
            o += "}";
        }
        o += "\n  ],\n  \"traceName\": ";
        appendJsonString(o, f.name);
        o += ",\n  \"gpuspy\": {\"producer\": \"gpuspy export --format kineto\", \"clock\": \"host CLOCK_MONOTONIC less base_monotonic_ns\"";
        o += ", \"base_monotonic_ns\": " + std::to_string(base);
        o += ", \"rank_from\": \"" +
             std::string(r.source == RankSource::Communicator ? "nccl communicator" : r.source == RankSource::Launcher ? "launcher" : "process order") +
             "\"";
        o += ", \"estimated_gpu_events\": " + std::to_string(f.estimated) + ", \"left_out_gpu_spans\": " + std::to_string(f.skipped) + "}\n}\n";
        f.json = std::move(o);
        sink(std::move(f));
        ++made;
    }
    return made;
}

}  // namespace gpuspy::collect
