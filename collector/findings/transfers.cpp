// collector/findings/transfers.cpp: the transfer findings: pageable and synchronous copies, pageable async copies, small transfers.
#include "collector/findings/rules.h"

#include "collector/model/api_names.h"

#include <algorithm>
#include <set>
#include <cstdio>

namespace gpuspy::collect::detail::rules {

void pageableMemcpy(Builder& b)
{
    const Context& cx = b.cx();
    uint64_t savings = 0;
    bool atMost = false;
    std::string assumption, unmeasured, untimedPinned, boundedPinned;
    Matched all;
    for (wire::Direction dir : {wire::Direction::HtoD, wire::Direction::DtoH}) {
        const Matched& m = cx.findings.pageable[dir == wire::Direction::HtoD ? 0 : 1];
        if (!m.count) continue;
        all.count += m.count;
        all.hostNs += m.hostNs;
        all.bytes += m.bytes;
        all.timed += m.timed;
        all.timedGpuNs += m.timedGpuNs;
        all.timedBytes += m.timedBytes;
        all.bounded += m.bounded;
        all.boundedGpuNs += m.boundedGpuNs;
        for (const auto& [s, ns] : m.sites) all.sites[s] += ns;
        // The copies' own duration. Where it is only an upper bound, so is the saving taken from it.
        const CopyTime copy = copyTime(m);
        atMost |= copy.atMost;
        const double ref = pinnedGbps(cx, dir);
        if (ref > 0) {
            savings += uint64_t(std::max(0.0, copy.ns - double(m.bytes) / ref));
            assumption += std::string(assumption.empty() ? "" : "; ") + "assuming " + wire::directionName(dir) +
                          " copies from pinned memory reach the " + fmtGbps(ref) +
                          " this program's pinned copies reached (measured)";
        } else {
            savings += uint64_t(copy.ns / 2);
            auto append = [&](std::string& list) {
                list += std::string(list.empty() ? "" : " and ") + wire::directionName(dir);
            };
            append(unmeasured);
            append(pinnedOnlyBounded(cx, dir) ? boundedPinned : untimedPinned);
        }
    }
    if (!unmeasured.empty()) {
        std::string why;
        if (!untimedPinned.empty()) why = "no timed pinned " + untimedPinned + " copies";
        if (!boundedPinned.empty())
            why += std::string(why.empty() ? "" : ", and ") + "only pinned " + boundedPinned +
                   " copies that blocked on an idle stream, whose GPU times are upper bounds";
        assumption += std::string(assumption.empty() ? "" : "; ") + "assuming pinned memory doubles the " + unmeasured +
                      " bandwidth (the documented default, typical on PCIe: this capture has " + why +
                      " to measure it)";
    }
    if (!all.count || !b.repeated(all)) return;
    // Where the pinned bandwidth is assumed (no measured pinned copy), a saving from copy times that are
    // upper bounds is at most what that assumed ratio gives, not at most what pinned memory gives: the
    // true ratio may be larger (the report says "estimate", the text says what it is bounded by).
    const bool assumed = !unmeasured.empty();
    if (assumed) atMost = false;
    // The timed copies' bytes over their GPU time: a lower bound on the bandwidth where any GPU time is.
    const double gbps = all.timedGpuNs ? double(all.timedBytes) / double(all.timedGpuNs) : 0;
    const std::string upper = assumed ? "at most what that doubling would give" : "an upper bound";
    const std::string why =
        all.bounded ? boundedCopiesText(all) + " So the bandwidth is a lower bound and the saving " + upper + "."
        : !all.timed ? " No GPU time was recorded: the copies' host time stands for their duration, so the saving is " +
                           upper + "."
                     : "";
    const auto sites = topSites(namedSites(cx, all.sites), 1);
    Finding& f = b.add("pageable-memcpy", all, savings,
                       std::to_string(all.count) + " synchronous copies (" + formatBytes(all.bytes) + " in all, " +
                           formatBytes(all.bytes / std::max<uint64_t>(all.count, 1)) + " each on average)" +
                           " used pageable host memory" + siteLabel(cx, sites) +
                           (gbps > 0 ? ", reaching " + std::string(all.bounded ? "at least " : "") + fmtGbps(gbps)
                                     : std::string()) +
                           ": the driver stages them through its own pinned buffer. Allocate the host buffers with "
                           "cudaMallocHost/cudaHostAlloc or register them with cudaHostRegister. Estimated saving " +
                           (atMost ? "at most " : "") + formatNs(savings) + ", " + assumption + "." + why);
    if (atMost) f.savingsBound = "at_most";
    f.evidence = {{"copies", double(all.count)}, {"bytes", double(all.bytes)}, {"host_ns", double(all.hostNs)},
                  {"gpu_ns", double(all.timedGpuNs)}, {"gbps", gbps}, {"upper_bound_copies", double(all.bounded)},
                  {"upper_bound_gpu_ns", double(all.boundedGpuNs)}, {"pinned_bandwidth_assumed", assumed ? 1.0 : 0.0}};
}

void syncMemcpy(Builder& b)
{
    const Context& cx = b.cx();
    const Matched& m = cx.findings.syncMemcpy;
    if (!m.count || !b.repeated(m)) return;
    // What the host waits for beyond the copy itself (earlier GPU work, the call's own cost): an async
    // copy on a stream does not make the host wait. Untimed copies are assumed to wait alike. A copy
    // whose GPU time is an upper bound blocked on an idle stream: the host time beyond that bound is
    // all that is known to be waiting, so its part is a lower bound.
    uint64_t savings = 0;
    std::string how;
    if (m.timed) {
        // Each measured copy's own time is the shortest of its kind: a synchronous copy's end is stamped
        // once the host is back, so a host descheduled on its way back stretches the copy's span with time
        // the GPU sat idle, a wait the fix removes (tests/savings with a CPU hog on each core: 20 copies of
        // 12 us measured 72 ms, and the estimate came out at a quarter of the saving).
        const double measuredWait = std::max(0.0, double(m.measuredHostNs()) - double(m.measuredTightNs()));
        const double boundedWait = std::max(0.0, double(m.boundedHostNs) - double(m.boundedTightNs()));
        savings = uint64_t((measuredWait + boundedWait) * double(m.count) / double(m.timed));
        how = "assuming cudaMemcpyAsync on a stream (from pinned memory) lets the host go on instead of waiting for "
              "earlier GPU work: the host time of the copies beyond their own GPU time." +
              (m.bounded ? boundedCopiesText(m) + " So their part of the saving (the host time beyond those bounds) "
                                                  "is a lower bound."
                         : std::string());
    } else {
        how = "no GPU times were recorded, so the wait cannot be told apart from the copy itself; no saving is "
              "estimated.";
    }
    const Report& r = b.report();
    // The part of that wait the GPU spent busy with earlier work is saved only as far as the host has
    // work of its own between the copies to overlap it with: a wait on a GPU that stays busy costs nothing
    // (the GPU is the bottleneck). tests/savings (sync-copy -> async-copy, a 20 ms kernel before each
    // copy, 0.3 ms of host work after it): the waits were 20 ms a step, the fix saved the host's work.
    // Not the GPU's idle time: a synchronous copy's end is stamped once the host is back, so on a loaded
    // host its span runs into the host's work after it and the idle time comes out short.
    uint64_t span = 0;
    for (const auto& [pid, firstLast] : cx.findings.syncMemcpySpan) span += firstLast.second - firstLast.first;
    const uint64_t other = span > m.hostNs ? span - m.hostNs : 0;
    // The GPU's busy time during the copies holds their spans as stamped: what is beyond them is the wait
    // on earlier work.
    const double copyGpuNs = m.timed ? double(m.timedGpuNs) * double(m.count) / double(m.timed) : 0;
    const uint64_t busyWait = std::min<uint64_t>(savings, uint64_t(std::max(0.0, double(m.busyNs) - copyGpuNs)));
    const bool capped = busyWait > other;
    if (capped) {
        savings = savings - busyWait + other;
        how += " Of it, " + formatNs(busyWait) + " waited on a busy GPU, which saves no more than the host's own work "
               "between the copies (" + formatNs(other) + ") that would overlap it.";
    }
    Finding& f = b.add("sync-memcpy", m, savings,
                       std::to_string(m.count) + " synchronous copies (cudaMemcpy) blocked the host for " +
                           formatNs(m.hostNs) + siteLabel(cx, topSites(namedSites(cx, m.sites), 1)) +
                           "; the GPU was busy " + busyShare(r, m.busyNs, m.hostNs, " of that time") +
                           ". Use cudaMemcpyAsync on a stream and synchronize once when the results are needed. "
                           "Estimated saving " + (!capped && m.bounded ? "at least " : "") +
                           formatNs(savings) + ", " + how);
    // Capped, the bounded copies' part is no lower bound any more (the cap is an upper one on the rest).
    if (!capped && m.bounded) f.savingsBound = "at_least";
    f.evidence = {{"copies", double(m.count)}, {"bytes", double(m.bytes)}, {"blocked_ns", double(m.hostNs)},
                  {"gpu_busy_ns", double(m.busyNs)}, {"copy_gpu_ns", double(m.timedGpuNs)},
                  {"upper_bound_copies", double(m.bounded)}, {"upper_bound_gpu_ns", double(m.boundedGpuNs)},
                  {"upper_bound_tight_gpu_ns", double(m.boundedTightNs())}, {"host_work_between_ns", double(other)},
                  {"busy_wait_capped", capped ? 1.0 : 0.0}};
}

void pageableAsyncMemcpy(Builder& b)
{
    const Context& cx = b.cx();
    const Matched& m = cx.findings.pageableAsync;
    if (!m.count) return;
    // What an async copy that stays async costs the host here: the pinned ones' median, else a launch's.
    const Matched& pinned = cx.findings.pinnedAsync;
    const Matched& launches = cx.findings.launches;
    uint64_t ref = 0;
    std::string refText = "assuming such a call returns at once";
    if (pinned.count) {
        ref = pinned.host.stats().median;
        refText = "assuming each call would cost the " + formatNs(ref) + " (median) this program's pinned async copies cost";
    } else if (launches.count) {
        ref = launches.host.stats().median;
        refText = "assuming each call would cost about a kernel launch here (" + formatNs(ref) + " median)";
    }
    const uint64_t savings = m.hostNs > ref * m.count ? m.hostNs - ref * m.count : 0;
    // The calls by the names the program used (cudaMemcpy2DAsync, cuMemcpyHtoDAsync_v2), from its sites.
    std::set<std::string> names;
    for (const auto& [raw, ns] : m.sites) {
        const int site = raw < cx.rawSites.size() ? cx.rawSites[raw].site : kNoSite;
        if (site == kNoSite) continue;
        for (const std::string& api : cx.sites[size_t(site)].apis) {
            if (api.find("Async") == std::string::npos || api.find("Memcpy") == std::string::npos) continue;
            const std::string rt = apiRuntimeName(cx, api);
            names.insert(rt.empty() ? api : rt);
        }
    }
    std::string called;
    for (const std::string& n : names) called += (called.empty() ? "" : " / ") + n;
    if (called.empty()) called = "cudaMemcpyAsync";
    Finding& f = b.add("pageable-async-memcpy", m, savings,
                       std::to_string(m.count) + " " + called + " calls on pageable host memory (" + formatBytes(m.bytes) +
                           ")" + siteLabel(cx, topSites(namedSites(cx, m.sites), 1)) + " were not asynchronous: they held the host for " +
                           formatNs(m.hostNs) + " while the driver staged the data. Use pinned memory "
                           "(cudaMallocHost or cudaHostRegister) so the copy overlaps. Estimated saving " +
                           formatNs(savings) + ", " + refText + ".");
    f.evidence = {{"copies", double(m.count)}, {"bytes", double(m.bytes)}, {"host_ns", double(m.hostNs)},
                  {"reference_call_ns", double(ref)}};
}

void smallTransfers(Builder& b)
{
    const Context& cx = b.cx();
    const Matched& m = cx.findings.small;
    if (m.count < kMinSmallCopies) return;
    // The fixed cost of a copy: its measured GPU time (small copies are all latency), else its host time
    // (GPU times that are only upper bounds are left out of m.gpu).
    // A copy avoided saves its fixed cost on the device and its call on the host, whichever path is the
    // longer: the measured GPU time's median, or the calls' mean host time (every call goes, the slow ones
    // too). tests/savings (small-copies -> batched, 2000 synchronous 2 KiB copies): the host median alone
    // (15 us) was a sixth of what each call took on a loaded host, the GPU time (1 us) a tenth of an
    // unloaded one's.
    const bool gpuBasis = m.measured() > 0;
    const uint64_t gpuMedian = gpuBasis ? m.gpu.stats().median : 0;
    const uint64_t hostMean = m.count ? m.hostNs / m.count : 0;
    const bool hostPath = hostMean >= gpuMedian;
    const uint64_t perCopy = hostPath ? hostMean : gpuMedian;
    size_t sites = 0;
    for (const auto& [s, ns] : namedSites(cx, m.sites)) sites += s != kNoSite;
    sites = std::max<size_t>(sites, 1);
    const uint64_t savings = m.count > sites ? (m.count - sites) * perCopy : 0;
    Finding& f = b.add("small-transfers", m, savings,
                       std::to_string(m.count) + " copies of at most 64 KiB (" + formatBytes(m.bytes) + " in all, " +
                           formatBytes(m.count ? m.bytes / m.count : 0) + " on average)" +
                           siteLabel(cx, topSites(namedSites(cx, m.sites), 1)) +
                           " each pay a copy's fixed cost. Batch them into larger copies (one staging buffer). "
                           "Estimated saving " + formatNs(savings) + ", assuming one copy per call site instead, each "
                           "copy avoided saving " + (hostPath ? "the mean host time of a small copy's call" : "the median measured GPU time of a small copy") +
                           " (" + formatNs(perCopy) + ")" +
                           (gpuBasis ? ", the longer of that and the " + std::string(hostPath ? "median measured GPU time (" + formatNs(gpuMedian) + ")" : "mean host time of a call (" + formatNs(hostMean) + ")")
                                     : std::string(m.bounded ? "; their GPU times are only upper bounds (they blocked on an idle stream)" : "")) +
                           ".");
    f.evidence = {{"copies", double(m.count)}, {"bytes", double(m.bytes)}, {"host_ns", double(m.hostNs)},
                  {"per_copy_ns", double(perCopy)}, {"call_sites", double(sites)},
                  {"median_gpu_ns", double(gpuMedian)}, {"mean_host_ns", double(hostMean)}};
}

}  // namespace gpuspy::collect::detail::rules
