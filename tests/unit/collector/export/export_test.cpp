// tests/unit/collector/export/export_test.cpp: the exports on hand-built captures: the Perfetto trace (nesting
// per track, flows that connect, microseconds on the host clock, names), folded stacks (format, order,
// weights), the viewer's timeline JSON (columns, shapes, time deltas, escaping).
#include "collector/export/common.h"
#include "collector/export/folded.h"
#include "collector/export/perfetto.h"
#include "collector/export/viewer_json.h"

#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

namespace gpuspy::collect {
namespace {

using wire::Category;
using Json = nlohmann::json;

constexpr uint64_t kT0 = 5'000'000'000'123;  // host CLOCK_MONOTONIC ns: the trace must keep every digit

struct Builder {
    Process p;
    uint64_t seq = 0;
    std::map<std::string, uint16_t> apiIds;

    Builder()
    {
        p.pid = 4242;
        p.command = "/work/bin/app --flag";
        p.threads[1] = "main";
        p.threads[2] = "worker";
        p.devices[0] = "Simulated GPU";
        p.modules.push_back({0x400000, 0x500000, 0x400000, "/work/bin/app"});
        p.modules.push_back({0x7f0000000000, 0x7f0000100000, 0x7f0000000000, "/usr/lib/libcuda.so.1"});
        p.modules.push_back({0x7f1000000000, 0x7f1000100000, 0x7f1000000000, "/usr/lib/libcudart.so.13"});
        p.kernels[1] = "_Z4stepPfi";
        p.kernels[2] = "<img src=x onerror=alert(1)>";
        // Stack 1: main -> run_step (app.cu:42) -> cuda_impl (libcuda), innermost first on the wire.
        p.stacks[1] = {0x7f0000000100, 0x401100, 0x401000};
        p.symbols[0x7f0000000100] = {Frame{0x7f0000000100, "cuda_impl", "", 0, "/usr/lib/libcuda.so.1", 0x100, false}};
        p.symbols[0x401100] = {Frame{0x401100, "run;step", "/src/app.cu", 42, "/work/bin/app", 0x1100, false}};
        p.symbols[0x401000] = {Frame{0x401000, "main", "/src/app.cu", 10, "/work/bin/app", 0x1000, false}};
        // Stack 2: no symbols at all: module+offset.
        p.stacks[2] = {0x401234};
    }

    uint16_t api(const std::string& name, Category cat)
    {
        auto [it, fresh] = apiIds.emplace(name, uint16_t(apiIds.size() + 1));
        if (fresh) p.apis[it->second] = ApiInfo{name, cat};
        return it->second;
    }

    wire::CallBody& call(const std::string& name, Category cat, uint64_t begin, uint64_t end, uint32_t tid = 1,
                         uint16_t flags = 0, uint64_t stream = 0, uint32_t stack = 1)
    {
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = kT0 + begin;
        c.endNs = kT0 + end;
        c.tid = tid;
        c.stackId = stack;
        c.apiId = api(name, cat);
        c.category = cat;
        c.flags = flags;
        c.stream = stream;
        c.device = 0;
        p.calls.push_back(c);
        p.lastNs = std::max(p.lastNs, c.endNs);
        return p.calls.back();
    }

    void launch(uint64_t begin, uint64_t end, uint32_t kernel, uint64_t stream, uint64_t gpuBegin, uint64_t gpuEnd,
                uint32_t tid = 1, uint16_t extraFlags = 0)
    {
        wire::CallBody& c = call("cuLaunchKernel", Category::Launch, begin, end, tid,
                                 wire::kCallAsync | wire::kCallDeviceWork | wire::kCallGpuTimed | extraFlags, stream);
        c.args.launch.kernelId = kernel;
        span(c.seq, gpuBegin, gpuEnd);
    }

    void span(uint64_t seqOf, uint64_t begin, uint64_t end)
    {
        wire::GpuSpanBody s{};
        s.seq = seqOf;
        s.beginNs = kT0 + begin;
        s.endNs = kT0 + end;
        s.device = 0;
        p.spans.push_back(s);
    }

    void nvtx(wire::NvtxKind kind, uint64_t t, uint32_t message, uint32_t tid = 1)
    {
        wire::NvtxBody n{};
        n.timeNs = kT0 + t;
        n.tid = tid;
        n.messageId = message;
        n.kind = kind;
        p.nvtx.push_back(n);
    }

    Capture capture() const
    {
        Capture c;
        c.processes.push_back(p);
        return c;
    }
};

// A capture with what a real one has: NVTX around calls, launches on two streams and a per-thread default
// stream, a synchronous copy, a wait, and two faults a trace must survive: a call that overlaps the one
// before it on its thread, and two GPU spans of one graph that overlap on one stream.
Builder sample()
{
    Builder b;
    b.p.strings[1] = "step";
    b.nvtx(wire::NvtxKind::Push, 100, 1);
    b.launch(200, 300, 1, 0x10, 250, 400);
    b.launch(310, 330, 2, 0x20, 340, 600);
    wire::CallBody& copy = b.call("cuMemcpyHtoD_v2", Category::Transfer, 350, 900, 1,
                                  wire::kCallDeviceWork | wire::kCallGpuTimed | wire::kCallImplicitSync, 0);
    copy.args.transfer.bytes = 4096;
    copy.args.transfer.direction = wire::Direction::HtoD;
    copy.args.transfer.srcMem = wire::MemKind::Pageable;
    b.span(copy.seq, 620, 880);
    b.call("cuCtxSynchronize_v2", Category::Sync, 880, 950, 1, 0, 0, 2);  // overlaps the copy: clamped
    b.nvtx(wire::NvtxKind::Pop, 1000, 1);
    b.launch(400, 420, 1, 0, 450, 500, 2, wire::kCallPerThreadStream);
    wire::CallBody& graph = b.call("cuGraphLaunch", Category::Graph, 1100, 1150, 1,
                                   wire::kCallDeviceWork | wire::kCallGpuTimed, 0x10);
    b.span(graph.seq, 1200, 1400);
    b.span(graph.seq, 1300, 1500);  // a parallel branch: overlaps the first on the same stream
    return b;
}

struct Slice {
    int64_t b, e;
    std::string name;
    int64_t seq = -1;  // the call's number (calls and GPU work), -1 for NVTX
};

std::string trackKey(const Json& e) { return std::to_string(e["pid"].get<int64_t>()) + "/" + std::to_string(e["tid"].get<int64_t>()); }
int64_t toNs(double us) { return std::llround(us * 1000.0); }

TEST(PerfettoExport, TracksNestFlowsConnectAndTimesAreMicrosOnTheHostClock)
{
    PerfettoStats stats;
    const std::string text = exportPerfetto(sample().capture(), &stats);
    const Json trace = Json::parse(text);
    ASSERT_TRUE(trace["traceEvents"].is_array());

    std::map<std::string, std::string> names;
    std::map<std::string, std::vector<Slice>> slices;
    std::map<int64_t, Json> starts, finishes;
    std::string processName;
    for (const Json& e : trace["traceEvents"]) {
        const std::string ph = e["ph"];
        if (ph == "M" && e["name"] == "thread_name") names[trackKey(e)] = e["args"]["name"];
        if (ph == "M" && e["name"] == "process_name") processName = e["args"]["name"];
        if (ph == "X") {
            const int64_t b = toNs(e["ts"].get<double>());
            const int64_t seq = e.contains("args") && e["args"].contains("seq") ? e["args"]["seq"].get<int64_t>() : -1;
            slices[trackKey(e)].push_back({b, b + toNs(e["dur"].get<double>()), e["name"], seq});
        }
        if (ph == "s") starts[e["id"]] = e;
        if (ph == "f") finishes[e["id"]] = e;
    }
    EXPECT_EQ(processName, "app (pid 4242)");
    EXPECT_EQ(names["4242/1"], "main (tid 1)");
    EXPECT_EQ(names["4242/2"], "worker (tid 2)");
    std::vector<std::string> streams;
    for (const auto& [key, name] : names)
        if (name.rfind("GPU 0", 0) == 0) streams.push_back(name);
    std::sort(streams.begin(), streams.end());
    EXPECT_EQ(streams, (std::vector<std::string>{"GPU 0 \u00b7 default stream", "GPU 0 \u00b7 per-thread stream of tid 2",
                                                 "GPU 0 \u00b7 stream 0x10", "GPU 0 \u00b7 stream 0x20"}));

    // Host clock in microseconds, every nanosecond kept: the first call began at kT0 + 200 ns.
    const auto& main = slices["4242/1"];
    ASSERT_FALSE(main.empty());
    EXPECT_EQ(main.front().b, int64_t(kT0 + 100));  // the NVTX range, outermost
    EXPECT_EQ(main.front().name, "step");
    EXPECT_NE(text.find("\"ts\":5000000000.323"), std::string::npos) << "a call at kT0 + 200 ns";

    // Every track nests; the two faults were cut and counted.
    for (auto& [key, list] : slices) {
        std::sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) { return a.b < b.b || (a.b == b.b && a.e > b.e); });
        std::vector<int64_t> open;
        for (const Slice& s : list) {
            while (!open.empty() && open.back() <= s.b) open.pop_back();
            EXPECT_TRUE(open.empty() || s.e <= open.back()) << key << ": " << s.name << " crosses its parent's end";
            open.push_back(s.e);
        }
    }
    EXPECT_EQ(stats.clamped, 2u);
    EXPECT_EQ(trace["otherData"]["clamped_slices"], 2);

    // Flows: one per GPU span, each from inside a call on a thread to inside GPU work on a stream.
    EXPECT_EQ(stats.flows, 6u);
    EXPECT_EQ(starts.size(), 6u);
    EXPECT_EQ(finishes.size(), 6u);
    // The seq of the innermost call or GPU slice around a flow event (-1: none), the slice it binds to.
    auto boundSeq = [&](const Json& e) {
        const int64_t t = toNs(e["ts"].get<double>());
        int64_t seq = -1, len = std::numeric_limits<int64_t>::max();
        for (const Slice& s : slices[trackKey(e)])
            if (s.b <= t && t <= s.e && s.seq >= 0 && s.e - s.b < len) {
                seq = s.seq;
                len = s.e - s.b;
            }
        return seq;
    };
    for (const auto& [id, s] : starts) {
        ASSERT_TRUE(finishes.count(id)) << "flow " << id << " has no finish";
        const Json& f = finishes[id];
        EXPECT_EQ(f["bp"], "e");
        EXPECT_EQ(s["cat"], f["cat"]);
        EXPECT_EQ(s["name"], f["name"]);
        EXPECT_GE(boundSeq(s), 0) << "flow start " << id << " binds to no call";
        EXPECT_EQ(boundSeq(s), boundSeq(f)) << "flow " << id << " joins a call to another call's GPU work";
        EXPECT_EQ(names[trackKey(f)].rfind("GPU 0", 0), 0u);
        EXPECT_EQ(names[trackKey(s)].rfind("GPU 0", 0), std::string::npos);
    }

    // Counters: operations running and bytes moved.
    bool running = false, moved = false;
    for (const Json& e : trace["traceEvents"])
        if (e["ph"] == "C") {
            running |= e["name"] == "GPU 0 operations running";
            if (e["name"] == "GPU 0 bytes moved") moved |= e["args"]["HtoD"] == 4096;
        }
    EXPECT_TRUE(running);
    EXPECT_TRUE(moved);
}

TEST(PerfettoExport, HostileNamesAreEscapedJson)
{
    const std::string text = exportPerfetto(sample().capture());
    EXPECT_EQ(text.find("<img"), std::string::npos);
    const Json trace = Json::parse(text);
    bool found = false;
    for (const Json& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["name"] == "<img src=x onerror=alert(1)>") found = true;
    EXPECT_TRUE(found) << "the kernel keeps its name once parsed";
}

TEST(FoldedExport, ADriverApiProgramsCallsByTheDriversNames)
{
    // No cudart mapped and none of its frames on any stack: the program calls the driver itself.
    Builder b = sample();
    b.p.modules.pop_back();
    const std::string blocked = exportFolded(b.capture(), FoldedMetric::Blocked);
    EXPECT_NE(blocked.find("cuda_impl;cuMemcpyHtoD 550\n"), std::string::npos) << blocked;
    EXPECT_EQ(blocked.find("cudaMemcpy"), std::string::npos) << blocked;
}

TEST(FoldedExport, TheStaticRuntimesInternalsLeftOut)
{
    Builder b = sample();
    // A statically linked cudart between the user's frame and the driver: its hashed internals go.
    b.p.stacks[1] = {0x7f0000000100, 0x401300, 0x401200, 0x401100, 0x401000};
    b.p.symbols[0x401300] = {Frame{0x401300, "libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c", "", 0, "/work/bin/app", 0x1300, false}};
    b.p.symbols[0x401200] = {Frame{0x401200, "cudart::cudaApiMemcpy(void*, void const*, unsigned long, cudaMemcpyKind)", "", 0,
                                   "/work/bin/app", 0x1200, false}};
    const std::string blocked = exportFolded(b.capture(), FoldedMetric::Blocked);
    EXPECT_NE(blocked.find("main (app.cu:10);run:step (app.cu:42);cuda_impl;cudaMemcpy 550\n"), std::string::npos) << blocked;
    EXPECT_EQ(blocked.find("cudart"), std::string::npos) << blocked;
}

TEST(FoldedExport, OutermostFirstWeightedByTheMetric)
{
    const Capture c = sample().capture();
    // Frames with line information carry it ("main (app.cu:10)"): two call sites of a function stay apart.
    // Blocked: the synchronous copy (implicit sync) and the context wait, each with its host time.
    EXPECT_EQ(exportFolded(c, FoldedMetric::Blocked),
              "app+0x1234;cudaDeviceSynchronize 70\n"
              "main (app.cu:10);run:step (app.cu:42);cuda_impl;cudaMemcpy 550\n");
    EXPECT_EQ(exportFolded(c, FoldedMetric::Transfer), "main (app.cu:10);run:step (app.cu:42);cuda_impl;cudaMemcpy;HtoD 4096\n");
    EXPECT_EQ(exportFolded(c, FoldedMetric::Launch),
              "main (app.cu:10);run:step (app.cu:42);cuda_impl;cudaGraphLaunch 50\n"
              "main (app.cu:10);run:step (app.cu:42);cuda_impl;cudaLaunchKernel;<img src=x onerror=alert(1)> 20\n"
              "main (app.cu:10);run:step (app.cu:42);cuda_impl;cudaLaunchKernel;step(float*, int) 120\n");
    const std::string calls = exportFolded(c, FoldedMetric::Calls);
    EXPECT_NE(calls.find("main (app.cu:10);run:step (app.cu:42);cuda_impl;cudaLaunchKernel 3\n"), std::string::npos) << calls;
    // Every line is "frames value" with a non-empty frame list.
    size_t lines = 0;
    for (size_t at = 0; at < calls.size(); ++lines) {
        const size_t nl = calls.find('\n', at);
        const std::string line = calls.substr(at, nl - at);
        const size_t space = line.rfind(' ');
        ASSERT_NE(space, std::string::npos);
        EXPECT_GT(space, 0u);
        EXPECT_EQ(line.find_first_not_of("0123456789", space + 1), std::string::npos) << line;
        at = nl + 1;
    }
    EXPECT_EQ(lines, 4u);
    FoldedMetric m{};
    EXPECT_TRUE(parseFoldedMetric("transfer", m));
    EXPECT_EQ(m, FoldedMetric::Transfer);
    EXPECT_FALSE(parseFoldedMetric("bytes", m));
}

// The timeline's columns decoded as viewer/README.md says: times are differences to the row before,
// shape columns index the section's *_shapes table, bytes has one entry per transfer call.
struct DecodedTimeline {
    std::vector<int64_t> callBegin, callDur, callSeq, callTrack, callBytes, spanBegin, spanTrack, spanCall;
    size_t callShapes = 0;
};

DecodedTimeline decode(const Json& t)
{
    DecodedTimeline d;
    auto running = [](const Json& deltas) {
        std::vector<int64_t> out;
        int64_t at = 0;
        for (const Json& v : deltas) out.push_back(at += v.get<int64_t>());
        return out;
    };
    const Json& calls = t["calls"];
    const Json& shapes = t["call_shapes"];
    d.callShapes = shapes["track"].size();
    d.callBegin = running(calls["begin"]);
    d.callSeq = running(calls["seq"]);
    size_t transfers = 0;
    for (size_t i = 0; i < calls["shape"].size(); ++i) {
        const size_t shape = calls["shape"][i];
        d.callTrack.push_back(shapes["track"][shape]);
        d.callDur.push_back(calls["dur"][i]);
        const bool transfer = shapes["category"][shape] == 1;
        d.callBytes.push_back(transfer ? calls["bytes"][transfers++].get<int64_t>() : 0);
    }
    EXPECT_EQ(transfers, calls["bytes"].size()) << "one bytes entry per transfer call";
    d.spanBegin = running(t["gpu"]["begin"]);
    for (size_t i = 0; i < t["gpu"]["shape"].size(); ++i) {
        d.spanTrack.push_back(t["gpu_shapes"]["track"][t["gpu"]["shape"][i].get<size_t>()]);
        d.spanCall.push_back(t["gpu"]["call"][i]);
    }
    return d;
}

TEST(TimelineExport, ColumnsLineUpAndNothingIsHtml)
{
    const std::string text = exportTimelineJson(sample().capture());
    EXPECT_EQ(text.find('<'), std::string::npos) << "every '<' is \\u003c";
    const Json t = Json::parse(text);
    EXPECT_EQ(t["schema"], "gpuspy.timeline/2");
    EXPECT_EQ(t["origin_ns"], kT0 + 100);
    for (const char* section : {"call_shapes", "calls", "gpu_shapes", "gpu", "nvtx"}) {
        const size_t rows = t[section].begin()->size();
        for (const auto& [name, column] : t[section].items()) {
            if (std::string(section) == "calls" && name == "bytes") continue;  // one per transfer call
            EXPECT_EQ(column.size(), rows) << section << "." << name;
        }
    }
    const DecodedTimeline d = decode(t);
    // Times since origin, host clock: the calls of sample() in begin order, and their numbers.
    EXPECT_EQ(d.callBegin, (std::vector<int64_t>{100, 210, 250, 300, 780, 1000}));
    EXPECT_EQ(d.callDur, (std::vector<int64_t>{100, 20, 550, 20, 70, 50}));
    EXPECT_EQ(d.callSeq, (std::vector<int64_t>{1, 2, 3, 5, 4, 6}));
    EXPECT_EQ(d.callBytes, (std::vector<int64_t>{0, 0, 4096, 0, 0, 0}));
    EXPECT_EQ(d.spanBegin, (std::vector<int64_t>{150, 240, 350, 520, 1100, 1200}));
    // Every span points at a call on a thread track and sits on a stream track.
    ASSERT_EQ(d.spanCall.size(), 6u);
    for (size_t i = 0; i < d.spanCall.size(); ++i) {
        ASSERT_GE(d.spanCall[i], 0);
        EXPECT_EQ(t["tracks"][size_t(d.callTrack[size_t(d.spanCall[i])])]["kind"], "thread");
        EXPECT_EQ(t["tracks"][size_t(d.spanTrack[i])]["kind"], "stream");
    }
    const auto& strings = t["strings"];
    EXPECT_NE(std::find(strings.begin(), strings.end(), "<img src=x onerror=alert(1)>"), strings.end());
    EXPECT_EQ(t["nvtx"]["begin"].size(), 1u);
    EXPECT_EQ(t["tracks"][0]["nvtx_lanes"], 1);
}

// sample()'s synchronous copy blocked on an idle stream (its span starts 270 ns after the call): its GPU
// time is only an upper bound (collector/README.md), and both exports say so for that span alone.
TEST(TimelineExport, GpuSpansThatAreUpperBoundsAreFlagged)
{
    const Builder b = sample();
    uint64_t copySeq = 0;
    for (const wire::CallBody& c : b.p.calls)
        if (c.category == Category::Transfer) copySeq = c.seq;
    ASSERT_NE(copySeq, 0u);

    const Json trace = Json::parse(exportPerfetto(b.capture()));
    size_t gpuSlices = 0, flagged = 0;
    for (const Json& e : trace["traceEvents"]) {
        if (e["ph"] != "X" || !e.contains("cat") || e["cat"].get<std::string>().rfind("gpu,", 0) != 0) continue;
        ++gpuSlices;
        const bool bound = e["args"].contains("gpu_time");
        flagged += bound;
        EXPECT_EQ(bound, e["args"].contains("seq") && e["args"]["seq"] == copySeq) << e.dump();
        if (bound) {
            EXPECT_EQ(e["args"]["gpu_time"], "upper_bound");
        }
    }
    EXPECT_GT(gpuSlices, 1u);
    EXPECT_EQ(flagged, 1u);

    const Json t = Json::parse(exportTimelineJson(b.capture()));
    const DecodedTimeline d = decode(t);
    ASSERT_EQ(t["gpu_shapes"]["bound"].size(), t["gpu_shapes"]["track"].size());
    size_t bounds = 0;
    for (size_t i = 0; i < d.spanCall.size(); ++i) {
        const bool bound = t["gpu_shapes"]["bound"][t["gpu"]["shape"][i].get<size_t>()] == 1;
        bounds += bound;
        EXPECT_EQ(bound, d.callSeq[size_t(d.spanCall[i])] == int64_t(copySeq)) << "span " << i;
    }
    EXPECT_EQ(bounds, 1u);
}

// Sampling: one launch of kernel 1 timed on stream 0x10 (500 ns on the GPU), then two the budget left
// untimed: one queued behind it on 0x10, one alone on stream 0x30 (no timed work there at all), which a
// stream synchronize bounds (with the shim's mark of when 0x30 drained); a context synchronize ends it.
Builder sampled()
{
    Builder b;
    b.launch(0, 100, 1, 0x10, 150, 650);
    for (auto [begin, stream] : {std::pair<uint64_t, uint64_t>{200, 0x10}, {300, 0x30}}) {
        wire::CallBody& c = b.call("cuLaunchKernel", Category::Launch, begin, begin + 50, 1,
                                   wire::kCallAsync | wire::kCallDeviceWork | wire::kCallGpuSampledOut, stream);
        c.args.launch.kernelId = 1;
    }
    const uint64_t wait = b.call("cuStreamSynchronize", Category::Sync, 400, 2000, 1, 0, 0x30).seq;
    b.span(wait, 1000, 1000);  // the shim's drain mark: 0x30 drained at 1000, during the wait
    b.call("cuCtxSynchronize_v2", Category::Sync, 2000, 2100, 1, 0, 0);
    return b;
}

// The untimed launches are drawn where the device timeline places them, each on its own stream's track
// (0x30 gets one though nothing on it was timed), flagged estimated, with their calls; the timed one is
// not; the drain mark bounds the placement and is no GPU work of its own.
TEST(ExportCommon, UntimedOperationsArePlacedOnTheirStreamsAsEstimated)
{
    const Capture cap = sampled().capture();
    const exporting::Index ix = exporting::buildIndex(cap);
    ASSERT_EQ(ix.spans.size(), 3u);
    std::map<uint64_t, const exporting::Span*> bySeq;
    for (const exporting::Span& s : ix.spans) {
        ASSERT_NE(s.call, nullptr);
        bySeq[s.call->seq] = &s;
        const exporting::Track& t = ix.tracks[s.track];
        EXPECT_EQ(t.kind, exporting::TrackKind::Stream);
        EXPECT_EQ(t.stream, s.call->stream) << "span of call " << s.call->seq << " on " << t.name;
        EXPECT_EQ(s.kind, exporting::WorkKind::Kernel);
        EXPECT_EQ(s.estimated, s.call->seq != 1) << "only the untimed launches are estimated";
        EXPECT_GE(s.body->beginNs, s.call->beginNs) << "no work before its launch";
    }
    ASSERT_EQ(bySeq.size(), 3u);
    EXPECT_EQ(ix.estimatedBodies.size(), 2u);
    // In order on 0x10: after the timed kernel; its duration from that timed sibling.
    EXPECT_GE(bySeq[2]->body->beginNs, kT0 + 650);
    EXPECT_EQ(bySeq[2]->body->endNs - bySeq[2]->body->beginNs, 500u);
    // Alone on 0x30: done when the shim saw that stream drain, during its synchronize.
    EXPECT_LE(bySeq[3]->body->endNs, kT0 + 1000);
    EXPECT_EQ(bySeq[3]->body->endNs - bySeq[3]->body->beginNs, 500u);
    size_t streamTracks = 0;
    for (const exporting::Track& t : ix.tracks) streamTracks += t.kind == exporting::TrackKind::Stream;
    EXPECT_EQ(streamTracks, 2u) << "0x10 and 0x30";
    EXPECT_EQ(ix.procs[0].spansOfSeq.at(3).size(), 1u) << "an estimated span is its call's GPU work";
}

TEST(PerfettoExport, EstimatedSpansSayEstimatedInCategoryAndArgs)
{
    const Json trace = Json::parse(exportPerfetto(sampled().capture()));
    std::map<int64_t, Json> gpu;  // seq -> slice
    std::map<int64_t, std::string> trackNames;
    for (const Json& e : trace["traceEvents"])
        if (e["ph"] == "M" && e["name"] == "thread_name") trackNames[e["tid"].get<int64_t>()] = e["args"]["name"];
    for (const Json& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["cat"].get<std::string>().rfind("gpu,", 0) == 0) gpu[e["args"]["seq"].get<int64_t>()] = e;
    ASSERT_EQ(gpu.size(), 3u);
    EXPECT_EQ(gpu[1]["cat"], "gpu,kernel");
    EXPECT_FALSE(gpu[1]["args"].contains("estimated"));
    for (int64_t seq : {2, 3}) {
        EXPECT_EQ(gpu[seq]["cat"], "gpu,estimated,kernel") << gpu[seq].dump();
        EXPECT_EQ(gpu[seq]["args"]["estimated"], true);
        EXPECT_EQ(gpu[seq]["args"]["gpu_time"], "estimated");
        EXPECT_EQ(gpu[seq]["name"], gpu[1]["name"]) << "the name is the work's, estimated or not";
    }
    EXPECT_EQ(trackNames[gpu[3]["tid"].get<int64_t>()], "GPU 0 \u00b7 stream 0x30");
    size_t flows = 0;
    for (const Json& e : trace["traceEvents"]) flows += e["ph"] == "s";
    EXPECT_EQ(flows, 3u) << "each call's arrow to its work, estimated or not";
}

TEST(TimelineExport, EstimatedSpansHaveBoundTwo)
{
    const Json t = Json::parse(exportTimelineJson(sampled().capture()));
    const DecodedTimeline d = decode(t);
    ASSERT_EQ(d.spanCall.size(), 3u);
    std::map<int64_t, int64_t> boundOfSeq;
    for (size_t i = 0; i < d.spanCall.size(); ++i)
        boundOfSeq[d.callSeq[size_t(d.spanCall[i])]] = t["gpu_shapes"]["bound"][t["gpu"]["shape"][i].get<size_t>()];
    EXPECT_EQ(boundOfSeq, (std::map<int64_t, int64_t>{{1, 0}, {2, 2}, {3, 2}}));
}

TEST(TimelineExport, RepeatedCallsShareOneShape)
{
    Builder b;
    for (uint64_t i = 0; i < 100; ++i) b.launch(1000 * i, 1000 * i + 100, 1, 0x10, 1000 * i + 200, 1000 * i + 700);
    const Json t = Json::parse(exportTimelineJson(b.capture()));
    EXPECT_EQ(t["calls"]["shape"].size(), 100u);
    EXPECT_EQ(t["call_shapes"]["track"].size(), 1u);
    EXPECT_EQ(t["gpu_shapes"]["track"].size(), 1u);
    const DecodedTimeline d = decode(t);
    EXPECT_EQ(d.callBegin[99], 99000);
    EXPECT_EQ(d.spanBegin[99], 99200);
    EXPECT_EQ(d.callSeq[99], 100);
}

// Two captures of one job read as one run (the ranks of two hosts, collector/cli's readCapturesAsOne): the
// same pid on both hosts. Each process keeps its own Perfetto tracks (the second capture's pid moved past
// 2^22), named with its host and rank; the folded stacks sit under a root frame per rank; the viewer's
// processes name their capture, host and rank. One capture's processes are unchanged (pid and label).
Capture twoHosts()
{
    Capture c;
    for (int r = 0; r < 2; ++r) {
        Builder b;
        b.launch(200 + 1000 * uint64_t(r), 300 + 1000 * uint64_t(r), 1, 0x10, 250 + 1000 * uint64_t(r), 400 + 1000 * uint64_t(r));
        b.p.captureName = r ? "b.gspy" : "a.gspy";
        b.p.identity.host = r ? "nodeB" : "nodeA";
        b.p.identity.rank = r;
        b.p.identity.worldSize = 2;
        c.processes.push_back(b.p);
    }
    return c;
}

TEST(PerfettoExport, SeveralCapturesKeepAProcessTrackEachNamedByHostAndRank)
{
    const Capture c = twoHosts();
    EXPECT_EQ(exporting::tracePids(c), (std::vector<uint64_t>{4242, 4242 + (uint64_t(1) << 22)}));
    const Json trace = Json::parse(exportPerfetto(c));
    std::map<int64_t, std::string> names;
    std::map<int64_t, std::vector<int64_t>> gpuBegins;
    for (const Json& e : trace["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"].get<int64_t>()] = e["args"]["name"];
        if (e["ph"] == "X" && e["cat"].get<std::string>().rfind("gpu,", 0) == 0)
            gpuBegins[e["pid"].get<int64_t>()].push_back(toNs(e["ts"].get<double>()));
    }
    const int64_t second = 4242 + (int64_t(1) << 22);
    EXPECT_EQ(names, (std::map<int64_t, std::string>{{4242, "app (pid 4242, host nodeA) \u00b7 rank 0 of 2"},
                                                     {second, "app (pid 4242, host nodeB) \u00b7 rank 1 of 2"}}));
    EXPECT_EQ(gpuBegins[4242], (std::vector<int64_t>{int64_t(kT0 + 250)}));
    EXPECT_EQ(gpuBegins[second], (std::vector<int64_t>{int64_t(kT0 + 1250)}));
    EXPECT_EQ(trace["otherData"]["clock_of"], "a.gspy");

    // One capture: its own pid and label, no clock_of.
    const Json one = Json::parse(exportPerfetto(sample().capture()));
    EXPECT_FALSE(one["otherData"].contains("clock_of"));
    EXPECT_EQ(exporting::tracePids(sample().capture()), (std::vector<uint64_t>{4242}));
}

TEST(FoldedExport, SeveralCapturesStacksUnderARootFramePerRank)
{
    Capture c = twoHosts();
    c.processes[1].identity.rank = -1;  // no launcher's rank: its host and pid
    EXPECT_EQ(exporting::jobMemberFrames(c), (std::vector<std::string>{"rank 0", "nodeB pid 4242"}));
    const std::string folded = exportFolded(c, FoldedMetric::Calls);
    std::map<std::string, int> roots;
    for (size_t at = 0; at < folded.size();) {
        const size_t nl = folded.find('\n', at);
        const std::string line = folded.substr(at, nl - at);
        roots[line.substr(0, line.find(';'))] += 1;
        at = nl == std::string::npos ? folded.size() : nl + 1;
    }
    EXPECT_EQ(roots, (std::map<std::string, int>{{"rank 0", 1}, {"nodeB pid 4242", 1}})) << folded;
    EXPECT_EQ(exporting::jobMemberFrames(sample().capture()), (std::vector<std::string>{""}));
}

TEST(TimelineExport, SeveralCapturesProcessesNameTheirCaptureHostAndRank)
{
    const Json t = Json::parse(exportTimelineJson(twoHosts()));
    ASSERT_EQ(t["processes"].size(), 2u);
    EXPECT_EQ(t["processes"][0]["capture"], "a.gspy");
    EXPECT_EQ(t["processes"][1]["host"], "nodeB");
    EXPECT_EQ(t["processes"][1]["rank"], 1);
    EXPECT_EQ(t["processes"][1]["label"], "app (pid 4242, host nodeB) \u00b7 rank 1");
    const DecodedTimeline d = decode(t);
    EXPECT_EQ(d.spanBegin, (std::vector<int64_t>{50, 1050}));  // origin: the first call, kT0 + 200
    const Json one = Json::parse(exportTimelineJson(sample().capture()));
    EXPECT_FALSE(one["processes"][0].contains("capture"));
    EXPECT_EQ(one["processes"][0]["label"], "app (pid 4242)");
}

TEST(ExportCommon, JsonStringsAreValidAndScriptSafe)
{
    std::string out;
    exporting::appendJsonString(out, std::string("a\"b\\c</script>\n\x01 \xff\xc3\xa9", 20));
    EXPECT_EQ(out, "\"a\\\"b\\\\c\\u003c/script\\u003e\\n\\u0001 \\ufffd\xc3\xa9\"");
    EXPECT_EQ(Json::parse(out).get<std::string>(), "a\"b\\c</script>\n\x01 \xef\xbf\xbd\xc3\xa9");
    std::string us;
    exporting::appendMicros(us, 5'000'000'000'007);
    EXPECT_EQ(us, "5000000000.007");
}

}  // namespace
}  // namespace gpuspy::collect
