// bench/stack_bench.cpp: the cost of shim::stackCapture on the hook path, by depth and thread count:
// through unw_backtrace alone (GPUSPY_STACK_FP=0), through a verified frame-pointer walk, and through
// a walk found wrong before (a frame without a frame pointer on the way: walk, lookup, then
// unw_backtrace); the one-time cost of judging a new walk; and, for reference, unw_backtrace alone
// and a bare frame-pointer walk. This file is built with -fno-omit-frame-pointer, so that walks
// through its own frames are valid; noFramePointerHop below is built without.
#include "shim/stack.h"

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdint>

namespace {

using BacktraceFn = int (*)(void**, int);

BacktraceFn rawBacktrace()
{
    static BacktraceFn fn = [] {
        void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
        return lib ? reinterpret_cast<BacktraceFn>(dlsym(lib, "unw_backtrace")) : nullptr;
    }();
    return fn;
}

// Runs the benchmark loop `levels` frames below the caller, so that the captured stack is as deep
// as asked whatever the harness's own depth.
template <class F>
__attribute__((noipa)) void atDepth(int levels, F& body)
{
    if (levels == 0) {
        body();
    } else {
        atDepth(levels - 1, body);
    }
    asm volatile("" ::: "memory");
}

// Calls body from a function built without frame pointers that leaves rbp alone: a walk through it
// skips its caller's frame, as one through cudart does.
template <class F>
__attribute__((noipa, optimize("omit-frame-pointer"))) void noFramePointerHop(F& body)
{
    body();
    asm volatile("" ::: "memory");
}

// The frame-pointer path's counts over a run, as benchmark counters (they say which path ran).
void countPaths(benchmark::State& state, const gpuspy::shim::StackFpStats& before)
{
    const gpuspy::shim::StackFpStats now = gpuspy::shim::stackFpStats();
    using benchmark::Counter;
    const double n = double(state.iterations());
    state.counters["fp_reused"] = Counter(double(now.reused - before.reused) / n, Counter::kAvgThreads);
    state.counters["fp_fellback"] = Counter(double(now.fellBack - before.fellBack) / n, Counter::kAvgThreads);
}

enum class Path { Unwind, FramePointer, FramePointerMismatch };

// range(0): depth of the capture and of the recursion it is taken from.
template <Path P>
void BM_StackCapture(benchmark::State& state)
{
    const unsigned depth = unsigned(state.range(0));
    if (state.thread_index() == 0) {
        gpuspy::shim::stackConfigure(depth);
        gpuspy::shim::stackUseFramePointers(P != Path::Unwind);
    }
    const gpuspy::shim::StackFpStats before = gpuspy::shim::stackFpStats();
    uint32_t captures = 0;
    auto body = [&] {
        for (auto _ : state) {
            // A thread whose walks keep failing gives the path up after 4,096 fallbacks (then it
            // costs what unw_backtrace does): switched on again every 1,024, it keeps walking here.
            if (P == Path::FramePointerMismatch && (++captures & 1023) == 0) gpuspy::shim::stackUseFramePointers(true);
            benchmark::DoNotOptimize(gpuspy::shim::stackCapture(0));
        }
    };
    // The mismatch case: the hop two frames in, so that every walk skips a frame within the depth.
    auto hop = [&] { noFramePointerHop(body); };
    if (P == Path::FramePointerMismatch) atDepth(int(depth), hop);
    else atDepth(int(depth), body);
    countPaths(state, before);
    state.counters["depth"] = benchmark::Counter(depth, benchmark::Counter::kAvgThreads);
}
BENCHMARK_TEMPLATE(BM_StackCapture, Path::Unwind)->Arg(8)->Arg(24)->Arg(64)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();
BENCHMARK_TEMPLATE(BM_StackCapture, Path::FramePointer)
    ->Arg(8)->Arg(24)->Arg(64)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();
BENCHMARK_TEMPLATE(BM_StackCapture, Path::FramePointerMismatch)->Arg(8)->Arg(24)->Arg(64)->UseRealTime();

// One of 2^levels distinct call paths, chosen by the bits of path: each level calls on from one of
// two call sites (the asm after each keeps the compiler from merging them).
template <class F>
__attribute__((noipa)) void pathTo(uint32_t path, int levels, F& body)
{
    if (levels == 0) {
        body();
    } else if (path & 1) {
        pathTo(path >> 1, levels - 1, body);
        asm volatile("nop" ::: "memory");
    } else {
        pathTo(path >> 1, levels - 1, body);
        asm volatile("nop; nop" ::: "memory");
    }
}

// A capture of a stack never seen before, once per iteration: with the frame-pointer path, its walk
// is judged (unw_backtrace, the comparison, the prologue check of each function stepped through);
// without, unw_backtrace alone. Both intern a new stack. The verdict cache holds 4,096 walks: this
// takes 512 per configuration and run.
template <Path P>
void BM_NewStack(benchmark::State& state)
{
    gpuspy::shim::stackConfigure(24);
    gpuspy::shim::stackUseFramePointers(P != Path::Unwind);
    static uint32_t next[2] = {0, 1u << 15};  // distinct paths for each configuration
    uint32_t& path = next[P == Path::Unwind ? 0 : 1];
    const gpuspy::shim::StackFpStats before = gpuspy::shim::stackFpStats();
    auto capture = [&] { benchmark::DoNotOptimize(gpuspy::shim::stackCapture(0)); };
    auto loop = [&] {
        for (auto _ : state) {
            auto start = std::chrono::steady_clock::now();
            pathTo(path++, 16, capture);
            state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
    };
    atDepth(8, loop);  // the 24 frames captured are all this file's (frame pointers)
    const gpuspy::shim::StackFpStats now = gpuspy::shim::stackFpStats();
    state.counters["fp_verified"] = double(now.verified - before.verified);
}
BENCHMARK_TEMPLATE(BM_NewStack, Path::Unwind)->Iterations(512)->Repetitions(1)->UseManualTime();
BENCHMARK_TEMPLATE(BM_NewStack, Path::FramePointer)->Iterations(512)->Repetitions(1)->UseManualTime();

void BM_UnwBacktraceOnly(benchmark::State& state)
{
    const int depth = int(state.range(0));
    BacktraceFn fn = rawBacktrace();
    if (!fn) {
        state.SkipWithError("libunwind.so.8 not found");
        return;
    }
    void* buf[256];
    auto body = [&] {
        for (auto _ : state) benchmark::DoNotOptimize(fn(buf, depth + 1));
    };
    atDepth(depth, body);
}
BENCHMARK(BM_UnwBacktraceOnly)->Arg(8)->Arg(24)->Arg(64);

// Follows the saved frame-pointer chain: [rbp] = caller's rbp, [rbp + 8] = return address. Stops at
// a null, misaligned or non-increasing link (the chain's end, or a frame without a frame pointer).
// The bare walk, unchecked and uncached: what the shim's walk adds its checks and lookup to.
__attribute__((noinline)) int framePointerWalk(void** out, int max)
{
    auto* fp = static_cast<void**>(__builtin_frame_address(0));
    int n = 0;
    while (n < max && fp && (reinterpret_cast<uintptr_t>(fp) & 7) == 0) {
        out[n++] = fp[1];
        auto* next = static_cast<void**>(fp[0]);
        if (next <= fp) break;
        fp = next;
    }
    return n;
}

void BM_FramePointerWalk(benchmark::State& state)
{
    const int depth = int(state.range(0));
    void* buf[256];
    int got = 0;
    auto body = [&] {
        for (auto _ : state) {
            got = framePointerWalk(buf, depth);
            benchmark::DoNotOptimize(got);
        }
    };
    atDepth(depth, body);
    state.counters["frames"] = got;
}
BENCHMARK(BM_FramePointerWalk)->Arg(8)->Arg(24)->Arg(64);

void BM_StackOff(benchmark::State& state)
{
    gpuspy::shim::stackConfigure(0);
    for (auto _ : state) benchmark::DoNotOptimize(gpuspy::shim::stackCapture(0));
}
BENCHMARK(BM_StackOff);

}  // namespace

BENCHMARK_MAIN();
