// tests/unit/collector/replay/replay_test.cpp: the run graph, its replay and the fixes, on hand-built
// processes (calls with their GPU spans, as the shim sends them) and hand-built graphs.
#include "collector/replay/predict.h"
#include "collector/replay/whatif.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuspy::collect::replay {
namespace {

using wire::Category;

// A process whose calls are made by hand: APIs by name, spans as measured.
struct Proc {
    Process p;
    uint64_t seq = 0;
    std::map<std::string, uint16_t> ids;

    Proc()
    {
        p.pid = 42;
        p.startNs = 0;
    }
    uint16_t api(const std::string& name, Category cat)
    {
        auto it = ids.find(name);
        if (it != ids.end()) return it->second;
        const uint16_t id = uint16_t(ids.size() + 1);
        p.apis[id] = {name, cat};
        return ids[name] = id;
    }
    wire::CallBody& call(const std::string& name, Category cat, uint32_t tid, uint64_t begin, uint64_t end, uint64_t stream = 0x10,
                         int device = 0)
    {
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = begin;
        c.endNs = end;
        c.stream = stream;
        c.tid = tid;
        c.apiId = api(name, cat);
        c.category = cat;
        c.device = int16_t(device);
        p.calls.push_back(c);
        p.lastNs = std::max(p.lastNs, end);
        return p.calls.back();
    }
    // A launch of `kernel` that ran [gpuBegin, gpuEnd) (timed).
    void launch(uint32_t tid, uint64_t begin, uint64_t end, uint64_t gpuBegin, uint64_t gpuEnd, uint64_t stream = 0x10, int device = 0)
    {
        wire::CallBody& c = call("cuLaunchKernel", Category::Launch, tid, begin, end, stream, device);
        c.flags = wire::kCallDeviceWork | wire::kCallGpuTimed;
        c.args.launch.kernelId = 1;
        p.spans.push_back({c.seq, gpuBegin, gpuEnd, device, 0});
    }
    void sync(uint32_t tid, uint64_t begin, uint64_t end, uint64_t stream = 0x10, int device = 0)
    {
        wire::CallBody& c = call("cuStreamSynchronize", Category::Sync, tid, begin, end, stream, device);
        c.args.sync.object = stream;
    }
};

uint64_t savingOf(const WhatIf& w, const std::string& name)
{
    for (const Scenario& s : w.scenarios)
        if (s.name == name) return w.unchanged.prediction.wallNs - s.prediction.wallNs;
    ADD_FAILURE() << "no scenario " << name;
    return 0;
}

// A loop: launch a 100 us kernel, wait for it, 50 us of host work; 10 steps.
Proc syncLoop()
{
    Proc pr;
    uint64_t t = 1000;
    for (int i = 0; i < 10; ++i) {
        pr.launch(7, t, t + 5000, t + 6000, t + 106000);
        pr.sync(7, t + 5100, t + 107000);
        t += 107000 + 50000;
    }
    pr.p.lastNs = t + 20000;
    return pr;
}

TEST(Replay, UnchangedGivesBackTheRun)
{
    Proc pr = syncLoop();
    const WhatIf w = whatIf(pr.p, {});
    EXPECT_EQ(w.unchanged.prediction.wallNs, pr.p.lastNs);
    EXPECT_EQ(w.unchanged.prediction.gpuBusyNs, 10u * 100000u);
    EXPECT_NEAR(w.errorPct(), 0.0, 1e-9);
}

TEST(Replay, FewerSyncsLetsTheHostWorkOverlapTheKernels)
{
    // Without the per-step wait the host's 50 us of work runs while the 100 us kernels do: the run ends
    // when the last kernel does, and the GPU is never idle between them.
    Proc pr = syncLoop();
    const WhatIf w = whatIf(pr.p, {}, {FixKind::FewerSyncs});
    const uint64_t saved = savingOf(w, "fewer-syncs");
    // Unchanged: 10 x 157 us. Fixed: the kernels back to back (1 ms from the first's start), the host's last
    // 50 us after its loop overlaps them; then the final sync and the tail.
    EXPECT_GT(saved, 400000u);
    EXPECT_LT(saved, 600000u);
}

TEST(Replay, FewerSyncsKeepsTheWaitAfterACopyTheHostReads)
{
    Proc pr;
    uint64_t t = 1000;
    for (int i = 0; i < 5; ++i) {
        pr.launch(7, t, t + 5000, t + 6000, t + 106000);
        wire::CallBody& c = pr.call("cuMemcpyDtoHAsync_v2", Category::Transfer, 7, t + 5100, t + 8000);
        c.flags = wire::kCallDeviceWork | wire::kCallAsync | wire::kCallGpuTimed;
        c.args.transfer.direction = wire::Direction::DtoH;
        c.args.transfer.dstMem = wire::MemKind::Pinned;
        c.args.transfer.srcMem = wire::MemKind::Device;
        c.args.transfer.bytes = 4;
        pr.p.spans.push_back({c.seq, t + 106000, t + 108000, 0, 0});
        pr.sync(7, t + 8100, t + 109000);
        t += 109000 + 50000;
    }
    const WhatIf w = whatIf(pr.p, {}, {FixKind::FewerSyncs});
    ASSERT_EQ(w.scenarios.size(), 1u);
    EXPECT_EQ(w.scenarios[0].effects[0].changed, 0u);
    EXPECT_EQ(w.scenarios[0].effects[0].kept, 4u) << "every wait but the last keeps a read of the copied data";
    EXPECT_EQ(savingOf(w, "fewer-syncs"), 0u);
}

TEST(Replay, AThreadThatEndsEarlyIsOffTheCriticalPath)
{
    // Thread 1 launches on device 1 and ends at 0.5 ms; thread 2 waits on a long kernel of device 0 until
    // 10 ms. Making thread 1's launches free (a graph) saves nothing.
    Proc pr;
    uint64_t t = 1000;
    for (int i = 0; i < 40; ++i, t += 10000) pr.launch(1, t, t + 9000, t + 9500, t + 10000, 0x20, 1);
    pr.sync(1, t, t + 1000, 0x20, 1);
    pr.launch(2, 2000, 3000, 3500, 9000000, 0x30, 0);
    pr.sync(2, 3100, 9001000, 0x30, 0);
    pr.p.lastNs = 9002000;
    const WhatIf w = whatIf(pr.p, {}, {FixKind::Graphs});
    ASSERT_EQ(w.scenarios.size(), 1u);
    EXPECT_GT(w.scenarios[0].effects[0].changed, 0u);
    EXPECT_EQ(savingOf(w, "graphs"), 0u);
    const Prediction& u = w.unchanged.prediction;
    ASSERT_EQ(u.threadEndNs.size(), 2u);
    EXPECT_EQ(u.endThread, 1u) << "thread 2 (index 1) sets the end";
    bool thread1OnPath = false;
    for (const PathPart& p : u.criticalPath) thread1OnPath = thread1OnPath || (p.kind == PathPart::Host && p.index == 0);
    EXPECT_FALSE(thread1OnPath);
    bool kernelOnPath = false;
    for (const PathPart& p : u.criticalPath) kernelOnPath = kernelOnPath || (p.kind == PathPart::Device && p.ns > 8000000);
    EXPECT_TRUE(kernelOnPath) << "device 0's long kernel sets the end";
}

// The main thread (1) starts a worker (2) that launches 40 tiny kernels, each launch 9 us of host time,
// and joins it: main's next call comes `after` the worker's last return.
Proc joinedWorker(uint64_t after)
{
    Proc pr;
    pr.call("cuInit", Category::Other, 1, 100, 900);
    uint64_t t = 1000;
    for (int i = 0; i < 40; ++i, t += 10000) pr.launch(2, t, t + 9000, t + 9500, t + 10000, 0x20, 0);
    pr.sync(2, t, t + 1000, 0x20, 0);
    pr.call("cuCtxSynchronize_v2", Category::Sync, 1, t + 1000 + after, t + 1500 + after);
    pr.p.lastNs = t + 2000 + after;
    return pr;
}

TEST(Replay, AThreadThatJoinsAWorkerWaitsForItsEnd)
{
    // Joined 100 us after the worker's end: the worker's launches set the end of the run, and a graph of
    // them shortens it by about their host time (40 x 9 us, less a graph launch).
    const WhatIf joined = whatIf(joinedWorker(100000).p, {}, {FixKind::Graphs});
    EXPECT_NEAR(joined.errorPct(), 0.0, 1e-9);
    bool workerOnPath = false;
    for (const PathPart& p : joined.unchanged.prediction.criticalPath)
        workerOnPath = workerOnPath || (p.kind == PathPart::Host && p.index == 1 && p.ns > 300000);
    EXPECT_TRUE(workerOnPath) << "the worker (index 1) sets the end through the join";
    EXPECT_TRUE(threadsOffPath(joined.unchanged.prediction).empty());
    EXPECT_GT(savingOf(joined, "graphs"), 250000u);
    EXPECT_LT(savingOf(joined, "graphs"), 400000u);
    // Main's next call 5 ms after the worker's end: main had its own work (past kJoinSlackNs), no join.
    const WhatIf apart = whatIf(joinedWorker(5000000).p, {}, {FixKind::Graphs});
    EXPECT_EQ(savingOf(apart, "graphs"), 0u);
    const auto off = threadsOffPath(apart.unchanged.prediction);
    ASSERT_EQ(off.size(), 1u);
    EXPECT_EQ(off[0], 1u);
}

// Two streams made blocking (or not) and the legacy default stream: per step a 1 ms kernel on each, all
// timed, ordered by the legacy stream's rules when the streams are blocking.
Proc legacyMix(bool nonBlocking)
{
    Proc pr;
    for (uint64_t h : {0x20u, 0x30u}) {
        wire::CallBody& c = pr.call("cuStreamCreate", Category::Other, 1, 100 + h, 200 + h, h);
        c.args.raw[wire::kStreamFlagsSlot] = nonBlocking ? wire::kStreamNonBlocking : 0;
    }
    uint64_t t = 1000, gpu = 2000;
    for (int i = 0; i < 4; ++i, t += 30) {
        pr.launch(1, t, t + 10, gpu, gpu + 1000000, 0x20);
        pr.launch(1, t + 10, t + 20, gpu, gpu + 1000000, 0x30);
        const uint64_t legacyAt = nonBlocking ? gpu : gpu + 1000000;
        pr.launch(1, t + 20, t + 30, legacyAt, legacyAt + 1000000, 0x0);
        gpu = nonBlocking ? gpu + 1000000 : legacyAt + 1000000;
    }
    pr.call("cuCtxSynchronize_v2", Category::Sync, 1, t, gpu + 1000);
    pr.p.lastNs = gpu + 2000;
    return pr;
}

TEST(Replay, TheLegacyStreamWaitsForBlockingStreamsAndTheFixTakesThoseWaitsOut)
{
    const WhatIf bad = whatIf(legacyMix(false).p, {}, {FixKind::NonBlockingStreams});
    EXPECT_NEAR(bad.errorPct(), 0.0, 0.01);
    ASSERT_EQ(bad.scenarios.size(), 1u);
    EXPECT_GT(bad.scenarios[0].effects[0].changed, 0u);
    // 8 ms serialised, 4 ms overlapped.
    EXPECT_NEAR(double(savingOf(bad, "nonblocking-streams")), 4e6, 1e5);
    const WhatIf fixed = whatIf(legacyMix(true).p, {}, {FixKind::NonBlockingStreams});
    EXPECT_NEAR(fixed.errorPct(), 0.0, 0.01);
    EXPECT_EQ(fixed.scenarios[0].effects[0].changed, 0u) << "non-blocking streams: no legacy waits";
}

TEST(Replay, AGraphOfAGpuBoundLoopQueuesItsFirstKernelAtOnce)
{
    // Ten rounds of 400 launches (5 us each) of 20 us kernels, then a wait: the GPU sets the pace. As one
    // graph launch a round, the first kernel is queued once the launch has paid its base and one node, not
    // after the whole graph's submission: the fix can save the host's launch time but never lengthens the run.
    Proc pr;
    uint64_t t = 1000;
    for (int r = 0; r < 10; ++r) {
        uint64_t gpu = t + 6000;
        for (int i = 0; i < 400; ++i, t += 5000, gpu += 20000) pr.launch(7, t, t + 4800, gpu, gpu + 20000);
        pr.sync(7, t, gpu + 1000);
        t = gpu + 2000;
    }
    pr.p.lastNs = t;
    const WhatIf w = whatIf(pr.p, {}, {FixKind::Graphs});
    ASSERT_EQ(w.scenarios.size(), 1u);
    EXPECT_EQ(w.scenarios[0].effects[0].changed, 4000u);
    const Prediction& fixed = w.scenarios[0].prediction;
    EXPECT_LE(fixed.wallNs, w.unchanged.prediction.wallNs);
    EXPECT_EQ(fixed.gpuBusyNs, w.unchanged.prediction.gpuBusyNs);
    EXPECT_LT(fixed.hostBusyNs, w.unchanged.prediction.hostBusyNs / 4) << "the launches' host time is what goes";
}

TEST(Replay, APollIsReplayedAsAWaitAndABlockingWaitFreesTheHost)
{
    Proc pr;
    pr.launch(7, 1000, 2000, 3000, 503000);
    wire::CallBody& rec = pr.call("cuEventRecord", Category::Sync, 7, 2100, 2200);
    rec.args.sync.object = 0xE;
    uint64_t t = 2300;
    for (; t < 503000; t += 1000) {
        wire::CallBody& q = pr.call("cuEventQuery", Category::Sync, 7, t, t + 500);
        q.args.sync.object = 0xE;
        q.result = 600;
    }
    wire::CallBody& q = pr.call("cuEventQuery", Category::Sync, 7, t, t + 500);
    q.args.sync.object = 0xE;
    pr.p.lastNs = t + 1000;
    const WhatIf w = whatIf(pr.p, {}, {FixKind::BlockingWait});
    EXPECT_EQ(w.unchanged.prediction.wallNs, pr.p.lastNs);
    ASSERT_EQ(w.scenarios.size(), 1u);
    EXPECT_EQ(w.scenarios[0].effects[0].changed, 1u);
    EXPECT_GT(w.unchanged.prediction.hostBusyNs, 450000u) << "the host spins through the poll";
    EXPECT_LT(w.scenarios[0].prediction.hostBusyNs, 50000u) << "a blocking wait sleeps";
    EXPECT_EQ(w.scenarios[0].prediction.wallNs, w.unchanged.prediction.wallNs);
}

// Allocations made once are not hoisted: 32 cudaMalloc before the loop and the 32 cudaFree after it, in a
// row (one burst each), or each allocation followed by its upload (32 bursts, but the buffers live from
// before the loop to after it), stay; the loop's allocation and free, freed every round, go but for the
// first allocation and the last free.
uint64_t hoistedWithSetup(bool uploads)
{
    Proc pr;
    uint64_t t = 1000;
    auto alloc = [&](const char* name, uint32_t stack, uint64_t address) {
        wire::CallBody& c = pr.call(name, Category::Alloc, 7, t, t + 100);
        c.stackId = stack;
        c.args.alloc.ptr = address;
        t += 200;
    };
    for (uint64_t i = 0; i < 32; ++i) {
        alloc("cuMemAlloc_v2", 1, 0x100000 + i * 0x1000);
        if (uploads) pr.call("cuMemcpyHtoD_v2", Category::Transfer, 7, t, t + 50).stackId = 5;
        t += 100;
    }
    for (int i = 0; i < 10; ++i) {
        alloc("cuMemAlloc_v2", 2, 0x900000);
        pr.launch(7, t, t + 100, t + 200, t + 1200);
        t += 1300;
        alloc("cuMemFree_v2", 3, 0x900000);
    }
    for (uint64_t i = 0; i < 32; ++i) alloc("cuMemFree_v2", 4, 0x100000 + i * 0x1000);
    pr.p.lastNs = t;
    const WhatIf w = whatIf(pr.p, {}, {FixKind::HoistAllocs});
    EXPECT_EQ(w.scenarios.size(), 1u);
    return w.scenarios.empty() ? 0 : w.scenarios[0].effects[0].changed;
}

TEST(Fixes, HoistAllocsLeavesSetupAndTeardownAlone)
{
    EXPECT_EQ(hoistedWithSetup(false), 9u + 9u);
    EXPECT_EQ(hoistedWithSetup(true), 9u + 9u);
}

TEST(Replay, AStreamWaitingOnAnEventFollowsTheOtherStreamInTheReplay)
{
    // Stream A: a 1 ms copy-like kernel; event; stream B waits on it, then a 100 us kernel; host syncs B.
    // Halving nothing: the replay must keep B's kernel after A's.
    Proc pr;
    pr.launch(7, 1000, 2000, 3000, 1003000, 0xA);
    wire::CallBody& rec = pr.call("cuEventRecord", Category::Sync, 7, 2100, 2200, 0xA);
    rec.args.sync.object = 0xE;
    wire::CallBody& w8 = pr.call("cuStreamWaitEvent", Category::Sync, 7, 2300, 2400, 0xB);
    w8.args.sync.object = 0xE;
    pr.launch(7, 2500, 3500, 1003000, 1103000, 0xB);
    pr.sync(7, 3600, 1104000, 0xB);
    const RunGraph g = buildRunGraph(pr.p);
    ASSERT_EQ(g.ops.size(), 2u);
    EXPECT_EQ(g.ops[1].waitsCount, 1u);
    const Prediction p = simulate(g);
    EXPECT_EQ(p.wallNs, pr.p.lastNs);
    EXPECT_EQ(p.gpuBusyNs, 1100000u);
}

TEST(Replay, ASynchronousCopysLateEndEventDoesNotKeepTheGpuBusyInTheFix)
{
    // Per step: a 1 ms kernel, a synchronous 256 KiB copy of its result (10 us on the GPU) and 100 us of
    // host work. In steps 3 and 6 the host was descheduled inside the copy call for 2 ms after the copy
    // ended: the copy's end event, recorded after the return on an idle stream, reads 2 ms late. Made
    // async, the copies cannot keep the GPU busy for those 2 ms: the saving is every gap of the run.
    Proc pr;
    uint64_t t = 1000, gaps = 0, lastGpu = 0;
    for (int i = 0; i < 8; ++i) {
        const uint64_t k0 = t + 6000;
        pr.launch(7, t, t + 5000, k0, k0 + 1000000);
        if (lastGpu) gaps += k0 - lastGpu;
        const uint64_t late = (i == 3 || i == 6) ? 2000000 : 0;
        const uint64_t copyEnd = k0 + 1000000 + 10000;
        wire::CallBody& c = pr.call("cuMemcpyDtoH_v2", Category::Transfer, 7, t + 5100, copyEnd + late + 5000);
        c.flags = wire::kCallDeviceWork | wire::kCallImplicitSync | wire::kCallGpuTimed;
        c.args.transfer.direction = wire::Direction::DtoH;
        c.args.transfer.dstMem = wire::MemKind::Pinned;
        c.args.transfer.srcMem = wire::MemKind::Device;
        c.args.transfer.bytes = 256 << 10;
        pr.p.spans.push_back({c.seq, k0 + 1000000, copyEnd + late + 5000, 0, 0});
        lastGpu = copyEnd;
        t = copyEnd + late + 5000 + 100000;
    }
    pr.p.lastNs = t;
    const RunGraph g = buildRunGraph(pr.p);
    size_t trimmed = 0;
    for (const Op& op : g.ops) trimmed += op.trimmed;
    EXPECT_EQ(trimmed, 2u) << "only the two late ends are trimmed";
    const WhatIf w = whatIf(pr.p, {}, {FixKind::AsyncCopies});
    EXPECT_EQ(w.unchanged.prediction.wallNs, pr.p.lastNs) << "replayed unchanged, the run is the same";
    // Fixed: the kernels and copies back to back (the run ends when the last copy does).
    const uint64_t saved = savingOf(w, "async-copies");
    EXPECT_GT(double(saved), 0.9 * double(gaps)) << "gaps " << gaps;
    EXPECT_LT(double(saved), 1.1 * double(gaps)) << "gaps " << gaps;
}

// The report's findings with the replay's savings: thread 1 launches tiny kernels on device 1 (a
// launch-bound finding by the rule's formula) and ends at 0.4 ms; thread 2's 9 ms kernel on device 0 sets
// the end. The prediction replaces the formula: a graph for thread 1 saves nothing.
TEST(Predict, ALaunchBoundThreadOffTheCriticalPathIsPredictedToSaveNothing)
{
    Proc pr;
    uint64_t t = 1000;
    for (int i = 0; i < 40; ++i, t += 10000) {
        pr.launch(1, t, t + 9000, t + 9500, t + 10000, 0x20, 1);
        pr.p.calls.back().stackId = 5;
    }
    pr.sync(1, t, t + 1000, 0x20, 1);
    pr.launch(2, 2000, 3000, 3500, 9000000, 0x30, 0);
    pr.p.calls.back().stackId = 6;
    pr.sync(2, 3100, 9001000, 0x30, 0);
    pr.p.lastNs = 9002000;
    pr.p.kernels[1] = "_Z4tinyv";
    pr.p.ended = true;
    Capture capture;
    capture.processes.push_back(pr.p);
    Report r = analyze(capture, {});
    const auto it = std::find_if(r.findings.begin(), r.findings.end(), [](const Finding& f) { return f.rule == "launch-bound-kernels"; });
    ASSERT_NE(it, r.findings.end()) << "the rule fires on the tiny launches";
    const uint64_t formula = it->estimatedSavingsNs;
    EXPECT_GT(formula, 0u);
    EXPECT_TRUE(it->prediction.fix.empty());
    predictFindings(r, capture);
    const auto f = std::find_if(r.findings.begin(), r.findings.end(), [](const Finding& x) { return x.rule == "launch-bound-kernels"; });
    ASSERT_NE(f, r.findings.end());
    EXPECT_EQ(f->prediction.fix, "graphs");
    EXPECT_EQ(f->prediction.formulaNs, formula);
    EXPECT_EQ(f->prediction.changed, 40u) << "thread 1's launches, not thread 2's";
    EXPECT_EQ(f->estimatedSavingsNs, 0u);
    EXPECT_EQ(f->severity, "low");
    EXPECT_NE(f->message.find("does not set the end of the run"), std::string::npos) << f->message;
    EXPECT_NEAR(f->prediction.replayErrorPct, 0.0, 1e-9);
}

// A process past the reader's budget keeps a window of its latest calls (Process::windowed): the replay runs
// on the window and the finding's saving is taken to the whole run by its calls' share of the window. A
// 40-step sync loop (launch at stack 1, sync at stack 2), its window the last 10 steps: the extrapolated
// saving is the whole run's replayed saving within 10%, and its interval holds it.
Proc longSyncLoop()
{
    Proc pr;
    uint64_t t = 1000;
    for (int i = 0; i < 40; ++i) {
        pr.launch(7, t, t + 5000, t + 6000, t + 106000);
        pr.p.calls.back().stackId = 1;
        pr.sync(7, t + 5100, t + 107000);
        pr.p.calls.back().stackId = 2;
        t += 107000 + 50000;
    }
    pr.p.lastNs = t + 20000;
    pr.p.kernels[1] = "_Z4stepv";
    pr.p.ended = true;
    return pr;
}

// `p` as a reader past its budget keeps it: its last `keep` calls and their spans, every call counted by stack.
Process windowOf(const Process& whole, size_t keep)
{
    Process p = whole;
    p.windowed = true;
    p.callsSeen = whole.calls.size();
    for (const wire::CallBody& c : whole.calls) ++p.callsByStack[c.stackId];
    p.calls.erase(p.calls.begin(), p.calls.end() - std::ptrdiff_t(keep));
    const uint64_t first = p.calls.front().seq;
    p.spans.erase(std::remove_if(p.spans.begin(), p.spans.end(), [&](const wire::GpuSpanBody& s) { return s.seq < first; }),
                  p.spans.end());
    return p;
}

const Finding* ruleOf(const Report& r, const std::string& rule)
{
    for (const Finding& f : r.findings)
        if (f.rule == rule) return &f;
    return nullptr;
}

TEST(Predict, AProcessPastTheBudgetIsReplayedOnItsWindowAndItsSavingExtrapolated)
{
    const Proc pr = longSyncLoop();
    Capture whole;
    whole.processes.push_back(pr.p);
    Report full = analyze(whole, {});
    ASSERT_NE(ruleOf(full, "sync-in-loop"), nullptr) << "the rule fires on the loop";
    Report windowed = full;  // the streaming analysis saw every call either way
    predictFindings(full, whole);
    const Finding* f = ruleOf(full, "sync-in-loop");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(f->prediction.fix, "fewer-syncs");
    EXPECT_EQ(f->prediction.windowCalls, 0u) << "held whole, no window";
    const uint64_t truth = f->prediction.savingNs;
    ASSERT_GT(truth, 1'000'000u);

    Capture past;
    past.processes.push_back(windowOf(pr.p, 20));
    predictFindings(windowed, past);
    const Finding* w = ruleOf(windowed, "sync-in-loop");
    ASSERT_NE(w, nullptr);
    const FindingPrediction& p = w->prediction;
    ASSERT_EQ(p.fix, "fewer-syncs");
    EXPECT_EQ(p.windowCalls, 18u) << "the window's 20 calls from after its first synchronize";
    EXPECT_EQ(p.processCalls, 80u);
    EXPECT_EQ(p.findingWindowCalls, 9u) << "the syncs of the window's last 9 steps";
    EXPECT_EQ(p.findingCalls, 40u);
    EXPECT_NEAR(double(p.savingNs), double(truth), 0.1 * double(truth)) << "window " << p.savingNs << " whole " << truth;
    EXPECT_LE(p.lowNs, truth);
    EXPECT_GE(p.highNs, truth);
    EXPECT_LE(p.lowNs, p.savingNs);
    EXPECT_GE(p.highNs, p.savingNs);
    EXPECT_EQ(w->estimatedSavingsNs, p.savingNs);
    EXPECT_NE(w->message.find("ESTIMATE extrapolated from a window"), std::string::npos) << w->message;
    EXPECT_NE(w->message.find("latest 18 of 80 calls"), std::string::npos) << w->message;
    bool noted = false;
    for (const std::string& n : windowed.notes) noted = noted || n.find("42 (20 of 80 calls)") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(Predict, AFindingWithNoCallsInTheWindowKeepsItsFormula)
{
    // The window holds only calls of another stack (a tail loop at stack 3): the finding's saving stays
    // the rule's formula, and its message says why.
    Proc pr = longSyncLoop();
    uint64_t t = pr.p.lastNs;
    for (int i = 0; i < 10; ++i, t += 20000) {
        pr.launch(7, t, t + 5000, t + 6000, t + 16000);
        pr.p.calls.back().stackId = 3;
    }
    pr.p.lastNs = t;
    Capture whole;
    whole.processes.push_back(pr.p);
    Report r = analyze(whole, {});
    const Finding* before = ruleOf(r, "sync-in-loop");
    ASSERT_NE(before, nullptr);
    const uint64_t formula = before->estimatedSavingsNs;
    Capture past;
    past.processes.push_back(windowOf(pr.p, 10));
    predictFindings(r, past);
    const Finding* f = ruleOf(r, "sync-in-loop");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->prediction.fix.empty());
    EXPECT_EQ(f->estimatedSavingsNs, formula);
    EXPECT_NE(f->message.find("None of this finding's calls is in the window"), std::string::npos) << f->message;
}

TEST(Fixes, NamesRoundTrip)
{
    for (const FixInfo& f : allFixes()) {
        ASSERT_TRUE(fixByName(f.name).has_value()) << f.name;
        EXPECT_EQ(*fixByName(f.name), f.kind);
    }
    EXPECT_FALSE(fixByName("faster").has_value());
}

}  // namespace
}  // namespace gpuspy::collect::replay

namespace gpuspy::collect::replay {
namespace {

TEST(Replay, PoolThresholdMakesEachRegrowthCostAServedAllocation)
{
    // Ten steps on one thread: a stream-ordered allocation that grows the pool (30 us), its free, a second
    // allocation served from what the pool kept (2 us), its free, a stream synchronize that gives the
    // memory back (the default threshold). With the threshold set, the nine regrowths cost 2 us each.
    Proc pr;
    uint64_t t = 1000, ptr = 0x1000;
    for (int i = 0; i < 10; ++i) {
        for (uint64_t took : {30000, 2000}) {
            wire::CallBody& a = pr.call("cuMemAllocAsync", Category::Alloc, 1, t, t + took);
            a.flags = wire::kCallAsync;
            a.args.alloc.ptr = ++ptr;
            a.args.alloc.bytes = 8 << 20;
            t += took + 1000;
            wire::CallBody& f = pr.call("cuMemFreeAsync", Category::Alloc, 1, t, t + 1000);
            f.flags = wire::kCallAsync;
            f.args.alloc.ptr = ptr;
            t += 2000;
        }
        pr.sync(1, t, t + 1000);
        t += 2000;
    }
    const WhatIf w = whatIf(pr.p, {}, {FixKind::PoolThreshold});
    ASSERT_EQ(w.scenarios.size(), 1u);
    EXPECT_EQ(w.scenarios[0].effects[0].changed, 9u) << "the first growth is new memory: kept";
    EXPECT_NEAR(double(savingOf(w, "pool-threshold")), 9 * 28000.0, 1000.0);
}

}  // namespace
}  // namespace gpuspy::collect::replay

namespace gpuspy::collect::replay {
namespace {

// keep-library-setup: a handle made in each of 10 steps (two CUDA calls inside it, stacks 1 and 2, 300 us of the
// library's host work between them), then a 100 us kernel the host waits for, and 50 us of the user's own host
// work. Made once, the 9 later handles go with the host work between their calls; the user's stays. The upper end
// takes the host time around them as the library's too.
TEST(Fixes, KeepLibrarySetupTakesOutAllButTheFirstInvocation)
{
    Proc pr;
    uint64_t t = 1000;
    for (int i = 0; i < 10; ++i) {
        pr.call("cuMemAlloc_v2", Category::Alloc, 7, t, t + 100).stackId = 1;
        pr.call("cuMemcpyHtoD_v2", Category::Transfer, 7, t + 400, t + 500).stackId = 2;
        pr.launch(7, t + 550, t + 600, t + 650, t + 100650);
        pr.sync(7, t + 700, t + 100700);
        t += 100750;
    }
    pr.p.lastNs = t;
    const RunGraph g = buildRunGraph(pr.p);
    const Prediction before = simulate(g);
    FixScope scope;
    scope.stacks = {1, 2};
    scope.invocationKeys = {{1, 77}, {2, 77}};
    RunGraph fixed = g;
    const FixEffect fx = applyFix(fixed, FixKind::KeepLibrarySetup, calibrate(g), scope);
    EXPECT_EQ(fx.changed, 18u);
    const Prediction after = simulate(fixed);
    // Each later handle: its two calls (100 us each) and the 300 us between them.
    EXPECT_NEAR(double(before.wallNs - after.wallNs), 9 * 500.0, 9 * 10.0);
    scope.withSurroundingGaps = true;
    RunGraph wide = g;
    applyFix(wide, FixKind::KeepLibrarySetup, calibrate(g), scope);
    const Prediction upper = simulate(wide);
    EXPECT_GT(before.wallNs - upper.wallNs, before.wallNs - after.wallNs);
    // Without the finding's keys the fix has nothing to group, and says so.
    RunGraph none = g;
    const FixEffect nothing = applyFix(none, FixKind::KeepLibrarySetup, calibrate(g), FixScope{});
    EXPECT_EQ(nothing.changed, 0u);
    EXPECT_FALSE(nothing.keptWhy.empty());
}

}  // namespace
}  // namespace gpuspy::collect::replay
