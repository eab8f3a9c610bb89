// Smoke test: a small CUDA runtime program that must run to completion on the simulated driver with NVIDIA's cudart.
// Kernels do not execute on the simulated driver, so only data moved by copies and memsets is checked.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                                        \
    do {                                                                                                \
        cudaError_t e_ = (x);                                                                           \
        if (e_ != cudaSuccess) {                                                                        \
            fprintf(stderr, "smoke: %s:%d %s -> %d %s\n", __FILE__, __LINE__, #x, static_cast<int>(e_), \
                    cudaGetErrorString(e_));                                                            \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

#define EXPECT(cond)                                                              \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "smoke: %s:%d expected %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

__global__ void axpy(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

static void CUDART_CB hostCallback(void* flag) { *static_cast<int*>(flag) = 1; }

int main()
{
    const int n = 1 << 16;
    const size_t bytes = n * sizeof(float);
    int ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev));
    EXPECT(ndev >= 1);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    EXPECT(strstr(prop.name, "gpuspy simulated GPU") != nullptr);

    std::vector<float> hx(n), hy(n, 0.f);
    for (int i = 0; i < n; i++) hx[i] = static_cast<float>(i);
    float *dx, *dy, *pinned;
    CHECK(cudaMalloc(&dx, bytes));
    CHECK(cudaMalloc(&dy, bytes));
    CHECK(cudaMallocHost(&pinned, bytes));
    CHECK(cudaMemcpy(dx, hx.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, dx, bytes, cudaMemcpyDeviceToDevice));

    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventRecord(e0, s));
    axpy<<<(n + 255) / 256, 256, 0, s>>>(2.0f, dx, dy, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(pinned, dy, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaStreamSynchronize(s));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    EXPECT(ms > 0);
    EXPECT(pinned[7] == 7.f);

    // memset, default stream, pageable async copy (which must be synchronous)
    CHECK(cudaMemset(dy, 0, bytes));
    axpy<<<(n + 255) / 256, 256>>>(3.0f, dx, dy, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(hy.data(), dy, bytes, cudaMemcpyDeviceToHost, 0));
    EXPECT(hy[5] == 0.f);
    CHECK(cudaDeviceSynchronize());

    // pointer attributes
    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, dx));
    EXPECT(attr.type == cudaMemoryTypeDevice);
    CHECK(cudaPointerGetAttributes(&attr, pinned));
    EXPECT(attr.type == cudaMemoryTypeHost);

    // managed, stream-ordered allocation, host registration, host function
    float* managed;
    CHECK(cudaMallocManaged(&managed, bytes));
    CHECK(cudaMemcpy(managed, dx, bytes, cudaMemcpyDefault));
    EXPECT(managed[9] == 9.f);
    float* pooled;
    CHECK(cudaMallocAsync(&pooled, bytes, s));
    CHECK(cudaMemsetAsync(pooled, 0, bytes, s));
    CHECK(cudaFreeAsync(pooled, s));
    CHECK(cudaHostRegister(hy.data(), bytes, cudaHostRegisterDefault));
    CHECK(cudaMemcpyAsync(hy.data(), dx, bytes, cudaMemcpyDeviceToHost, s));
    int called = 0;
    CHECK(cudaLaunchHostFunc(s, hostCallback, &called));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(called == 1);
    EXPECT(hy[11] == 11.f);
    CHECK(cudaHostUnregister(hy.data()));

    // graph capture and replay
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(dy, 0, bytes, s));
    axpy<<<(n + 255) / 256, 256, 0, s>>>(1.0f, dx, dy, n);
    CHECK(cudaMemcpyAsync(pinned, dx, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamEndCapture(s, &graph));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    EXPECT(nodes == 3);
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    memset(pinned, 0, bytes);
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(pinned[3] == 3.f);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));

    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(managed));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));

    // With SMOKE_EXPECT_DEVICES=N (and SIMCUDA_DEVICES=N): cudart must see all N devices (its integrity check
    // covers each one) and work on every one of them, peer copies included. SMOKE_EXPECT_PHYSICAL=p0,p1,...
    // (with CUDA_VISIBLE_DEVICES): device d is physical device p_d (PCI bus 0x41 + p_d), else device d.
    if (const char* want = getenv("SMOKE_EXPECT_DEVICES")) {
        EXPECT(ndev == atoi(want));
        std::vector<int> physical(ndev);
        const char* list = getenv("SMOKE_EXPECT_PHYSICAL");
        for (int d = 0; d < ndev; ++d) {
            physical[d] = list ? atoi(list) : d;
            if (list && (list = strchr(list, ','))) ++list;
        }
        std::vector<float*> per(ndev);
        for (int d = 0; d < ndev; ++d) {
            CHECK(cudaSetDevice(d));
            cudaDeviceProp p;
            CHECK(cudaGetDeviceProperties(&p, d));
            EXPECT(p.pciBusID == 0x41 + physical[d]);
            CHECK(cudaMalloc(&per[d], bytes));
            CHECK(cudaMemcpy(per[d], hx.data(), bytes, cudaMemcpyHostToDevice));
            axpy<<<(n + 255) / 256, 256>>>(1.0f, per[d], per[d], n);
            CHECK(cudaGetLastError());
        }
        for (int d = 1; d < ndev; ++d) CHECK(cudaMemcpyPeer(per[d], d, per[d - 1], d - 1, bytes));
        for (int d = 0; d < ndev; ++d) {
            CHECK(cudaSetDevice(d));
            CHECK(cudaDeviceSynchronize());
            float v = -1;
            CHECK(cudaMemcpy(&v, per[d] + 13, sizeof v, cudaMemcpyDeviceToHost));
            EXPECT(v == 13.f);
            CHECK(cudaFree(per[d]));
        }
    }
    printf("smoke: ok\n");
    return 0;
}
