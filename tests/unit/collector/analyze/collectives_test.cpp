// tests/unit/collector/analyze/collectives_test.cpp: NCCL's operations (Collective records) joined to the
// kernel launches that carried them (collector/analyze/collectives.cpp): bytes as nccl-tests counts them, a
// fused launch's time split by bytes, bandwidths, and each rank's wait for the last rank across processes.
#include "collector/analyze/analyze.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuspy::collect {
namespace {

constexpr uint64_t kComm = 0xabcdef0123456789ull;

// One rank's process: NCCL's kernel (id 1), its strings, and calls/spans/collectives added in time order.
struct Rank {
    Process p;
    uint64_t seq = 0;
    explicit Rank(uint32_t pid)
    {
        p.pid = pid;
        p.devices[0] = "Simulated GPU";
        p.apis[1] = ApiInfo{"cuLaunchKernelEx", wire::Category::Launch};
        p.kernels[1] = "_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE";
        const char* names[] = {"", "AllReduce", "AllGather", "ncclFloat32", "RING", "SIMPLE", "Send", "ncclBfloat16"};
        for (uint32_t i = 1; i < 8; ++i) p.strings[i] = names[i];
    }
    // A launch of NCCL's kernel on the thread at [begin, begin+10), its GPU span [gpuBegin, gpuEnd).
    void launch(uint64_t begin, uint64_t gpuBegin, uint64_t gpuEnd)
    {
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = begin;
        c.endNs = begin + 10;
        c.tid = 7;
        c.apiId = 1;
        c.category = wire::Category::Launch;
        c.flags = wire::kCallDeviceWork | wire::kCallAsync | wire::kCallGpuTimed;
        c.args.launch.kernelId = 1;
        p.calls.push_back(c);
        wire::GpuSpanBody s{};
        s.seq = c.seq;
        s.beginNs = gpuBegin;
        s.endNs = gpuEnd;
        p.spans.push_back(s);
        p.lastNs = std::max(p.lastNs, gpuEnd);
    }
    // A launch whose span was lost (flagged timed, no span came: its thread held up on an idle stream).
    void launchUntimed(uint64_t begin)
    {
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = begin;
        c.endNs = begin + 10;
        c.tid = 7;
        c.apiId = 1;
        c.category = wire::Category::Launch;
        c.flags = wire::kCallDeviceWork | wire::kCallAsync | wire::kCallGpuTimed;
        c.args.launch.kernelId = 1;
        p.calls.push_back(c);
        p.lastNs = std::max(p.lastNs, c.endNs);
    }
    // An operation NCCL scheduled at `at`, carried by the launch that began at launchNs.
    void op(uint32_t func, uint32_t type, uint64_t count, uint64_t seqNo, int rank, uint64_t launchNs, uint64_t at,
            wire::CollectiveKind kind = wire::CollectiveKind::Collective)
    {
        wire::CollectiveBody b{};
        b.startNs = at;
        b.launchNs = launchNs;
        b.commId = kComm;
        b.seq = seqNo;
        b.count = count;
        b.tid = 7;
        b.funcId = func;
        b.datatypeId = type;
        b.algoId = kind == wire::CollectiveKind::Collective ? 4 : 0;
        b.protoId = kind == wire::CollectiveKind::Collective ? 5 : 0;
        b.nranks = 2;
        b.rank = rank;
        b.nNodes = 1;
        b.kind = kind;
        p.collectives.push_back(b);
    }
};

const CollectiveRow* rowOf(const Report& r, int rank, const std::string& op)
{
    for (const CollectiveRow& c : r.collectives)
        if (c.rank == rank && c.op == op) return &c;
    return nullptr;
}

TEST(Collectives, FusedLaunchSplitByBytesAndEachRankWaitsForTheLast)
{
    // Two processes, one rank each. Step 0: an all-reduce of 1024 floats (4 KiB) and an all-gather of 256
    // floats per rank (2 x 1 KiB = 2 KiB) fused into one kernel. Rank 0 starts its kernel at 1000, rank 1 at
    // 1600: rank 0 waits 600 of its 1200; rank 1 waits none. Step 1: all-reduce alone, both at 5000.
    Rank r0(100), r1(200);
    r0.launch(900, 1000, 2200);
    r0.op(1, 3, 1024, 0, 0, 890, 915);
    r0.op(2, 3, 256, 0, 0, 890, 916);
    r1.launch(1500, 1600, 2200);
    r1.op(1, 3, 1024, 0, 1, 1490, 1515);
    r1.op(2, 3, 256, 0, 1, 1490, 1516);
    r0.launch(4900, 5000, 5300);
    r0.op(1, 3, 1024, 1, 0, 4890, 4915);
    r1.launch(4900, 5000, 5300);
    r1.op(1, 3, 1024, 1, 1, 4890, 4915);
    Capture cap;
    cap.processes = {r0.p, r1.p};
    const Report r = analyze(cap, {});
    ASSERT_EQ(r.collectives.size(), 4u);
    const CollectiveRow* ar0 = rowOf(r, 0, "AllReduce");
    const CollectiveRow* ag0 = rowOf(r, 0, "AllGather");
    const CollectiveRow* ar1 = rowOf(r, 1, "AllReduce");
    ASSERT_TRUE(ar0 && ag0 && ar1);
    EXPECT_EQ(ar0->calls, 2u);
    EXPECT_EQ(ar0->bytes, 2 * 4096u);
    EXPECT_EQ(ag0->bytes, 2 * 1024u);  // the all-gather's message: every rank's part
    EXPECT_EQ(ar0->launched, 2u);
    EXPECT_EQ(ar0->timed, 2u);
    EXPECT_EQ(ar0->fused, 1u);
    EXPECT_EQ(ar0->algorithm, "RING/SIMPLE");
    // Step 0's kernel (1200) split 4096 : 2048; step 1's 300 the all-reduce's alone.
    EXPECT_EQ(ar0->gpuNs, 800u + 300u);
    EXPECT_EQ(ag0->gpuNs, 400u);
    // Waits: rank 0's step-0 kernel waited 600 of 1200, split as its time is; step 1 none.
    EXPECT_EQ(ar0->withPeers, 2u);
    EXPECT_EQ(ar0->waitNs, 400u);
    EXPECT_EQ(ag0->waitNs, 200u);
    EXPECT_EQ(ar0->moveNs, 400u + 300u);
    EXPECT_EQ(ar1->waitNs, 0u);
    // Bandwidth over the timed bytes and time; all-reduce's bus factor for 2 ranks: 2 (n-1)/n = 1.
    EXPECT_NEAR(ar0->algBwGBps, 8192.0 / 1100.0, 1e-9);
    EXPECT_NEAR(ar0->busBwGBps, ar0->algBwGBps, 1e-9);
    EXPECT_NEAR(ag0->busBwGBps, ag0->algBwGBps * 0.5, 1e-9);
}

TEST(Collectives, AnOperationWithoutItsLaunchCountsItsBytesOnly)
{
    // A send of 100 bf16 with no NCCL launch recorded after it (the launch fell outside a capture window):
    // counted and sized, not matched; a collective of a rank whose peers are not in the capture has no wait.
    Rank r0(100);
    r0.op(6, 7, 100, ~0ull, 0, 500, 510, wire::CollectiveKind::PointToPoint);
    r0.launch(900, 1000, 1500);
    r0.op(1, 3, 10, 0, 0, 890, 915);
    Capture cap;
    cap.processes = {r0.p};
    const Report r = analyze(cap, {});
    const CollectiveRow* send = rowOf(r, 0, "Send");
    const CollectiveRow* ar = rowOf(r, 0, "AllReduce");
    ASSERT_TRUE(send && ar);
    EXPECT_TRUE(send->pointToPoint);
    EXPECT_EQ(send->bytes, 200u);
    EXPECT_EQ(send->launched, 0u);
    EXPECT_EQ(send->gpuNs, 0u);
    EXPECT_EQ(ar->launched, 1u);
    EXPECT_EQ(ar->gpuNs, 500u);
    EXPECT_EQ(ar->withPeers, 0u);
    EXPECT_EQ(ar->waitNs, 0u);
}

TEST(Collectives, ARankLastAtMostCollectivesIsAStragglerWithItsCause)
{
    // Two ranks, 6 all-reduces 100 us apart. Rank 1 launches 40 us after rank 0 each time (its host is late)
    // and its kernel starts 40 us later: rank 0 waits 40 us each time. Step 0: rank 1 launches in time but its
    // kernel starts 30 us later (its stream was busy): also last, late on the GPU.
    Rank r0(100), r1(200);
    for (uint64_t k = 0; k < 6; ++k) {
        const uint64_t t = 1'000'000 + k * 100'000;
        const uint64_t lag = k == 0 ? 0 : 40'000, start = k == 0 ? 30'000 : 40'000;
        r0.launch(t, t + 100, t + 50'100);
        r0.op(1, 3, 1024, k, 0, t - 10, t + 20);
        r1.launch(t + lag, t + 100 + start, t + 50'100);
        r1.op(1, 3, 1024, k, 1, t + lag - 10, t + lag + 20);
    }
    Capture cap;
    cap.processes = {r0.p, r1.p};
    const Report r = analyze(cap, {});
    ASSERT_EQ(r.stragglers.size(), 1u);
    const StragglerRow& s = r.stragglers[0];
    EXPECT_EQ(s.rank, 1);
    EXPECT_EQ(s.pid, 200u);
    EXPECT_EQ(s.compared, 6u);
    EXPECT_EQ(s.collectives, 6u);
    EXPECT_EQ(s.last, 6u);
    EXPECT_EQ(s.lateNs, 30'000u + 5 * 40'000u);
    EXPECT_EQ(s.othersWaitNs, s.lateNs);  // one other rank
    EXPECT_EQ(s.hostLate, 5u);
    EXPECT_EQ(s.gpuLate, 1u);
    EXPECT_EQ(s.medianHostLagNs, 40'000u);
    EXPECT_EQ(s.medianIntervalNs, 100'000u);
    bool found = false;
    for (const Finding& f : r.findings)
        if (f.rule == "straggler") {
            found = true;
            EXPECT_EQ(f.estimatedSavingsNs, s.lateNs);
            EXPECT_EQ(f.savingsBound, "at_most");
            EXPECT_NE(f.message.find("Its host was late"), std::string::npos) << f.message;
        }
    EXPECT_TRUE(found);
}

TEST(Collectives, ALastRankWhoseKernelWasNotTimedIsToldByItsLaunch)
{
    // As above, 6 all-reduces 100 us apart, rank 1 late on the host by 40 us. Steps 0-2 timed on both ranks
    // (step 0: late on the GPU by 30 us). Steps 3 and 4: rank 1's span lost, but its launch began 39.9 us after
    // rank 0's kernel had started: it was last, late by at least that. Step 5: rank 1's span lost and its
    // launch came in time: nothing can be told.
    Rank r0(100), r1(200);
    for (uint64_t k = 0; k < 6; ++k) {
        const uint64_t t = 1'000'000 + k * 100'000;
        const uint64_t lag = k == 0 || k == 5 ? 0 : 40'000, start = k == 0 ? 30'000 : 40'000;
        r0.launch(t, t + 100, t + 50'100);
        r0.op(1, 3, 1024, k, 0, t - 10, t + 20);
        if (k < 3)
            r1.launch(t + lag, t + 100 + start, t + 50'100);
        else
            r1.launchUntimed(t + lag);
        r1.op(1, 3, 1024, k, 1, t + lag - 10, t + lag + 20);
    }
    Capture cap;
    cap.processes = {r0.p, r1.p};
    const Report r = analyze(cap, {});
    ASSERT_EQ(r.stragglers.size(), 1u);
    const StragglerRow& s = r.stragglers[0];
    EXPECT_EQ(s.rank, 1);
    EXPECT_EQ(s.compared, 3u);
    EXPECT_EQ(s.ordered, 2u);
    EXPECT_EQ(s.last, 3u);
    EXPECT_EQ(s.lastOrdered, 2u);
    EXPECT_EQ(s.lateNs, 30'000u + 2 * 40'000u);       // measured: the compared ones only
    EXPECT_EQ(s.lateLowNs, 2 * 39'900u);              // launch begin less rank 0's kernel start
    EXPECT_EQ(s.othersWaitNs, s.lateNs);
    EXPECT_EQ(s.hostLate, 2u + 2u);
    const Finding* f = nullptr;
    for (const Finding& x : r.findings)
        if (x.rule == "straggler") f = &x;
    ASSERT_TRUE(f);
    EXPECT_EQ(f->count, 5u);
    EXPECT_EQ(f->savingsBound, "estimate");  // the compared ones' lateness, scaled to all 6
    EXPECT_EQ(f->estimatedSavingsNs, s.lateNs * 6 / 3);
    EXPECT_NE(f->message.find("last at 5 of 5 collectives (2 of them told by its launch alone"), std::string::npos) << f->message;
}

TEST(Collectives, OnlyTimedKernelsGiveTheirEndsForTheClockAlignment)
{
    // Each rank's timed kernels give their collective's end (on its clock) for aligning several captures
    // (clock_align.h); a launch whose span was lost has no known end: none is given (not 0).
    Rank r0(100), r1(200);
    for (uint64_t k = 0; k < 4; ++k) {
        const uint64_t t = 1'000'000 + k * 100'000;
        r0.launch(t, t + 100, t + 50'100);
        r0.op(1, 3, 1024, k, 0, t - 10, t + 20);
        if (k == 2)
            r1.launchUntimed(t);
        else
            r1.launch(t, t + 100, t + 50'100);
        r1.op(1, 3, 1024, k, 1, t - 10, t + 20);
    }
    Capture cap;
    cap.processes = {r0.p, r1.p};
    const Report r = analyze(cap, {});
    ASSERT_EQ(r.collectiveEnds.size(), 7u);
    for (const CollectiveEnd& e : r.collectiveEnds) {
        EXPECT_EQ(e.commId, kComm);
        EXPECT_EQ(e.op, "AllReduce");
        EXPECT_EQ(e.endNs, 1'000'000 + e.seq * 100'000 + 50'100) << "rank " << e.rank << " seq " << e.seq;
        EXPECT_FALSE(e.rank == 1 && e.seq == 2);
    }
}

}  // namespace
}  // namespace gpuspy::collect
