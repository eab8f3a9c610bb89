// collector/findings/launches.cpp: launch-bound kernels: launches whose host cost exceeds the kernels' GPU time.
#include "collector/findings/rules.h"

#include "collector/model/api_names.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace gpuspy::collect::detail::rules {

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
    // (A kernel's rows are keyed by name, or by name and launch configuration with --by-launch-config.)
    for (const auto& [key, k] : cx.kernels) {
        if (!names.count(k.row.name)) continue;
        m.count += k.row.count;
        m.hostNs += k.row.launchHostNs;
        for (const auto& [site, ns] : k.sites) m.sites[site] += ns;
    }
    std::string list;
    size_t shown = 0;
    for (const KernelRow& k : r.kernels) {
        if (!names.count(k.name) || shown == 3) continue;
        // A GPU time from one or two timed launches says so: its spread is unknown.
        const std::string few = k.timedCount && k.timedCount <= 2
                                    ? std::string(", from ") + (k.timedCount == 1 ? "one timed launch" : "two timed launches")
                                    : std::string();
        list += std::string(shown++ ? ", " : "") + k.name + " (GPU " + formatNs(k.gpu.median) + few + " vs launch " +
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

// graph-launch-bound: graph launches whose host time exceeds the GPU time of the work they launch, the GPU
// waiting for them (they found their stream empty). A decode loop that launches a graph each step, reads
// the token and launches the next one is the shape: the graph saves the per-kernel launches but its own
// launch, per node, can still cost more than the graph runs.
void addGraphLaunchUse(FindingAccs& F, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    if (c.category != wire::Category::Graph || !hasFlag(c, wire::kCallDeviceWork) || hasFlag(c, wire::kCallCapturing) ||
        c.result != 0 || ci.rawSite == kNoRawSite)
        return;
    GraphLaunchAcc& a = F.graphLaunches[ci.rawSite];
    ++a.count;
    a.hostNs += hostNs(c);
    if (auto ex = pv.graphs.execs.find(c.args.sync.object); ex != pv.graphs.execs.end() && ex->second)
        a.nodes += ex->second->size();
    if (ci.timed && !ci.upperBound) {
        ++a.timed;
        a.timedGpuNs += ci.gpuNs;
        a.timedHostNs += hostNs(c);
    }
    if (ci.foundEmpty) {
        ++a.foundEmpty;
        a.emptyHostNs += hostNs(c);
    }
}

void graphLaunchBound(Builder& b)
{
    const Context& cx = b.cx();
    Matched m;
    uint64_t nodes = 0, timed = 0, timedGpu = 0, timedHost = 0, empty = 0, emptyHost = 0;
    for (const auto& [raw, a] : cx.findings.graphLaunches) {
        // The GPU waited for most of them, and a timed launch cost the host more than its graph ran.
        if (a.count < kMinRepeats || a.foundEmpty * 2 < a.count || !a.timed || a.timedHostNs <= a.timedGpuNs) continue;
        m.count += a.count;
        m.hostNs += a.hostNs;
        m.sites[raw] += a.hostNs;
        nodes += a.nodes;
        timed += a.timed;
        timedGpu += a.timedGpuNs;
        timedHost += a.timedHostNs;
        empty += a.foundEmpty;
        emptyHost += a.emptyHostNs;
    }
    if (!m.count) return;
    const uint64_t perLaunch = m.hostNs / m.count, gpuPerLaunch = timedGpu / timed;
    const uint64_t perNode = nodes ? m.hostNs / nodes : 0;
    // The launches the GPU waited for, brought down to an empty graph's launch.
    const uint64_t savings = emptyHost > empty * kGraphLaunchFloorNs ? emptyHost - empty * kGraphLaunchFloorNs : 0;
    Finding& f = b.add(
        "graph-launch-bound", m, savings,
        std::to_string(m.count) + " CUDA graph launches" + siteLabel(cx, topSites(namedSites(cx, m.sites), 1)) + " cost the host " +
            formatNs(perLaunch) + " each" +
            (nodes ? " (" + std::to_string(nodes / m.count) + " nodes a launch, " + formatNs(perNode) + " a node)" : std::string()) +
            ", more than the " + formatNs(gpuPerLaunch) + " of GPU work each launched (from " + std::to_string(timed) +
            " timed); " + std::to_string(empty) + " of them found their stream empty: the GPU waited while the host launched. "
            "Launch fewer, larger graphs (fuse the graph's small kernels, or put several steps in one graph where the host "
            "does not need each step's result), upload the graph once after instantiating it (cudaGraphUpload), or let "
            "the GPU launch the next step itself (device-side graph launch, conditional nodes). Estimated saving " +
            formatNs(savings) + ": those launches brought down to an empty graph's (" + formatNs(kGraphLaunchFloorNs) +
            "); a fix that leaves more nodes saves less, one that fuses kernels also takes out the GPU's gaps between them.");
    f.evidence = {{"launches", double(m.count)}, {"host_ns", double(m.hostNs)}, {"nodes", double(nodes)},
                  {"timed", double(timed)}, {"timed_gpu_ns", double(timedGpu)}, {"timed_host_ns", double(timedHost)},
                  {"found_empty", double(empty)}};
}

}  // namespace gpuspy::collect::detail::rules
