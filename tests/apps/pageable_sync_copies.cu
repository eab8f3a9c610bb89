// pageable_sync_copies: synchronous cudaMemcpy from and to pageable (malloc) memory in a loop, with one small
// kernel between the copies: the pattern where every copy blocks the host.
#include "app_common.h"

#include <vector>

constexpr int kIters = 100;
constexpr int kElems = 1 << 18;
constexpr size_t kBytes = kElems * sizeof(float);  // per copy, each direction
constexpr int kThreads = 256;
constexpr int kBlocks = kElems / kThreads;

__global__ void touch(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

int main()
{
    std::vector<float> host(kElems, 1.0f);
    float* dev = nullptr;
    CK(cudaMalloc(&dev, kBytes));
    for (int it = 0; it < kIters; ++it) {
        CK(cudaMemcpy(dev, host.data(), kBytes, cudaMemcpyHostToDevice));
        touch<<<kBlocks, kThreads>>>(dev, kElems);
        CK_LAUNCH();
        CK(cudaMemcpy(host.data(), dev, kBytes, cudaMemcpyDeviceToHost));
    }
    CK(cudaFree(dev));
    return 0;
}
