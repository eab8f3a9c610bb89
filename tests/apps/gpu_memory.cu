// gpu_memory: a program whose GPU memory has a known story, for the report's "GPU memory" section
// (tests/report/memory.sh). Each step is its own non-inlined function, so each allocation has its own call
// site, named after it:
//
//   pin_staging       cudaMallocHost kPinnedBytes at start, cudaFreeHost at the end
//   make_managed      cudaMallocManaged kManagedBytes at start, never freed (kept to the end)
//   load_weights      cudaMalloc kWeightsBytes at start, freed at the very end (after the failure)
//   run_step(i)       kSteps steps, each launching a small kernel on:
//     make_temp         a kTempBytes temporary, freed in the same step
//     leaky_step        kLeakBytes, never freed: a leak that grows with the loop
//     big_intermediate  at step kPeakStep only, kBigBytes, freed at the end of that step (the peak)
//   too_big           cudaMalloc of kTooBigBytes, which must fail with cudaErrorMemoryAllocation: the
//                     simulated driver fails it (SIMCUDA_FAIL, see tests/report/memory.sh); the program
//                     prints the error and goes on
//
// It prints its own truth on stdout, "truth <section> key=value...", computed from what it did (the bytes
// of every allocation that succeeded and every release), never from a run of gpuspy:
//   truth totals      device_allocations, device_releases, device_allocated_bytes (device memory, the
//                     allocations that succeeded), device_peak_bytes, peak_step, device_leaked_bytes,
//                     leak_allocations, failed_allocations, failed_bytes, in_use_at_failure_bytes,
//                     pinned_allocations, pinned_peak_bytes, pinned_end_bytes, managed_allocations,
//                     managed_end_bytes
//   truth at_peak     site=bytes/allocations for each call site holding device memory at the peak
//   truth at_failure  the same when too_big failed
//   truth live_at_end the same at exit (device memory never freed)
// Its stdout is the same with and without gpuspy.
//
// `gpu_memory pool_other` and `gpu_memory pool_same` instead tell a stream-ordered story (cudaMallocAsync,
// cudaFreeAsync: memory is taken and given back when its stream reaches the call, not when the host makes
// it): kWeightsBytes of weights, then kPoolBytes allocated on stream s1 and used by a long kernel
// (pool_long, 50 ms under tests/report/memory.sh's SIMCUDA_KERNEL_NS) on s2 (pool_other) or on s1
// (pool_same), freed on that stream right after the launch, and kPoolBytes more allocated on s1 at once.
// pool_other: the first buffer is still in use when the second is taken (s2 has not reached its free):
// peak weights + 2 x kPoolBytes. pool_same: s1 reaches the free before the second allocation: peak
// weights + kPoolBytes. It prints "truth pool mode=... device_peak_bytes=...".
#include "app_common.h"

#include <cstdint>
#include <cstring>
#include <vector>

constexpr size_t kMiB = size_t(1) << 20;
constexpr int kSteps = 20;
constexpr int kPeakStep = 10;
constexpr size_t kWeightsBytes = 8 * kMiB;
constexpr size_t kTempBytes = 2 * kMiB;
constexpr size_t kLeakBytes = 1 * kMiB;
constexpr size_t kBigBytes = 24 * kMiB;
constexpr size_t kPinnedBytes = 4 * kMiB;
constexpr size_t kManagedBytes = 2 * kMiB;
constexpr size_t kTooBigBytes = 512 * kMiB;

__global__ void step_kernel(float* p, int n, float v)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

// ---- the program's own bookkeeping of device memory, by call site ---------------------------------
enum Site { kSiteWeights, kSiteTemp, kSiteLeak, kSiteBig, kSites };
static const char* const kSiteNames[kSites] = {"load_weights", "make_temp", "leaky_step", "big_intermediate"};

struct Holding {
    size_t bytes[kSites] = {};
    int allocations[kSites] = {};
    size_t total() const
    {
        size_t t = 0;
        for (size_t b : bytes) t += b;
        return t;
    }
};

static Holding g_now;          // device memory held now, by site
static Holding g_at_peak;      // ... at the peak
static Holding g_at_failure;   // ... when too_big failed
static size_t g_peak = 0;
static int g_allocations = 0, g_releases = 0;  // device allocations that succeeded, releases
static size_t g_allocated_bytes = 0;
static int g_peak_step = -1;
static int g_step = -1;        // the step running, -1 outside the loop
static int g_failed = 0;
static size_t g_failed_bytes = 0;
static size_t g_pinned_now = 0, g_pinned_peak = 0;
static int g_pinned_allocations = 0;
static size_t g_managed_now = 0;
static int g_managed_allocations = 0;

static void held(Site s, size_t bytes)
{
    g_now.bytes[s] += bytes;
    g_now.allocations[s] += 1;
    ++g_allocations;
    g_allocated_bytes += bytes;
    if (g_now.total() > g_peak) {
        g_peak = g_now.total();
        g_at_peak = g_now;
        g_peak_step = g_step;
    }
}

static void released(Site s, size_t bytes)
{
    g_now.bytes[s] -= bytes;
    g_now.allocations[s] -= 1;
    ++g_releases;
}

// ---- the steps, each its own call site ------------------------------------------------------------
__attribute__((noinline)) static void* pin_staging()
{
    void* p = nullptr;
    CK(cudaMallocHost(&p, kPinnedBytes));
    g_pinned_now += kPinnedBytes;
    ++g_pinned_allocations;
    if (g_pinned_now > g_pinned_peak) g_pinned_peak = g_pinned_now;
    return p;
}

__attribute__((noinline)) static float* make_managed()
{
    float* p = nullptr;
    CK(cudaMallocManaged(&p, kManagedBytes));
    g_managed_now += kManagedBytes;
    ++g_managed_allocations;
    return p;
}

__attribute__((noinline)) static float* load_weights()
{
    float* p = nullptr;
    CK(cudaMalloc(&p, kWeightsBytes));
    held(kSiteWeights, kWeightsBytes);
    return p;
}

__attribute__((noinline)) static float* make_temp()
{
    float* p = nullptr;
    CK(cudaMalloc(&p, kTempBytes));
    held(kSiteTemp, kTempBytes);
    return p;
}

__attribute__((noinline)) static float* leaky_step()
{
    float* p = nullptr;
    CK(cudaMalloc(&p, kLeakBytes));
    held(kSiteLeak, kLeakBytes);
    return p;  // never freed
}

__attribute__((noinline)) static float* big_intermediate()
{
    float* p = nullptr;
    CK(cudaMalloc(&p, kBigBytes));
    held(kSiteBig, kBigBytes);
    return p;
}

__attribute__((noinline)) static void run_step(int i)
{
    g_step = i;
    float* temp = make_temp();
    float* leak = leaky_step();
    float* big = i == kPeakStep ? big_intermediate() : nullptr;
    // One kernel at three sizes (the report's --by-launch-config splits them): 1024 elements of the
    // temporary, 512 of the leak (half the grid), 2048 of the intermediate.
    const int n = 1024;
    step_kernel<<<(n + 255) / 256, 256>>>(temp, n, float(i));
    CK_LAUNCH();
    step_kernel<<<(n / 2 + 127) / 128, 128>>>(leak, n / 2, float(i));
    CK_LAUNCH();
    if (big) {
        step_kernel<<<(2 * n + 255) / 256, 256>>>(big, 2 * n, float(i));
        CK_LAUNCH();
        CK(cudaFree(big));
        released(kSiteBig, kBigBytes);
    }
    CK(cudaFree(temp));
    released(kSiteTemp, kTempBytes);
    g_step = -1;
}

// Returns whether the allocation failed as it must (cudaErrorMemoryAllocation).
__attribute__((noinline)) static bool too_big()
{
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, kTooBigBytes);
    if (err == cudaSuccess) {
        std::printf("too_big: cudaMalloc(%zu) succeeded; it must fail (run with SIMCUDA_FAIL, tests/report/memory.sh)\n",
                    kTooBigBytes);
        CK(cudaFree(p));
        return false;
    }
    std::printf("too_big: cudaMalloc(%zu) failed: %s (%s, %d)\n", kTooBigBytes, cudaGetErrorString(err),
                cudaGetErrorName(err), (int)err);
    (void)cudaGetLastError();  // the failure is expected: clear it so that later calls' checks hold
    if (err != cudaErrorMemoryAllocation) return false;
    ++g_failed;
    g_failed_bytes += kTooBigBytes;
    g_at_failure = g_now;
    return true;
}

static void print_holding(const char* section, const Holding& h)
{
    std::printf("truth %s", section);
    for (int s = 0; s < kSites; ++s)
        if (h.allocations[s] > 0) std::printf(" %s=%zu/%d", kSiteNames[s], h.bytes[s], h.allocations[s]);
    std::printf("\n");
}

__global__ void pool_long(float* p) { p[threadIdx.x] += 1.f; }

constexpr size_t kPoolBytes = 16 * kMiB;

__attribute__((noinline)) static float* pool_alloc(cudaStream_t s)
{
    float* p = nullptr;
    CK(cudaMallocAsync(&p, kPoolBytes, s));
    return p;
}

int pool_story(bool otherStream)
{
    float* weights = load_weights();
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t made;
    CK(cudaEventCreateWithFlags(&made, cudaEventDisableTiming));
    // pool_long's length, seen first on both streams (so that a launch whose timing a loaded host loses
    // is still known to last that long): on the weights, before the story.
    for (cudaStream_t s : {s1, s2, s1, s2}) {
        pool_long<<<1, 32, 0, s>>>(weights);
        CK_LAUNCH();
        CK(cudaStreamSynchronize(s));
    }
    float* a = pool_alloc(s1);
    cudaStream_t user = otherStream ? s2 : s1;
    CK(cudaEventRecord(made, s1));
    CK(cudaStreamWaitEvent(user, made, 0));
    pool_long<<<1, 32, 0, user>>>(a);
    CK_LAUNCH();
    CK(cudaFreeAsync(a, user));
    float* b = pool_alloc(s1);  // s2 has not reached a's free yet; s1 reaches b after a's free
    pool_long<<<1, 32, 0, s1>>>(b);
    CK_LAUNCH();
    CK(cudaFreeAsync(b, s1));
    CK(cudaDeviceSynchronize());
    CK(cudaFree(weights));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaEventDestroy(made));
    std::printf("truth pool mode=%s device_peak_bytes=%zu pool_bytes=%zu weights_bytes=%zu\n", otherStream ? "other" : "same",
                kWeightsBytes + (otherStream ? 2 : 1) * kPoolBytes, kPoolBytes, kWeightsBytes);
    return 0;
}

int main(int argc, char** argv)
{
    if (argc > 1 && std::strcmp(argv[1], "pool_other") == 0) return pool_story(true);
    if (argc > 1 && std::strcmp(argv[1], "pool_same") == 0) return pool_story(false);
    void* pinned = pin_staging();
    float* managed = make_managed();
    float* weights = load_weights();
    std::memset(pinned, 0, kPinnedBytes);
    CK(cudaMemcpy(weights, pinned, kPinnedBytes, cudaMemcpyHostToDevice));

    for (int i = 0; i < kSteps; ++i) run_step(i);
    CK(cudaDeviceSynchronize());
    managed[0] = 1.f;

    const bool failed_right = too_big();

    CK(cudaFreeHost(pinned));
    g_pinned_now -= kPinnedBytes;
    CK(cudaFree(weights));
    released(kSiteWeights, kWeightsBytes);
    CK(cudaDeviceSynchronize());

    std::printf("truth totals device_allocations=%d device_releases=%d device_allocated_bytes=%zu"
                " device_peak_bytes=%zu peak_step=%d device_leaked_bytes=%zu leak_allocations=%d"
                " failed_allocations=%d failed_bytes=%zu in_use_at_failure_bytes=%zu"
                " pinned_allocations=%d pinned_peak_bytes=%zu pinned_end_bytes=%zu"
                " managed_allocations=%d managed_end_bytes=%zu\n",
                g_allocations, g_releases, g_allocated_bytes, g_peak, g_peak_step, g_now.total(),
                g_now.allocations[kSiteLeak], g_failed, g_failed_bytes, g_at_failure.total(),
                g_pinned_allocations, g_pinned_peak, g_pinned_now, g_managed_allocations, g_managed_now);
    print_holding("at_peak", g_at_peak);
    print_holding("at_failure", g_at_failure);
    print_holding("live_at_end", g_now);
    if (!failed_right) {
        std::fprintf(stderr, "gpu_memory: too_big's allocation did not fail with cudaErrorMemoryAllocation\n");
        return 1;
    }
    return 0;  // the leaks and the managed buffer are still held: the report's live_at_end
}
