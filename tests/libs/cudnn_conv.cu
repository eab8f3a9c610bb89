// cudnn_conv: a cuDNN 2D convolution forward pass (NCHW float) with the algorithm cuDNN's heuristics pick and
// its workspace, followed by a ReLU activation, as a vision model's layer runs.
#include <cudnn.h>

#include "lib_common.h"

constexpr int kN = 1;  // input: kN x kC x kH x kW
constexpr int kC = 16;
constexpr int kH = 32;
constexpr int kW = 32;
constexpr int kK = 32;  // filters: kK of kC x kR x kS
constexpr int kR = 3;
constexpr int kS = 3;
constexpr long kInputBytes = kN * kC * kH * kW * sizeof(float);
constexpr long kOutputBytes = kN * kK * kH * kW * sizeof(float);  // padding 1, stride 1: same size

int main()
{
    cudnnHandle_t dnn;
    CK_STATUS(cudnnCreate(&dnn));
    cudnnTensorDescriptor_t in, out;
    cudnnFilterDescriptor_t filt;
    cudnnConvolutionDescriptor_t conv;
    CK_STATUS(cudnnCreateTensorDescriptor(&in));
    CK_STATUS(cudnnCreateTensorDescriptor(&out));
    CK_STATUS(cudnnCreateFilterDescriptor(&filt));
    CK_STATUS(cudnnCreateConvolutionDescriptor(&conv));
    CK_STATUS(cudnnSetTensor4dDescriptor(in, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kN, kC, kH, kW));
    CK_STATUS(cudnnSetFilter4dDescriptor(filt, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, kK, kC, kR, kS));
    CK_STATUS(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    int n, c, h, w;
    CK_STATUS(cudnnGetConvolution2dForwardOutputDim(conv, in, filt, &n, &c, &h, &w));
    CK_STATUS(cudnnSetTensor4dDescriptor(out, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));

    float *x, *wts, *y;
    CK(cudaMalloc(&x, kInputBytes));
    CK(cudaMalloc(&wts, kK * kC * kR * kS * sizeof(float)));
    CK(cudaMalloc(&y, kOutputBytes));
    CK(cudaMemset(x, 0, kInputBytes));

    cudnnConvolutionFwdAlgoPerf_t perf[4];
    int found = 0;
    CK_STATUS(cudnnGetConvolutionForwardAlgorithm_v7(dnn, in, filt, conv, out, 4, &found, perf));
    if (found < 1) {
        std::fprintf(stderr, "cudnnGetConvolutionForwardAlgorithm_v7 found no algorithm\n");
        return 1;
    }
    size_t wsBytes = 0;
    CK_STATUS(cudnnGetConvolutionForwardWorkspaceSize(dnn, in, filt, conv, out, perf[0].algo, &wsBytes));
    void* ws = nullptr;
    if (wsBytes) CK(cudaMalloc(&ws, wsBytes));
    const float one = 1.0f, zero = 0.0f;
    CK_STATUS(cudnnConvolutionForward(dnn, &one, in, x, filt, wts, conv, perf[0].algo, ws, wsBytes, &zero, out, y));
    cudnnActivationDescriptor_t relu;
    CK_STATUS(cudnnCreateActivationDescriptor(&relu));
    CK_STATUS(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    CK_STATUS(cudnnActivationForward(dnn, relu, &one, out, y, &zero, out, y));
    CK(cudaDeviceSynchronize());
    std::printf("cudnn conv %dx%dx%d -> %dx%dx%d (%dx%d filters) + relu: done\n", kC, kH, kW, c, h, w, kR, kS);

    CK_STATUS(cudnnDestroyActivationDescriptor(relu));
    CK_STATUS(cudnnDestroyConvolutionDescriptor(conv));
    CK_STATUS(cudnnDestroyFilterDescriptor(filt));
    CK_STATUS(cudnnDestroyTensorDescriptor(in));
    CK_STATUS(cudnnDestroyTensorDescriptor(out));
    CK_STATUS(cudnnDestroy(dnn));
    CK(cudaFree(x));
    CK(cudaFree(wts));
    CK(cudaFree(y));
    if (ws) CK(cudaFree(ws));
    return 0;
}
