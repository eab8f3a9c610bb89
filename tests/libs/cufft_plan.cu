// cufft_plan: a 1D complex-to-complex FFT plan, executed forward and inverse, and a 2D real-to-complex one,
// as signal-processing and spectral code uses cuFFT. cuFFT loads its kernels as modules and lists their
// functions through the driver, so the simulated driver must read the module images.
#include <cufft.h>

#include "lib_common.h"

constexpr int kN = 1024;   // 1D transform length
constexpr int kRows = 64;  // 2D real-to-complex transform: kRows x kCols
constexpr int kCols = 64;
constexpr long kComplexBytes = kN * 2 * sizeof(float);  // kN cufftComplex

int main()
{
    cufftComplex* data;
    CK(cudaMalloc(&data, kComplexBytes));
    CK(cudaMemset(data, 0, kComplexBytes));
    cufftHandle plan;
    CK_STATUS(cufftPlan1d(&plan, kN, CUFFT_C2C, 1));
    CK_STATUS(cufftExecC2C(plan, data, data, CUFFT_FORWARD));
    CK_STATUS(cufftExecC2C(plan, data, data, CUFFT_INVERSE));
    CK(cudaDeviceSynchronize());
    CK_STATUS(cufftDestroy(plan));
    std::printf("cufft 1D C2C %d: forward and inverse done\n", kN);

    float* real;
    cufftComplex* spectrum;
    CK(cudaMalloc(&real, kRows * kCols * sizeof(float)));
    CK(cudaMalloc(&spectrum, kRows * (kCols / 2 + 1) * sizeof(cufftComplex)));
    cufftHandle plan2d;
    CK_STATUS(cufftPlan2d(&plan2d, kRows, kCols, CUFFT_R2C));
    CK_STATUS(cufftExecR2C(plan2d, real, spectrum));
    CK(cudaDeviceSynchronize());
    CK_STATUS(cufftDestroy(plan2d));
    std::printf("cufft 2D R2C %dx%d: done\n", kRows, kCols);

    CK(cudaFree(data));
    CK(cudaFree(real));
    CK(cudaFree(spectrum));
    return 0;
}
