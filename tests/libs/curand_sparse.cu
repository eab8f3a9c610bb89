// curand_sparse: cuRAND fills a vector with normal random numbers, then cuSPARSE multiplies a CSR matrix by it
// (SpMV with its buffer-size query), as a sampler or a sparse solver step does.
#include <cuda_runtime.h>
#include <curand.h>
#include <cusparse.h>

#include <vector>

#include "lib_common.h"

constexpr int kRows = 256;          // square CSR matrix, kRows x kRows
constexpr int kPerRow = 4;          // nonzeros per row
constexpr int kNnz = kRows * kPerRow;
constexpr long kVectorBytes = kRows * sizeof(float);

int main()
{
    float *x, *y, *values;
    int *rowPtr, *colInd;
    CK(cudaMalloc(&x, kVectorBytes));
    CK(cudaMalloc(&y, kVectorBytes));
    CK(cudaMalloc(&values, kNnz * sizeof(float)));
    CK(cudaMalloc(&rowPtr, (kRows + 1) * sizeof(int)));
    CK(cudaMalloc(&colInd, kNnz * sizeof(int)));

    curandGenerator_t gen;
    CK_STATUS(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CK_STATUS(curandSetPseudoRandomGeneratorSeed(gen, 1234));
    CK_STATUS(curandGenerateNormal(gen, x, kRows, 0.0f, 1.0f));
    CK_STATUS(curandGenerateUniform(gen, values, kNnz));
    CK(cudaDeviceSynchronize());
    std::printf("curand: %d normals, %d uniforms\n", kRows, kNnz);

    std::vector<int> hostRows(kRows + 1), hostCols(kNnz);
    for (int r = 0; r <= kRows; ++r) hostRows[r] = r * kPerRow;
    for (int i = 0; i < kNnz; ++i) hostCols[i] = (i / kPerRow + i % kPerRow) % kRows;
    CK(cudaMemcpy(rowPtr, hostRows.data(), (kRows + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(colInd, hostCols.data(), kNnz * sizeof(int), cudaMemcpyHostToDevice));

    cusparseHandle_t sp;
    CK_STATUS(cusparseCreate(&sp));
    cusparseSpMatDescr_t a;
    cusparseDnVecDescr_t vx, vy;
    CK_STATUS(cusparseCreateCsr(&a, kRows, kRows, kNnz, rowPtr, colInd, values, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CK_STATUS(cusparseCreateDnVec(&vx, kRows, x, CUDA_R_32F));
    CK_STATUS(cusparseCreateDnVec(&vy, kRows, y, CUDA_R_32F));
    const float one = 1.0f, zero = 0.0f;
    size_t bufferBytes = 0;
    CK_STATUS(cusparseSpMV_bufferSize(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vx, &zero, vy, CUDA_R_32F,
                                      CUSPARSE_SPMV_ALG_DEFAULT, &bufferBytes));
    void* buffer;
    CK(cudaMalloc(&buffer, bufferBytes ? bufferBytes : 1));
    CK_STATUS(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vx, &zero, vy, CUDA_R_32F,
                           CUSPARSE_SPMV_ALG_DEFAULT, buffer));
    CK(cudaDeviceSynchronize());
    std::vector<float> result(kRows);
    CK(cudaMemcpy(result.data(), y, kVectorBytes, cudaMemcpyDeviceToHost));
    std::printf("cusparseSpMV %dx%d, %d nonzeros: done\n", kRows, kRows, kNnz);

    CK_STATUS(cusparseDestroySpMat(a));
    CK_STATUS(cusparseDestroyDnVec(vx));
    CK_STATUS(cusparseDestroyDnVec(vy));
    CK_STATUS(cusparseDestroy(sp));
    CK_STATUS(curandDestroyGenerator(gen));
    for (void* p : {(void*)x, (void*)y, (void*)values, (void*)rowPtr, (void*)colInd, buffer}) CK(cudaFree(p));
    return 0;
}
