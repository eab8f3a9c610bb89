// alloc_free_loop: cudaMalloc/cudaFree around each kernel in a loop (each cudaFree waits for the kernel that
// used the buffer), then the stream-ordered cudaMallocAsync/cudaFreeAsync version of the same loop.
#include "app_common.h"

constexpr int kIters = 100;
constexpr int kAsyncIters = 100;
constexpr int kElems = 1 << 16;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kThreads = 256;
constexpr int kBlocks = kElems / kThreads;

__global__ void fill_buffer(float* x, int n, float v)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}

int main()
{
    for (int it = 0; it < kIters; ++it) {
        float* x = nullptr;
        CK(cudaMalloc(&x, kBytes));
        fill_buffer<<<kBlocks, kThreads>>>(x, kElems, float(it));
        CK_LAUNCH();
        CK(cudaFree(x));
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int it = 0; it < kAsyncIters; ++it) {
        float* x = nullptr;
        CK(cudaMallocAsync(&x, kBytes, s));
        fill_buffer<<<kBlocks, kThreads, 0, s>>>(x, kElems, float(it));
        CK_LAUNCH();
        CK(cudaFreeAsync(x, s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    return 0;
}
