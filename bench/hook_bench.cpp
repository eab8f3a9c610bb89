// bench/hook_bench.cpp: gpuspy's cost per hooked call, excluding the call it forwards. One process,
// run under LD_PRELOAD=libgpuspy.so, calls the same driver entry point two ways: "direct" through
// the simulated driver's own symbol (libc's dlsym on the libcuda handle, which gpuspy cannot see) and
// "hooked" through the symbol the program would bind to (gpuspy's exported wrapper, which forwards
// to that same function). hooked - direct is the hook's own cost, measured in the same process, on
// the same thread, stream and driver state. Run without LD_PRELOAD both ways are the driver's symbol:
// the difference is then the measurement's noise floor.
//
// Each benchmark iteration is a batch of kBatch calls, each timed alone with the cycle counter, then a
// stream synchronize outside the timed region (so the simulated device never falls far behind and
// GPU timing's event pool never runs dry). Counters per run: mean, p50 and p99 per call in ns, and the
// mean over calls under 50 us with the share of calls above (ppm).
//
// Stacks: the calls are made from a recursion as deep as the capture (BENCH_CALL_DEPTH). This file's
// frames keep frame pointers, as an application built with -fno-omit-frame-pointer does, so that
// the shim's frame-pointer path can verify its walks here (GPUSPY_STACK_FP=1, the default);
// GPUSPY_STACK_FP=0 measures unw_backtrace on the same frames.
#pragma GCC optimize("no-omit-frame-pointer")
#include "bench/bench_common.h"

#include <cuda.h>

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

using namespace gpuspy::bench;

constexpr int kBatch = 64;
constexpr int kMaxThreads = 8;
constexpr size_t kCopyBytes = 256;

struct Entry {
    decltype(&::cuLaunchKernel) launch = nullptr;
    decltype(&::cuMemcpyHtoDAsync) copy = nullptr;  // cuMemcpyHtoDAsync_v2
    decltype(&::cuStreamQuery) query = nullptr;
    decltype(&::cuStreamSynchronize) sync = nullptr;
    decltype(&::cuCtxSetCurrent) setCurrent = nullptr;
    decltype(&::cuEventRecord) record = nullptr;
};
Entry g_direct, g_hooked;
bool g_preloaded = false;

CUcontext g_ctx = nullptr;
CUfunction g_fn = nullptr;
CUdeviceptr g_dev[kMaxThreads];
void* g_pinned[kMaxThreads];
CUstream g_streams[kMaxThreads];
CUevent g_events[kMaxThreads];
void* g_args[1];
uint64_t g_drainNsPerCall = 2000;  // BENCH_DRAIN_NS: pause after a hooked run, per call it made

using DlsymFn = void* (*)(void*, const char*);

// libc's own dlsym: gpuspy exports a dlsym that hands out its wrappers, so ask libc directly.
DlsymFn libcDlsym()
{
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void* p = libc ? dlvsym(libc, "dlsym", "GLIBC_2.34") : nullptr;
    if (!p && libc) p = dlvsym(libc, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<DlsymFn>(p);
}

template <class T>
void need(T& out, void* p, const char* name)
{
    if (!p) {
        fprintf(stderr, "hook_bench: %s not found\n", name);
        exit(2);
    }
    out = reinterpret_cast<T>(p);
}

void check(CUresult rc, const char* what)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "hook_bench: %s failed (%d)\n", what, int(rc));
        exit(2);
    }
}

void setUp()
{
    // The driver reads its environment at the first call: no modelled host cost (we measure gpuspy,
    // not the model), kernels and copies that the simulated device finishes quickly. The script may
    // override any of these (the "event cost modelled" variant keeps cuEventRecord's 2.5 us).
    setenv("SIMCUDA_HOST_COST", "0", 0);
    setenv("SIMCUDA_KERNEL_DEFAULT_NS", "1", 0);
    setenv("SIMCUDA_LAUNCH_LATENCY_NS", "0", 0);
    setenv("SIMCUDA_BANDWIDTH", "pinned=1000", 0);

    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) {
        fprintf(stderr, "hook_bench: %s (set LD_LIBRARY_PATH to build/lib/simcuda)\n", dlerror());
        exit(2);
    }
    DlsymFn real = libcDlsym();
    if (!real) {
        fprintf(stderr, "hook_bench: libc's dlsym not found\n");
        exit(2);
    }
    auto bind = [&](Entry& e, bool hooked) {
        auto look = [&](const char* name) { return hooked ? dlsym(RTLD_DEFAULT, name) : real(cuda, name); };
        need(e.launch, look("cuLaunchKernel"), "cuLaunchKernel");
        need(e.copy, look("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync_v2");
        need(e.query, look("cuStreamQuery"), "cuStreamQuery");
        need(e.sync, look("cuStreamSynchronize"), "cuStreamSynchronize");
        need(e.setCurrent, look("cuCtxSetCurrent"), "cuCtxSetCurrent");
        need(e.record, look("cuEventRecord"), "cuEventRecord");
    };
    bind(g_direct, false);
    bind(g_hooked, true);
    g_preloaded = g_hooked.launch != g_direct.launch;

    // Set-up goes the way an application's would: through whatever the program binds to.
    decltype(&::cuInit) init;
    decltype(&::cuDeviceGet) deviceGet;
    decltype(&::cuDevicePrimaryCtxRetain) retain;
    decltype(&::cuModuleLoadData) load;
    decltype(&::cuModuleGetFunction) getFunction;
    decltype(&::cuMemAlloc) alloc;
    decltype(&::cuMemAllocHost) allocHost;
    decltype(&::cuStreamCreate) streamCreate;
    decltype(&::cuEventCreate) eventCreate;
    need(init, dlsym(RTLD_DEFAULT, "cuInit"), "cuInit");
    need(deviceGet, dlsym(RTLD_DEFAULT, "cuDeviceGet"), "cuDeviceGet");
    need(retain, dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRetain"), "cuDevicePrimaryCtxRetain");
    need(load, dlsym(RTLD_DEFAULT, "cuModuleLoadData"), "cuModuleLoadData");
    need(getFunction, dlsym(RTLD_DEFAULT, "cuModuleGetFunction"), "cuModuleGetFunction");
    need(alloc, dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), "cuMemAlloc_v2");
    need(allocHost, dlsym(RTLD_DEFAULT, "cuMemAllocHost_v2"), "cuMemAllocHost_v2");
    need(streamCreate, dlsym(RTLD_DEFAULT, "cuStreamCreate"), "cuStreamCreate");
    need(eventCreate, dlsym(RTLD_DEFAULT, "cuEventCreate"), "cuEventCreate");

    CUdevice dev = 0;
    check(init(0), "cuInit");
    check(deviceGet(&dev, 0), "cuDeviceGet");
    check(retain(&g_ctx, dev), "cuDevicePrimaryCtxRetain");
    check(g_hooked.setCurrent(g_ctx), "cuCtxSetCurrent");
    static const char kImage[] = "bench module";  // opaque to the simulated driver: loaded as if built for the device
    CUmodule mod = nullptr;
    check(load(&mod, kImage), "cuModuleLoadData");
    check(getFunction(&g_fn, mod, "_Z12bench_kernelPf"), "cuModuleGetFunction");
    for (int i = 0; i < kMaxThreads; ++i) {
        check(alloc(&g_dev[i], kCopyBytes), "cuMemAlloc");
        check(allocHost(&g_pinned[i], kCopyBytes), "cuMemAllocHost");
        check(streamCreate(&g_streams[i], CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        check(eventCreate(&g_events[i], CU_EVENT_DEFAULT), "cuEventCreate");  // a timing event, as GPU timing uses
    }
    g_args[0] = &g_dev[0];
}

// Event: cuEventRecord of a timing event, what GPU timing adds per timed operation (its direct
// figure is the driver's own cost of one record).
enum class Call { Launch, Copy, Query, Event };

template <Call C>
inline CUresult issue(const Entry& e, int ti)
{
    if constexpr (C == Call::Launch) return e.launch(g_fn, 1, 1, 1, 32, 1, 1, 0, g_streams[ti], g_args, nullptr);
    if constexpr (C == Call::Copy) return e.copy(g_dev[ti], g_pinned[ti], kCopyBytes, g_streams[ti]);
    if constexpr (C == Call::Query) return e.query(g_streams[ti]);
    if constexpr (C == Call::Event) return e.record(g_events[ti], g_streams[ti]);
}

// range(0): 0 = direct, 1 = hooked; range(1): frames of recursion below the benchmark to call from.
template <Call C>
void BM_Call(benchmark::State& state)
{
    const Entry& e = state.range(0) ? g_hooked : g_direct;
    const int depth = int(state.range(1));
    const int ti = state.thread_index();
    // Each thread makes the context current the way an application thread would (recorded).
    g_hooked.setCurrent(g_ctx);
    TickHistogram hist;
    uint64_t failures = 0;
    auto body = [&] {
        for (auto _ : state) {
            uint64_t batch = 0;
            for (int i = 0; i < kBatch; ++i) {
                const uint64_t t0 = ticks();
                const CUresult rc = issue<C>(e, ti);
                const uint64_t t1 = ticks();
                failures += rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY;
                hist.add(t1 - t0);
                batch += t1 - t0;
            }
            state.SetIterationTime(double(batch) * nsPerTick() * 1e-9);
            g_direct.sync(g_streams[ti]);
        }
    };
    atDepth(depth, body);
    // Outside the timed region: give gpuspy's drain thread time to empty the queue before the next
    // run, so that no run starts against a full queue (a dropped record skips the enqueue and would
    // make the hook look cheaper). Each run stays under one producer's queue capacity (64 Ki items)
    // when the script keeps --benchmark_min_time small.
    if (state.range(0) && g_preloaded && g_drainNsPerCall > 0) {
        const uint64_t ns = std::min<uint64_t>(hist.count() * g_drainNsPerCall, 2000000000ull);
        timespec d{time_t(ns / 1000000000u), long(ns % 1000000000u)};
        nanosleep(&d, nullptr);
    }
    if (failures) state.SkipWithError("driver call failed");
    const double k = nsPerTick();
    using benchmark::Counter;
    state.counters["mean_ns"] = Counter(hist.meanTicks() * k, Counter::kAvgThreads);
    state.counters["p50_ns"] = Counter(hist.quantileTicks(0.50) * k, Counter::kAvgThreads);
    state.counters["p99_ns"] = Counter(hist.quantileTicks(0.99) * k, Counter::kAvgThreads);
    // A call over 50 us on this path is a preemption (the shim never waits); the mean without them,
    // and how many there were, so that a real stall would still show.
    uint64_t over = 0;
    const double trimmed = hist.meanBelowTicks(uint64_t(50000.0 / k), &over);
    state.counters["mean50_ns"] = Counter(trimmed * k, Counter::kAvgThreads);
    state.counters["over50_ppm"] =
        Counter(hist.count() ? 1e6 * double(over) / double(hist.count()) : 0, Counter::kAvgThreads);
    state.counters["calls"] = Counter(double(hist.count()), Counter::kDefaults);
    state.counters["preloaded"] = Counter(g_preloaded ? 1 : 0, Counter::kAvgThreads);
}

void registerAll(int depth, int repetitions)
{
    struct Kind {
        const char* name;
        void (*fn)(benchmark::State&);
    };
    const Kind kinds[] = {{"launch", BM_Call<Call::Launch>}, {"copy", BM_Call<Call::Copy>}, {"query", BM_Call<Call::Query>},
                          {"event", BM_Call<Call::Event>}};
    for (const Kind& k : kinds)
        for (int hooked = 0; hooked < 2; ++hooked) {
            const std::string name = std::string(k.name) + (hooked ? "/hooked" : "/direct");
            benchmark::RegisterBenchmark(name.c_str(), k.fn)
                ->Args({hooked, depth})
                ->ArgNames({"hook", "depth"})
                ->Threads(1)
                ->Threads(2)
                ->Threads(8)
                ->UseManualTime()
                ->Repetitions(repetitions)
                ->ReportAggregatesOnly(true);
        }
}

}  // namespace

int main(int argc, char** argv)
{
    // The recursion matches the capture depth, so a 24-frame capture walks 24 frames of the program.
    int depth = 0;
    if (const char* d = getenv("GPUSPY_STACK_DEPTH")) depth = atoi(d);
    if (const char* d = getenv("BENCH_CALL_DEPTH")) depth = atoi(d);
    int reps = 5;
    if (const char* r = getenv("BENCH_REPETITIONS")) reps = atoi(r) > 0 ? atoi(r) : reps;
    if (const char* d = getenv("BENCH_DRAIN_NS")) g_drainNsPerCall = strtoull(d, nullptr, 10);
    setUp();
    fprintf(stderr, "hook_bench: %s, call depth %d, %.4f ns/tick\n",
            g_preloaded ? "gpuspy preloaded" : "no gpuspy (direct and hooked are the same symbol)", depth, nsPerTick());
    registerAll(depth, reps);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("gpuspy_preloaded", g_preloaded ? "1" : "0");
    benchmark::AddCustomContext("call_depth", std::to_string(depth));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    // Exit without tearing the context down: gpuspy drains at exit on its own.
    return 0;
}
