// nccl_collectives: one process drives 4 devices with ncclCommInitAll, as a single-node tensor-parallel
// server does, and runs per step one group of three collectives on every rank (all-reduce, all-gather and
// reduce-scatter: NCCL fuses a group's operations on one communicator into one kernel), then a ring of
// point-to-point sends and receives; at the end one broadcast. Sizes differ per operation so that each
// one's bytes can be told apart. Needs the simulated NVML beside the simulated driver (SIMCUDA_DEVICES=4).
#include <nccl.h>

#include <cstdlib>

#include "lib_common.h"

constexpr int kDevices = 4;
constexpr size_t kReduceCount = 1 << 18;   // floats all-reduced per rank (1 MiB)
constexpr size_t kGatherCount = 1 << 14;   // floats each rank contributes to the all-gather (64 KiB)
constexpr size_t kScatterCount = 1 << 15;  // floats each rank receives from the reduce-scatter (128 KiB)
constexpr size_t kRingCount = 1 << 12;     // floats each rank sends to the next one (16 KiB)
constexpr size_t kBroadcastCount = 1 << 16;

int main(int argc, char** argv)
{
    const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
    int devs[kDevices] = {0, 1, 2, 3};
    ncclComm_t comms[kDevices];
    CK_STATUS(ncclCommInitAll(comms, kDevices, devs));
    float *reduce[kDevices], *gather[kDevices], *scatter[kDevices], *ring[kDevices];
    cudaStream_t streams[kDevices];
    for (int d = 0; d < kDevices; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaMalloc(&reduce[d], kReduceCount * sizeof(float)));
        CK(cudaMalloc(&gather[d], kGatherCount * kDevices * sizeof(float)));
        CK(cudaMalloc(&scatter[d], kScatterCount * kDevices * sizeof(float)));
        CK(cudaMalloc(&ring[d], 2 * kRingCount * sizeof(float)));
        CK(cudaStreamCreate(&streams[d]));
    }
    for (int s = 0; s < steps; ++s) {
        CK_STATUS(ncclGroupStart());
        for (int d = 0; d < kDevices; ++d) {
            CK_STATUS(ncclAllReduce(reduce[d], reduce[d], kReduceCount, ncclFloat, ncclSum, comms[d], streams[d]));
            CK_STATUS(ncclAllGather(gather[d] + d * kGatherCount, gather[d], kGatherCount, ncclFloat, comms[d], streams[d]));
            CK_STATUS(ncclReduceScatter(scatter[d], scatter[d] + d * kScatterCount, kScatterCount, ncclFloat, ncclSum, comms[d],
                                        streams[d]));
        }
        CK_STATUS(ncclGroupEnd());
        CK_STATUS(ncclGroupStart());
        for (int d = 0; d < kDevices; ++d) {
            CK_STATUS(ncclSend(ring[d], kRingCount, ncclFloat, (d + 1) % kDevices, comms[d], streams[d]));
            CK_STATUS(ncclRecv(ring[d] + kRingCount, kRingCount, ncclFloat, (d + kDevices - 1) % kDevices, comms[d], streams[d]));
        }
        CK_STATUS(ncclGroupEnd());
        for (int d = 0; d < kDevices; ++d) {
            CK(cudaSetDevice(d));
            CK(cudaStreamSynchronize(streams[d]));
        }
    }
    CK_STATUS(ncclGroupStart());
    for (int d = 0; d < kDevices; ++d)
        CK_STATUS(ncclBroadcast(reduce[d], reduce[d], kBroadcastCount, ncclFloat, 2, comms[d], streams[d]));
    CK_STATUS(ncclGroupEnd());
    for (int d = 0; d < kDevices; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaStreamSynchronize(streams[d]));
    }
    std::printf("%d steps of all-reduce + all-gather + reduce-scatter and a send/recv ring over %d devices, one broadcast: done\n",
                steps, kDevices);
    for (int d = 0; d < kDevices; ++d) {
        CK_STATUS(ncclCommDestroy(comms[d]));
        CK(cudaSetDevice(d));
        CK(cudaStreamDestroy(streams[d]));
        CK(cudaFree(reduce[d]));
        CK(cudaFree(gather[d]));
        CK(cudaFree(scatter[d]));
        CK(cudaFree(ring[d]));
    }
    return 0;
}
