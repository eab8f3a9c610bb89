// tests/unit/shim_hooks_test.cpp: the hook table is consistent, cuGetProcAddress requests select the
// right ABI (version and per-thread flag), the queue drops and counts when full, and the lookup
// tables the hot path uses (memory kinds, kernel names, strings) answer what was put in.
#include "shim/shim.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

using namespace gpuspy::shim;

namespace gpuspy::shim {
uint64_t recordsMade();
uint64_t recordsDropped();
}

namespace {

bool endsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string select(const char* name, int version, cuuint64_t flags)
{
    return kApis[size_t(selectAbiByVersion(name, version, flags))].abi;
}

}  // namespace

TEST(ShimHookTable, NamesUniqueAndWrappersPresent)
{
    std::set<std::string> abis;
    std::set<std::string> requests;
    for (size_t i = 1; i < kApiCount; ++i) {
        const ApiInfo& a = kApis[i];
        EXPECT_TRUE(abis.insert(a.abi).second) << "duplicate ABI " << a.abi;
        EXPECT_TRUE(requests.insert(std::string(a.base) + "@" + std::to_string(a.since) + (a.perThread ? "/pt" : "")).second)
            << "two ABIs answer the same request: " << a.abi;
        EXPECT_NE(kWrappers[i], nullptr) << a.abi;
        EXPECT_EQ(std::strncmp(a.abi, a.base, std::strlen(a.base)), 0) << a.abi << " is not a version of " << a.base;
        const bool ptName = endsWith(a.abi, "_ptds") || endsWith(a.abi, "_ptsz");
        EXPECT_EQ(ptName, a.perThread) << a.abi;
    }
    // Every wrapper is distinct: one per ABI, so a _ptsz call is never reported as the legacy one.
    std::set<void*> wrappers(kWrappers + 1, kWrappers + kApiCount);
    EXPECT_EQ(wrappers.size(), kApiCount - 1);
}

TEST(ShimHookTable, PerThreadVariantsHaveALegacyTwin)
{
    for (size_t i = 1; i < kApiCount; ++i) {
        if (!kApis[i].perThread) continue;
        std::string legacy = kApis[i].abi;
        legacy.resize(legacy.size() - 5);
        bool found = false;
        for (size_t j = 1; j < kApiCount; ++j) found |= legacy == kApis[j].abi;
        EXPECT_TRUE(found) << kApis[i].abi << " has no " << legacy;
    }
}

TEST(ShimResolve, VersionAndFlagsSelectTheAbi)
{
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    EXPECT_EQ(select("cuMemcpyHtoD", 3020, 0), "cuMemcpyHtoD_v2");
    EXPECT_EQ(select("cuMemcpyHtoD", 13000, 0), "cuMemcpyHtoD_v2");
    EXPECT_EQ(select("cuMemcpyHtoD", 7000, pt), "cuMemcpyHtoD_v2_ptds");
    EXPECT_EQ(select("cuMemcpyHtoDAsync", 7000, pt), "cuMemcpyHtoDAsync_v2_ptsz");
    EXPECT_EQ(select("cuMemcpyHtoD", 2000, 0), "");  // the pre-_v2 ABI: not ours, left alone
    EXPECT_EQ(select("cuCtxSynchronize", 2000, 0), "cuCtxSynchronize");
    EXPECT_EQ(select("cuCtxSynchronize", 12080, 0), "cuCtxSynchronize");
    EXPECT_EQ(select("cuCtxSynchronize", 13000, 0), "cuCtxSynchronize_v2");
    EXPECT_EQ(select("cuLaunchKernel", 4000, 0), "cuLaunchKernel");
    EXPECT_EQ(select("cuLaunchKernel", 12000, pt), "cuLaunchKernel_ptsz");
    EXPECT_EQ(select("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM), "cuLaunchKernel");
    EXPECT_EQ(select("cuMemAlloc", 3020, pt), "cuMemAlloc_v2");  // no stream: no per-thread variant
    // The older ABIs cudart resolves beside the hooked ones are hooked too (issue 16).
    EXPECT_EQ(select("cuMemPrefetchAsync", 8000, 0), "cuMemPrefetchAsync");  // the CUdevice ABI
    EXPECT_EQ(select("cuMemPrefetchAsync", 8000, pt), "cuMemPrefetchAsync_ptsz");
    EXPECT_EQ(select("cuMemPrefetchAsync", 12020, pt), "cuMemPrefetchAsync_v2_ptsz");
    EXPECT_EQ(select("cuStreamBeginCapture", 10000, 0), "cuStreamBeginCapture");
    EXPECT_EQ(select("cuStreamBeginCapture", 10010, pt), "cuStreamBeginCapture_v2_ptsz");
    EXPECT_EQ(select("cuMemcpyBatchAsync", 12080, 0), "cuMemcpyBatchAsync");
    EXPECT_EQ(select("cuMemcpyBatchAsync", 13000, 0), "cuMemcpyBatchAsync_v2");
    EXPECT_EQ(select("cuDevicePrimaryCtxReset", 7000, 0), "cuDevicePrimaryCtxReset");
    EXPECT_EQ(select("cuDevicePrimaryCtxReset", 11000, 0), "cuDevicePrimaryCtxReset_v2");
    EXPECT_EQ(select("cuDevicePrimaryCtxRelease", 7000, 0), "cuDevicePrimaryCtxRelease");
    EXPECT_EQ(select("cuGraphInstantiate", 12000, 0), "cuGraphInstantiateWithFlags");
    EXPECT_EQ(select("cuGraphInstantiate", 11000, 0), "");  // the 5-argument _v2: not ours
    EXPECT_EQ(select("cuGraphInstantiateWithParams", 12000, pt), "cuGraphInstantiateWithParams_ptsz");
    EXPECT_EQ(select("cuStreamWaitValue32", 12000, pt), "cuStreamWaitValue32_v2_ptsz");
    EXPECT_EQ(select("cuStreamWaitValue32", 8000, 0), "");  // the pre-11.7 ABI: not ours
    EXPECT_EQ(select("cuStreamBatchMemOp", 11070, 0), "cuStreamBatchMemOp_v2");
    EXPECT_EQ(select("cuMemcpy3DBatchAsync", 13000, 0), "cuMemcpy3DBatchAsync_v2");
    EXPECT_EQ(select("cuGetProcAddress", 12000, 0), "");
}

// Setup and query calls, hooked for their failures only (issue 28): each request gets the ABI of its version,
// never one of another signature; the older 32-bit ABIs and the error-name lookups stay unwrapped.
TEST(ShimResolve, FailureOnlyAbisFollowTheVersion)
{
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    EXPECT_EQ(select("cuDeviceGet", 2000, 0), "cuDeviceGet");
    EXPECT_EQ(select("cuInit", 13000, pt), "cuInit");  // no stream: the plain ABI
    EXPECT_EQ(select("cuCtxGetDevice", 2000, 0), "cuCtxGetDevice");
    EXPECT_EQ(select("cuCtxGetDevice", 12090, 0), "cuCtxGetDevice");
    EXPECT_EQ(select("cuCtxGetDevice", 13000, 0), "cuCtxGetDevice_v2");  // takes a context
    EXPECT_EQ(select("cuDeviceTotalMem", 2000, 0), "");                 // unsigned int bytes: not ours
    EXPECT_EQ(select("cuDeviceTotalMem", 3020, 0), "cuDeviceTotalMem_v2");
    EXPECT_EQ(select("cuModuleGetGlobal", 2000, 0), "");
    EXPECT_EQ(select("cuModuleGetGlobal", 13000, 0), "cuModuleGetGlobal_v2");
    EXPECT_EQ(select("cuLinkCreate", 5050, 0), "");
    EXPECT_EQ(select("cuLinkCreate", 6050, 0), "cuLinkCreate_v2");
    EXPECT_EQ(select("cuLinkComplete", 5050, 0), "cuLinkComplete");
    EXPECT_EQ(select("cuDeviceGetUuid", 9020, 0), "cuDeviceGetUuid");
    EXPECT_EQ(select("cuDeviceGetUuid", 11040, 0), "cuDeviceGetUuid_v2");
    EXPECT_EQ(select("cuEventElapsedTime", 2000, 0), "cuEventElapsedTime");
    EXPECT_EQ(select("cuEventElapsedTime", 12080, 0), "cuEventElapsedTime_v2");
    EXPECT_EQ(select("cuEventDestroy", 2000, 0), "");
    EXPECT_EQ(select("cuEventDestroy", 4000, 0), "cuEventDestroy_v2");
    EXPECT_EQ(select("cuGetErrorName", 6000, 0), "");
    EXPECT_EQ(select("cuGetErrorString", 6000, 0), "");
    for (size_t i = 1; i < kApiCount; ++i) {
        if (kApis[i].category != gpuspy::wire::Category::Query) continue;
        EXPECT_FALSE(kApis[i].perThread) << kApis[i].abi;
    }
}

TEST(ShimResolve, UnhookedDlsymAnswersPassThrough)
{
    int x = 0;
    EXPECT_EQ(interceptDlsym(nullptr, "malloc", &x), &x);
    EXPECT_EQ(interceptDlsym(nullptr, "cuGetErrorName", &x), &x);
    EXPECT_EQ(interceptDlsym(nullptr, "cuDeviceTotalMem", &x), &x);  // the 32-bit ABI: not wrapped
    EXPECT_EQ(interceptDlsym(nullptr, "cuMemAlloc_v2", nullptr), nullptr);  // absent stays absent
}

TEST(ShimIntern, MemoryKinds)
{
    memAddRange(0x10000000, 0x1000, gpuspy::wire::MemKind::Pinned);
    memAddRange(0x20000000, 0x1000, gpuspy::wire::MemKind::Device);
    EXPECT_EQ(memKindOf(0x10000000, false), gpuspy::wire::MemKind::Pinned);
    EXPECT_EQ(memKindOf(0x10000fff, false), gpuspy::wire::MemKind::Pinned);
    EXPECT_EQ(memKindOf(0x10001000, false), gpuspy::wire::MemKind::Pageable);
    EXPECT_EQ(memKindOf(0x20000800, false), gpuspy::wire::MemKind::Device);
    memRemoveRange(0x10000000);
    EXPECT_EQ(memKindOf(0x10000000, false), gpuspy::wire::MemKind::Pageable);
    EXPECT_EQ(memKindOf(0x20000800, false), gpuspy::wire::MemKind::Device);
}

TEST(ShimIntern, KernelNamesAndStrings)
{
    int a = 0, b = 0, c = 0;
    const uint32_t ka = internKernelName(&a, "_Z3fooPi");
    EXPECT_NE(ka, 0u);
    EXPECT_EQ(kernelIdOf(&a), ka);
    EXPECT_EQ(internKernelName(&b, "_Z3fooPi"), ka);  // same name, same id
    aliasKernel(&c, &a);
    EXPECT_EQ(kernelIdOf(&c), ka);
    const uint32_t s1 = internString("phase", 5);
    EXPECT_NE(s1, 0u);
    EXPECT_EQ(internString("phase", 5), s1);
    EXPECT_NE(internString("phase2", 6), s1);
}

TEST(ShimQueue, FullQueueDropsAndCounts)
{
    setenv("GPUSPY_QUEUE_ITEMS", "1024", 1);
    lanesConfigure();  // this thread's lane, when made now: 1024 items
    ThreadState* ts = threadState();
    ASSERT_NE(ts, nullptr);
    Item item{};
    item.kind = Item::Call;
    const uint64_t made0 = recordsMade(), dropped0 = recordsDropped();
    size_t accepted = 0;
    for (int i = 0; i < 100000; ++i)
        if (enqueue(ts, item)) ++accepted;
    EXPECT_GE(accepted, 1024u);
    EXPECT_LT(accepted, 100000u / 2);  // bounded: the queue does not grow
    EXPECT_EQ(recordsMade() - made0, 100000u);
    EXPECT_EQ(recordsDropped() - dropped0, 100000u - accepted);
}
