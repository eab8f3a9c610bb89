// timeline_loops: launch-heavy loops in the sampled regime (tens of thousands of operations, most of
// them untimed under the default GPU-timing budget), one shape per mode, for the device timeline's
// report tests (tests/report: busy %, idle, the GPU's share of each kind of wait, savings). Kernel
// durations come from the simulated driver's SIMCUDA_KERNEL_NS (tests/report/CMakeLists.txt):
//   work20 20 us, gemm_big 5 ms, tiny_op 2 us, req_kernel 8 us, short_op 3 us.
//
//   gpu_bound    20,000 x work20 on the default stream, cudaDeviceSynchronize every 500 (GPU-bound)
//   long_tiny    40 steps: gemm_big, then 200 x tiny_op queued behind it, cudaStreamSynchronize
//   requests     1,000 requests: pinned HtoD, 30 x req_kernel, pinned DtoH, stream sync, 60 us of host work
//   two_streams  500 chunks: HtoD on a copy stream, an event, the compute stream waits for it, 4 kernels
//   threads      4 threads, each on its own stream: 2,500 x short_op with 10 us of host work every 10,
//                a stream sync every 100
//   host_bound   15,000 x tiny_op with 6 us of host work between launches, cudaDeviceSynchronize every 1,000
//   pipeline     1,000 steps on three streams joined by events: 64 KiB pinned HtoD on a copy-in stream, 2 x
//                work20 on a compute stream after it, 64 KiB DtoH on a copy-out stream after that; a sync of
//                the copy-out stream every 100 (the copy streams' busy time is their copies' alone)
#include "app_common.h"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

__global__ void work20(float* p) { if (threadIdx.x == 0) p[blockIdx.x] += 1.f; }
__global__ void gemm_big(float* p) { if (threadIdx.x == 0) p[blockIdx.x] *= 2.f; }
__global__ void tiny_op(float* p) { if (threadIdx.x == 0) p[0] += 1.f; }
__global__ void req_kernel(float* p, int i) { if (threadIdx.x == 0) p[i % 64] += 1.f; }
__global__ void short_op(float* p) { if (threadIdx.x == 0) p[1] += 1.f; }

// The host's own work between CUDA calls (preprocessing a request): a busy wait, as real work would be.
static void hostWork(int us)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    while (std::chrono::steady_clock::now() < until) {
    }
}

static void gpuBound(float* d)
{
    for (int i = 0; i < 20000; ++i) {
        work20<<<64, 128>>>(d);
        CK_LAUNCH();
        if ((i + 1) % 500 == 0) CK(cudaDeviceSynchronize());
    }
}

static void longTiny(float* d)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int step = 0; step < 40; ++step) {
        gemm_big<<<256, 256, 0, s>>>(d);
        CK_LAUNCH();
        for (int i = 0; i < 200; ++i) {
            tiny_op<<<1, 32, 0, s>>>(d);
            CK_LAUNCH();
        }
        CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamDestroy(s));
}

static void requests(float* d)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    const size_t bytes = 256 << 10;
    float* in = nullptr;
    float* out = nullptr;
    CK(cudaMallocHost(&in, bytes));
    CK(cudaMallocHost(&out, bytes));
    std::memset(in, 0, bytes);
    float* din = nullptr;
    CK(cudaMalloc(&din, bytes));
    for (int r = 0; r < 1000; ++r) {
        hostWork(60);
        CK(cudaMemcpyAsync(din, in, bytes, cudaMemcpyHostToDevice, s));
        for (int k = 0; k < 30; ++k) {
            req_kernel<<<32, 128, 0, s>>>(d, k);
            CK_LAUNCH();
        }
        CK(cudaMemcpyAsync(out, din, bytes, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
    }
    CK(cudaFree(din));
    CK(cudaFreeHost(in));
    CK(cudaFreeHost(out));
    CK(cudaStreamDestroy(s));
}

static void twoStreams(float* d)
{
    cudaStream_t copy, compute;
    CK(cudaStreamCreate(&copy));
    CK(cudaStreamCreate(&compute));
    const size_t bytes = 1 << 20;
    float* host = nullptr;
    CK(cudaMallocHost(&host, bytes));
    std::memset(host, 0, bytes);
    float* dev = nullptr;
    CK(cudaMalloc(&dev, bytes));
    std::vector<cudaEvent_t> ready(8);
    for (cudaEvent_t& e : ready) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (int c = 0; c < 500; ++c) {
        cudaEvent_t e = ready[c % ready.size()];
        CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, copy));
        CK(cudaEventRecord(e, copy));
        CK(cudaStreamWaitEvent(compute, e, 0));
        for (int k = 0; k < 4; ++k) {
            req_kernel<<<32, 128, 0, compute>>>(d, k);
            CK_LAUNCH();
        }
        if ((c + 1) % 50 == 0) CK(cudaStreamSynchronize(compute));
    }
    CK(cudaDeviceSynchronize());
    for (cudaEvent_t e : ready) CK(cudaEventDestroy(e));
    CK(cudaFree(dev));
    CK(cudaFreeHost(host));
    CK(cudaStreamDestroy(copy));
    CK(cudaStreamDestroy(compute));
}

static void pipeline(float* d)
{
    constexpr size_t bytes = 64 << 10;
    cudaStream_t in, compute, out;
    CK(cudaStreamCreateWithFlags(&in, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&out, cudaStreamNonBlocking));
    float *hostIn = nullptr, *hostOut = nullptr, *dev = nullptr;
    CK(cudaMallocHost(&hostIn, bytes));
    CK(cudaMallocHost(&hostOut, bytes));
    std::memset(hostIn, 0, bytes);
    CK(cudaMalloc(&dev, bytes));
    std::vector<cudaEvent_t> loaded(4), computed(4);
    for (cudaEvent_t& e : loaded) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (cudaEvent_t& e : computed) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (int i = 0; i < 1000; ++i) {
        cudaEvent_t l = loaded[i % loaded.size()], c = computed[i % computed.size()];
        CK(cudaMemcpyAsync(dev, hostIn, bytes, cudaMemcpyHostToDevice, in));
        CK(cudaEventRecord(l, in));
        CK(cudaStreamWaitEvent(compute, l, 0));
        for (int k = 0; k < 2; ++k) {
            work20<<<64, 128, 0, compute>>>(d);
            CK_LAUNCH();
        }
        CK(cudaEventRecord(c, compute));
        CK(cudaStreamWaitEvent(out, c, 0));
        CK(cudaMemcpyAsync(hostOut, dev, bytes, cudaMemcpyDeviceToHost, out));
        if ((i + 1) % 100 == 0) CK(cudaStreamSynchronize(out));
    }
    CK(cudaDeviceSynchronize());
    for (cudaEvent_t e : loaded) CK(cudaEventDestroy(e));
    for (cudaEvent_t e : computed) CK(cudaEventDestroy(e));
    CK(cudaFree(dev));
    CK(cudaFreeHost(hostIn));
    CK(cudaFreeHost(hostOut));
    CK(cudaStreamDestroy(in));
    CK(cudaStreamDestroy(compute));
    CK(cudaStreamDestroy(out));
}

static void threads(float* d)
{
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
        pool.emplace_back([d] {
            cudaStream_t s;
            CK(cudaStreamCreate(&s));
            for (int i = 0; i < 2500; ++i) {
                short_op<<<1, 32, 0, s>>>(d);
                CK_LAUNCH();
                if ((i + 1) % 10 == 0) hostWork(10);
                if ((i + 1) % 100 == 0) CK(cudaStreamSynchronize(s));
            }
            CK(cudaStreamDestroy(s));
        });
    for (std::thread& t : pool) t.join();
}

static void hostBound(float* d)
{
    for (int i = 0; i < 15000; ++i) {
        tiny_op<<<1, 32>>>(d);
        CK_LAUNCH();
        hostWork(6);
        if ((i + 1) % 1000 == 0) CK(cudaDeviceSynchronize());
    }
}

int main(int argc, char** argv)
{
    const std::string mode = argc > 1 ? argv[1] : "";
    void (*run)(float*) = mode == "gpu_bound" ? gpuBound : mode == "long_tiny" ? longTiny : mode == "requests" ? requests
                        : mode == "two_streams" ? twoStreams : mode == "threads" ? threads : mode == "host_bound" ? hostBound : mode == "pipeline" ? pipeline
                                                                                                              : nullptr;
    if (!run) {
        std::fprintf(stderr, "usage: %s gpu_bound|long_tiny|requests|two_streams|threads|host_bound|pipeline\n", argv[0]);
        return 2;
    }
    float* d = nullptr;
    CK(cudaMalloc(&d, 1 << 16));
    CK(cudaMemset(d, 0, 1 << 16));
    run(d);
    CK(cudaDeviceSynchronize());
    CK(cudaFree(d));
    std::printf("timeline_loops %s: done\n", mode.c_str());
    return 0;
}
