// host_work: work the host does around the GPU that is not kernel work, one shape per case, each bad
// shape beside its fixed one, for the report tests (tests/report, expect/host_work.<case>.txt). Kernel
// durations come from the simulated driver's SIMCUDA_KERNEL_NS (tests/apps/sim_env.txt): hw_step 50 us,
// hw_wait 500 us.
//
//   host_funcs     kSteps x (hw_step, then a cudaLaunchHostFunc callback on the same stream): host
//                  functions, not kernels; the kernels are not launch-bound
//   loop_allocs    kSteps x (cudaMalloc, hw_step, cudaFree): allocations repeated in the loop
//   setup_allocs   kBuffers cudaMalloc before the loop, kSteps x hw_step, kBuffers cudaFree after it:
//                  one-time setup and teardown, not the hot path (the fix of loop_allocs)
//   setup_uploads  the same, each buffer filled from the host as it is allocated (cudaMalloc, cudaMemcpy,
//                  kBuffers times): still setup, its buffers live until teardown
//   spin           kSteps x (hw_wait, cudaEventRecord, poll cudaEventQuery until it is done): a busy-wait
//   blocking_wait  the same with cudaEventSynchronize on a cudaEventBlockingSync event (the fix of spin)
#include "app_common.h"

#include <string>
#include <vector>

constexpr int kSteps = 100;
constexpr int kBuffers = 32;
constexpr size_t kBufferBytes = 1 << 16;

__global__ void hw_step(float* p) { if (threadIdx.x == 0) p[blockIdx.x] += 1.f; }
__global__ void hw_wait(float* p) { if (threadIdx.x == 0) p[blockIdx.x] *= 2.f; }

static void CUDART_CB countCall(void* user) { ++*static_cast<int*>(user); }

static void hostFuncs(cudaStream_t s, float* d)
{
    int calls = 0;
    for (int i = 0; i < kSteps; ++i) {
        hw_step<<<64, 128, 0, s>>>(d);
        CK_LAUNCH();
        CK(cudaLaunchHostFunc(s, countCall, &calls));
    }
    CK(cudaStreamSynchronize(s));
    std::printf("host_work host_funcs: %d callbacks\n", calls);
}

static void loopAllocs(cudaStream_t s, float*)
{
    for (int i = 0; i < kSteps; ++i) {
        float* buf = nullptr;
        CK(cudaMalloc(&buf, kBufferBytes));
        hw_step<<<64, 128, 0, s>>>(buf);
        CK_LAUNCH();
        CK(cudaFree(buf));
    }
    CK(cudaStreamSynchronize(s));
}

static void setupAllocs(cudaStream_t s, float*)
{
    std::vector<float*> bufs(kBuffers);
    for (float*& b : bufs) CK(cudaMalloc(&b, kBufferBytes));
    for (int i = 0; i < kSteps; ++i) {
        hw_step<<<64, 128, 0, s>>>(bufs[i % kBuffers]);
        CK_LAUNCH();
    }
    CK(cudaStreamSynchronize(s));
    for (float* b : bufs) CK(cudaFree(b));
}

static void setupUploads(cudaStream_t s, float*)
{
    std::vector<float> host(kBufferBytes / sizeof(float), 1.f);
    std::vector<float*> bufs(kBuffers);
    for (float*& b : bufs) {
        CK(cudaMalloc(&b, kBufferBytes));
        CK(cudaMemcpy(b, host.data(), kBufferBytes, cudaMemcpyHostToDevice));
    }
    for (int i = 0; i < kSteps; ++i) {
        hw_step<<<64, 128, 0, s>>>(bufs[i % kBuffers]);
        CK_LAUNCH();
    }
    CK(cudaStreamSynchronize(s));
    for (float* b : bufs) CK(cudaFree(b));
}

static void spin(cudaStream_t s, float* d)
{
    cudaEvent_t done;
    CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    long polls = 0;
    for (int i = 0; i < kSteps; ++i) {
        hw_wait<<<64, 128, 0, s>>>(d);
        CK_LAUNCH();
        CK(cudaEventRecord(done, s));
        cudaError_t rc;
        while ((rc = cudaEventQuery(done)) == cudaErrorNotReady) ++polls;
        CK(rc);
    }
    CK(cudaEventDestroy(done));
    std::printf("host_work spin: %s\n", polls > kSteps ? "polled" : "few polls");
}

static void blockingWait(cudaStream_t s, float* d)
{
    cudaEvent_t done;
    CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming | cudaEventBlockingSync));
    for (int i = 0; i < kSteps; ++i) {
        hw_wait<<<64, 128, 0, s>>>(d);
        CK_LAUNCH();
        CK(cudaEventRecord(done, s));
        CK(cudaEventSynchronize(done));
    }
    CK(cudaEventDestroy(done));
    std::printf("host_work blocking_wait: waited\n");
}

int main(int argc, char** argv)
{
    const std::string mode = argc > 1 ? argv[1] : "";
    void (*run)(cudaStream_t, float*) = mode == "host_funcs" ? hostFuncs : mode == "loop_allocs" ? loopAllocs
                                      : mode == "setup_allocs" ? setupAllocs : mode == "setup_uploads" ? setupUploads
                                      : mode == "spin" ? spin
                                      : mode == "blocking_wait" ? blockingWait : nullptr;
    if (!run) {
        std::fprintf(stderr, "usage: %s host_funcs|loop_allocs|setup_allocs|setup_uploads|spin|blocking_wait\n", argv[0]);
        return 2;
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* d = nullptr;
    CK(cudaMalloc(&d, kBufferBytes));
    CK(cudaMemset(d, 0, kBufferBytes));
    run(s, d);
    CK(cudaDeviceSynchronize());
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
    std::printf("host_work %s: done\n", mode.c_str());
    return 0;
}
