// demo_infer: the README demo: an inference-like loop that does what the profiler should call out: each step
// copies its batch from pageable memory with a synchronous cudaMemcpy, runs many tiny layer kernels, copies
// the result back and synchronizes the device.
#include "app_common.h"

#include <vector>

constexpr int kSteps = 50;
constexpr int kLayers = 6;
constexpr int kGemmTilesPerLayer = 8;
constexpr int kBatch = 32;
constexpr int kHidden = 1024;
constexpr int kClasses = 1000;
constexpr size_t kBatchBytes = kBatch * kHidden * sizeof(float);
constexpr size_t kResultBytes = kBatch * kClasses * sizeof(float);
constexpr int kThreads = 256;
constexpr int kActBlocks = kBatch * kHidden / kThreads;
constexpr int kTileBlocks = kActBlocks / kGemmTilesPerLayer;

__global__ void layer_norm(float* act, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) act[i] = act[i] * 0.99f;
}

__global__ void gemm_tile(const float* in, const float* weights, float* out, int tile, int n)
{
    const int i = tile * gridDim.x * blockDim.x + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * weights[i % kHidden];
}

__global__ void relu(float* act, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && act[i] < 0.0f) act[i] = 0.0f;
}

__global__ void softmax(const float* act, float* probs, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) probs[i] = act[i % (kBatch * kHidden)];
}

int main()
{
    const int actElems = kBatch * kHidden;
    const int resultElems = kBatch * kClasses;
    std::vector<float> batch(actElems), result(resultElems);
    float *act = nullptr, *tmp = nullptr, *weights = nullptr, *probs = nullptr;
    CK(cudaMalloc(&act, kBatchBytes));
    CK(cudaMalloc(&tmp, kBatchBytes));
    CK(cudaMalloc(&weights, kHidden * sizeof(float)));
    CK(cudaMalloc(&probs, kResultBytes));
    CK(cudaMemset(weights, 0, kHidden * sizeof(float)));

    for (int step = 0; step < kSteps; ++step) {
        for (int i = 0; i < actElems; ++i) batch[i] = float((i + step) % 17) - 8.0f;
        CK(cudaMemcpy(act, batch.data(), kBatchBytes, cudaMemcpyHostToDevice));
        for (int layer = 0; layer < kLayers; ++layer) {
            layer_norm<<<kActBlocks, kThreads>>>(act, actElems);
            CK_LAUNCH();
            for (int tile = 0; tile < kGemmTilesPerLayer; ++tile) {
                gemm_tile<<<kTileBlocks, kThreads>>>(act, weights, tmp, tile, actElems);
                CK_LAUNCH();
            }
            relu<<<kActBlocks, kThreads>>>(tmp, actElems);
            CK_LAUNCH();
            std::swap(act, tmp);
        }
        softmax<<<(resultElems + kThreads - 1) / kThreads, kThreads>>>(act, probs, resultElems);
        CK_LAUNCH();
        CK(cudaMemcpy(result.data(), probs, kResultBytes, cudaMemcpyDeviceToHost));
        CK(cudaDeviceSynchronize());
    }
    CK(cudaFree(act));
    CK(cudaFree(tmp));
    CK(cudaFree(weights));
    CK(cudaFree(probs));
    return 0;
}
