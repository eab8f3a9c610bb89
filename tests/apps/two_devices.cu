// two_devices: work on two devices selected with cudaSetDevice (run with SIMCUDA_DEVICES=2), then a peer
// copy from device 0 to device 1.
#include "app_common.h"

constexpr int kDevices = 2;
constexpr int kLaunchesPerDevice = 10;
constexpr int kElems = 1 << 16;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kPeerCopies = 1;
constexpr int kThreads = 256;
constexpr int kBlocks = kElems / kThreads;

__global__ void device_work(float* x, int n, int dev)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += float(dev);
}

int main()
{
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < kDevices) {
        std::fprintf(stderr, "two_devices: needs %d devices, found %d (set SIMCUDA_DEVICES=%d)\n", kDevices, count,
                     kDevices);
        return 1;
    }
    static float host[kElems];
    for (int i = 0; i < kElems; ++i) host[i] = float(i);
    float* buf[kDevices];
    for (int d = 0; d < kDevices; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaMalloc(&buf[d], kBytes));
        CK(cudaMemcpy(buf[d], host, kBytes, cudaMemcpyHostToDevice));
        for (int k = 0; k < kLaunchesPerDevice; ++k) {
            device_work<<<kBlocks, kThreads>>>(buf[d], kElems, d);
            CK_LAUNCH();
        }
    }
    for (int c = 0; c < kPeerCopies; ++c) CK(cudaMemcpyPeer(buf[1], 1, buf[0], 0, kBytes));
    for (int d = 0; d < kDevices; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceSynchronize());
        CK(cudaFree(buf[d]));
    }
    return 0;
}
