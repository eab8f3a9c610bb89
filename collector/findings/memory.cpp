// collector/findings/memory.cpp: memory-leak, memory-peak and allocation-failed, read off the report's GPU
// memory rows (collector/analyze/memory.cpp). They save memory, not time: no time saving is claimed.
#include "collector/findings/rules.h"

namespace gpuspy::collect::detail::rules {

namespace {

constexpr double kPeakShare = 0.25;  // one allocation this share of the peak sets it
constexpr double kBriefShare = 0.25; // ...when the peak lasts less than this share of the memory's span

std::string where(const MemoryRow& m, const Report& r)
{
    std::string s = m.space == "pinned_host" ? "pinned host memory" : m.space == "managed" ? "managed memory" : "device " + std::to_string(m.device);
    if (r.processes.size() > 1) s += " of pid " + std::to_string(m.pid);
    return s;
}

std::string label(const Report& r, uint32_t site)
{
    return site < r.callsites.size() ? r.callsites[site].label : std::string("(other sites)");
}

std::string libraryOf(const Report& r, uint32_t site)
{
    return site < r.callsites.size() ? r.callsites[site].libraryCall : std::string();
}

std::string holdersText(const Report& r, const std::vector<MemoryHolding>& hs)
{
    std::string s;
    for (size_t i = 0; i < hs.size() && i < 3; ++i)
        s += std::string(i ? ", " : "") + label(r, hs[i].callsite) + " " + formatBytes(hs[i].bytes);
    return s;
}

}  // namespace

void memoryFindings(Builder& b, const Report& r)
{
    for (const MemoryRow& m : r.memory) {
        for (const MemoryLive& l : m.liveAtEnd) {
            if (!l.leak) continue;
            Matched none;
            none.count = l.allocations;
            none.bytes = l.bytes;
            const std::string lib = libraryOf(r, l.callsite);
            std::string msg = std::to_string(l.allocations) + " allocations of " + where(m, r) + " (" + formatBytes(l.bytes) +
                              ") at " + label(r, l.callsite) + " were made from " + formatNs(l.firstNs) + " to " +
                              formatNs(l.lastNs) + " and never released: the memory held grows with the run, by " +
                              formatBytes(l.bytes / std::max<uint64_t>(l.allocations, 1)) + " each time. ";
            msg += lib.empty() ? "Free each one once it is no longer needed (or reuse one buffer); a long-running process "
                                 "will otherwise run out of memory."
                               : "They were made inside " + lib + ": release what the library hands back (its handle, "
                                 "plan or buffer) once done with it, or reuse it across calls.";
            Finding& f = b.add("memory-leak", none, 0, msg);
            f.callsites = {l.callsite};
            f.severity = m.peakBytes && double(l.bytes) >= kPeakShare * double(m.peakBytes) ? "high" : "medium";
            f.evidence = {{"leaked_bytes", double(l.bytes)}, {"allocations", double(l.allocations)},
                          {"peak_bytes", double(m.peakBytes)}, {"in_use_end_bytes", double(m.inUseEndBytes)}};
        }
        // The peak set by one short-lived allocation (released before the end): an intermediate. A peak
        // held for most of the run (a setup's buffers freed at teardown) is the program's working set.
        const uint64_t span = m.series.size() > 1 ? m.series.back().first - m.series.front().first : 0;
        const bool brief = span && m.peakUntilNs > m.peakNs && double(m.peakUntilNs - m.peakNs) < kBriefShare * double(span);
        for (const MemoryHolding& h : m.atPeak) {
            if (!brief) break;
            if (h.allocations != 1 || double(h.bytes) < kPeakShare * double(m.peakBytes) || m.atPeak.size() < 2) continue;
            bool stillHeld = false;
            for (const MemoryLive& l : m.liveAtEnd) stillHeld |= l.callsite == h.callsite;
            if (stillHeld) continue;
            std::vector<MemoryHolding> beside;
            for (const MemoryHolding& o : m.atPeak)
                if (o.callsite != h.callsite) beside.push_back(o);
            Matched one;
            one.count = 1;
            one.bytes = h.bytes;
            Finding& f = b.add("memory-peak", one, 0,
                               "The peak of " + where(m, r) + ", " + formatBytes(m.peakBytes) + " at " + formatNs(m.peakNs) +
                                   ", is set by one intermediate allocation of " + formatBytes(h.bytes) + " (" +
                                   fmtPct(100.0 * double(h.bytes) / double(m.peakBytes)) + " of it) at " + label(r, h.callsite) +
                                   ", released later. Computing it in smaller pieces, or reusing a buffer already held, "
                                   "would lower the peak to about " + formatBytes(m.peakBytes - h.bytes) +
                                   (beside.empty() ? std::string(".") : " (held beside it: " + holdersText(r, beside) + ")."));
            f.callsites = {h.callsite};
            f.severity = "low";
            f.evidence = {{"peak_bytes", double(m.peakBytes)}, {"intermediate_bytes", double(h.bytes)}};
            break;
        }
        for (const MemoryFailure& x : m.failures) {
            Matched one;
            one.count = 1;
            one.bytes = x.bytes;
            Finding& f = b.add("allocation-failed", one, 0,
                               (x.api.empty() ? std::string("An allocation") : x.api) + " of " + formatBytes(x.bytes) + " in " +
                                   where(m, r) + " failed at " + formatNs(x.atNs) + " (" + x.error + ") at " +
                                   label(r, x.callsite) + "; " + formatBytes(x.inUse) + " was in use then" +
                                   (x.holders.empty() ? std::string(".") : ", held by " + holdersText(r, x.holders) + ".") +
                                   " Free what those hold before asking, or ask for less.");
            f.callsites = {x.callsite};
            f.severity = "high";
            f.evidence = {{"bytes", double(x.bytes)}, {"in_use_bytes", double(x.inUse)}};
        }
    }
}

}  // namespace gpuspy::collect::detail::rules
