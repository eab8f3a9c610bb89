// Several captures on one clock (collector/analyze/clock_align.h): synthetic ranks whose clocks are off by
// known amounts, their collectives ending together on the true clock, with noise.
#include "collector/analyze/clock_align.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

using namespace gpuspy::collect;

namespace {

constexpr uint64_t kReal0 = 1765000000000000000ull;

// A capture whose monotonic clock reads `offset` more than the true one (the first capture's), with its
// wall-clock pair off by `wallError` (another host's realtime clock) and `collectives` all-reduces of
// communicator 77 whose ends are the true ends plus noise of up to `noise` ns.
CaptureClock rankCapture(const std::string& name, int rank, int64_t offset, int64_t wallError, int collectives,
                         int64_t noise, std::mt19937_64& rng)
{
    CaptureClock c;
    c.name = name;
    c.host = wallError ? "node-" + name : "node-a";
    const uint64_t trueMono = 5'000'000'000ull;
    c.pair = ClockPair{uint64_t(int64_t(kReal0) + wallError), uint64_t(int64_t(trueMono) + offset), 200};
    std::uniform_int_distribution<int64_t> jitter(-noise, noise);
    for (int i = 0; i < collectives; ++i) {
        const int64_t trueEnd = int64_t(trueMono) + 1'000'000 + int64_t(i) * 250'000;
        c.ends.push_back(CollectiveEnd{77, "AllReduce", uint64_t(i), rank, uint64_t(trueEnd + offset + (noise ? jitter(rng) : 0))});
    }
    return c;
}

}  // namespace

TEST(ClockAlign, WallClockPairsAloneRecoverAnOffsetOnOneHost)
{
    std::mt19937_64 rng(1);
    std::vector<CaptureClock> caps = {rankCapture("a", 0, 0, 0, 0, 0, rng), rankCapture("b", 1, 123'456'789, 0, 0, 0, rng)};
    const auto a = alignClocks(caps);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].basis, "reference");
    EXPECT_EQ(a[0].shiftNs, 0);
    EXPECT_EQ(a[1].basis, "wall_clock");
    EXPECT_EQ(a[1].shiftNs, -123'456'789);
    EXPECT_EQ(a[1].pairErrorNs, 200u);
    const auto notes = clockAlignmentNotes(a);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_TRUE(a[1].sameHost);
    EXPECT_NE(notes[0].find("the same host: within 200 ns"), std::string::npos) << notes[0];
}

// Two hosts whose realtime clocks disagree by 3 ms (NTP): the wall clock is off by that much, the
// collectives' ends bring it back to within their noise.
TEST(ClockAlign, CollectivesRefineWhatTheWallClockGot)
{
    std::mt19937_64 rng(2);
    std::vector<CaptureClock> caps = {rankCapture("a", 0, 0, 0, 200, 2'000, rng),
                                      rankCapture("b", 1, -4'000'000'000, 3'000'000, 200, 2'000, rng),
                                      rankCapture("c", 2, 7'000'000, -1'500'000, 200, 2'000, rng)};
    const auto a = alignClocks(caps);
    EXPECT_EQ(a[1].basis, "collectives");
    EXPECT_EQ(a[1].matched, 200u);
    EXPECT_NEAR(double(a[1].wallShiftNs), 4'000'000'000.0 + 3'000'000.0, 1.0);
    EXPECT_LT(std::llabs(a[1].shiftNs - 4'000'000'000), 2'000);
    EXPECT_LT(std::llabs(a[2].shiftNs + 7'000'000), 2'000);
    EXPECT_LE(a[1].residualMaxNs, 6'000u);
    EXPECT_GT(a[1].residualSpreadNs, 0u);
    const auto notes = clockAlignmentNotes(a);
    EXPECT_NE(notes[0].find("refined by 200 collective ends"), std::string::npos) << notes[0];
}

// A capture that shares collectives only with another non-reference capture is aligned through it; one
// with none keeps its wall-clock shift, and one without a pair either is left as recorded.
TEST(ClockAlign, ChainsAndCapturesWithoutCollectives)
{
    std::mt19937_64 rng(3);
    CaptureClock a = rankCapture("a", 0, 0, 0, 50, 0, rng);
    CaptureClock b = rankCapture("b", 1, 9'000'000, 500'000, 50, 0, rng);
    CaptureClock c = rankCapture("c", 2, -2'000'000, 800'000, 50, 0, rng);
    for (CollectiveEnd& e : c.ends) e.commId = 99;  // c shares a communicator with b only
    for (size_t i = 0; i < 50; ++i) {
        CollectiveEnd e = c.ends[i];
        e.rank = 1;
        e.endNs = c.ends[i].endNs + 2'000'000 + 9'000'000;  // the same collective on b's clock
        b.ends.push_back(e);
    }
    CaptureClock d = rankCapture("d", 3, 1'000, 0, 0, 0, rng);
    CaptureClock e = rankCapture("e", 4, 1'000, 0, 0, 0, rng);
    e.pair = ClockPair{};
    const auto r = alignClocks({a, b, c, d, e});
    EXPECT_EQ(r[1].basis, "collectives");
    EXPECT_EQ(r[1].shiftNs, -9'000'000);
    EXPECT_EQ(r[2].basis, "collectives");
    EXPECT_EQ(r[2].shiftNs, 2'000'000);
    EXPECT_EQ(r[3].basis, "wall_clock");
    EXPECT_EQ(r[3].shiftNs, -1'000);
    {
        CaptureClock far = d;
        far.host = "node-far";
        const auto r2 = alignClocks({a, far});
        EXPECT_FALSE(r2[1].sameHost);
        EXPECT_NE(clockAlignmentNotes(r2)[0].find("another host"), std::string::npos);
    }
    EXPECT_EQ(r[4].basis, "none");
    EXPECT_EQ(r[4].shiftNs, 0);
    const auto notes = clockAlignmentNotes(r);
    EXPECT_NE(notes[0].find("left as recorded"), std::string::npos) << notes[0];
}

TEST(ClockAlign, OneCaptureIsItsOwnReference)
{
    std::mt19937_64 rng(4);
    const auto r = alignClocks({rankCapture("a", 0, 5, 0, 3, 0, rng)});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].basis, "reference");
    EXPECT_TRUE(clockAlignmentNotes(r).empty());
}
