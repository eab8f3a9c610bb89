// collector/export/viewer_json.cpp: the viewer's timeline, compact enough for a million calls: columns
// (one array per field), times as differences to the row before, and what repeats from call to call
// (thread, API, stack, kernel, outcome) written once in a table of call "shapes". viewer/README.md
// documents the format.
#include "collector/export/viewer_json.h"

#include "collector/analyze/internal.h"
#include "collector/export/common.h"
#include "collector/report/report.h"

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <cstdio>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace gpuspy::collect {

namespace {

using namespace exporting;


// A column of integers, written as a JSON array.
struct Column {
    const char* name;
    std::string text = "[";
    bool empty = true;
    void push(int64_t v)
    {
        if (!empty) text += ',';
        empty = false;
        char b[24];
        const auto r = std::to_chars(b, b + sizeof b, v);
        text.append(b, r.ptr);
    }
};

// A column of times, each written as its difference to the one before (the first: to 0), so that
// a million nanosecond timestamps take a few digits each.
struct DeltaColumn : Column {
    int64_t last = 0;
    void pushDelta(int64_t v)
    {
        push(v - last);
        last = v;
    }
};

// Rows of N integers of which few are distinct: each distinct row is written once, as columns, and
// referred to by its index.
template <size_t N>
class ShapeTable {
public:
    using Row = std::array<int64_t, N>;
    explicit ShapeTable(std::array<const char*, N> names)
    {
        for (size_t i = 0; i < N; ++i) m_cols.push_back(Column{names[i]});
    }
    int64_t id(const Row& row)
    {
        auto [it, fresh] = m_ids.emplace(row, int64_t(m_ids.size()));
        if (fresh)
            for (size_t i = 0; i < N; ++i) m_cols[i].push(row[i]);
        return it->second;
    }
    std::vector<Column>& columns() { return m_cols; }

private:
    struct Hash {
        size_t operator()(const Row& r) const
        {
            uint64_t h = 1469598103934665603ull;
            for (int64_t v : r) h = (h ^ uint64_t(v)) * 1099511628211ull;
            return size_t(h);
        }
    };
    std::unordered_map<Row, int64_t, Hash> m_ids;
    std::vector<Column> m_cols;
};

void appendColumns(std::string& out, const char* section, std::vector<Column>& cols)
{
    out += ",\n\"";
    out += section;
    out += "\":{";
    for (size_t i = 0; i < cols.size(); ++i) {
        out += i ? ",\n\"" : "\n\"";
        out += cols[i].name;
        out += "\":" + cols[i].text + "]";
    }
    out += "}";
}

std::string hex(uint64_t v)
{
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

}  // namespace

std::string exportTimelineJson(const Capture& capture)
{
    const Index ix = buildIndex(capture);
    const uint64_t origin = ix.firstNs;
    auto rel = [&](uint64_t t) { return int64_t(t >= origin ? t - origin : 0); };

    std::string out = "{\"schema\":\"gpuspy.timeline/2\",\"origin_ns\":" + std::to_string(origin) +
                      ",\"duration_ns\":" + std::to_string(ix.lastNs > origin ? ix.lastNs - origin : 0);
    out += ",\n\"categories\":[\"other\",\"transfer\",\"launch\",\"alloc\",\"sync\",\"module\",\"graph\"]";
    out += ",\n\"gpu_kinds\":[\"kernel\",\"copy\",\"memset\",\"graph\",\"other\"]";
    out += ",\n\"processes\":[";
    for (size_t pi = 0; pi < ix.procs.size(); ++pi) {
        const Process& p = *ix.procs[pi].proc;
        out += pi ? ",\n{" : "\n{";
        out += "\"pid\":" + std::to_string(p.pid) + ",\"ppid\":" + std::to_string(p.ppid) + ",\"label\":";
        const bool ranked = !p.captureName.empty() && p.identity.rank >= 0;
        appendJsonString(out, ix.procs[pi].label + (ranked ? " \u00b7 rank " + std::to_string(p.identity.rank) : ""));
        out += ",\"command\":";
        appendJsonString(out, p.command);
        // Several captures read as one run: the capture it came from, its host and rank where recorded.
        if (!p.captureName.empty()) {
            out += ",\"capture\":";
            appendJsonString(out, p.captureName);
            if (!p.identity.host.empty()) {
                out += ",\"host\":";
                appendJsonString(out, p.identity.host);
            }
            if (p.identity.rank >= 0) out += ",\"rank\":" + std::to_string(p.identity.rank);
        }
        out += "}";
    }
    out += "]";

    std::vector<uint32_t> lanes(ix.tracks.size(), 0);
    for (const NvtxRange& r : ix.nvtx) lanes[r.track] = std::max(lanes[r.track], r.depth + 1);
    out += ",\n\"tracks\":[";
    for (size_t t = 0; t < ix.tracks.size(); ++t) {
        const Track& k = ix.tracks[t];
        out += t ? ",\n{" : "\n{";
        out += std::string("\"kind\":\"") + (k.kind == TrackKind::Thread ? "thread" : "stream") + "\"";
        out += ",\"process\":" + std::to_string(k.process) + ",\"pid\":" + std::to_string(capture.processes[k.process].pid);
        out += ",\"tid\":" + std::to_string(k.tid);
        if (k.kind == TrackKind::Stream) {
            out += ",\"device\":" + std::to_string(k.device) + ",\"stream\":\"" + hex(k.stream) + "\"";
            out += std::string(",\"per_thread\":") + (k.perThread ? "true" : "false");
        }
        out += ",\"nvtx_lanes\":" + std::to_string(lanes[t]) + ",\"name\":";
        appendJsonString(out, k.name);
        out += "}";
    }
    out += "]";

    Interner strings;
    std::map<std::tuple<std::string, std::string, uint32_t, std::string, bool>, int64_t> frameIds;
    std::string frames;
    std::vector<std::string> stacks{"[]"};
    std::map<std::pair<size_t, uint32_t>, int64_t> stackIds;
    auto stackOf = [&](size_t pi, uint32_t stackId) -> int64_t {
        if (stackId == 0) return 0;
        auto [it, fresh] = stackIds.emplace(std::make_pair(pi, stackId), int64_t(stacks.size()));
        if (!fresh) return it->second;
        std::string list = "[";
        for (const OutFrame& f : stackFrames(*ix.procs[pi].proc, stackId)) {
            auto [fit, newFrame] = frameIds.emplace(std::make_tuple(f.function, f.file, f.line, f.module, f.inlined), int64_t(frameIds.size()));
            if (newFrame) {
                frames += frames.empty() ? "\n[" : ",\n[";
                appendJsonString(frames, f.function);
                frames += ",";
                appendJsonString(frames, f.file);
                frames += "," + std::to_string(f.line) + ",";
                appendJsonString(frames, f.module);
                frames += std::string(",") + (f.app ? "1" : "0") + "," + (f.inlined ? "1" : "0") + "]";
            }
            list += (list.size() > 1 ? "," : "") + std::to_string(fit->second);
        }
        stacks.push_back(list + "]");
        return it->second;
    };

    // Calls: what repeats in a "call_shapes" row; per call its shape, times, number and bytes.
    ShapeTable<8> callShapes({"track", "name", "api", "category", "stack", "kernel", "result", "blocked"});
    std::vector<Column> callCols{{"shape"}, {"dur"}, {"bytes"}};
    DeltaColumn callBegin{{"begin"}}, callSeq{{"seq"}};
    std::vector<std::vector<int64_t>> callRow(ix.procs.size());  // (process, call index) -> row
    std::vector<std::unique_ptr<ProcNames>> procNames;
    for (const ProcIndex& px : ix.procs) procNames.push_back(std::make_unique<ProcNames>(*px.proc));
    int64_t row = 0;
    for (size_t pi = 0; pi < ix.procs.size(); ++pi) {
        const ProcIndex& px = ix.procs[pi];
        ProcNames& names = *procNames[pi];
        callRow[pi].resize(px.calls.size());
        for (size_t i = 0; i < px.calls.size(); ++i) {
            const wire::CallBody& c = *px.calls[i];
            callRow[pi][i] = row++;
            const int64_t category = int64_t(c.category) < 7 ? int64_t(c.category) : 0;
            callCols[0].push(callShapes.id({int64_t(px.callTrack[i]), strings.id(names.label(c)), strings.id(names.abi(c)), category,
                                            stackOf(pi, c.stackId),
                                            c.category == wire::Category::Launch ? strings.id(names.kernel(c)) : -1,
                                            int64_t(c.result), names.blocking(c) ? 1 : 0}));
            callBegin.pushDelta(rel(c.beginNs));
            callCols[1].push(int64_t(c.endNs > c.beginNs ? c.endNs - c.beginNs : 0));
            if (category == int64_t(wire::Category::Transfer)) callCols[2].push(int64_t(c.args.transfer.bytes));
            callSeq.pushDelta(int64_t(c.seq));
        }
    }
    std::vector<Column> calls{std::move(callCols[0]), std::move(callBegin), std::move(callCols[1]), std::move(callSeq), std::move(callCols[2])};

    // GPU spans: track, kind, name and how the span is known (bound: 0 measured, 1 only an upper bound,
    // a blocking copy or memset on an idle stream, collector/README.md; 2 estimated, an untimed
    // operation where the device timeline placed it) in a "gpu_shapes" row.
    ShapeTable<4> gpuShapes({"track", "kind", "name", "bound"});
    std::vector<Column> gpuCols{{"shape"}, {"dur"}, {"call"}};
    DeltaColumn gpuBegin{{"begin"}};
    for (const Span& s : ix.spans) {
        const size_t pi = ix.tracks[s.track].process;
        std::string name = workKindName(s.kind);
        if (s.call && s.kind == WorkKind::Kernel) name = procNames[pi]->kernel(*s.call);
        else if (s.call && s.kind == WorkKind::Copy) name = std::string("memcpy ") + wire::directionName(s.call->args.transfer.direction);
        const int64_t bound = s.estimated ? 2 : s.call && detail::gpuSpanIsUpperBound(*s.call, *s.body) ? 1 : 0;
        gpuCols[0].push(gpuShapes.id({int64_t(s.track), int64_t(s.kind), strings.id(name), bound}));
        gpuBegin.pushDelta(rel(s.body->beginNs));
        gpuCols[1].push(int64_t(s.body->endNs > s.body->beginNs ? s.body->endNs - s.body->beginNs : 0));
        gpuCols[2].push(s.call ? callRow[pi][s.callIndex] : -1);
    }
    std::vector<Column> gpu{std::move(gpuCols[0]), std::move(gpuBegin), std::move(gpuCols[1]), std::move(gpuCols[2])};

    std::vector<Column> nvtx{{"track"}, {"dur"}, {"name"}, {"lane"}, {"kind"}};
    DeltaColumn nvtxBegin{{"begin"}};
    for (const NvtxRange& r : ix.nvtx) {
        nvtx[0].push(int64_t(r.track));
        nvtxBegin.pushDelta(rel(r.begin));
        nvtx[1].push(int64_t(r.end > r.begin ? r.end - r.begin : 0));
        nvtx[2].push(strings.id(r.name));
        nvtx[3].push(r.depth);
        nvtx[4].push(r.pushPop ? 0 : r.mark ? 2 : 1);
    }
    nvtx.insert(nvtx.begin() + 1, std::move(nvtxBegin));

    appendColumns(out, "call_shapes", callShapes.columns());
    appendColumns(out, "calls", calls);
    appendColumns(out, "gpu_shapes", gpuShapes.columns());
    appendColumns(out, "gpu", gpu);
    appendColumns(out, "nvtx", nvtx);
    out += ",\n\"frames\":[" + frames + "]";
    out += ",\n\"stacks\":[";
    for (size_t i = 0; i < stacks.size(); ++i) out += (i ? "," : "") + stacks[i];
    out += "]";
    out += ",\n\"strings\":[";
    for (size_t i = 0; i < strings.items().size(); ++i) {
        out += i ? ",\n" : "\n";
        appendJsonString(out, strings.items()[i]);
    }
    out += "]}";
    return out;
}

std::string exportViewerData(const Capture& capture, const Report& report, std::string_view source)
{
    std::string out = "{\"schema\":\"gpuspy.view/1\",\"source\":";
    exporting::appendJsonString(out, source);
    out += ",\n\"report\":";
    // Invalid UTF-8 in a name must not fail the page; '<' only ever occurs inside strings.
    const std::string report_ = reportJson(report).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    for (char c : report_) {
        if (c == '<') out += "\\u003c";
        else out += c;
    }
    out += ",\n\"timeline\":" + exportTimelineJson(capture) + "}\n";
    return out;
}

}  // namespace gpuspy::collect
