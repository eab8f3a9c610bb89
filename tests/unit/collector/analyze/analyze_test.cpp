// tests/unit/collector/analyze/analyze_test.cpp: the analysis on hand-built captures: each section's numbers
// exact on a small case, each finding on its pattern (and not on a well-behaved program), the ranking.
#include "collector/analyze/analyze.h"
#include "collector/model/api_names.h"
#include "collector/report/report.h"
#include "collector/timeline/intervals.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace gpuspy::collect {
namespace {

using wire::Category;
using wire::Direction;
using wire::MemKind;

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

// Builds one process's records the way ingest would deliver them.
struct ProcBuilder {
    Process p;
    uint64_t seq = 0;
    std::map<std::string, uint16_t> apiIds;

    explicit ProcBuilder(uint32_t pid = 100)
    {
        p.pid = pid;
        p.command = "app --flag";
        p.startNs = 0;
        p.devices[0] = "Simulated GPU";
        p.modules.push_back({0x400000, 0x500000, 0x400000, "/work/app"});
        p.modules.push_back({0x7f0000000000, 0x7f0000100000, 0x7f0000000000, "/usr/lib/libcudart.so.12"});
    }

    uint16_t api(const std::string& name, Category cat)
    {
        auto it = apiIds.find(name);
        if (it != apiIds.end()) return it->second;
        const uint16_t id = uint16_t(apiIds.size() + 1);
        apiIds[name] = id;
        p.apis[id] = ApiInfo{name, cat};
        return id;
    }

    // A stack whose innermost frames are cudart's and whose first app frame is `function` at file:line.
    uint32_t site(const std::string& function, uint32_t line)
    {
        const uint32_t id = uint32_t(p.stacks.size() + 1);
        const uint64_t lib = 0x7f0000000100 + id * 16, app = 0x401000 + id * 16, outer = 0x402000;
        p.stacks[id] = {lib, app, outer};
        p.symbols[lib] = {Frame{lib, "cudaMemcpy", "", 0, "/usr/lib/libcudart.so.12", lib - 0x7f0000000000, false}};
        p.symbols[app] = {Frame{app, function, "/src/app.cu", line, "/work/app", app - 0x400000, false}};
        p.symbols[outer] = {Frame{outer, "__libc_start_main", "", 0, "/lib/libc.so.6", 0x2000, false}};
        return id;
    }

    wire::CallBody& call(const std::string& name, Category cat, uint64_t begin, uint64_t end, uint16_t flags = 0,
                         uint32_t stack = 0, int32_t result = 0, uint32_t tid = 1)
    {
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = begin;
        c.endNs = end;
        c.tid = tid;
        c.stackId = stack;
        c.apiId = api(name, cat);
        c.category = cat;
        c.flags = flags;
        c.device = 0;
        c.result = result;
        p.calls.push_back(c);
        p.lastNs = std::max(p.lastNs, end);
        return p.calls.back();
    }

    void span(uint64_t seqOf, uint64_t begin, uint64_t end, int device = 0)
    {
        wire::GpuSpanBody s{};
        s.seq = seqOf;
        s.beginNs = begin;
        s.endNs = end;
        s.device = device;
        p.spans.push_back(s);
        p.lastNs = std::max(p.lastNs, end);
    }

    // A copy; gpuBegin == gpuEnd means untimed.
    uint64_t copy(const std::string& name, Direction dir, MemKind src, MemKind dst, uint64_t bytes, uint64_t begin,
                  uint64_t end, bool async, uint64_t gpuBegin = 0, uint64_t gpuEnd = 0, uint32_t stack = 0,
                  uint16_t extra = 0)
    {
        uint16_t flags = uint16_t(wire::kCallDeviceWork | extra | (async ? wire::kCallAsync : 0));
        if (!async) flags |= wire::kCallImplicitSync;
        if (gpuEnd > gpuBegin) flags |= wire::kCallGpuTimed;
        wire::CallBody& c = call(name, Category::Transfer, begin, end, flags, stack);
        c.args.transfer = wire::TransferArgs{bytes, 0xd000, 0xa000, dir, src, dst, 0, 0};
        if (gpuEnd > gpuBegin) span(c.seq, gpuBegin, gpuEnd);
        return c.seq;
    }

    uint64_t launch(uint32_t kernelId, uint64_t begin, uint64_t end, uint64_t gpuBegin, uint64_t gpuEnd,
                    uint32_t stack = 0, uint16_t extra = 0)
    {
        uint16_t flags = uint16_t(wire::kCallDeviceWork | wire::kCallAsync | extra);
        if (gpuEnd > gpuBegin) flags |= wire::kCallGpuTimed;
        wire::CallBody& c = call("cuLaunchKernel", Category::Launch, begin, end, flags, stack);
        c.args.launch.kernelId = kernelId;
        if (gpuEnd > gpuBegin) span(c.seq, gpuBegin, gpuEnd);
        return c.seq;
    }

    Capture capture() const
    {
        Capture cap;
        cap.processes.push_back(p);
        return cap;
    }
};

const Finding* findingOf(const Report& r, const std::string& rule)
{
    for (const Finding& f : r.findings)
        if (f.rule == rule) return &f;
    return nullptr;
}

const TransferRow* transferOf(const Report& r, const std::string& dir, const std::string& mem, const std::string& mode)
{
    for (const TransferRow& t : r.transfers)
        if (t.direction == dir && t.hostMemory == mem && t.mode == mode) return &t;
    return nullptr;
}

const SyncRow* syncOf(const Report& r, const std::string& api)
{
    for (const SyncRow& s : r.syncs)
        if (s.api == api) return &s;
    return nullptr;
}

TEST(Timeline, UnionGapsAndOverlap)
{
    IntervalSet s;
    s.add(10, 20);
    s.add(15, 30);
    s.add(50, 60);
    s.add(5, 5);  // empty: ignored
    EXPECT_EQ(s.total(), 30u);
    ASSERT_EQ(s.merged().size(), 2u);
    EXPECT_EQ(s.overlap(0, 100), 30u);
    EXPECT_EQ(s.overlap(12, 55), 18u + 5u);
    EXPECT_EQ(s.overlap(30, 50), 0u);
    EXPECT_EQ(s.overlap(52, 54), 2u);
    const auto gaps = s.gaps();
    ASSERT_EQ(gaps.size(), 1u);
    EXPECT_EQ(gaps[0].begin, 30u);
    EXPECT_EQ(gaps[0].end, 50u);
    EXPECT_EQ(s.clipped(0, 55).total(), 25u);
}

TEST(DurationStats, MedianAndP99)
{
    const DurationStats s = durationStats({5, 1, 3, 2});
    EXPECT_EQ(s.count, 4u);
    EXPECT_EQ(s.total, 11u);
    EXPECT_EQ(s.min, 1u);
    EXPECT_EQ(s.max, 5u);
    EXPECT_EQ(s.median, 2u);  // (2 + 3) / 2, integer
    EXPECT_EQ(s.p99, 5u);
    std::vector<uint64_t> hundred;
    for (uint64_t i = 1; i <= 100; ++i) hundred.push_back(i);
    EXPECT_EQ(durationStats(hundred).p99, 99u);
    EXPECT_EQ(durationStats({}).count, 0u);
}

TEST(ApiNames, RuntimeNamesBesideDriverNames)
{
    EXPECT_EQ(displayName("cuMemcpyHtoD_v2"), "cuMemcpyHtoD_v2 (cudaMemcpy)");
    EXPECT_EQ(displayName("cuCtxSynchronize"), "cuCtxSynchronize (cudaDeviceSynchronize)");
    EXPECT_EQ(displayName("cuLaunchKernel"), "cuLaunchKernel (cudaLaunchKernel / <<<>>>)");
    EXPECT_EQ(displayName("cuLaunchKernel_ptsz"), "cuLaunchKernel_ptsz (cudaLaunchKernel / <<<>>>)");
    EXPECT_EQ(displayName("cuMemcpyHtoDAsync_v2_ptsz"), "cuMemcpyHtoDAsync_v2_ptsz (cudaMemcpyAsync)");
    EXPECT_EQ(displayName("cuMemcpy_ptds"), "cuMemcpy_ptds (cudaMemcpy)");
    EXPECT_EQ(displayName("cuMemsetD32_v2"), "cuMemsetD32_v2");  // no runtime call reaches it
    EXPECT_EQ(runtimeNameOf("cuArray3DCreate_v2"), "cudaMallocArray / cudaMalloc3DArray");
    EXPECT_EQ(runtimeNameOf("cuMemcpy3D_v2_ptds"), "cudaMemcpy3D / cudaMemcpy*Array");
    EXPECT_EQ(runtimeNameOf("cuMemDiscardBatchAsync_ptsz"), "cudaMemDiscardBatchAsync");
    EXPECT_EQ(driverBaseName("cuStreamSynchronize_ptsz"), "cuStreamSynchronize");
    EXPECT_EQ(runtimeNameOf("cuModuleLoadData"), "");
}

// A process killed before its End: the own time of its threads still running comes from its latest
// Tally (the running totals a collector's stream carries), not only from the ended threads' ThreadStats.
TEST(Analyze, OwnTimeOfACutShortStreamFromItsTally)
{
    ProcBuilder b;
    b.p.threadStats.push_back({1, 0, 4, 0, 7});  // a thread that ended
    b.p.tally.timeNs = 150;
    b.p.tally.overheadNs = 25;  // every thread's, the ended one's included
    b.p.tally.dropped = 3;
    b.launch(1, 100, 110, 120, 140);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].gpuspyOverheadNs, 25u);
    EXPECT_EQ(r.processes[0].droppedRecords, 3u);
}

// What GPU timing cost the threads: their GpuBudget records summed per process, in the report's JSON.
TEST(Analyze, GpuTimingCostSumsTheThreadsBudgetRecords)
{
    ProcBuilder b;
    wire::GpuBudgetBody one{};
    one.tid = 1;
    one.budgetPpm = 30000;
    one.firstNs = 100;
    one.lastNs = 1100;
    one.recordNs = 10;
    one.bookkeepingNs = 5;
    one.choosingNs = 3;
    one.drainNs = 2;
    one.timedOps = 4;
    one.untimedOps = 40;
    one.lateEndSpans = 1;
    wire::GpuBudgetBody two = one;
    two.tid = 2;
    two.firstNs = 500;
    two.lastNs = 700;
    two.heldUpSpans = 2;
    b.p.gpuBudgets = {one, two};
    b.launch(1, 100, 110, 120, 140);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.processes.size(), 1u);
    const ProcessSummary::GpuTimingCost& g = r.processes[0].gpuTiming;
    EXPECT_TRUE(g.known);
    EXPECT_EQ(g.spentNs(), 40u);
    EXPECT_EQ(g.overNs, 1200u);
    EXPECT_EQ(g.timedOps, 8u);
    EXPECT_EQ(g.untimedOps, 80u);
    EXPECT_EQ(g.lateEndSpans, 2u);
    EXPECT_EQ(g.heldUpSpans, 2u);
    const nlohmann::json j = nlohmann::json::parse(renderJson(r));
    const nlohmann::json& t = j["processes"][0]["gpu_timing"];
    EXPECT_EQ(t["spent_ns"], 40);
    EXPECT_DOUBLE_EQ(t["budget_pct"].get<double>(), 3.0);
    EXPECT_EQ(t["set_aside_held_up"], 2);
    // A process without them (an older shim, GPU timing off) has no such key.
    ProcBuilder none;
    none.launch(1, 100, 110, 120, 140);
    const Report r2 = analyze(none.capture(), {});
    EXPECT_FALSE(nlohmann::json::parse(renderJson(r2))["processes"][0].contains("gpu_timing"));
}

TEST(Analyze, OverviewAndBusyPercent)
{
    ProcBuilder b;
    b.p.startNs = 50;
    b.p.ended = true;
    b.p.end.endNs = 1050;
    b.p.end.recordsMade = 50;
    b.p.threadStats.push_back({1, 0, 4, 0, 7});
    b.p.threadStats.push_back({2, 0, 1, 0, 3});
    b.launch(1, 100, 110, 120, 140);  // host 10, GPU [120,140)
    b.launch(1, 110, 130, 130, 160);  // GPU overlaps: union [120,160)
    b.launch(1, 300, 320, 400, 420);  // gap [160,400) = 240
    b.call("cuCtxSynchronize", Category::Sync, 320, 500);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.processes.size(), 1u);
    const ProcessSummary& p = r.processes[0];
    EXPECT_EQ(p.wallNs, 1000u);
    EXPECT_EQ(p.cudaApiNs, 10u + 20 + 20 + 180);
    EXPECT_DOUBLE_EQ(p.cudaApiPct, 23.0);
    EXPECT_EQ(p.gpuspyOverheadNs, 10u);
    EXPECT_EQ(p.activeBeginNs, 100u);
    EXPECT_EQ(p.activeEndNs, 500u);
    ASSERT_EQ(r.devices.size(), 1u);
    const DeviceSummary& d = r.devices[0];
    EXPECT_EQ(d.name, "Simulated GPU");
    EXPECT_EQ(d.activeNs, 400u);
    EXPECT_EQ(d.busyNs, 60u);
    EXPECT_DOUBLE_EQ(d.busyPct, 15.0);
    EXPECT_EQ(d.idleGapNs, 240u);
    EXPECT_EQ(d.largestGapNs, 240u);
    EXPECT_EQ(d.kernelNs, 20u + 30 + 20);
    EXPECT_EQ(d.ops, 3u);
    EXPECT_EQ(d.timedOps, 3u);
    // The gap [160,400): the host was inside CUDA in [300,320) and [320,400).
    EXPECT_EQ(d.starvedNs, 240u - 20 - 80);
}

// Capture windows from hand-built Window records: per-window counts from CallBody::window, what was
// left out before each window and after the last (the Tally), and an empty window as a high finding.
wire::WindowBody windowEdge(wire::WindowEdge edge, uint32_t index, uint64_t at, uint64_t leftOther, uint64_t leftLaunch)
{
    wire::WindowBody w{};
    w.timeNs = at;
    w.index = index;
    w.edge = edge;
    w.trigger = wire::WindowTrigger::ProfilerApi;
    w.leftOut[size_t(Category::Other)] = leftOther;
    w.leftOut[size_t(Category::Launch)] = leftLaunch;
    return w;
}

TEST(CaptureWindows, CountsPerWindowAndLeftOut)
{
    ProcBuilder b;
    b.p.windows.push_back(windowEdge(wire::WindowEdge::Begin, 1, 100, 2, 10));
    b.p.windows.push_back(windowEdge(wire::WindowEdge::End, 1, 200, 2, 10));
    b.p.windows.push_back(windowEdge(wire::WindowEdge::Begin, 2, 300, 3, 20));  // 11 left out between
    b.p.windows.push_back(windowEdge(wire::WindowEdge::End, 2, 400, 3, 20));
    b.p.windows.push_back(windowEdge(wire::WindowEdge::Tally, 2, 500, 5, 25));  // 7 after the last
    for (int i = 0; i < 4; ++i) {
        b.launch(1, 110 + i * 10, 115 + i * 10, 0, 0);
        b.p.calls.back().window = 1;
    }
    b.call("cuCtxSynchronize", Category::Sync, 160, 170).window = 1;
    for (int i = 0; i < 8; ++i) {
        b.launch(1, 310 + i * 5, 312 + i * 5, 0, 0);
        b.p.calls.back().window = 2;
    }
    const Report r = analyze(b.capture(), {});
    const CaptureWindows& cw = r.captureWindows;
    ASSERT_TRUE(cw.used);
    ASSERT_EQ(cw.rows.size(), 2u);
    EXPECT_EQ(cw.rows[0].launches, 4u);
    EXPECT_EQ(cw.rows[0].syncs, 1u);
    EXPECT_EQ(cw.rows[0].calls, 5u);
    EXPECT_EQ(cw.rows[0].leftOutBefore, 12u);
    EXPECT_EQ(cw.rows[0].beginNs, 100u);
    EXPECT_EQ(cw.rows[0].endNs, 200u);
    EXPECT_EQ(cw.rows[0].trigger, "cudaProfilerApi");
    EXPECT_EQ(cw.rows[1].launches, 8u);
    EXPECT_EQ(cw.rows[1].leftOutBefore, 11u);
    EXPECT_EQ(cw.rows[1].leftOutLaunchesBefore, 10u);
    EXPECT_EQ(cw.leftOut, 30u);
    EXPECT_EQ(cw.leftOutLaunches, 25u);
    EXPECT_EQ(cw.leftOutAfter, 7u);
    EXPECT_EQ(cw.emptyWindows, 0u);
    for (const Finding& f : r.findings) EXPECT_NE(f.rule, "empty-capture-window");
}

TEST(CaptureWindows, EmptyAndNeverOpenedAreLoud)
{
    ProcBuilder b;
    b.p.windows.push_back(windowEdge(wire::WindowEdge::Begin, 1, 100, 0, 3));
    b.p.windows.push_back(windowEdge(wire::WindowEdge::End, 1, 200, 0, 3));
    b.p.windows.push_back(windowEdge(wire::WindowEdge::Tally, 1, 300, 0, 9));
    Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.captureWindows.rows.size(), 1u);
    EXPECT_TRUE(r.captureWindows.rows[0].empty());
    EXPECT_EQ(r.captureWindows.emptyWindows, 1u);
    ASSERT_FALSE(r.findings.empty());
    EXPECT_EQ(r.findings[0].rule, "empty-capture-window");
    EXPECT_EQ(r.findings[0].severity, "high");

    ProcBuilder never;
    never.p.windows.push_back(windowEdge(wire::WindowEdge::Tally, 0, 300, 1, 9));
    r = analyze(never.capture(), {});
    EXPECT_TRUE(r.captureWindows.used);
    EXPECT_TRUE(r.captureWindows.rows.empty());
    EXPECT_EQ(r.captureWindows.leftOut, 10u);
    ASSERT_FALSE(r.findings.empty());
    EXPECT_EQ(r.findings[0].rule, "empty-capture-window");
    bool noted = false;
    for (const std::string& n : r.notes) noted |= n.find("NO CAPTURE WINDOW OPENED") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(CaptureWindows, NoneWithoutWindowRecords)
{
    ProcBuilder b;
    b.launch(1, 100, 110, 0, 0);
    const Report r = analyze(b.capture(), {});
    EXPECT_FALSE(r.captureWindows.used);
    EXPECT_TRUE(r.captureWindows.rows.empty());
}

TEST(Analyze, TransfersGroupedExactly)
{
    ProcBuilder b;
    // 3 synchronous pageable HtoD copies of 1 MiB, 2 timed.
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, 0, 100, false, 10, 60);
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, 100, 300, false, 110, 160);
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, 300, 400, false);
    // DtoH to pinned, async: the host side is the destination.
    b.copy("cuMemcpyDtoHAsync_v2", Direction::DtoH, MemKind::Device, MemKind::Pinned, 4 * KiB, 400, 410, true, 420, 430);
    b.copy("cuMemcpyDtoHAsync_v2", Direction::DtoH, MemKind::Device, MemKind::Pinned, 2 * MiB, 410, 420, true, 430, 530);
    b.copy("cuMemcpyDtoD_v2", Direction::DtoD, MemKind::Device, MemKind::Device, 100, 600, 610, false, 601, 602);
    b.copy("cuMemcpyPeerAsync", Direction::PtoP, MemKind::Device, MemKind::Device, 100, 620, 630, true);
    b.copy("cuMemsetD8_v2", Direction::Memset, MemKind::Unknown, MemKind::Device, 64, 640, 650, false);
    // Failed and captured copies move no data.
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, 700, 710, false);
    b.p.calls.back().result = 1;
    b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 720, 730, true, 0, 0, 0,
           wire::kCallCapturing);
    const Report r = analyze(b.capture(), {});

    const TransferRow* h = transferOf(r, "HtoD", "pageable", "sync");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->count, 3u);
    EXPECT_EQ(h->bytes, 3 * MiB);
    EXPECT_EQ(h->hostNs, 400u);
    EXPECT_EQ(h->gpuNs, 100u);
    EXPECT_EQ(h->timedCount, 2u);
    EXPECT_EQ(h->gbpsBasis, "gpu");
    EXPECT_DOUBLE_EQ(h->gbps, double(2 * MiB) / 100.0);
    ASSERT_EQ(h->buckets.size(), 3u);
    EXPECT_EQ(h->buckets[1].count, 3u);  // <= 1 MiB includes 1 MiB
    EXPECT_EQ(h->host.median, 100u);
    EXPECT_EQ(h->apis, std::vector<std::string>{"cuMemcpyHtoD_v2"});

    const TransferRow* d = transferOf(r, "DtoH", "pinned", "async");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 2u);
    EXPECT_EQ(d->bytes, 2 * MiB + 4 * KiB);
    EXPECT_EQ(d->buckets[0].count, 1u);
    EXPECT_EQ(d->buckets[0].bytes, 4 * KiB);
    EXPECT_EQ(d->buckets[1].count, 0u);
    EXPECT_EQ(d->buckets[2].count, 1u);
    EXPECT_EQ(d->gpuNs, 110u);

    EXPECT_TRUE(transferOf(r, "DtoD", "device", "sync"));
    const TransferRow* peer = transferOf(r, "PtoP", "device", "async");
    ASSERT_TRUE(peer);
    EXPECT_EQ(peer->gbpsBasis, "host");  // untimed: bytes / host time
    EXPECT_DOUBLE_EQ(peer->gbps, 10.0);
    EXPECT_TRUE(transferOf(r, "Memset", "device", "sync"));
    EXPECT_FALSE(transferOf(r, "HtoD", "pinned", "async"));  // captured
    EXPECT_EQ(r.transfers.size(), 5u);
}

TEST(Analyze, LaunchesKernelsAndLaunchBound)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4tinyPi";
    b.p.kernels[2] = "_Z3bigPfi";
    // tiny: 4 launches, host 10 each, GPU 2 each -> launch-bound.
    for (int i = 0; i < 4; ++i) b.launch(1, 100 * i, 100 * i + 10, 100 * i + 20, 100 * i + 22);
    // big: 2 timed launches of 50 and 70, one sampled out, host 5 each.
    b.launch(2, 1000, 1005, 1010, 1060);
    b.launch(2, 1100, 1105, 1110, 1180);
    b.launch(2, 1200, 1205, 0, 0, 0, wire::kCallGpuSampledOut);
    b.launch(2, 1300, 1305, 0, 0, 0, wire::kCallCapturing);  // captured: not run
    const Report r = analyze(b.capture(), {});
    const LaunchSummary& L = r.launches;
    EXPECT_EQ(L.count, 7u);
    EXPECT_EQ(L.hostNs, 4u * 10 + 3 * 5);
    EXPECT_EQ(L.medianHostNs, 10u);
    EXPECT_EQ(L.p99HostNs, 10u);
    EXPECT_EQ(L.timed, 6u);
    EXPECT_EQ(L.sampledOut, 1u);
    EXPECT_EQ(L.captured, 1u);
    EXPECT_FALSE(L.samplingNote.empty());
    EXPECT_EQ(L.launchBoundKernels, 1u);
    ASSERT_EQ(L.launchBoundNames.size(), 1u);
    EXPECT_EQ(L.launchBoundNames[0], "tiny(int*)");
    // Active span [0, 1305): 7 launches.
    EXPECT_NEAR(L.perSecond, 7e9 / 1305.0, 1e-3);
    ASSERT_EQ(r.kernels.size(), 2u);
    const KernelRow& big = r.kernels[0];
    EXPECT_EQ(big.name, "big(float*, int)");
    EXPECT_EQ(big.mangled, "_Z3bigPfi");
    EXPECT_EQ(big.count, 3u);
    EXPECT_EQ(big.timedCount, 2u);
    EXPECT_EQ(big.gpuNs, 120u);
    EXPECT_EQ(big.estimatedGpuNs, 180u);  // scaled to the untimed launch
    EXPECT_EQ(big.gpu.median, 60u);
    EXPECT_EQ(big.launchHostNs, 15u);
    EXPECT_FALSE(big.launchBound);
    const KernelRow& tiny = r.kernels[1];
    EXPECT_EQ(tiny.count, 4u);
    EXPECT_EQ(tiny.gpu.median, 2u);
    EXPECT_EQ(tiny.medianLaunchHostNs, 10u);
    EXPECT_TRUE(tiny.launchBound);
}

// Graphs made of graphs, and graphs built node by node: a graph launched into a capture adds its nodes
// to the captured graph (one whose nodes are unknown makes the parent unknown); nodes added with
// cuGraphAdd*Node (and a child graph node's) are the graph's at instantiation; an exec's kernel node
// given another kernel (cuGraphExecKernelNodeSetParams: the node by its add call's seq) counts as that.
TEST(Analyze, ChildGraphsAndNodesAddedOneByOne)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    b.p.kernels[2] = "_Z4normPf";
    const uint64_t child = 0x6000, parent = 0x6100, built = 0x6200, orphan = 0x6300;
    const uint64_t childExec = 0xe000, parentExec = 0xe100, builtExec = 0xe200, orphanExec = 0xe300;
    const uint16_t capturedLaunch = uint16_t(wire::kCallDeviceWork | wire::kCallAsync | wire::kCallCapturing);
    auto graphCall = [&](const std::string& name, uint64_t t, uint64_t a0, uint64_t a1, uint64_t into = 0,
                         uint16_t flags = 0) -> wire::CallBody& {
        wire::CallBody& c = b.call(name, Category::Graph, t, t + 5, flags);
        c.args.raw[0] = a0;
        c.args.raw[1] = a1;
        c.args.raw[wire::kCaptureGraphSlot] = into;
        return c;
    };
    // child: a captured step kernel.
    b.launch(1, 10, 15, 0, 0, 0, wire::kCallCapturing);
    b.p.calls.back().args.raw[wire::kCaptureGraphSlot] = child;
    graphCall("cuStreamEndCapture", 20, child, 0);
    graphCall("cuGraphInstantiateWithFlags", 25, childExec, child);
    // parent: a captured norm kernel, then the child's exec launched into the capture.
    b.launch(2, 30, 35, 0, 0, 0, wire::kCallCapturing);
    b.p.calls.back().args.raw[wire::kCaptureGraphSlot] = parent;
    graphCall("cuGraphLaunch", 40, childExec, 0, parent, capturedLaunch);
    graphCall("cuStreamEndCapture", 45, parent, 0);
    graphCall("cuGraphInstantiateWithFlags", 50, parentExec, parent);
    // orphan: an exec never seen made, launched into its capture.
    graphCall("cuGraphLaunch", 55, 0xdead, 0, orphan, capturedLaunch);
    graphCall("cuStreamEndCapture", 60, orphan, 0);
    graphCall("cuGraphInstantiateWithFlags", 62, orphanExec, orphan);
    // built: a step kernel node, then a child graph node of child; its step node switched to norm.
    wire::CallBody& node = b.call("cuGraphAddKernelNode_v2", Category::Launch, 70, 75, wire::kCallCapturing);
    node.args.launch.kernelId = 1;
    node.args.raw[wire::kCaptureGraphSlot] = built;
    const uint64_t stepNode = node.seq;
    graphCall("cuGraphAddChildGraphNode", 80, child, 0, built, wire::kCallCapturing);
    graphCall("cuGraphInstantiateWithFlags", 85, builtExec, built);
    graphCall("cuGraphExecKernelNodeSetParams_v2", 90, builtExec, stepNode).args.raw[2] = 2;
    for (uint64_t exec : {parentExec, builtExec, orphanExec}) {
        wire::CallBody& c = b.call("cuGraphLaunch", Category::Graph, 100 + exec % 0x1000, 105 + exec % 0x1000,
                                   uint16_t(wire::kCallDeviceWork | wire::kCallAsync));
        c.args.sync.object = exec;
    }

    const Report r = analyze(b.capture(), {});
    const LaunchSummary& L = r.launches;
    EXPECT_EQ(L.graphLaunches, 3u) << "launches into a capture ran nothing";
    EXPECT_EQ(L.graphsUnknown, 1u);
    EXPECT_EQ(L.graphNodes, 4u);
    auto kernel = [&](const std::string& name) -> const KernelRow* {
        for (const KernelRow& k : r.kernels)
            if (k.name == name) return &k;
        return nullptr;
    };
    const KernelRow* step = kernel("step(float*)");
    const KernelRow* norm = kernel("norm(float*)");
    ASSERT_TRUE(step && norm);
    EXPECT_EQ(step->count, 2u);  // the child's, in the parent and in built
    EXPECT_EQ(step->graphCount, 2u);
    EXPECT_EQ(norm->count, 2u);  // the parent's own, and built's switched node
    EXPECT_EQ(norm->graphCount, 2u);
}

// cuGraphCreate starts a graph empty: a destroyed graph's handle handed out again does not bring back
// the nodes added to it before.
TEST(Analyze, AGraphHandleMadeAgainStartsEmpty)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    b.p.kernels[2] = "_Z4normPf";
    const uint64_t graph = 0x7000;
    uint64_t t = 10;
    for (uint32_t kernel : {1u, 2u}) {
        const uint64_t exec = 0xe000 + kernel;
        b.call("cuGraphCreate", Category::Graph, t, t + 5).args.raw[0] = graph;
        wire::CallBody& node = b.call("cuGraphAddKernelNode_v2", Category::Launch, t + 10, t + 15, wire::kCallCapturing);
        node.args.launch.kernelId = kernel;
        node.args.raw[wire::kCaptureGraphSlot] = graph;
        wire::CallBody& inst = b.call("cuGraphInstantiateWithFlags", Category::Graph, t + 20, t + 25);
        inst.args.raw[0] = exec;
        inst.args.raw[1] = graph;
        b.call("cuGraphLaunch", Category::Graph, t + 30, t + 35, uint16_t(wire::kCallDeviceWork | wire::kCallAsync))
            .args.sync.object = exec;
        b.call("cuGraphDestroy", Category::Other, t + 40, t + 45);
        t += 100;
    }
    const Report r = analyze(b.capture(), {});
    EXPECT_EQ(r.launches.graphLaunches, 2u);
    EXPECT_EQ(r.launches.graphNodes, 2u);
    EXPECT_EQ(r.launches.graphsUnknown, 0u);
    for (const KernelRow& k : r.kernels) EXPECT_EQ(k.count, 1u) << k.name;
}

// Copy and memset nodes given new parameters (cuGraph(Exec)MemcpyNodeSetParams, cuGraph(Exec)MemsetNodeSetParams:
// the new transfer, dst the exec or 0, src the seq of the call that made the node) and a clone of the graph
// (cuGraphClone: it runs the original's nodes as they stood when it was cloned).
TEST(Analyze, EditedCopyAndMemsetNodesAndClonedGraphs)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    const uint64_t graph = 0x6000, clone = 0x6100, exec = 0xe000, cloneExec = 0xe100;
    const uint16_t capturing = wire::kCallCapturing;
    auto graphCall = [&](const std::string& name, uint64_t t, uint64_t a0, uint64_t a1) -> wire::CallBody& {
        wire::CallBody& c = b.call(name, Category::Graph, t, t + 5);
        c.args.raw[0] = a0;
        c.args.raw[1] = a1;
        return c;
    };
    auto edit = [&](const std::string& name, uint64_t t, uint64_t execOf, uint64_t nodeSeq, Direction dir, MemKind src,
                    MemKind dst, uint64_t bytes) {
        b.call(name, Category::Graph, t, t + 5).args.transfer = wire::TransferArgs{bytes, execOf, nodeSeq, dir, src, dst, 0, 0};
    };
    auto captured = [&](uint64_t seq) {
        b.p.calls.back().args.raw[wire::kCaptureGraphSlot] = graph;
        return seq;
    };
    const uint64_t in = captured(b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 4 * KiB,
                                        10, 15, true, 0, 0, 0, capturing));
    const uint64_t set = captured(b.copy("cuMemsetD32Async", Direction::Memset, MemKind::Unknown, MemKind::Device, 1 * KiB,
                                         20, 25, true, 0, 0, 0, capturing));
    const uint64_t out = captured(b.copy("cuMemcpyDtoHAsync_v2", Direction::DtoH, MemKind::Device, MemKind::Pinned, 4 * KiB,
                                         30, 35, true, 0, 0, 0, capturing));
    captured(b.launch(1, 40, 45, 0, 0, 0, capturing));
    graphCall("cuStreamEndCapture", 50, graph, 0);
    // In the graph: the memset halved, the DtoH copy made a DtoD copy of 2 KiB.
    edit("cuGraphMemsetNodeSetParams", 60, 0, set, Direction::Memset, MemKind::Unknown, MemKind::Device, 512);
    edit("cuGraphMemcpyNodeSetParams", 65, 0, out, Direction::DtoD, MemKind::Device, MemKind::Device, 2 * KiB);
    graphCall("cuGraphClone", 70, clone, graph);
    // Made after the clone: the clone keeps the original's HtoD copy of 4 KiB.
    edit("cuGraphMemcpyNodeSetParams", 75, 0, in, Direction::HtoD, MemKind::Pinned, MemKind::Device, 3 * KiB);
    graphCall("cuGraphInstantiateWithFlags", 80, exec, graph);
    graphCall("cuGraphInstantiateWithFlags", 85, cloneExec, clone);
    auto launch = [&](uint64_t t, uint64_t e) {
        b.call("cuGraphLaunch", Category::Graph, t, t + 10, uint16_t(wire::kCallDeviceWork | wire::kCallAsync)).args.sync.object = e;
    };
    launch(100, exec);
    // In the exec only: the HtoD copy 1 KiB long, the memset 1 KiB again; a node of no known call is left.
    edit("cuGraphExecMemcpyNodeSetParams", 120, exec, in, Direction::HtoD, MemKind::Pinned, MemKind::Device, 1 * KiB);
    edit("cuGraphExecMemsetNodeSetParams", 125, exec, set, Direction::Memset, MemKind::Unknown, MemKind::Device, 1 * KiB);
    edit("cuGraphExecMemsetNodeSetParams", 126, exec, 0, Direction::Memset, MemKind::Unknown, MemKind::Device, 7);
    launch(140, exec);
    launch(160, cloneExec);

    const Report r = analyze(b.capture(), {});
    EXPECT_EQ(r.launches.graphLaunches, 3u);
    EXPECT_EQ(r.launches.graphsUnknown, 0u);
    EXPECT_EQ(r.launches.graphNodes, 12u);
    const TransferRow* htod = transferOf(r, "HtoD", "pinned", "graph");
    ASSERT_TRUE(htod);
    EXPECT_EQ(htod->count, 3u);
    EXPECT_EQ(htod->bytes, 3 * KiB + 1 * KiB + 4 * KiB);
    const TransferRow* memset = transferOf(r, "Memset", "device", "graph");
    ASSERT_TRUE(memset);
    EXPECT_EQ(memset->count, 3u);
    EXPECT_EQ(memset->bytes, 512u + 1 * KiB + 512u);
    const TransferRow* dtod = transferOf(r, "DtoD", "device", "graph");
    ASSERT_TRUE(dtod);
    EXPECT_EQ(dtod->count, 3u);
    EXPECT_EQ(dtod->bytes, 3 * 2 * KiB);
    EXPECT_FALSE(transferOf(r, "DtoH", "pinned", "graph"));
}

// The generic node API (cuGraphAddNode) recorded as the kind's own entry point: a kernel node a Launch, a
// host node a Launch of kernel 0 and grid 0, a copy node a Transfer, a child graph node a Graph call (the
// child in raw[0]); cuGraph(Exec)NodeSetParams say in raw[4] which edit layout they carry.
TEST(Analyze, GenericNodeApi)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    b.p.kernels[2] = "_Z4normPf";
    const uint64_t child = 0x6000, graph = 0x6100, exec = 0xe000;
    auto node = [&](uint64_t into, Category cat, uint64_t t) -> wire::CallBody& {
        wire::CallBody& c = b.call("cuGraphAddNode_v2", cat, t, t + 5, wire::kCallCapturing);
        c.args.raw[wire::kCaptureGraphSlot] = into;
        return c;
    };
    b.call("cuGraphCreate", Category::Graph, 1, 2).args.raw[0] = child;
    wire::CallBody& childKernel = node(child, Category::Launch, 5);
    childKernel.args.launch.kernelId = 2;
    childKernel.args.launch.grid[0] = 8;
    b.call("cuGraphCreate", Category::Graph, 10, 12).args.raw[0] = graph;
    wire::CallBody& step = node(graph, Category::Launch, 20);
    step.args.launch.kernelId = 1;
    step.args.launch.grid[0] = 8;
    const uint64_t stepSeq = step.seq;
    node(graph, Category::Transfer, 30).args.transfer = wire::TransferArgs{4 * KiB, 0xd000, 0xa000, Direction::HtoD,
                                                                            MemKind::Pinned, MemKind::Device, 0, 0};
    const uint64_t copySeq = b.p.calls.back().seq;
    node(graph, Category::Graph, 40).args.raw[0] = child;
    node(graph, Category::Launch, 50);  // a host node: kernel 0, grid 0
    node(graph, Category::Other, 55);   // an empty or event node: nothing counted
    wire::CallBody& inst = b.call("cuGraphInstantiateWithFlags", Category::Graph, 60, 65);
    inst.args.raw[0] = exec;
    inst.args.raw[1] = graph;
    auto launch = [&](uint64_t t) {
        b.call("cuGraphLaunch", Category::Graph, t, t + 10, uint16_t(wire::kCallDeviceWork | wire::kCallAsync)).args.sync.object = exec;
    };
    launch(100);
    wire::CallBody& k = b.call("cuGraphExecNodeSetParams", Category::Graph, 120, 125);
    k.args.raw[0] = exec;
    k.args.raw[1] = stepSeq;
    k.args.raw[2] = 2;
    k.args.raw[4] = wire::kNodeEditKernel;
    wire::CallBody& c = b.call("cuGraphExecNodeSetParams", Category::Graph, 130, 135);
    c.args.transfer = wire::TransferArgs{1 * KiB, exec, copySeq, Direction::HtoD, MemKind::Pinned, MemKind::Device, 0, 0};
    c.args.raw[4] = wire::kNodeEditTransfer;
    launch(140);

    const Report r = analyze(b.capture(), {});
    EXPECT_EQ(r.launches.graphLaunches, 2u);
    EXPECT_EQ(r.launches.graphsUnknown, 0u);
    EXPECT_EQ(r.launches.graphNodes, 8u);
    auto kernel = [&](const std::string& name) -> const KernelRow* {
        for (const KernelRow& row : r.kernels)
            if (row.name == name) return &row;
        return nullptr;
    };
    const KernelRow* stepRow = kernel("step(float*)");
    const KernelRow* normRow = kernel("norm(float*)");
    const KernelRow* hostRow = &r.hostFunctions;
    ASSERT_TRUE(stepRow && normRow);
    EXPECT_EQ(kernel("[host function]"), nullptr);  // never a kernel row
    EXPECT_EQ(stepRow->graphCount, 1u);
    EXPECT_EQ(normRow->graphCount, 3u);  // the child's, twice, and step switched to norm once
    EXPECT_EQ(hostRow->graphCount, 2u);
    const TransferRow* htod = transferOf(r, "HtoD", "pinned", "graph");
    ASSERT_TRUE(htod);
    EXPECT_EQ(htod->count, 2u);
    EXPECT_EQ(htod->bytes, 4 * KiB + 1 * KiB);
}

// Host functions (cudaLaunchHostFunc) are host code a stream runs, not kernels: their own row (how many,
// how long they held the stream, from where), never in the Kernels table, the launch count or a
// launch-bound finding, though each holds its stream for less than its launch call takes.
TEST(Analyze, HostFunctionsAreTheirOwnRowNeverKernels)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    const uint32_t kern = b.site("loop", 10), host = b.site("loop", 11);
    for (uint64_t i = 0, t = 0; i < 20; ++i, t += 200) {
        b.launch(1, t, t + 3, t + 3, t + 103, kern);
        wire::CallBody& c = b.call("cuLaunchHostFunc", Category::Launch, t + 3, t + 33,
                                   uint16_t(wire::kCallDeviceWork | wire::kCallAsync | wire::kCallGpuTimed), host);
        b.span(c.seq, t + 103, t + 105);
    }
    b.call("cuLaunchHostFunc", Category::Launch, 5000, 5010, wire::kCallCapturing, host);  // into a graph: no launch
    const Report r = analyze(b.capture(), {});
    EXPECT_EQ(r.launches.captured, 0u);
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].name, "step(float*)");
    EXPECT_EQ(r.launches.count, 20u);
    EXPECT_EQ(r.launches.hostNs, 20u * 3);
    EXPECT_EQ(r.launches.timed, 20u);
    EXPECT_EQ(r.launches.launchBoundKernels, 0u);
    EXPECT_FALSE(findingOf(r, "launch-bound-kernels"));
    const KernelRow& h = r.hostFunctions;
    EXPECT_EQ(h.count, 20u);
    EXPECT_EQ(h.timedCount, 20u);
    EXPECT_EQ(h.gpuNs, 20u * 2);  // the time they held their stream
    EXPECT_EQ(h.launchHostNs, 20u * 30);
    ASSERT_EQ(h.callsites.size(), 1u);
    EXPECT_EQ(r.callsites[h.callsites[0]].label, "loop (app.cu:11)");
    const nlohmann::json j = nlohmann::json::parse(renderJson(r));
    EXPECT_EQ(j["host_functions"]["count"], 20);
    EXPECT_EQ(j["host_functions"]["stream_ns"], 40);
    EXPECT_EQ(j["launches"]["count"], 20);
    for (const auto& k : j["kernels"]) EXPECT_NE(k["name"], "[host function]");
    const std::string text = renderText(r, TextOptions{});
    EXPECT_NE(text.find("Host functions (cudaLaunchHostFunc"), std::string::npos) << text;
}

// Graph work: the nodes captured into a graph count in the kernel and transfer tables at every launch
// of an exec instantiated from it (at the launch's call site), its measured time split over them.
// Event record and wait nodes (captured with the EXTERNAL flags, or added by the node API) are counted
// with each launch of their graph, apart from the kernels and transfers: no device work, no share of
// the launch's GPU time (the kernel, the graph's only other node, gets all of it).
TEST(Analyze, GraphEventNodesAreCountedNotTimed)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    const uint64_t graph = 0x6000, exec = 0xe000, event = 0xe7e7;
    b.launch(1, 0, 10, 20, 60);  // standalone: step takes 40
    auto graphCall = [&](const std::string& name, uint64_t t, uint64_t a0, uint64_t a1) {
        wire::CallBody& c = b.call(name, Category::Graph, t, t + 5);
        c.args.raw[0] = a0;
        c.args.raw[1] = a1;
    };
    auto eventNode = [&](const std::string& name, Category cat, uint64_t t, uint64_t kind) {
        wire::CallBody& c = b.call(name, cat, t, t + 2, wire::kCallCapturing);
        c.args.sync.object = event;
        c.args.raw[wire::kEventNodeSlot] = kind;
        c.args.raw[wire::kCaptureGraphSlot] = graph;
    };
    graphCall("cuStreamBeginCapture_v2", 100, 0, 0);
    b.launch(1, 110, 115, 0, 0, 0, wire::kCallCapturing);
    b.p.calls.back().args.raw[wire::kCaptureGraphSlot] = graph;
    eventNode("cuEventRecordWithFlags", Category::Other, 120, wire::kEventNodeRecord);
    eventNode("cuStreamWaitEvent", Category::Sync, 125, wire::kEventNodeWait);
    b.call("cuEventRecord", Category::Other, 128, 129).args.sync.object = event;  // a plain record: no node
    graphCall("cuStreamEndCapture", 140, graph, 0);
    graphCall("cuGraphInstantiateWithFlags", 150, exec, graph);
    for (uint64_t t : {200, 400}) {
        wire::CallBody& c = b.call("cuGraphLaunch", Category::Graph, t, t + 10,
                                   uint16_t(wire::kCallDeviceWork | wire::kCallAsync | wire::kCallGpuTimed));
        c.args.sync.object = exec;
        b.span(c.seq, t + 20, t + 120);  // 100 for the whole graph
    }
    const Report r = analyze(b.capture(), {});
    EXPECT_EQ(r.launches.graphLaunches, 2u);
    EXPECT_EQ(r.launches.graphNodes, 2u);
    EXPECT_EQ(r.launches.graphEventNodes, 4u);
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].graphCount, 2u);
    EXPECT_EQ(r.kernels[0].graphGpuNs, 200u);  // all of each launch's 100: the event nodes take none
}

TEST(Analyze, GraphLaunchesCountTheirNodes)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    b.p.kernels[2] = "_Z4normPf";
    const uint64_t graph = 0x6000, graph2 = 0x6100, exec = 0xe000;
    b.launch(1, 0, 10, 20, 60);  // standalone: step takes 40
    auto captured = [&](uint64_t g) -> wire::CallBody& {
        b.p.calls.back().args.raw[wire::kCaptureGraphSlot] = g;
        return b.p.calls.back();
    };
    auto graphCall = [&](const std::string& name, uint64_t t, uint64_t a0, uint64_t a1) {
        wire::CallBody& c = b.call(name, Category::Graph, t, t + 5);
        c.args.raw[0] = a0;
        c.args.raw[1] = a1;
    };
    graphCall("cuStreamBeginCapture_v2", 100, 0, 0);
    b.launch(1, 110, 115, 0, 0, 0, wire::kCallCapturing);
    captured(graph);
    b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 4 * KiB, 120, 125, true, 0, 0, 0,
           wire::kCallCapturing);
    captured(graph);
    b.launch(2, 130, 135, 0, 0, 0, wire::kCallCapturing);
    captured(graph);
    graphCall("cuStreamEndCapture", 140, graph, 0);
    graphCall("cuGraphInstantiateWithFlags", 150, exec, graph);
    const uint32_t site = b.site("decode_loop", 42);
    auto graphLaunch = [&](uint64_t t, uint64_t e, bool timed) {
        wire::CallBody& c = b.call("cuGraphLaunch", Category::Graph, t, t + 10,
                                   uint16_t(wire::kCallDeviceWork | wire::kCallAsync | (timed ? wire::kCallGpuTimed : 0)), site);
        c.args.sync.object = e;
        if (timed) b.span(c.seq, t + 20, t + 120);  // 100 for the whole graph
    };
    graphLaunch(200, exec, true);
    graphLaunch(400, exec, true);
    graphLaunch(600, 0xf000, true);  // an exec never seen made: its nodes are unknown
    // The exec updated to a graph of one norm node: later launches run that.
    graphCall("cuStreamBeginCapture_v2", 700, 0, 0);
    b.launch(2, 710, 715, 0, 0, 0, wire::kCallCapturing);
    captured(graph2);
    graphCall("cuStreamEndCapture", 720, graph2, 0);
    graphCall("cuGraphExecUpdate_v2", 730, exec, graph2);
    graphLaunch(800, exec, false);

    const Report r = analyze(b.capture(), {});
    const LaunchSummary& L = r.launches;
    EXPECT_EQ(L.count, 1u);  // API launches only
    EXPECT_EQ(L.captured, 3u);
    EXPECT_EQ(L.graphLaunches, 4u);
    EXPECT_EQ(L.graphNodes, 7u);
    EXPECT_EQ(L.graphsUnknown, 1u);
    auto kernel = [&](const std::string& name) -> const KernelRow* {
        for (const KernelRow& k : r.kernels)
            if (k.name == name) return &k;
        return nullptr;
    };
    const KernelRow* step = kernel("step(float*)");
    const KernelRow* norm = kernel("norm(float*)");
    ASSERT_TRUE(step && norm);
    EXPECT_EQ(step->count, 3u);
    EXPECT_EQ(step->graphCount, 2u);
    EXPECT_EQ(step->timedCount, 1u);
    EXPECT_EQ(step->gpuNs, 40u);           // measured: the standalone launch only
    EXPECT_EQ(step->graphGpuNs, 80u);      // its standalone time in each of the two graph launches
    EXPECT_EQ(step->estimatedGpuNs, 120u);
    EXPECT_EQ(norm->count, 3u);
    EXPECT_EQ(norm->graphCount, 3u);
    EXPECT_EQ(norm->timedCount, 0u);
    EXPECT_EQ(norm->graphGpuNs, 60u);      // an even share of the rest (100 - 40) with the copy, twice
    EXPECT_EQ(norm->estimatedGpuNs, 60u);
    // The graph launch's call site is among the nodes' sites (norm's only one).
    auto hasSite = [&](const std::vector<uint32_t>& ids) {
        for (uint32_t id : ids)
            if (r.callsites[id].label.find("decode_loop") != std::string::npos) return true;
        return false;
    };
    EXPECT_TRUE(hasSite(step->callsites));
    ASSERT_EQ(norm->callsites.size(), 1u);
    EXPECT_TRUE(hasSite(norm->callsites));
    const TransferRow* g = transferOf(r, "HtoD", "pinned", "graph");
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->count, 2u);
    EXPECT_EQ(g->bytes, 8 * KiB);
    EXPECT_EQ(g->graphCount, 2u);
    EXPECT_EQ(g->graphGpuNs, 60u);
    EXPECT_EQ(g->gpuNs, 0u);
    EXPECT_EQ(g->gbpsBasis, "graph_estimate");
    EXPECT_DOUBLE_EQ(g->gbps, 8.0 * KiB / 60.0);
    EXPECT_EQ(g->apis, std::vector<std::string>{"cuMemcpyHtoDAsync_v2"});
    EXPECT_EQ(transferOf(r, "HtoD", "pinned", "async"), nullptr);  // the captured copy itself ran nothing
}

TEST(Analyze, SyncsExplicitImplicitAndPolling)
{
    ProcBuilder b;
    b.launch(0, 0, 10, 20, 80);  // GPU busy [20,80)
    b.call("cuCtxSynchronize", Category::Sync, 10, 100);  // blocked 90, GPU busy 60 of it
    b.call("cuStreamQuery", Category::Sync, 100, 101, 0, 0, 600);
    b.call("cuStreamQuery", Category::Sync, 101, 102, 0, 0, 600);
    b.call("cuStreamQuery", Category::Sync, 102, 103, 0, 0, 0);
    b.call("cuMemFree_v2", Category::Alloc, 200, 250, wire::kCallImplicitSync).args.alloc.ptr = 0xd000;
    b.call("cuMemFree_v2", Category::Alloc, 250, 255, wire::kCallImplicitSync);  // cudaFree(nullptr): no wait
    b.call("cuStreamWaitEvent", Category::Sync, 260, 261);  // no host wait
    b.copy("cuMemcpyDtoH_v2", Direction::DtoH, MemKind::Device, MemKind::Pageable, 100, 300, 340, false, 310, 320);
    b.copy("cuMemsetD8_v2", Direction::Memset, MemKind::Unknown, MemKind::Device, 64, 400, 410, false);
    b.p.calls.back().flags &= uint16_t(~wire::kCallImplicitSync);
    b.copy("cuMemsetD8Async", Direction::Memset, MemKind::Unknown, MemKind::Device, 64, 420, 430, true);
    const Report r = analyze(b.capture(), {});
    const SyncRow* ctx = syncOf(r, "cuCtxSynchronize");
    ASSERT_TRUE(ctx);
    EXPECT_FALSE(ctx->implicit);
    EXPECT_EQ(ctx->kind, "context");
    EXPECT_EQ(ctx->display, "cuCtxSynchronize (cudaDeviceSynchronize)");
    EXPECT_EQ(ctx->count, 1u);
    EXPECT_EQ(ctx->blockedNs, 90u);
    EXPECT_EQ(ctx->gpuBusyNs, 60u);
    const SyncRow* q = syncOf(r, "cuStreamQuery");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->count, 3u);
    EXPECT_EQ(q->notReady, 2u);
    const SyncRow* fr = syncOf(r, "cuMemFree_v2");
    ASSERT_TRUE(fr);
    EXPECT_TRUE(fr->implicit);
    EXPECT_EQ(fr->kind, "free");
    EXPECT_EQ(fr->blockedNs, 50u);
    EXPECT_EQ(fr->gpuBusyNs, 0u);
    const SyncRow* cp = syncOf(r, "cuMemcpyDtoH_v2");
    ASSERT_TRUE(cp);
    EXPECT_TRUE(cp->implicit);
    EXPECT_EQ(cp->kind, "copy");
    EXPECT_EQ(cp->gpuBusyNs, 10u);
    EXPECT_FALSE(syncOf(r, "cuStreamWaitEvent"));
    const SyncRow* ms = syncOf(r, "cuMemsetD8_v2");  // synchronous memset, even unflagged
    ASSERT_TRUE(ms);
    EXPECT_EQ(ms->kind, "memset");
    EXPECT_TRUE(ms->implicit);
    EXPECT_FALSE(syncOf(r, "cuMemsetD8Async"));
    // A NOT_READY poll is not an error in the API table.
    for (const ApiRow& a : r.apis)
        if (a.api == "cuStreamQuery") {
            EXPECT_EQ(a.errors, 0u);
        }
}

TEST(Analyze, CallSitesSkipCudaFramesAndFallBackToModuleOffset)
{
    ProcBuilder b;
    const uint32_t s = b.site("main", 42);
    // A stack without symbols: module+offset of the first frame outside CUDA's libraries.
    b.p.stacks[99] = {0x7f0000000200, 0x401234};
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 10, 0, 10, false, 0, 0, s);
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 10, 10, 30, false, 0, 0, s);
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 10, 30, 35, false, 0, 0, 99);
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 10, 40, 41, false);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.callsites.size(), 3u);
    const CallSite& top = r.callsites[0];
    EXPECT_EQ(top.id, 0u);
    EXPECT_EQ(top.label, "main (app.cu:42)");
    EXPECT_EQ(top.category, "transfer");
    EXPECT_EQ(top.count, 2u);
    EXPECT_EQ(top.ns, 30u);
    ASSERT_EQ(top.frames.size(), 3u);
    EXPECT_FALSE(top.frames[0].app);
    EXPECT_EQ(top.siteFrame, 1u);
    EXPECT_EQ(top.frames[1].file, "/src/app.cu");
    EXPECT_EQ(r.callsites[1].label, "app+0x1234");
    EXPECT_EQ(r.callsites[2].label, "(no stack)");
    ASSERT_EQ(r.transfers.size(), 1u);
    EXPECT_EQ(r.transfers[0].callsites, (std::vector<uint32_t>{0, 1, 2}));
}

TEST(Analyze, KernelLaunchStubIsNotTheCallSite)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z13process_chunkPKfPfi";
    const uint64_t cudart = 0x7f0000000300, stub = 0x401500, kernelStub = 0x401600, caller = 0x401700;
    b.p.stacks[1] = {cudart, stub, kernelStub, caller};
    b.p.symbols[cudart] = {Frame{cudart, "cudart::cudaApiLaunchKernel", "", 0, "/usr/lib/libcudart.so.12", 0x300, false}};
    b.p.symbols[stub] = {Frame{stub, "__device_stub__Z13process_chunkPKfPfi(float const*, float*, int)",
                               "/tmp/tmpxft_0001.cudafe1.stub.c", 3, "/work/app", 0x1500, false}};
    b.p.symbols[kernelStub] = {Frame{kernelStub, "process_chunk(float const*, float*, int)", "/src/app.cu", 9, "/work/app", 0x1600, false}};
    b.p.symbols[caller] = {Frame{caller, "run()", "/src/app.cu", 30, "/work/app", 0x1700, true},
                           Frame{caller, "main", "/src/app.cu", 50, "/work/app", 0x1700, false}};
    b.launch(1, 0, 10, 10, 20, 1);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.callsites.size(), 1u);
    EXPECT_EQ(r.callsites[0].label, "run() (app.cu:30)");  // the inlined frame comes first
    EXPECT_EQ(r.callsites[0].category, "launch");
    EXPECT_EQ(r.callsites[0].frames.size(), 5u);
}

// A CUDA call from inside one of NVIDIA's libraries: the site is the app's frame, and it names the
// library call the app made (the library frame nearest the site), shared or linked in.
TEST(Analyze, CallSiteNamesTheLibraryCallBelowIt)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4gemmPf";
    const uint64_t driver = 0x7f0000000300, inner = 0x7f1000001000, entry = 0x7f1000002000, app = 0x401700;
    b.p.stacks[1] = {driver, inner, entry, app};
    b.p.symbols[driver] = {Frame{driver, "", "", 0, "/usr/lib/libcuda.so.1", 0x300, false}};
    b.p.symbols[inner] = {Frame{inner, "", "", 0, "/usr/local/cuda/lib64/libcublasLt.so.13", 0x1000, false}};
    b.p.symbols[entry] = {Frame{entry, "cublasSgemm_v2", "", 0, "/usr/local/cuda/lib64/libcublas.so.13", 0x2000, false}};
    b.p.symbols[app] = {Frame{app, "main", "/src/gemm.cu", 41, "/work/gemm", 0x1700, false}};
    b.launch(1, 0, 10, 10, 20, 1);
    // Linked in statically: the library's functions are the app binary's, known by their prefix.
    const uint64_t sEntry = 0x402000, sHelper = 0x402100, sApp = 0x402200;
    b.p.stacks[2] = {driver, sEntry, sHelper, sApp};
    b.p.symbols[sEntry] = {Frame{sEntry, "ncclAllReduce", "", 0, "/work/gemm", 0x2000, false}};
    b.p.symbols[sHelper] = {Frame{sHelper, "nccl_helper(int)", "/src/gemm.cu", 60, "/work/gemm", 0x2100, false}};
    b.p.symbols[sApp] = {Frame{sApp, "main", "/src/gemm.cu", 70, "/work/gemm", 0x2200, false}};
    b.launch(1, 30, 40, 40, 50, 2);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.callsites.size(), 2u);
    std::set<std::string> labels;
    for (const CallSite& s : r.callsites) labels.insert(s.label);
    EXPECT_TRUE(labels.count("main (gemm.cu:41) \u2192 cublasSgemm (libcublas.so.13)")) << *labels.begin();
    // ncclAllReduce is the app's own binary's, but NCCL's by name; nccl_helper is the user's (lowercase).
    EXPECT_TRUE(labels.count("nccl_helper(int) (gemm.cu:60) \u2192 ncclAllReduce (NCCL, linked in)")) << *labels.rbegin();
}

// Copies a library makes inside its own call (issue 28): a site through libcusolver is the library's.
uint32_t librarySite(ProcBuilder& b, const std::string& libraryFunction, uint32_t line)
{
    const uint32_t id = uint32_t(b.p.stacks.size() + 1);
    const uint64_t rt = 0x7f0000000100 + id * 16, lib = 0x7f2000000000 + id * 16, app = 0x401000 + id * 16;
    b.p.stacks[id] = {rt, lib, app};
    b.p.symbols[rt] = {Frame{rt, "cudaMemcpy", "", 0, "/usr/lib/libcudart.so.13", rt - 0x7f0000000000, false}};
    b.p.symbols[lib] = {Frame{lib, libraryFunction, "", 0, "/usr/lib/libcusolver.so.12", lib - 0x7f2000000000, false}};
    b.p.symbols[app] = {Frame{app, "main", "/src/app.cu", line, "/work/app", app - 0x400000, false}};
    return id;
}

void pageableCopies(ProcBuilder& b, uint32_t site, int n, uint64_t& t)
{
    constexpr uint64_t us = 1000;
    for (int i = 0; i < n; ++i) {
        b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, t, t + 300 * us, false,
               t + 100 * us, t + 300 * us, site);
        t += 400 * us;
    }
}

TEST(Findings, CopiesALibraryMadeAreNotTheUsersToChange)
{
    constexpr uint64_t us = 1000;
    ProcBuilder b;
    const uint32_t pinnedSite = b.site("warmup", 10);
    b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 0, 5 * us, true, 10 * us,
           60 * us, pinnedSite);
    uint64_t t = 100 * us;
    pageableCopies(b, librarySite(b, "cusolverDnSsyevd", 30), 10, t);
    const Report r = analyze(b.capture(), {});
    const Finding* pg = findingOf(r, "pageable-memcpy");
    ASSERT_TRUE(pg);
    EXPECT_EQ(pg->severity, "info");
    EXPECT_EQ(pg->estimatedSavingsNs, 0u);
    EXPECT_TRUE(pg->stacks.empty());  // nothing for the replay to change
    EXPECT_NE(pg->message.find("not by your code: cusolverDnSsyevd (libcusolver.so.12)"), std::string::npos) << pg->message;
    EXPECT_EQ(pg->message.find("cudaMallocHost"), std::string::npos) << pg->message;
    ASSERT_FALSE(pg->callsites.empty());
    EXPECT_EQ(r.callsites[pg->callsites[0]].libraryCall, "cusolverDnSsyevd (libcusolver.so.12)");

    // Half the copies the user's own: the saving counts those (half of the formula's), the replay only them.
    ProcBuilder mixed;
    const uint32_t pinned2 = mixed.site("warmup", 10);
    mixed.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 0, 5 * us, true, 10 * us,
               60 * us, pinned2);
    t = 100 * us;
    const uint32_t own = mixed.site("copy_loop", 25);
    pageableCopies(mixed, own, 10, t);
    pageableCopies(mixed, librarySite(mixed, "cusolverDnSsyevd", 30), 10, t);
    const Report m = analyze(mixed.capture(), {});
    const Finding* half = findingOf(m, "pageable-memcpy");
    ASSERT_TRUE(half);
    // 20 copies of 200 us against 50 us pinned: 3000 us by the formula, 1500 us of it the user's.
    EXPECT_EQ(half->estimatedSavingsNs, 1500 * us);
    ASSERT_EQ(half->stacks.size(), 1u);
    EXPECT_EQ(half->stacks[0].second, own);
    EXPECT_NE(half->message.find("(50%) was inside library calls"), std::string::npos) << half->message;
}

TEST(Analyze, StaticRuntimeFramesSkippedButUserCudaNamedFunctionsKept)
{
    ProcBuilder b;
    const uint64_t rt = 0x401100, user = 0x401200, caller = 0x401300;
    b.p.stacks[1] = {rt, user, caller};
    b.p.symbols[rt] = {Frame{rt, "cudaMemcpy", "", 0, "/work/app", 0x1100, false}};  // static cudart: no lines
    b.p.symbols[user] = {Frame{user, "cudaCheckedCopy(void*, void const*, unsigned long)", "/src/util.cu", 17,
                               "/work/app", 0x1200, false}};
    b.p.symbols[caller] = {Frame{caller, "main", "/src/app.cu", 5, "/work/app", 0x1300, false}};
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 10, 0, 10, false, 0, 0, 1);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.callsites.size(), 1u);
    EXPECT_EQ(r.callsites[0].label, "cudaCheckedCopy(void*, void const*, unsigned long) (util.cu:17)");
    EXPECT_EQ(r.callsites[0].siteFrame, 1u);
}

TEST(Analyze, NvtxRangesInclusive)
{
    ProcBuilder b;
    b.p.strings[1] = "step";
    b.p.strings[2] = "load";
    auto nvtx = [&](wire::NvtxKind k, uint64_t t, uint32_t msg, uint32_t tid = 1, uint64_t id = 0) {
        wire::NvtxBody n{};
        n.kind = k;
        n.timeNs = t;
        n.messageId = msg;
        n.tid = tid;
        n.rangeId = id;
        b.p.nvtx.push_back(n);
    };
    nvtx(wire::NvtxKind::Push, 0, 1);
    nvtx(wire::NvtxKind::Push, 10, 2);
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 1000, 20, 30, false, 22, 28);
    nvtx(wire::NvtxKind::Pop, 40, 0);
    b.launch(0, 50, 55, 60, 70);
    b.call("cuCtxSynchronize", Category::Sync, 55, 80);
    b.call("cuCtxSynchronize", Category::Sync, 56, 57, 0, 0, 0, /*tid=*/2);  // another thread: outside
    nvtx(wire::NvtxKind::Pop, 90, 0);
    nvtx(wire::NvtxKind::Start, 100, 1, 7, 5);  // process-wide: same name, counted once per call
    b.launch(0, 110, 115, 0, 0, 0, 0);
    b.p.calls.back().tid = 3;
    nvtx(wire::NvtxKind::End, 120, 0, 9, 5);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.nvtx.size(), 2u);
    const NvtxRow& step = r.nvtx[0];
    EXPECT_EQ(step.name, "step");
    EXPECT_EQ(step.ranges, 2u);
    EXPECT_EQ(step.rangeNs, 90u + 20);
    EXPECT_EQ(step.calls, 4u);
    EXPECT_EQ(step.transfers, 1u);
    EXPECT_EQ(step.transferBytes, 1000u);
    EXPECT_EQ(step.launches, 2u);
    EXPECT_EQ(step.syncs, 2u);  // the copy (implicit) and the context sync
    EXPECT_EQ(step.syncBlockedNs, 10u + 25);
    EXPECT_EQ(step.gpuNs, 6u + 10);
    // The synchronous copy blocked on an idle stream: its 6 ns are only an upper bound.
    EXPECT_EQ(step.upperBoundCount, 1u);
    EXPECT_EQ(step.upperBoundGpuNs, 6u);
    const NvtxRow& load = r.nvtx[1];
    EXPECT_EQ(load.name, "load");
    EXPECT_EQ(load.calls, 1u);
    EXPECT_EQ(load.cudaApiNs, 10u);
    EXPECT_EQ(load.upperBoundCount, 1u);

    const nlohmann::ordered_json j = reportJson(r);
    EXPECT_EQ(j["nvtx"][0]["upper_bound_count"], 1);
    EXPECT_EQ(j["nvtx"][0]["upper_bound_gpu_ns"], 6);
    const std::string text = renderText(r, TextOptions{});
    const size_t table = text.find("NVTX ranges");
    ASSERT_NE(table, std::string::npos) << text;
    EXPECT_NE(text.find("<=16 ns", table), std::string::npos) << text;  // step's GPU time, marked
    EXPECT_NE(text.find("<= upper bound", table), std::string::npos) << text;
}

// NVTX rows whose calls all have measured GPU times carry no mark.
TEST(Analyze, NvtxGpuTimeMeasuredIsNotMarked)
{
    ProcBuilder b;
    b.p.strings[1] = "step";
    wire::NvtxBody n{};
    n.kind = wire::NvtxKind::Push;
    n.messageId = 1;
    n.tid = 1;
    b.p.nvtx.push_back(n);
    b.launch(0, 50, 55, 60, 70);
    n.kind = wire::NvtxKind::Pop;
    n.timeNs = 90;
    b.p.nvtx.push_back(n);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.nvtx.size(), 1u);
    EXPECT_EQ(r.nvtx[0].gpuNs, 10u);
    EXPECT_EQ(r.nvtx[0].upperBoundCount, 0u);
    const std::string text = renderText(r, TextOptions{});
    EXPECT_EQ(text.find("<=", text.find("NVTX ranges")), std::string::npos) << text;
}

TEST(Analyze, BusyPerDeviceAndSyncOverlapOnItsOwnDevice)
{
    ProcBuilder b;
    b.p.devices[1] = "Second GPU";
    b.launch(0, 0, 10, 10, 110);  // device 0 busy [10,110)
    const uint64_t seq = b.launch(0, 10, 20, 0, 0);
    b.p.calls.back().device = 1;
    b.p.calls.back().flags |= wire::kCallGpuTimed;
    b.span(seq, 150, 200, 1);  // device 1 busy [150,200)
    wire::CallBody& sync = b.call("cuCtxSynchronize", Category::Sync, 100, 200);
    sync.device = 1;
    b.copy("cuMemcpyPeer", Direction::PtoP, MemKind::Device, MemKind::Device, 1000, 200, 210, false, 200, 210);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.devices.size(), 2u);
    EXPECT_EQ(r.devices[0].busyNs, 100u + 10);
    // The peer copy's span is only an upper bound (it blocked on an idle stream): the interval's low
    // end counts none of it.
    EXPECT_EQ(r.devices[0].busyBasis, "upper_bound");
    EXPECT_EQ(r.devices[0].busyLoNs, 100u);
    EXPECT_EQ(r.devices[0].busyHiNs, 110u);
    EXPECT_EQ(r.devices[1].id, 1);
    EXPECT_EQ(r.devices[1].name, "Second GPU");
    EXPECT_EQ(r.devices[1].busyNs, 50u);
    EXPECT_DOUBLE_EQ(r.devices[1].busyPct, 100.0 * 50 / 210);
    const SyncRow* s = syncOf(r, "cuCtxSynchronize");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->gpuBusyNs, 50u);  // device 1 only, not device 0's [100,110)
    EXPECT_TRUE(transferOf(r, "PtoP", "device", "sync"));
}

// A thread that waits on its own stream for long (descheduled, or blocked behind its own work) while
// other threads launch: the GPU's busy time during the wait counts their work too, though their calls
// begin after the wait's (they are placed on the timeline later than the wait is).
TEST(Analyze, WaitCountsWorkOtherThreadsSubmitWhileItWaits)
{
    ProcBuilder b;
    wire::CallBody& sync = b.call("cuStreamSynchronize", Category::Sync, 100, 10000, 0, 0, 0, /*tid=*/1);
    sync.stream = 0x51;
    b.launch(0, 2000, 2010, 2010, 5010);  // thread 2, its own stream: GPU [2010,5010) inside the wait
    b.p.calls.back().tid = 2;
    b.p.calls.back().stream = 0x52;
    b.launch(0, 9000, 9010, 9010, 12010);  // [9010,12010): 990 ns of it inside the wait
    b.p.calls.back().tid = 2;
    b.p.calls.back().stream = 0x52;
    b.call("cuStreamSynchronize", Category::Sync, 12020, 12030, 0, 0, 0, 2).stream = 0x52;
    const Report r = analyze(b.capture(), {});
    const SyncRow* s = syncOf(r, "cuStreamSynchronize");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->count, 2u);
    EXPECT_EQ(s->blockedNs, 9900u + 10);
    EXPECT_EQ(s->gpuBusyNs, 3000u + 990);  // the second wait began after the last kernel ended
}

TEST(Analyze, ProcessFilter)
{
    ProcBuilder a(1), c(2);
    a.launch(0, 0, 10, 10, 20);
    c.launch(0, 0, 10, 10, 20);
    c.launch(0, 20, 30, 30, 40);
    Capture cap;
    cap.processes = {a.p, c.p};
    ReportOptions o;
    EXPECT_EQ(analyze(cap, o).launches.count, 3u);
    o.pid = 2;
    const Report r = analyze(cap, o);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].pid, 2u);
    EXPECT_EQ(r.launches.count, 2u);
}

// ---- findings

TEST(Findings, PageableAndSyncMemcpy)
{
    ProcBuilder b;
    const uint32_t s = b.site("copy_loop", 25);
    const uint32_t pinnedSite = b.site("warmup", 10);
    constexpr uint64_t us = 1000;
    // One pinned async copy measures pinned bandwidth: 1 MiB in 50 us.
    b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 0, 5 * us, true, 10 * us,
           60 * us, pinnedSite);
    uint64_t t = 100 * us;
    for (int i = 0; i < 10; ++i) {
        // Host 300 us: waits 100 us for a kernel (so the span, starting then, is measured), then the copy
        // runs 200 us on the GPU.
        b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, t, t + 300 * us, false,
               t + 100 * us, t + 300 * us, s);
        t += 400 * us;
    }
    const Report r = analyze(b.capture(), {});
    const Finding* pg = findingOf(r, "pageable-memcpy");
    ASSERT_TRUE(pg);
    EXPECT_EQ(pg->count, 10u);
    // Pageable GPU time 2000 us; at the pinned 1 MiB/50 us the copies would take 500 us.
    EXPECT_EQ(pg->estimatedSavingsNs, 1500 * us);
    EXPECT_NE(pg->message.find("pinned"), std::string::npos);
    EXPECT_NE(pg->message.find("assuming"), std::string::npos);
    EXPECT_NE(pg->message.find("(measured)"), std::string::npos) << pg->message;
    // Every GPU time here is measured: no bound in the wording.
    EXPECT_EQ(pg->message.find("at most"), std::string::npos) << pg->message;
    EXPECT_EQ(pg->message.find("at least"), std::string::npos) << pg->message;
    ASSERT_FALSE(pg->callsites.empty());
    EXPECT_EQ(r.callsites[pg->callsites[0]].label, "copy_loop (app.cu:25)");
    const Finding* sy = findingOf(r, "sync-memcpy");
    ASSERT_TRUE(sy);
    EXPECT_EQ(sy->count, 10u);
    // Host 3000 us - GPU 2000 us over the 10 copies.
    EXPECT_EQ(sy->estimatedSavingsNs, 1000 * us);
    EXPECT_EQ(sy->message.find("at least"), std::string::npos) << sy->message;
    EXPECT_EQ(sy->message.find("at most"), std::string::npos) << sy->message;
    EXPECT_FALSE(findingOf(r, "pageable-async-memcpy"));
    // The two cover the same ten copies: each says so, and together they save the larger, not the sum.
    EXPECT_EQ(pg->overlaps, std::vector<std::string>{"sync-memcpy"});
    EXPECT_EQ(sy->overlaps, std::vector<std::string>{"pageable-memcpy"});
    uint64_t sum = 0;
    for (const Finding& f : r.findings) sum += f.estimatedSavingsNs;
    EXPECT_EQ(combinedSavingsNs(r.findings), sum - sy->estimatedSavingsNs);  // the other findings add
}

// Findings that share a call site (pid, stack) overlap; a chain of overlaps is one group, counted once by
// its largest saving; findings on other calls add.
TEST(Findings, OverlapsCountedOnce)
{
    auto finding = [](std::string rule, uint64_t saving, std::vector<std::pair<uint32_t, uint32_t>> stacks) {
        Finding f;
        f.rule = std::move(rule);
        f.estimatedSavingsNs = saving;
        f.stacks = std::move(stacks);
        return f;
    };
    std::vector<Finding> fs{finding("a", 100, {{1, 7}, {1, 9}}), finding("b", 300, {{1, 9}}),
                            finding("c", 50, {{2, 9}, {1, 3}}), finding("d", 20, {{1, 3}}), finding("e", 5, {})};
    markOverlappingFindings(fs);
    EXPECT_EQ(fs[0].overlaps, std::vector<std::string>{"b"});
    EXPECT_EQ(fs[1].overlaps, std::vector<std::string>{"a"});
    EXPECT_EQ(fs[2].overlaps, std::vector<std::string>{"d"});  // stack 9 of another pid is another call site
    EXPECT_TRUE(fs[4].overlaps.empty());
    // {a, b}: 300; {c, d}: 50; e: 5.
    EXPECT_EQ(combinedSavingsNs(fs), 355u);
}

// Blocking copies on an idle stream (collector/README.md, "GPU time sources"): their GPU times are
// upper bounds. The bandwidth is then a lower bound, pageable-memcpy's saving an upper bound, and
// sync-memcpy's saving (host time beyond the copy) a lower bound; each copy counts as long as the
// shortest bound among the copies alike, and the GPU's busy share while they blocked is at most.
TEST(Findings, CopiesWithBoundedGpuTimesSayAtMostAndAtLeast)
{
    ProcBuilder b;
    constexpr uint64_t us = 1000;
    uint64_t t = 0, hostSum = 0, boundSum = 0;
    for (int i = 0; i < 10; ++i) {
        // The span starts 1 us after the call began and ends at its return: 200 us, or longer when the
        // host was slow (the driver's host time is in the span).
        const uint64_t len = (i % 2 ? 200 : 400) * us;
        b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, t, t + len + us, false,
               t + us, t + len + us);
        hostSum += len + us;
        boundSum += len;
        t += 1000 * us;
    }
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.transfers.size(), 1u);
    EXPECT_EQ(r.transfers[0].upperBoundCount, 10u);

    const Finding* pg = findingOf(r, "pageable-memcpy");
    ASSERT_TRUE(pg);
    // No pinned copies: pinned memory is assumed to double the bandwidth, of copies each at most 200 us.
    // The saving is at most what that doubling gives, no bound on what pinned memory gives (its true
    // ratio may be larger): an estimate.
    EXPECT_EQ(pg->estimatedSavingsNs, 10 * 200 * us / 2);
    EXPECT_EQ(pg->savingsBound, "estimate");
    EXPECT_NE(pg->message.find("reaching at least"), std::string::npos) << pg->message;
    EXPECT_EQ(pg->message.find("Estimated saving at most"), std::string::npos) << pg->message;
    EXPECT_NE(pg->message.find("at most what that doubling would give"), std::string::npos) << pg->message;
    EXPECT_NE(pg->message.find("upper bounds"), std::string::npos) << pg->message;
    EXPECT_NE(pg->message.find("doubles"), std::string::npos) << pg->message;
    const auto evidence = [](const Finding& f, const std::string& name) {
        for (const auto& [k, v] : f.evidence)
            if (k == name) return v;
        return -1.0;
    };
    EXPECT_EQ(evidence(*pg, "upper_bound_copies"), 10.0);
    EXPECT_EQ(evidence(*pg, "upper_bound_gpu_ns"), double(boundSum));
    EXPECT_EQ(evidence(*pg, "pinned_bandwidth_assumed"), 1.0);

    const Finding* sy = findingOf(r, "sync-memcpy");
    ASSERT_TRUE(sy);
    EXPECT_EQ(sy->estimatedSavingsNs, hostSum - 10 * 200 * us);
    EXPECT_NE(sy->message.find("Estimated saving at least"), std::string::npos) << sy->message;
    EXPECT_NE(sy->message.find("busy at most"), std::string::npos) << sy->message;
    EXPECT_NE(sy->message.find("lower bound"), std::string::npos) << sy->message;
    EXPECT_EQ(evidence(*sy, "upper_bound_tight_gpu_ns"), double(10 * 200 * us));
}

// The reference pinned bandwidth comes from pinned copies with a measured GPU time only: a blocking
// pinned copy's rate is a lower bound. Without a measured one, the documented default is used and the
// text says why.
TEST(Findings, PinnedReferenceFromMeasuredCopiesOnly)
{
    constexpr uint64_t us = 1000;
    auto build = [&](bool withAsync) {
        ProcBuilder b;
        // A synchronous pinned copy on an idle stream: its 500 us span is only an upper bound.
        b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 0, 501 * us, false, us,
               501 * us);
        // An async pinned copy, measured: 1 MiB in 50 us.
        if (withAsync)
            b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 600 * us, 605 * us,
                   true, 610 * us, 660 * us);
        uint64_t t = 1000 * us;
        for (int i = 0; i < 10; ++i, t += 400 * us)
            b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, t, t + 300 * us, false,
                   t + 100 * us, t + 300 * us);
        return analyze(b.capture(), {});
    };
    const Report measured = build(true);
    const Finding* pg = findingOf(measured, "pageable-memcpy");
    ASSERT_TRUE(pg);
    EXPECT_EQ(pg->estimatedSavingsNs, 10 * (200 - 50) * us);  // the async copy's 50 us, not the sync one's 500
    EXPECT_NE(pg->message.find("(measured)"), std::string::npos) << pg->message;

    const Report bounded = build(false);
    pg = findingOf(bounded, "pageable-memcpy");
    ASSERT_TRUE(pg);
    EXPECT_EQ(pg->estimatedSavingsNs, 10 * 200 * us / 2);
    EXPECT_NE(pg->message.find("doubles"), std::string::npos) << pg->message;
    EXPECT_NE(pg->message.find("only pinned HtoD copies that blocked"), std::string::npos) << pg->message;
}

TEST(Findings, PageableMemcpyWithoutPinnedReferenceStatesAssumption)
{
    ProcBuilder b;
    for (int i = 0; i < 8; ++i)
        b.copy("cuMemcpyDtoH_v2", Direction::DtoH, MemKind::Device, MemKind::Pageable, MiB, i * 100, i * 100 + 50,
               false, i * 100, i * 100 + 40);
    const Report r = analyze(b.capture(), {});
    const Finding* pg = findingOf(r, "pageable-memcpy");
    ASSERT_TRUE(pg);
    EXPECT_EQ(pg->estimatedSavingsNs, 8u * 40 / 2);
    EXPECT_NE(pg->message.find("doubles"), std::string::npos);
    EXPECT_NE(pg->message.find("no timed pinned DtoH copies"), std::string::npos) << pg->message;
}

TEST(Findings, PageableAsyncMemcpy)
{
    ProcBuilder b;
    b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 0, 5, true, 10, 60);
    for (int i = 0; i < 3; ++i)
        b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, 100 + i * 200,
               100 + i * 200 + 105, true, 100 + i * 200, 100 + i * 200 + 100, 0, wire::kCallImplicitSync);
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "pageable-async-memcpy");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 3u);
    EXPECT_EQ(f->estimatedSavingsNs, 3u * 105 - 3 * 5);  // the pinned async copy's 5 ns as the reference
    EXPECT_FALSE(findingOf(r, "sync-memcpy"));

    // Named by the call the program made (issue 28: a cudaMemcpy2DAsync read "cudaMemcpyAsync").
    ProcBuilder twoD;
    const uint32_t site = twoD.site("upload_rows", 12);
    twoD.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, 0, 5, true, 10, 60);
    for (int i = 0; i < 3; ++i)
        twoD.copy("cuMemcpy2DAsync_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, 100 + i * 200,
                  100 + i * 200 + 105, true, 100 + i * 200, 100 + i * 200 + 100, site, wire::kCallImplicitSync);
    const Report r2 = analyze(twoD.capture(), {});
    const Finding* f2 = findingOf(r2, "pageable-async-memcpy");
    ASSERT_TRUE(f2);
    EXPECT_EQ(f2->message.rfind("3 cudaMemcpy2DAsync calls on pageable host memory", 0), 0u) << f2->message;
}

TEST(Findings, SmallTransfers)
{
    ProcBuilder b;
    const uint32_t s = b.site("upload_params", 7);
    for (int i = 0; i < 100; ++i)
        b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 4 * KiB, i * 10, i * 10 + 3,
               true, i * 10 + 3, i * 10 + 5, s);
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "small-transfers");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 100u);
    // All but one copy, each the longer of its median GPU time (2) and its call's mean host time (3).
    EXPECT_EQ(f->estimatedSavingsNs, 99u * 3);
    // 63 are not many.
    ProcBuilder few;
    for (int i = 0; i < 63; ++i)
        few.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, KiB, i * 10, i * 10 + 3, true);
    EXPECT_FALSE(findingOf(analyze(few.capture(), {}), "small-transfers"));
}

// Small synchronous copies on an idle stream have only upper bounds for GPU times: the fixed cost of a
// copy is then their mean host time, and the finding says why.
TEST(Findings, SmallTransfersWithBoundedGpuTimesUseHostTime)
{
    ProcBuilder b;
    for (int i = 0; i < 100; ++i)
        b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 4 * KiB, i * 10, i * 10 + 7,
               false, i * 10 + 1, i * 10 + 7);
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "small-transfers");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->estimatedSavingsNs, 99u * 7);  // all but one copy, each its mean host time
    EXPECT_NE(f->message.find("mean host time"), std::string::npos) << f->message;
    EXPECT_NE(f->message.find("upper bounds"), std::string::npos) << f->message;
}

TEST(Findings, LaunchBoundKernels)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4tinyPi";
    const uint32_t s = b.site("loop", 12);
    for (int i = 0; i < 20; ++i) b.launch(1, i * 10, i * 10 + 8, i * 10 + 9, i * 10 + 10, s);
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "launch-bound-kernels");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 20u);
    EXPECT_EQ(f->estimatedSavingsNs, 20u * (8 - 1));
    EXPECT_NE(f->message.find("tiny(int*)"), std::string::npos);
    EXPECT_NE(f->message.find("CUDA graph"), std::string::npos);
    EXPECT_EQ(r.callsites[f->callsites.at(0)].label, "loop (app.cu:12)");
}

TEST(Findings, LaunchBoundSavingsUseTheProgramsOwnGraphCost)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4tinyPi";
    b.p.kernels[2] = "_Z4nodePi";
    const uint32_t s = b.site("loop", 12);
    for (int i = 0; i < 20; ++i) b.launch(1, i * 10, i * 10 + 8, i * 10 + 9, i * 10 + 10, s);
    // The same program launches a captured graph of two kernels: 6 ns of host time per launch, 3 a node.
    const uint64_t graph = 0x6000, exec = 0xe000;
    auto graphCall = [&](const std::string& name, uint64_t t, uint64_t a0, uint64_t a1) {
        wire::CallBody& c = b.call(name, Category::Graph, t, t + 5);
        c.args.raw[0] = a0;
        c.args.raw[1] = a1;
    };
    graphCall("cuStreamBeginCapture_v2", 300, 0, 0);
    for (int i = 0; i < 2; ++i) {
        b.launch(2, 310 + i * 5, 312 + i * 5, 0, 0, 0, wire::kCallCapturing);
        b.p.calls.back().args.raw[wire::kCaptureGraphSlot] = graph;
    }
    graphCall("cuStreamEndCapture", 330, graph, 0);
    graphCall("cuGraphInstantiateWithFlags", 340, exec, graph);
    for (uint64_t t = 400; t < 500; t += 20) {
        wire::CallBody& c = b.call("cuGraphLaunch", Category::Graph, t, t + 6, uint16_t(wire::kCallDeviceWork | wire::kCallAsync));
        c.args.sync.object = exec;
    }
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.launches.graphNodes, 10u);
    const Finding* f = findingOf(r, "launch-bound-kernels");
    ASSERT_TRUE(f);
    // A kernel's launch comes down to the graphs' 3 ns a node at best, not to its 1 ns of GPU time.
    EXPECT_EQ(f->estimatedSavingsNs, 20u * (8 - 3));
    EXPECT_NE(f->message.find("graph launches already cost the host 3 ns per node"), std::string::npos) << f->message;
}

// A heavy tail of slow launches (a host descheduled mid-launch) is saved too when the launches go: the
// estimate takes the mean launch cost, not the median (tests/savings: a graph saved 400 ms where the
// median gave 14 ms).
TEST(Findings, LaunchBoundKernelsCountTheSlowLaunchesToo)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4tinyPi";
    const uint32_t s = b.site("loop", 12);
    for (uint64_t i = 0; i < 20; ++i) {
        const uint64_t t = i * 2000, cost = i == 10 ? 1000 : 8;
        b.launch(1, t, t + cost, t + cost + 1, t + cost + 2, s);
    }
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "launch-bound-kernels");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->estimatedSavingsNs, 20u * ((19 * 8 + 1000) / 20 - 1));  // mean 57 ns, GPU 1 ns; median would give 140
    EXPECT_NE(f->message.find("its mean"), std::string::npos) << f->message;
}

TEST(Findings, GpuIdleAndStarved)
{
    ProcBuilder b;
    // Short kernels, the host outside CUDA for ~1 us between them (loading the next batch).
    for (uint64_t t = 0; t < 5000; t += 1000) b.launch(0, t, t + 10, t + 10, t + 20);
    b.call("cuCtxSynchronize", Category::Sync, 4010, 4020);
    const Report r = analyze(b.capture(), {});
    const Finding* idle = findingOf(r, "gpu-idle");
    ASSERT_TRUE(idle);
    EXPECT_EQ(idle->estimatedSavingsNs, 0u);
    ASSERT_EQ(r.devices.size(), 1u);
    // Each gap [t+20, t+1010) less the next launch call [t+1000, t+1010).
    EXPECT_EQ(r.devices[0].starvedNs, 4u * 980);
    EXPECT_EQ(r.devices[0].largestStarvedNs, 980u);
    const Finding* st = findingOf(r, "gpu-starved");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->estimatedSavingsNs, 3u * 980);  // the longest single pause does not count
    EXPECT_NE(st->message.find("assuming"), std::string::npos);
}

TEST(Findings, GpuStarvedNotForOneStartupPauseOrGpuspyOverhead)
{
    ProcBuilder b;
    b.launch(0, 0, 10, 10, 20);
    b.launch(0, 1000, 1010, 1010, 1020);  // one long pause: start-up, not a loop
    b.call("cuCtxSynchronize", Category::Sync, 1010, 1020);
    EXPECT_FALSE(findingOf(analyze(b.capture(), {}), "gpu-starved"));
    ProcBuilder c;
    for (uint64_t t = 0; t < 5000; t += 1000) c.launch(0, t, t + 10, t + 10, t + 20);
    c.p.threadStats.push_back({1, 0, 5, 0, 3000});  // gpuspy's own time could explain the gaps
    EXPECT_FALSE(findingOf(analyze(c.capture(), {}), "gpu-starved"));
}

TEST(Findings, GpuStarvedReadsGapsOffTheTimelineWithUntimedWorkPlaced)
{
    // The untimed launch is placed where CUDA says it ran: at its call's return, for as long as its timed
    // sibling (10 ns), so the device idled [20,510) and [520,1010), with the host in CUDA for 10 ns of each.
    ProcBuilder b;
    b.launch(0, 0, 10, 10, 20);
    b.launch(0, 500, 510, 0, 0, 0, wire::kCallGpuSampledOut);
    b.launch(0, 1000, 1010, 1010, 1020);
    b.call("cuCtxSynchronize", Category::Sync, 1010, 1020);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_EQ(r.devices[0].sampledOutOps, 1u);
    EXPECT_EQ(r.devices[0].busyBasis, "estimated");
    EXPECT_EQ(r.devices[0].idleGapNs, 980u);
    EXPECT_EQ(r.devices[0].starvedNs, 960u);
    EXPECT_TRUE(findingOf(r, "gpu-starved"));
    EXPECT_FALSE(r.notes.empty());
}

TEST(Analyze, TimingsLostToLateEndEventsAreCountedAndPlaced)
{
    // The shim flagged the middle launch timed, but its span never came (its end event was recorded too
    // late to trust): it is placed like a sampled-out one, and counted.
    ProcBuilder b;
    b.launch(0, 0, 10, 10, 110);
    b.launch(0, 200, 210, 0, 0, 0, wire::kCallGpuTimed);
    b.launch(0, 400, 410, 410, 510);
    b.call("cuCtxSynchronize", Category::Sync, 510, 520);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_EQ(r.devices[0].lostOps, 1u);
    EXPECT_EQ(r.devices[0].estimatedOps, 1u);
    EXPECT_EQ(r.devices[0].busyNs, 300u);  // the lost one placed at its return for its siblings' 100 ns
    bool noted = false;
    for (const std::string& n : r.notes) noted |= n.find("1 timed but set aside as untrustworthy: the end event was recorded too late") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(Findings, GpuIdleCountsUntimedKernelsAtTheirOwnLength)
{
    // A 20 us copy (always timed), then 20 launches of a 100 ns kernel of which one was timed, over a
    // 100 us active span: about 22% busy. Scaling the measured busy time by ops / timed ops (21 / 2)
    // would call it fully busy; each untimed launch counts as its kernel's median instead.
    ProcBuilder b;
    b.p.kernels[1] = "_Z4tinyv";
    b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 1 << 20, 0, 10, true, 10, 20010);
    b.launch(1, 30000, 30010, 30010, 30110);
    for (uint64_t t = 31000; t < 50000; t += 1000) b.launch(1, t, t + 10, 0, 0, 0, wire::kCallGpuSampledOut);
    b.call("cuCtxSynchronize", Category::Sync, 99000, 100000);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_EQ(r.devices[0].ops, 21u);
    EXPECT_EQ(r.devices[0].timedOps, 2u);
    const Finding* idle = findingOf(r, "gpu-idle");
    ASSERT_TRUE(idle);
    EXPECT_NE(idle->message.find("busy ~22%"), std::string::npos) << idle->message;
}

TEST(Findings, SyncInLoop)
{
    ProcBuilder b;
    const uint32_t launchSite = b.site("step", 20), syncSite = b.site("step", 21);
    uint64_t t = 0;
    for (int i = 0; i < 20; ++i) {
        b.launch(0, t, t + 10, t + 10, t + 40, launchSite);
        b.call("cuCtxSynchronize", Category::Sync, t + 10, t + 42, 0, syncSite);
        t += 50;  // 8 ns of host work after each wait
    }
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "sync-in-loop");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 20u);
    EXPECT_EQ(f->ns, 20u * 32);
    // Span of the waits: first begin 10, last end 19*50+42 = 992 -> 982; host work between = 982 - 640,
    // and each wait's 2 ns after the GPU was done go too: 982 - 640 + 20 * 2 = 382, no more than the
    // GPU's idle time from the first wait to the last (10 to 990, its last work's end: 980 - 20 * 30).
    EXPECT_EQ(f->estimatedSavingsNs, 980u - 20 * 30);
    EXPECT_NE(f->message.find("cuCtxSynchronize (cudaDeviceSynchronize) 20 times from step (app.cu:21)"), std::string::npos);
    ASSERT_EQ(f->callsites.size(), 1u);
    EXPECT_EQ(r.callsites[f->callsites[0]].label, "step (app.cu:21)");
}

TEST(Findings, ImplicitSyncAllocFreeInHotPath)
{
    ProcBuilder b;
    const uint32_t a = b.site("loop", 22), fr = b.site("loop", 25), aa = b.site("loop_async", 31),
                   fa = b.site("loop_async", 34);
    uint64_t t = 0;
    for (int i = 0; i < 10; ++i, t += 100) {
        b.call("cuMemAlloc_v2", Category::Alloc, t, t + 20, 0, a);
        b.call("cuMemFree_v2", Category::Alloc, t + 50, t + 90, wire::kCallImplicitSync, fr);
    }
    for (int i = 0; i < 10; ++i, t += 100) {
        b.call("cuMemAllocAsync", Category::Alloc, t, t + 2, wire::kCallAsync, aa);
        b.call("cuMemFreeAsync", Category::Alloc, t + 50, t + 52, wire::kCallAsync, fa);
    }
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "implicit-sync");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 20u);
    EXPECT_EQ(f->ns, 10u * 20 + 10 * 40);
    EXPECT_EQ(f->estimatedSavingsNs, 600u - 20 * 2);
    EXPECT_EQ(f->savingsBound, "at_most");  // the calls' own time is all their removal can save
    EXPECT_NE(f->message.find("at most"), std::string::npos) << f->message;
    ASSERT_EQ(f->callsites.size(), 2u);
    EXPECT_EQ(r.callsites[f->callsites[0]].label, "loop (app.cu:25)");
    EXPECT_NE(f->message.find("cudaMallocAsync"), std::string::npos);
}

// Work done once is not the hot path: 32 cudaMalloc one after the other before the loop and 32 cudaFree
// after it are one burst each (setup, teardown), set aside and said so; so are 32 allocations each
// followed by a copy of the buffer's contents (32 bursts), whose buffers live until teardown frees them.
// The allocations and frees repeated in the loop, other calls between them, turning their memory over,
// are the finding.
TEST(Findings, ImplicitSyncSetsAsideSetupAndTeardown)
{
    auto run = [](bool allocInLoop, bool copyEach) {
        ProcBuilder b;
        b.p.kernels[1] = "_Z4stepPf";
        const uint32_t setup = b.site("main", 10), upload = b.site("main", 11), alloc = b.site("step", 20),
                       kern = b.site("step", 21), free = b.site("step", 22), teardown = b.site("main", 30);
        uint64_t t = 0;
        for (uint64_t i = 0; i < 32; ++i, t += 50) {
            b.call("cuMemAlloc_v2", Category::Alloc, t, t + 40, 0, setup).args.alloc.ptr = 0x100000 + i * 0x1000;
            if (copyEach)
                b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, KiB, t + 40, t + 45, false,
                       0, 0, upload);
        }
        for (int i = 0; i < 20; ++i, t += 200) {
            if (allocInLoop) b.call("cuMemAlloc_v2", Category::Alloc, t, t + 20, 0, alloc).args.alloc.ptr = 0x900000;
            b.launch(1, t + 20, t + 30, t + 30, t + 130, kern);
            if (allocInLoop)
                b.call("cuMemFree_v2", Category::Alloc, t + 30, t + 140, wire::kCallImplicitSync, free).args.alloc.ptr = 0x900000;
        }
        for (uint64_t i = 0; i < 32; ++i, t += 50)
            b.call("cuMemFree_v2", Category::Alloc, t, t + 40, wire::kCallImplicitSync, teardown).args.alloc.ptr =
                0x100000 + i * 0x1000;
        return analyze(b.capture(), {});
    };
    for (bool copyEach : {false, true}) {
        const Report once = run(false, copyEach);
        EXPECT_FALSE(findingOf(once, "implicit-sync")) << findingOf(once, "implicit-sync")->message;
        EXPECT_TRUE(std::any_of(once.notes.begin(), once.notes.end(), [](const std::string& n) {
            return n.find("implicit-sync: 64 allocations and frees from 2 call site(s)") == 0 && n.find("set aside") != std::string::npos;
        })) << copyEach;
    }
    const Report loop = run(true, true);
    const Finding* f = findingOf(loop, "implicit-sync");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 40u);  // the loop's 20 allocations and 20 frees, not the 64 of setup and teardown
    EXPECT_EQ(f->ns, 20u * (20 + 110));
    EXPECT_NE(f->message.find("Done once, not in the hot path: 64 allocations and frees"), std::string::npos) << f->message;
    for (uint32_t id : f->callsites) EXPECT_EQ(loop.callsites[id].label.rfind("step (", 0), 0u) << loop.callsites[id].label;
}

// A thread that polls cuEventQuery back to back while a kernel runs burns a core: spin-wait, its saving the
// host CPU time a blocking wait frees (no wall time); a stretch the thread was off the CPU in is not
// counted. Polls spread through the thread's own work, or a blocking cuEventSynchronize, are no busy-wait.
TEST(Findings, SpinWaitIsPollingInARowAndFreesHostCpuNotWall)
{
    enum Shape { Spin, SpinDescheduled, PollBetweenWork, Blocking };
    uint64_t notReady = 0, spanNs = 0;
    auto run = [&](Shape shape) {
        ProcBuilder b;
        b.p.kernels[1] = "_Z4stepPf";
        const uint32_t kern = b.site("step", 10), poll = b.site("step", 12);
        uint64_t t = 0;
        notReady = spanNs = 0;
        for (int i = 0; i < 5; ++i) {
            const uint64_t done = t + 10 + 1000000;  // a 1 ms kernel
            b.launch(1, t, t + 10, t + 10, done, kern);
            b.call("cuEventRecord", Category::Other, t + 10, t + 12);
            uint64_t p = t + 12;
            if (shape == Blocking) {
                b.call("cuEventSynchronize", Category::Sync, p, done + 5, 0, poll);
                p = done + 5;
            } else {
                // 400 ns polls, 100 ns apart (back to back) or 10 us apart (the thread's own work between).
                const uint64_t step = shape == PollBetweenWork ? 10400 : 500;
                for (int k = 0; p + 400 < done; p += step, ++notReady, ++k) {
                    b.call("cuEventQuery", Category::Sync, p, p + 400, 0, poll, 600);
                    if (shape == SpinDescheduled && i == 2 && k == 100) p += 300000;  // off the CPU for 300 us
                }
                b.call("cuEventQuery", Category::Sync, p, p + 400, 0, poll);
                spanNs += p + 400 - (t + 12);
                p += 400;
            }
            t = p + 1000;
        }
        return analyze(b.capture(), {});
    };
    const Report spin = run(Spin);
    const Finding* f = findingOf(spin, "spin-wait");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, notReady);
    EXPECT_EQ(f->estimatedSavingsNs, 0u);       // no wall time
    EXPECT_EQ(f->hostCpuSavingsNs, spanNs);     // polls and the idle gaps between them: the runs' whole span
    EXPECT_NE(f->message.find("saves no wall time"), std::string::npos) << f->message;
    EXPECT_NE(f->message.find("cudaEventBlockingSync"), std::string::npos) << f->message;
    ASSERT_EQ(f->callsites.size(), 1u);
    EXPECT_EQ(spin.callsites[f->callsites[0]].label, "step (app.cu:12)");
    const nlohmann::json j = nlohmann::json::parse(renderJson(spin));
    bool inJson = false;
    for (const auto& x : j["findings"])
        inJson = inJson || (x["rule"] == "spin-wait" && x["host_cpu_savings_ns"] == spanNs);
    EXPECT_TRUE(inJson);
    EXPECT_NE(renderText(spin, TextOptions{}).find("of host CPU to free (not wall time)"), std::string::npos);
    for (const Finding& x : spin.findings) {  // ahead of the findings that save nothing either
        if (x.rule != "spin-wait" && !x.estimatedSavingsNs) {
            EXPECT_GT(&x, f) << x.rule;
        }
    }
    const Report descheduled = run(SpinDescheduled);
    const Finding* d = findingOf(descheduled, "spin-wait");
    ASSERT_TRUE(d);
    // The stretched cycle counts as a typical one (the median's bucket mean: about 500).
    EXPECT_NEAR(double(d->hostCpuSavingsNs), double(spanNs - 300000), 10.0);
    const Report between = run(PollBetweenWork);
    EXPECT_GT(notReady, 5u * 16);  // enough polls in a row: their gaps make it no spin
    EXPECT_FALSE(findingOf(between, "spin-wait")) << findingOf(between, "spin-wait")->message;
    const Report blocking = run(Blocking);
    EXPECT_FALSE(findingOf(blocking, "spin-wait"));
}

// A synchronous copy after a long kernel waits for the kernel; with an async copy the host's work
// overlaps it, which saves no more than that work (tests/savings: sync-copy -> async-copy).
TEST(Findings, SyncMemcpyOnABusyGpuSavesNoMoreThanTheHostsWork)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    for (uint64_t i = 0, t = 0; i < 10; ++i, t += 1100) {
        b.launch(1, t, t + 10, t + 10, t + 1010);
        b.copy("cuMemcpyDtoH_v2", Direction::DtoH, MemKind::Device, MemKind::Pinned, KiB, t + 10, t + 1030, false,
               t + 1010, t + 1020);
    }
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "sync-memcpy");
    ASSERT_TRUE(f);
    // Each copy waited 1010 ns beyond its own 10: 1000 on the busy kernel, 10 after the copy was done.
    // Between the copies the host worked 80 ns a step (to the next launch's end): 9 * 80.
    EXPECT_EQ(f->estimatedSavingsNs, 10u * 10 + 9 * 80);
    EXPECT_NE(f->message.find("waited on a busy GPU"), std::string::npos) << f->message;
    EXPECT_EQ(f->savingsBound, "estimate");
}

// A synchronous copy's end is stamped once the host is back: a host descheduled on its way back
// stretches the copy's span. Each copy's own time is the shortest of its kind; the rest of the stretched
// span is a wait the GPU spent idle, which the fix removes (tests/savings: sync-copy with CPU hogs).
TEST(Findings, SyncMemcpyLateEndStampsAreWaits)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    for (uint64_t i = 0, t = 0; i < 10; ++i, t += 2000) {
        const uint64_t late = i % 2 ? 500 : 0;  // every other copy's host came back 500 ns late
        b.launch(1, t, t + 10, t + 10, t + 1010);
        b.copy("cuMemcpyDtoH_v2", Direction::DtoH, MemKind::Device, MemKind::Pinned, KiB, t + 10, t + 1030 + late,
               false, t + 1010, t + 1020 + late);
    }
    const Report r = analyze(b.capture(), {});  // the finding lives in the report
    const Finding* f = findingOf(r, "sync-memcpy");
    ASSERT_TRUE(f);
    // Each copy's own time is 10 ns; waits beyond it: 1000 on the kernel, then 10, or 510 for the late
    // ones: 5 * 10 + 5 * 510 after the GPU was done, plus the host's work between the copies (at most
    // the 1000 a copy waited on the kernel): 9 steps of 2000 - 1020 - late and launch, over 5 late.
    const uint64_t hostBetween = (9 * 2000 + 1030 + 500 - 10) - (5 * 1020 + 5 * 1520);
    EXPECT_EQ(f->estimatedSavingsNs, 5u * 10 + 5 * 510 + hostBetween);
}

// A free after a long kernel waits for it; allocating once outside the loop lets the host's work
// overlap the kernel, which saves no more than the GPU's idle time (tests/savings: free-loop -> free-once).
TEST(Findings, ImplicitSyncOnABusyGpuSavesNoMoreThanItsIdleTime)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4stepPf";
    const uint32_t a = b.site("loop", 22), fr = b.site("loop", 25);
    for (uint64_t i = 0, t = 0; i < 10; ++i, t += 1100) {
        b.call("cuMemAlloc_v2", Category::Alloc, t, t + 20, 0, a);
        b.launch(1, t + 20, t + 30, t + 30, t + 1030);
        b.call("cuMemFree_v2", Category::Alloc, t + 30, t + 1040, wire::kCallImplicitSync, fr);
    }
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "implicit-sync");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->ns, 10u * (20 + 1010));
    // The GPU idled 100 ns a step (the free's last 10, the allocation, the launch) and 40 before the first
    // kernel and after the last one (the device's active span is the process's first to last call):
    // 10940 - 10 * 1000, against 10 * 1030 of calls.
    EXPECT_EQ(f->estimatedSavingsNs, 10940u - 10 * 1000);
    EXPECT_EQ(f->savingsBound, "at_most");
    EXPECT_NE(f->message.find("waited on a busy GPU"), std::string::npos) << f->message;
}

// Small copies' calls count at their mean host time: the slow ones go with batching too.
TEST(Findings, SmallTransfersCountTheSlowCalls)
{
    ProcBuilder b;
    for (uint64_t i = 0, t = 0; i < 100; ++i, t += 1000)
        b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, 4 * KiB, t,
               t + (i == 50 ? 503 : 3), true, t + 600, t + 602);
    const Report r = analyze(b.capture(), {});  // the finding lives in the report
    const Finding* f = findingOf(r, "small-transfers");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->estimatedSavingsNs, 99u * 8);  // mean host time (99 * 3 + 503) / 100 = 8, over the GPU's 2
    EXPECT_NE(f->message.find("mean host time"), std::string::npos) << f->message;
}

TEST(Findings, DroppedRecords)
{
    ProcBuilder b;
    b.launch(0, 0, 10, 10, 20);
    b.p.ended = true;
    b.p.end.recordsMade = 100;
    b.p.end.recordsDropped = 5;
    const Report r = analyze(b.capture(), {});
    const Finding* f = findingOf(r, "dropped-records");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 5u);
    EXPECT_EQ(f->severity, "high");
    EXPECT_NE(f->message.find("5 of 100"), std::string::npos);
    EXPECT_FALSE(r.notes.empty());
}

// The pinned_async_overlap pattern: pinned buffers, async copies and kernels on two streams that
// overlap, one synchronization at the end, a few allocations and frees outside the loop.
TEST(Findings, WellBehavedProgramGetsNoTransferOrSyncWarning)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z13process_chunkPKfPfi";
    const uint32_t allocHost = b.site("main", 21), malloc = b.site("main", 32), h2d = b.site("main", 40),
                   kern = b.site("main", 41), d2h = b.site("main", 43), sync = b.site("main", 45),
                   free = b.site("main", 50), freeHost = b.site("main", 53);
    b.call("cuMemHostAlloc", Category::Alloc, 0, 50000, 0, allocHost);
    b.call("cuMemHostAlloc", Category::Alloc, 50000, 100000, 0, allocHost);
    b.call("cuMemAlloc_v2", Category::Alloc, 100000, 101000, 0, malloc);
    b.call("cuMemAlloc_v2", Category::Alloc, 101000, 102000, 0, malloc);
    uint64_t host = 200000, gpu[2] = {200000, 200000};
    for (int c = 0; c < 16; ++c) {
        const int s = c % 2;
        uint64_t& g = gpu[s];
        g = std::max(g, host + 3000);
        b.copy("cuMemcpyHtoDAsync_v2", Direction::HtoD, MemKind::Pinned, MemKind::Device, MiB, host, host + 3000,
               true, g, g + 42000, h2d);
        g += 42000;
        host += 3000;
        b.launch(1, host, host + 4000, g, g + 30000, kern);
        g += 30000;
        host += 4000;
        b.copy("cuMemcpyDtoHAsync_v2", Direction::DtoH, MemKind::Device, MemKind::Pinned, MiB, host, host + 3000,
               true, g, g + 42000, d2h);
        g += 42000;
        host += 3000;
    }
    const uint64_t end = std::max(gpu[0], gpu[1]);
    b.call("cuCtxSynchronize", Category::Sync, host, end + 1000, 0, sync);
    host = end + 1000;
    for (int i = 0; i < 4; ++i, host += 1000)
        b.call("cuMemFree_v2", Category::Alloc, host, host + 800, wire::kCallImplicitSync, free);
    for (int i = 0; i < 2; ++i, host += 1000)
        b.call("cuMemFreeHost", Category::Alloc, host, host + 800, wire::kCallImplicitSync, freeHost);
    const Report r = analyze(b.capture(), {});
    for (const char* rule : {"pageable-memcpy", "sync-memcpy", "pageable-async-memcpy", "small-transfers",
                             "sync-in-loop", "implicit-sync", "launch-bound-kernels", "gpu-starved", "dropped-records"})
        EXPECT_FALSE(findingOf(r, rule)) << rule << " fired: " << findingOf(r, rule)->message;
    EXPECT_EQ(r.transfers.size(), 2u);
    EXPECT_EQ(r.launches.count, 16u);
}

TEST(Findings, RankedByEstimatedSavings)
{
    ProcBuilder b;
    b.p.kernels[1] = "_Z4tinyPi";
    // launch-bound: 20 x (8 - 1) = 140 saved.
    for (int i = 0; i < 20; ++i) b.launch(1, i * 10, i * 10 + 8, i * 10 + 9, i * 10 + 10);
    // pageable: 10 copies of GPU 200, no pinned reference: 1000 saved.
    uint64_t t = 200;
    for (int i = 0; i < 10; ++i, t += 210)
        b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, MiB, t, t + 210, false, t + 5, t + 205);
    b.p.ended = true;
    b.p.end.recordsMade = 1000;
    b.p.end.recordsDropped = 1;
    const Report r = analyze(b.capture(), {});
    ASSERT_GE(r.findings.size(), 3u);
    for (size_t i = 1; i < r.findings.size(); ++i)
        EXPECT_GE(r.findings[i - 1].estimatedSavingsNs, r.findings[i].estimatedSavingsNs);
    EXPECT_EQ(r.findings[0].rule, "pageable-memcpy");
    EXPECT_TRUE(findingOf(r, "launch-bound-kernels"));
    EXPECT_TRUE(findingOf(r, "dropped-records"));
}

}  // namespace
}  // namespace gpuspy::collect

namespace gpuspy::collect {
namespace {

// Issue 18: a Python program's stack, as the shim merges it: cudart, libffi and the interpreter's
// native frames, then the Python frames (kPyFrameTag | id) where the eval loop was, then main. The
// call site is the innermost Python frame, named with its caller; native frames are not the app's.
TEST(Analyze, PythonFramesAreTheAppsCode)
{
    ProcBuilder b;
    const uint64_t cudart = 0x7f0000000400, ffi = 0x7f0000000500, interp = 0x401800, outer = 0x401900;
    const uint64_t toDevice = wire::kPyFrameTag | 1, step = wire::kPyFrameTag | 2, module = wire::kPyFrameTag | 3;
    b.p.stacks[1] = {cudart, ffi, interp, toDevice, step, module, outer};
    b.p.symbols[cudart] = {Frame{cudart, "cudaMemcpy", "", 0, "/usr/lib/libcudart.so.12", 0x400, false}};
    b.p.symbols[ffi] = {Frame{ffi, "ffi_call", "", 0, "/usr/lib/libffi.so.8", 0x500, false}};
    b.p.symbols[interp] = {Frame{interp, "_PyObject_MakeTpCall", "Objects/call.c", 214, "/work/app", 0x1800, false}};
    b.p.symbols[toDevice] = {Frame{toDevice, "to_device", "/src/app.py", 8, "", 1, false}};
    b.p.symbols[step] = {Frame{step, "step", "/src/app.py", 10, "", 2, false}};
    b.p.symbols[module] = {Frame{module, "<module>", "/src/app.py", 20, "", 3, false}};
    b.p.symbols[outer] = {Frame{outer, "main", "main.c", 5, "/work/app", 0x1900, false}};
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, 10, 0, 10, false, 0, 0, 1);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.callsites.size(), 1u);
    const CallSite& s = r.callsites[0];
    EXPECT_EQ(s.label, "to_device (app.py:8) \u2190 step (app.py:10)");
    EXPECT_EQ(s.siteFrame, 3u);
    ASSERT_EQ(s.frames.size(), 7u);
    for (size_t i = 0; i < s.frames.size(); ++i) {
        const bool python = i >= 3 && i <= 5;
        EXPECT_EQ(s.frames[i].app, python) << i;  // the interpreter's own frames and main too: not the app's
        EXPECT_EQ(s.frames[i].python, python) << i;
    }
}

// The outermost Python frame has no Python caller to name.
TEST(Analyze, PythonSiteWithoutPythonCaller)
{
    ProcBuilder b;
    const uint64_t cudart = 0x7f0000000400, top = wire::kPyFrameTag | 7, outer = 0x401900;
    b.p.stacks[1] = {cudart, top, outer};
    b.p.symbols[cudart] = {Frame{cudart, "cudaMemcpy", "", 0, "/usr/lib/libcudart.so.12", 0x400, false}};
    b.p.symbols[top] = {Frame{top, "<module>", "/src/app.py", 3, "", 7, false}};
    b.p.symbols[outer] = {Frame{outer, "main", "main.c", 5, "/work/app", 0x1900, false}};
    b.copy("cuMemcpyHtoD_v2", Direction::HtoD, MemKind::Pageable, MemKind::Device, 10, 0, 10, false, 0, 0, 1);
    const Report r = analyze(b.capture(), {});
    ASSERT_EQ(r.callsites.size(), 1u);
    EXPECT_EQ(r.callsites[0].label, "<module> (app.py:3)");
}

}  // namespace
}  // namespace gpuspy::collect
