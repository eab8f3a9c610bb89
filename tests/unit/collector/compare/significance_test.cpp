// tests/unit/collector/compare/significance_test.cpp: the tests diff uses to tell a change from noise over
// repeated runs: Welch's t against tabulated critical values, the exact rank test's p-values, and the
// verdicts (a change, noise, too few runs to tell).
#include "collector/compare/significance.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpuspy::collect {
namespace {

TEST(Significance, WelchMatchesTheTTable)
{
    // Equal variances and sizes: Welch's df is 2(n-1); means 0 and d with variance 1.
    // n = 6, df = 10: t = 2.228 is p = 0.05 two-sided. Scaled by 1000 to integers.
    const std::vector<uint64_t> a = {9000, 10000, 11000, 9000, 10000, 11000};  // mean 10000, var 800000
    const double se = std::sqrt(2 * 800000.0 / 6);
    const uint64_t shift = uint64_t(2.228 * se + 0.5);
    std::vector<uint64_t> b = a;
    for (uint64_t& x : b) x += shift;
    EXPECT_NEAR(welchTestP(a, b), 0.05, 0.002);
    EXPECT_DOUBLE_EQ(welchTestP(a, a), 1.0);
    EXPECT_DOUBLE_EQ(welchTestP({5, 5, 5}, {6, 6, 6}), 0.0);  // no spread: any difference is real
    EXPECT_DOUBLE_EQ(welchTestP({5}, {6, 7}), 1.0);           // one run: nothing to test
}

TEST(Significance, TheRankTestIsExact)
{
    // Five runs each, completely apart: 2 of C(10, 5) = 252 splits are as extreme.
    EXPECT_NEAR(rankTestP({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 2.0 / 252, 1e-12);
    // Three each, apart: 2 of 20, never below 0.1.
    EXPECT_NEAR(rankTestP({1, 2, 3}, {4, 5, 6}), 0.1, 1e-12);
    // Interleaved: nothing to see.
    EXPECT_GT(rankTestP({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10}), 0.5);
    // Ties share their mid-rank; identical samples are never apart.
    EXPECT_DOUBLE_EQ(rankTestP({4, 4, 4, 4}, {4, 4, 4, 4}), 1.0);
}

TEST(Significance, VerdictsTellChangeNoiseAndTooFew)
{
    const std::vector<uint64_t> base = {100, 103, 98, 101, 99, 102, 97, 100, 101};
    std::vector<uint64_t> slower = base;
    for (uint64_t& x : slower) x = x * 120 / 100;
    EXPECT_EQ(changeVerdict(base, slower), "higher");
    EXPECT_EQ(changeVerdict(slower, base), "lower");
    EXPECT_EQ(changeVerdict(base, {99, 101, 100, 102, 98, 100, 103, 97, 101}), "noise");
    // Three runs of a noisy figure, apart but not far: a rank test cannot tell, Welch's does not.
    EXPECT_EQ(changeVerdict({100, 140, 120}, {150, 190, 170}), "too_few");
    // Counts the same in every run: any difference is real, however few the runs.
    EXPECT_EQ(changeVerdict({2000, 2000, 2000}, {40000, 40000, 40000}), "higher");
    // Overlapping ranges of three runs (the old rule's "beyond the spread" needed only disjoint ranges).
    EXPECT_EQ(changeVerdict({100, 130, 115}, {110, 125, 140}), "noise");
}

}  // namespace
}  // namespace gpuspy::collect
