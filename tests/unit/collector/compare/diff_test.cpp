// tests/unit/collector/compare/diff_test.cpp: the diff stage on hand-built Reports: a report against itself
// shows no change; rows are paired by what they are (command, transfer kind, sync kind, kernel name,
// call-site frame, rule id), never by ids or order; findings come out resolved / new / changed; GPU
// busy keeps its basis; the text and JSON say so.
#include "collector/compare/diff.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

namespace gpuspy::collect {
namespace {

CallSite site(uint32_t id, const std::string& category, const std::string& function, const std::string& file,
              uint32_t line, uint64_t count, uint64_t ns)
{
    CallSite s;
    s.id = id;
    s.category = category;
    s.label = function + " (" + file + ":" + std::to_string(line) + ")";
    ReportFrame f;
    f.function = function;
    f.file = file;
    f.line = line;
    f.module = "/build/app";
    s.frames = {f};
    s.count = count;
    s.ns = ns;
    return s;
}

// "Before": pageable synchronous copies, a sync per step, one kernel.
Report before()
{
    Report r;
    ProcessSummary p;
    p.pid = 100;
    p.command = "./train";
    p.wallNs = 200000000;
    p.cudaApiNs = 120000000;
    p.calls = 3000;
    r.processes.push_back(p);
    DeviceSummary d;
    d.pid = 100;
    d.name = "NVIDIA H200";
    d.activeNs = 200000000;
    d.busyNs = d.busyLoNs = d.busyHiNs = 50000000;
    d.busyPct = d.busyPctLo = d.busyPctHi = 25;
    r.devices.push_back(d);
    TransferRow t;
    t.direction = "HtoD";
    t.hostMemory = "pageable";
    t.mode = "sync";
    t.count = 1000;
    t.bytes = 1000 << 20;
    t.hostNs = 80000000;
    r.transfers.push_back(t);
    KernelRow k;
    k.name = "step(float*)";
    k.count = k.timedCount = 1000;
    k.estimatedGpuNs = k.gpuNs = 30000000;
    r.kernels.push_back(k);
    r.launches.count = 1000;
    SyncRow s;
    s.api = "cuStreamSynchronize";
    s.kind = "stream";
    s.count = 1000;
    s.blockedNs = 20000000;
    r.syncs.push_back(s);
    SyncRow c;
    c.api = "cuMemcpyHtoD_v2";
    c.kind = "copy";
    c.implicit = true;
    c.count = 1000;
    c.blockedNs = 80000000;
    r.syncs.push_back(c);
    r.callsites = {site(0, "transfer", "load", "train.cu", 40, 1000, 80000000),
                   site(1, "sync", "step", "train.cu", 52, 1000, 20000000)};
    Finding f;
    f.rule = "pageable-memcpy";
    f.severity = "high";
    f.count = 1000;
    f.ns = 80000000;
    f.estimatedSavingsNs = 40000000;
    f.savingsBound = "at_most";
    f.callsites = {0};
    r.findings.push_back(f);
    Finding g;
    g.rule = "sync-in-loop";
    g.severity = "medium";
    g.count = 1000;
    g.ns = 20000000;
    g.estimatedSavingsNs = 15000000;
    r.findings.push_back(g);
    return r;
}

// "After": pinned copies (the pageable finding gone), the same sync loop but fewer calls, ids and
// order shuffled, and an estimated GPU busy.
Report after()
{
    Report r = before();
    r.processes[0].pid = 200;
    r.processes[0].wallNs = 150000000;
    r.processes[0].cudaApiNs = 70000000;
    r.devices[0].pid = 200;
    r.devices[0].busyBasis = "estimated";
    r.devices[0].busyLoNs = 40000000;
    r.devices[0].busyHiNs = 60000000;
    r.devices[0].busyPctLo = 20;
    r.devices[0].busyPctHi = 30;
    r.transfers[0].hostMemory = "pinned";
    r.transfers[0].hostNs = 30000000;
    r.syncs[1].blockedNs = 30000000;
    std::swap(r.syncs[0], r.syncs[1]);
    r.callsites = {site(0, "sync", "step", "train.cu", 52, 500, 10000000),
                   site(1, "transfer", "load", "train.cu", 40, 1000, 30000000)};
    r.findings = {r.findings[1]};
    r.findings[0].count = 500;
    r.findings[0].estimatedSavingsNs = 7000000;
    Finding n;
    n.rule = "small-transfers";
    n.severity = "low";
    n.estimatedSavingsNs = 1000000;
    r.findings.push_back(n);
    return r;
}

TEST(Diff, ReportAgainstItselfShowsNoChange)
{
    const Report r = before();
    const ReportDiff d = diffReports(r, r);
    EXPECT_FALSE(d.changed());
    EXPECT_EQ(wallSlowdownPct(d), 0.0);
    for (const FindingDiff& f : d.findings) EXPECT_EQ(f.status, "same") << f.rule;
    const std::string text = renderDiffText(d, "a.gspy", "a.gspy", 10);
    EXPECT_NE(text.find("no change"), std::string::npos) << text;
    const auto j = nlohmann::json::parse(renderDiffJson(d, "a.gspy", "a.gspy"));
    EXPECT_EQ(j["schema"], "gpuspy.diff/1");
    EXPECT_EQ(j["changed"], false);
    EXPECT_EQ(j["headline"]["wall_ns"]["delta"], 0);
}

TEST(Diff, HeadlineFigures)
{
    const ReportDiff d = diffReports(before(), after());
    EXPECT_TRUE(d.changed());
    EXPECT_EQ(d.headline.wallNs.a, 200000000u);
    EXPECT_EQ(d.headline.wallNs.b, 150000000u);
    EXPECT_EQ(d.headline.wallNs.delta(), -50000000);
    EXPECT_DOUBLE_EQ(wallSlowdownPct(d), -25.0);
    EXPECT_DOUBLE_EQ(wallSlowdownPct(diffReports(after(), before())), 100.0 / 3.0);
    EXPECT_EQ(d.headline.cudaApiNs.delta(), -50000000);
    EXPECT_EQ(d.headline.syncBlockedNs.a, 100000000u);
    EXPECT_EQ(d.headline.syncBlockedNs.b, 50000000u);
    EXPECT_EQ(d.headline.busyA.basis, "measured");
    EXPECT_EQ(d.headline.busyB.basis, "estimated");
    EXPECT_DOUBLE_EQ(d.headline.busyB.pctLo, 20);
    EXPECT_DOUBLE_EQ(d.headline.busyB.pctHi, 30);
    const std::string text = renderDiffText(d, "a", "b", 10);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
    EXPECT_NE(text.find("(estimate, 20.0-30.0%)"), std::string::npos) << text;
    EXPECT_NE(text.find("B is 25.0% faster than A"), std::string::npos) << text;
    EXPECT_EQ(text.find("host functions"), std::string::npos) << text;  // neither side ran any
}

// GPU memory: the largest device peak and the bytes leaked, side by side; a leak fixed reads as a change
// even where nothing else moved.
TEST(Diff, MemoryPeakAndLeaks)
{
    auto withMemory = [](uint64_t peak, uint64_t leaked) {
        Report r = before();
        MemoryRow m;
        m.pid = 100;
        m.device = 0;
        m.space = "device";
        m.peakBytes = peak;
        MemoryLive l;
        l.bytes = leaked;
        l.allocations = 20;
        l.leak = leaked > 0;
        if (leaked) m.liveAtEnd.push_back(l);
        MemoryRow pinned;
        pinned.pid = 100;
        pinned.space = "pinned_host";
        pinned.peakBytes = 1u << 30;  // not device memory: never the device peak
        r.memory = {m, pinned};
        return r;
    };
    const ReportDiff d = diffReports(withMemory(45u << 20, 20u << 20), withMemory(25u << 20, 0));
    EXPECT_TRUE(d.changed());
    EXPECT_EQ(d.headline.memoryPeakBytes.a, 45u << 20);
    EXPECT_EQ(d.headline.memoryPeakBytes.b, 25u << 20);
    EXPECT_EQ(d.headline.leakedBytes.a, 20u << 20);
    EXPECT_EQ(d.headline.leakedBytes.b, 0u);
    const std::string text = renderDiffText(d, "a", "b", 10);
    EXPECT_NE(text.find("GPU memory peak"), std::string::npos) << text;
    EXPECT_NE(text.find("GPU memory leaked"), std::string::npos) << text;
    const auto j = nlohmann::json::parse(renderDiffJson(d, "a", "b"));
    EXPECT_EQ(j["headline"]["leaked_bytes"]["delta"], -int64_t(20u << 20));
    EXPECT_FALSE(diffReports(withMemory(45u << 20, 20u << 20), withMemory(45u << 20, 20u << 20)).changed());
}

// Host functions are no kernel launches: a line of their own in the headline.
TEST(Diff, HostFunctionsApartFromLaunches)
{
    Report a = before(), b = after();
    a.hostFunctions.count = 40;
    const ReportDiff d = diffReports(a, b);
    EXPECT_EQ(d.headline.hostFunctions.a, 40u);
    EXPECT_EQ(d.headline.hostFunctions.b, 0u);
    EXPECT_EQ(d.headline.launches.a, a.launches.count);
    EXPECT_NE(renderDiffText(d, "a", "b", 10).find("host functions"), std::string::npos);
}

TEST(Diff, TransfersPairedByKindAndSyncsByKind)
{
    const ReportDiff d = diffReports(before(), after());
    ASSERT_EQ(d.transfers.size(), 2u);  // pageable gone, pinned new: different kinds
    for (const TransferDiff& t : d.transfers) {
        if (t.hostMemory == "pageable") {
            EXPECT_TRUE(t.inA);
            EXPECT_FALSE(t.inB);
        } else {
            EXPECT_EQ(t.hostMemory, "pinned");
            EXPECT_FALSE(t.inA);
            EXPECT_TRUE(t.inB);
        }
    }
    ASSERT_EQ(d.syncs.size(), 2u);  // paired by kind although B lists them in the other order
    for (const SyncKindDiff& s : d.syncs) {
        EXPECT_TRUE(s.inA && s.inB) << s.kind;
        if (s.kind == "copy") EXPECT_EQ(s.blockedNs.delta(), -50000000);
        else EXPECT_EQ(s.blockedNs.delta(), 0);
    }
}

TEST(Diff, SyncRowsOfOneKindAreSummed)
{
    Report a = before();
    SyncRow s;
    s.api = "cuCtxSynchronize";
    s.kind = "stream";  // hypothetically counted with the stream syncs
    s.count = 1;
    s.blockedNs = 5;
    a.syncs.push_back(s);
    const ReportDiff d = diffReports(a, before());
    const auto it = std::find_if(d.syncs.begin(), d.syncs.end(), [](const SyncKindDiff& x) { return x.kind == "stream"; });
    ASSERT_NE(it, d.syncs.end());
    EXPECT_EQ(it->count.a, 1001u);
    EXPECT_EQ(it->blockedNs.a, 20000005u);
}

TEST(Diff, CallSitesMatchedByFrameNotId)
{
    const ReportDiff d = diffReports(before(), after());
    ASSERT_EQ(d.callsites.size(), 2u);
    for (const CallSiteDiff& c : d.callsites) {
        EXPECT_TRUE(c.inA && c.inB) << c.label;
        if (c.category == "transfer") {
            EXPECT_EQ(c.ns.a, 80000000u);
            EXPECT_EQ(c.ns.b, 30000000u);
        } else {
            EXPECT_EQ(c.count.a, 1000u);
            EXPECT_EQ(c.count.b, 500u);
        }
    }
}

TEST(Diff, CallSitesWithoutSymbolsMatchedByModuleAndOffset)
{
    auto bare = [](uint64_t offset, const std::string& module) {
        CallSite s;
        s.category = "launch";
        s.label = "app+0x" + std::to_string(offset);
        ReportFrame f;
        f.module = module;
        f.offset = offset;
        s.frames = {f};
        s.count = 1;
        return s;
    };
    Report a = before(), b = before();
    a.callsites = {bare(0x100, "/a/build/app"), bare(0x200, "/a/build/app")};
    b.callsites = {bare(0x200, "/b/build/app"), bare(0x300, "/b/build/app")};
    const ReportDiff d = diffReports(a, b);
    ASSERT_EQ(d.callsites.size(), 3u);
    int both = 0;
    for (const CallSiteDiff& c : d.callsites) both += c.inA && c.inB;
    EXPECT_EQ(both, 1);  // app+0x200, in a build moved elsewhere
}

TEST(Diff, KernelsMatchedByName)
{
    Report a = before(), b = before();
    KernelRow other;
    other.name = "reduce(float*)";
    other.count = 10;
    other.timedCount = 5;
    other.estimatedGpuNs = 1000;
    b.kernels.insert(b.kernels.begin(), other);
    b.kernels[1].count = 2000;
    const ReportDiff d = diffReports(a, b);
    ASSERT_EQ(d.kernels.size(), 2u);
    EXPECT_EQ(d.kernels[0].name, "step(float*)");
    EXPECT_EQ(d.kernels[0].launches.a, 1000u);
    EXPECT_EQ(d.kernels[0].launches.b, 2000u);
    EXPECT_FALSE(d.kernels[1].inA);
    EXPECT_TRUE(d.kernels[1].estimatedB);  // half its launches untimed
}

TEST(Diff, FindingsResolvedNewChanged)
{
    const ReportDiff d = diffReports(before(), after());
    ASSERT_EQ(d.findings.size(), 3u);
    EXPECT_EQ(d.findings[0].rule, "pageable-memcpy");
    EXPECT_EQ(d.findings[0].status, "resolved");
    EXPECT_EQ(d.findings[0].savingsNs.a, 40000000u);
    EXPECT_EQ(d.findings[0].boundA, "at_most");
    EXPECT_EQ(d.findings[1].rule, "small-transfers");
    EXPECT_EQ(d.findings[1].status, "new");
    EXPECT_EQ(d.findings[2].rule, "sync-in-loop");
    EXPECT_EQ(d.findings[2].status, "changed");
    EXPECT_EQ(d.findings[2].savingsNs.delta(), -8000000);
    const std::string text = renderDiffText(d, "a", "b", 10);
    EXPECT_NE(text.find("resolved  pageable-memcpy"), std::string::npos) << text;
    EXPECT_NE(text.find("at most 40.0 ms"), std::string::npos) << text;
    const auto j = nlohmann::json::parse(renderDiffJson(d, "a", "b"));
    EXPECT_EQ(j["findings"][0]["status"], "resolved");
    EXPECT_EQ(j["findings"][0]["estimated_savings_ns"]["a"], 40000000);
    EXPECT_TRUE(j["findings"][1]["estimated_savings_ns"]["change_pct"].is_null());  // new: no percentage
}

// gpu-idle and other findings that save nothing: their count and time move with every run, and that
// alone is no change ("0 ns -> 0 ns" read as one in every diff); a change of severity still is.
TEST(Diff, AFindingThatSavesNothingChangesOnlyWithItsSeverity)
{
    Report a, b;
    Finding idle;
    idle.rule = "gpu-idle";
    idle.severity = "INFO";
    idle.count = 3;
    idle.ns = 1200000;
    a.findings.push_back(idle);
    idle.count = 4;
    idle.ns = 1350000;
    b.findings.push_back(idle);
    ReportDiff d = diffReports(a, b);
    ASSERT_EQ(d.findings.size(), 1u);
    EXPECT_EQ(d.findings[0].status, "same");
    b.findings[0].severity = "MEDIUM";
    d = diffReports(a, b);
    EXPECT_EQ(d.findings[0].status, "changed");
    b.findings[0].severity = "INFO";
    b.findings[0].estimatedSavingsNs = 1000;
    d = diffReports(a, b);
    EXPECT_EQ(d.findings[0].status, "changed");
}

TEST(Diff, ProcessesPairedByCommand)
{
    Report a = before(), b = after();
    ProcessSummary worker;
    worker.pid = 101;
    worker.command = "./worker";
    worker.wallNs = 500000000;
    a.processes.push_back(worker);
    worker.pid = 7;
    worker.wallNs = 400000000;
    b.processes.insert(b.processes.begin(), worker);
    ProcessSummary extra;
    extra.pid = 8;
    extra.command = "./extra";
    b.processes.push_back(extra);
    const ReportDiff d = diffReports(a, b);
    ASSERT_EQ(d.processes.size(), 3u);
    EXPECT_EQ(d.processes[0].command, "./train");
    EXPECT_EQ(d.processes[0].pidA, 100u);
    EXPECT_EQ(d.processes[0].pidB, 200u);
    EXPECT_EQ(d.processes[0].busyB.basis, "estimated");
    EXPECT_EQ(d.processes[1].command, "./worker");
    EXPECT_EQ(d.processes[1].wallNs.delta(), -100000000);
    EXPECT_FALSE(d.processes[2].inA);
    EXPECT_EQ(d.headline.wallNs.a, 500000000u);  // the longest process
    EXPECT_FALSE(d.notes.empty());
}

TEST(Diff, ProcessesOfOneProgramWithOtherArgumentsArePaired)
{
    Report a = before(), b = before();
    a.processes[0].command = "/a/build/tiny_kernels 200";
    b.processes[0].command = "/b/build/tiny_kernels 20000";
    ProcessSummary other;
    other.command = "/usr/bin/python3 helper.py";
    a.processes.push_back(other);
    other.command = "/usr/bin/perl helper.pl";
    b.processes.push_back(other);
    other.command = "/usr/bin/ruby helper.rb";
    b.processes.push_back(other);
    const ReportDiff d = diffReports(a, b);
    // tiny_kernels paired; python is not perl or ruby, and is not the only one left on B's side
    ASSERT_EQ(d.processes.size(), 4u);
    EXPECT_TRUE(d.processes[0].inA && d.processes[0].inB);
    EXPECT_EQ(d.processes[0].commandB, "/b/build/tiny_kernels 20000");
    EXPECT_FALSE(d.processes[1].inB);
    EXPECT_FALSE(d.processes[2].inA);
    EXPECT_FALSE(d.processes[3].inA);
    b.processes.resize(1);
    b.processes[0].wallNs += 1000;
    a.processes[0].command = "./one";
    a.processes.pop_back();
    const ReportDiff single = diffReports(a, b);  // one process each side: paired whatever they ran
    ASSERT_EQ(single.processes.size(), 1u);
    EXPECT_TRUE(single.processes[0].inA && single.processes[0].inB);
    EXPECT_NE(renderDiffText(single, "a", "b", 10).find("B ran /b/build/tiny_kernels 20000"), std::string::npos);
}

TEST(Diff, RanksPairedByRankAndEachSidesClockAlignmentCarried)
{
    // Two jobs of 3 ranks (one capture per rank, each side read as one run): B's processes in another order and
    // run with other arguments; rank R before goes with rank R after. Each side's clock alignment goes to the
    // notes and the JSON.
    Report a = before(), b = before();
    a.processes.clear();
    b.processes.clear();
    for (int k = 0; k < 3; ++k) {
        ProcessSummary p;
        p.pid = 100 + uint32_t(k);
        p.rank = k;
        p.command = "/job/worker late";
        p.wallNs = 1000 + uint64_t(k);
        a.processes.push_back(p);
        p.pid = 200 + uint32_t(2 - k);
        p.rank = 2 - k;
        p.command = "/job/worker even";
        p.wallNs = 2000 + uint64_t(2 - k);
        b.processes.push_back(p);
    }
    ClockAlignment ref, other;
    ref.name = "a0.gspy";
    ref.basis = "reference";
    other.name = "a1.gspy";
    other.basis = "collectives";
    other.shiftNs = -1234;
    other.wallShiftNs = -1000;
    other.matched = 16;
    a.clockAlignment = {ref, other};
    const ReportDiff d = diffReports(a, b);
    ASSERT_EQ(d.processes.size(), 3u);
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(d.processes[size_t(k)].rank, k);
        EXPECT_EQ(d.processes[size_t(k)].pidA, 100u + uint32_t(k));
        EXPECT_EQ(d.processes[size_t(k)].pidB, 200u + uint32_t(k));
        EXPECT_EQ(d.processes[size_t(k)].wallNs.delta(), 1000);
    }
    ASSERT_EQ(d.clocksA.size(), 2u);
    EXPECT_TRUE(d.clocksB.empty());
    bool noted = false;
    for (const std::string& n : d.notes) noted = noted || n.rfind("A: 2 captures read as one run, on the clock of a0.gspy", 0) == 0;
    EXPECT_TRUE(noted);
    const nlohmann::ordered_json j = diffJson(d, "a0.gspy, a1.gspy", "b.gspy");
    EXPECT_EQ(j["a"], "a0.gspy, a1.gspy");
    ASSERT_EQ(j["clock_alignment"]["a"].size(), 2u);
    EXPECT_EQ(j["clock_alignment"]["a"][1]["shift_ns"], -1234);
    EXPECT_EQ(j["clock_alignment"]["a"][1]["basis"], "collectives");
    EXPECT_TRUE(j["clock_alignment"]["b"].empty());
    EXPECT_EQ(j["processes"][2]["rank"], 2);
    const std::string text = renderDiffText(d, "a", "b", 10);
    EXPECT_NE(text.find("processes (paired by rank)"), std::string::npos) << text;
    EXPECT_NE(text.find("\n  r1 /job/worker late"), std::string::npos) << text;
    // Without ranks and alignment (one capture a side, one process): no rank, no clock_alignment in the JSON.
    const nlohmann::ordered_json plain = diffJson(diffReports(before(), after()), "a", "b");
    EXPECT_FALSE(plain.contains("clock_alignment"));
    EXPECT_FALSE(plain["processes"][0].contains("rank"));
}

TEST(Diff, TextSaysHowManyRowsTopLeftOut)
{
    const std::string text = renderDiffText(diffReports(before(), after()), "a", "b", 1);
    EXPECT_NE(text.find("  ... 1 more (--top)"), std::string::npos) << text;  // two transfer kinds, two sites
}

TEST(Diff, SlowdownFromZeroWall)
{
    Report a = before(), b = before();
    a.processes[0].wallNs = 0;
    EXPECT_TRUE(std::isinf(wallSlowdownPct(diffReports(a, b))));
    b.processes[0].wallNs = 0;
    EXPECT_EQ(wallSlowdownPct(diffReports(a, b)), 0.0);
}

}  // namespace
}  // namespace gpuspy::collect
