// bench/stack_bench.cpp: the cost of shim::stackCapture on the hook path (unw_backtrace + intern
// lookup of a stack seen before), by depth and thread count, against unw_backtrace alone and against
// a frame-pointer walk (a reference: the shim has no frame-pointer path; this file is built with
// -fno-omit-frame-pointer so that the walk is valid here).
#include "shim/stack.h"

#include <benchmark/benchmark.h>

#include <dlfcn.h>

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

void BM_StackCapture(benchmark::State& state)
{
    const unsigned depth = unsigned(state.range(0));
    if (state.thread_index() == 0) gpuspy::shim::stackConfigure(depth);
    auto body = [&] {
        for (auto _ : state) benchmark::DoNotOptimize(gpuspy::shim::stackCapture(0));
    };
    atDepth(int(depth), body);
    state.counters["depth"] = benchmark::Counter(depth, benchmark::Counter::kAvgThreads);
}
BENCHMARK(BM_StackCapture)->Arg(8)->Arg(24)->Arg(64)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

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
