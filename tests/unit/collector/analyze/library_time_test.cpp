// tests/unit/collector/analyze/library_time_test.cpp: how host time between two CUDA calls is told to be inside
// one invocation of a library call (collector/analyze/library_time.h), on hand-built stacks and modules.
#include "collector/analyze/library_time.h"

#include "collector/model/model.h"

#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

namespace gpuspy::collect::detail {
namespace {

// The app at 0x1000-0x2000, cuBLAS at 0x10000-0x20000, cudart (linked in) inside the app, the driver at
// 0x30000-0x40000. Stacks are return addresses, innermost first.
Process process()
{
    Process p;
    p.modules = {{0x1000, 0x2000, 0x1000, "/srv/app"},
                 {0x10000, 0x20000, 0x10000, "/usr/local/cuda/lib64/libcublas.so.13"},
                 {0x30000, 0x40000, 0x30000, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}};
    p.stacks[1] = {0x30010, 0x10100, 0x10200, 0x1100, 0x1800};  // cublasCreate's first call, from app line A
    p.stacks[2] = {0x30010, 0x10300, 0x10200, 0x1100, 0x1800};  // its second call (another internal path)
    p.stacks[3] = {0x30010, 0x10500, 0x1200, 0x1800};           // cublasSgemm from app line B
    p.stacks[4] = {0x30010, 0x1300, 0x1800};                    // the app's own cudaMemcpy
    p.stacks[5] = {0x30010, 0x10100, 0x10200, 0x1140, 0x1800};  // cublasCreate's first call, from line C
    return p;
}

TEST(LibraryInvocations, KeysNameTheLibraryCallAndItsCaller)
{
    const Process p = process();
    LibraryInvocations libs;
    libs.bind(&p);
    EXPECT_EQ(libs.keyOf(4), 0u);  // no library frame
    EXPECT_EQ(libs.keyOf(0), 0u);  // no stack
    EXPECT_NE(libs.keyOf(1), 0u);
    EXPECT_EQ(libs.keyOf(1), libs.keyOf(2));  // one library call, one caller
    EXPECT_NE(libs.keyOf(1), libs.keyOf(3));  // another call site of the app
    EXPECT_NE(libs.keyOf(1), libs.keyOf(5));
    EXPECT_EQ(libs.libraryOf(libs.keyOf(3)), "libcublas.so.13");
}

// A thread's calls in time order through learn and inside, as the analysis walks them.
std::vector<bool> walk(LibraryInvocations& libs, std::initializer_list<uint32_t> stacks)
{
    std::vector<bool> inside;
    LibraryStep prev;
    for (uint32_t s : stacks) {
        const LibraryStep cur = libs.step(s);
        libs.learn(prev, cur, libs.starts());
        inside.push_back(libs.inside(prev, cur));
        prev = cur;
    }
    return inside;
}

TEST(LibraryInvocations, TimeBetweenTwoCallsOfOneInvocationIsTheLibrarys)
{
    const Process p = process();
    LibraryInvocations libs;
    libs.bind(&p);
    // memcpy, cublasCreate (two calls), memcpy: only the time between the create's two calls is the library's.
    EXPECT_EQ(walk(libs, {4, 1, 2, 4}), (std::vector<bool>{false, false, true, false}));
}

TEST(LibraryInvocations, ALoopCallingTheLibraryAgainIsTheUsersBetweenInvocations)
{
    const Process p = process();
    LibraryInvocations libs;
    libs.bind(&p);
    // The same create from line A three times in a row, the user's work between: stack 1 began an
    // invocation, so 2 -> 1 is a new invocation (the user's time), 1 -> 2 inside one.
    EXPECT_EQ(walk(libs, {1, 2, 1, 2, 1, 2}), (std::vector<bool>{false, true, false, true, false, true}));
    // One call per invocation (an SGEMM launch): the same stack twice is never taken for the library's.
    EXPECT_EQ(walk(libs, {3, 3, 3}), (std::vector<bool>{false, false, false}));
    // Another caller of the same library function is another invocation.
    EXPECT_EQ(walk(libs, {1, 5}), (std::vector<bool>{false, false}));
}

TEST(LibraryInvocations, ALookAheadLearnsIntoItsOwnSet)
{
    const Process p = process();
    LibraryInvocations libs;
    libs.bind(&p);
    std::unordered_set<uint64_t> extra;
    LibraryStep prev;
    const LibraryStep first = libs.step(1);
    libs.learn(prev, first, extra);
    EXPECT_TRUE(libs.starts().empty());  // the kept set is untouched
    EXPECT_FALSE(libs.inside(libs.step(2), first, &extra));  // 2 -> 1: 1 began an invocation
    EXPECT_TRUE(libs.inside(libs.step(2), first));            // without the look-ahead's set it would not know
}

}  // namespace
}  // namespace gpuspy::collect::detail

namespace gpuspy::collect::detail {
namespace {

// The invocations of library calls, counted for library-setup-in-loop: keys 1 (a handle's creation, stacks 10
// and 11 inside it) and 2 (the library's work, stack 20), user calls with no key (stack 30) between.
TEST(LibraryInvocationCounter, StepsAreInvocationsWithTheLoopsWorkBetween)
{
    LibraryInvocationCounter n;
    uint64_t t = 0;
    auto call = [&](uint64_t key, uint32_t stack, bool work = false, uint32_t tid = 1) {
        n.onCall(key, stack, tid, t, t + 10, work);
        t += 100;
    };
    // Setup: three handles made one after the other (A B A B A B: three invocations), no work between.
    for (int i = 0; i < 3; ++i) {
        call(1, 10);
        call(1, 11);
    }
    // The loop: each step makes a handle, works (a launch inside key 2, a user sync) and goes on.
    for (int i = 0; i < 5; ++i) {
        call(1, 10);
        call(1, 11);
        call(2, 20, true);
        call(0, 30);
    }
    n.finish();
    const auto& k = n.byKey();
    ASSERT_EQ(k.count(1), 1u);
    EXPECT_EQ(k.at(1).count, 3u + 5u);
    // The three made at start are one step, and the loop's first (no work came between them); each of the
    // loop's others, after its step's work, is another.
    EXPECT_EQ(k.at(1).steps, 1u + 4u);
    EXPECT_EQ(k.at(1).firstNs, 110u);  // from its first call's begin to its last call's end
    EXPECT_EQ(k.at(1).ns, 8u * 110u);
    EXPECT_EQ(k.at(1).stacks, (std::set<uint32_t>{10, 11}));
    EXPECT_EQ(k.at(2).count, 5u);
}

// A library call repeating one CUDA call from one place (a loop of frees inside a destroy) is one invocation;
// its own device work does not make the next invocation a step, another thread's does not either.
TEST(LibraryInvocationCounter, ItsOwnWorkAndOtherThreadsAreNotTheLoops)
{
    LibraryInvocationCounter n;
    uint64_t t = 0;
    auto call = [&](uint64_t key, uint32_t stack, bool work, uint32_t tid) {
        n.onCall(key, stack, tid, t, t + 10, work);
        t += 100;
    };
    for (int i = 0; i < 4; ++i) call(1, 10, true, 1);  // one invocation, a launch in each call
    call(0, 30, false, 1);
    call(2, 20, true, 2);  // work on another thread
    call(1, 10, true, 1);
    n.finish();
    EXPECT_EQ(n.byKey().at(1).count, 2u);
    EXPECT_EQ(n.byKey().at(1).steps, 1u);
}

}  // namespace
}  // namespace gpuspy::collect::detail
