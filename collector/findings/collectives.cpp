// collector/findings/collectives.cpp: straggler: one rank of an NCCL communicator arrives last at most of
// its collectives, and the other ranks' kernels wait for it (Report::stragglers, from the kernels' starts
// across ranks: collector/analyze/collectives.cpp).
#include "collector/findings/rules.h"

#include <fmt/format.h>

namespace gpuspy::collect::detail::rules {

void stragglers(Builder& b, const Report& r)
{
    const uint64_t wall = b.cx().wallNs;
    for (const StragglerRow& s : r.stragglers) {
        // The same rank last at two thirds or more of its communicator's collectives, late by a fair part of a step (a
        // loaded host's scheduling makes some rank last by a little every time), and the others' wait worth
        // a change.
        // Last counts where its kernel was timed and where only its launch tells (StragglerRow::ordered); the
        // others' wait is the timed collectives' alone (at least that much).
        const uint64_t last = s.last + s.lastOrdered, told = s.compared + s.ordered;
        if (last < 3 || 3 * last < 2 * told || !wall) continue;
        if (double(s.othersWaitNs) < 0.01 * double(wall) && !(s.compared == 0 && s.lateLowNs * (s.nranks - 1) >= 0.01 * double(wall)))
            continue;
        if (s.medianIntervalNs && double(s.medianLateNs) < 0.2 * double(s.medianIntervalNs)) continue;
        // Over every collective of the communicator: the compared ones' lateness, scaled to the rest where a
        // launch's span was lost (an estimate then); with none compared, the lower bounds of the ordered ones,
        // scaled alike.
        const bool scaled = s.collectives > s.compared && s.compared;
        uint64_t saving = scaled ? uint64_t(double(s.lateNs) * double(s.collectives) / double(s.compared)) : s.lateNs;
        if (!s.compared && s.ordered)
            saving = uint64_t(double(s.lateLowNs) * double(s.collectives) / double(s.lastOrdered ? s.lastOrdered : 1));
        const bool estimate = scaled || (!s.compared && s.ordered);
        Matched m;
        m.count = last;
        m.hostNs = s.othersWaitNs;
        const std::string who = fmt::format("Rank {} of communicator {:08x} (pid {}{})", s.rank, uint32_t(s.commId >> 32), s.pid,
                                            s.device >= 0 ? ", GPU " + std::to_string(s.device) : std::string());
        std::string msg = fmt::format("{} arrived last at {} of {} collectives{}, {} after the rank before it (median); the other "
                                      "{} ranks' kernels waited {} for it in all{}. ",
                                      who, last, told,
                                      s.lastOrdered ? fmt::format(" ({} of them told by its launch alone: its kernel was not "
                                                                  "timed, but its launch began after every other rank's kernel "
                                                                  "had started)", s.lastOrdered)
                                                    : std::string(),
                                      formatNs(s.medianLateNs), s.nranks - 1, formatNs(s.othersWaitNs),
                                      s.lastOrdered ? " over the collectives whose every kernel was timed" : "");
        if (s.hostLate >= s.gpuLate)
            msg += fmt::format("Its host was late: in {} of them its kernel launch came {} (median) after the other ranks' "
                               "launches. Look at what that rank's thread does between collectives (host work, data "
                               "loading, Python, a lock) and move it off the path or spread it across ranks.",
                               s.hostLate, formatNs(s.medianHostLagNs));
        else
            msg += fmt::format("Its GPU was late: in {} of them its launch came in time but its stream was still busy with "
                               "the work before the collective. That rank has more GPU work per step than the others: "
                               "balance the work (shapes, batch split, pipeline stages) across ranks.",
                               s.gpuLate);
        msg += fmt::format(" Had it arrived with the rank before it, each of those collectives would have ended that much "
                           "sooner: {} {} in all{} (the run's end moves by less where other work overlaps).",
                           estimate ? "about" : "at most", formatNs(saving),
                           scaled ? fmt::format(", {} over the {} collectives compared, scaled to all {}", formatNs(s.lateNs),
                                                s.compared, s.collectives)
                           : estimate ? fmt::format(", from the least it was late by at the {} collectives its launch told, "
                                                    "scaled to all {}", s.lastOrdered, s.collectives)
                                      : std::string());
        Finding& f = b.add("straggler", m, saving, msg);
        f.savingsBound = estimate ? "estimate" : "at_most";
        f.evidence = {{"pid", double(s.pid)}, {"rank", double(s.rank)}, {"nranks", double(s.nranks)},
                      {"device", double(s.device)}, {"collectives", double(s.collectives)}, {"collectives_compared", double(s.compared)},
                      {"median_interval_ns", double(s.medianIntervalNs)}, {"arrived_last", double(s.last)},
                      {"late_ns", double(s.lateNs)}, {"median_late_ns", double(s.medianLateNs)},
                      {"others_wait_ns", double(s.othersWaitNs)}, {"host_late", double(s.hostLate)},
                      {"gpu_late", double(s.gpuLate)}, {"median_host_lag_ns", double(s.medianHostLagNs)},
                      {"collectives_ordered", double(s.ordered)}, {"arrived_last_ordered", double(s.lastOrdered)},
                      {"late_low_ns", double(s.lateLowNs)}};
    }
}

}  // namespace gpuspy::collect::detail::rules
