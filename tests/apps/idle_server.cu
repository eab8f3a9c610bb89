// idle_server: a server's loop on the GPU, with a known pause between its requests (tests/report/idle_server.sh).
//   idle_server idle   kRequests requests; between two, the thread blocks in poll() for kPauseMs (waiting for
//                      the next request: the process uses no CPU): the GPU idles, but nothing starves it
//   idle_server busy   the same, but between two requests the thread computes for kPauseMs (preparing the
//                      next batch on the CPU): the GPU is starved by that work
// Each request: an input copy, kLaunches small kernels, an output copy (a blocking cudaMemcpy). It prints
// "truth idle_server mode=... requests=N pause_ns=P" (what it did, never from a run of gpuspy).
#include "app_common.h"

#include <poll.h>

#include <chrono>
#include <cstring>

constexpr int kRequests = 8, kLaunches = 20, kPauseMs = 40, kN = 1 << 14;

__global__ void serve(float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

static volatile double g_sink;

// The CPU work a batch needs: kPauseMs of arithmetic on this thread.
static void prepare()
{
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kPauseMs);
    double x = 1;
    while (std::chrono::steady_clock::now() < end)
        for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
    g_sink = x;
}

int main(int argc, char** argv)
{
    const bool busy = argc > 1 && std::strcmp(argv[1], "busy") == 0;
    if (argc > 1 && !busy && std::strcmp(argv[1], "idle") != 0) {
        std::fprintf(stderr, "usage: idle_server [idle|busy]\n");
        return 2;
    }
    static float host[kN];
    float* dev = nullptr;
    CK(cudaMalloc(&dev, sizeof host));
    for (int r = 0; r < kRequests; ++r) {
        if (r) {
            if (busy) prepare();
            else poll(nullptr, 0, kPauseMs);  // blocked until the next request
        }
        CK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
        for (int k = 0; k < kLaunches; ++k) {
            serve<<<kN / 256, 256>>>(dev, kN);
            CK_LAUNCH();
        }
        CK(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    }
    CK(cudaFree(dev));
    std::printf("truth idle_server mode=%s requests=%d pause_ns=%lld\n", busy ? "busy" : "idle", kRequests,
                (long long)kPauseMs * 1000000);
    return 0;
}
