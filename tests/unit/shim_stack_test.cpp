// Stack capture and interning: ids per call site, depth and skip, the drained ModuleDef/StackDef
// records (decoded with the real decoder), concurrent capture, and the fork reset.
#include "shim/stack.h"
#include "wire/codec.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace gpuspy;

// Counts the allocations this thread makes while t_countAllocations is set: the hot path must make
// none once warm. Interposing malloc would fight the sanitizers' own, so not in those builds.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define GS_COUNT_ALLOCATIONS 1
thread_local bool t_countAllocations = false;
std::atomic<long> g_allocations{0};
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* malloc(size_t n)
{
    if (t_countAllocations) g_allocations.fetch_add(1);
    return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size)
{
    if (t_countAllocations) g_allocations.fetch_add(1);
    return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n)
{
    if (t_countAllocations) g_allocations.fetch_add(1);
    return __libc_realloc(p, n);
}
#endif

namespace {

struct Module {
    uint64_t start, end, bias;
    std::string path;
};

// Every def drained in this process, in arrival order. The drain is global state: each def comes
// out once, so all tests drain into this one log and look their ids up here.
struct DefLog {
    std::vector<Module> modules;
    std::map<uint32_t, std::vector<uint64_t>> stacks;
    size_t stackDefs = 0;
    bool stackBeforeModule = false;  // a StackDef whose frames no earlier ModuleDef covered

    bool covered(uint64_t pc) const
    {
        for (const Module& m : modules)
            if (pc >= m.start && pc < m.end) return true;
        return false;
    }

    // Drains everything pending through a StreamDecoder, in small buffers to exercise the loop.
    void drain()
    {
        std::vector<uint8_t> bytes;
        wire::StreamHeader h = wire::makeStreamHeader(1, 0, 0);
        bytes.insert(bytes.end(), reinterpret_cast<uint8_t*>(&h), reinterpret_cast<uint8_t*>(&h + 1));
        uint8_t buf[8192];
        while (size_t n = shim::stackDrainDefs(buf, sizeof buf)) bytes.insert(bytes.end(), buf, buf + n);
        wire::StreamDecoder dec;
        ASSERT_TRUE(dec.feed(bytes.data(), bytes.size(), [&](const wire::RecordView& r) {
            if (r.type == wire::RecordType::ModuleDef) {
                auto b = r.as<wire::ModuleDefBody>();
                modules.push_back({b.start, b.end, b.bias, std::string(r.tail<wire::ModuleDefBody>())});
            } else if (r.type == wire::RecordType::StackDef) {
                auto b = r.as<wire::StackDefBody>();
                auto tail = r.tail<wire::StackDefBody>();
                std::vector<uint64_t> pcs(b.depth);
                std::memcpy(pcs.data(), tail.data(), tail.size());
                for (uint64_t pc : pcs)
                    if (!covered(pc)) stackBeforeModule = true;
                stacks[b.stackId] = pcs;
                ++stackDefs;
            }
        })) << dec.errorMessage();
        ASSERT_TRUE(dec.finish()) << dec.errorMessage();
    }

    const std::vector<uint64_t>& stack(uint32_t id)
    {
        if (!stacks.count(id)) drain();
        return stacks[id];
    }
};

DefLog g_log;

// Call sites the tests capture from. noipa (noinline, and no cloning or constant propagation) so
// each is its own frame; the asm keeps the calls from becoming tail calls (the frame must still be
// there when the stack is taken).
__attribute__((noipa)) uint32_t siteA()
{
    uint32_t id = shim::stackCapture(0);
    asm volatile("" ::: "memory");
    return id;
}

__attribute__((noipa)) uint32_t siteB()
{
    uint32_t id = shim::stackCapture(0);
    asm volatile("" ::: "memory");
    return id;
}

// Stands for a hook: its own frame is skipped, and it reports where it returns to in its caller.
__attribute__((noipa)) uint32_t hookLike(unsigned skip, uint64_t* returnAddress)
{
    *returnAddress = reinterpret_cast<uint64_t>(__builtin_return_address(0));
    uint32_t id = shim::stackCapture(skip);
    asm volatile("" ::: "memory");
    return id;
}

__attribute__((noipa)) uint32_t recurse(int levels)
{
    uint32_t id = levels == 0 ? siteA() : recurse(levels - 1);
    asm volatile("" ::: "memory");
    return id;
}

__attribute__((noipa)) void captureLoop(uint32_t* a, uint32_t* b, int n)
{
    for (int i = 0; i < n; ++i) {
        a[i] = siteA();
        b[i] = siteB();
        asm volatile("" ::: "memory");
    }
}

__attribute__((noipa)) void maybeFork(bool doFork, pid_t* child)
{
    if (doFork) *child = fork();
}

// No branch here: a branch lets the compiler duplicate the siteA call into each arm.
__attribute__((noipa)) uint32_t captureMaybeFork(bool doFork, pid_t* child)
{
    maybeFork(doFork, child);
    uint32_t id = siteA();
    asm volatile("" ::: "memory");
    return id;
}

__attribute__((noipa)) void captureSeq(const bool* forkBefore, uint32_t* ids, pid_t* child, int n)
{
    for (int i = 0; i < n; ++i) {
        ids[i] = captureMaybeFork(forkBefore[i], child);
        asm volatile("" ::: "memory");
    }
}

class StackTest : public ::testing::Test {
protected:
    void SetUp() override { shim::stackConfigure(24); }
};

}  // namespace

TEST_F(StackTest, SameSiteSameId)
{
    // Through captureLoop: a loop written here with a constant trip count may be unrolled into
    // several call instructions, which are different call sites.
    uint32_t ids[3], other[3];
    captureLoop(ids, other, 3);
    EXPECT_NE(ids[0], 0u);
    EXPECT_EQ(ids[0], ids[1]);
    EXPECT_EQ(ids[1], ids[2]);
}

TEST_F(StackTest, NoAllocationOnceWarm)
{
#ifndef GS_COUNT_ALLOCATIONS
    GTEST_SKIP() << "allocations are not counted in sanitizer builds";
#else
    uint32_t ids[1000], other[1000];
    captureLoop(ids, other, 2);  // warm-up: libunwind's per-thread cache, the stacks interned
    t_countAllocations = true;
    captureLoop(ids, other, 1000);
    t_countAllocations = false;
    EXPECT_EQ(g_allocations.load(), 0);
    EXPECT_EQ(ids[999], ids[0]);
#endif
}

TEST_F(StackTest, DifferentSitesDifferentIds)
{
    uint32_t a = siteA();
    uint32_t b = siteB();
    EXPECT_NE(a, 0u);
    EXPECT_NE(b, 0u);
    EXPECT_NE(a, b);
    EXPECT_NE(g_log.stack(a), g_log.stack(b));
}

TEST_F(StackTest, SkipHonoured)
{
    uint64_t ret = 0;
    // skip 0: the innermost frame is in hookLike, the next one is hookLike's return address here.
    uint32_t id0 = hookLike(0, &ret);
    const std::vector<uint64_t> s0 = g_log.stack(id0);
    ASSERT_GE(s0.size(), 2u);
    EXPECT_EQ(s0[1], ret);
    EXPECT_GT(s0[0], reinterpret_cast<uint64_t>(&hookLike));

    // skip 1: hookLike's frame is gone; the innermost frame is in this test's function.
    uint32_t id1 = hookLike(1, &ret);
    const std::vector<uint64_t> s1 = g_log.stack(id1);
    ASSERT_GE(s1.size(), 1u);
    EXPECT_EQ(s1[0], ret);
    EXPECT_NE(id0, id1);
}

TEST_F(StackTest, DepthHonoured)
{
    shim::stackConfigure(4);
    uint32_t shallow = recurse(10);
    shim::stackConfigure(24);
    uint32_t deep = recurse(30);
    shim::stackConfigure(wire::kMaxStackDepth + 100);  // clamped to the wire's limit
    uint32_t clamped = recurse(wire::kMaxStackDepth + 10);
    shim::stackConfigure(24);
    EXPECT_EQ(g_log.stack(shallow).size(), 4u);
    EXPECT_EQ(g_log.stack(deep).size(), 24u);
    EXPECT_EQ(g_log.stack(clamped).size(), wire::kMaxStackDepth);
    // The 24 innermost frames of the deeper stack: siteA, then recurse's own frames.
    EXPECT_EQ(g_log.stack(deep)[2], g_log.stack(deep)[3]);
}

TEST_F(StackTest, OffReturnsZero)
{
    shim::stackConfigure(0);
    EXPECT_EQ(siteA(), 0u);
    shim::stackConfigure(24);
    EXPECT_NE(siteA(), 0u);
}

TEST_F(StackTest, DrainedDefsDecodeAndModulesCoverFrames)
{
    uint32_t a = siteA();
    uint32_t b = siteB();
    g_log.drain();
    EXPECT_FALSE(g_log.stackBeforeModule);
    ASSERT_FALSE(g_log.modules.empty());
    for (uint32_t id : {a, b}) {
        ASSERT_TRUE(g_log.stacks.count(id));
        for (uint64_t pc : g_log.stacks[id]) EXPECT_TRUE(g_log.covered(pc)) << std::hex << pc;
    }
    // The module holding this test's code is the executable, named by its real path.
    bool exe = false;
    uint64_t here = reinterpret_cast<uint64_t>(&siteA);
    for (const Module& m : g_log.modules)
        if (here >= m.start && here < m.end) exe = m.path.find("shim_tests") != std::string::npos;
    EXPECT_TRUE(exe);
    // Drained once: nothing is pending now.
    uint8_t buf[8192];
    EXPECT_EQ(shim::stackDrainDefs(buf, sizeof buf), 0u);
}

TEST_F(StackTest, ConcurrentCaptureIsConsistent)
{
    constexpr int kThreads = 8, kIterations = 2000;
    std::vector<std::vector<uint32_t>> a(kThreads, std::vector<uint32_t>(kIterations));
    std::vector<std::vector<uint32_t>> b(kThreads, std::vector<uint32_t>(kIterations));
    std::atomic<int> waiting{kThreads};
    std::atomic<int> finished{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            waiting.fetch_sub(1);
            while (waiting.load() > 0) {}
            // One call instruction per site: no branch in the loop that the compiler could peel
            // into a second copy of the call (a different return address is a different stack).
            captureLoop(a[t].data(), b[t].data(), kIterations);
            finished.fetch_add(1);
#if defined(__SANITIZE_THREAD__)
            // libunwind's thread-exit destructor (its per-thread cache) locks a mutex after TSan
            // has retired the thread, and TSan's interceptor crashes: park instead of exiting.
            for (;;) pause();
#endif
        });
    }
    // The drain thread runs alongside the capturing threads.
    while (finished.load() < kThreads) g_log.drain();
#if defined(__SANITIZE_THREAD__)
    for (std::thread& t : threads) t.detach();
#else
    for (std::thread& t : threads) t.join();
#endif
    g_log.drain();
    // Every thread runs the same code from the same thread entry: one id per site for all of them.
    const uint32_t idA = a[0][0], idB = b[0][0];
    EXPECT_NE(idA, 0u);
    EXPECT_NE(idB, 0u);
    EXPECT_NE(idA, idB);
    for (int t = 0; t < kThreads; ++t)
        for (int i = 0; i < kIterations; ++i) {
            ASSERT_EQ(a[t][i], idA) << "thread " << t << " iteration " << i;
            ASSERT_EQ(b[t][i], idB) << "thread " << t << " iteration " << i;
        }
    EXPECT_FALSE(g_log.stackBeforeModule);
    EXPECT_FALSE(g_log.stack(idA).empty());
    EXPECT_EQ(shim::stackDroppedCount(), 0u);
}

TEST_F(StackTest, AfterForkEverythingIsPendingAgain)
{
    uint32_t ids[2], other[2];
    captureLoop(ids, other, 2);  // one call site
    const uint32_t a = ids[0];
    g_log.drain();
    size_t modules = g_log.modules.size();
    shim::stackAfterForkChild();
    DefLog fresh;
    fresh.drain();
    EXPECT_EQ(fresh.modules.size(), modules);
    ASSERT_TRUE(fresh.stacks.count(a));
    EXPECT_EQ(fresh.stacks[a], g_log.stacks[a]);
    EXPECT_FALSE(fresh.stackBeforeModule);
    EXPECT_EQ(ids[1], a);  // the table itself survives: same ids in the child
}

TEST_F(StackTest, ForkedChildResendsAndKeepsIds)
{
    // The same call instruction before and after the fork (in captureSeq's loop): the child's
    // capture must find the parent's stack under the parent's id.
    bool forkBefore[2] = {false, true};
    uint32_t ids[2] = {0, 0};
    pid_t child = -1;
    g_log.drain();
    captureSeq(forkBefore, ids, &child, 2);
    ASSERT_GE(child, 0);
    if (child == 0) {
        // No gtest assertions in the child: its exit status says what failed.
        shim::stackAfterForkChild();
        DefLog fresh;
        fresh.drain();
        if (ids[1] != ids[0] || ids[0] == 0) _exit(1);
        if (!fresh.stacks.count(ids[0])) _exit(2);
        if (fresh.stackBeforeModule || fresh.modules.size() < g_log.modules.size()) _exit(3);
        _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(ids[1], ids[0]);
}
