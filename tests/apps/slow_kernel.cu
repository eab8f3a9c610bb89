// slow_kernel: kernels named slow_spin behind each kind of host wait (device, stream and event
// synchronization). The test gives slow_spin a long simulated duration with SIMCUDA_KERNEL_NS and checks
// that each wait lasted at least that long. Each wait has kSlowPerWait kernels queued before it, so the host
// time spent launching cannot eat into the one kernel the wait must cover.
#include "app_common.h"

constexpr int kThreads = 32;
constexpr int kSlowPerWait = 3;

__global__ void slow_spin(int* x)
{
    x[threadIdx.x] += 1;
}

static void queueSlow(int* x, cudaStream_t s)
{
    for (int i = 0; i < kSlowPerWait; ++i) {
        slow_spin<<<1, kThreads, 0, s>>>(x);
        CK_LAUNCH();
    }
}

int main()
{
    int* x = nullptr;
    CK(cudaMalloc(&x, kThreads * sizeof(int)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t done;
    CK(cudaEventCreate(&done));

    queueSlow(x, 0);
    CK(cudaDeviceSynchronize());

    queueSlow(x, s);
    CK(cudaStreamSynchronize(s));

    queueSlow(x, s);
    CK(cudaEventRecord(done, s));
    CK(cudaEventSynchronize(done));

    CK(cudaEventDestroy(done));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(x));
    return 0;
}
