// The frame-pointer stack path (shim/stack_fp.cpp): a walk is trusted only once it has matched
// unw_backtrace through frame-pointer functions, and every capture's id is the one unw_backtrace
// alone gives. This file is built with frame pointers; stack_fp_nofp.cpp's hops, in assembly, have
// none.
//
// Each chain below ends in leafCaptures, whose one call instruction captures several times, with
// the path switched as its plan says: the same stack, taken both ways. Ids are compared (equal
// ids are equal frames: stacks are interned by their frames); the counts say which way each
// capture went. The verdict cache is process-wide, so counts are checked in ways that hold whether
// or not an earlier test in this process verified the same walk.
#include "shim/stack.h"
#include "tests/unit/stack_fp_hops.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <utility>
#include <unistd.h>
#include <vector>

using namespace gpuspy;

namespace {

struct Plan {
    explicit Plan(std::vector<bool> modes, uint32_t walks = 4096) : framePointers(std::move(modes)), maxWalks(walks) {}
    std::vector<bool> framePointers;  // per capture: the frame-pointer path on, or unw_backtrace only
    uint32_t maxWalks;                // the verdict cache's bound during the captures
    std::vector<uint32_t> ids;
};

// Switches the path only where the plan changes it (switching it on lets the thread walk again).
__attribute__((noipa)) uint32_t leafCaptures(void* arg)
{
    auto* plan = static_cast<Plan*>(arg);
    const size_t n = plan->framePointers.size();
    plan->ids.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        if (i == 0 || plan->framePointers[i] != plan->framePointers[i - 1])
            shim::stackUseFramePointers(plan->framePointers[i], plan->maxWalks);
        plan->ids[i] = shim::stackCapture(0);
        asm volatile("" ::: "memory");
    }
    return plan->ids[0];
}

// levels frames of this function (all with frame pointers), then leafCaptures.
__attribute__((noipa)) uint32_t fpChain(Plan* plan, int levels)
{
    const uint32_t id = levels == 0 ? leafCaptures(plan) : fpChain(plan, levels - 1);
    asm volatile("" ::: "memory");
    return id;
}

// levels frames of this function, then hop (built without frame pointers), then leafCaptures.
__attribute__((noipa)) uint32_t fpChainThrough(uint32_t (*hop)(test::Next, void*), Plan* plan, int levels)
{
    const uint32_t id = levels == 0 ? hop(leafCaptures, plan) : fpChainThrough(hop, plan, levels - 1);
    asm volatile("" ::: "memory");
    return id;
}

// A ladder rung with a frame pointer: calls rungs[0] while levels remain, then rungs[1], through one
// indirect call instruction.
__attribute__((noipa)) uint32_t fpRung(test::Ladder* ladder, int levels)
{
    const uint32_t id = ladder->rungs[levels == 0](ladder, levels - 1);
    asm volatile("" ::: "memory");
    return id;
}

shim::StackFpStats operator-(const shim::StackFpStats& a, const shim::StackFpStats& b)
{
    return {a.reused - b.reused,
            a.fellBack - b.fellBack,
            a.verified - b.verified,
            a.mismatchedFrames - b.mismatchedFrames,
            a.unproven - b.unproven,
            a.uncached - b.uncached,
            a.walks - b.walks,
            a.gaveUp};
}

// Runs each of fns on a thread of its own, all released together, and waits for them.
void onThreads(const std::vector<std::function<void()>>& fns)
{
    std::atomic<int> waiting{int(fns.size())};
    std::atomic<int> finished{0};
    std::vector<std::thread> threads;
    for (const auto& fn : fns) {
        threads.emplace_back([&] {
            waiting.fetch_sub(1);
            while (waiting.load() > 0) {}
            fn();
            finished.fetch_add(1);
#if defined(__SANITIZE_THREAD__)
            // libunwind's thread-exit destructor crashes TSan's interceptor (shim_stack_test.cpp).
            for (;;) pause();
#endif
        });
    }
    while (finished.load() < int(fns.size())) std::this_thread::yield();
#if defined(__SANITIZE_THREAD__)
    for (std::thread& t : threads) t.detach();
#else
    for (std::thread& t : threads) t.join();
#endif
}

void expectAllEqual(const std::vector<uint32_t>& ids)
{
    ASSERT_FALSE(ids.empty());
    EXPECT_NE(ids[0], 0u);
    for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(ids[i], ids[0]) << "capture " << i;
}

class StackFpTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        shim::stackConfigure(8);
        if (!shim::stackUseFramePointers(true)) GTEST_SKIP() << "libunwind has no unw_get_proc_info_by_ip here";
    }
    void TearDown() override
    {
        shim::stackUseFramePointers(true);
        shim::stackConfigure(24);
    }
};

}  // namespace

TEST_F(StackFpTest, WalkThroughFramePointersMatchesUnwindAndIsReused)
{
    for (unsigned depth : {8u, 24u, 64u}) {
        shim::stackConfigure(depth);
        // unw_backtrace alone first, then the frame-pointer path three times.
        Plan plan({false, true, true, true});
        const shim::StackFpStats before = shim::stackFpStats();
        fpChain(&plan, int(depth) + 4);  // deeper than the capture: every captured frame has a frame pointer
        const shim::StackFpStats d = shim::stackFpStats() - before;
        expectAllEqual(plan.ids);
        // Verified once (here, or by an earlier test in this process), then reused.
        EXPECT_EQ(d.verified + d.reused, 3u) << "depth " << depth;
        EXPECT_GE(d.reused, 2u) << "depth " << depth;
        EXPECT_EQ(d.fellBack + d.mismatchedFrames + d.unproven + d.uncached, 0u) << "depth " << depth;
    }
}

TEST_F(StackFpTest, SkippedFrameIsCaughtAndFallsBack)
{
    // fpChainThrough's bottom frame calls noFpKeepsRbp, which calls leafCaptures with rbp still
    // pointing at fpChainThrough's frame: the walk misses noFpKeepsRbp's return address (the call site
    // in fpChainThrough) and reads only real return addresses. unw_backtrace has it.
    Plan plan({false, true, true, true});
    const shim::StackFpStats before = shim::stackFpStats();
    fpChainThrough(test::noFpKeepsRbp, &plan, 12);
    const shim::StackFpStats d = shim::stackFpStats() - before;
    expectAllEqual(plan.ids);
    EXPECT_EQ(d.mismatchedFrames + d.fellBack, 3u);
    EXPECT_GE(d.fellBack, 2u);
    EXPECT_EQ(d.reused + d.verified + d.unproven + d.uncached, 0u);
}

TEST_F(StackFpTest, SkipThatComparisonCannotSeeIsCaughtByThePrologueCheck)
{
    // fpRung calls itself through one indirect call instruction, and at the bottom calls noFpRung
    // (no frame pointer) through the same instruction. The walk skips noFpRung's return address,
    // which is that instruction's, as is the next one's: over the 8 captured frames the walk reads
    // exactly what unw_backtrace reads. Only the check that each function stepped through sets up a
    // frame pointer tells them apart: with noFpRung called from elsewhere, the same walk would stand
    // for another stack.
    Plan plan({false, true, true, true});
    test::Ladder ladder{{fpRung, test::noFpRung}, leafCaptures, &plan};
    const shim::StackFpStats before = shim::stackFpStats();
    fpRung(&ladder, 12);
    const shim::StackFpStats d = shim::stackFpStats() - before;
    expectAllEqual(plan.ids);
    EXPECT_EQ(d.unproven + d.fellBack, 3u);
    EXPECT_GE(d.fellBack, 2u);
    EXPECT_EQ(d.reused + d.verified + d.mismatchedFrames + d.uncached, 0u);
}

TEST_F(StackFpTest, ChainBrokenByRbpAsARegisterFallsBack)
{
    // noFpClobbersRbp calls on with rbp zeroed: the walk ends two frames in, unw_backtrace does not.
    Plan plan({false, true, true});
    const shim::StackFpStats before = shim::stackFpStats();
    fpChainThrough(test::noFpClobbersRbp, &plan, 12);
    const shim::StackFpStats d = shim::stackFpStats() - before;
    expectAllEqual(plan.ids);
    EXPECT_EQ(d.mismatchedFrames + d.fellBack, 2u);
    EXPECT_EQ(d.reused + d.verified + d.unproven + d.uncached, 0u);
}

TEST_F(StackFpTest, FullCacheFallsBackToUnwindAndKeepsItsVerdicts)
{
    // A walk verified while there is room (a depth no other test uses: a walk of its own).
    shim::stackConfigure(9);
    Plan verifiedFirst({true, true});
    fpChain(&verifiedFirst, 20);
    expectAllEqual(verifiedFirst.ids);

    // No room for more: a new walk (another depth) goes through unw_backtrace every time, with the
    // same ids as unw_backtrace alone; the verified one is still answered from the cache.
    const uint32_t walks = shim::stackFpStats().walks;
    ASSERT_GT(walks, 0u);
    shim::stackConfigure(10);
    Plan full({false, true, true}, walks);
    shim::StackFpStats before = shim::stackFpStats();
    fpChain(&full, 20);
    shim::StackFpStats d = shim::stackFpStats() - before;
    expectAllEqual(full.ids);
    EXPECT_EQ(d.uncached, 2u);
    EXPECT_EQ(d.walks, 0u);
    EXPECT_EQ(d.reused + d.verified + d.fellBack + d.mismatchedFrames + d.unproven, 0u);

    shim::stackConfigure(9);
    Plan again({true, true}, walks);
    before = shim::stackFpStats();
    fpChain(&again, 20);
    d = shim::stackFpStats() - before;
    EXPECT_EQ(again.ids, verifiedFirst.ids);
    EXPECT_EQ(d.reused, 2u);
}

TEST_F(StackFpTest, ThreadsShareVerdictsAndIds)
{
    shim::stackConfigure(12);
    Plan reference({false});
    fpChain(&reference, 16);
    ASSERT_NE(reference.ids[0], 0u);

    constexpr int kThreads = 4;
    std::vector<Plan> plans(kThreads, Plan(std::vector<bool>(500, true)));
    std::vector<shim::StackFpStats> stats(kThreads);
    std::vector<std::function<void()>> fns;
    for (int t = 0; t < kThreads; ++t)
        fns.push_back([&, t] {
            const shim::StackFpStats before = shim::stackFpStats();
            fpChain(&plans[t], 16);
            stats[t] = shim::stackFpStats() - before;
        });
    onThreads(fns);
    uint64_t verified = 0, reused = 0, uncached = 0;
    for (int t = 0; t < kThreads; ++t) {
        for (uint32_t id : plans[t].ids) ASSERT_EQ(id, reference.ids[0]) << "thread " << t;
        verified += stats[t].verified;
        reused += stats[t].reused;
        uncached += stats[t].uncached;
        EXPECT_EQ(stats[t].fellBack + stats[t].mismatchedFrames + stats[t].unproven, 0u);
    }
    // Threads racing to verify the same walk may each verify it (or find it being stored: uncached,
    // unw_backtrace); every other capture reuses it.
    EXPECT_EQ(verified + reused + uncached, uint64_t(kThreads) * 500);
    EXPECT_LE(verified, uint64_t(kThreads));
    EXPECT_GT(reused, 0u);
}

TEST_F(StackFpTest, ThreadWhoseWalksAreAlwaysWrongGivesUp)
{
    // A thread of its own (the count is per thread) captures through noFpKeepsRbp 5,000 times: after
    // 4,096 fallbacks without a reuse it stops walking; its ids stay unw_backtrace's.
    // Switching the path on again lets it walk again.
    Plan plan(std::vector<bool>(5000, true));
    shim::StackFpStats d{};
    bool gaveUpAfterSwitch = true;
    onThreads({[&] {
        const shim::StackFpStats before = shim::stackFpStats();
        fpChainThrough(test::noFpKeepsRbp, &plan, 12);
        d = shim::stackFpStats() - before;
        shim::stackUseFramePointers(true);
        gaveUpAfterSwitch = shim::stackFpStats().gaveUp;
    }});
    expectAllEqual(plan.ids);
    EXPECT_TRUE(d.gaveUp);
    EXPECT_EQ(d.fellBack, 4096u);
    EXPECT_EQ(d.reused + d.verified + d.unproven + d.uncached, 0u);
    EXPECT_FALSE(gaveUpAfterSwitch);
}

TEST_F(StackFpTest, OffMeansUnwindOnly)
{
    Plan plan({false, false});
    const shim::StackFpStats before = shim::stackFpStats();
    fpChain(&plan, 12);
    const shim::StackFpStats d = shim::stackFpStats() - before;
    expectAllEqual(plan.ids);
    EXPECT_EQ(d.reused + d.verified + d.fellBack + d.mismatchedFrames + d.unproven + d.uncached, 0u);
}
