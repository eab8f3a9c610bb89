// multithread_streams: several host threads, each with its own stream and pinned buffers, each copying in,
// launching and copying out in a loop, and synchronizing its own stream once at the end.
#include "app_common.h"

#include <thread>
#include <vector>

constexpr int kThreadCount = 4;
constexpr int kItersPerThread = 50;
constexpr int kElems = 1 << 16;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kThreads = 256;
constexpr int kBlocks = kElems / kThreads;

__global__ void thread_work(float* x, int n, int who)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 0.5f + float(who);
}

static void worker(int who)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* host = nullptr;
    float* dev = nullptr;
    CK(cudaMallocHost(&host, kBytes));
    CK(cudaMalloc(&dev, kBytes));
    for (int i = 0; i < kElems; ++i) host[i] = float(i);
    for (int it = 0; it < kItersPerThread; ++it) {
        CK(cudaMemcpyAsync(dev, host, kBytes, cudaMemcpyHostToDevice, s));
        thread_work<<<kBlocks, kThreads, 0, s>>>(dev, kElems, who);
        CK_LAUNCH();
        CK(cudaMemcpyAsync(host, dev, kBytes, cudaMemcpyDeviceToHost, s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dev));
    CK(cudaFreeHost(host));
}

int main()
{
    // Initialize the runtime once before the threads race to do it.
    CK(cudaFree(nullptr));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreadCount; ++t) threads.emplace_back(worker, t);
    for (auto& t : threads) t.join();
    return 0;
}
