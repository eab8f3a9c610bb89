// nccl_tp: one rank of a tensor-parallel job, one process per GPU as vLLM/SGLang run their workers, joined by
// NCCL (ncclGetUniqueId on rank 0, shared with the others, ncclCommInitRank). Started by tp_launch, which sets
// RANK, LOCAL_RANK and WORLD_SIZE as torchrun does and passes the id: rank 0 writes it to the descriptor in
// TP_ID_OUT_FD, every other rank reads it from the descriptor in TP_ID_IN_FD. The rank uses GPU LOCAL_RANK (device 0
// when CUDA_VISIBLE_DEVICES is set: its launcher gave it one GPU, `tp_launch --visible-devices`) and
// runs `steps` steps of `layers` layers, each a work kernel then an all-reduce of its activations, then waits
// for its stream at the step's end.
//   even   every rank alike
//   late   rank 2 does 100 ms of host work before each layer's launches (its host is late at every all-reduce)
// usage: nccl_tp even|late [steps] [layers]
// Needs the simulated NVML (SIMCUDA_DEVICES >= WORLD_SIZE) and, for the ranks' kernels to wait for each other
// across processes as on a GPU, SIMCUDA_NCCL_RANKS=WORLD_SIZE with SIMCUDA_NCCL_JOB (tests/simcuda/README.md).
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lib_common.h"

constexpr int kLateRank = 2;
constexpr int kSteps = 4;   // by default
constexpr int kLayers = 2;  // by default
constexpr int kLateUs = 100000;  // late: rank 2's host work before each layer
constexpr size_t kCount = 1 << 18;  // floats all-reduced per layer (1 MiB)

__global__ void layer_work(float* x) { x[threadIdx.x] += 1.0f; }

namespace {

int envInt(const char* name)
{
    const char* v = std::getenv(name);
    if (!v || !*v) {
        std::fprintf(stderr, "nccl_tp: %s is not set (start it with tp_launch)\n", name);
        std::exit(2);
    }
    return std::atoi(v);
}

void spin(std::chrono::microseconds d)
{
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
    }
}

// The id travels over the launcher's pipes, whole or not at all.
void shareId(int rank, ncclUniqueId* id)
{
    char* p = reinterpret_cast<char*>(id);
    size_t done = 0;
    if (rank == 0) {
        const int fd = envInt("TP_ID_OUT_FD");
        while (done < sizeof(*id)) {
            const ssize_t n = write(fd, p + done, sizeof(*id) - done);
            if (n <= 0) {
                std::perror("nccl_tp: writing the NCCL id");
                std::exit(1);
            }
            done += size_t(n);
        }
        close(fd);
        return;
    }
    const int fd = envInt("TP_ID_IN_FD");
    while (done < sizeof(*id)) {
        const ssize_t n = read(fd, p + done, sizeof(*id) - done);
        if (n <= 0) {
            std::fprintf(stderr, "nccl_tp: rank %d got %zu of the NCCL id's %zu bytes\n", rank, done, sizeof(*id));
            std::exit(1);
        }
        done += size_t(n);
    }
    close(fd);
}

}  // namespace

int main(int argc, char** argv)
{
    const std::string mode = argc > 1 ? argv[1] : "even";
    const int steps = argc > 2 ? std::atoi(argv[2]) : kSteps;
    const int layers = argc > 3 ? std::atoi(argv[3]) : kLayers;
    if ((mode != "even" && mode != "late") || steps < 1 || layers < 1) {
        std::fprintf(stderr, "usage: %s even|late [steps] [layers]\n", argv[0]);
        return 2;
    }
    const int rank = envInt("RANK"), localRank = envInt("LOCAL_RANK"), world = envInt("WORLD_SIZE");
    CK(cudaSetDevice(std::getenv("CUDA_VISIBLE_DEVICES") ? 0 : localRank));
    ncclUniqueId id;
    if (rank == 0) CK_STATUS(ncclGetUniqueId(&id));
    shareId(rank, &id);
    ncclComm_t comm;
    CK_STATUS(ncclCommInitRank(&comm, world, id, rank));

    float* act = nullptr;
    CK(cudaMalloc(&act, kCount * sizeof(float)));
    cudaStream_t stream;
    CK(cudaStreamCreate(&stream));
    for (int s = 0; s < steps; ++s) {
        for (int l = 0; l < layers; ++l) {
            if (mode == "late" && rank == kLateRank) spin(std::chrono::microseconds(kLateUs));
            layer_work<<<1, 32, 0, stream>>>(act);
            CK(cudaGetLastError());
            CK_STATUS(ncclAllReduce(act, act, kCount, ncclFloat, ncclSum, comm, stream));
        }
        CK(cudaStreamSynchronize(stream));
    }
    CK(cudaStreamDestroy(stream));
    CK(cudaFree(act));
    CK_STATUS(ncclCommDestroy(comm));
    std::printf("%s: rank %d of %d on GPU %d, %d steps of %d layers (work + all-reduce): done\n", mode.c_str(), rank,
                world, localRank, steps, layers);
    return 0;
}
