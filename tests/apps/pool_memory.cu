// pool_memory: stream-ordered pools (cudaMallocAsync) with a known story, for the report's pool rows and
// the pool findings (tests/report/memory_pools.sh). The argument picks the story:
//
//   keep          the device's default pool with its release threshold set to the maximum (a server's
//                 setting): a burst of kBurst x kBurstBytes (burst_alloc), freed and synchronized, then
//                 kSteps steps of one kStepBytes buffer (step_alloc); the pool keeps the burst's memory to
//                 the end, and too_big's cudaMalloc of kTooBigBytes fails (SIMCUDA_FAIL, from
//                 tests/apps/sim_env.txt: the program's only cudaMalloc) while it does
//   regrow        the default pool at its default threshold (0): kSteps steps, each allocating kStepBytes
//                 twice (regrow_alloc, then served_alloc: the second is served from what the pool kept
//                 since the first's free) and synchronizing: every synchronize gives the memory back, every
//                 step's first allocation reserves it again
//   regrow_fixed  the same with the threshold at the maximum: the pool grows once
//   created       a pool of its own (cudaMemPoolCreate, its threshold at the maximum), made the device's current
//                 pool (cudaDeviceSetMemPool): cudaMallocAsync and cudaMallocFromPoolAsync both take from it;
//                 then cudaMemPoolTrimTo(0) gives back what it kept, before cudaMemPoolDestroy
//
// Its truth, on stdout: "truth pool_memory mode=... key=value...", read from the driver's own answers
// (cudaMemPoolGetAttribute: reserved and used, current and high) and counted by the program (how often the
// pool's reservation grew, and grew back into memory it had held before), never from a run of gpuspy.
#include "app_common.h"

#include <cstdint>
#include <cstring>
#include <string>

constexpr size_t kMiB = size_t(1) << 20;
constexpr int kBurst = 8;
constexpr size_t kBurstBytes = 16 * kMiB;
constexpr int kSteps = 40;
constexpr size_t kStepBytes = 8 * kMiB;
constexpr size_t kTooBigBytes = 96 * kMiB;

__global__ void touch(float* p) { p[threadIdx.x] += 1.f; }

static cudaMemPool_t g_pool;
static uint64_t g_grows = 0, g_regrows = 0, g_high = 0;

static uint64_t attr(cudaMemPoolAttr a)
{
    uint64_t v = 0;
    CK(cudaMemPoolGetAttribute(g_pool, a, &v));
    return v;
}

// Counts the reservation's growths as the driver answers them, around an allocation made by each named
// step itself (so that the call site is the step's).
static void counted(uint64_t before, float* p, cudaStream_t s)
{
    const uint64_t after = attr(cudaMemPoolAttrReservedMemCurrent);
    if (after > before) {
        ++g_grows;
        if (before < g_high) ++g_regrows;
    }
    g_high = after > g_high ? after : g_high;
    touch<<<1, 32, 0, s>>>(p);
    CK_LAUNCH();
}
#define TAKE(bytes, s)                                                       \
    const uint64_t before_ = attr(cudaMemPoolAttrReservedMemCurrent);        \
    float* p_ = nullptr;                                                     \
    CK(cudaMallocAsync(reinterpret_cast<void**>(&p_), (bytes), (s)));        \
    counted(before_, p_, (s));                                               \
    return p_

__attribute__((noinline)) static float* burst_alloc(cudaStream_t s) { TAKE(kBurstBytes, s); }
__attribute__((noinline)) static float* step_alloc(cudaStream_t s) { TAKE(kStepBytes, s); }
__attribute__((noinline)) static float* regrow_alloc(cudaStream_t s) { TAKE(kStepBytes, s); }
__attribute__((noinline)) static float* served_alloc(cudaStream_t s) { TAKE(kStepBytes, s); }
__attribute__((noinline)) static float* own_pool_alloc(size_t bytes, cudaStream_t s) { TAKE(bytes, s); }
__attribute__((noinline)) static float* from_pool_alloc(size_t bytes, cudaMemPool_t pool, cudaStream_t s)
{
    const uint64_t before = attr(cudaMemPoolAttrReservedMemCurrent);
    float* p = nullptr;
    CK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), bytes, pool, s));
    counted(before, p, s);
    return p;
}

static void setThreshold(uint64_t v) { CK(cudaMemPoolSetAttribute(g_pool, cudaMemPoolAttrReleaseThreshold, &v)); }

static void printTruth(const char* mode, const std::string& more)
{
    std::printf("truth pool_memory mode=%s reserved_end=%llu used_end=%llu reserved_high=%llu used_high=%llu grows=%llu "
                "regrows=%llu%s\n",
                mode, (unsigned long long)attr(cudaMemPoolAttrReservedMemCurrent),
                (unsigned long long)attr(cudaMemPoolAttrUsedMemCurrent),
                (unsigned long long)attr(cudaMemPoolAttrReservedMemHigh), (unsigned long long)attr(cudaMemPoolAttrUsedMemHigh),
                (unsigned long long)g_grows, (unsigned long long)g_regrows, more.c_str());
}

// The program's only cudaMalloc: it must fail (cudaErrorMemoryAllocation).
__attribute__((noinline)) static bool too_big()
{
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, kTooBigBytes);
    if (err == cudaSuccess) {
        std::printf("too_big: cudaMalloc(%zu) succeeded; it must fail (run with SIMCUDA_FAIL)\n", kTooBigBytes);
        CK(cudaFree(p));
        return false;
    }
    (void)cudaGetLastError();
    std::printf("too_big: cudaMalloc(%zu) failed: %s\n", kTooBigBytes, cudaGetErrorName(err));
    return err == cudaErrorMemoryAllocation;
}

static int keep(cudaStream_t s)
{
    setThreshold(UINT64_MAX);
    float* burst[kBurst];
    for (int i = 0; i < kBurst; ++i) burst[i] = burst_alloc(s);
    for (int i = 0; i < kBurst; ++i) CK(cudaFreeAsync(burst[i], s));
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < kSteps; ++i) {
        float* p = step_alloc(s);
        CK(cudaFreeAsync(p, s));
        CK(cudaStreamSynchronize(s));
    }
    const uint64_t reserved = attr(cudaMemPoolAttrReservedMemCurrent), used = attr(cudaMemPoolAttrUsedMemCurrent);
    if (!too_big()) return 1;
    printTruth("keep", " failed_bytes=" + std::to_string(kTooBigBytes) + " unused_at_failure=" + std::to_string(reserved - used));
    return 0;
}

static int regrow(cudaStream_t s, bool fixed)
{
    if (fixed) setThreshold(UINT64_MAX);
    for (int i = 0; i < kSteps; ++i) {
        float* a = regrow_alloc(s);
        CK(cudaFreeAsync(a, s));
        float* b = served_alloc(s);
        CK(cudaFreeAsync(b, s));
        CK(cudaStreamSynchronize(s));
    }
    printTruth(fixed ? "regrow_fixed" : "regrow", "");
    return 0;
}

static int created(cudaStream_t s)
{
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &props));
    CK(cudaDeviceSetMemPool(0, pool));
    g_pool = pool;
    setThreshold(UINT64_MAX);  // it keeps what it reserved across synchronizations, until the trim
    float* a[3];
    for (float*& p : a) p = own_pool_alloc(6 * kMiB, s);
    float* b = from_pool_alloc(2 * kMiB, pool, s);
    for (float* p : a) CK(cudaFreeAsync(p, s));
    CK(cudaFreeAsync(b, s));
    CK(cudaStreamSynchronize(s));
    float* c = from_pool_alloc(10 * kMiB, pool, s);
    CK(cudaFreeAsync(c, s));
    CK(cudaStreamSynchronize(s));
    const uint64_t beforeTrim = attr(cudaMemPoolAttrReservedMemCurrent);
    CK(cudaMemPoolTrimTo(pool, 0));
    printTruth("created", " reserved_before_trim=" + std::to_string(beforeTrim));
    cudaMemPool_t dflt;
    CK(cudaDeviceGetDefaultMemPool(&dflt, 0));
    CK(cudaDeviceSetMemPool(0, dflt));
    CK(cudaMemPoolDestroy(pool));
    return 0;
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "";
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaDeviceGetDefaultMemPool(&g_pool, 0));
    int rc = 2;
    if (std::strcmp(mode, "keep") == 0) rc = keep(s);
    else if (std::strcmp(mode, "regrow") == 0) rc = regrow(s, false);
    else if (std::strcmp(mode, "regrow_fixed") == 0) rc = regrow(s, true);
    else if (std::strcmp(mode, "created") == 0) rc = created(s);
    else std::fprintf(stderr, "usage: pool_memory keep|regrow|regrow_fixed|created\n");
    CK(cudaStreamDestroy(s));
    return rc;
}
