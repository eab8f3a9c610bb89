// tests/unit/collector/timeline/device_timeline_test.cpp: the device timeline's placement of untimed operations
// on hand-built calls: in-order streams, submission times, anchors (timed ops, syncs, queries, blocking
// calls), events between streams, and the short/long passes.
#include "collector/timeline/device_timeline.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace gpuspy::collect {
namespace {

using wire::Category;

struct Harness {
    std::map<uint64_t, Placement> placed;
    DeviceTimeline tl{[this](const Placement& p) { placed[p.seq] = p; }};
    uint64_t seq = 0;

    wire::CallBody call(Category cat, uint64_t begin, uint64_t end, uint64_t stream = 0x10)
    {
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = begin;
        c.endNs = end;
        c.stream = stream;
        c.category = cat;
        c.device = 0;
        c.tid = 7;
        return c;
    }
    // A launch of kernel `k`; timed when gpuEnd > gpuBegin.
    DeviceTimeline::Result launch(uint32_t k, uint64_t begin, uint64_t end, uint64_t gpuBegin = 0, uint64_t gpuEnd = 0,
                                  uint64_t stream = 0x10)
    {
        wire::CallBody c = call(Category::Launch, begin, end, stream);
        c.args.launch.kernelId = k;
        c.args.launch.grid[0] = c.args.launch.grid[1] = c.args.launch.grid[2] = 1;
        std::vector<wire::GpuSpanBody> spans;
        if (gpuEnd > gpuBegin) spans.push_back({c.seq, gpuBegin, gpuEnd, 0, 0});
        return tl.add(c, TimelineRole::None, true, false, spans.empty() ? nullptr : &spans, false);
    }
    void sync(TimelineRole role, uint64_t begin, uint64_t end, uint64_t object = 0, uint64_t stream = 0x10, int32_t result = 0)
    {
        wire::CallBody c = call(Category::Sync, begin, end, stream);
        c.args.sync.object = object;
        c.result = result;
        tl.add(c, role, false, false, nullptr, false);
    }
    const Placement& at(uint64_t s) { return placed.at(s); }
};

TEST(DeviceTimeline, GpuBoundLaunchesQueueBackToBackUntilTheWaitReturns)
{
    Harness h;
    h.launch(1, 0, 1000, 1500, 21500);      // timed: 20 us
    h.launch(1, 2000, 3000, 21500, 41500);  // timed
    for (int i = 0; i < 10; ++i) {
        const auto r = h.launch(1, 4000 + uint64_t(i) * 1000, 5000 + uint64_t(i) * 1000);
        EXPECT_FALSE(r.foundEmpty);  // queued behind the work before
    }
    // The wait began at 15 us and returned at 241.5 us: it waited for the last kernel.
    h.sync(TimelineRole::CtxSync, 15000, 241500);
    uint64_t busy = 0, prevEnd = 41500;
    for (uint64_t s = 3; s <= 12; ++s) {
        const Placement& p = h.at(s);
        EXPECT_TRUE(p.estimated);
        EXPECT_EQ(p.begin[kEst], prevEnd) << s;  // no gap: the stream never emptied
        busy += p.end[kEst] - p.begin[kEst];
        prevEnd = p.end[kEst];
    }
    EXPECT_EQ(prevEnd, 241500u);
    EXPECT_EQ(busy, 200000u);
}

TEST(DeviceTimeline, HostBoundLaunchesFindTheirStreamEmpty)
{
    Harness h;
    h.launch(2, 0, 1000, 1500, 3500);  // 2 us kernels, launched every 10 us
    h.launch(2, 10000, 11000, 11500, 13500);
    for (int i = 2; i < 12; ++i) {
        const auto r = h.launch(2, uint64_t(i) * 10000, uint64_t(i) * 10000 + 1000);
        EXPECT_TRUE(r.foundEmpty) << i;
    }
    h.sync(TimelineRole::StreamSync, 125000, 126000);  // quick: nothing left to wait for
    for (uint64_t s = 3; s <= 12; ++s) {
        const Placement& p = h.at(s);
        // Starts at its call's return plus the latency learnt from the timed ones (500 ns), lasts 2 us.
        EXPECT_EQ(p.begin[kEst], (s - 1) * 10000 + 1500) << s;
        EXPECT_EQ(p.end[kEst] - p.begin[kEst], 2000u) << s;
    }
}

TEST(DeviceTimeline, AMeasuredOpHeldBackByUntimedWorkFillsTheStretch)
{
    Harness h;
    h.launch(3, 0, 1000, 1500, 11500);  // 10 us
    h.launch(3, 2000, 3000, 11500, 21500);
    h.launch(3, 4000, 5000);  // untimed: estimated 10 us, [21500, 31500)
    // A timed op that began at 40 us, long after its call returned at 7 us: the untimed one before it
    // ran until then (its real duration was longer than its siblings').
    h.launch(4, 6000, 7000, 40000, 45000);
    const Placement& p = h.at(3);
    EXPECT_EQ(p.begin[kEst], 21500u);
    EXPECT_EQ(p.end[kEst], 40000u);
}

TEST(DeviceTimeline, AWaitThatReturnedEarlierSqueezesTheEstimates)
{
    Harness h;
    h.launch(5, 0, 1000, 1500, 11500);
    h.launch(5, 2000, 3000, 11500, 21500);
    for (int i = 0; i < 4; ++i) h.launch(5, 4000 + uint64_t(i) * 1000, 5000 + uint64_t(i) * 1000);
    h.sync(TimelineRole::StreamSync, 9000, 45000);  // ended by 45 us, not 61.5 as estimated
    EXPECT_EQ(h.at(3).begin[kEst], 21500u);
    EXPECT_EQ(h.at(6).end[kEst], 45000u);
    for (uint64_t s = 3; s <= 6; ++s) EXPECT_LE(h.at(s).end[kHi], 45000u);
}

TEST(DeviceTimeline, ANotReadyQueryMeansStillBusy)
{
    Harness h;
    h.launch(6, 0, 1000, 1500, 3500);
    h.launch(6, 2000, 3000, 3500, 5500);
    h.launch(6, 4000, 5000);  // estimated [5500, 7500)
    h.sync(TimelineRole::StreamQuery, 20000, 20500, 0, 0x10, 600);  // not ready at 20 us
    h.sync(TimelineRole::StreamQuery, 30000, 30500);                 // done by 30.5 us
    EXPECT_GE(h.at(3).end[kEst], 20000u);
    EXPECT_LE(h.at(3).end[kEst], 30500u);
}

TEST(DeviceTimeline, AStreamWaitingOnAnEventStartsAfterTheRecordedWork)
{
    Harness h;
    // Copy stream 0x20: a timed 50 us op, then an event; compute stream 0x30 waits for it.
    h.launch(7, 0, 1000, 1500, 51500, 0x20);
    {
        wire::CallBody c = h.call(Category::Other, 1100, 1200, 0x20);
        c.args.sync.object = 0xE1;
        h.tl.add(c, TimelineRole::EventRecord, false, false, nullptr, false);
    }
    h.sync(TimelineRole::StreamWaitEvent, 1300, 1400, 0xE1, 0x30);
    h.launch(8, 1500, 2500, 3000, 5000, 0x40);  // a timed sibling on another stream: 2 us
    h.launch(8, 2600, 3600, 0, 0, 0x30);         // untimed on the waiting stream
    h.sync(TimelineRole::CtxSync, 60000, 60500);
    EXPECT_GE(h.at(5).begin[kEst], 51500u) << "placed before the event it waits on completed";
}

// cuStreamWaitValue32 on stream 0x30 before (in host order) the cuStreamWriteValue32 on 0x20 that
// satisfies it, after a long kernel there: the waiting stream's untimed work is placed after the write,
// and the wait itself is no device work.
TEST(DeviceTimeline, AStreamWaitingOnAValueStartsAfterTheWriteThatSatisfiesIt)
{
    Harness h;
    h.launch(8, 100, 200, 1000, 3000, 0x40);  // a timed sibling on another stream: 2 us
    h.sync(TimelineRole::WaitValue, 300, 400, 0xF1A9, 0x30);
    h.launch(8, 500, 600, 0, 0, 0x30);         // untimed on the waiting stream: would start at ~600
    h.launch(7, 700, 800, 900, 50900, 0x20);   // 50 us on the writer's stream
    {
        wire::CallBody c = h.call(Category::Other, 900, 1000, 0x20);
        c.args.sync.object = 0xF1A9;
        std::vector<wire::GpuSpanBody> spans{{c.seq, 50900, 51900, 0, 0}};
        const auto r = h.tl.add(c, TimelineRole::WriteValue, true, false, &spans, false);
        EXPECT_TRUE(r.deviceOp);
    }
    h.sync(TimelineRole::CtxSync, 60000, 60500);
    EXPECT_EQ(h.placed.count(2), 0u) << "the wait is not device work";
    EXPECT_EQ(h.at(5).end[kEst], 51900u) << "the write is placed where it was measured";
    for (int k : {kEst, kLo, kHi})
        EXPECT_GE(h.at(3).begin[k], 51900u) << "pass " << k << ": placed before the write it waits for";
    EXPECT_EQ(h.at(3).end[kEst] - h.at(3).begin[kEst], 2000u) << "its length is its sibling's";
}

// A measured op that began late after a wait-value was held by the wait: the untimed work before the wait
// did not run until then (a late begin otherwise says the stream was busy until it).
TEST(DeviceTimeline, AnOpHeldByAWaitValueDoesNotStretchTheWorkBeforeIt)
{
    Harness h;
    h.launch(8, 100, 200, 1000, 3000, 0x40);   // a timed sibling: 2 us (and the device's latency)
    h.launch(9, 300, 400, 1100, 1500, 0x40);   // kernel 9: 400 ns, measured
    h.launch(9, 500, 600, 0, 0, 0x30);         // seq 3: untimed, ~400 ns
    h.sync(TimelineRole::WaitValue, 700, 800, 0xF1A9, 0x30);
    h.launch(8, 900, 1000, 50000, 52000, 0x30);  // measured, held by the wait until 50 us
    h.sync(TimelineRole::CtxSync, 60000, 60500);
    EXPECT_LT(h.at(3).end[kEst], 10000u) << "the work before the wait was stretched to the held op's begin";
}

// timeline_loops' two streams: an untimed copy on 0x20, an event, the compute stream 0x30 waits for it,
// then an untimed kernel and a measured one that began late. The copy ran longer than its estimate: the
// late begin is the copy's doing (the untimed kernel moved later, not longer); only the long pass may
// say the kernel ran until then. (Taken for a hold by the kernel itself, the estimate doubled the
// compute stream's busy time on a loaded machine.)
TEST(DeviceTimeline, AnOpHeldByAnotherStreamsEstimatedWorkDoesNotStretchTheWorkBeforeIt)
{
    Harness h;
    h.launch(8, 100, 200, 1000, 3000, 0x40);   // kernel 8: 2 us measured (and the device's latency)
    h.launch(7, 300, 400, 3000, 13000, 0x20);  // kernel 7 ("the copy"): 10 us measured
    h.launch(7, 500, 600, 0, 0, 0x20);         // seq 3: untimed, estimated [13000, 23000)
    {
        wire::CallBody c = h.call(Category::Other, 700, 800, 0x20);
        c.args.sync.object = 0xE2;
        h.tl.add(c, TimelineRole::EventRecord, false, false, nullptr, false);
    }
    h.sync(TimelineRole::StreamWaitEvent, 900, 1000, 0xE2, 0x30);
    h.launch(8, 1100, 1200, 0, 0, 0x30);            // seq 6: untimed, estimated [23000, 25000)
    h.launch(8, 1300, 1400, 60000, 62000, 0x30);    // measured, began at 60 us
    h.sync(TimelineRole::CtxSync, 70000, 70500);
    const Placement& k = h.at(6);
    EXPECT_EQ(k.end[kEst] - k.begin[kEst], 2000u) << "the estimate keeps its sibling's length";
    EXPECT_EQ(k.end[kLo] - k.begin[kLo], 2000u) << "the short pass too";
    EXPECT_EQ(k.end[kHi], 60000u) << "the long pass: it may have run until the measured op began";
}

// The write came first (in host order): the wait finds it, and the stream's next work follows it.
TEST(DeviceTimeline, AValueWrittenBeforeTheWaitHoldsTheStreamUntilTheWriteEnds)
{
    Harness h;
    h.launch(8, 100, 200, 1000, 3000, 0x40);
    h.launch(7, 300, 400, 500, 40500, 0x20);
    {
        wire::CallBody c = h.call(Category::Other, 500, 600, 0x20);
        c.args.sync.object = 0xF1A9;
        std::vector<wire::GpuSpanBody> spans{{c.seq, 40500, 41500, 0, 0}};
        h.tl.add(c, TimelineRole::WriteValue, true, false, &spans, false);
    }
    h.sync(TimelineRole::WaitValue, 700, 800, 0xF1A9, 0x30);
    h.launch(8, 900, 1000, 0, 0, 0x30);
    h.sync(TimelineRole::CtxSync, 60000, 60500);
    EXPECT_GE(h.at(5).begin[kEst], 41500u);
    EXPECT_EQ(timelineRole("cuStreamWaitValue64_v2_ptsz"), TimelineRole::WaitValue);
    EXPECT_EQ(timelineRole("cuStreamWriteValue32_v2"), TimelineRole::WriteValue);
}

// cuStreamBatchMemOp: a wait unless it writes (then device work, a write of its object's address). Its wait
// holds the stream as cuStreamWaitValue32 does: the held measured op does not stretch the work before it.
TEST(DeviceTimeline, ABatchOfMemoryOperationsWaitsUnlessItWrites)
{
    Harness h;
    EXPECT_EQ(timelineRole("cuStreamBatchMemOp_v2_ptsz"), TimelineRole::WaitValue);
    h.launch(8, 100, 200, 1000, 3000, 0x40);
    h.launch(9, 300, 400, 1100, 1500, 0x40);
    h.launch(9, 500, 600, 0, 0, 0x30);  // seq 3: untimed, ~400 ns
    h.sync(TimelineRole::WaitValue, 700, 800, 0xF1A9, 0x30);  // the batch that waits (no device work)
    h.launch(8, 900, 1000, 50000, 52000, 0x30);
    {
        wire::CallBody c = h.call(Category::Other, 1100, 1200, 0x20);  // seq 6: the batch that writes, untimed
        c.args.sync.object = 0xF1A9;
        EXPECT_TRUE(h.tl.add(c, TimelineRole::WaitValue, true, false, nullptr, false).deviceOp);
    }
    h.sync(TimelineRole::CtxSync, 60000, 60500);
    EXPECT_LT(h.at(3).end[kEst], 10000u) << "the work before the batch's wait was stretched to the held op's begin";
    EXPECT_EQ(h.placed.count(6), 1u) << "the batch that writes is device work";
}

// Green contexts: cuGreenCtxStreamCreate names the stream (the record's stream) of the green context
// (the object); cuGreenCtxWaitEvent holds every stream of it back until the event completes, and an
// event recorded on the green context completes when the last of its streams' work does.
TEST(DeviceTimeline, AGreenContextsWaitHoldsItsStreamsAndItsRecordFollowsThem)
{
    Harness h;
    auto greenCall = [&](TimelineRole role, uint64_t begin, uint64_t object, uint64_t stream) {
        wire::CallBody c = h.call(Category::Other, begin, begin + 100, stream);
        c.args.sync.object = object;
        h.tl.add(c, role, false, false, nullptr, false);
    };
    greenCall(TimelineRole::GreenStream, 100, 0x6000, 0x50);
    greenCall(TimelineRole::GreenStream, 200, 0x6000, 0x51);
    h.launch(8, 300, 400, 1000, 3000, 0x40);    // a timed sibling: 2 us
    h.launch(7, 500, 600, 700, 40700, 0x20);    // 40 us on an ordinary stream, then an event
    {
        wire::CallBody c = h.call(Category::Other, 700, 800, 0x20);
        c.args.sync.object = 0xE1;
        h.tl.add(c, TimelineRole::EventRecord, false, false, nullptr, false);
    }
    greenCall(TimelineRole::GreenWait, 900, 0xE1, 0x6000);
    h.launch(8, 1000, 1100, 0, 0, 0x51);         // seq 7: untimed on a green stream, after the wait
    greenCall(TimelineRole::GreenRecord, 1200, 0xE2, 0x6000);
    h.sync(TimelineRole::StreamWaitEvent, 1300, 1400, 0xE2, 0x30);
    h.launch(8, 1500, 1600, 0, 0, 0x30);         // seq 10: untimed, after the green context's work
    h.sync(TimelineRole::CtxSync, 60000, 60500);
    EXPECT_GE(h.at(7).begin[kEst], 40700u) << "the green stream started before the event it waited on";
    EXPECT_GE(h.at(10).begin[kEst], h.at(7).end[kEst]) << "placed before the green context's work ended";
    EXPECT_EQ(timelineRole("cuGreenCtxWaitEvent"), TimelineRole::GreenWait);
}

TEST(DeviceTimeline, TheShortAndLongPassesBracketTheEstimate)
{
    Harness h;
    // Timed durations 8 (a first launch, dropped once others are known), 10, 12 and 2 us; untimed ones
    // then take the median, the 10th and 90th percentiles.
    h.launch(9, 0, 1000, 1500, 9500);
    h.launch(9, 100000, 101000, 101500, 111500);
    h.launch(9, 200000, 201000, 201500, 213500);
    h.launch(9, 300000, 301000, 301500, 303500);
    h.launch(9, 400000, 401000);
    h.tl.finish();
    const Placement& p = h.at(5);
    EXPECT_LE(p.end[kLo] - p.begin[kLo], p.end[kEst] - p.begin[kEst]);
    EXPECT_GE(p.end[kHi] - p.begin[kHi], p.end[kEst] - p.begin[kEst]);
    EXPECT_LT(p.end[kLo] - p.begin[kLo], p.end[kHi] - p.begin[kHi]);
}

TEST(DeviceTimeline, AStreamSyncsDrainMarkEndsTheWorkExactly)
{
    // The shim recorded an event before the wait (gpuMarkDrain): it completed at 37 us, when the
    // stream drained, although the wait returned at 60 us (a late wake-up) and the estimates said 41.5.
    Harness h;
    h.launch(12, 0, 1000, 1500, 11500);
    h.launch(12, 2000, 3000, 11500, 21500);
    h.launch(12, 4000, 5000);  // estimated [21500, 31500)
    h.launch(12, 6000, 7000);  // estimated [31500, 41500)
    wire::CallBody c = h.call(Category::Sync, 8000, 60000);
    std::vector<wire::GpuSpanBody> mark{{c.seq, 37000, 37000, 0, 0}};
    h.tl.add(c, TimelineRole::StreamSync, false, false, &mark, false);
    EXPECT_EQ(h.at(4).end[kEst], 37000u);
    EXPECT_EQ(h.at(4).end[kLo], 37000u);
    EXPECT_EQ(h.at(4).end[kHi], 37000u);
    EXPECT_LT(h.at(3).begin[kEst], h.at(4).begin[kEst]);
}

TEST(DeviceTimeline, NothingAlikeTimedIsCountedAndBoundedByTheWait)
{
    Harness h;
    const auto r = h.launch(10, 0, 1000);
    EXPECT_FALSE(r.known);
    EXPECT_EQ(h.tl.unknownOps(), 1u);
    h.sync(TimelineRole::StreamSync, 2000, 50000);  // blocked: the kernel ran until the return
    EXPECT_EQ(h.at(1).end[kEst], 50000u);
}

TEST(DeviceTimeline, TheFirstMeasuredOpMayHaveBeenHeldBackByUntimedWork)
{
    // The first launch lost its timing (its end event came late) and nothing alike was timed before
    // it; the next one, the device's first measured op, began 3 ms after its call returned. No latency
    // is known yet to judge whether it was held back: the untimed kernel may have run until then.
    Harness h;
    const auto r = h.launch(13, 0, 80000);
    EXPECT_FALSE(r.known);
    h.launch(13, 90000, 100000, 3000000, 6000000);
    const Placement& p = h.at(1);
    EXPECT_EQ(p.end[kEst], 3000000u);
    EXPECT_EQ(p.end[kHi], 3000000u);
    EXPECT_EQ(p.end[kLo], p.begin[kLo]);  // the short pass: it may have been over at once
}

TEST(DeviceTimeline, UntimedWorkOfUnknownLengthSpansTheLongPassToItsAnchor)
{
    // Once the latency is known, a measured op that began on time says the stream was empty: the
    // untimed op of unknown length ended by then, anywhere from at once (estimate, short pass) to then
    // (long pass).
    Harness h;
    h.launch(14, 0, 1000, 1500, 3500);  // the latency: 500 ns
    h.launch(15, 10000, 11000);         // nothing alike timed
    h.launch(14, 50000, 51000, 51500, 53500);
    const Placement& p = h.at(2);
    EXPECT_EQ(p.end[kEst], p.begin[kEst]);
    EXPECT_EQ(p.end[kHi], 51500u);
}

TEST(DeviceTimeline, AnUntimedBlockingCopyHeldUpOffTheCpuIsNotAllDeviceWork)
{
    // Blocking copies on an idle stream are timed only as upper bounds (25 us); an untimed one whose call
    // was held up for 1.6 ms (a loaded machine) ran somewhere inside it: the estimate takes what its
    // bounded siblings took at most, the short pass none of it, the long pass the whole call (CI failure
    // of report.host_work.setup_uploads: the short pass took the whole call and missed the truth).
    Harness h;
    auto copy = [&](uint64_t begin, uint64_t end, uint64_t gpuBegin, uint64_t gpuEnd) {
        wire::CallBody c = h.call(Category::Transfer, begin, end);
        c.args.transfer.bytes = 65536;
        std::vector<wire::GpuSpanBody> spans;
        if (gpuEnd > gpuBegin) spans.push_back({c.seq, gpuBegin, gpuEnd, 0, 0});
        return h.tl.add(c, TimelineRole::None, true, true, spans.empty() ? nullptr : &spans, !spans.empty());
    };
    copy(0, 30000, 2000, 27000);
    copy(100000, 130000, 102000, 127000);
    const auto r = copy(200000, 1800000, 0, 0);
    EXPECT_FALSE(r.known);
    const Placement& p = h.at(3);
    EXPECT_EQ(p.end[kEst], 1800000u);
    EXPECT_EQ(p.end[kEst] - p.begin[kEst], 25000u);
    EXPECT_EQ(p.end[kLo], p.begin[kLo]);
    EXPECT_EQ(p.begin[kHi], 200000u);
    EXPECT_EQ(p.end[kHi], 1800000u);
}

TEST(DeviceTimeline, PendingWorkHoldsBackWhatIsFinal)
{
    Harness h;
    h.launch(11, 0, 1000, 1500, 3500);
    EXPECT_EQ(h.tl.pendingFrom(), UINT64_MAX);
    h.launch(11, 5000, 6000);
    EXPECT_LE(h.tl.pendingFrom(), 6000u + 500);
    h.tl.finish();
    EXPECT_EQ(h.tl.pendingFrom(), UINT64_MAX);
    EXPECT_TRUE(h.placed.count(2));
}

}  // namespace
}  // namespace gpuspy::collect
