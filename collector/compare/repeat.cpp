// collector/compare/repeat.cpp: the figures of each run of a repeated recording and their spread over the runs.
#include "collector/compare/repeat.h"

#include "collector/analyze/analyze.h"

#include <algorithm>
#include <limits>
#include <set>

namespace gpuspy::collect {

double Spread::spreadPct() const
{
    if (max == min) return 0;
    if (median == 0) return std::numeric_limits<double>::infinity();
    return 100.0 * double(max - min) / double(median);
}

Spread spreadOf(std::vector<uint64_t> values)
{
    Spread s;
    s.runs = values.size();
    if (values.empty()) return s;
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    s.min = values.front();
    s.max = values.back();
    s.median = n % 2 ? values[n / 2] : values[n / 2 - 1] + (values[n / 2] - values[n / 2 - 1]) / 2;
    s.values = std::move(values);
    return s;
}

RunFigures runFigures(const Report& r)
{
    RunFigures f;
    uint64_t wall = 0, api = 0, busy = 0, blocked = 0, bytes = 0;
    for (const ProcessSummary& p : r.processes) {
        f.pids.push_back(p.pid);
        if (p.wallNs >= wall) {
            f.cpuWaitNs = p.cpuWaitNs;
            f.cpuWaitKnown = p.cpuWaitKnown;
        }
        wall = std::max(wall, p.wallNs);
        api += p.cudaApiNs;
    }
    for (const DeviceSummary& d : r.devices) busy += d.busyNs;
    for (const SyncRow& s : r.syncs) blocked += s.blockedNs;
    for (const TransferRow& t : r.transfers) {
        bytes += t.bytes;
        f.transferHostNs[t.direction + ' ' + t.hostMemory + ' ' + t.mode] += t.hostNs;
    }
    for (const KernelRow& k : r.kernels) f.kernelGpuNs[k.name] += k.estimatedGpuNs;
    for (const Finding& x : r.findings) f.findingSavingsNs[x.rule] += x.estimatedSavingsNs;
    f.headline = {{"wall_ns", wall},         {"cuda_api_ns", api},          {"gpu_busy_ns", busy},
                  {"launches", r.launches.count}, {"sync_blocked_ns", blocked}, {"transfer_bytes", bytes}};
    return f;
}

namespace {

// One row per name seen in any run, in the order of the largest median first.
std::vector<SpreadRow> spreads(const std::vector<RunFigures>& runs,
                               const std::map<std::string, uint64_t> RunFigures::*figures, bool keepOrder)
{
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const RunFigures& r : runs)
        for (const auto& [name, value] : r.*figures)
            if (seen.insert(name).second) names.push_back(name);
    std::vector<SpreadRow> rows;
    for (const std::string& name : names) {
        std::vector<uint64_t> values;
        for (const RunFigures& r : runs) {
            auto it = (r.*figures).find(name);
            values.push_back(it == (r.*figures).end() ? 0 : it->second);
        }
        rows.push_back({name, spreadOf(std::move(values))});
    }
    if (!keepOrder)
        std::stable_sort(rows.begin(), rows.end(),
                         [](const SpreadRow& a, const SpreadRow& b) { return a.spread.median > b.spread.median; });
    return rows;
}

}  // namespace

RunsSummary summarizeRuns(std::vector<RunFigures> runs)
{
    RunsSummary s;
    s.runs = std::move(runs);
    if (s.runs.empty()) return s;
    std::vector<size_t> byWall(s.runs.size());
    for (size_t i = 0; i < byWall.size(); ++i) byWall[i] = i;
    std::stable_sort(byWall.begin(), byWall.end(), [&](size_t a, size_t b) {
        return s.runs[a].headline["wall_ns"] < s.runs[b].headline["wall_ns"];
    });
    s.medianRun = byWall[(byWall.size() - 1) / 2];
    // The headline in a fixed order (wall first), the rest by size.
    std::vector<SpreadRow> headline = spreads(s.runs, &RunFigures::headline, true);
    static const char* const kOrder[] = {"wall_ns", "cuda_api_ns", "gpu_busy_ns", "launches", "sync_blocked_ns",
                                         "transfer_bytes"};
    for (const char* name : kOrder)
        for (const SpreadRow& row : headline)
            if (row.name == name) s.headline.push_back(row);
    s.kernels = spreads(s.runs, &RunFigures::kernelGpuNs, false);
    s.transfers = spreads(s.runs, &RunFigures::transferHostNs, false);
    s.findings = spreads(s.runs, &RunFigures::findingSavingsNs, false);
    return s;
}

}  // namespace gpuspy::collect
