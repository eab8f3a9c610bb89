// collector/export/kineto.h: a capture as PyTorch's Kineto profiler writes a trace, one JSON file per
// rank, so that Holistic Trace Analysis (HTA) and other Kineto readers load a directory of them as it
// comes: distributedInfo (rank, world size), baseTimeNanoseconds, the CUDA calls (cuda_runtime /
// cuda_driver) on their host threads, the GPU work (kernel, gpu_memcpy, gpu_memset) on pid = device and
// tid = stream, both sides of a launch carrying one correlation id and an ac2g flow, NCCL kernels with
// their collectives' fields as PyTorch's record_param_comms gives them.
#pragma once

#include "collector/export/job_ranks.h"
#include "collector/model/model.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gpuspy::collect {

struct KinetoFile {
    std::string name;  // "rank-0.pt.trace.json"
    std::string json;
    exporting::JobRank rank;
    uint64_t kernels = 0, memcpys = 0, memsets = 0;  // GPU events written (estimated ones included)
    uint64_t estimated = 0;                          // of them, placed by the device timeline, not measured
    uint64_t calls = 0, flows = 0;                   // host calls; launch -> work arrows
    uint64_t skipped = 0;                            // GPU spans of other kinds (graphs as one span): left out
};

// One file per rank of exporting::jobRanks(capture), each handed to `sink` as soon as it is made (a
// file of a large capture is a gigabyte: they are not all held at once). Every file's times are
// microseconds after one base, the capture's first event (the same in every file: the ranks compare
// directly), whose wall-clock time is baseTimeNanoseconds (from the capture's CLOCK_MONOTONIC/CLOCK_REALTIME
// pair). Returns how many files it made.
size_t exportKineto(const Capture& capture, const std::function<void(KinetoFile&&)>& sink);
// The same, all files returned (small captures, tests).
std::vector<KinetoFile> exportKineto(const Capture& capture);

}  // namespace gpuspy::collect
