// The stack cache (shim/stack_cache.cpp): a capture answered from a cached unwind has exactly the
// frames unw_backtrace gives. This file is built without frame pointers (as cudart and most
// distribution code are), so the frame-pointer path cannot answer for its frames and each capture
// goes to the cache or to unw_backtrace; the frame-pointer path is off throughout.
//
// Each leaf below captures several times from one call instruction, the cache on for some captures
// and off (unw_backtrace alone) for others: the same stack, taken both ways. Ids are compared (equal
// ids are equal frames: stacks are interned by their frames). The counts prove which way a capture
// went: a test that expects hits fails when the cache is not used.
#include "shim/stack.h"
#include "shim/stack_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csetjmp>
#include <pthread.h>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using namespace gpuspy;

namespace {

// Captures with the cache on (twice: the first may learn, the second may reuse) and off.
struct Triple {
    uint32_t on1 = 0, on2 = 0, off = 0;
};

__attribute__((noipa)) Triple captureBoth()
{
    Triple t;
    uint32_t ids[3];
    // One call instruction for all three: an unrolled loop (sanitizer builds unroll it) would give
    // each capture a leaf frame of its own.
#pragma GCC unroll 1
    for (int i = 0; i < 3; ++i) {
        shim::scConfigure(i < 2);
        ids[i] = shim::stackCapture(0);
        asm volatile("" ::: "memory");
    }
    shim::scConfigure(true);
    t.on1 = ids[0];
    t.on2 = ids[1];
    t.off = ids[2];
    return t;
}

void expectSame(const Triple& t, const char* what)
{
    EXPECT_NE(t.off, 0u) << what;
    EXPECT_EQ(t.on1, t.off) << what;
    EXPECT_EQ(t.on2, t.off) << what;
}

// levels frames of recurse (each with a frame of its own size: the array), then captureBoth.
__attribute__((noipa)) Triple recurse(int levels)
{
    volatile char pad[24];
    pad[0] = char(levels);
    Triple t = levels <= 0 ? captureBoth() : recurse(levels - 1);
    asm volatile("" ::: "memory");
    t.on1 += uint32_t(pad[0]) * 0;
    return t;
}

// Two functions with the same frame layout, so that a chain through either puts every frame at the
// same address: the stacks differ only in the return address at one slot.
__attribute__((noipa)) Triple twinA(int levels)
{
    Triple t = recurse(levels);
    asm volatile("" ::: "memory");
    return t;
}
__attribute__((noipa)) Triple twinB(int levels)
{
    Triple t = recurse(levels);
    asm volatile("" ::: "memory");
    return t;
}

shim::StackCacheStats delta(const shim::StackCacheStats& a, const shim::StackCacheStats& b)
{
    return {a.hits - b.hits, a.misses - b.misses, a.learnt - b.learnt, a.bypassed - b.bypassed, a.rules};
}

class StackCacheTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        shim::stackConfigure(24);
        shim::stackUseFramePointers(false);
        shim::scConfigure(true);
        shim::scForgetThread();
    }
    void TearDown() override
    {
        shim::stackUseFramePointers(true);
        shim::scConfigure(true);
        shim::stackConfigure(24);
    }
};

}  // namespace

// libunwind's thread-exit destructor locks a mutex after TSan has let the thread go (a crash inside
// TSan's runtime, gpuspy or not): the sanitizer phase runs the shim with stacks off for this reason, and
// the tests that unwind in threads that exit are not run under TSan.
#if defined(__SANITIZE_THREAD__)
#define SKIP_UNWIND_IN_EXITING_THREADS_UNDER_TSAN() GTEST_SKIP() << "libunwind in exiting threads under TSan"
#else
#define SKIP_UNWIND_IN_EXITING_THREADS_UNDER_TSAN() (void)0
#endif

TEST_F(StackCacheTest, RulesAreReadFromTheFde)
{
    // This file's code has no frame pointers: the CFA of a frame of recurse is rsp-based.
    const shim::ScRule r = shim::scRuleFor(reinterpret_cast<uint64_t>(__builtin_return_address(0)));
    // Our caller is gtest's (built with or without frame pointers): some rule, standard or bypass.
    EXPECT_TRUE(r.kind == 0 || r.kind == 1);
    // A capture's rule for its own call site: standard.
    const Triple t = recurse(3);
    expectSame(t, "recurse(3)");
    const shim::StackCacheStats s = shim::scThreadStats();
    EXPECT_GT(s.rules, 0u);
}

TEST_F(StackCacheTest, SameStackIsReusedAndEqualsUnwind)
{
    const shim::StackCacheStats before = shim::scThreadStats();
    for (int i = 0; i < 5; ++i) expectSame(recurse(6), "recurse(6)");
    const shim::StackCacheStats d = delta(shim::scThreadStats(), before);
    // Each round: the first capture learns or reuses, the second reuses.
    EXPECT_GE(d.hits, 5u);
    EXPECT_GE(d.learnt, 1u);
}

TEST_F(StackCacheTest, RecursionDepthChanges)
{
    // Depths past the capture's 24 frames too (then the limit ends the unwind).
    const int depths[] = {0, 5, 1, 30, 29, 2, 12, 12, 40, 3, 0, 23, 24, 25, 7, 5};
    std::vector<uint32_t> ids;
    for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < sizeof depths / sizeof depths[0]; ++i) {
            const Triple t = recurse(depths[i]);
            expectSame(t, "depth");
            if (round == 0) ids.push_back(t.off);
            else EXPECT_EQ(t.off, ids[i]) << "depth " << depths[i];
        }
    }
    // Different depths, different stacks (up to the limit: 30 and 40 read alike within 24 frames).
    EXPECT_NE(ids[0], ids[1]);
    EXPECT_NE(ids[3], ids[2]);
    EXPECT_GE(shim::scThreadStats().hits, 3u * 16u);
}

TEST_F(StackCacheTest, StackRewrittenOnlyFarOutIsCaught)
{
    // twinA and twinB leave every frame at the same address with the same words, but for the return
    // address into twinA or twinB, 9 frames out: a cached unwind through one is not reused for the
    // other. Alternate them, each cached unwind learnt before the other runs.
    const shim::StackCacheStats before = shim::scThreadStats();
    uint32_t a = 0, b = 0;
    for (int i = 0; i < 6; ++i) {
        const Triple ta = twinA(8);
        const Triple tb = twinB(8);
        expectSame(ta, "twinA");
        expectSame(tb, "twinB");
        if (i == 0) {
            a = ta.off;
            b = tb.off;
        }
        EXPECT_EQ(ta.off, a);
        EXPECT_EQ(tb.off, b);
    }
    EXPECT_NE(a, b);
    EXPECT_GE(delta(shim::scThreadStats(), before).hits, 12u);
}

namespace {

// Overwrites the return address of its caller's frame (the one into twinA or twinB's caller) with
// another that is unwound by the same rule: the stack read by the unwind is rewritten between two
// captures from one call instruction, the frames' addresses unchanged.
uint64_t* g_slot = nullptr;
uint64_t g_other = 0;
__attribute__((noipa)) void rewriteHere(std::vector<uint32_t>* ids)
{
    for (int i = 0; i < 4; ++i) {
        shim::scConfigure(i != 3);
        if (i == 2) std::swap(*g_slot, g_other);  // rewritten after the cache learnt and reused
        ids->push_back(shim::stackCapture(0));
        asm volatile("" ::: "memory");
    }
    std::swap(*g_slot, g_other);
    shim::scConfigure(true);
}

__attribute__((noipa, optimize("no-omit-frame-pointer"))) void framed(std::vector<uint32_t>* ids, bool probe)
{
    // Its own return address (into rewriteTwinA/B) lies at rbp + 8.
    uint64_t* slot = static_cast<uint64_t*>(__builtin_frame_address(0)) + 1;
    if (probe) {
        g_other = *slot;
        return;
    }
    g_slot = slot;
    rewriteHere(ids);
    asm volatile("" ::: "memory");
}
__attribute__((noipa)) void rewriteTwinA(std::vector<uint32_t>* ids, bool probe)
{
    framed(ids, probe);
    asm volatile("" ::: "memory");
}
__attribute__((noipa)) void rewriteTwinB(std::vector<uint32_t>* ids, bool probe)
{
    framed(ids, probe);
    asm volatile("" ::: "memory");
}

}  // namespace

TEST_F(StackCacheTest, ReturnAddressRewrittenBetweenCaptures)
{
    std::vector<uint32_t> viaB, viaA;
    rewriteTwinB(nullptr, true);  // g_other: the return address into rewriteTwinB
    rewriteTwinB(&viaB, false);   // [on, on, on "rewritten" to its own value, off]
    ASSERT_EQ(viaB.size(), 4u);
    EXPECT_EQ(viaB[0], viaB[3]);
    EXPECT_EQ(viaB[2], viaB[3]);
    rewriteTwinB(nullptr, true);
    const shim::StackCacheStats before = shim::scThreadStats();
    rewriteTwinA(&viaA, false);  // A's stack; the third and fourth captures see B's return address
    ASSERT_EQ(viaA.size(), 4u);
    EXPECT_EQ(viaA[0], viaA[1]);
    EXPECT_NE(viaA[0], viaB[0]);
    EXPECT_NE(viaA[2], viaA[0]) << "the rewritten stack is another";
    EXPECT_EQ(viaA[2], viaA[3]) << "the rewritten stack, cached against unwound";
    EXPECT_GE(delta(shim::scThreadStats(), before).hits, 1u);
}

namespace {

std::vector<Triple> g_inHandler;
void onSignal(int)
{
    g_inHandler.push_back(recurse(2));
}

}  // namespace

TEST_F(StackCacheTest, SignalHandlerStacksAreUnwoundInFull)
{
    struct sigaction sa{};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    struct sigaction old{};
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    g_inHandler.clear();
    g_inHandler.reserve(8);
    const shim::StackCacheStats before = shim::scThreadStats();
    for (int i = 0; i < 3; ++i) raise(SIGUSR1);
    // On an alternate stack too.
    std::vector<char> alt(1 << 16);
    stack_t ss{};
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    stack_t oldss{};
    ASSERT_EQ(sigaltstack(&ss, &oldss), 0);
    sa.sa_flags = SA_ONSTACK;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
    for (int i = 0; i < 3; ++i) raise(SIGUSR1);
    sigaltstack(&oldss, nullptr);
    sigaction(SIGUSR1, &old, nullptr);
    const shim::StackCacheStats d = delta(shim::scThreadStats(), before);
    ASSERT_EQ(g_inHandler.size(), 6u);
    for (const Triple& t : g_inHandler) expectSame(t, "in a handler");
    EXPECT_EQ(d.hits, 0u) << "a signal frame is never cached";
    EXPECT_EQ(d.learnt, 0u);
    EXPECT_GE(d.bypassed, 12u);
}

namespace {

std::jmp_buf g_jump;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"  // it ends in longjmp
__attribute__((noipa)) void deepThenJump(int levels, Triple* out)
{
    if (levels <= 0) {
        *out = captureBoth();
        std::longjmp(g_jump, 1);
    }
    volatile char pad[40];
    pad[0] = 1;
    deepThenJump(levels - 1, out);
    (void)pad[0];
}
#pragma GCC diagnostic pop

__attribute__((noipa)) Triple deepAndBack()
{
    Triple out{};
    if (setjmp(g_jump) == 0) deepThenJump(10, &out);
    return out;
}

}  // namespace

TEST_F(StackCacheTest, LongjmpLeavesStaleEntriesThatNeverMatchWrongly)
{
    // An unwind learnt deep in a chain left by longjmp; then other chains over the same stack.
    for (int i = 0; i < 4; ++i) {
        expectSame(deepAndBack(), "the deep chain");
        expectSame(recurse(10), "recurse over the stale stack");
        expectSame(twinA(4), "twinA over the stale stack");
    }
}

TEST_F(StackCacheTest, Threads)
{
    SKIP_UNWIND_IN_EXITING_THREADS_UNDER_TSAN();
    constexpr int kThreads = 4;
    std::vector<std::vector<Triple>> got(kThreads);
    std::vector<uint64_t> hits(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            const uint64_t before = shim::scThreadStats().hits;
            for (int i = 0; i < 50; ++i) got[t].push_back(i % 2 ? twinA((i + t) % 9) : twinB((i * 3 + t) % 31));
            hits[t] = shim::scThreadStats().hits - before;
        });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        for (const Triple& tr : got[t]) expectSame(tr, "thread");
        // Each capture's second unwind reuses what the first learnt or reused; now and then the first
        // learns nothing (an entry it may not keep) and the second learns instead: 49 of 50 once under
        // ASan (the sanitizer phase before a stop). Most must hit, each thread its own cache.
        EXPECT_GE(hits[t], 45u) << "thread " << t;
    }
}

TEST_F(StackCacheTest, OffMeansNoLookups)
{
    shim::scConfigure(false);
    const shim::StackCacheStats before = shim::scThreadStats();
    for (int i = 0; i < 3; ++i) EXPECT_NE(shim::stackCapture(0), 0u);
    const shim::StackCacheStats d = delta(shim::scThreadStats(), before);
    EXPECT_EQ(d.hits + d.misses + d.learnt, 0u);
}

namespace {

Triple g_atExit;
void captureAtThreadExit(void*)
{
    g_atExit = recurse(3);
}

}  // namespace

TEST_F(StackCacheTest, CaptureInAThreadExitDestructorAfterTheCacheWasFreed)
{
    SKIP_UNWIND_IN_EXITING_THREADS_UNDER_TSAN();
    // The cache's key was made before this one: glibc runs its destructor (which unmaps the thread's
    // cache) first, then this one captures on the exiting thread.
    pthread_key_t key;
    ASSERT_EQ(pthread_key_create(&key, captureAtThreadExit), 0);
    g_atExit = {};
    uint64_t hits = 0;
    std::thread([&] {
        shim::stackConfigure(24);
        shim::stackUseFramePointers(false);
        for (int i = 0; i < 3; ++i) expectSame(recurse(3), "before exit");
        hits = shim::scThreadStats().hits;
        pthread_setspecific(key, &g_atExit);
    }).join();
    pthread_key_delete(key);
    EXPECT_GE(hits, 3u);
    expectSame(g_atExit, "in a thread-exit destructor");
}
