// collector/report/text_memory.cpp: the text report's GPU memory section (Report::memory): per process and
// memory space the allocations, peak, what was still held at the end and leaked, failed allocations, and
// who held the memory at the peak and at each failure.
#include "collector/report/text_memory.h"

#include "collector/analyze/internal.h"

namespace gpuspy::collect {

using detail::formatBytes;
using detail::formatNs;
using namespace textparts;

void memorySection(std::string& out, const Report& r, const textparts::Style& st)
{
    if (r.memory.empty()) return;
    out += heading(st, "GPU memory (what holds it, its peak, what was never released)");
    TextTable t({"Pid", "Space", "Allocs", "Frees", "Peak", "Peak at", "In use at end", "Leaked", "Failed"}, 8);
    for (size_t c : {0, 5, 7, 8, 3}) t.optional(c);  // narrow: Frees, Failed, Leaked, Peak at, Pid go
    t.leftAlign(1);
    auto spaceName = [](const MemoryRow& m) {
        return m.space == "pinned_host" ? std::string("pinned host") : m.space + " " + std::to_string(m.device);
    };
    for (const MemoryRow& m : r.memory) {
        const uint64_t leaked = m.leakedBytes();
        t.row({std::to_string(m.pid), spaceName(m), num(m.allocations), num(m.releases), formatBytes(m.peakBytes),
               formatNs(m.peakNs), formatBytes(m.inUseEndBytes), leaked ? formatBytes(leaked) : "-", num(m.failed)});
    }
    out += t.render(st);
    auto held = [&](const std::vector<MemoryHolding>& hs) {
        std::string s;
        for (size_t i = 0; i < hs.size() && i < 3; ++i)
            s += std::string(i ? "; " : "") + siteText(r, hs[i].callsite) + " " + formatBytes(hs[i].bytes) + " in " +
                 num(hs[i].allocations) + (hs[i].allocations == 1 ? " allocation" : " allocations");
        return s;
    };
    for (const MemoryRow& m : r.memory) {
        const std::string who = r.processes.size() > 1 ? "pid " + std::to_string(m.pid) + " " + spaceName(m) : spaceName(m);
        if (m.peakBytes && !m.atPeak.empty())
            out += wrap(who + ": peak " + formatBytes(m.peakBytes) + " at " + formatNs(m.peakNs) + ", held by " + held(m.atPeak) + ".", " ");
        for (const MemoryLive& l : m.liveAtEnd)
            if (l.leak)
                out += st.red() +
                       wrap(who + ": LEAK: " + siteText(r, l.callsite) + " still held " + formatBytes(l.bytes) + " in " +
                                num(l.allocations) + " allocations at the end, made from " + formatNs(l.firstNs) + " to " +
                                formatNs(l.lastNs) + " and never released.",
                            " ") +
                       st.reset();
        for (const MemoryFailure& f : m.failures)
            out += st.red() +
                   wrap(who + ": FAILED: " + (f.api.empty() ? std::string("an allocation") : f.api) + " of " +
                            formatBytes(f.bytes) + " at " + formatNs(f.atNs) + " (" + f.error + ") from " +
                            siteText(r, f.callsite) + "; " + formatBytes(f.inUse) + " in use then" +
                            (f.holders.empty() ? std::string(".") : ", held by " + held(f.holders) + "."),
                        " ") +
                   st.reset();
        for (const MemoryPoolRow& p : m.pools) {
            std::string line = who + ": " + (p.pool == "default" ? std::string("default pool") : std::string("pool made by cudaMemPoolCreate")) +
                               " (release threshold " +
                               (p.thresholdSet ? (p.releaseThreshold >= (uint64_t(1) << 60) ? std::string("maximum") : formatBytes(p.releaseThreshold))
                                               : std::string("0, the default")) +
                               "): " + num(p.allocations) + " allocations, use peaked at " + formatBytes(p.peakUsedBytes) +
                               "; it reserved at least " + formatBytes(p.peakReservedMinBytes) + " at its peak and at least " +
                               formatBytes(p.reservedMinEndBytes) + " at the end (" + formatBytes(p.unusedMinEndBytes()) + " of it unused)";
            if (p.releasesAtSync || p.trims)
                line += "; gave memory back at " + num(p.releasesAtSync) + " synchronizations and " + num(p.trims) + " trims";
            if (p.regrows) line += "; grew back " + num(p.regrows) + " times (" + formatBytes(p.regrowBytes) + ")";
            out += wrap(line + ".", " ");
        }
        if (m.vmmReservedPeakBytes)
            out += wrap(who + ": VMM address space reserved (cuMemAddressReserve): at most " + formatBytes(m.vmmReservedPeakBytes) +
                            ", " + formatBytes(m.vmmReservedEndBytes) + " at the end; what is mapped into it counts as in use.",
                        " ");
        for (const MemoryFailure& f : m.failures)
            if (f.poolUnusedMin)
                out += wrap(who + ": when " + (f.api.empty() ? std::string("an allocation") : f.api) + " of " + formatBytes(f.bytes) +
                                " failed, stream-ordered pools kept at least " + formatBytes(f.poolUnusedMin) + " reserved and unused.",
                            " ");
        if (m.attached)
            out += wrap(who + ": attached to a running process: memory allocated before the attach is unknown; these "
                              "figures count only what was allocated since.",
                        " ");
        if (m.unknownReleases)
            out += wrap(who + ": " + num(m.unknownReleases) +
                            " releases of memory allocated before the capture began (not in the figures).",
                        " ");
    }
    out += wrap("Times from the process's first CUDA call. Stream-ordered allocations and frees (cudaMallocAsync, "
                "cudaFreeAsync) count when their stream is estimated to reach them (after the work queued before "
                "them); VMM memory counts while mapped (cuMemMap to cuMemUnmap). A stream-ordered pool's reservation is a "
                "floor by CUDA's documented rule (it gives back what it keeps beyond its release threshold only at a "
                "synchronize or a trim): the driver may keep more.",
                " ");
}

}  // namespace gpuspy::collect
