// nccl_straggler: one process, one thread per device (4), each thread its rank of one communicator
// (ncclCommInitAll), as a tensor-parallel server's workers run: per step a work kernel, then an all-reduce,
// then a wait for its stream. One rank (2) is made the straggler:
//   even      every rank alike
//   late      rank 2's thread does 60 ms of host work before each step's all-reduce (its host is late)
//   slowgpu   rank 2's work kernel runs longer than the others' (its GPU is late; SIMCUDA_KERNEL_NS sets it)
// Needs the simulated NVML (SIMCUDA_DEVICES=4) and, for the ranks' kernels to wait for each other as on a
// GPU, SIMCUDA_NCCL_RANKS=4.
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "lib_common.h"

constexpr int kDevices = 4;
constexpr int kLateRank = 2;
constexpr size_t kCount = 1 << 18;  // floats all-reduced per step (1 MiB)

__global__ void step_work(float* x) { x[threadIdx.x] += 1.0f; }
__global__ void slow_work(float* x) { x[threadIdx.x] *= 0.5f; }

void spin(std::chrono::microseconds d)
{
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
    }
}

int main(int argc, char** argv)
{
    const std::string mode = argc > 1 ? argv[1] : "even";
    const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
    if (mode != "even" && mode != "late" && mode != "slowgpu") {
        std::fprintf(stderr, "usage: %s even|late|slowgpu [steps]\n", argv[0]);
        return 2;
    }
    int devs[kDevices] = {0, 1, 2, 3};
    ncclComm_t comms[kDevices];
    CK_STATUS(ncclCommInitAll(comms, kDevices, devs));
    std::vector<std::thread> ranks;
    for (int d = 0; d < kDevices; ++d)
        ranks.emplace_back([&, d] {
            CK(cudaSetDevice(d));
            float* buf = nullptr;
            CK(cudaMalloc(&buf, kCount * sizeof(float)));
            cudaStream_t stream;
            CK(cudaStreamCreate(&stream));
            for (int s = 0; s < steps; ++s) {
                if (mode == "slowgpu" && d == kLateRank)
                    slow_work<<<1, 32, 0, stream>>>(buf);
                else
                    step_work<<<1, 32, 0, stream>>>(buf);
                CK(cudaGetLastError());
                if (mode == "late" && d == kLateRank) spin(std::chrono::microseconds(60000));
                CK_STATUS(ncclAllReduce(buf, buf, kCount, ncclFloat, ncclSum, comms[d], stream));
                CK(cudaStreamSynchronize(stream));
            }
            CK(cudaStreamDestroy(stream));
            CK(cudaFree(buf));
        });
    for (std::thread& t : ranks) t.join();
    std::printf("%s: %d steps of work + all-reduce on %d ranks, one thread each: done\n", mode.c_str(), steps, kDevices);
    for (int d = 0; d < kDevices; ++d) CK_STATUS(ncclCommDestroy(comms[d]));
    return 0;
}
