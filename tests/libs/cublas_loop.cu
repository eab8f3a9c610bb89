// cublas_loop: a loop whose host work starves the GPU, beside cuBLAS's own host work (issue 28). Each of
// kSteps steps spins kPrepNs on the host (the user's "preprocessing"), then runs one SGEMM and waits for
// it: the GPU idles through every spin, which gpu-starved must count. Mode "handle-in-loop" also creates and
// destroys the cuBLAS handle in every step (the anti-pattern): cuBLAS's own host work inside cublasCreate
// leaves the GPU idle too, but that is the library's, not the user's preprocessing, and must not be counted
// as the user's. Kernels do not run on the simulated driver: the program prints what it did.
#include <cublas_v2.h>

#include <chrono>
#include <cstring>

#include "lib_common.h"

constexpr int kN = 64;
constexpr int kSteps = 30;
constexpr long kPrepNs = 3000000;  // 3 ms of host work per step

static void prepare()
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kPrepNs);
    while (std::chrono::steady_clock::now() < until) {
    }
}

int main(int argc, char** argv)
{
    const bool handleInLoop = argc > 1 && std::strcmp(argv[1], "handle-in-loop") == 0;
    float *a, *c;
    CK(cudaMalloc(&a, kN * kN * sizeof(float)));
    CK(cudaMalloc(&c, kN * kN * sizeof(float)));
    CK(cudaMemset(a, 0, kN * kN * sizeof(float)));
    const float one = 1.0f, zero = 0.0f;
    cublasHandle_t blas = nullptr;
    if (!handleInLoop) CK_STATUS(cublasCreate(&blas));
    for (int step = 0; step < kSteps; ++step) {
        prepare();
        if (handleInLoop) CK_STATUS(cublasCreate(&blas));
        CK_STATUS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a, kN, a, kN, &zero, c, kN));
        CK(cudaDeviceSynchronize());
        if (handleInLoop) CK_STATUS(cublasDestroy(blas));
    }
    if (!handleInLoop) CK_STATUS(cublasDestroy(blas));
    std::printf("%d steps of %ld ns host work and one SGEMM%s: done\n", kSteps, kPrepNs,
                handleInLoop ? ", a handle made in each" : "");
    return 0;
}
