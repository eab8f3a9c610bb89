// cusolver_eig: cuSOLVER's dense LU solve and symmetric eigensolver, as a numerical code calls them in a loop
// over its matrices. Each exported entry point here tail-jumps into code the library's symbol table does
// not name (cusolverDnSsyevd is `jmp` into an unnamed function): the report must still name the call the
// user wrote, and the copies and waits cuSOLVER makes inside it are cuSOLVER's.
#include <cusolverDn.h>

#include "lib_common.h"

constexpr int kN = 32;       // matrices kN x kN
constexpr int kSolves = 6;   // LU factorizations and solves, one per loop turn
constexpr int kEigens = 4;   // eigendecompositions, one per loop turn
constexpr long kMatrixBytes = kN * kN * sizeof(float);

int main()
{
    cusolverDnHandle_t handle;
    CK_STATUS(cusolverDnCreate(&handle));
    float *a, *b, *w, *work;
    int *pivots, *info;
    CK(cudaMalloc(&a, kMatrixBytes));
    CK(cudaMalloc(&b, kN * sizeof(float)));
    CK(cudaMalloc(&w, kN * sizeof(float)));
    CK(cudaMalloc(&pivots, kN * sizeof(int)));
    CK(cudaMalloc(&info, sizeof(int)));
    int luWork = 0, eigWork = 0;
    CK_STATUS(cusolverDnSgetrf_bufferSize(handle, kN, kN, a, kN, &luWork));
    CK_STATUS(cusolverDnSsyevd_bufferSize(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, kN, a, kN, w, &eigWork));
    CK(cudaMalloc(&work, sizeof(float) * (luWork > eigWork ? luWork : eigWork)));

    for (int i = 0; i < kSolves; ++i) {
        CK(cudaMemset(a, 0, kMatrixBytes));
        CK_STATUS(cusolverDnSgetrf(handle, kN, kN, a, kN, work, pivots, info));
        CK_STATUS(cusolverDnSgetrs(handle, CUBLAS_OP_N, kN, 1, a, kN, pivots, b, kN, info));
    }
    CK(cudaDeviceSynchronize());
    std::printf("cusolverDnSgetrf + Sgetrs %dx%d: %d solves done\n", kN, kN, kSolves);

    for (int i = 0; i < kEigens; ++i) {
        CK(cudaMemset(a, 0, kMatrixBytes));
        CK_STATUS(cusolverDnSsyevd(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, kN, a, kN, w, work, eigWork, info));
    }
    CK(cudaDeviceSynchronize());
    std::printf("cusolverDnSsyevd %dx%d: %d eigendecompositions done\n", kN, kN, kEigens);

    CK_STATUS(cusolverDnDestroy(handle));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(w));
    CK(cudaFree(pivots));
    CK(cudaFree(info));
    CK(cudaFree(work));
    return 0;
}
