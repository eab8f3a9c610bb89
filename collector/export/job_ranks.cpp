// collector/export/job_ranks.cpp: ranks from NCCL's Collective records (each operation's rank, on the
// device of the launch that carried it), and the job's ranks across the capture's processes.
#include "collector/export/job_ranks.h"

#include "collector/export/nccl_launches.h"

#include <algorithm>
#include <set>

namespace gpuspy::collect::exporting {

namespace {
std::optional<ProcessRanks> communicatorRanks(const Process& p);
}

std::optional<ProcessRanks> rankOfProcess(const Process& p)
{
    // The launcher's RANK/WORLD_SIZE (the Identity record) is the job's global rank, as Kineto's
    // distributedInfo gives it, for a process with one rank; a process that drove several ranks of a
    // communicator itself (one per device) keeps each device's communicator rank.
    std::optional<ProcessRanks> comm = communicatorRanks(p);
    const ProcessIdentity& id = p.identity;
    if (id.rank >= 0 && id.worldSize > 0 && (!comm || comm->rankOfDevice.size() <= 1))
        return ProcessRanks{{{-1, id.rank}}, id.worldSize, 0, RankSource::Launcher};
    return comm;
}

namespace {

std::optional<ProcessRanks> communicatorRanks(const Process& p)
{
    if (p.collectives.empty()) return std::nullopt;
    // The job's world: the largest communicator (a tensor-parallel group inside it is smaller).
    const wire::CollectiveBody* world = &p.collectives.front();
    for (const wire::CollectiveBody& b : p.collectives)
        if (b.nranks > world->nranks) world = &b;
    ProcessRanks out;
    out.worldSize = std::max(world->nranks, 1);
    out.commId = world->commId;
    const std::vector<const wire::CallBody*> launches = ncclLaunchesOf(p);
    for (size_t i = 0; i < p.collectives.size(); ++i) {
        const wire::CollectiveBody& b = p.collectives[i];
        if (b.commId != out.commId || !launches[i] || launches[i]->device < 0) continue;
        out.rankOfDevice.emplace(launches[i]->device, b.rank);
    }
    // No operation matched to a launch (its kernels untimed or unrecorded): the process's one rank on
    // every device, where it has one.
    if (out.rankOfDevice.empty()) {
        std::set<int> ranks;
        for (const wire::CollectiveBody& b : p.collectives)
            if (b.commId == out.commId) ranks.insert(b.rank);
        if (ranks.size() == 1) out.rankOfDevice.emplace(-1, *ranks.begin());
        else return std::nullopt;
    }
    return out;
}

}  // namespace

namespace {

bool didGpuWork(const Process& p)
{
    if (!p.spans.empty()) return true;
    return std::any_of(p.calls.begin(), p.calls.end(), [](const wire::CallBody& c) { return c.flags & wire::kCallDeviceWork; });
}

}  // namespace

std::vector<JobRank> jobRanks(const Capture& capture)
{
    std::vector<JobRank> out;
    std::set<int> taken;
    int world = 0;
    std::vector<size_t> unranked;
    for (size_t pi = 0; pi < capture.processes.size(); ++pi) {
        const Process& p = capture.processes[pi];
        const std::optional<ProcessRanks> pr = rankOfProcess(p);
        if (!pr) {
            if (didGpuWork(p)) unranked.push_back(pi);
            continue;
        }
        world = std::max(world, pr->worldSize);
        // Ranks of this process, each with its devices; the lowest rank also takes the strays.
        std::map<int, std::vector<int>> devicesOfRank;
        for (const auto& [device, rank] : pr->rankOfDevice) devicesOfRank[rank].push_back(device);
        bool first = true;
        for (auto& [rank, devices] : devicesOfRank) {
            JobRank r;
            r.process = pi;
            if (!(devices.size() == 1 && devices[0] < 0) && devicesOfRank.size() > 1) r.devices = devices;
            r.strays = first;
            first = false;
            r.rank = rank;
            r.worldSize = pr->worldSize;
            r.source = pr->source;
            r.commId = pr->commId;
            out.push_back(std::move(r));
        }
    }
    // A rank claimed twice: the later claim moves to the next free rank.
    auto nextFree = [&]() {
        int r = 0;
        while (taken.count(r)) ++r;
        return r;
    };
    for (JobRank& r : out)
        if (!taken.insert(r.rank).second) r.rank = nextFree(), taken.insert(r.rank);
    for (size_t pi : unranked) {
        JobRank r;
        r.process = pi;
        r.rank = nextFree();
        taken.insert(r.rank);
        out.push_back(std::move(r));
    }
    // A communicator's ranks keep its size; the ranks by order count every rank of the capture.
    const int size = std::max<int>(world, int(taken.size()));
    for (JobRank& r : out)
        if (r.source == RankSource::Order) r.worldSize = size;
    std::sort(out.begin(), out.end(), [](const JobRank& a, const JobRank& b) { return a.rank < b.rank; });
    return out;
}

}  // namespace gpuspy::collect::exporting
