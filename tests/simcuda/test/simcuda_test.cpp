// Tests of the simulated driver through dlopen, as a profiler or cudart would meet it: ABIs, timeline, trace, faults.
#define __CUDA_API_VERSION_INTERNAL 1  // declares every ABI variant (_v2, _ptsz, _ptds, the old ones) for the typedefs
#include <cuda.h>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using json = nlohmann::json;

std::string tracePath() { return std::string(SIMCUDA_TEST_DIR) + "/trace_" + std::to_string(getpid()) + ".jsonl"; }

// The driver reads its environment once, at first use: set it before main() and dlopen().
struct Environment {
    Environment()
    {
        setenv("SIMCUDA_DEVICES", "2", 1);
        setenv("SIMCUDA_KERNEL_NS", "slow2ms=2000000,slow50ms=50000000,ten_us=10000", 1);
        setenv("SIMCUDA_FAIL", "cuMemAllocPitch_v2@2=2,cuLaunchCooperativeKernel@*=700", 1);
        setenv("SIMCUDA_TRACE", (std::string(SIMCUDA_TEST_DIR) + "/trace_%p.jsonl").c_str(), 1);
        unlink(tracePath().c_str());
    }
};
const Environment g_environment;

int64_t nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void* library()
{
    static void* h = [] {
        void* lib = dlopen(SIMCUDA_LIB, RTLD_NOW | RTLD_LOCAL);
        if (!lib) ADD_FAILURE() << dlerror();
        return lib;
    }();
    return h;
}

void* sym(const char* name) { return dlsym(library(), name); }

// Looks a name up the way cudart does: through cuGetProcAddress_v2, with a version and flags.
void* proc(const char* name, int version, cuuint64_t flags = 0, CUdriverProcAddressQueryResult* status = nullptr,
           CUresult* rc = nullptr)
{
    auto getProc = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(sym("cuGetProcAddress_v2"));
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st;
    const CUresult r = getProc(name, &fn, version, flags, &st);
    if (status) *status = st;
    if (rc) *rc = r;
    return fn;
}

#define FN(name) reinterpret_cast<decltype(&::name)>(sym(#name))

// A context on device `dev` made current, and a module whose kernels are named as SIMCUDA_KERNEL_NS expects.
struct Fixture {
    CUcontext ctx = nullptr;
    CUmodule mod = nullptr;
    explicit Fixture(int dev = 0)
    {
        EXPECT_EQ(FN(cuInit)(0), CUDA_SUCCESS);
        EXPECT_EQ(FN(cuDevicePrimaryCtxRetain)(&ctx, dev), CUDA_SUCCESS);
        EXPECT_EQ(FN(cuCtxSetCurrent)(ctx), CUDA_SUCCESS);
        static const char image[16] = "not a fatbin";
        EXPECT_EQ(FN(cuModuleLoadData)(&mod, image), CUDA_SUCCESS);
    }
    CUfunction kernel(const char* name)
    {
        CUfunction f = nullptr;
        EXPECT_EQ(FN(cuModuleGetFunction)(&f, mod, name), CUDA_SUCCESS);
        return f;
    }
    CUresult launch(CUfunction f, CUstream s, bool perThread = false)
    {
        auto fn = perThread ? FN(cuLaunchKernel_ptsz) : FN(cuLaunchKernel);
        return fn(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
    }
    unsigned long long streamId(CUstream s)
    {
        unsigned long long id = 0;
        EXPECT_EQ(FN(cuStreamGetId)(s, &id), CUDA_SUCCESS);
        return id;
    }
};

std::vector<json> traceRecords()
{
    std::vector<json> out;
    std::ifstream in(tracePath());
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
}

// Device ops on one stream, in submission order.
std::vector<json> opsOn(unsigned long long stream)
{
    std::vector<json> out;
    for (json& r : traceRecords())
        if (r["type"] == "op" && r["stream"] == stream) out.push_back(r);
    return out;
}

std::vector<json> waitsFor(const std::string& api)
{
    std::vector<json> out;
    for (json& r : traceRecords())
        if (r["type"] == "wait" && r["api"] == api) out.push_back(r);
    return out;
}

// ---------------------------------------------------------------- cuGetProcAddress
TEST(Lookup, VersionedAbisMatchTheRealDriversNames)
{
    Fixture fx;
    const struct {
        const char* name;
        int oldVersion;
        const char* oldSym;
        int newVersion;
        const char* newSym;
    } cases[] = {
        {"cuCtxSynchronize", 2000, "cuCtxSynchronize", 13000, "cuCtxSynchronize_v2"},
        {"cuEventElapsedTime", 2000, "cuEventElapsedTime", 12080, "cuEventElapsedTime_v2"},
        {"cuCtxGetDevice", 2000, "cuCtxGetDevice", 13000, "cuCtxGetDevice_v2"},
        {"cuStreamBeginCapture", 10000, "cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2"},
        {"cuMemPrefetchAsync", 8000, "cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2"},
        {"cuMemcpyBatchAsync", 12080, "cuMemcpyBatchAsync", 13000, "cuMemcpyBatchAsync_v2"},
        {"cuGetProcAddress", 11030, "cuGetProcAddress", 12000, "cuGetProcAddress_v2"},
        {"cuMemAlloc", 3020, "cuMemAlloc_v2", 13000, "cuMemAlloc_v2"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        void* oldFn = proc(c.name, c.oldVersion);
        void* newFn = proc(c.name, c.newVersion);
        ASSERT_NE(oldFn, nullptr);
        EXPECT_EQ(oldFn, sym(c.oldSym));
        EXPECT_EQ(newFn, sym(c.newSym));
        EXPECT_EQ(proc(c.name, 13000), proc(c.name, 13010)) << "a newer runtime gets the newest ABI";
    }
    // Both cuCtxSynchronize ABIs work when called with their own signature.
    auto sync2000 = reinterpret_cast<CUresult (*)()>(proc("cuCtxSynchronize", 2000));
    auto sync13000 = reinterpret_cast<CUresult (*)(CUcontext)>(proc("cuCtxSynchronize", 13000));
    EXPECT_EQ(sync2000(), CUDA_SUCCESS);
    EXPECT_EQ(sync13000(fx.ctx), CUDA_SUCCESS);
    CUdevice dev = -1;
    EXPECT_EQ(reinterpret_cast<CUresult (*)(CUdevice*, CUcontext)>(proc("cuCtxGetDevice", 13000))(&dev, fx.ctx), CUDA_SUCCESS);
    EXPECT_EQ(dev, 0);
}

TEST(Lookup, PerThreadFlagGivesDistinctFunctions)
{
    const struct {
        const char* name;
        int version;
        const char* plain;
        const char* perThread;
    } cases[] = {
        {"cuLaunchKernel", 7000, "cuLaunchKernel", "cuLaunchKernel_ptsz"},
        {"cuMemcpyHtoD", 7000, "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds"},
        {"cuMemcpyAsync", 7000, "cuMemcpyAsync", "cuMemcpyAsync_ptsz"},
        {"cuStreamSynchronize", 7000, "cuStreamSynchronize", "cuStreamSynchronize_ptsz"},
        {"cuEventRecord", 7000, "cuEventRecord", "cuEventRecord_ptsz"},
        {"cuGraphLaunch", 10000, "cuGraphLaunch", "cuGraphLaunch_ptsz"},
        {"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz"},
        {"cuMemsetD8", 7000, "cuMemsetD8_v2", "cuMemsetD8_v2_ptds"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        void* plain = proc(c.name, c.version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        void* perThread = proc(c.name, c.version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
        ASSERT_NE(plain, nullptr);
        ASSERT_NE(perThread, nullptr);
        EXPECT_NE(plain, perThread);
        EXPECT_EQ(plain, sym(c.plain));
        EXPECT_EQ(perThread, sym(c.perThread));
        EXPECT_EQ(proc(c.name, c.version, 0), plain) << "flags 0 means the legacy stream";
    }
}

TEST(Lookup, UnknownAndTooOldNamesFailLoudly)
{
    CUdriverProcAddressQueryResult st;
    CUresult rc;
    void* fn = proc("cuGraphicsGLRegisterBuffer", 13000, 0, &st, &rc);
    ASSERT_NE(fn, nullptr) << "unimplemented entry points get a stub";
    EXPECT_EQ(reinterpret_cast<CUresult (*)()>(fn)(), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(proc("cuCtxSynchronize", 1000, 0, &st, &rc), nullptr);
    EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT_EQ(rc, CUDA_ERROR_NOT_FOUND);
}

// ---------------------------------------------------------------- timeline
TEST(Timeline, StreamOrderAndLegacyDefaultStream)
{
    Fixture fx;
    CUfunction k = fx.kernel("ten_us_kernel");
    CUstream blocking, nonBlocking;
    ASSERT_EQ(FN(cuStreamCreate)(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamCreate)(&nonBlocking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    const unsigned long long legacyId = fx.streamId(nullptr), blockingId = fx.streamId(blocking),
                             nonBlockingId = fx.streamId(nonBlocking);
    unsigned long long perThreadId = 0;
    ASSERT_EQ(FN(cuStreamGetId_ptsz)(nullptr, &perThreadId), CUDA_SUCCESS);
    EXPECT_NE(legacyId, perThreadId);
    EXPECT_EQ(fx.streamId(CU_STREAM_LEGACY), legacyId);

    ASSERT_EQ(fx.launch(k, blocking), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(k, blocking), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(k, nullptr), CUDA_SUCCESS);            // legacy: waits for the blocking stream
    ASSERT_EQ(fx.launch(k, nonBlocking), CUDA_SUCCESS);        // not ordered with the legacy stream
    ASSERT_EQ(fx.launch(k, blocking), CUDA_SUCCESS);           // waits for the legacy stream
    ASSERT_EQ(fx.launch(k, nullptr, true), CUDA_SUCCESS);      // per-thread stream: blocking, waits for legacy
    ASSERT_EQ(FN(cuCtxSynchronize)(), CUDA_SUCCESS);

    const auto b = opsOn(blockingId), l = opsOn(legacyId), nb = opsOn(nonBlockingId), pt = opsOn(perThreadId);
    ASSERT_EQ(b.size(), 3u);
    ASSERT_EQ(l.size(), 1u);
    ASSERT_EQ(nb.size(), 1u);
    ASSERT_EQ(pt.size(), 1u);
    EXPECT_EQ(b[0]["api"], "cuLaunchKernel");
    EXPECT_EQ(pt[0]["api"], "cuLaunchKernel_ptsz");
    EXPECT_EQ(b[0]["name"], "ten_us_kernel");
    EXPECT_EQ(b[0]["end"].get<int64_t>() - b[0]["start"].get<int64_t>(), 10000);
    EXPECT_GE(b[0]["start"].get<int64_t>(), b[0]["submit"].get<int64_t>() + 2000) << "launch latency";
    EXPECT_GE(b[1]["start"].get<int64_t>(), b[0]["end"].get<int64_t>()) << "in-order stream";
    EXPECT_GE(l[0]["start"].get<int64_t>(), b[1]["end"].get<int64_t>()) << "legacy waits for blocking streams";
    EXPECT_EQ(nb[0]["start"].get<int64_t>(), nb[0]["submit"].get<int64_t>() + 2000) << "non-blocking stream is free";
    EXPECT_GE(b[2]["start"].get<int64_t>(), l[0]["end"].get<int64_t>()) << "blocking streams wait for legacy";
    EXPECT_GE(pt[0]["start"].get<int64_t>(), l[0]["end"].get<int64_t>());
    EXPECT_EQ(b[0]["graph"], false);
    EXPECT_EQ(b[0]["grid"], json::array({1, 1, 1}));
    EXPECT_EQ(b[0]["block"], json::array({32, 1, 1}));
    EXPECT_EQ(b[0]["pid"], getpid());
}

TEST(Timeline, StreamWaitEventOrdersAcrossStreams)
{
    Fixture fx;
    CUstream a, b;
    CUevent e;
    ASSERT_EQ(FN(cuStreamCreate)(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamCreate)(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventCreate)(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(fx.kernel("slow2ms_kernel"), a), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecord)(e, a), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamWaitEvent)(b, e, 0), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(fx.kernel("ten_us_kernel"), b), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(b), CUDA_SUCCESS);
    const auto opsA = opsOn(fx.streamId(a)), opsB = opsOn(fx.streamId(b));
    ASSERT_EQ(opsA.size(), 1u);
    ASSERT_EQ(opsB.size(), 1u);
    EXPECT_GE(opsB[0]["start"].get<int64_t>(), opsA[0]["end"].get<int64_t>());
}

TEST(Timeline, StreamSynchronizeBlocksUntilTheKernelEnds)
{
    Fixture fx;
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    const int64_t before = nowNs();
    ASSERT_EQ(fx.launch(fx.kernel("slow2ms_kernel"), s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    const int64_t after = nowNs();
    EXPECT_GE(after - before, 2000000);
    const auto ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_GE(after, ops[0]["end"].get<int64_t>());
    const auto waits = waitsFor("cuStreamSynchronize");
    ASSERT_FALSE(waits.empty());
    EXPECT_EQ(waits.back()["reason"], "stream_sync");
    EXPECT_GE(waits.back()["end"].get<int64_t>(), ops[0]["end"].get<int64_t>());
}

TEST(Timeline, EventQueryAndElapsedTime)
{
    Fixture fx;
    CUstream s;
    CUevent e0, e1, untimed;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventCreate)(&e0, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventCreate)(&e1, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventCreate)(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecord)(e0, s), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(fx.kernel("slow50ms_kernel"), s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecord)(e1, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecord)(untimed, s), CUDA_SUCCESS);
    float ms = -1;
    EXPECT_EQ(FN(cuEventQuery)(e1), CUDA_ERROR_NOT_READY);
    EXPECT_EQ(FN(cuStreamQuery)(s), CUDA_ERROR_NOT_READY);
    EXPECT_EQ(FN(cuEventElapsedTime_v2)(&ms, e0, e1), CUDA_ERROR_NOT_READY);
    ASSERT_EQ(FN(cuEventSynchronize)(e1), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuEventQuery)(e1), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuStreamQuery)(s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventElapsedTime_v2)(&ms, e0, e1), CUDA_SUCCESS);
    EXPECT_GE(ms, 50.0f);
    EXPECT_EQ(FN(cuEventElapsedTime_v2)(&ms, e0, untimed), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(waitsFor("cuEventSynchronize").back()["reason"], "event_sync");
}

TEST(Timeline, LaunchSpendsItsHostCost)
{
    Fixture fx;
    CUfunction k = fx.kernel("ten_us_kernel");
    const int64_t before = nowNs();
    for (int i = 0; i < 10; ++i) ASSERT_EQ(fx.launch(k, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT_GE(nowNs() - before, 10 * 3000);
    ASSERT_EQ(FN(cuCtxSynchronize)(), CUDA_SUCCESS);
}

// ---------------------------------------------------------------- memory
TEST(Memory, PinnedAndPageableCopiesInTheTrace)
{
    Fixture fx;
    constexpr size_t kBytes = 8 << 20;
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr d, d2;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, kBytes), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d2, kBytes), CUDA_SUCCESS);
    void* pinned;
    ASSERT_EQ(FN(cuMemAllocHost_v2)(&pinned, kBytes), CUDA_SUCCESS);
    std::vector<char> pageable(kBytes, 7), registered(kBytes, 9);
    ASSERT_EQ(FN(cuMemHostRegister_v2)(registered.data(), kBytes, 0), CUDA_SUCCESS);

    ASSERT_EQ(FN(cuMemcpyHtoDAsync_v2)(d, pageable.data(), kBytes, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyDtoHAsync_v2)(pinned, d, kBytes, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyAsync)(d2, reinterpret_cast<CUdeviceptr>(registered.data()), kBytes, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyAsync)(d, d2, kBytes, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemsetD32Async)(d, 0x01010101, kBytes / 4, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyDtoH_v2)(pageable.data(), d, kBytes), CUDA_SUCCESS);  // legacy stream
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    EXPECT_EQ(static_cast<char*>(pinned)[100], 7) << "copies move real bytes";

    const auto ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 5u);
    auto duration = [](const json& op) { return op["end"].get<int64_t>() - op["start"].get<int64_t>(); };
    EXPECT_EQ(ops[0]["dir"], "HtoD");
    EXPECT_EQ(ops[0]["host_mem"], "pageable");
    EXPECT_EQ(ops[0]["sync"], true) << "an async copy from pageable memory is synchronous";
    EXPECT_EQ(ops[0]["api"], "cuMemcpyHtoDAsync_v2");
    EXPECT_EQ(duration(ops[0]), 1000 + static_cast<int64_t>(kBytes / 8));
    EXPECT_EQ(ops[1]["dir"], "DtoH");
    EXPECT_EQ(ops[1]["host_mem"], "pinned");
    EXPECT_EQ(ops[1]["sync"], false);
    EXPECT_EQ(duration(ops[1]), 1000 + static_cast<int64_t>(kBytes / 25));
    EXPECT_EQ(ops[2]["dir"], "HtoD") << "direction from the pointers (unified addressing)";
    EXPECT_EQ(ops[2]["host_mem"], "pinned") << "registered memory is pinned";
    EXPECT_EQ(ops[3]["dir"], "DtoD");
    EXPECT_EQ(ops[3]["host_mem"], "device");
    EXPECT_EQ(duration(ops[3]), 1000 + static_cast<int64_t>(kBytes / 1000));
    EXPECT_EQ(ops[4]["op"], "memset");
    EXPECT_EQ(ops[4]["bytes"], kBytes);
    EXPECT_EQ(duration(ops[4]), 1000 + static_cast<int64_t>(kBytes / 1500));
    EXPECT_EQ(waitsFor("cuMemcpyHtoDAsync_v2").back()["reason"], "pageable_copy");
    const auto syncCopy = opsOn(fx.streamId(nullptr)).back();
    EXPECT_EQ(syncCopy["api"], "cuMemcpyDtoH_v2");
    EXPECT_EQ(syncCopy["sync"], true);
    EXPECT_EQ(waitsFor("cuMemcpyDtoH_v2").back()["reason"], "sync_copy");

    ASSERT_EQ(FN(cuMemHostUnregister)(registered.data()), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFreeHost)(pinned), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFree_v2)(d), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFree_v2)(d2), CUDA_SUCCESS);
    EXPECT_EQ(waitsFor("cuMemFree_v2").back()["reason"], "free_sync");
    EXPECT_EQ(waitsFor("cuMemHostUnregister").back()["reason"], "register_sync");
}

// Work queued behind a wait on the host's store is placed when some thread next asks about the
// stream (a profiler's thread polling an event, say): the trace still names the thread that submitted it.
TEST(Memory, DeferredWorkKeepsTheSubmittingThread)
{
    Fixture fx;
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr d;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 4096), CUDA_SUCCESS);
    void* host = nullptr;
    ASSERT_EQ(FN(cuMemAllocHost_v2)(&host, 8), CUDA_SUCCESS);
    *static_cast<volatile uint32_t*>(host) = 0;
    ASSERT_EQ(FN(cuStreamWaitValue32_v2)(s, reinterpret_cast<CUdeviceptr>(host), 1, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemsetD8Async)(d, 3, 4096, s), CUDA_SUCCESS);
    EXPECT_TRUE(opsOn(fx.streamId(s)).empty()) << "the memset waits for the store";
    *static_cast<volatile uint32_t*>(host) = 1;
    pid_t other = 0;
    std::thread([&] {
        FN(cuCtxSetCurrent)(fx.ctx);
        other = static_cast<pid_t>(syscall(SYS_gettid));
        EXPECT_EQ(FN(cuStreamQuery)(s), CUDA_SUCCESS) << "the query sees the store and places the memset";
    }).join();
    const auto ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0]["tid"].get<pid_t>(), static_cast<pid_t>(syscall(SYS_gettid)));
    EXPECT_NE(ops[0]["tid"].get<pid_t>(), other);
    ASSERT_EQ(FN(cuMemFreeHost)(host), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFree_v2)(d), CUDA_SUCCESS);
}

TEST(Memory, PointerAttributesAnswerTruthfully)
{
    Fixture fx;
    CUdeviceptr d, managed;
    void* pinned;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 4096), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemAllocManaged)(&managed, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemHostAlloc)(&pinned, 4096, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
    auto get = FN(cuPointerGetAttribute);

    unsigned type = 0;
    ASSERT_EQ(get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);
    CUdeviceptr start = 0;
    size_t size = 0;
    ASSERT_EQ(get(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100), CUDA_SUCCESS);
    ASSERT_EQ(get(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100), CUDA_SUCCESS);
    EXPECT_EQ(start, d);
    EXPECT_EQ(size, 4096u);
    CUcontext ctx = nullptr;
    ASSERT_EQ(get(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, d), CUDA_SUCCESS);
    EXPECT_EQ(ctx, fx.ctx);
    int ordinal = -1, isManaged = -1;
    ASSERT_EQ(get(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d), CUDA_SUCCESS);
    EXPECT_EQ(ordinal, 0);
    ASSERT_EQ(get(&isManaged, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed), CUDA_SUCCESS);
    EXPECT_EQ(isManaged, 1);
    ASSERT_EQ(get(&isManaged, CU_POINTER_ATTRIBUTE_IS_MANAGED, d), CUDA_SUCCESS);
    EXPECT_EQ(isManaged, 0);

    ASSERT_EQ(get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pinned)), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_MEMORYTYPE_HOST);
    void* host = nullptr;
    ASSERT_EQ(get(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, reinterpret_cast<CUdeviceptr>(pinned)), CUDA_SUCCESS);
    EXPECT_EQ(host, pinned);
    CUdeviceptr devPtr = 0;
    ASSERT_EQ(get(&devPtr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, reinterpret_cast<CUdeviceptr>(pinned)), CUDA_SUCCESS);
    EXPECT_EQ(devPtr, reinterpret_cast<CUdeviceptr>(pinned));

    std::vector<char> plain(64);
    EXPECT_EQ(get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(plain.data())),
              CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
    void* data[] = {&type};
    type = 99;
    EXPECT_EQ(FN(cuPointerGetAttributes)(1, attrs, data, reinterpret_cast<CUdeviceptr>(plain.data())), CUDA_SUCCESS);
    EXPECT_EQ(type, 0u);
}

TEST(Memory, VirtualMemoryMapsRealBytes)
{
    Fixture fx;
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    ASSERT_EQ(FN(cuMemGetAllocationGranularity)(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    ASSERT_EQ(FN(cuMemAddressReserve)(&va, 2 * gran, 0, 0, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemCreate)(&h, gran, &prop, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemMap)(va, gran, 0, h, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemMap)(va + gran, gran, 0, h, 0), CUDA_SUCCESS);
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASSERT_EQ(FN(cuMemSetAccess)(va, 2 * gran, &access, 1), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemsetD8_v2)(va, 0x5a, 16), CUDA_SUCCESS);
    EXPECT_EQ(reinterpret_cast<unsigned char*>(va + gran)[3], 0x5a) << "both mappings share one allocation";
    unsigned type = 0;
    ASSERT_EQ(FN(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);
    ASSERT_EQ(FN(cuMemUnmap)(va, gran), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemUnmap)(va + gran, gran), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemRelease)(h), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemAddressFree)(va, 2 * gran), CUDA_SUCCESS);
}

// ---------------------------------------------------------------- faults
TEST(Faults, NthCallAndEveryCallFail)
{
    Fixture fx;
    CUdeviceptr p;
    size_t pitch;
    EXPECT_EQ(FN(cuMemAllocPitch_v2)(&p, &pitch, 64, 4, 4), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemAllocPitch_v2)(&p, &pitch, 64, 4, 4), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(FN(cuMemAllocPitch_v2)(&p, &pitch, 64, 4, 4), CUDA_SUCCESS);
    CUfunction k = fx.kernel("ten_us_kernel");
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuLaunchCooperativeKernel)(k, 1, 1, 1, 1, 1, 1, 0, s, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_EQ(FN(cuLaunchCooperativeKernel_ptsz)(k, 1, 1, 1, 1, 1, 1, 0, s, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS)
        << "the base name matches the _ptsz variant";
    EXPECT_EQ(fx.launch(k, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    EXPECT_EQ(opsOn(fx.streamId(s)).size(), 1u) << "a failed call does no work";
}

// ---------------------------------------------------------------- graphs
TEST(Graphs, CaptureRecordsAndLaunchReplays)
{
    Fixture fx;
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr d;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 1024), CUDA_SUCCESS);
    std::vector<unsigned char> host(1024, 0);
    ASSERT_EQ(FN(cuMemHostRegister_v2)(host.data(), host.size(), 0), CUDA_SUCCESS);

    ASSERT_EQ(FN(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CUstreamCaptureStatus st;
    ASSERT_EQ(FN(cuStreamIsCapturing)(s, &st), CUDA_SUCCESS);
    EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ASSERT_EQ(FN(cuMemsetD8Async)(d, 0x42, 1024, s), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(fx.kernel("ten_us_kernel"), s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyDtoHAsync_v2)(host.data(), d, 1024, s), CUDA_SUCCESS);
    CUgraph graph;
    ASSERT_EQ(FN(cuStreamEndCapture)(s, &graph), CUDA_SUCCESS);
    EXPECT_EQ(opsOn(fx.streamId(s)).size(), 0u) << "captured work is not executed";
    EXPECT_EQ(host[0], 0);
    size_t nodes = 0;
    ASSERT_EQ(FN(cuGraphGetNodes)(graph, nullptr, &nodes), CUDA_SUCCESS);
    EXPECT_EQ(nodes, 3u);

    CUgraphExec exec;
    ASSERT_EQ(FN(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphLaunch)(exec, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphLaunch_ptsz)(exec, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    EXPECT_EQ(host[1000], 0x42) << "replay moves the bytes";
    const auto ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 6u);
    for (const json& op : ops) EXPECT_EQ(op["graph"], true);
    EXPECT_EQ(ops[0]["op"], "memset");
    EXPECT_EQ(ops[1]["op"], "kernel");
    EXPECT_EQ(ops[2]["op"], "memcpy");
    EXPECT_EQ(ops[3]["api"], "cuGraphLaunch_ptsz");
    EXPECT_GE(ops[3]["start"].get<int64_t>(), ops[2]["end"].get<int64_t>());
    ASSERT_EQ(FN(cuGraphExecDestroy)(exec), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphDestroy)(graph), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemHostUnregister)(host.data()), CUDA_SUCCESS);
}

TEST(Graphs, NodesAddedOneByOneRunAtEachLaunch)
{
    Fixture fx;
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr d;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 1024), CUDA_SUCCESS);
    std::vector<unsigned char> host(1024, 0);
    using AddKernel = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_KERNEL_NODE_PARAMS*);
    using SetExecKernel = CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
    using Update = CUresult (*)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
    // As cudart asks for them: by base name and version.
    auto addKernel = reinterpret_cast<AddKernel>(proc("cuGraphAddKernelNode", 12000));
    auto setExecKernel = reinterpret_cast<SetExecKernel>(proc("cuGraphExecKernelNodeSetParams", 12000));
    auto update = reinterpret_cast<Update>(proc("cuGraphExecUpdate", 12000));
    ASSERT_TRUE(addKernel && setExecKernel && update);

    CUgraph child, graph;
    ASSERT_EQ(FN(cuGraphCreate)(&child, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
    CUDA_KERNEL_NODE_PARAMS kp{};
    kp.func = fx.kernel("ten_us_kernel");
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 32;
    kp.blockDimY = kp.blockDimZ = 1;
    CUgraphNode childKernel, memset, kernel, join, childNode, copy;
    ASSERT_EQ(addKernel(&childKernel, child, nullptr, 0, &kp), CUDA_SUCCESS);
    CUDA_MEMSET_NODE_PARAMS mp{};
    mp.dst = d;
    mp.value = 0x42;
    mp.elementSize = 1;
    mp.width = 1024;
    mp.height = 1;
    ASSERT_EQ(FN(cuGraphAddMemsetNode)(&memset, graph, nullptr, 0, &mp, fx.ctx), CUDA_SUCCESS);
    ASSERT_EQ(addKernel(&kernel, graph, &memset, 1, &kp), CUDA_SUCCESS);
    EXPECT_EQ(addKernel(&join, graph, &childKernel, 1, &kp), CUDA_ERROR_INVALID_VALUE) << "a dependency in another graph";
    ASSERT_EQ(FN(cuGraphAddEmptyNode)(&join, graph, &kernel, 1), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphAddChildGraphNode)(&childNode, graph, &join, 1, child), CUDA_SUCCESS);
    CUDA_MEMCPY3D cp{};
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.srcDevice = d;
    cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    cp.dstHost = host.data();
    cp.WidthInBytes = 1024;
    cp.Height = cp.Depth = 1;
    ASSERT_EQ(FN(cuGraphAddMemcpyNode)(&copy, graph, &childNode, 1, &cp, fx.ctx), CUDA_SUCCESS);
    size_t nodes = 0;
    ASSERT_EQ(FN(cuGraphGetNodes)(graph, nullptr, &nodes), CUDA_SUCCESS);
    EXPECT_EQ(nodes, 5u);
    CUgraphNodeType type;
    ASSERT_EQ(FN(cuGraphNodeGetType)(join, &type), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_EMPTY);
    ASSERT_EQ(FN(cuGraphNodeGetType)(childNode, &type), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_GRAPH);

    CUgraphExec exec;
    ASSERT_EQ(FN(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphLaunch)(exec, s), CUDA_SUCCESS);
    kp.func = fx.kernel("other_kernel");
    ASSERT_EQ(setExecKernel(exec, kernel, &kp), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphLaunch)(exec, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    EXPECT_EQ(host[1000], 0x42) << "the memset and the copy ran";
    auto ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 8u) << "memset, kernel, the child's kernel, copy: twice; the empty node runs nothing";
    const char* kinds[] = {"memset", "kernel", "kernel", "memcpy"};
    for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i]["op"], kinds[i % 4]) << i;
        EXPECT_EQ(ops[i]["graph"], true);
    }
    EXPECT_EQ(ops[1]["name"], "ten_us_kernel");
    EXPECT_EQ(ops[5]["name"], "other_kernel") << "the exec's node was given another kernel";
    EXPECT_EQ(ops[6]["name"], "ten_us_kernel") << "the child's kernel is its own";

    // An update from a graph of other node kinds is refused; from one of the same kinds it is taken.
    CUgraphExecUpdateResultInfo info{};
    EXPECT_EQ(update(exec, child, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    EXPECT_EQ(update(exec, graph, &info), CUDA_SUCCESS);
    EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    ASSERT_EQ(FN(cuGraphLaunch)(exec, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 12u);
    EXPECT_EQ(ops[9]["name"], "ten_us_kernel") << "the update brought back the graph's kernel";
    ASSERT_EQ(FN(cuGraphExecDestroy)(exec), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphDestroy)(graph), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphDestroy)(child), CUDA_SUCCESS);
}

// Nodes changed after they were made (copy and memset nodes in the graph and in an exec, the generic API's
// cuGraphAddNode / cuGraph(Exec)NodeSetParams) and a clone that runs the original's nodes.
TEST(Graphs, EditedNodesAndClones)
{
    Fixture fx;
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr d, d2;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 1024), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d2, 1024), CUDA_SUCCESS);
    std::vector<unsigned char> host(1024, 0);
    using AddNode = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, const CUgraphEdgeData*, size_t, CUgraphNodeParams*);
    using SetExecNode = CUresult (*)(CUgraphExec, CUgraphNode, CUgraphNodeParams*);
    auto addNode = reinterpret_cast<AddNode>(proc("cuGraphAddNode", 12030));
    auto setExecNode = reinterpret_cast<SetExecNode>(proc("cuGraphExecNodeSetParams", 12020));
    ASSERT_TRUE(addNode && setExecNode);

    CUgraph graph;
    ASSERT_EQ(FN(cuGraphCreate)(&graph, 0), CUDA_SUCCESS);
    CUgraphNodeParams kp{};
    kp.type = CU_GRAPH_NODE_TYPE_KERNEL;
    kp.kernel.func = fx.kernel("ten_us_kernel");
    kp.kernel.gridDimX = kp.kernel.gridDimY = kp.kernel.gridDimZ = 1;
    kp.kernel.blockDimX = 32;
    kp.kernel.blockDimY = kp.kernel.blockDimZ = 1;
    CUgraphNodeParams cp{};
    cp.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    cp.memcpy.copyParams.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.memcpy.copyParams.srcDevice = d;
    cp.memcpy.copyParams.dstMemoryType = CU_MEMORYTYPE_HOST;
    cp.memcpy.copyParams.dstHost = host.data();
    cp.memcpy.copyParams.WidthInBytes = 1024;
    cp.memcpy.copyParams.Height = cp.memcpy.copyParams.Depth = 1;
    CUgraphNode kernel, copy, memset, event;
    ASSERT_EQ(addNode(&kernel, graph, nullptr, nullptr, 0, &kp), CUDA_SUCCESS);
    ASSERT_EQ(addNode(&copy, graph, &kernel, nullptr, 1, &cp), CUDA_SUCCESS);
    CUDA_MEMSET_NODE_PARAMS mp{};
    mp.dst = d;
    mp.elementSize = 1;
    mp.width = 1024;
    mp.height = 1;
    ASSERT_EQ(FN(cuGraphAddMemsetNode)(&memset, graph, nullptr, 0, &mp, fx.ctx), CUDA_SUCCESS);
    CUgraphNodeParams ep{};
    ep.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    EXPECT_EQ(addNode(&event, graph, nullptr, nullptr, 0, &ep), CUDA_ERROR_NOT_SUPPORTED) << "a kind the simulator cannot run";
    ep.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    EXPECT_EQ(addNode(&event, graph, nullptr, nullptr, 0, &ep), CUDA_ERROR_INVALID_VALUE) << "an event node needs its event";
    CUgraphNodeType type;
    ASSERT_EQ(FN(cuGraphNodeGetType)(copy, &type), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMCPY);

    // In the graph: the memset halved; then a clone, which keeps it; then the graph's copy made DtoD.
    mp.width = 512;
    ASSERT_EQ(FN(cuGraphMemsetNodeSetParams)(memset, &mp), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuGraphMemsetNodeSetParams)(kernel, &mp), CUDA_ERROR_INVALID_VALUE) << "not a memset node";
    CUgraph clone;
    ASSERT_EQ(FN(cuGraphClone)(&clone, graph), CUDA_SUCCESS);
    CUDA_MEMCPY3D dtod = cp.memcpy.copyParams;
    dtod.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    dtod.dstDevice = d2;
    dtod.WidthInBytes = 256;
    ASSERT_EQ(FN(cuGraphMemcpyNodeSetParams)(copy, &dtod), CUDA_SUCCESS);
    CUgraphNode cloneKernel;
    ASSERT_EQ(FN(cuGraphNodeFindInClone)(&cloneKernel, kernel, clone), CUDA_SUCCESS);
    EXPECT_NE(cloneKernel, kernel);
    EXPECT_EQ(FN(cuGraphNodeFindInClone)(&cloneKernel, kernel, graph), CUDA_ERROR_INVALID_VALUE) << "not a clone of it";

    CUgraphExec exec, cloneExec;
    ASSERT_EQ(FN(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphInstantiateWithFlags)(&cloneExec, clone, 0), CUDA_SUCCESS);
    // In the exec: a copy may change its size, not its direction.
    CUDA_MEMCPY3D smaller = dtod;
    smaller.WidthInBytes = 128;
    EXPECT_EQ(FN(cuGraphExecMemcpyNodeSetParams)(exec, copy, &cp.memcpy.copyParams, fx.ctx), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(FN(cuGraphExecMemcpyNodeSetParams)(exec, copy, &smaller, fx.ctx), CUDA_SUCCESS);
    mp.width = 64;
    ASSERT_EQ(FN(cuGraphExecMemsetNodeSetParams)(exec, memset, &mp, fx.ctx), CUDA_SUCCESS);
    kp.kernel.func = fx.kernel("other_kernel");
    ASSERT_EQ(setExecNode(exec, kernel, &kp), CUDA_SUCCESS);
    EXPECT_EQ(setExecNode(cloneExec, kernel, &kp), CUDA_ERROR_INVALID_VALUE) << "the original's node is not the clone's";
    ASSERT_EQ(FN(cuGraphLaunch)(exec, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphLaunch)(cloneExec, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    auto ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 6u);
    EXPECT_EQ(ops[0]["name"], "other_kernel");
    EXPECT_EQ(ops[1]["dir"], "DtoD");
    EXPECT_EQ(ops[1]["bytes"], 128);
    EXPECT_EQ(ops[2]["bytes"], 64);
    EXPECT_EQ(ops[3]["name"], "ten_us_kernel") << "the clone runs the original's nodes as they were";
    EXPECT_EQ(ops[4]["dir"], "DtoH");
    EXPECT_EQ(ops[4]["bytes"], 1024);
    EXPECT_EQ(ops[5]["bytes"], 512);
    ASSERT_EQ(FN(cuGraphExecDestroy)(cloneExec), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphExecDestroy)(exec), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphDestroy)(clone), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphDestroy)(graph), CUDA_SUCCESS);
}

// CUDA: in a capture, an event record with CU_EVENT_RECORD_EXTERNAL becomes an event record node and a
// wait with CU_EVENT_WAIT_EXTERNAL an event wait node; plain ones are dependencies (no node). Each launch
// writes a graph_event record per such node (no op: no device work); a replayed record records the event.
TEST(Graphs, ExternalEventRecordsAndWaitsBecomeEventNodes)
{
    Fixture fx;
    CUstream s, side;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamCreate)(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUevent fork, marker, gate;
    for (CUevent* e : {&fork, &marker, &gate}) ASSERT_EQ(FN(cuEventCreate)(e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecord)(gate, s), CUDA_SUCCESS);
    CUfunction k = fx.kernel("ten_us_kernel");

    ASSERT_EQ(FN(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(k, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecord)(fork, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamWaitEvent)(side, fork, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecordWithFlags)(marker, s, CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamWaitEvent)(s, gate, CU_EVENT_WAIT_EXTERNAL), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuEventRecordWithFlags)(marker, s, 0x80), CUDA_ERROR_INVALID_VALUE);
    CUgraph graph;
    ASSERT_EQ(FN(cuStreamEndCapture)(s, &graph), CUDA_SUCCESS);
    size_t n = 0;
    ASSERT_EQ(FN(cuGraphGetNodes)(graph, nullptr, &n), CUDA_SUCCESS);
    ASSERT_EQ(n, 3u) << "the kernel, the external record, the external wait; the fork is a dependency";
    std::vector<CUgraphNode> nodes(n);
    ASSERT_EQ(FN(cuGraphGetNodes)(graph, nodes.data(), &n), CUDA_SUCCESS);
    CUgraphNodeType type;
    ASSERT_EQ(FN(cuGraphNodeGetType)(nodes[1], &type), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    ASSERT_EQ(FN(cuGraphNodeGetType)(nodes[2], &type), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_WAIT_EVENT);

    CUgraphNode added;
    ASSERT_EQ(FN(cuGraphAddEventWaitNode)(&added, graph, &nodes[2], 1, gate), CUDA_SUCCESS);
    CUevent got = nullptr;
    ASSERT_EQ(FN(cuGraphEventRecordNodeGetEvent)(nodes[1], &got), CUDA_SUCCESS);
    EXPECT_EQ(got, marker);
    EXPECT_EQ(FN(cuGraphEventWaitNodeGetEvent)(nodes[1], &got), CUDA_ERROR_INVALID_VALUE) << "not a wait node";
    ASSERT_EQ(FN(cuGraphEventWaitNodeSetEvent)(added, fork), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphEventWaitNodeGetEvent)(added, &got), CUDA_SUCCESS);
    EXPECT_EQ(got, fork);
    ASSERT_EQ(FN(cuGraphEventWaitNodeSetEvent)(added, gate), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuGraphAddEventRecordNode)(&added, graph, nullptr, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
    CUgraphExec exec;
    ASSERT_EQ(FN(cuGraphInstantiateWithFlags)(&exec, graph, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphLaunch)(exec, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuEventQuery)(marker), CUDA_SUCCESS) << "the launch recorded the event";
    EXPECT_EQ(FN(cuGraphExecEventRecordNodeSetEvent)(exec, nodes[1], fork), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuGraphExecEventWaitNodeSetEvent)(exec, nodes[1], fork), CUDA_ERROR_INVALID_VALUE) << "not a wait node";
    const auto ops = opsOn(fx.streamId(s));
    ASSERT_EQ(ops.size(), 1u) << "event nodes run no device work";
    std::vector<std::string> events;
    for (json& r : traceRecords())
        if (r["type"] == "graph_event") {
            events.push_back(r["node"].get<std::string>());
            EXPECT_GE(r["at"].get<int64_t>(), ops[0]["end"].get<int64_t>()) << "after the kernel before it";
        }
    EXPECT_EQ(events, (std::vector<std::string>{"record", "wait", "wait"}));
    ASSERT_EQ(FN(cuGraphExecDestroy)(exec), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGraphDestroy)(graph), CUDA_SUCCESS);
}

TEST(Graphs, SynchronizingACapturingStreamInvalidatesTheCapture)
{
    Fixture fx;
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamBeginCapture)(s), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuStreamSynchronize)(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstreamCaptureStatus st;
    ASSERT_EQ(FN(cuStreamIsCapturing)(s, &st), CUDA_SUCCESS);
    EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph graph = reinterpret_cast<CUgraph>(1);
    EXPECT_EQ(FN(cuStreamEndCapture)(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(FN(cuStreamBeginCapture)(nullptr), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) << "legacy stream";
}

// ---------------------------------------------------------------- devices
TEST(Devices, TwoDevicesWithTheirOwnContexts)
{
    Fixture fx0(0);
    int n = 0;
    ASSERT_EQ(FN(cuDeviceGetCount)(&n), CUDA_SUCCESS);
    ASSERT_EQ(n, 2);
    char name0[64], name1[64], bus0[32], bus1[32];
    ASSERT_EQ(FN(cuDeviceGetName)(name0, sizeof name0, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuDeviceGetName)(name1, sizeof name1, 1), CUDA_SUCCESS);
    EXPECT_STREQ(name0, "gpuspy simulated GPU 0");
    EXPECT_STREQ(name1, "gpuspy simulated GPU 1");
    ASSERT_EQ(FN(cuDeviceGetPCIBusId)(bus0, sizeof bus0, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuDeviceGetPCIBusId)(bus1, sizeof bus1, 1), CUDA_SUCCESS);
    EXPECT_STRNE(bus0, bus1);
    CUdevice byBus = -1;
    ASSERT_EQ(FN(cuDeviceGetByPCIBusId)(&byBus, bus1), CUDA_SUCCESS);
    EXPECT_EQ(byBus, 1);
    CUuuid u0, u1;
    ASSERT_EQ(FN(cuDeviceGetUuid_v2)(&u0, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuDeviceGetUuid_v2)(&u1, 1), CUDA_SUCCESS);
    EXPECT_NE(memcmp(u0.bytes, u1.bytes, 16), 0);

    CUdeviceptr d0;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d0, 4096), CUDA_SUCCESS);
    Fixture fx1(1);
    EXPECT_NE(fx0.ctx, fx1.ctx);
    CUdevice dev = -1;
    ASSERT_EQ(FN(cuCtxGetDevice)(&dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 1);
    CUdeviceptr d1;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d1, 4096), CUDA_SUCCESS);
    int ordinal = -1;
    ASSERT_EQ(FN(cuPointerGetAttribute)(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d1), CUDA_SUCCESS);
    EXPECT_EQ(ordinal, 1);
    ASSERT_EQ(FN(cuMemcpyPeer)(d1, fx1.ctx, d0, fx0.ctx, 4096), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpy)(d0, d1, 4096), CUDA_SUCCESS);
    const auto ops = opsOn(fx1.streamId(nullptr));
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0]["dir"], "PtoP");
    EXPECT_EQ(ops[0]["dev"], 1);
    EXPECT_EQ(ops[1]["dir"], "PtoP") << "unified cuMemcpy between devices";

    CUcontext created = nullptr, popped = nullptr;
    ASSERT_EQ(FN(cuCtxCreate_v4)(&created, nullptr, 0, 1), CUDA_SUCCESS);
    CUcontext cur = nullptr;
    ASSERT_EQ(FN(cuCtxGetCurrent)(&cur), CUDA_SUCCESS);
    EXPECT_EQ(cur, created);
    ASSERT_EQ(FN(cuCtxPopCurrent_v2)(&popped), CUDA_SUCCESS);
    EXPECT_EQ(popped, created);
    ASSERT_EQ(FN(cuCtxGetCurrent)(&cur), CUDA_SUCCESS);
    EXPECT_EQ(cur, fx1.ctx);
    ASSERT_EQ(FN(cuCtxDestroy_v2)(created), CUDA_SUCCESS);
}

// ---------------------------------------------------------------- errors and fork
TEST(Errors, NamesAndStrings)
{
    const char* s = nullptr;
    ASSERT_EQ(FN(cuGetErrorName)(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    EXPECT_STREQ(s, "CUDA_ERROR_OUT_OF_MEMORY");
    ASSERT_EQ(FN(cuGetErrorName)(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, &s), CUDA_SUCCESS);
    EXPECT_STREQ(s, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
    ASSERT_EQ(FN(cuGetErrorString)(CUDA_ERROR_NOT_READY, &s), CUDA_SUCCESS);
    EXPECT_NE(strstr(s, "have not completed yet"), nullptr) << s;
    EXPECT_EQ(FN(cuGetErrorName)(static_cast<CUresult>(123456), &s), CUDA_ERROR_INVALID_VALUE);
}

// cuProfilerStart/Stop: the ground truth of a capture window, one trace line per call, found through
// cuGetProcAddress as cudart looks them up.
TEST(Profiler, StartAndStopInTheTrace)
{
    using Flip = CUresult (*)();
    auto start = reinterpret_cast<Flip>(proc("cuProfilerStart", 13000));
    auto stop = reinterpret_cast<Flip>(proc("cuProfilerStop", 13000));
    ASSERT_NE(start, nullptr);
    ASSERT_NE(stop, nullptr);
    ASSERT_EQ(reinterpret_cast<void*>(start), sym("cuProfilerStart"));
    EXPECT_EQ(FN(cuInit)(0), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuCtxSetCurrent)(nullptr), CUDA_SUCCESS);
    EXPECT_EQ(start(), CUDA_ERROR_INVALID_CONTEXT);  // no context current: as the real driver
    Fixture f;
    const int64_t before = nowNs();
    EXPECT_EQ(start(), CUDA_SUCCESS);
    EXPECT_EQ(start(), CUDA_SUCCESS);  // already on: succeeds, changes nothing
    EXPECT_EQ(stop(), CUDA_SUCCESS);
    std::vector<json> lines;
    for (json& r : traceRecords())
        if (r["type"] == "profiler") lines.push_back(r);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0]["what"], "start");
    EXPECT_EQ(lines[0]["changed"], true);
    EXPECT_EQ(lines[1]["changed"], false);
    EXPECT_EQ(lines[2]["what"], "stop");
    EXPECT_EQ(lines[2]["changed"], true);
    EXPECT_GE(lines[0]["t"].get<int64_t>(), before);
    EXPECT_EQ(lines[0]["pid"], getpid());
}

TEST(Errors, ForkedChildTracesWithItsOwnPid)
{
    Fixture fx;
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        CUdeviceptr d;
        const bool ok = FN(cuMemAlloc_v2)(&d, 64) == CUDA_SUCCESS && FN(cuMemsetD8_v2)(d, 1, 64) == CUDA_SUCCESS;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    // '%p' in SIMCUDA_TRACE gives the child its own file.
    const std::string childTrace = std::string(SIMCUDA_TEST_DIR) + "/trace_" + std::to_string(child) + ".jsonl";
    std::ifstream in(childTrace);
    std::string line;
    ASSERT_TRUE(std::getline(in, line)) << childTrace;
    EXPECT_EQ(json::parse(line)["pid"], child);
    unlink(childTrace.c_str());
}

// ---------------------------------------------------------------- the integrity check covers every device
// RFC 1319 MD2 and RFC 2104 HMAC, written here independently of the driver, over the record cudart recomputes:
// driver version, runtime version, pid, thread, the two tables, the check function, the time, then for each
// device in ordinal order its UUID and PCI domain, bus and device numbers.
std::vector<unsigned char> md2(std::vector<unsigned char> msg)
{
    static const unsigned char S[256] = {
        41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19, 98, 167, 5, 243, 192, 199, 115, 140,
        152, 147, 43, 217, 188, 76, 130, 202, 30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229,
        18, 190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122, 169, 104, 121, 145, 21,
        178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33, 128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191,
        247, 151, 3, 255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198, 79, 184, 56, 210,
        150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241, 69, 157, 112, 89, 100, 113, 135, 32, 134, 91,
        207, 101, 230, 45, 168, 2, 27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15, 85, 71,
        163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38, 44, 83, 13, 110, 133, 40, 132, 9, 211,
        223, 205, 244, 65, 129, 77, 82, 106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74,
        120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57, 242, 239, 183, 14, 102, 88, 208,
        228, 166, 119, 114, 248, 235, 117, 75, 10, 49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17,
        131, 20};
    // Step 1: pad to a multiple of 16 with n bytes of value n. Step 2: append the checksum of the padded message.
    const size_t pad = 16 - msg.size() % 16;
    msg.insert(msg.end(), pad, static_cast<unsigned char>(pad));
    unsigned char checksum[16] = {}, l = 0;
    for (size_t i = 0; i < msg.size(); i += 16)
        for (int j = 0; j < 16; ++j) l = checksum[j] ^= S[msg[i + j] ^ l];
    msg.insert(msg.end(), checksum, checksum + 16);
    // Step 3: the 48-byte state over every 16-byte block.
    unsigned char x[48] = {};
    for (size_t i = 0; i < msg.size(); i += 16) {
        for (int j = 0; j < 16; ++j) {
            x[16 + j] = msg[i + j];
            x[32 + j] = static_cast<unsigned char>(x[16 + j] ^ x[j]);
        }
        unsigned t = 0;
        for (unsigned round = 0; round < 18; ++round) {
            for (unsigned char& b : x) t = b ^= S[t];
            t = (t + round) % 256;
        }
    }
    return std::vector<unsigned char>(x, x + 16);
}

std::vector<unsigned char> hmacMd2(const unsigned char key[16], const std::vector<unsigned char>& msg)
{
    std::vector<unsigned char> inner, outer;
    for (int i = 0; i < 16; ++i) inner.push_back(key[i] ^ 0x36);
    inner.insert(inner.end(), msg.begin(), msg.end());
    for (int i = 0; i < 16; ++i) outer.push_back(key[i] ^ 0x5c);
    const std::vector<unsigned char> innerDigest = md2(inner);
    outer.insert(outer.end(), innerDigest.begin(), innerDigest.end());
    return md2(outer);
}

template <class T>
void append(std::vector<unsigned char>& v, const T& x)
{
    const auto* p = reinterpret_cast<const unsigned char*>(&x);
    v.insert(v.end(), p, p + sizeof x);
}

TEST(Devices, IntegrityHashCoversEveryDevice)
{
    Fixture fx;
    const CUuuid cudartId = {{0x6b, (char)0xd5, (char)0xfb, 0x6c, 0x5b, (char)0xf4, (char)0xe7, 0x4a, (char)0x89,
                              (char)0x87, (char)0xd9, 0x39, 0x12, (char)0xfd, (char)0x9d, (char)0xf9}};
    const CUuuid integrityId = {{(char)0xd4, 0x08, 0x20, 0x55, (char)0xbd, (char)0xe6, 0x70, 0x4b, (char)0x8d, 0x34,
                                 (char)0xba, 0x12, 0x3c, 0x66, (char)0xe1, (char)0xf2}};
    const void* cudartTable = nullptr;
    const void* integrityTable = nullptr;
    ASSERT_EQ(FN(cuGetExportTable)(&cudartTable, &cudartId), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGetExportTable)(&integrityTable, &integrityId), CUDA_SUCCESS);
    const void* check = static_cast<const void* const*>(integrityTable)[1];
    using CheckFn = CUresult (*)(unsigned, uint64_t, unsigned char*);
    const unsigned version = 13002;
    const uint64_t seconds = 1764500000;
    unsigned char got[16];
    ASSERT_EQ(reinterpret_cast<CheckFn>(const_cast<void*>(check))(version, seconds, got), CUDA_SUCCESS);

    std::vector<unsigned char> msg;
    append(msg, static_cast<uint32_t>(13000));
    append(msg, static_cast<uint32_t>(version));
    append(msg, static_cast<uint32_t>(getpid()));
    append(msg, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(reinterpret_cast<void*>(pthread_self()))));
    append(msg, cudartTable);
    append(msg, integrityTable);
    append(msg, check);
    append(msg, seconds);
    int count = 0;
    ASSERT_EQ(FN(cuDeviceGetCount)(&count), CUDA_SUCCESS);
    ASSERT_EQ(count, 2) << "the Environment asks for two devices";
    for (int d = 0; d < count; ++d) {
        CUuuid u;
        ASSERT_EQ(FN(cuDeviceGetUuid_v2)(&u, d), CUDA_SUCCESS);
        msg.insert(msg.end(), u.bytes, u.bytes + 16);
        for (CUdevice_attribute a : {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                                     CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID}) {
            int v = -1;
            ASSERT_EQ(FN(cuDeviceGetAttribute)(&v, a, d), CUDA_SUCCESS);
            append(msg, static_cast<int32_t>(v));
        }
    }
    const unsigned char key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                   0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
    const std::vector<unsigned char> want = hmacMd2(key, msg);
    EXPECT_EQ(std::vector<unsigned char>(got, got + 16), want) << "HMAC-MD2 over the record and both devices";
}

// ---------------------------------------------------------------- bad handles and addresses are errors, not crashes
const CUstream kWildStream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x10));  // unmapped
const CUevent kWildEvent = reinterpret_cast<CUevent>(static_cast<uintptr_t>(0x20));

TEST(Handles, InvalidAndDestroyedStreamsAndEvents)
{
    Fixture fx;
    CUfunction k = fx.kernel("_Z4axpyfPKfPfi");
    unsigned long long id = 0;
    CUcontext c = nullptr;
    int junk[16] = {};  // mapped memory that is not a stream
    const CUstream foreign = reinterpret_cast<CUstream>(junk);
    for (CUstream bad : {kWildStream, foreign}) {
        EXPECT_EQ(FN(cuStreamSynchronize)(bad), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuStreamQuery)(bad), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuStreamGetId)(bad, &id), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuStreamGetCtx)(bad, &c), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuStreamDestroy_v2)(bad), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(fx.launch(k, bad), CUDA_ERROR_INVALID_HANDLE);
    }
    CUstream s = nullptr;
    ASSERT_EQ(FN(cuStreamCreate)(&s, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamDestroy_v2)(s), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuStreamDestroy_v2)(s), CUDA_ERROR_INVALID_HANDLE) << "destroyed twice";
    EXPECT_EQ(FN(cuStreamGetId)(s, &id), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(FN(cuStreamSynchronize)(s), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(fx.launch(k, s), CUDA_ERROR_INVALID_HANDLE);

    CUevent e = nullptr, live = nullptr;
    ASSERT_EQ(FN(cuEventCreate)(&live, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventRecord)(live, nullptr), CUDA_SUCCESS);
    float ms = 0;
    for (CUevent bad : {kWildEvent, reinterpret_cast<CUevent>(junk)}) {
        EXPECT_EQ(FN(cuEventRecord)(bad, nullptr), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuEventQuery)(bad), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuEventSynchronize)(bad), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuEventElapsedTime)(&ms, live, bad), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuStreamWaitEvent)(nullptr, bad, 0), CUDA_ERROR_INVALID_HANDLE);
        EXPECT_EQ(FN(cuEventDestroy_v2)(bad), CUDA_ERROR_INVALID_HANDLE);
    }
    ASSERT_EQ(FN(cuEventCreate)(&e, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventDestroy_v2)(e), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuEventRecord)(e, nullptr), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(FN(cuEventDestroy_v2)(e), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(FN(cuStreamWaitEvent)(kWildStream, live, 0), CUDA_ERROR_INVALID_HANDLE);

    // Other handle kinds: a wild pointer is an error too.
    CUfunction f = nullptr;
    EXPECT_EQ(FN(cuModuleGetFunction)(&f, reinterpret_cast<CUmodule>(junk), "k"), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(fx.launch(reinterpret_cast<CUfunction>(static_cast<uintptr_t>(0x30)), nullptr), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(FN(cuGraphLaunch)(reinterpret_cast<CUgraphExec>(static_cast<uintptr_t>(0x40)), nullptr),
              CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuCtxSetCurrent)(reinterpret_cast<CUcontext>(static_cast<uintptr_t>(0x50))), CUDA_ERROR_INVALID_CONTEXT);
}

TEST(Handles, DestroyedContext)
{
    Fixture fx;
    CUcontext ctx = nullptr;
    ASSERT_EQ(FN(cuCtxCreate_v4)(&ctx, nullptr, 0, 0), CUDA_SUCCESS);
    CUstream s = nullptr;
    CUevent e = nullptr;
    ASSERT_EQ(FN(cuStreamCreate)(&s, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventCreate)(&e, 0), CUDA_SUCCESS);
    // Another thread keeps the context current while this one destroys it.
    std::atomic<int> step{0};
    CUresult alloc = CUDA_SUCCESS, device = CUDA_SUCCESS, sync = CUDA_SUCCESS, legacy = CUDA_SUCCESS;
    std::thread other([&] {
        FN(cuCtxSetCurrent)(ctx);
        step = 1;
        while (step != 2) std::this_thread::yield();
        CUdeviceptr d;
        CUdevice dev;
        alloc = FN(cuMemAlloc_v2)(&d, 64);
        device = FN(cuCtxGetDevice)(&dev);
        sync = FN(cuCtxSynchronize)();
        legacy = FN(cuStreamSynchronize)(nullptr);
    });
    while (step != 1) std::this_thread::yield();
    ASSERT_EQ(FN(cuCtxDestroy_v2)(ctx), CUDA_SUCCESS);
    step = 2;
    other.join();
    EXPECT_EQ(alloc, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    EXPECT_EQ(device, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    EXPECT_EQ(sync, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    EXPECT_EQ(legacy, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    ASSERT_EQ(FN(cuCtxSetCurrent)(fx.ctx), CUDA_SUCCESS);
    unsigned long long id = 0;
    EXPECT_EQ(FN(cuStreamGetId)(s, &id), CUDA_ERROR_CONTEXT_IS_DESTROYED) << "a stream of the destroyed context";
    EXPECT_EQ(FN(cuCtxSetCurrent)(ctx), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    EXPECT_EQ(FN(cuCtxPushCurrent_v2)(ctx), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    EXPECT_EQ(FN(cuCtxDestroy_v2)(ctx), CUDA_ERROR_CONTEXT_IS_DESTROYED);
}

TEST(Handles, CopiesAndMemsetsOnlyTouchKnownMemory)
{
    Fixture fx;
    CUdeviceptr d = 0;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 4096), CUDA_SUCCESS);
    std::vector<char> host(8192, 1);
    const CUdeviceptr wild = 0x1000;  // unmapped, and not ours
    const CUdeviceptr heap = reinterpret_cast<CUdeviceptr>(host.data());  // mapped, but pageable host memory
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(0, host.data(), 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(wild, host.data(), 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(heap, host.data(), 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(d, nullptr, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(d, host.data(), 8192), CUDA_ERROR_INVALID_VALUE) << "past the allocation's end";
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(d + 4000, host.data(), 200), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyDtoH_v2)(host.data(), wild, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyDtoH_v2)(host.data(), 0, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyDtoH_v2)(nullptr, d, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyDtoD_v2)(d, wild, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyDtoD_v2)(wild, d, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyHtoDAsync_v2)(wild, host.data(), 64, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyDtoHAsync_v2)(host.data(), wild, 64, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpy)(0, d, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpy)(d, 0, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpy)(d, heap, 8192), CUDA_ERROR_INVALID_VALUE) << "past the allocation's end";
    EXPECT_EQ(FN(cuMemcpyPeer)(d, fx.ctx, wild, fx.ctx, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemsetD8_v2)(0, 0, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemsetD8_v2)(wild, 0, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemsetD32Async)(d, 0, 2048, nullptr), CUDA_ERROR_INVALID_VALUE) << "8 KiB into 4 KiB";
    EXPECT_EQ(FN(cuMemsetD2D8_v2)(d, 64, 0, 64, 65), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY2D c2{};
    c2.srcMemoryType = CU_MEMORYTYPE_HOST;
    c2.srcHost = host.data();
    c2.srcPitch = 64;
    c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.dstDevice = wild;
    c2.dstPitch = 64;
    c2.WidthInBytes = 64;
    c2.Height = 4;
    EXPECT_EQ(FN(cuMemcpy2D_v2)(&c2), CUDA_ERROR_INVALID_VALUE);
    c2.dstDevice = d;
    c2.Height = 65;
    EXPECT_EQ(FN(cuMemcpy2D_v2)(&c2), CUDA_ERROR_INVALID_VALUE) << "rows past the allocation's end";
    c2.Height = 64;
    EXPECT_EQ(FN(cuMemcpy2D_v2)(&c2), CUDA_SUCCESS);
    // Valid ones still work, pageable host memory included.
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(d, host.data(), 4096), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemcpy)(heap, d, 4096), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(d + 4000, host.data(), 96), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemsetD8_v2)(d, 7, 4096), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(0, nullptr, 0), CUDA_SUCCESS) << "nothing to copy";
    EXPECT_EQ(FN(cuMemFree_v2)(d), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemcpyHtoD_v2)(d, host.data(), 64), CUDA_ERROR_INVALID_VALUE) << "freed";
}

TEST(Handles, NullOutPointers)
{
    Fixture fx;
    CUstream s = nullptr;
    ASSERT_EQ(FN(cuStreamCreate)(&s, 0), CUDA_SUCCESS);
    CUdeviceptr d = 0;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 64), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuCtxGetCurrent)(nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuCtxGetDevice)(nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuCtxGetId)(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuStreamGetId)(s, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuStreamGetCtx)(s, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuStreamGetFlags)(s, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuStreamGetAttribute)(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuStreamCreate)(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuEventCreate)(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemAlloc_v2)(nullptr, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemAllocHost_v2)(nullptr, 64), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuPointerGetAttribute)(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuDeviceGet)(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuDeviceGetCount)(nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuDriverGetVersion)(nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuModuleGetFunction)(nullptr, fx.mod, "k"), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuModuleGetGlobal_v2)(nullptr, nullptr, fx.mod, "g"), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuEventElapsedTime)(nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuStreamEndCapture)(s, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuGetProcAddress_v2)("cuInit", nullptr, 13000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuGetExportTable)(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// ---------------------------------------------------------------- the calls a profiler makes on every hooked call
using HoldFn = void (*)(long long ns, volatile int* held);

TEST(Concurrency, HotCallsDoNotWaitForTheModelLock)
{
    Fixture fx;
    auto hold = reinterpret_cast<HoldFn>(sym("simcudaTestHoldModelLock"));
    ASSERT_NE(hold, nullptr);
    CUstream s = nullptr;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr d = 0;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&d, 4096), CUDA_SUCCESS);
    unsigned long long id = 0;
    ASSERT_EQ(FN(cuStreamGetId_ptsz)(nullptr, &id), CUDA_SUCCESS);  // this thread's per-thread stream exists

    CUcontext c = nullptr;
    CUdevice dev = -1;
    unsigned memType = 0;
    auto hotCalls = [&] {
        EXPECT_EQ(FN(cuCtxGetCurrent)(&c), CUDA_SUCCESS);
        EXPECT_EQ(FN(cuCtxGetDevice)(&dev), CUDA_SUCCESS);
        EXPECT_EQ(FN(cuStreamGetId)(s, &id), CUDA_SUCCESS);
        EXPECT_EQ(FN(cuStreamGetCtx)(s, &c), CUDA_SUCCESS);
        EXPECT_EQ(FN(cuStreamGetCtx)(CU_STREAM_PER_THREAD, &c), CUDA_SUCCESS);
        EXPECT_EQ(FN(cuPointerGetAttribute)(&memType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100), CUDA_SUCCESS);
    };
    hotCalls();  // steady state: each entry point's one-time registration is done

    volatile int held = 0;
    constexpr long long kHoldNs = 300000000;
    std::thread holder([&] { hold(kHoldNs, &held); });
    while (!held) std::this_thread::yield();
    const int64_t t0 = nowNs();
    EXPECT_EQ(FN(cuCtxGetCurrent)(&c), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuCtxGetDevice)(&dev), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuStreamGetId)(s, &id), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuStreamGetCtx)(s, &c), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuStreamGetId)(nullptr, &id), CUDA_SUCCESS) << "legacy stream";
    EXPECT_EQ(FN(cuStreamGetId_ptsz)(nullptr, &id), CUDA_SUCCESS) << "per-thread stream";
    EXPECT_EQ(FN(cuStreamGetCtx)(CU_STREAM_PER_THREAD, &c), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuPointerGetAttribute)(&memType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100), CUDA_SUCCESS);
    EXPECT_EQ(memType, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
    const int64_t took = nowNs() - t0;
    const bool stillHeld = nowNs() - t0 < kHoldNs / 2;
    holder.join();
    EXPECT_LT(took, kHoldNs / 3) << "the hot calls waited for the model lock";
    EXPECT_TRUE(stillHeld);
}

// ---------------------------------------------------------------- fork
// Runs `body` in a forked child that must exit 0 within a few seconds (a deadlock is killed by SIGALRM).
template <class F>
int inChild(F body)
{
    const pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        alarm(10);
        _exit(body() ? 0 : 1);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) return -1;
    return status;
}

bool childUsesTheDriver()
{
    CUdeviceptr d;
    CUstream s;
    char host[64] = {};
    unsigned long long mine = 0;
    return FN(cuMemAlloc_v2)(&d, 64) == CUDA_SUCCESS && FN(cuStreamCreate)(&s, 0) == CUDA_SUCCESS &&
           FN(cuMemsetD8Async)(d, 3, 64, s) == CUDA_SUCCESS && FN(cuStreamSynchronize)(s) == CUDA_SUCCESS &&
           FN(cuMemcpyDtoH_v2)(host, d, 64) == CUDA_SUCCESS && host[63] == 3 &&
           FN(cuStreamGetId_ptsz)(nullptr, &mine) == CUDA_SUCCESS && FN(cuMemFree_v2)(d) == CUDA_SUCCESS &&
           FN(cuLaunchCooperativeKernel)(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr) == 700;
}

TEST(Fork, ForkWhileAnotherThreadHoldsTheModelLock)
{
    Fixture fx;
    auto hold = reinterpret_cast<HoldFn>(sym("simcudaTestHoldModelLock"));
    ASSERT_NE(hold, nullptr);
    unsigned long long parentPt = 0;
    ASSERT_EQ(FN(cuStreamGetId_ptsz)(nullptr, &parentPt), CUDA_SUCCESS);
    volatile int held = 0;
    std::thread holder([&] { hold(200000000, &held); });
    while (!held) std::this_thread::yield();
    pid_t childPid = 0;
    const pid_t child = fork();
    if (child == 0) {
        alarm(10);
        unsigned long long childPt = 0;
        const bool ok = childUsesTheDriver() && FN(cuStreamGetId_ptsz)(nullptr, &childPt) == CUDA_SUCCESS &&
                        childPt != parentPt;
        _exit(ok ? 0 : 1);
    }
    childPid = child;
    ASSERT_GT(childPid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(childPid, &status, 0), childPid);
    holder.join();
    ASSERT_TRUE(WIFEXITED(status)) << "the child was killed (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                   << "): a deadlock on a lock held at fork()";
    EXPECT_EQ(WEXITSTATUS(status), 0);
    const std::string childTrace = std::string(SIMCUDA_TEST_DIR) + "/trace_" + std::to_string(childPid) + ".jsonl";
    std::ifstream in(childTrace);
    int lines = 0;
    for (std::string line; std::getline(in, line); ++lines) EXPECT_EQ(json::parse(line)["pid"], childPid);
    EXPECT_GT(lines, 0) << childTrace;
    unlink(childTrace.c_str());
}

TEST(Fork, ForksWhileOtherThreadsUseTheDriver)
{
    Fixture fx;
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (int t = 0; t < 3; ++t) {
        busy.emplace_back([&, t] {
            FN(cuCtxSetCurrent)(fx.ctx);
            CUfunction k = fx.kernel("ten_us");
            while (!stop) {
                CUstream s;
                CUdeviceptr d;
                CUevent e;
                if (t == 0) FN(cuLaunchCooperativeKernel)(k, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr);  // fault rule
                if (t == 1 && FN(cuStreamCreate)(&s, 0) == CUDA_SUCCESS) {
                    FN(cuLaunchKernel_ptsz)(k, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
                    FN(cuStreamDestroy_v2)(s);
                }
                if (t == 2 && FN(cuMemAlloc_v2)(&d, 256) == CUDA_SUCCESS) {
                    FN(cuEventCreate)(&e, 0);
                    FN(cuMemsetD8Async)(d, 1, 256, nullptr);
                    FN(cuEventRecord)(e, nullptr);
                    FN(cuEventDestroy_v2)(e);
                    FN(cuMemFree_v2)(d);
                }
            }
        });
    }
    int failures = 0;
    std::vector<pid_t> children;
    for (int i = 0; i < 25; ++i) {
        const int status = inChild(childUsesTheDriver);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    }
    stop = true;
    for (std::thread& t : busy) t.join();
    EXPECT_EQ(failures, 0) << "children that failed or hung";
}

}  // namespace

// ---- CUDA arrays (i16arr): host memory of the descriptor's size behind an opaque handle; every copy to,
// from or between arrays moves real bytes and is traced as a copy with the array as device memory.
TEST(Arrays, CreateCopyAndDestroy)
{
    Fixture fx;
    constexpr size_t kW = 64, kH = 8, kBytes = kW * kH * sizeof(float);
    CUDA_ARRAY_DESCRIPTOR d{};
    d.Width = kW;
    d.Height = kH;
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 1;
    CUarray a = nullptr, b = nullptr;
    ASSERT_EQ(FN(cuArrayCreate_v2)(&a, &d), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuArrayCreate_v2)(&b, &d), CUDA_SUCCESS);
    CUDA_ARRAY3D_DESCRIPTOR d3{};
    ASSERT_EQ(FN(cuArray3DGetDescriptor_v2)(&d3, a), CUDA_SUCCESS);
    EXPECT_EQ(d3.Width, kW);
    EXPECT_EQ(d3.Height, kH);
    EXPECT_EQ(d3.Depth, 0u);
    EXPECT_EQ(d3.Format, CU_AD_FORMAT_FLOAT);
    EXPECT_EQ(proc("cuArray3DCreate", 13000), sym("cuArray3DCreate_v2"));
    EXPECT_EQ(proc("cuMemcpyHtoA", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), sym("cuMemcpyHtoA_v2_ptds"));
    EXPECT_EQ(proc("cuMemcpyAtoHAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
              sym("cuMemcpyAtoHAsync_v2_ptsz"));

    std::vector<unsigned char> in(kBytes), out(kBytes, 0);
    for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7);
    CUdeviceptr dev;
    ASSERT_EQ(FN(cuMemAlloc_v2)(&dev, kBytes), CUDA_SUCCESS);
    const unsigned long long legacy = fx.streamId(nullptr);
    const size_t before = opsOn(legacy).size();
    ASSERT_EQ(FN(cuMemcpyHtoA_v2)(a, 0, in.data(), kBytes), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyAtoA_v2)(b, 0, a, 0, kBytes), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyAtoD_v2)(dev, b, 0, kBytes), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyDtoA_v2)(a, kBytes / 2, dev + kBytes / 2, kBytes / 2), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyAtoH_v2)(out.data(), a, 0, kBytes), CUDA_SUCCESS);
    EXPECT_EQ(in, out) << "the bytes went through both arrays and device memory";

    const auto ops = opsOn(legacy);
    ASSERT_EQ(ops.size(), before + 5);
    const char* dirs[] = {"HtoD", "DtoD", "DtoD", "DtoD", "DtoH"};
    const char* mems[] = {"pageable", "device", "device", "device", "pageable"};
    const size_t bytes[] = {kBytes, kBytes, kBytes, kBytes / 2, kBytes};
    for (size_t i = 0; i < 5; ++i) {
        const json& op = ops[before + i];
        EXPECT_EQ(op["op"], "memcpy");
        EXPECT_EQ(op["dir"], dirs[i]) << i;
        EXPECT_EQ(op["host_mem"], mems[i]) << i;
        EXPECT_EQ(op["bytes"], bytes[i]) << i;
        EXPECT_EQ(op["sync"], true) << i;
    }
    EXPECT_EQ(waitsFor("cuMemcpyAtoH_v2").back()["reason"], "sync_copy");

    // Async forms with pinned memory do not block.
    void* pinned;
    ASSERT_EQ(FN(cuMemAllocHost_v2)(&pinned, kBytes), CUDA_SUCCESS);
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyHtoAAsync_v2)(b, 0, pinned, kBytes, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyAtoHAsync_v2)(pinned, b, 0, kBytes, s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamSynchronize)(s), CUDA_SUCCESS);
    const auto async = opsOn(fx.streamId(s));
    ASSERT_EQ(async.size(), 2u);
    EXPECT_EQ(async[0]["dir"], "HtoD");
    EXPECT_EQ(async[1]["dir"], "DtoH");
    for (const json& op : async) {
        EXPECT_EQ(op["host_mem"], "pinned");
        EXPECT_EQ(op["sync"], false);
    }

    // A 2D copy into an array at an offset: the array's rows are packed (pitch = width x element).
    std::vector<unsigned char> row(8, 0xab);
    CUDA_MEMCPY2D c{};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = row.data();
    c.srcPitch = 4;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    c.dstXInBytes = 8;
    c.dstY = 3;
    c.WidthInBytes = 4;
    c.Height = 2;
    ASSERT_EQ(FN(cuMemcpy2D_v2)(&c), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemcpyAtoH_v2)(out.data(), a, 0, kBytes), CUDA_SUCCESS);
    const size_t pitch = kW * sizeof(float);
    EXPECT_EQ(out[3 * pitch + 8], 0xab);
    EXPECT_EQ(out[4 * pitch + 11], 0xab);
    EXPECT_EQ(out[3 * pitch + 12], in[3 * pitch + 12]) << "nothing past the copied width";
    EXPECT_EQ(opsOn(legacy).back()["dir"], "DtoH");
    c.dstY = kH - 1;  // the second row would lie past the array
    EXPECT_EQ(FN(cuMemcpy2D_v2)(&c), CUDA_ERROR_INVALID_VALUE);

    // Bad input: overruns, wild and destroyed handles, unsupported layouts.
    EXPECT_EQ(FN(cuMemcpyHtoA_v2)(a, kBytes - 4, in.data(), 8), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(FN(cuMemcpyAtoH_v2)(out.data(), reinterpret_cast<CUarray>(out.data()), 0, 8), CUDA_ERROR_INVALID_HANDLE);
    d.NumChannels = 3;
    CUarray bad = nullptr;
    EXPECT_EQ(FN(cuArrayCreate_v2)(&bad, &d), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(FN(cuArrayDestroy)(b), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuArrayDestroy)(b), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(FN(cuMemcpyAtoA_v2)(a, 0, b, 0, 4), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(FN(cuArrayDestroy)(a), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamDestroy_v2)(s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFreeHost)(pinned), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFree_v2)(dev), CUDA_SUCCESS);
}

TEST(Arrays, ThreeDimensionalAndMipmapped)
{
    Fixture fx;
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = 16;
    d.Height = 4;
    d.Depth = 3;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT16;
    d.NumChannels = 2;
    CUarray v = nullptr;
    ASSERT_EQ(FN(cuArray3DCreate_v2)(&v, &d), CUDA_SUCCESS);
    constexpr size_t kRow = 16 * 2 * 2, kBytes = kRow * 4 * 3;
    std::vector<unsigned char> in(kBytes), out(kBytes, 0);
    for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i);
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = in.data();
    c.srcPitch = kRow;
    c.srcHeight = 4;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = v;
    c.WidthInBytes = kRow;
    c.Height = 4;
    c.Depth = 3;
    ASSERT_EQ(FN(cuMemcpy3D_v2)(&c), CUDA_SUCCESS);
    EXPECT_EQ(opsOn(fx.streamId(nullptr)).back()["dir"], "HtoD");
    CUDA_MEMCPY3D back{};
    back.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    back.srcArray = v;
    back.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    back.dstDevice = reinterpret_cast<CUdeviceptr>(out.data());  // unified addressing: the pointer says host
    back.dstPitch = kRow;
    back.dstHeight = 4;
    back.WidthInBytes = kRow;
    back.Height = 4;
    back.Depth = 3;
    ASSERT_EQ(FN(cuMemcpy3D_v2)(&back), CUDA_SUCCESS);
    EXPECT_EQ(in, out);
    const json last = opsOn(fx.streamId(nullptr)).back();
    EXPECT_EQ(last["dir"], "DtoH");
    EXPECT_EQ(last["bytes"], kBytes);
    back.Depth = 4;  // one slice too many
    EXPECT_EQ(FN(cuMemcpy3D_v2)(&back), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(FN(cuArrayDestroy)(v), CUDA_SUCCESS);

    CUmipmappedArray m = nullptr;
    d.Depth = 0;
    ASSERT_EQ(FN(cuMipmappedArrayCreate)(&m, &d, 3), CUDA_SUCCESS);
    CUarray level = nullptr;
    ASSERT_EQ(FN(cuMipmappedArrayGetLevel)(&level, m, 2), CUDA_SUCCESS);
    CUDA_ARRAY3D_DESCRIPTOR ld{};
    ASSERT_EQ(FN(cuArray3DGetDescriptor_v2)(&ld, level), CUDA_SUCCESS);
    EXPECT_EQ(ld.Width, 4u);
    EXPECT_EQ(ld.Height, 1u);
    EXPECT_EQ(FN(cuMipmappedArrayGetLevel)(&level, m, 3), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(FN(cuMipmappedArrayDestroy)(m), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuArray3DGetDescriptor_v2)(&ld, level), CUDA_ERROR_INVALID_HANDLE) << "levels go with their mipmap";
}

// Discards (CUDA 13): managed ranges on a stream other than the legacy NULL stream; no device op is traced.
TEST(Arrays, DiscardBatches)
{
    Fixture fx;
    CUdeviceptr m, dev;
    ASSERT_EQ(FN(cuMemAllocManaged)(&m, 1 << 16, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemAlloc_v2)(&dev, 1 << 16), CUDA_SUCCESS);
    CUstream s;
    ASSERT_EQ(FN(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr ptrs[2] = {m, m + (1 << 15)};
    size_t sizes[2] = {1 << 15, 1 << 15};
    EXPECT_EQ(proc("cuMemDiscardBatchAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
              sym("cuMemDiscardBatchAsync_ptsz"));
    EXPECT_EQ(FN(cuMemDiscardBatchAsync)(ptrs, sizes, 2, 0, s), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemDiscardBatchAsync_ptsz)(ptrs, sizes, 2, 0, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuMemDiscardBatchAsync)(ptrs, sizes, 2, 0, nullptr), CUDA_ERROR_INVALID_VALUE) << "legacy NULL stream";
    EXPECT_EQ(FN(cuMemDiscardBatchAsync)(ptrs, sizes, 2, 1, s), CUDA_ERROR_INVALID_VALUE) << "flags must be 0";
    CUdeviceptr notManaged[1] = {dev};
    EXPECT_EQ(FN(cuMemDiscardBatchAsync)(notManaged, sizes, 1, 0, s), CUDA_ERROR_INVALID_VALUE);
    CUmemLocation loc{};
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t idx[1] = {0};
    EXPECT_EQ(FN(cuMemDiscardAndPrefetchBatchAsync)(ptrs, sizes, 2, &loc, idx, 1, 0, s), CUDA_SUCCESS);
    idx[0] = 1;
    EXPECT_EQ(FN(cuMemDiscardAndPrefetchBatchAsync)(ptrs, sizes, 2, &loc, idx, 1, 0, s), CUDA_ERROR_INVALID_VALUE)
        << "the first location applies from operation 0";
    EXPECT_TRUE(opsOn(fx.streamId(s)).empty());
    ASSERT_EQ(FN(cuStreamDestroy_v2)(s), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFree_v2)(m), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuMemFree_v2)(dev), CUDA_SUCCESS);
}

// ---- green contexts (i16arr): an SM partition, its context and streams; an event recorded on the green
// context completes after all of its work, and waiting on one holds back every stream of it.
TEST(GreenCtx, PartitionStreamsAndEvents)
{
    Fixture fx;
    CUdevResource all{}, parts[32], rest{};
    ASSERT_EQ(FN(cuDeviceGetDevResource)(0, &all, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    EXPECT_EQ(all.type, CU_DEV_RESOURCE_TYPE_SM);
    EXPECT_EQ(all.sm.smCount, 132u);
    EXPECT_EQ(all.sm.minSmPartitionSize, 8u);
    unsigned groups = 0;
    ASSERT_EQ(FN(cuDevSmResourceSplitByCount)(nullptr, &groups, &all, nullptr, 0, 20), CUDA_SUCCESS);
    EXPECT_EQ(groups, 132u / 24) << "20 SMs round up to a multiple of 8";
    groups = 2;
    ASSERT_EQ(FN(cuDevSmResourceSplitByCount)(parts, &groups, &all, &rest, 0, 16), CUDA_SUCCESS);
    EXPECT_EQ(groups, 2u);
    EXPECT_EQ(parts[0].sm.smCount, 16u);
    EXPECT_EQ(rest.sm.smCount, 132u - 32u);
    EXPECT_EQ(FN(cuDevSmResourceSplitByCount)(parts, &groups, &all, nullptr, 0, 200), CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
    CUdevResourceDesc desc = nullptr;
    ASSERT_EQ(FN(cuDevResourceGenerateDesc)(&desc, parts, 1), CUDA_SUCCESS);
    CUgreenCtx green = nullptr;
    EXPECT_EQ(FN(cuGreenCtxCreate)(&green, desc, 0, 0), CUDA_ERROR_INVALID_VALUE) << "CU_GREEN_CTX_DEFAULT_STREAM is required";
    ASSERT_EQ(FN(cuGreenCtxCreate)(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
    EXPECT_EQ(proc("cuGreenCtxCreate", 13000), sym("cuGreenCtxCreate"));
    CUdevResource mine{};
    ASSERT_EQ(FN(cuGreenCtxGetDevResource)(green, &mine, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    EXPECT_EQ(mine.sm.smCount, 16u);
    CUcontext ctx = nullptr;
    ASSERT_EQ(FN(cuCtxFromGreenCtx)(&ctx, green), CUDA_SUCCESS);
    EXPECT_NE(ctx, fx.ctx);
    ASSERT_EQ(FN(cuCtxGetDevResource)(ctx, &mine, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    EXPECT_EQ(mine.sm.smCount, 16u);

    CUstream gs = nullptr;
    EXPECT_EQ(FN(cuGreenCtxStreamCreate)(&gs, green, 0, 0), CUDA_ERROR_INVALID_VALUE) << "CU_STREAM_NON_BLOCKING is required";
    ASSERT_EQ(FN(cuGreenCtxStreamCreate)(&gs, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
    CUcontext streamCtx = nullptr;
    ASSERT_EQ(FN(cuStreamGetCtx)(gs, &streamCtx), CUDA_SUCCESS);
    EXPECT_EQ(streamCtx, ctx);
    CUgreenCtx back = nullptr;
    ASSERT_EQ(FN(cuStreamGetGreenCtx)(gs, &back), CUDA_SUCCESS);
    EXPECT_EQ(back, green);

    // A 2 ms kernel on the green stream: the event recorded on the green context completes after it, and a
    // green-context wait on an event holds back its streams' next work.
    CUevent done, later;
    ASSERT_EQ(FN(cuEventCreate)(&done, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventCreate)(&later, 0), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(fx.kernel("slow2ms"), gs), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGreenCtxRecordEvent)(green, done), CUDA_SUCCESS);
    const auto kernelOp = opsOn(fx.streamId(gs)).back();
    CUstream other = nullptr;
    ASSERT_EQ(FN(cuGreenCtxStreamCreate)(&other, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGreenCtxWaitEvent)(green, done), CUDA_SUCCESS);
    ASSERT_EQ(fx.launch(fx.kernel("ten_us"), other), CUDA_SUCCESS);
    const auto next = opsOn(fx.streamId(other)).back();
    EXPECT_GE(next["start"].get<int64_t>(), kernelOp["end"].get<int64_t>()) << "the other green stream waited for the event";
    ASSERT_EQ(FN(cuEventSynchronize)(done), CUDA_SUCCESS);
    float ms = 0;
    ASSERT_EQ(FN(cuEventRecord)(later, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventSynchronize)(later), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuEventElapsedTime)(&ms, done, later), CUDA_SUCCESS);

    EXPECT_EQ(FN(cuGreenCtxRecordEvent)(reinterpret_cast<CUgreenCtx>(&ms), done), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(FN(cuStreamDestroy_v2)(gs), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuStreamDestroy_v2)(other), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuGreenCtxDestroy)(green), CUDA_SUCCESS);
    EXPECT_EQ(FN(cuGreenCtxDestroy)(green), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(FN(cuCtxFromGreenCtx)(&ctx, green), CUDA_ERROR_INVALID_HANDLE);
    ASSERT_EQ(FN(cuEventDestroy_v2)(done), CUDA_SUCCESS);
    ASSERT_EQ(FN(cuEventDestroy_v2)(later), CUDA_SUCCESS);
}
