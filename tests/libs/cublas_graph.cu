// cublas_graph: a cuBLAS SGEMM captured into a CUDA graph and the graph replayed, as an inference server's
// decode loop replays one captured step: the GEMM's kernels run as graph nodes, once per replay.
#include <cublas_v2.h>

#include "lib_common.h"

constexpr int kN = 64;                                  // square matrices kN x kN
constexpr long kMatrixBytes = kN * kN * sizeof(float);  // one matrix
constexpr int kReplays = 10;

int main()
{
    float *a, *c;
    CK(cudaMalloc(&a, kMatrixBytes));
    CK(cudaMalloc(&c, kMatrixBytes));
    CK(cudaMemset(a, 0, kMatrixBytes));
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t blas;
    CK_STATUS(cublasCreate(&blas));
    CK_STATUS(cublasSetStream(blas, stream));
    const float one = 1.0f, zero = 0.0f;
    // One call outside the capture first: cuBLAS sets up its workspace and kernels before capture, as servers warm up.
    CK_STATUS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a, kN, a, kN, &zero, c, kN));
    CK(cudaStreamSynchronize(stream));

    cudaGraph_t graph;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CK_STATUS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a, kN, a, kN, &zero, c, kN));
    CK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < kReplays; ++i) CK(cudaGraphLaunch(exec, stream));
    CK(cudaStreamSynchronize(stream));
    std::printf("captured cublasSgemm %dx%d, replayed %d times: done\n", kN, kN, kReplays);

    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK_STATUS(cublasDestroy(blas));
    CK(cudaStreamDestroy(stream));
    CK(cudaFree(a));
    CK(cudaFree(c));
    return 0;
}
