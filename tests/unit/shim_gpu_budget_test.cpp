// tests/unit/shim_gpu_budget_test.cpp: GPU timing's budget of event-record time (shim/gpu_budget.h):
// within its share of the time at any call rate, everything timed when calls are slow, transfers
// timed before kernels.
#include "shim/gpu_budget.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace gpuspy::shim {
namespace {

constexpr uint64_t kPpm = 30000;        // 3%, the shim's default
constexpr uint64_t kRecordNs = 2500;    // one timing event record on real hardware
constexpr uint64_t kRunNs = 1000000000; // one second of calls

struct Calls {
    uint64_t calls = 0, timed = 0, spentNs = 0;
};

// A thread making a call every periodNs for a second; a timed call pays two records (begin and end).
Calls run(uint64_t periodNs, bool preferred)
{
    TimingBudget b;
    Calls r;
    for (uint64_t t = 1; t < kRunNs; t += periodNs) {
        ++r.calls;
        if (!b.allows(t, preferred, kPpm)) continue;
        ++r.timed;
        b.spend(kRecordNs);
        b.spend(kRecordNs);
        r.spentNs += 2 * kRecordNs;
    }
    return r;
}

TEST(ShimGpuBudget, RecordsStayWithinTheBudgetAtAnyCallRate)
{
    for (uint64_t period : {100ull, 1000ull, 3000ull, 30000ull, 1000000ull}) {
        for (bool preferred : {false, true}) {
            const Calls r = run(period, preferred);
            // The share of the time, plus what a thread may save up and borrow.
            EXPECT_LE(r.spentNs, kRunNs * kPpm / 1000000 + 2 * TimingBudget::kBurstNs + 2 * kRecordNs)
                << "one call per " << period << " ns, preferred " << preferred;
            EXPECT_GT(r.timed, 0u) << "one call per " << period << " ns";
        }
    }
}

TEST(ShimGpuBudget, SlowCallsAreAllTimed)
{
    // A call every 1 ms earns 30 us of credit: more than its two records cost.
    const Calls r = run(1000000, false);
    EXPECT_EQ(r.timed, r.calls);
}

TEST(ShimGpuBudget, FastCallsAreSampledAtTheBudgetsRate)
{
    // A launch every 3 us: 3% of the time pays for one timed launch (5 us of records) in ~167 us.
    const Calls r = run(3000, false);
    const double expected = double(kRunNs) * double(kPpm) / 1e6 / double(2 * kRecordNs);
    EXPECT_GT(double(r.timed), expected * 0.9);
    EXPECT_LT(double(r.timed), expected * 1.1);
}

TEST(ShimGpuBudget, TransfersBorrowKernelsWait)
{
    TimingBudget b;
    uint64_t t = 1;
    // Spend the saved-up credit.
    while (b.allows(t, false, kPpm)) {
        b.spend(kRecordNs);
        t += 100;
    }
    EXPECT_FALSE(b.allows(t, false, kPpm));
    EXPECT_TRUE(b.allows(t, true, kPpm));  // a copy may still borrow
    b.spend(TimingBudget::kBurstNs / 2);
    b.spend(TimingBudget::kBurstNs / 2);
    EXPECT_FALSE(b.allows(t, true, kPpm));  // but not beyond one burst
    // The debt is repaid by time passing: kernels are timed again once the credit is positive.
    const uint64_t repay = (uint64_t(-b.credit()) + 100) * 1000000 / kPpm;  // and 100 ns of credit
    EXPECT_FALSE(b.allows(t + repay / 2, false, kPpm));
    EXPECT_TRUE(b.allows(t + repay, false, kPpm));
}

TEST(ShimGpuBudget, APreemptedRecordCostsHalfABurstAtMost)
{
    TimingBudget b;
    ASSERT_TRUE(b.allows(1, false, kPpm));
    b.spend(50000000);  // the thread lost the CPU for 50 ms inside the record
    EXPECT_EQ(b.credit(), TimingBudget::kBurstNs / 2);
}

TEST(ShimGpuBudget, AHundredPercentTimesEverything)
{
    TimingBudget b;
    for (uint64_t t = 1; t < 1000; ++t) {
        ASSERT_TRUE(b.allows(t, false, 1000000));
        b.spend(kRecordNs);
    }
}

}  // namespace
}  // namespace gpuspy::shim
