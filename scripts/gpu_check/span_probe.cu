// span_probe.cu: how close gpuspy's GPU span of a kernel comes to the kernel's real duration on a real
// GPU. Each kernel spins for a fixed time measured on the GPU's own clock (%globaltimer) and writes
// the start and end it saw; the program launches each kernel on an idle stream (a synchronisation
// before every launch: the case where an event recorded before the launch completes early) and
// back-to-back behind a long kernel (events placed well). It prints, per kernel, the median duration
// seen from inside the kernel, the median span between CUDA events recorded around the launch
// in both cases, and the host cost of cudaLaunchKernel and cudaEventRecord. gpu-check.sh runs it
// plainly and under gpuspy, and compares gpuspy's median GPU time per kernel with these.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

constexpr int kRuns = 200;

__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// MODE 0: launched on an idle stream; MODE 1: queued back-to-back. Separate names so the report
// keeps the two cases apart.
template <int NS, int MODE>
__global__ void spin(unsigned long long* out)
{
    const unsigned long long t0 = globaltimer();
    unsigned long long t = t0;
    while (t - t0 < (unsigned long long)NS) t = globaltimer();
    if (threadIdx.x == 0) {
        out[0] = t0;
        out[1] = t;
    }
}

__global__ void hold(unsigned long long ns)
{
    const unsigned long long t0 = globaltimer();
    while (globaltimer() - t0 < ns) {
    }
}

static long long nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

template <int NS>
static void probe(cudaStream_t s, unsigned long long* dev, unsigned long long* host)
{
    std::vector<double> inside[2], events[2], launchHost, recordHost;
    std::vector<cudaEvent_t> ev(2 * kRuns);
    for (auto& e : ev) CK(cudaEventCreate(&e));
    // Idle stream: nothing queued before each launch.
    for (int i = 0; i < kRuns; ++i) {
        CK(cudaStreamSynchronize(s));
        long long a = nowNs();
        CK(cudaEventRecord(ev[2 * i], s));
        long long b = nowNs();
        spin<NS, 0><<<1, 32, 0, s>>>(dev + 2 * i);
        long long c = nowNs();
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev[2 * i + 1], s));
        recordHost.push_back(double(b - a));
        launchHost.push_back(double(c - b));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(host, dev, 2 * kRuns * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    for (int i = 0; i < kRuns; ++i) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        events[0].push_back(ms * 1e6);
        inside[0].push_back(double(host[2 * i + 1] - host[2 * i]));
    }
    // Busy stream: a long kernel first, then every launch queued behind the one before.
    hold<<<1, 1, 0, s>>>(20ull * kRuns * (NS + 5000));
    for (int i = 0; i < kRuns; ++i) {
        CK(cudaEventRecord(ev[2 * i], s));
        spin<NS, 1><<<1, 32, 0, s>>>(dev + 2 * i);
        CK(cudaEventRecord(ev[2 * i + 1], s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(host, dev, 2 * kRuns * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    for (int i = 0; i < kRuns; ++i) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        events[1].push_back(ms * 1e6);
        inside[1].push_back(double(host[2 * i + 1] - host[2 * i]));
    }
    for (auto& e : ev) CK(cudaEventDestroy(e));
    std::printf("{\"spin_ns\":%d,\"inside_idle_ns\":%.0f,\"inside_busy_ns\":%.0f,\"event_idle_ns\":%.0f,"
                "\"event_busy_ns\":%.0f,\"launch_host_ns\":%.0f,\"event_record_host_ns\":%.0f}\n",
                NS, median(inside[0]), median(inside[1]), median(events[0]), median(events[1]),
                median(launchHost), median(recordHost));
}

int main()
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned long long* dev = nullptr;
    CK(cudaMalloc(&dev, 2 * kRuns * sizeof(unsigned long long)));
    unsigned long long* host = nullptr;
    CK(cudaMallocHost(&host, 2 * kRuns * sizeof(unsigned long long)));
    probe<2000>(s, dev, host);
    probe<10000>(s, dev, host);
    probe<50000>(s, dev, host);
    CK(cudaFreeHost(host));
    CK(cudaFree(dev));
    CK(cudaStreamDestroy(s));
    return 0;
}
