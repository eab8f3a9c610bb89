// tests/unit/collector/replay/extrapolate_test.cpp: a window's saving taken to the whole run.
#include "collector/replay/extrapolate.h"

#include <gtest/gtest.h>

namespace gpuspy::collect::replay {
namespace {

TEST(ReplayExtrapolate, ScalesByTheFindingsCallsAndSpansTheHalves)
{
    // 10 of the finding's 40 calls in the window, saving 3 ms there: 12 ms over the run. The halves: 1 ms
    // over 4 calls (10 ms over the run) and 2 ms over 6 (13.33 ms): 2 ms below, so 2 ms above too; the
    // replay's 0% error widens nothing.
    const Extrapolation e = extrapolate({3'000'000, 10}, 3'000'000, 3'000'000, {{1'000'000, 4}, {2'000'000, 6}}, 40, 0, 0);
    ASSERT_TRUE(e.possible);
    EXPECT_DOUBLE_EQ(e.scale, 4.0);
    EXPECT_EQ(e.savingNs, 12'000'000u);
    EXPECT_EQ(e.lowNs, 10'000'000u);
    EXPECT_EQ(e.highNs, 14'000'000u);
}

TEST(ReplayExtrapolate, TheReplayErrorAndAnAssumedCostWidenTheInterval)
{
    // An assumed cost's range 2..4 ms in the window (x2 over the run), halves inside it, a replay 10% off.
    const Extrapolation e = extrapolate({3'000'000, 5}, 2'000'000, 4'000'000, {{1'500'000, 2}, {1'500'000, 3}}, 10, 0, -10);
    ASSERT_TRUE(e.possible);
    EXPECT_EQ(e.savingNs, 6'000'000u);
    EXPECT_EQ(e.lowNs, 3'600'000u);   // 4 ms * 0.9
    EXPECT_EQ(e.highNs, 8'800'000u);  // 8 ms * 1.1
}

TEST(ReplayExtrapolate, AFindingAbsentFromTheWindowIsNotExtrapolated)
{
    EXPECT_FALSE(extrapolate({0, 0}, 0, 0, {{0, 0}, {0, 0}}, 25, 0, 0).possible);
    // A half without the finding's calls gives no estimate of its own.
    const Extrapolation e = extrapolate({2'000'000, 4}, 2'000'000, 2'000'000, {{0, 0}, {2'000'000, 4}}, 8, 0, 0);
    ASSERT_TRUE(e.possible);
    EXPECT_EQ(e.lowNs, 4'000'000u);
    EXPECT_EQ(e.highNs, 4'000'000u);
}

}  // namespace
}  // namespace gpuspy::collect::replay

namespace gpuspy::collect::replay {
namespace {

TEST(ReplayExtrapolate, TheIntervalIsAsWideAboveTheEstimateAsBelowAndHoldsTheEdgeCorrectedRun)
{
    // Each stretch saves 100 us a call less 150 us at its edges: the window (10 calls) 850 us, each half
    // (5 calls) 350 us. The run of 40 calls saves 3850 us; the window says 3400 us, its halves 2800 us
    // each: 600 us below, so the interval reaches 600 us above too. The edge the halves show (150 us: the
    // window saves 850 us, they 700 us together) corrects the estimate to 3850 us, inside it: the run's.
    const Extrapolation e = extrapolate({850'000, 10}, 850'000, 850'000, {{350'000, 5}, {350'000, 5}}, 40, 0, 0);
    ASSERT_TRUE(e.possible);
    EXPECT_EQ(e.savingNs, 3'400'000u);
    EXPECT_EQ(e.lowNs, 2'800'000u);
    EXPECT_EQ(e.highNs, 4'000'000u);
}

}  // namespace
}  // namespace gpuspy::collect::replay

namespace gpuspy::collect::replay {
namespace {

TEST(ReplayExtrapolate, TheEdgeCorrectedRunWidensTheInterval)
{
    // 50 us a call less 400 us at each stretch's edges: the window (20 calls) 600 us, its halves (10 calls)
    // 100 us each. Over 100 calls: the window says 3000 us, the halves 1000 us (so 5000 us above); the run
    // corrected for the edge, 4600 us, is inside; with a larger run (1000 calls: 30 ms scaled, 10 ms and 50
    // ms from the halves) the corrected 49.6 ms is too.
    const Extrapolation e = extrapolate({600'000, 20}, 600'000, 600'000, {{100'000, 10}, {100'000, 10}}, 100, 0, 0);
    ASSERT_TRUE(e.possible);
    EXPECT_EQ(e.savingNs, 3'000'000u);
    EXPECT_EQ(e.lowNs, 1'000'000u);
    EXPECT_EQ(e.highNs, 5'000'000u);
    // The second half starts later (after its first synchronize): 8 of its calls. a = (1200 - 200) / (40 -
    // 18) us; the edge a * 20 - 600 us; the interval's top the larger of the spread's and the corrected run.
    const Extrapolation f = extrapolate({600'000, 20}, 600'000, 600'000, {{100'000, 10}, {100'000, 8}}, 100, 0, 0);
    const double a = 1'000'000.0 / 22, edge = a * 20 - 600'000, corrected = a * 100 - edge;
    EXPECT_NEAR(double(f.highNs), std::max(corrected, 3'000'000.0 + 2'000'000.0), 1.0);
}

}  // namespace
}  // namespace gpuspy::collect::replay

namespace gpuspy::collect::replay {
namespace {

TEST(ReplayExtrapolate, TheFindingsHostTimeScalesWhereItIsKnown)
{
    // 10 of 40 calls in the window, but the run's calls cost 8 ms against the window's 1 ms (the early calls
    // were dearer): the estimate scales 2 ms by 8, not 4; the count-scaled 8 ms bounds the interval below,
    // and as wide above (24 ms).
    const Extrapolation e =
        extrapolate({2'000'000, 10, 1'000'000}, 2'000'000, 2'000'000, {}, 40, 8'000'000, 0);
    ASSERT_TRUE(e.possible);
    EXPECT_DOUBLE_EQ(e.scale, 8.0);
    EXPECT_EQ(e.savingNs, 16'000'000u);
    EXPECT_EQ(e.lowNs, 8'000'000u);
    EXPECT_EQ(e.highNs, 24'000'000u);
}

}  // namespace
}  // namespace gpuspy::collect::replay
