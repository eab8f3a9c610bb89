// sync_every_launch: a synchronization after every launch: cudaDeviceSynchronize after each kernel on the
// default stream, then cudaStreamSynchronize after each kernel on a created stream.
#include "app_common.h"

constexpr int kLaunchesPerPhase = 200;
constexpr int kThreads = 128;
constexpr int kBlocks = 8;

__global__ void step_kernel(float* x)
{
    x[blockIdx.x * blockDim.x + threadIdx.x] *= 0.5f;
}

int main()
{
    float* x = nullptr;
    CK(cudaMalloc(&x, kBlocks * kThreads * sizeof(float)));
    for (int i = 0; i < kLaunchesPerPhase; ++i) {
        step_kernel<<<kBlocks, kThreads>>>(x);
        CK_LAUNCH();
        CK(cudaDeviceSynchronize());
    }
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int i = 0; i < kLaunchesPerPhase; ++i) {
        step_kernel<<<kBlocks, kThreads, 0, s>>>(x);
        CK_LAUNCH();
        CK(cudaStreamSynchronize(s));
    }
    CK(cudaStreamDestroy(s));
    CK(cudaFree(x));
    return 0;
}
