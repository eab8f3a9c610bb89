// collector/analyze/launches.cpp: kernel launches: how many, how fast the host issues them, what each
// costs on the host and on the GPU, which kernels are launch-bound, and how long the GPU sits idle; host
// functions (cudaLaunchHostFunc) apart, in their own row.
#include "collector/analyze/internal.h"

#include "collector/model/api_names.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuspy::collect::detail {

bool isCountedLaunch(const ApiClass& api, const wire::CallBody& c)
{
    return c.category == wire::Category::Launch && !api.hostFunc && succeeded(c) && !hasFlag(c, wire::kCallCapturing);
}

namespace {
void addLaunchTo(Context& cx, KernelAcc& a, const CallInfo& ci, bool kernel);
}

void addLaunch(Context& cx, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    LaunchSummary& L = cx.launches;
    if (c.category == wire::Category::Graph && hasFlag(c, wire::kCallDeviceWork)) {
        if (!succeeded(c) || hasFlag(c, wire::kCallCapturing)) return;
        ++L.graphLaunches;
        L.graphHostNs += hostNs(c);
        L.graphGpuNs += ci.gpuNs;
        addGraphLaunch(cx, pv, ci);
        return;
    }
    if (c.category != wire::Category::Launch) return;
    // A host function is host code the stream runs, not a kernel: its own row, and no launch to count
    // (failed, captured, or toward the launch rate or a launch-bound kernel: "fuse the kernels" cannot
    // apply to it).
    const bool hostFunction = c.args.launch.kernelId == 0 && ci.api->hostFunc;
    if (!succeeded(c)) {
        if (!hostFunction) ++L.failed;
        return;
    }
    if (hasFlag(c, wire::kCallCapturing)) {
        if (!hostFunction) ++L.captured;
        return;
    }
    if (!hostFunction) cx.launchHost.add(hostNs(c));
    addLaunchTo(cx, kernelAccOf(cx, pv, c, hostFunction), ci, !hostFunction);
}

KernelAcc& kernelAccOf(Context& cx, const ProcView& pv, const wire::CallBody& c, bool hostFunction)
{
    if (hostFunction) {
        if (cx.hostFunctions.row.name.empty()) cx.hostFunctions.row.name = "[host function]";
        return cx.hostFunctions;
    }
    if (cx.options && cx.options->byLaunchConfig) {
        // A row per kernel and launch configuration: which size of an operator is slow.
        std::string mangled;
        std::string name = pv.kernelName(c.args.launch.kernelId, &mangled);
        const wire::LaunchArgs& l = c.args.launch;
        const std::string config = fmt::format("grid {}x{}x{} block {}x{}x{}", l.grid[0], l.grid[1], l.grid[2], l.block[0],
                                               l.block[1], l.block[2]);
        KernelAcc& k = cx.kernels[name + '\n' + config];
        if (k.row.name.empty()) k.row.name = name, k.row.launchConfig = config;
        if (k.row.mangled.empty()) k.row.mangled = mangled;
        return k;
    }
    KernelAcc*& slot = pv.kernelAccs[c.args.launch.kernelId];
    if (slot) return *slot;
    std::string mangled;
    std::string name = pv.kernelName(c.args.launch.kernelId, &mangled);
    KernelAcc& k = cx.kernels[name];
    if (k.row.name.empty()) k.row.name = name;
    if (k.row.mangled.empty()) k.row.mangled = mangled;
    // A kernel defined later than its first launch is named again then.
    if (pv.proc->kernels.count(c.args.launch.kernelId)) slot = &k;
    return k;
}

namespace {

// kernel: a kernel launch (false: a host function), which the launch summary counts.
void addLaunchTo(Context& cx, KernelAcc& a, const CallInfo& ci, bool kernel)
{
    const wire::CallBody& c = *ci.call;
    LaunchSummary& L = cx.launches;
    ++a.row.count;
    a.row.launchHostNs += hostNs(c);
    a.host.add(hostNs(c));
    if (ci.timed) {
        if (kernel) ++L.timed;
        ++a.row.timedCount;
        a.row.gpuNs += ci.gpuNs;
        a.gpu.add(ci.gpuNs);
    } else if (hasFlag(c, wire::kCallGpuSampledOut) && kernel) {
        ++L.sampledOut;
    }
    if (ci.foundEmpty) ++a.row.emptyStreamLaunches;
    a.sites[ci.rawSite] += hostNs(c);
}

}  // namespace

void finishLaunches(Context& cx, Report& r)
{
    LaunchSummary& L = r.launches;
    L = cx.launches;
    uint64_t activeNs = 0;
    for (const ProcessSummary& p : cx.processes) activeNs += p.activeEndNs - p.activeBeginNs;
    for (const auto& devices : cx.devices)
        for (const auto& [id, d] : devices) {
            L.idleGapNs += d.idleGapNs;
            L.largestGapNs = std::max(L.largestGapNs, d.largestGapNs);
        }
    L.host = cx.launchHost.stats();
    L.count = L.host.count;
    L.hostNs = L.host.total;
    L.medianHostNs = L.host.median;
    L.p99HostNs = L.host.p99;
    L.perSecond = activeNs ? double(L.count) * 1e9 / double(activeNs) : 0;
    // Untimed launches (sampled out) are assumed to take the timed ones' mean; graph nodes have their
    // share of their launches' time.
    auto finishRow = [&](KernelAcc& a) {
        KernelRow& k = a.row;
        k.gpu = a.gpu.stats();
        k.medianLaunchHostNs = a.host.stats().median;
        const uint64_t own = k.count > k.graphCount ? k.count - k.graphCount : 0;
        // (Saturated: a damaged capture's spans may sum past what a uint64 holds once scaled.)
        const double scaled = k.timedCount ? double(k.gpuNs) * double(own) / double(k.timedCount) + 0.5 : 0;
        const uint64_t ownNs = scaled >= 18446744073709549568.0 ? UINT64_MAX : uint64_t(scaled);
        k.estimatedGpuNs = ownNs > UINT64_MAX - k.graphGpuNs ? UINT64_MAX : ownNs + k.graphGpuNs;
        k.callsites = topSites(namedSites(cx, a.sites), cx.options->top);
    };
    if (cx.hostFunctions.row.count) {
        finishRow(cx.hostFunctions);
        r.hostFunctions = cx.hostFunctions.row;
    }
    for (auto& [name, a] : cx.kernels) {
        KernelRow& k = a.row;
        finishRow(a);
        k.launchBound = k.timedCount > 0 && k.gpu.median < k.medianLaunchHostNs;
        if (k.launchBound) {
            ++L.launchBoundKernels;
            L.launchBoundNames.push_back(k.name);
        }
        r.kernels.push_back(k);
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
