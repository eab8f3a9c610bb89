// memset_2d: the memset and 2D copy family: cudaMemset, cudaMemsetAsync, cudaMemset2D, cudaMemcpy2D from
// pageable memory and cudaMemcpy2DAsync to pinned memory.
#include "app_common.h"

#include <vector>

constexpr size_t kBytes = 1 << 20;    // linear buffer, memset and memset async
constexpr size_t kWidth = 1000;       // bytes per row of the 2D region
constexpr size_t kHeight = 300;       // rows
constexpr size_t kBytes2D = kWidth * kHeight;

int main()
{
    unsigned char* lin = nullptr;
    CK(cudaMalloc(&lin, kBytes));
    unsigned char* pitched = nullptr;
    size_t pitch = 0;
    CK(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, kWidth, kHeight));
    std::vector<unsigned char> pageable(kBytes2D, 7);
    unsigned char* pinned = nullptr;
    CK(cudaMallocHost(&pinned, kBytes2D));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    CK(cudaMemset(lin, 0, kBytes));
    CK(cudaMemsetAsync(lin, 1, kBytes, s));
    CK(cudaMemset2D(pitched, pitch, 0, kWidth, kHeight));
    CK(cudaMemcpy2D(pitched, pitch, pageable.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));
    CK(cudaMemcpy2DAsync(pinned, kWidth, pitched, pitch, kWidth, kHeight, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));

    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(pinned));
    CK(cudaFree(pitched));
    CK(cudaFree(lin));
    return 0;
}
