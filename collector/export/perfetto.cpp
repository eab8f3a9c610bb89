// collector/export/perfetto.cpp: the Chrome trace-event JSON writer. Written by hand rather than
// through nlohmann: a capture of a million calls makes several million events.
#include "collector/export/perfetto.h"

#include "collector/analyze/internal.h"
#include "collector/model/api_names.h"
#include "collector/export/common.h"
#include "collector/export/job_ranks.h"
#include "collector/timeline/device_timeline.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace gpuspy::collect {

namespace {

using namespace exporting;

// Stream tracks get tids no Linux thread has (pid_max is at most 2^22).
constexpr uint64_t kStreamTidBase = 1u << 30;

std::string hex(uint64_t v)
{
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

std::string formatBytes(uint64_t n)
{
    char b[32];
    if (n < 1024) std::snprintf(b, sizeof b, "%llu B", static_cast<unsigned long long>(n));
    else if (n < (1ull << 20)) std::snprintf(b, sizeof b, "%.1f KiB", double(n) / 1024);
    else if (n < (1ull << 30)) std::snprintf(b, sizeof b, "%.1f MiB", double(n) / (1 << 20));
    else std::snprintf(b, sizeof b, "%.2f GiB", double(n) / (1ull << 30));
    return b;
}

class Writer {
public:
    Writer(PerfettoStats& stats, size_t estimate) : m_stats(stats) { m_out.reserve(estimate); }

    // Starts an event: {"ph":"X","pid":1,"tid":2,"ts":...  (the caller adds the rest and calls end()).
    void begin(char ph, uint64_t pid, uint64_t tid)
    {
        m_out += m_first ? "\n" : ",\n";
        m_first = false;
        m_out += "{\"ph\":\"";
        m_out += ph;
        m_out += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
        ++m_stats.events;
    }
    void ts(uint64_t ns)
    {
        m_out += ",\"ts\":";
        appendMicros(m_out, ns);
    }
    void dur(uint64_t ns)
    {
        m_out += ",\"dur\":";
        appendMicros(m_out, ns);
    }
    void str(const char* key, std::string_view v)
    {
        m_out += ",\"";
        m_out += key;
        m_out += "\":";
        appendJsonString(m_out, v);
    }
    void raw(const char* key, const std::string& v)
    {
        m_out += ",\"";
        m_out += key;
        m_out += "\":" + v;
    }
    void end() { m_out += "}"; }
    std::string& out() { return m_out; }

    void metadata(const char* what, uint64_t pid, uint64_t tid, const std::string& name)
    {
        begin('M', pid, tid);
        str("name", what);
        m_out += ",\"args\":{\"name\":";
        appendJsonString(m_out, name);
        m_out += "}";
        end();
    }
    void sortIndex(const char* what, uint64_t pid, uint64_t tid, uint64_t index)
    {
        begin('M', pid, tid);
        str("name", what);
        m_out += ",\"args\":{\"sort_index\":" + std::to_string(index) + "}";
        end();
    }

private:
    PerfettoStats& m_stats;
    std::string m_out;
    bool m_first = true;
};

// A slice on one track before nesting is checked: a call, an NVTX push/pop range or a GPU span.
struct Item {
    uint64_t begin, end;
    uint8_t order;  // at equal begin and end, the outer kind first: NVTX, then calls
    uint8_t kind;   // 0 call, 1 nvtx, 2 span
    size_t index;   // into the process's calls, Index::nvtx or Index::spans
};

// Sorts the items of one track outermost first and cuts every item that would end after the item
// it starts inside; returns how many were cut.
uint64_t nest(std::vector<Item>& items)
{
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        if (a.begin != b.begin) return a.begin < b.begin;
        if (a.end != b.end) return a.end > b.end;
        return a.order < b.order;
    });
    uint64_t clamped = 0;
    std::vector<uint64_t> open;  // ends of the enclosing items
    for (Item& it : items) {
        while (!open.empty() && open.back() <= it.begin) open.pop_back();
        if (!open.empty() && it.end > open.back()) {
            it.end = open.back();
            ++clamped;
        }
        open.push_back(it.end);
    }
    return clamped;
}

}  // namespace

std::string exportPerfetto(const Capture& capture, PerfettoStats* statsOut)
{
    PerfettoStats stats;
    const Index ix = buildIndex(capture);
    // Reserved up front: growing a string of hundreds of megabytes copies it again and again.
    size_t calls = 0;
    for (const ProcIndex& px : ix.procs) calls += px.calls.size();
    Writer w(stats, (1 << 16) + 260 * calls + 420 * ix.spans.size() + 160 * ix.nvtx.size());
    // No "displayTimeUnit": Perfetto reads it as the unit of the timestamps, Chrome as a display hint.
    w.out() += "{\"traceEvents\":[";

    auto tidOf = [&](size_t track) {
        const Track& t = ix.tracks[track];
        return t.kind == TrackKind::Thread ? uint64_t(t.tid) : kStreamTidBase + track;
    };
    // Several captures as one run may hold one pid twice (two hosts): each process keeps a track of its own.
    const std::vector<uint64_t> tracePid = tracePids(capture);
    auto pidOf = [&](size_t track) { return tracePid[ix.tracks[track].process]; };

    // Each process labelled with its rank where known (or its ranks, and then each stream with its device's).
    std::vector<std::string> rankLabel(ix.procs.size());
    std::map<std::pair<size_t, int>, int> rankOfDevice;  // (process, device) -> rank, where ranks split a process
    {
        std::vector<std::vector<std::string>> ranksOf(ix.procs.size());
        std::vector<std::string> suffix(ix.procs.size());
        for (const JobRank& r : jobRanks(capture)) {
            if (!r.known()) continue;  // labelled where known, not by order
            ranksOf[r.process].push_back(std::to_string(r.rank));
            suffix[r.process] = " of " + std::to_string(r.worldSize);
            for (int d : r.devices) rankOfDevice[{r.process, d}] = r.rank;
        }
        for (size_t pi = 0; pi < ix.procs.size(); ++pi) {
            if (ranksOf[pi].empty()) continue;
            rankLabel[pi] = ranksOf[pi].size() == 1 ? " \u00b7 rank " : " \u00b7 ranks ";
            for (size_t k = 0; k < ranksOf[pi].size(); ++k) rankLabel[pi] += (k ? ", " : "") + ranksOf[pi][k];
            rankLabel[pi] += suffix[pi];
        }
    }
    for (size_t pi = 0; pi < ix.procs.size(); ++pi) {
        const uint64_t pid = tracePid[pi];
        w.metadata("process_name", pid, 0, ix.procs[pi].label + rankLabel[pi]);
        w.sortIndex("process_sort_index", pid, 0, pi);
    }
    for (size_t t = 0; t < ix.tracks.size(); ++t) {
        std::string name = ix.tracks[t].name;
        auto rank = rankOfDevice.find({ix.tracks[t].process, ix.tracks[t].device});
        if (ix.tracks[t].kind == TrackKind::Stream && rank != rankOfDevice.end()) name += " \u00b7 rank " + std::to_string(rank->second);
        w.metadata("thread_name", pidOf(t), tidOf(t), name);
        w.sortIndex("thread_sort_index", pidOf(t), tidOf(t), t);
    }

    // Every slice, per track, nested.
    std::vector<std::vector<Item>> byTrack(ix.tracks.size());
    for (const ProcIndex& px : ix.procs)
        for (size_t i = 0; i < px.calls.size(); ++i)
            byTrack[px.callTrack[i]].push_back(Item{px.calls[i]->beginNs, std::max(px.calls[i]->beginNs, px.calls[i]->endNs), 1, 0, i});
    for (size_t i = 0; i < ix.nvtx.size(); ++i)
        if (ix.nvtx[i].pushPop) byTrack[ix.nvtx[i].track].push_back(Item{ix.nvtx[i].begin, ix.nvtx[i].end, 0, 1, i});
    for (size_t i = 0; i < ix.spans.size(); ++i) {
        const wire::GpuSpanBody& s = *ix.spans[i].body;
        byTrack[ix.spans[i].track].push_back(Item{s.beginNs, std::max(s.beginNs, s.endNs), 1, 2, i});
    }

    // Where each call and span ended up after nesting: the flows bind inside these.
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> callAt(ix.procs.size());
    for (size_t pi = 0; pi < ix.procs.size(); ++pi) callAt[pi].resize(ix.procs[pi].calls.size());
    std::vector<std::pair<uint64_t, uint64_t>> spanAt(ix.spans.size());
    // Call sites named as the report names them (analyze's SiteNamer), per process.
    std::vector<std::unique_ptr<SiteNamer>> sites;
    for (size_t pi = 0; pi < ix.procs.size(); ++pi) sites.push_back(std::make_unique<SiteNamer>(capture.processes[pi]));
    std::vector<std::unique_ptr<ProcNames>> names;
    for (const ProcIndex& px : ix.procs) names.push_back(std::make_unique<ProcNames>(*px.proc));

    for (size_t t = 0; t < ix.tracks.size(); ++t) {
        std::vector<Item>& items = byTrack[t];
        stats.clamped += nest(items);
        const size_t pi = ix.tracks[t].process;
        const Process& p = capture.processes[pi];
        const uint64_t pid = pidOf(t), tid = tidOf(t);
        for (const Item& it : items) {
            ++stats.slices;
            w.begin('X', pid, tid);
            w.ts(it.begin);
            w.dur(it.end - it.begin);
            std::string& o = w.out();
            if (it.kind == 1) {
                const NvtxRange& r = ix.nvtx[it.index];
                w.str("name", r.name);
                w.str("cat", "nvtx");
            } else if (it.kind == 0) {
                const wire::CallBody& c = *ix.procs[pi].calls[it.index];
                callAt[pi][it.index] = {it.begin, it.end};
                w.str("name", names[pi]->label(c));
                w.str("cat", wire::categoryName(c.category));
                o += ",\"args\":{\"api\":";
                appendJsonString(o, names[pi]->abi(c));
                o += ",\"seq\":" + std::to_string(c.seq);
                o += ",\"site\":";
                appendJsonString(o, sites[pi]->label(c.stackId));
                if (c.category == wire::Category::Launch) {
                    o += ",\"kernel\":";
                    appendJsonString(o, names[pi]->kernel(c));
                    const wire::LaunchArgs& l = c.args.launch;
                    o += ",\"grid\":\"" + std::to_string(l.grid[0]) + "x" + std::to_string(l.grid[1]) + "x" + std::to_string(l.grid[2]) +
                         "\",\"block\":\"" + std::to_string(l.block[0]) + "x" + std::to_string(l.block[1]) + "x" +
                         std::to_string(l.block[2]) + "\"";
                }
                if (c.category == wire::Category::Transfer) {
                    const wire::TransferArgs& x = c.args.transfer;
                    o += ",\"bytes\":" + std::to_string(x.bytes) + ",\"direction\":\"" + wire::directionName(x.direction) +
                         "\",\"src\":\"" + wire::memKindName(x.srcMem) + "\",\"dst\":\"" + wire::memKindName(x.dstMem) + "\"";
                }
                if (c.flags & wire::kCallDeviceWork) o += ",\"stream\":\"" + hex(c.stream) + "\"";
                if (names[pi]->blocking(c)) o += ",\"blocking\":true";
                if (c.result != 0) o += ",\"result\":" + std::to_string(c.result);
                o += "}";
            } else {
                const Span& s = ix.spans[it.index];
                spanAt[it.index] = {it.begin, it.end};
                std::string name = workKindName(s.kind);
                if (s.call && s.kind == WorkKind::Kernel) name = names[pi]->kernel(*s.call);
                else if (s.call && s.kind == WorkKind::Copy)
                    name = std::string("memcpy ") + wire::directionName(s.call->args.transfer.direction) + " " +
                           formatBytes(s.call->args.transfer.bytes);
                else if (s.call && s.kind == WorkKind::Memset) name = "memset " + formatBytes(s.call->args.transfer.bytes);
                w.str("name", name);
                // An untimed operation where the device timeline placed it: its own category, so that
                // a trace viewer can tell (and filter) it from measured work.
                w.str("cat", std::string(s.estimated ? "gpu,estimated," : "gpu,") + workKindName(s.kind));
                o += ",\"args\":{\"device\":" + std::to_string(s.body->device);
                if (s.call) {
                    o += ",\"seq\":" + std::to_string(s.call->seq) + ",\"api\":";
                    appendJsonString(o, names[pi]->label(*s.call));
                    // A blocking copy's span on an idle stream covers the driver's host time too.
                    if (!s.estimated && detail::gpuSpanIsUpperBound(*s.call, *s.body)) o += ",\"gpu_time\":\"upper_bound\"";
                }
                if (s.estimated) o += ",\"estimated\":true,\"gpu_time\":\"estimated\"";
                o += "}";
            }
            w.end();
        }
    }

    // GPU memory: one counter track per process and memory space, the bytes in use after every
    // allocation and release (collector/analyze/memory.cpp's rules). A stream-ordered one takes effect when
    // its stream reaches it: the end of the stream's work submitted before it, as placed on the timeline.
    using StreamKey = std::tuple<int, uint64_t, uint32_t, bool>;
    auto keyOf = [](const wire::CallBody& c) {
        const StreamId id = streamIdOf(c);
        return StreamKey{id.device, id.handle, id.tid, id.perThread};
    };
    std::vector<std::map<StreamKey, std::vector<std::pair<uint64_t, uint64_t>>>> workEnds(ix.procs.size());  // (seq, end)
    for (const Span& s : ix.spans)
        if (s.call) workEnds[ix.tracks[s.track].process][keyOf(*s.call)].emplace_back(s.call->seq, s.body->endNs);
    for (auto& perStream : workEnds)
        for (auto& [key, ends] : perStream) {
            std::sort(ends.begin(), ends.end());
            for (size_t i = 1; i < ends.size(); ++i) ends[i].second = std::max(ends[i].second, ends[i - 1].second);
        }
    for (size_t pi = 0; pi < ix.procs.size(); ++pi) {
        const uint64_t pid = tracePid[pi];
        detail::MemoryBook book;
        book.maxSeries = SIZE_MAX;
        std::unordered_map<uint16_t, detail::ApiClass> classes;  // by API id: classified once, not per call
        for (const wire::CallBody* c : ix.procs[pi].calls) {
            // Stream-ordered pools also follow their configuration calls (Other) and every synchronize.
            if (c->category != wire::Category::Alloc && c->category != wire::Category::Other &&
                c->category != wire::Category::Sync)
                continue;
            auto cls = classes.find(c->apiId);
            if (cls == classes.end()) cls = classes.emplace(c->apiId, detail::classifyApi(names[pi]->abi(*c))).first;
            const detail::ApiClass& api = cls->second;
            uint64_t ready = 0;
            if (c->category == wire::Category::Alloc && api.asyncName) {
                auto st = workEnds[pi].find(keyOf(*c));
                if (st != workEnds[pi].end()) {
                    auto it = std::lower_bound(st->second.begin(), st->second.end(), std::make_pair(c->seq, uint64_t(0)));
                    if (it != st->second.begin()) ready = std::prev(it)->second;
                }
            }
            book.feed(*c, api, 0, ready);
        }
        book.finish();
        for (const auto& [where, t] : book.spaces) {
            const std::string track = where.first == detail::MemSpace::PinnedHost ? std::string("GPU memory: pinned host")
                                      : where.first == detail::MemSpace::Managed ? "GPU memory: managed " + std::to_string(where.second)
                                                                                  : "GPU memory: device " + std::to_string(where.second);
            for (const auto& [ns, bytes] : t.series()) {
                w.begin('C', pid, 0);
                w.ts(ns);
                w.str("name", track);
                w.out() += ",\"args\":{\"in use (bytes)\":" + std::to_string(bytes) + "}";
                w.end();
                ++stats.counters;
            }
            // With stream-ordered pools: in use plus what they keep reserved unused (a floor).
            for (const auto& [ns, bytes] : t.held()) {
                w.begin('C', pid, 0);
                w.ts(ns);
                w.str("name", track + " held (pools' reserve, at least)");
                w.out() += ",\"args\":{\"held (bytes)\":" + std::to_string(bytes) + "}";
                w.end();
                ++stats.counters;
            }
        }
    }

    // Flows: from the middle of each call to the middle of each piece of its GPU work ("s" binds to
    // the slice enclosing it on its track; "f" with "bp":"e" likewise rather than to the next slice).
    uint64_t flowId = 0;
    for (size_t i = 0; i < ix.spans.size(); ++i) {
        const Span& s = ix.spans[i];
        if (!s.call) continue;
        const size_t pi = ix.tracks[s.track].process;
        const auto [cb, ce] = callAt[pi][s.callIndex];
        const auto [sb, se] = spanAt[i];
        const size_t callTrack = ix.procs[pi].callTrack[s.callIndex];
        ++flowId;
        ++stats.flows;
        w.begin('s', pidOf(callTrack), tidOf(callTrack));
        w.ts(cb + (ce - cb) / 2);
        w.str("name", "launch");
        w.str("cat", "flow");
        w.out() += ",\"id\":" + std::to_string(flowId);
        w.end();
        w.begin('f', pidOf(s.track), tidOf(s.track));
        w.ts(sb + (se - sb) / 2);
        w.str("name", "launch");
        w.str("cat", "flow");
        w.out() += ",\"id\":" + std::to_string(flowId) + ",\"bp\":\"e\"";
        w.end();
    }

    // NVTX start/end ranges may cross threads and overlap anything: async slices. Marks: instants.
    uint64_t asyncId = 0;
    for (const NvtxRange& r : ix.nvtx) {
        if (r.pushPop) continue;
        const uint64_t pid = pidOf(r.track), tid = tidOf(r.track);
        if (r.mark) {
            w.begin('i', pid, tid);
            w.ts(r.begin);
            w.str("name", r.name);
            w.str("cat", "nvtx");
            w.str("s", "t");
            w.end();
            continue;
        }
        ++asyncId;
        for (char ph : {'b', 'e'}) {
            w.begin(ph, pid, tid);
            w.ts(ph == 'b' ? r.begin : r.end);
            w.str("name", r.name);
            w.str("cat", "nvtx");
            w.out() += ",\"id\":\"" + hex(asyncId) + "\"";
            w.end();
        }
    }

    // Counters per process and device: GPU operations running (0 = idle), and bytes moved so far.
    for (size_t pi = 0; pi < ix.procs.size(); ++pi) {
        const uint64_t pid = tracePid[pi];
        std::map<int, std::map<uint64_t, int64_t>> running;  // device -> time -> change
        std::map<int, std::map<uint64_t, std::map<std::string, uint64_t>>> moved;  // device -> time -> direction -> bytes
        for (const Span& s : ix.spans) {
            if (ix.tracks[s.track].process != pi || s.body->endNs <= s.body->beginNs) continue;
            running[s.body->device][s.body->beginNs] += 1;
            running[s.body->device][s.body->endNs] -= 1;
        }
        for (const wire::CallBody* c : ix.procs[pi].calls) {
            if (c->category != wire::Category::Transfer || c->result != 0 || (c->flags & wire::kCallCapturing)) continue;
            uint64_t done = c->endNs;
            int device = c->device;
            if (auto it = ix.procs[pi].spansOfSeq.find(c->seq); it != ix.procs[pi].spansOfSeq.end())
                for (size_t si : it->second) {
                    done = std::max(done, ix.spans[si].body->endNs);
                    device = ix.spans[si].body->device;
                }
            moved[device][done][wire::directionName(c->args.transfer.direction)] += c->args.transfer.bytes;
        }
        for (const auto& [device, changes] : running) {
            const std::string name = "GPU " + std::to_string(device) + " operations running";
            int64_t level = 0;
            for (const auto& [t, delta] : changes) {
                level += delta;
                w.begin('C', pid, 0);
                w.ts(t);
                w.str("name", name);
                w.out() += ",\"args\":{\"running\":" + std::to_string(level) + "}";
                w.end();
            }
        }
        for (const auto& [device, byTime] : moved) {
            const std::string name = "GPU " + std::to_string(device) + " bytes moved";
            std::map<std::string, uint64_t> total;
            for (const auto& [t, add] : byTime) for (const auto& [dir, n] : add) total[dir];  // every series from the start
            for (const auto& [t, add] : byTime) {
                for (const auto& [dir, n] : add) total[dir] += n;
                w.begin('C', pid, 0);
                w.ts(t);
                w.str("name", name);
                w.out() += ",\"args\":{";
                bool first = true;
                for (const auto& [dir, n] : total) {
                    w.out() += (first ? "\"" : ",\"") + dir + "\":" + std::to_string(n);
                    first = false;
                }
                w.out() += "}";
                w.end();
            }
        }
    }

    std::string& o = w.out();
    o += "\n],\"otherData\":{\"producer\":\"gpuspy export --format perfetto\",\"clock\":\"host CLOCK_MONOTONIC, microseconds\"";
    // Several captures read as one run: every time is on the first capture's clock.
    if (!capture.processes.empty() && !capture.processes.front().captureName.empty()) {
        o += ",\"clock_of\":";
        appendJsonString(o, capture.processes.front().captureName);
    }
    o += ",\"clamped_slices\":" + std::to_string(stats.clamped);
    if (stats.clamped)
        o += ",\"note\":\"" + std::to_string(stats.clamped) +
             " slices overlapped an earlier slice of their track without nesting in it and were cut at its end\"";
    o += "}}\n";
    if (statsOut) *statsOut = stats;
    return std::move(o);
}

}  // namespace gpuspy::collect
