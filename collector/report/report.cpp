// collector/report/report.cpp: the report's sections as flat tables of raw values (ns, bytes, plain numbers),
// shared by the CSV renderer and the exports.
#include "collector/report/report.h"

#include "collector/model/api_names.h"

#include <cstdio>

namespace gpuspy::collect {

namespace {

std::string num(uint64_t v) { return std::to_string(v); }
std::string num(int v) { return std::to_string(v); }
std::string num(double v)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}
std::string flag(bool b) { return b ? "true" : "false"; }

std::string join(const std::vector<uint32_t>& v)
{
    std::string s;
    for (uint32_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
    return s;
}

}  // namespace

std::vector<Table> reportTables(const Report& r)
{
    std::vector<Table> out;
    {
        Table t{"processes", {"pid", "ppid", "command", "wall_ns", "cuda_api_ns", "cuda_api_pct", "gpuspy_overhead_ns",
                              "dropped_records", "records_made", "calls", "threads", "device_ops", "timed_ops",
                              "sampled_out_ops", "ended"}, {}};
        for (const ProcessSummary& p : r.processes)
            t.rows.push_back({num(uint64_t(p.pid)), num(uint64_t(p.ppid)), p.command, num(p.wallNs), num(p.cudaApiNs),
                              num(p.cudaApiPct), num(p.gpuspyOverheadNs), num(p.droppedRecords), num(p.recordsMade),
                              num(p.calls), num(p.threads), num(p.deviceOps), num(p.timedOps), num(p.sampledOutOps),
                              flag(p.ended)});
        out.push_back(std::move(t));
    }
    {
        Table t{"devices", {"pid", "id", "name", "busy_ns", "busy_pct", "active_ns", "ops", "timed_ops", "sampled_out_ops",
                            "kernel_ns", "transfer_ns", "other_ns", "idle_gap_ns", "largest_gap_ns", "gaps", "starved_ns",
                            "upper_bound_ops", "upper_bound_ns"}, {}};
        for (const DeviceSummary& d : r.devices)
            t.rows.push_back({num(uint64_t(d.pid)), num(d.id), d.name, num(d.busyNs), num(d.busyPct), num(d.activeNs),
                              num(d.ops), num(d.timedOps), num(d.sampledOutOps), num(d.kernelNs), num(d.transferNs),
                              num(d.otherNs), num(d.idleGapNs), num(d.largestGapNs), num(d.gaps), num(d.starvedNs),
                              num(d.upperBoundOps), num(d.upperBoundNs)});
        out.push_back(std::move(t));
    }
    {
        Table t{"apis", {"api", "runtime", "category", "count", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns",
                         "p99_ns", "errors"}, {}};
        for (const ApiRow& a : r.apis)
            t.rows.push_back({a.api, a.runtime, a.category, num(a.host.count), num(a.host.total),
                              num(a.host.avg), num(a.host.median), num(a.host.min), num(a.host.max), num(a.host.p99),
                              num(a.errors)});
        out.push_back(std::move(t));
    }
    {
        Table t{"transfers", {"direction", "host_memory", "mode", "count", "bytes", "gpu_ns", "host_ns", "gbps",
                              "gbps_basis", "timed_count", "le_64KiB", "le_1MiB", "gt_1MiB", "callsites", "gpu_time",
                              "upper_bound_count", "upper_bound_gpu_ns"}, {}};
        for (const TransferRow& x : r.transfers) {
            std::vector<std::string> row{x.direction, x.hostMemory, x.mode, num(x.count), num(x.bytes), num(x.gpuNs),
                                         num(x.hostNs), num(x.gbps), x.gbpsBasis, num(x.timedCount)};
            for (size_t i = 0; i < 3; ++i) row.push_back(num(i < x.buckets.size() ? x.buckets[i].count : uint64_t(0)));
            row.push_back(join(x.callsites));
            row.insert(row.end(), {x.gpuTime(), num(x.upperBoundCount), num(x.upperBoundGpuNs)});
            t.rows.push_back(std::move(row));
        }
        out.push_back(std::move(t));
    }
    {
        Table t{"kernels", {"name", "count", "gpu_ns", "median_gpu_ns", "avg_gpu_ns", "min_gpu_ns", "max_gpu_ns",
                            "timed_count", "estimated_gpu_ns", "launch_host_ns", "median_launch_host_ns", "launch_bound",
                            "callsites"}, {}};
        for (const KernelRow& k : r.kernels)
            t.rows.push_back({k.name, num(k.count), num(k.gpuNs), num(k.gpu.median), num(k.gpu.avg), num(k.gpu.min),
                              num(k.gpu.max), num(k.timedCount), num(k.estimatedGpuNs), num(k.launchHostNs),
                              num(k.medianLaunchHostNs), flag(k.launchBound), join(k.callsites)});
        out.push_back(std::move(t));
    }
    {
        Table t{"host_functions", {"count", "stream_ns", "median_stream_ns", "timed_count", "estimated_stream_ns",
                                   "launch_host_ns", "median_launch_host_ns", "graph_count", "callsites"}, {}};
        const KernelRow& h = r.hostFunctions;
        if (h.count)
            t.rows.push_back({num(h.count), num(h.gpuNs), num(h.gpu.median), num(h.timedCount), num(h.estimatedGpuNs),
                              num(h.launchHostNs), num(h.medianLaunchHostNs), num(h.graphCount), join(h.callsites)});
        out.push_back(std::move(t));
    }
    {
        const LaunchSummary& L = r.launches;
        Table t{"launches", {"count", "per_second", "host_ns", "median_host_ns", "p99_host_ns", "timed", "sampled_out",
                             "captured", "failed", "graph_launches", "graph_host_ns", "graph_gpu_ns",
                             "launch_bound_kernels", "idle_gap_ns", "largest_idle_gap_ns"}, {}};
        t.rows.push_back({num(L.count), num(L.perSecond), num(L.hostNs), num(L.medianHostNs), num(L.p99HostNs),
                          num(L.timed), num(L.sampledOut), num(L.captured), num(L.failed), num(L.graphLaunches),
                          num(L.graphHostNs), num(L.graphGpuNs), num(L.launchBoundKernels), num(L.idleGapNs),
                          num(L.largestGapNs)});
        out.push_back(std::move(t));
    }
    {
        Table t{"syncs", {"api", "implicit", "kind", "count", "blocked_ns", "gpu_busy_ns", "not_ready", "median_ns",
                          "max_ns", "callsites", "upper_bound_count"}, {}};
        for (const SyncRow& s : r.syncs)
            t.rows.push_back({s.api, flag(s.implicit), s.kind, num(s.count), num(s.blockedNs), num(s.gpuBusyNs),
                              num(s.notReady), num(s.host.median), num(s.host.max), join(s.callsites),
                              num(s.upperBoundCount)});
        out.push_back(std::move(t));
    }
    {
        Table t{"nvtx", {"name", "ranges", "range_ns", "calls", "cuda_api_ns", "transfers", "transfer_bytes",
                         "transfer_host_ns", "launches", "launch_host_ns", "syncs", "sync_blocked_ns", "gpu_ns",
                         "upper_bound_count", "upper_bound_gpu_ns"}, {}};
        for (const NvtxRow& n : r.nvtx)
            t.rows.push_back({n.name, num(n.ranges), num(n.rangeNs), num(n.calls), num(n.cudaApiNs), num(n.transfers),
                              num(n.transferBytes), num(n.transferHostNs), num(n.launches), num(n.launchHostNs),
                              num(n.syncs), num(n.syncBlockedNs), num(n.gpuNs), num(n.upperBoundCount),
                              num(n.upperBoundGpuNs)});
        out.push_back(std::move(t));
    }
    {
        Table t{"callsites", {"id", "category", "label", "count", "ns", "function", "file", "line", "module"}, {}};
        for (const CallSite& s : r.callsites) {
            ReportFrame f = s.siteFrame < s.frames.size() ? s.frames[s.siteFrame] : ReportFrame{};
            t.rows.push_back({num(uint64_t(s.id)), s.category, s.label, num(s.count), num(s.ns), f.function, f.file,
                              num(uint64_t(f.line)), f.module});
        }
        out.push_back(std::move(t));
    }
    {
        Table t{"findings", {"rank", "rule", "severity", "estimated_savings_ns", "estimated_savings_bound", "count", "ns",
                             "callsites", "message"}, {}};
        uint64_t rank = 0;
        for (const Finding& f : r.findings)
            t.rows.push_back({num(++rank), f.rule, f.severity, num(f.estimatedSavingsNs), f.savingsBound, num(f.count),
                              num(f.ns), join(f.callsites), f.message});
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace gpuspy::collect
