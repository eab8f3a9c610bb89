// nccl_allreduce: one process drives 2 devices with ncclCommInitAll and sums a buffer across them with
// ncclAllReduce, as single-node tensor-parallel inference does. Needs the simulated NVML beside the simulated
// driver (SIMCUDA_DEVICES=2).
#include <nccl.h>

#include "lib_common.h"

constexpr int kDevices = 2;
constexpr int kCount = 1 << 16;  // floats per device
constexpr long kBytes = kCount * sizeof(float);

int main()
{
    int devs[kDevices] = {0, 1};
    ncclComm_t comms[kDevices];
    CK_STATUS(ncclCommInitAll(comms, kDevices, devs));
    float* buf[kDevices];
    cudaStream_t streams[kDevices];
    for (int d = 0; d < kDevices; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaMalloc(&buf[d], kBytes));
        CK(cudaMemset(buf[d], 0, kBytes));
        CK(cudaStreamCreate(&streams[d]));
    }
    CK_STATUS(ncclGroupStart());
    for (int d = 0; d < kDevices; ++d)
        CK_STATUS(ncclAllReduce(buf[d], buf[d], kCount, ncclFloat, ncclSum, comms[d], streams[d]));
    CK_STATUS(ncclGroupEnd());
    for (int d = 0; d < kDevices; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaStreamSynchronize(streams[d]));
    }
    std::printf("ncclAllReduce of %d floats over %d devices: done\n", kCount, kDevices);
    for (int d = 0; d < kDevices; ++d) {
        CK_STATUS(ncclCommDestroy(comms[d]));
        CK(cudaSetDevice(d));
        CK(cudaStreamDestroy(streams[d]));
        CK(cudaFree(buf[d]));
    }
    return 0;
}
