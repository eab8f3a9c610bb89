// collector/findings/gpu_idle.cpp: gpu-idle and gpu-starved: a GPU left idle, and idle while the host works outside CUDA.
#include "collector/findings/rules.h"

#include <algorithm>
#include <cstdio>

namespace gpuspy::collect::detail::rules {

void gpuIdleAndStarved(Builder& b, const Report& r)
{
    const Context& cx = b.cx();
    // gpu-idle: a symptom; the findings that explain it carry the savings.
    Matched idle, starved;
    std::string idleText, starvedText;
    uint64_t starvedNs = 0;
    // Host work inside library calls that left a GPU idle: setup the user can only move, not overlap.
    std::string libraryText;
    auto libraries = [](const DeviceSummary& d) {
        std::string names;
        for (size_t i = 0; i < d.starvedLibraries.size() && i < 3; ++i) names += (i ? ", " : "") + d.starvedLibraries[i];
        return names;
    };
    for (const DeviceSummary& d : r.devices) {
        if (!d.ops || !d.activeNs) continue;
        const DeviceAcc* acc = nullptr;
        for (size_t p = 0; p < cx.processes.size(); ++p)
            if (cx.processes[p].pid == d.pid)
                if (auto it = cx.devices[p].find(d.id); it != cx.devices[p].end()) acc = &it->second;
        const std::string who = "device " + std::to_string(d.id) + (r.processes.size() > 1 ? " (pid " + std::to_string(d.pid) + ")" : "");
        if (d.busyPct < kBusyThresholdPct) {
            idle.count += d.gaps;
            idle.hostNs += d.activeNs - d.busyNs;
            idleText += std::string(idleText.empty() ? "" : "; ") + who + " was busy " + busyPctText(d) + " of " +
                        formatNs(d.activeNs) + " (idle gaps: " + formatNs(d.idleGapNs) + ", largest " +
                        formatNs(d.largestGapNs) +
                        (d.waitingNs ? "; " + formatNs(d.waitingNs) + " of them while the program waited for work, its "
                                       "process idle: not starved"
                                     : std::string()) +
                        ")" +
                        (d.upperBoundOps ? " (" + std::to_string(d.upperBoundOps) +
                                               " of its GPU times are upper bounds: blocking copies or memsets)"
                                         : "");
        }
        if (!acc || !acc->anyBusy) continue;
        // The GPU's span, less its idle time while the host was inside library calls (their one-time setup,
        // CUDA calls included, would dilute the share).
        const uint64_t fullSpan = acc->lastBusy - acc->firstBusy;
        const uint64_t span = fullSpan - std::min(fullSpan, std::max(d.idleInLibraryNs, d.starvedInLibraryNs));
        // A data-loading bottleneck recurs: the longest single pause (start-up, lazy loading) does not
        // count, nor does gpuspy's own time on the app's threads, which also falls outside CUDA calls.
        uint64_t overhead = 0;
        for (const ProcessSummary& p : r.processes)
            if (p.pid == d.pid) overhead = p.gpuspyOverheadNs;
        // Host time inside library calls is the library's (its handle, plan or heuristics): not data loading.
        const uint64_t userStarved = d.starvedNs - std::min(d.starvedNs, d.starvedInLibraryNs);
        const uint64_t largest = d.starvedInLibraryNs ? d.largestUserStarvedNs : d.largestStarvedNs;
        const uint64_t recurring = userStarved - std::min(userStarved, largest);
        const uint64_t counted = recurring > overhead ? recurring - overhead : 0;
        if (d.starvedInLibraryNs)
            libraryText += std::string(libraryText.empty() ? "" : "; ") + who + ": " + formatNs(d.starvedInLibraryNs) +
                           " inside calls into " + libraries(d);
        if (span && double(counted) >= kStarvedShare * double(span)) {
            starved.count += d.gaps;
            starved.hostNs += d.starvedNs;
            starvedNs += counted;
            starvedText += std::string(starvedText.empty() ? "" : "; ") + who + ": " + formatNs(counted) + " (" +
                           fmtPct(100.0 * double(counted) / double(span)) + " of the " + formatNs(span) +
                           " from its first to its last operation" +
                           (d.idleInLibraryNs || d.starvedInLibraryNs ? ", less its idle time inside library calls" : "") + "; " +
                           formatNs(d.starvedNs) + " in all, less " +
                           (d.starvedInLibraryNs ? formatNs(d.starvedInLibraryNs) + " inside library calls, " : std::string()) +
                           "the longest single pause (" + formatNs(largest) + ")" +
                           (overhead ? " and gpuspy's own time (" + formatNs(overhead) + ")" : "") + ")";
        }
    }
    uint64_t estimated = 0;
    for (const DeviceSummary& d : r.devices) estimated += d.estimatedOps;
    const std::string samplingCaveat =
        estimated ? " " + std::to_string(estimated) + " device operations were not timed: they are placed by inference, "
                    "so busy and idle time are estimates." : "";
    const std::string starvedCaveat =
        estimated ? " The gaps are those of the estimated timeline (untimed operations placed by inference)." : "";
    const std::string libraryNote =
        libraryText.empty() ? ""
                            : " Some of the idle time was the host working inside library calls, between the CUDA calls "
                              "they made (" + libraryText + "): the library's own work (creating its handle, building a "
                              "plan, choosing an algorithm), not the program's. It is not counted as the GPU starved: where "
                              "it recurs, create the handle or plan once, outside the loop.";
    if (idle.count || !idleText.empty()) {
        Finding& f = b.add("gpu-idle", idle, 0,
                           "The GPU was idle most of the time: " + idleText +
                               ". No saving is estimated for this symptom: the findings that explain it (launch, "
                               "transfer, sync or CPU-side gaps) carry it." + libraryNote + samplingCaveat);
        f.severity = "info";  // a symptom, without a saving of its own
        f.ns = idle.hostNs;
        f.evidence = {{"idle_ns", double(idle.hostNs)}, {"gaps", double(idle.count)}};
    }
    if (!starvedText.empty()) {
        Finding& f = b.add("gpu-starved", starved, starvedNs,
                           "The GPU idled while no thread was in a CUDA call, i.e. while the CPU did other work (data "
                           "loading, preprocessing): " + starvedText + ". Prepare the next batch while the GPU works "
                           "(a loader thread, double buffering). Estimated saving " + formatNs(starvedNs) +
                           ", assuming that CPU work can overlap the GPU work completely." + starvedCaveat);
        f.evidence = {{"starved_ns", double(starvedNs)}, {"gaps", double(starved.count)}};
    }
}

}  // namespace gpuspy::collect::detail::rules
