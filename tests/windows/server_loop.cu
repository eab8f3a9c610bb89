// server_loop: a server-like loop whose iterations are bracketed the way servers bracket the ones they
// want profiled, with known launch counts inside each bracket (tests/windows/windows_test.py checks
// gpuspy's capture windows against them).
//   server_loop brackets   warm-up, 3 cudaProfilerStart/Stop brackets (4, 8, 12 launches), NVTX "step"
//                          ranges (3, 6, 9 launches), "step" in domain "dom" (5), an empty "idle" range;
//                          10 launches outside every bracket between them
//   server_loop timed MS   one launch and a 1 ms sleep per iteration for MS milliseconds (--delay, --duration)
//   server_loop serve MS   the same, until a file named by argv[3] exists or MS pass (ctl start/stop)
//   server_loop gap        kGapRounds cudaProfilerStart/Stop brackets of kGapLaunches launches on one
//                          stream; between two brackets, outside both, gap_long on that stream and no
//                          sync: each bracket after the first opens while the stream still works through
//                          the dormant gap, and its first launch queues behind gap_long (SIMCUDA_KERNEL_NS
//                          makes it long)
#include "../apps/app_common.h"

#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <unistd.h>

__global__ void step_kernel(int* x)
{
    if (threadIdx.x == 0) *x += 1;
}

__global__ void gap_long(int* x)
{
    if (threadIdx.x == 0) *x += 2;
}

constexpr int kGapRounds = 8;
constexpr int kGapLaunches = 3;

int gap(int* x)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int r = 0; r < kGapRounds; ++r) {
        CK(cudaProfilerStart());
        for (int i = 0; i < kGapLaunches; ++i) {
            step_kernel<<<1, 32, 0, s>>>(x);
            CK_LAUNCH();
        }
        CK(cudaStreamSynchronize(s));
        CK(cudaProfilerStop());
        gap_long<<<1, 32, 0, s>>>(x);  // dormant: neither timed nor recorded, only counted
        CK_LAUNCH();
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    return 0;
}

void launch(int* x, int n)
{
    for (int i = 0; i < n; ++i) {
        step_kernel<<<1, 32>>>(x);
        CK_LAUNCH();
    }
    CK(cudaDeviceSynchronize());
}

int loop(int* x, long ms, const char* stopFile)
{
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
        if (stopFile && access(stopFile, F_OK) == 0) break;
        launch(x, 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
}

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "brackets";
    int* x = nullptr;
    CK(cudaMalloc(&x, sizeof(int)));
    if (strcmp(mode, "timed") == 0 || strcmp(mode, "serve") == 0) {
        const long ms = argc > 2 ? atol(argv[2]) : 1000;
        loop(x, ms, argc > 3 ? argv[3] : nullptr);
        CK(cudaFree(x));
        return 0;
    }
    if (strcmp(mode, "gap") == 0) {
        gap(x);
        CK(cudaFree(x));
        return 0;
    }
    launch(x, 10);  // warm-up, outside every bracket
    for (int w = 1; w <= 3; ++w) {
        CK(cudaProfilerStart());
        launch(x, 4 * w);
        CK(cudaProfilerStop());
        launch(x, 10);
    }
    for (int w = 1; w <= 3; ++w) {
        nvtxRangePushA("step");
        launch(x, 3 * w);
        nvtxRangePop();
        nvtxRangePushA("other");
        launch(x, 10);
        nvtxRangePop();
    }
    nvtxDomainHandle_t dom = nvtxDomainCreateA("dom");
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "step";
    nvtxDomainRangePushEx(dom, &a);
    launch(x, 5);
    nvtxDomainRangePop(dom);
    nvtxRangePushA("idle");  // no CUDA call inside: an empty window
    nvtxRangePop();
    launch(x, 10);
    CK(cudaFree(x));
    return 0;
}
