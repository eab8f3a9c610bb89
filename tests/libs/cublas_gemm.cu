// cublas_gemm: a cuBLAS SGEMM and a cuBLASLt matmul (with its heuristic query), as an inference server makes
// them. Checked against the simulated driver's trace: the input copies, the GEMM kernels, the result copies.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <vector>

#include "lib_common.h"

constexpr int kN = 64;                                  // square matrices kN x kN
constexpr long kMatrixBytes = kN * kN * sizeof(float);  // one matrix
constexpr long kHalfBytes = kN * kN * 2;                // one half-precision matrix

int main()
{
    std::vector<float> host(kN * kN, 1.0f);
    float *a, *b, *c;
    CK(cudaMalloc(&a, kMatrixBytes));
    CK(cudaMalloc(&b, kMatrixBytes));
    CK(cudaMalloc(&c, kMatrixBytes));
    CK(cudaMemcpy(a, host.data(), kMatrixBytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, host.data(), kMatrixBytes, cudaMemcpyHostToDevice));

    cublasHandle_t blas;
    CK_STATUS(cublasCreate(&blas));
    const float one = 1.0f, zero = 0.0f;
    CK_STATUS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a, kN, b, kN, &zero, c, kN));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(host.data(), c, kMatrixBytes, cudaMemcpyDeviceToHost));
    std::printf("cublasSgemm %dx%d: done\n", kN, kN);

    // TF32 tensor cores for FP32 data: cuBLAS caches a workspace per stream (context export table slots 51, 39).
    CK_STATUS(cublasSetMathMode(blas, CUBLAS_TF32_TENSOR_OP_MATH));
    CK_STATUS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a, kN, b, kN, &zero, c, kN));
    CK_STATUS(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
    CK(cudaDeviceSynchronize());
    std::printf("cublasSgemm tf32 %dx%d: done\n", kN, kN);

    // Half precision with float accumulation: the tensor-core path servers take.
    void *ha, *hc;
    CK(cudaMalloc(&ha, kHalfBytes));
    CK(cudaMalloc(&hc, kHalfBytes));
    CK(cudaMemset(ha, 0, kHalfBytes));
    CK_STATUS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, ha, CUDA_R_16F, kN, ha, CUDA_R_16F, kN,
                           &zero, hc, CUDA_R_16F, kN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CK(cudaDeviceSynchronize());
    std::printf("cublasGemmEx f16 %dx%d: done\n", kN, kN);

    cublasLtHandle_t lt;
    CK_STATUS(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t op;
    CK_STATUS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t layout;
    CK_STATUS(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, kN, kN, kN));
    cublasLtMatmulPreference_t pref;
    CK_STATUS(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t heuristic = {};
    int found = 0;
    CK_STATUS(cublasLtMatmulAlgoGetHeuristic(lt, op, layout, layout, layout, layout, pref, 1, &heuristic, &found));
    if (found < 1) {
        std::fprintf(stderr, "cublasLtMatmulAlgoGetHeuristic found no algorithm\n");
        return 1;
    }
    CK_STATUS(cublasLtMatmul(lt, op, &one, a, layout, b, layout, &zero, c, layout, c, layout, &heuristic.algo,
                             nullptr, 0, 0));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(host.data(), c, kMatrixBytes, cudaMemcpyDeviceToHost));
    std::printf("cublasLtMatmul %dx%d: done\n", kN, kN);

    CK_STATUS(cublasLtMatmulPreferenceDestroy(pref));
    CK_STATUS(cublasLtMatrixLayoutDestroy(layout));
    CK_STATUS(cublasLtMatmulDescDestroy(op));
    CK_STATUS(cublasLtDestroy(lt));
    CK_STATUS(cublasDestroy(blas));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaFree(ha));
    CK(cudaFree(hc));
    return 0;
}
