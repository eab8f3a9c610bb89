// collector/export/job_ranks.h: the ranks of a job as the exports show them (a Kineto trace per rank,
// Perfetto's track labels): each process's NCCL rank from its Collective records; where one process
// drives several devices, each its own rank (ncclCommInitAll), one rank per device; a process with no
// communicator, a rank by its order after the known ones.
#pragma once

#include "collector/model/model.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace gpuspy::collect::exporting {

// Where a rank came from: the process's NCCL communicator, its launcher (RANK/WORLD_SIZE and the like:
// not recorded yet), or only its order in the capture.
enum class RankSource : uint8_t { Communicator, Launcher, Order };

// What one process says of its ranks: its rank on each device it drove (its NCCL communicator's rank
// for the operations launched there; device -1: on every device), and the size of its world.
struct ProcessRanks {
    std::map<int, int> rankOfDevice;  // device ordinal (-1: all) -> rank
    int worldSize = 0;
    uint64_t commId = 0;              // Communicator: the communicator
    RankSource source = RankSource::Communicator;
};

// THE rank choice of a process: the launcher's RANK/WORLD_SIZE (its Identity record) for a process of
// one rank; else, of its communicators, the largest (the job's world; ties: the first seen), each device's
// rank in it. nullopt where it has neither.
std::optional<ProcessRanks> rankOfProcess(const Process& p);

// One rank of the job: the work of `process` on `devices` (empty: on every device), plus, for
// `strays`, its work on no device or on a device no rank of the process claims.
struct JobRank {
    size_t process = 0;
    std::vector<int> devices;
    bool strays = true;
    int rank = 0;
    int worldSize = 1;
    RankSource source = RankSource::Order;
    uint64_t commId = 0;  // Communicator: the communicator the rank is in
    bool known() const { return source != RankSource::Order; }
};

// The ranks of the capture's processes that did GPU work or joined a communicator, by rank. A rank
// two processes claim (two jobs in one capture) goes to the first; the other gets the next free one.
// A communicator's ranks have its size as their world; the ranks by order, the count of all ranks.
std::vector<JobRank> jobRanks(const Capture& capture);

}  // namespace gpuspy::collect::exporting
