// two_devices: work on two devices selected with cudaSetDevice (run with SIMCUDA_DEVICES=2), then a peer
// copy from device 0 to device 1, then peer copies queued on a stream of device 1 while device 0 is
// current (their work runs on device 1, and only device 1's events can time it: issue 28), the stream
// synchronized from device 0 and destroyed; a 3D peer copy and a unified-address copy between the devices
// are peer copies too.
#include "app_common.h"

constexpr int kDevices = 2;
constexpr int kLaunchesPerDevice = 10;
constexpr int kElems = 1 << 16;
constexpr size_t kBytes = kElems * sizeof(float);
constexpr int kPeerCopies = 1;
constexpr int kPeerAsyncCopies = 20;
constexpr int kOtherPeerCopies = 2;
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
    cudaStream_t onDevice1;
    CK(cudaSetDevice(1));
    CK(cudaStreamCreateWithFlags(&onDevice1, cudaStreamNonBlocking));
    CK(cudaSetDevice(0));
    for (int c = 0; c < kPeerAsyncCopies; ++c) CK(cudaMemcpyPeerAsync(buf[1], 1, buf[0], 0, kBytes, onDevice1));
    // Two more copies between the devices, named by their pointers and contexts: a 3D peer copy and a
    // plain cudaMemcpyAsync between the two devices' memory (unified addressing).
    static_assert(kOtherPeerCopies == 2, "the two copies below");
    cudaMemcpy3DPeerParms peer = {};
    peer.srcPtr = make_cudaPitchedPtr(buf[0], kBytes, kElems, 1);
    peer.srcDevice = 0;
    peer.dstPtr = make_cudaPitchedPtr(buf[1], kBytes, kElems, 1);
    peer.dstDevice = 1;
    peer.extent = make_cudaExtent(kBytes, 1, 1);
    CK(cudaMemcpy3DPeerAsync(&peer, onDevice1));
    CK(cudaMemcpyAsync(buf[1], buf[0], kBytes, cudaMemcpyDeviceToDevice, onDevice1));
    CK(cudaStreamSynchronize(onDevice1));
    CK(cudaStreamDestroy(onDevice1));
    for (int d = 0; d < kDevices; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceSynchronize());
        CK(cudaFree(buf[d]));
    }
    return 0;
}
