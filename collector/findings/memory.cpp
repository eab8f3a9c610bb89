// collector/findings/memory.cpp: memory-leak, memory-peak and allocation-failed, read off the report's GPU
// memory rows (collector/analyze/memory.cpp). They save memory, not time: no time saving is claimed.
#include "collector/findings/rules.h"

#include "collector/model/cuda_results.h"

namespace gpuspy::collect::detail::rules {

namespace {

constexpr double kPeakShare = 0.25;  // one allocation this share of the peak sets it
constexpr double kBriefShare = 0.25; // ...when the peak lasts less than this share of the memory's span
constexpr uint64_t kPoolKeptBytes = uint64_t(64) << 20;  // a pool keeping this much unused at the end...
constexpr double kPoolKeptShare = 0.25;                  // ...and this share of the device's peak
constexpr uint64_t kMinRegrows = 10;                     // a pool grown back this often

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

std::string poolName(const MemoryRow& m, const MemoryPoolRow& p, const Report& r)
{
    return (p.pool == "default" ? "default stream-ordered pool of " : "pool made with cudaMemPoolCreate on ") + where(m, r);
}

std::string thresholdText(const MemoryPoolRow& p)
{
    if (!p.thresholdSet) return "its release threshold left at the default, 0";
    if (p.releaseThreshold >= (uint64_t(1) << 60)) return "its release threshold set to the maximum";
    return "its release threshold set to " + formatBytes(p.releaseThreshold);
}

// A pool that keeps memory it does not use: lost to every other allocation (cudaMalloc, libraries, other
// processes); high when an allocation failed while the device's pools kept at least its size unused.
void poolKeepsMemory(Builder& b, const Report& r, const MemoryRow& m)
{
    const MemoryFailure* starved = nullptr;
    for (const MemoryFailure& x : m.failures)
        if (x.poolUnusedMin >= x.bytes && x.bytes) starved = &x;
    for (const MemoryPoolRow& p : m.pools) {
        const uint64_t kept = p.unusedMinEndBytes();
        const bool large = kept >= kPoolKeptBytes && double(kept) >= kPoolKeptShare * double(std::max(m.peakHeldMinBytes, m.peakBytes));
        if (!large && !starved) continue;
        if (!kept && !(starved && p.peakReservedMinBytes > p.peakUsedBytes / 2)) continue;
        Matched none;
        none.count = p.allocations;
        none.bytes = kept;
        std::string msg = "The " + poolName(m, p, r) + ", " + thresholdText(p) + ", keeps at least " + formatBytes(kept) +
                          " reserved but unused at the end (" + formatBytes(p.usedEndBytes) + " in use; its use peaked at " +
                          formatBytes(p.peakUsedBytes) + "). ";
        if (starved)
            msg += (starved->api.empty() ? std::string("An allocation") : starved->api) + " of " + formatBytes(starved->bytes) +
                   " failed at " + formatNs(starved->atNs) + " (" + starved->error + ") while the device's pools kept at least " +
                   formatBytes(starved->poolUnusedMin) + " reserved and unused. ";
        msg += "Memory a pool keeps is lost to every other allocation (cudaMalloc, libraries, other processes): lower the "
               "release threshold (cudaMemPoolSetAttribute, cudaMemPoolAttrReleaseThreshold) to what the pool needs between "
               "synchronizations, or give the memory back after a burst with cudaMemPoolTrimTo. (A floor by CUDA's documented "
               "rule: the driver may keep more.)";
        Finding& f = b.add("pool-keeps-memory", none, 0, msg);
        f.callsites = p.regrowSites;
        f.severity = starved ? "high" : "medium";
        f.evidence = {{"unused_min_end_bytes", double(kept)}, {"peak_used_bytes", double(p.peakUsedBytes)},
                      {"peak_reserved_min_bytes", double(p.peakReservedMinBytes)},
                      {"release_threshold_bytes", double(p.releaseThreshold)}};
        if (starved) f.evidence.push_back({"failed_bytes", double(starved->bytes)});
        starved = nullptr;  // named once
    }
}

// A pool that gives its memory back at every synchronize and reserves it again: each growth maps memory
// anew (the cost a release threshold at the pool's working size avoids).
void poolRegrowth(Builder& b, const Report& r, const MemoryRow& m)
{
    for (const MemoryPoolRow& p : m.pools) {
        if (p.regrows < kMinRegrows || p.releaseThreshold >= p.peakUsedBytes || !p.grows) continue;
        const uint64_t meanGrow = p.growHostNs / p.grows;
        // Served from what the pool kept: the cost without the growth; none served: at most the whole call.
        const bool baseline = p.served > 0;
        const uint64_t meanServed = baseline ? p.servedHostNs / p.served : 0;
        const uint64_t saving = p.regrows * (meanGrow > meanServed ? meanGrow - meanServed : 0);
        Matched mm;
        mm.count = p.regrows;
        mm.hostNs = p.regrows * meanGrow;
        mm.bytes = p.regrowBytes;
        std::string msg = "The " + poolName(m, p, r) + ", " + thresholdText(p) + ", gave its memory back at " +
                          std::to_string(p.releasesAtSync) + " synchronizations and reserved it again " + std::to_string(p.regrows) + " times (" +
                          formatBytes(p.regrowBytes) + " in all; its use peaks at " + formatBytes(p.peakUsedBytes) +
                          "). An allocation that grows the pool took " + formatNs(meanGrow) + " on average";
        msg += baseline ? ", one it served from what it kept " + formatNs(meanServed) + ". "
                        : "; none was served from kept memory, so the saving is at most the whole of those calls. ";
        msg += "Set the pool's release threshold (cudaMemPoolSetAttribute, cudaMemPoolAttrReleaseThreshold) to at least " +
               formatBytes(p.peakUsedBytes) + " so that it keeps that memory across synchronizations.";
        Finding& f = b.add("pool-regrowth", mm, saving, msg);
        if (!p.regrowSites.empty()) f.callsites = p.regrowSites;
        f.stacks = p.regrowStacks;  // what the replay's pool-threshold fix changes
        if (!baseline) f.savingsBound = "at_most";
        f.evidence = {{"regrows", double(p.regrows)}, {"regrow_bytes", double(p.regrowBytes)},
                      {"mean_grow_host_ns", double(meanGrow)}, {"mean_served_host_ns", double(meanServed)},
                      {"peak_used_bytes", double(p.peakUsedBytes)}};
    }
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
        poolKeepsMemory(b, r, m);
        poolRegrowth(b, r, m);
        // A process none of whose calls succeeded has calls-failed, which names its first error.
        auto fails = b.cx().findings.failures.find(m.pid);
        if (fails != b.cx().findings.failures.end() && fails->second.calls && fails->second.failed == fails->second.calls) continue;
        // One finding per site and error: three refused allocations in a row are one story.
        std::map<std::pair<uint32_t, std::string>, uint64_t> told;
        for (const MemoryFailure& x : m.failures) {
            if (told[{x.callsite, x.error}]++) continue;
            uint64_t times = 0;
            for (const MemoryFailure& y : m.failures) times += y.callsite == x.callsite && y.error == x.error;
            Matched one;
            one.count = times;
            one.bytes = x.bytes;
            const std::string what = (x.api.empty() ? std::string("An allocation") : x.api) + " of " + formatBytes(x.bytes) +
                                     " in " + where(m, r) + " failed" + (times > 1 ? " " + std::to_string(times) + " times, first" : "") +
                                     " at " + formatNs(x.atNs) + " (" + x.error + ") at " + label(r, x.callsite) + "; " +
                                     formatBytes(x.inUse) + " was in use then";
            // Only an out-of-memory error is about memory: any other (no context current, a bad argument)
            // refused the call itself, and freeing memory would not help.
            const bool outOfMemory = x.error == "CUDA_ERROR_OUT_OF_MEMORY" || x.error.empty();
            const std::string hint = outOfMemory ? std::string() : errorHint(cudaResultCode(x.error));
            Finding& f = b.add("allocation-failed", one, 0,
                               outOfMemory ? what + (x.holders.empty() ? std::string(".") : ", held by " + holdersText(r, x.holders) + ".") +
                                                 " Free what those hold before asking, or ask for less."
                                           : what + ": not for lack of memory; the driver refused the call itself" +
                                                 (hint.empty() ? std::string(".") : ": " + hint + "."));
            f.callsites = {x.callsite};
            f.severity = "high";
            f.evidence = {{"bytes", double(x.bytes)}, {"in_use_bytes", double(x.inUse)}};
        }
    }
}

}  // namespace gpuspy::collect::detail::rules
