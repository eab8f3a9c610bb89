// tests/unit/shim_gpu_budget_test.cpp: GPU timing's budget of timing time (shim/gpu_budget.h):
// within its share of the time at any call rate, everything timed when calls are slow, transfers
// timed before kernels.
#include "shim/gpu_budget.h"
#include "shim/shim.h"

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
        r.spentNs += b.charge(kRecordNs);
        r.spentNs += b.charge(kRecordNs);
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
        b.charge(kRecordNs);
        t += 100;
    }
    EXPECT_FALSE(b.allows(t, false, kPpm));
    EXPECT_TRUE(b.allows(t, true, kPpm));  // a copy may still borrow
    b.charge(TimingBudget::kBurstNs / 2);
    b.charge(TimingBudget::kBurstNs / 2);
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
    b.charge(50000000);  // the thread lost the CPU for 50 ms inside the record
    EXPECT_EQ(b.credit(), TimingBudget::kBurstNs / 2);
}

TEST(ShimGpuBudget, AHundredPercentTimesEverything)
{
    TimingBudget b;
    for (uint64_t t = 1; t < 1000; ++t) {
        ASSERT_TRUE(b.allows(t, false, 1000000));
        b.charge(kRecordNs);
    }
}

// Everything timing does on the thread is charged, not only its records: a choice on every call (here
// 60 ns) and a timed call's bookkeeping (here 1.5 us) come out of the same share of the time.
TEST(ShimGpuBudget, ChoicesAndBookkeepingShareTheBudgetWithRecords)
{
    constexpr uint64_t kChoiceNs = 60, kBookkeepingNs = 1500, kPeriod = 3000;
    TimingBudget b;
    uint64_t spent = 0, timed = 0, timedRecordsOnly = 0;
    for (uint64_t t = 1; t < kRunNs; t += kPeriod) {
        const bool allowed = b.allows(t, false, kPpm);
        spent += b.charge(kChoiceNs);
        if (!allowed) continue;
        ++timed;
        spent += b.charge(2 * kRecordNs) + b.charge(kBookkeepingNs);
    }
    timedRecordsOnly = run(kPeriod, false).timed;
    EXPECT_LE(spent, kRunNs * kPpm / 1000000 + 2 * TimingBudget::kBurstNs + 2 * kRecordNs + kBookkeepingNs);
    EXPECT_GT(timed, 0u);
    EXPECT_LT(timed, timedRecordsOnly);  // the same budget pays for more than the records
}

TEST(ShimGpuBudget, DrainDebtIsChargedBeforeTheNextTiming)
{
    TimingBudget b;
    ASSERT_TRUE(b.allows(1, false, kPpm));
    b.chargeMeasured(TimingBudget::kBurstNs + 1000);  // the drain thread read this thread's events
    EXPECT_FALSE(b.stillAllows(false));
    EXPECT_TRUE(b.stillAllows(true));
}

TEST(ShimGpuBudget, ChoiceCostIsTheMeanOfItsSamples)
{
    ChoiceCost c;
    EXPECT_EQ(c.perCallNs(), 0u);  // nothing timed yet: nothing charged
    unsigned samples = 0;
    for (unsigned i = 0; i < 10 * ChoiceCost::kEvery; ++i) {
        if (!c.sampleNow()) continue;
        ++samples;
        c.note(samples % 2 ? 40 : 60);
    }
    EXPECT_EQ(samples, 12u);  // the first three on consecutive calls, then one in kEvery
    EXPECT_GE(c.perCallNs(), 45u);
    EXPECT_LE(c.perCallNs(), 56u);
    c.note(1000000);  // one preempted sample moves nothing
    EXPECT_LE(c.perCallNs(), 56u);
    for (int i = 0; i < 100; ++i) c.note(1000000);  // a slow choice is charged, capped
    EXPECT_LE(c.perCallNs(), 20000u);
    EXPECT_GT(c.perCallNs(), 10000u);
}

TEST(ShimGpuBudget, AColdFirstChoiceIsNotChargedOnEveryCall)
{
    ChoiceCost first;
    // The first three calls are sampled one after the other, so a cold first one is charged once.
    EXPECT_TRUE(first.sampleNow());
    first.note(94000);
    EXPECT_TRUE(first.sampleNow());
    first.note(60);
    EXPECT_TRUE(first.sampleNow());
    first.note(60);
    EXPECT_LE(first.perCallNs(), 60u);
    EXPECT_FALSE(first.sampleNow());

    ChoiceCost c;
    c.note(20000);  // the thread's first call: cold caches
    c.note(40);
    c.note(50);
    EXPECT_LE(c.perCallNs(), 40u);
}

// A process's first calls are all cold (its setup: libraries loading, first launches): when the choice's samples
// come down to a fraction of the charge, the charge follows at once, not an eighth of the way a sample.
TEST(ShimGpuBudget, AColdStartOfManySamplesIsGoneOnceTwoOfThreeSaySo)
{
    ChoiceCost c;
    for (int i = 0; i < 6; ++i) c.note(5000);
    EXPECT_GE(c.perCallNs(), 4000u);
    c.note(11);
    EXPECT_GE(c.perCallNs(), 4000u) << "one low sample is not the median";
    c.note(12);
    EXPECT_LE(c.perCallNs(), 12u);
    c.note(5000);  // one preempted sample lifts nothing
    EXPECT_LE(c.perCallNs(), 12u);
}

// A kernel's first two launches are timed whatever the budget says; one whose span the drain set aside
// (a loaded host: the thread held up, the end recorded late) is owed another, four more at most, so a short
// process on a busy machine still gets a sound GPU time for each kernel without timing all of it.
TEST(FirstTimings, ASpanSetAsideIsOwedAnotherFourAtMost)
{
    const uint32_t k = 4000;  // a kernel id no other test uses (interned names start at 1)
    int timed = 0;
    for (int launch = 0; launch < 20 && kernelNeedsFirstTimings(k); ++launch) {
        noteKernelTimed(k);
        ++timed;
    }
    EXPECT_EQ(timed, 2);
    int retried = 0;
    for (int setAside = 0; setAside < 10; ++setAside) {
        retryKernelTiming(k);
        if (!kernelNeedsFirstTimings(k)) break;
        noteKernelTimed(k);
        ++retried;
    }
    EXPECT_EQ(retried, 4);
    EXPECT_FALSE(kernelNeedsFirstTimings(k));
    retryKernelTiming(0);  // not a launch: nothing owed
    EXPECT_FALSE(kernelNeedsFirstTimings(0));
}

}  // namespace
}  // namespace gpuspy::shim
