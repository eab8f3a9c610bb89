// collector/report/text_collectives.cpp: the text report's NCCL section (Report::collectives): per
// communicator, rank and operation, the calls and bytes, the device time of the kernels that carried them,
// the bandwidths nccl-tests would print, and the time each rank's kernels waited for the other ranks.
#include "collector/report/text_collectives.h"

#include "collector/analyze/internal.h"

#include <fmt/format.h>

namespace gpuspy::collect {

using detail::formatBytes;
using detail::formatNs;
using namespace textparts;

void collectivesSection(std::string& out, const Report& r, const textparts::Style& st)
{
    if (r.collectives.empty()) return;
    out += heading(st, "Collectives (NCCL)");
    TextTable t({"Comm", "Rank", "Operation", "Calls", "Bytes", "Algorithm", "GPU", "Alg bw", "Bus bw", "Waiting for peers",
                 "Call site"},
                10);
    for (size_t c : {5, 7, 10}) t.optional(c);
    t.leftAlign(2);
    bool anyFused = false, anyEstimated = false, anyUnmatched = false, anyPeers = false;
    const bool manyProcesses = r.processes.size() > 1;
    for (size_t i = 0; i < r.collectives.size() && i < r.options.top * 2; ++i) {
        const CollectiveRow& c = r.collectives[i];
        anyFused |= c.fused > 0;
        anyEstimated |= c.timed > 0 && c.timed < c.launched;
        anyUnmatched |= c.launched < c.calls;
        anyPeers |= c.withPeers > 0;
        const std::string rank = std::to_string(c.rank) + "/" + std::to_string(c.nranks) +
                                 (manyProcesses ? " (pid " + std::to_string(c.pid) + ")" : "");
        const std::string gpu = c.timed ? formatNs(c.estimatedGpuNs) + (c.timed < c.launched ? "~" : "") : "-";
        const std::string bw = c.algBwGBps > 0 ? fmt::format("{:.1f} GB/s", c.algBwGBps) : "-";
        const std::string bus = c.busBwGBps > 0 ? fmt::format("{:.1f} GB/s", c.busBwGBps) : "-";
        const uint64_t peered = c.waitNs + c.moveNs;
        const std::string wait =
            c.withPeers ? formatNs(c.waitNs) + fmt::format(" ({:.0f}%)", peered ? 100.0 * double(c.waitNs) / double(peered) : 0.0) : "-";
        t.row({fmt::format("{:08x}", uint32_t(c.commId >> 32)), rank, c.op + (c.fused ? "*" : ""), num(c.calls),
               formatBytes(c.bytes), c.algorithm.empty() ? "-" : c.algorithm, gpu, bw, bus, wait, c.site.empty() ? "-" : c.site});
    }
    out += t.render(st);
    if (anyFused)
        out += wrap("* fused: NCCL ran several operations of a group on one communicator as one kernel; its time is split among "
                    "them by bytes (an estimate).",
                    " ");
    if (anyEstimated) out += wrap("~ scaled from the timed launches to every launch (an estimate).", " ");
    if (anyPeers)
        out += wrap("Waiting for peers: of the collectives whose every rank is in the capture and timed, how long this rank's "
                    "kernel ran before the last rank's kernel started (a rank's kernel cannot finish before every rank has "
                    "arrived); the share is of those kernels' time. Bandwidths are over the kernels' whole time, waits "
                    "included, as nccl-tests measures them.",
                    " ");
    if (anyUnmatched)
        out += wrap("Some operations were not matched to the kernel launch that carried them (its launch was not recorded, "
                    "or came outside the capture window): they count in Calls and Bytes only.",
                    " ");
    for (const StragglerRow& s : r.stragglers)
        out += wrap(fmt::format("Rank {}/{} of {:08x} (pid {}) arrived last at {} of {} collectives{}, {} after the rank before "
                                "it (median): the others waited {} for it ({} late on the host, {} on the GPU).",
                                s.rank, s.nranks, uint32_t(s.commId >> 32), s.pid, s.last + s.lastOrdered, s.compared + s.ordered,
                                s.lastOrdered ? fmt::format(" ({} told by its launch alone, its kernel untimed)", s.lastOrdered)
                                              : std::string(),
                                formatNs(s.medianLateNs), formatNs(s.othersWaitNs), s.hostLate, s.gpuLate),
                    " ");
    if (r.collectivesDropped)
        out += wrap(num(r.collectivesDropped) + " more NCCL operations were counted but not kept (past the reader's bound).", " ");
}

}  // namespace gpuspy::collect
