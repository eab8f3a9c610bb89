// collector/analyze_findings.cpp: the findings: patterns that cost time, each with its evidence, its
// call sites, and an estimate of the time a fix would save whose assumption the message states. Every
// number comes from the capture; the thresholds below only decide when a pattern is worth a finding.
// Where a number rests on GPU times that are only upper bounds (collector/README.md, "GPU time
// sources"), the message says "at most" or "at least" and why.
#include "collector/analyze_internal.h"

#include "collector/api_names.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

namespace gpuspy::collect::detail {

namespace {

// When a pattern is a finding. Repetition is what makes a pattern worth changing: one synchronous
// copy of the results at the end is normal, a hundred in a loop are not.
constexpr uint64_t kMinRepeats = 8;          // sync / pageable copies before they are a finding...
constexpr double kMinWallShare = 0.05;       // ...unless they take this share of the wall time
constexpr uint64_t kSmallCopyBytes = 64u << 10;
constexpr uint64_t kMinSmallCopies = 64;
constexpr uint64_t kMinLaunchBound = 16;     // launches of one launch-bound kernel
constexpr double kBusyThresholdPct = 80;     // gpu-idle below this
constexpr double kStarvedShare = 0.2;        // gpu-starved: idle-while-host-outside-CUDA share of the GPU's span
constexpr uint64_t kMinLoopSyncs = 10;       // explicit waits from one call site
constexpr uint64_t kMinHotAllocs = 10;       // alloc/free calls from one call site
constexpr double kHighShare = 0.10, kMediumShare = 0.02;  // severity: savings as a share of wall time

std::string fmtPct(double pct)
{
    char b[16];
    std::snprintf(b, sizeof b, "%.0f%%", pct);
    return b;
}

std::string fmtGbps(double gbps)
{
    char b[24];
    std::snprintf(b, sizeof b, "%.2f GB/s", gbps);
    return b;
}

std::string siteLabel(const Context& cx, const std::vector<uint32_t>& sites)
{
    if (sites.empty()) return "";
    std::string s = " (" + (sites.size() == 1 ? std::string("at ") : std::string("top: ")) + cx.sites[sites[0]].label + ")";
    return s;
}

bool isHostCopy(const wire::CallBody& c)
{
    const wire::Direction d = c.args.transfer.direction;
    return d == wire::Direction::HtoD || d == wire::Direction::DtoH;
}

bool isCopy(const wire::CallBody& c)
{
    const wire::Direction d = c.args.transfer.direction;
    return d != wire::Direction::Memset && d != wire::Direction::Prefetch && d != wire::Direction::Unknown;
}


// The reference bandwidth of pinned copies in one direction: what this program's pinned copies with a
// measured GPU time reached (0 if it made none). Pinned copies that blocked on an idle stream are left
// out: their GPU times are upper bounds, so their rates are lower bounds, not a reference.
double pinnedGbps(const Context& cx, wire::Direction dir)
{
    const Matched& m = cx.findings.pinned[dir == wire::Direction::HtoD ? 0 : 1];
    return m.measuredGpuNs() ? double(m.measuredBytes()) / double(m.measuredGpuNs()) : 0;
}

// Whether this program's pinned copies in one direction were timed only with GPU times that are upper
// bounds (then they exist but give no reference), for the text of the fallback.
bool pinnedOnlyBounded(const Context& cx, wire::Direction dir)
{
    const Matched& m = cx.findings.pinned[dir == wire::Direction::HtoD ? 0 : 1];
    return m.bounded && !m.measured();
}

// The device time of a set of copies and whether it is only an upper bound. Measured GPU times count
// as they are; copies whose GPU time is a bound count as the shortest bound among the copies alike
// (Matched::boundedTightNs); untimed copies as the mean of the timed ones, or, with none timed, as their
// host time (which holds the copy, so it is a bound too).
struct CopyTime {
    double ns = 0;
    bool atMost = false;
};
CopyTime copyTime(const Matched& m)
{
    if (!m.timed) return {double(m.hostNs), true};
    const double timedNs = double(m.measuredGpuNs() + m.boundedTightNs());
    return {timedNs * double(m.count) / double(m.timed), m.bounded > 0};
}

// The sentence that says why a finding's numbers built on GPU times are bounds ("" when none is).
std::string boundedCopiesText(const Matched& m)
{
    if (!m.bounded) return "";
    return " " + std::to_string(m.bounded) + " of these copies blocked on an idle stream, where CUDA events cannot "
           "see when a copy began: their GPU times are upper bounds, and each copy is taken to last at most the "
           "shortest of its kind (direction, memory, size).";
}

// "~62% (55-70%)" for an estimate, "62%" when measured; "at most" when a span in it is an upper bound.
std::string busyPctText(const DeviceSummary& d)
{
    std::string s = d.busyBasis == "upper_bound" ? "at most " : "";
    if (d.busyBasis != "estimated") return s + fmtPct(d.busyPct);
    s += "~" + fmtPct(d.busyPct);
    if (d.busyPctHi - d.busyPctLo >= 1) s += " (" + fmtPct(d.busyPctLo) + "-" + fmtPct(d.busyPctHi) + ")";
    return s + " (estimated: " + std::to_string(d.estimatedOps) + " of " + std::to_string(d.ops) + " operations untimed)";
}

// Whether the busy time of any device holds a span that is only an upper bound: then every "the GPU
// was busy" share is at most that (busy intervals do not remember which span they came from).
bool busyIsUpperBound(const Report& r)
{
    for (const DeviceSummary& d : r.devices)
        if (d.upperBoundOps) return true;
    return false;
}

// "the GPU was busy X of it": a wait's busy share of its host time, "at most" (and why) when it may
// hold a span that is an upper bound.
std::string busyShare(const Report& r, uint64_t busyNs, uint64_t hostNs, const std::string& ofWhat)
{
    const bool bound = busyNs && busyIsUpperBound(r);
    return (bound ? "at most " : "") + fmtPct(hostNs ? 100.0 * double(busyNs) / double(hostNs) : 0) + ofWhat +
           (bound ? " (GPU times that are upper bounds count as busy)" : "");
}

class Builder {
public:
    Builder(const Context& cx, Report& r) : m_cx(cx), m_r(r) {}

    bool repeated(const Matched& m) const
    {
        return m.count >= kMinRepeats || (m_cx.wallNs && double(m.hostNs) >= kMinWallShare * double(m_cx.wallNs));
    }

    Finding& add(std::string rule, const Matched& m, uint64_t savings, std::string message)
    {
        Finding f;
        f.rule = std::move(rule);
        f.count = m.count;
        f.ns = m.hostNs;
        f.estimatedSavingsNs = savings;
        f.message = std::move(message);
        f.callsites = topSites(namedSites(m_cx, m.sites), m_cx.options->top);
        f.severity = severityOf(savings);
        m_r.findings.push_back(std::move(f));
        return m_r.findings.back();
    }

    std::string severityOf(uint64_t savings) const
    {
        const double share = m_cx.wallNs ? double(savings) / double(m_cx.wallNs) : 0;
        return share >= kHighShare ? "high" : share >= kMediumShare ? "medium" : "low";
    }

    const Context& cx() const { return m_cx; }
    const Report& report() const { return m_r; }

private:
    const Context& m_cx;
    Report& m_r;
};

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
                       std::to_string(all.count) + " synchronous copies of " + formatBytes(all.bytes) +
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

// The device time the GPU sat idle in the processes of a report: the most that making the host
// faster (fewer launches, no waits) can give back.
uint64_t deviceIdleNs(const Report& r)
{
    uint64_t idle = 0;
    for (const DeviceSummary& d : r.devices) idle += d.activeNs - std::min(d.activeNs, d.busyNs);
    return idle;
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
    Finding& f = b.add("pageable-async-memcpy", m, savings,
                       std::to_string(m.count) + " cudaMemcpyAsync calls on pageable host memory (" + formatBytes(m.bytes) +
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

void launchBound(Builder& b, const Report& r)
{
    const Context& cx = b.cx();
    // Where the program launches CUDA graphs too, what a graph costs the host per node is measured: the
    // fix's own cost, which a kernel's launch comes down to at best (never below the kernel's GPU time).
    const LaunchSummary& L = r.launches;
    const uint64_t perNode = L.graphNodes ? L.graphHostNs / L.graphNodes : 0;
    std::set<std::string> names;
    uint64_t savings = 0, launches = 0, empty = 0, gpuMedianMax = 0, hostMedianMin = UINT64_MAX;
    for (const KernelRow& k : r.kernels) {
        // Only launches that found their stream empty made the GPU wait: one queued behind other work
        // cost the GPU nothing, however slow its launch.
        if (!k.launchBound || k.emptyStreamLaunches < kMinLaunchBound) continue;
        names.insert(k.name);
        launches += k.count;
        empty += k.emptyStreamLaunches;
        // The mean launch cost, not the median: every launch call goes away with fusion or a graph,
        // the slow ones too (a host descheduled mid-launch leaves the GPU idle as long). On a loaded
        // host the median hid a heavy tail: 3.4 us median against 42 us mean, 14 ms estimated where a
        // graph saved 400 ms (tests/savings, tiny -> graph).
        const uint64_t meanLaunchNs = k.count ? k.launchHostNs / k.count : 0;
        const uint64_t perLaunch = std::max(meanLaunchNs, k.medianLaunchHostNs);
        const uint64_t after = std::max(k.gpu.median, perNode);
        savings += k.emptyStreamLaunches * (perLaunch > after ? perLaunch - after : 0);
        gpuMedianMax = std::max(gpuMedianMax, k.gpu.median);
        hostMedianMin = std::min(hostMedianMin, k.medianLaunchHostNs);
    }
    if (names.empty()) return;
    // Launches from several threads overlap in time: their summed cost is no saving beyond the time the
    // GPU actually idled.
    const uint64_t idle = deviceIdleNs(r);
    const bool capped = savings > idle;
    savings = std::min({savings, idle, cx.wallNs});
    Matched m;
    for (const std::string& name : names) {
        const KernelAcc& k = cx.kernels.at(name);
        m.count += k.row.count;
        m.hostNs += k.row.launchHostNs;
        for (const auto& [site, ns] : k.sites) m.sites[site] += ns;
    }
    std::string list;
    size_t shown = 0;
    for (const KernelRow& k : r.kernels) {
        if (!names.count(k.name) || shown == 3) continue;
        list += std::string(shown++ ? ", " : "") + k.name + " (GPU " + formatNs(k.gpu.median) + " vs launch " +
                formatNs(k.medianLaunchHostNs) + ")";
    }
    if (names.size() > shown) list += ", ...";
    Finding& f = b.add("launch-bound-kernels", m, savings,
                       std::to_string(names.size()) + " kernel(s), launched " + std::to_string(launches) +
                           " times, run for less GPU time than the host takes to launch them: " + list + ". " +
                           std::to_string(empty) + " of these launches found their stream empty: the GPU waited for "
                           "the CPU. Fuse the kernels, or capture the sequence in a CUDA graph and launch it once" +
                           (perNode ? " (this program's graph launches already cost the host " + formatNs(perNode) +
                                          " per node, against " + formatNs(hostMedianMin) + " or more per launch here)"
                                    : std::string()) +
                           ". Estimated saving " + formatNs(savings) +
                           ", assuming fusion or a graph brings the host cost per kernel (its mean: every launch call "
                           "goes, the slow ones too) down to the kernel's own median GPU time" +
                           (perNode ? " or the graphs' measured cost per node, whichever is more," : "") +
                           " for the launches the GPU waited for" +
                           (capped ? ", and no more than the GPU's idle time (" + formatNs(idle) + ")" : std::string()) + ".");
    f.evidence = {{"kernels", double(names.size())}, {"launches", double(launches)}, {"empty_stream_launches", double(empty)},
                  {"launch_host_ns", double(m.hostNs)}, {"max_median_gpu_ns", double(gpuMedianMax)},
                  {"min_median_launch_ns", double(hostMedianMin)}, {"gpu_idle_ns", double(idle)},
                  {"graph_host_ns_per_node", double(perNode)}};
}

void gpuIdleAndStarved(Builder& b, const Report& r)
{
    const Context& cx = b.cx();
    // gpu-idle: a symptom; the findings that explain it carry the savings.
    Matched idle, starved;
    std::string idleText, starvedText;
    uint64_t starvedNs = 0;
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
                        formatNs(d.largestGapNs) + ")" +
                        (d.upperBoundOps ? " (" + std::to_string(d.upperBoundOps) +
                                               " of its GPU times are upper bounds: blocking copies or memsets)"
                                         : "");
        }
        if (!acc || !acc->anyBusy) continue;
        const uint64_t span = acc->lastBusy - acc->firstBusy;
        // A data-loading bottleneck recurs: the longest single pause (start-up, lazy loading) does not
        // count, nor does gpuspy's own time on the app's threads, which also falls outside CUDA calls.
        uint64_t overhead = 0;
        for (const ProcessSummary& p : r.processes)
            if (p.pid == d.pid) overhead = p.gpuspyOverheadNs;
        const uint64_t recurring = d.starvedNs - d.largestStarvedNs;
        const uint64_t counted = recurring > overhead ? recurring - overhead : 0;
        if (span && double(counted) >= kStarvedShare * double(span)) {
            starved.count += d.gaps;
            starved.hostNs += d.starvedNs;
            starvedNs += counted;
            starvedText += std::string(starvedText.empty() ? "" : "; ") + who + ": " + formatNs(counted) + " (" +
                           fmtPct(100.0 * double(counted) / double(span)) + " of the " + formatNs(span) +
                           " from its first to its last operation; " + formatNs(d.starvedNs) + " in all, less the " +
                           "longest single pause (" + formatNs(d.largestStarvedNs) + ")" +
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
    if (idle.count || !idleText.empty()) {
        Finding& f = b.add("gpu-idle", idle, 0,
                           "The GPU was idle most of the time: " + idleText +
                               ". No saving is estimated for this symptom: the findings that explain it (launch, "
                               "transfer, sync or CPU-side gaps) carry it." + samplingCaveat);
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

void syncInLoop(Builder& b)
{
    const Context& cx = b.cx();
    // Per process and named site: the waits, and the span from the first to the last of them.
    struct Group {
        LoopSyncAcc acc;
        std::vector<uint32_t> raw;
    };
    std::map<std::pair<size_t, int>, Group> groups;
    for (const auto& [raw, a] : cx.findings.loopSyncs) {
        const RawSite& rs = cx.rawSites[raw];
        if (rs.site == kNoSite) continue;
        Group& g = groups[{rs.proc, rs.site}];
        g.acc.count += a.count;
        g.acc.blocked += a.blocked;
        g.acc.busy += a.busy;
        if (a.first < g.acc.first) g.acc.device = a.device;
        g.acc.first = std::min(g.acc.first, a.first);
        g.acc.last = std::max(g.acc.last, a.last);
        for (const auto& [api, n] : a.apis) g.acc.apis[api] += n;
        g.raw.push_back(raw);
    }
    Matched m;
    uint64_t savings = 0, between = 0, idleBetween = 0;
    std::string where;
    for (const auto& [key, g] : groups) {
        const LoopSyncAcc& a = g.acc;
        if (a.count < kMinLoopSyncs) continue;
        // With one wait after the loop, the host's work between the waits overlaps the GPU work it waited
        // for (as far as the GPU was busy in the waits), and the waits' own idle part goes too: the time
        // the host took to notice the GPU was done. But only where the GPU was idle: a wait on a GPU that
        // stays busy costs nothing (the GPU is the bottleneck), so the saving is at most the GPU's idle
        // time from the first wait to the last. tests/savings (sync-loop -> sync-once on a loaded host):
        // the waits woke 1.7 ms a step after the GPU was done; counting only the host's work between them
        // estimated a fifth of the saving.
        const uint64_t span = a.last - a.first;
        const uint64_t other = span > a.blocked ? span - a.blocked : 0;
        const uint64_t busy = std::min(a.busy, a.blocked);
        uint64_t idle = span;
        if (key.first < cx.devices.size())
            if (auto d = cx.devices[key.first].find(a.device); d != cx.devices[key.first].end())
                idle = d->second.idleBetween(a.first, a.last);
        savings += std::min({a.blocked - busy + std::min(other, busy), idle});
        between += other;
        idleBetween += idle;
        m.count += a.count;
        m.hostNs += a.blocked;
        m.busyNs += a.busy;
        for (uint32_t raw : g.raw) m.sites[raw] += cx.findings.loopSyncs.at(raw).blocked;
        if (where.size() < 400) {
            std::string api = a.apis.begin()->first;
            for (const auto& [n, k] : a.apis)
                if (k > a.apis.at(api)) api = n;
            where += std::string(where.empty() ? "" : "; ") + displayName(api) + " " + std::to_string(a.count) +
                     " times from " + cx.sites[size_t(key.second)].label;
        }
    }
    if (!m.count) return;
    Finding& f = b.add("sync-in-loop", m, savings,
                       "The host waited for the GPU over and over from the same place: " + where + ". " +
                           std::to_string(m.count) + " waits blocked " + formatNs(m.hostNs) + " (the GPU was busy " +
                           busyShare(b.report(), m.busyNs, m.hostNs, " of it") + "). Synchronize once after the loop, or wait on an event only where the host needs "
                           "the results. Estimated saving " + formatNs(savings) + ", assuming the host's work between "
                           "the waits (" + formatNs(between) + ") would overlap the GPU work it waited for and the "
                           "waits' idle part (the GPU done, the host not yet back: " + formatNs(m.hostNs - std::min(m.hostNs, m.busyNs)) +
                           ") would go, which saves no more than the GPU's idle time between the first and the last wait (" +
                           formatNs(idleBetween) + ").");
    f.evidence = {{"waits", double(m.count)}, {"blocked_ns", double(m.hostNs)}, {"gpu_busy_ns", double(m.busyNs)},
                  {"host_work_between_ns", double(between)}, {"gpu_idle_between_ns", double(idleBetween)}};
}

void implicitSync(Builder& b)
{
    const Context& cx = b.cx();
    const Matched& all = cx.findings.hotAll;
    std::map<int, uint64_t> perSiteCount;
    for (const auto& [raw, a] : cx.findings.hotAllocs) perSiteCount[cx.rawSites[raw].site] += a.count;
    std::set<int> hotSites;
    for (const auto& [s, n] : perSiteCount)
        if (s != kNoSite && n >= kMinHotAllocs) hotSites.insert(s);
    if (hotSites.empty()) return;
    // Only the calls from the hot sites.
    Matched h;
    for (const auto& [raw, a] : cx.findings.hotAllocs) {
        if (!hotSites.count(cx.rawSites[raw].site)) continue;
        h.count += a.count;
        h.hostNs += a.hostNs;
        h.busyNs += a.busyNs;
        h.sites[raw] += a.hostNs;
    }
    const Matched& pooled = cx.findings.pooled;
    uint64_t ref = 0;
    std::string refText = "assuming a memory pool makes them nearly free";
    if (pooled.count) {
        ref = pooled.host.stats().median;
        refText = "assuming each would cost the " + formatNs(ref) +
                  " (median) this program's stream-ordered allocations (cudaMallocAsync/cudaFreeAsync) cost";
    }
    uint64_t savings = h.hostNs > ref * h.count ? h.hostNs - ref * h.count : 0;
    // The part the frees waited on a busy GPU is saved only as far as the host's work can fill the GPU's
    // idle time (a wait on a GPU that stays busy costs nothing). tests/savings (free-loop -> free-once, a
    // 20 ms kernel before each free): the calls took 20 ms a step, the fix saved the 0.3 ms of host work a
    // step that now overlaps the kernel.
    const uint64_t idle = deviceIdleNs(b.report());
    const uint64_t busyWait = std::min(savings, h.busyNs);
    const uint64_t idleWait = savings - busyWait;  // the GPU sat idle then: part of its idle time already
    const uint64_t room = idle > idleWait ? idle - idleWait : 0;
    if (busyWait > room) {
        savings = idleWait + room;
        refText += "; of it, " + formatNs(busyWait) + " waited on a busy GPU, which saves no more than the GPU's idle "
                   "time (" + formatNs(idle) + ")";
    }
    Finding& f = b.add("implicit-sync", h, savings,
                       std::to_string(h.count) + " allocations and frees in the hot path" + siteLabel(cx, topSites(namedSites(cx, h.sites), 1)) +
                           " took " + formatNs(h.hostNs) + " of host time; frees wait for the whole device (the GPU "
                           "was busy " + busyShare(b.report(), h.busyNs, h.hostNs, " of it") +
                           "). Allocate once outside the loop, or use stream-ordered allocation "
                           "(cudaMallocAsync/cudaFreeAsync) or a pool. Estimated saving at most " + formatNs(savings) +
                           ", " + refText + "; less where the host has no work of its own to overlap the GPU work the "
                           "frees waited for (the waits on a busy GPU then move elsewhere).");
    // An upper bound: the calls' own host time is all that removing them can take off the host's path.
    // tests/savings (free-loop -> free-once): the fix saved 0.2x-0.9x of it, never more.
    f.savingsBound = "at_most";
    f.evidence = {{"calls", double(h.count)}, {"host_ns", double(h.hostNs)}, {"gpu_busy_ns", double(h.busyNs)},
                  {"alloc_free_calls_total", double(all.count)}, {"reference_call_ns", double(ref)},
                  {"gpu_idle_ns", double(idle)}};
}

void droppedRecords(Builder& b, const Report& r)
{
    uint64_t dropped = 0, made = 0, cut = 0;
    std::string cutText;
    for (const ProcessSummary& p : r.processes) {
        dropped += p.droppedRecords;
        made += p.recordsMade;
        if (!p.streamError.empty()) {
            ++cut;
            cutText += " pid " + std::to_string(p.pid) + ": " + p.streamError + ".";
        }
    }
    if (!dropped && !cut && !r.badStreams) return;
    Matched m;
    m.count = dropped;
    std::string msg;
    if (dropped)
        msg = std::to_string(dropped) + (made ? " of " + std::to_string(made) : std::string()) +
              " records were dropped (gpuspy's queue was full or its writer failed): every count and time in this "
              "report is a lower bound. Record with a smaller --stack-depth, or --no-gpu-time, to lighten the load.";
    if (cut || r.badStreams)
        msg += std::string(msg.empty() ? "" : " ") + std::to_string(cut + r.badStreams) +
               (cut + r.badStreams == 1 ? " stream was" : " streams were") +
               " cut short; their records up to the cut are included." + cutText;
    Finding& f = b.add("dropped-records", m, 0, msg);
    f.severity = made && double(dropped) > 0.01 * double(made) ? "high" : "medium";
    f.evidence = {{"dropped", double(dropped)}, {"records", double(made)}, {"cut_streams", double(cut + r.badStreams)}};
}

}  // namespace

void Matched::add(const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    ++count;
    hostNs += detail::hostNs(c);
    host.add(detail::hostNs(c));
    busyNs += ci.busyNs;
    if (c.category == wire::Category::Transfer) bytes += c.args.transfer.bytes;
    if (ci.timed) {
        ++timed;
        timedGpuNs += ci.gpuNs;
        timedHostNs += detail::hostNs(c);
        const uint64_t moved = c.category == wire::Category::Transfer ? c.args.transfer.bytes : 0;
        timedBytes += moved;
        // Per kind of copy (direction, memory kinds, bytes) the shortest GPU time: alike copies do the
        // same device work.
        auto addToGroup = [&](std::map<GroupKey, BoundedGroup>& groups, uint64_t& looseNs) {
            auto g = groups.end();
            if (c.category == wire::Category::Transfer) {
                const wire::TransferArgs& t = c.args.transfer;
                const GroupKey key = std::make_tuple(uint8_t(t.direction), uint8_t(t.srcMem), uint8_t(t.dstMem), moved);
                g = groups.find(key);
                if (g == groups.end() && groups.size() < kMaxBoundedGroups) g = groups.emplace(key, BoundedGroup{}).first;
            }
            if (g != groups.end()) {
                ++g->second.count;
                g->second.minGpuNs = std::min(g->second.minGpuNs, ci.gpuNs);
            } else {
                looseNs += ci.gpuNs;
            }
        };
        if (!ci.upperBound) {
            gpu.add(ci.gpuNs);
            addToGroup(measuredGroups, measuredLooseNs);
        } else {
            ++bounded;
            boundedGpuNs += ci.gpuNs;
            boundedBytes += moved;
            boundedHostNs += detail::hostNs(c);
            addToGroup(boundedGroups, boundedLooseNs);
        }
    }
    sites[ci.rawSite] += detail::hostNs(c);
}

uint64_t Matched::measuredTightNs() const
{
    uint64_t ns = measuredLooseNs;
    for (const auto& [key, g] : measuredGroups) ns += g.count * g.minGpuNs;
    return ns;
}

uint64_t Matched::boundedTightNs() const
{
    uint64_t ns = boundedLooseNs;
    for (const auto& [key, g] : boundedGroups) ns += g.count * g.minGpuNs;
    return ns;
}

void addFindingCall(Context& cx, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    FindingAccs& F = cx.findings;
    if (isCountedTransfer(c)) {
        const wire::Direction dir = c.args.transfer.direction;
        const int side = dir == wire::Direction::HtoD ? 0 : dir == wire::Direction::DtoH ? 1 : -1;
        const bool async = hasFlag(c, wire::kCallAsync);
        const std::string memory = transferHostMemory(c.args.transfer);
        if (side >= 0 && !async && memory == "pageable") F.pageable[side].add(ci);
        if (side >= 0 && memory == "pinned") F.pinned[side].add(ci);
        if (!async && isCopy(c) && (isHostCopy(c) || hasFlag(c, wire::kCallImplicitSync))) {
            F.syncMemcpy.add(ci);
            auto [it, fresh] = F.syncMemcpySpan.try_emplace(pv.proc ? pv.proc->pid : 0, c.beginNs, c.endNs);
            it->second = {std::min(it->second.first, c.beginNs), std::max(it->second.second, c.endNs)};
        }
        if (async && isHostCopy(c) && memory == "pageable") F.pageableAsync.add(ci);
        if (async && isHostCopy(c) && memory == "pinned") F.pinnedAsync.add(ci);
        if (isCopy(c) && c.args.transfer.bytes <= kSmallCopyBytes) F.small.add(ci);
    }
    if (isCountedLaunch(c)) F.launches.add(ci);
    if (ci.api->explicitWait && !ci.api->query && ci.rawSite != kNoRawSite) {
        LoopSyncAcc& a = F.loopSyncs[ci.rawSite];
        ++a.count;
        a.blocked += hostNs(c);
        a.busy += ci.busyNs;
        if (c.beginNs < a.first) a.device = c.device;
        a.first = std::min(a.first, c.beginNs);
        a.last = std::max(a.last, c.endNs);
        ++a.apis[ci.api->name];
    }
    if (c.category == wire::Category::Alloc) {
        if (!hasFlag(c, wire::kCallAsync) && !ci.api->asyncName) {
            F.hotAll.add(ci);
            if (ci.rawSite != kNoRawSite) {
                HotAllocAcc& a = F.hotAllocs[ci.rawSite];
                ++a.count;
                a.hostNs += hostNs(c);
                a.busyNs += ci.busyNs;
            }
        }
        if (ci.api->asyncName) F.pooled.add(ci);
    }
}

void analyzeFindings(Context& cx, Report& r)
{
    Builder b(cx, r);
    pageableMemcpy(b);
    syncMemcpy(b);
    pageableAsyncMemcpy(b);
    smallTransfers(b);
    launchBound(b, r);
    gpuIdleAndStarved(b, r);
    syncInLoop(b);
    implicitSync(b);
    droppedRecords(b, r);
    std::stable_sort(r.findings.begin(), r.findings.end(), [](const Finding& a, const Finding& c) {
        return a.estimatedSavingsNs > c.estimatedSavingsNs || (a.estimatedSavingsNs == c.estimatedSavingsNs && a.ns > c.ns);
    });
}

}  // namespace gpuspy::collect::detail
