// collector/analyze_launches.cpp: kernel launches: how many, how fast the host issues them, what each
// costs on the host and on the GPU, which kernels are launch-bound, and how long the GPU sits idle.
#include "collector/analyze_internal.h"

#include "collector/api_names.h"

#include <algorithm>

namespace gpuspy::collect::detail {

bool isCountedLaunch(const wire::CallBody& c)
{
    return c.category == wire::Category::Launch && succeeded(c) && !hasFlag(c, wire::kCallCapturing);
}

void analyzeLaunches(Context& cx, Report& r)
{
    struct Acc {
        KernelRow row;
        std::vector<uint64_t> gpu, host;
        std::map<int, uint64_t> sites;
    };
    std::map<std::string, Acc> kernels;  // by demangled name: the same kernel in several processes is one row
    LaunchSummary& L = r.launches;
    std::vector<uint64_t> host;
    uint64_t activeNs = 0;
    for (const ProcView& pv : cx.procs) {
        activeNs += pv.activeEnd - pv.activeBegin;
        for (size_t i = 0; i < pv.calls.size(); ++i) {
            const wire::CallBody& c = *pv.calls[i];
            if (c.category == wire::Category::Graph && hasFlag(c, wire::kCallDeviceWork)) {
                if (!succeeded(c) || hasFlag(c, wire::kCallCapturing)) continue;
                ++L.graphLaunches;
                L.graphHostNs += hostNs(c);
                L.graphGpuNs += pv.gpuNs(c);
                continue;
            }
            if (c.category != wire::Category::Launch) continue;
            if (!succeeded(c)) {
                ++L.failed;
                continue;
            }
            if (hasFlag(c, wire::kCallCapturing)) {
                ++L.captured;
                continue;
            }
            host.push_back(hostNs(c));
            std::string mangled;
            std::string name = c.args.launch.kernelId == 0 && driverBaseName(pv.apiName(c)) == "cuLaunchHostFunc"
                                   ? "[host function]"
                                   : pv.kernelName(c.args.launch.kernelId, &mangled);
            Acc& a = kernels[name];
            a.row.name = name;
            if (a.row.mangled.empty()) a.row.mangled = mangled;
            ++a.row.count;
            a.row.launchHostNs += hostNs(c);
            a.host.push_back(hostNs(c));
            if (pv.timed(c)) {
                ++L.timed;
                ++a.row.timedCount;
                const uint64_t g = pv.gpuNs(c);
                a.row.gpuNs += g;
                a.gpu.push_back(g);
            } else if (hasFlag(c, wire::kCallGpuSampledOut)) {
                ++L.sampledOut;
            }
            a.sites[pv.site[i]] += hostNs(c);
        }
        for (const auto& [dev, busy] : pv.busy)
            for (const Interval& g : busy.gaps()) {
                L.idleGapNs += g.length();
                L.largestGapNs = std::max(L.largestGapNs, g.length());
            }
    }
    L.host = durationStats(std::move(host));
    L.count = L.host.count;
    L.hostNs = L.host.total;
    L.medianHostNs = L.host.median;
    L.p99HostNs = L.host.p99;
    L.perSecond = activeNs ? double(L.count) * 1e9 / double(activeNs) : 0;
    for (auto& [name, a] : kernels) {
        KernelRow& k = a.row;
        k.gpu = durationStats(std::move(a.gpu));
        const DurationStats h = durationStats(std::move(a.host));
        k.medianLaunchHostNs = h.median;
        // Untimed launches (sampled out) are assumed to take the timed ones' mean.
        k.estimatedGpuNs = k.timedCount ? uint64_t(double(k.gpuNs) * double(k.count) / double(k.timedCount) + 0.5) : 0;
        k.launchBound = k.timedCount > 0 && k.gpu.median < k.medianLaunchHostNs;
        if (k.launchBound) {
            ++L.launchBoundKernels;
            L.launchBoundNames.push_back(k.name);
        }
        k.callsites = topSites(a.sites, cx.options->top);
        r.kernels.push_back(std::move(k));
    }
    std::stable_sort(r.kernels.begin(), r.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
        return a.estimatedGpuNs > b.estimatedGpuNs || (a.estimatedGpuNs == b.estimatedGpuNs && a.count > b.count);
    });
    if (L.sampledOut)
        L.samplingNote = std::to_string(L.sampledOut) + " of " + std::to_string(L.count) +
                         " launches were not timed (sampled out); each kernel's estimated GPU time assumes its "
                         "untimed launches took the mean of its timed ones";
}

}  // namespace gpuspy::collect::detail
