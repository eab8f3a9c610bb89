// collector/compare/repeat.h: the runs of a repeated recording (`gpuspy record --repeat N`): each run's
// headline, per-kernel, per-transfer and per-finding figures, and their spread over the runs (median,
// min, max), which the report prints and `gpuspy diff` uses to tell a change from noise. Pure: the
// figures come from one Report per run.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpuspy::collect {

struct Report;

// A figure whose spread (max - min) is more than this share of its median is marked as too wide to trust.
inline constexpr double kWideSpreadPct = 25;

// One figure over the runs. The median of an even number of runs is the mean of the two middle ones.
struct Spread {
    uint64_t median = 0, min = 0, max = 0;
    size_t runs = 0;
    std::vector<uint64_t> values;  // every run's, sorted (the significance tests')
    // (max - min) / median in percent; 0 when every run gave 0, +infinity when only the median is 0.
    double spreadPct() const;
    bool wide() const { return runs > 1 && spreadPct() > kWideSpreadPct; }
};
Spread spreadOf(std::vector<uint64_t> values);

// The figures of one run, read from its own report. Headline names: wall_ns (the longest process's,
// as diff takes it), cuda_api_ns, gpu_busy_ns, launches, sync_blocked_ns, transfer_bytes.
struct RunFigures {
    uint32_t run = 0;
    int exitStatus = 0;
    std::vector<uint32_t> pids;
    std::map<std::string, uint64_t> headline;
    std::map<std::string, uint64_t> kernelGpuNs;       // by kernel name: GPU time scaled to every launch
    std::map<std::string, uint64_t> transferHostNs;    // by "HtoD pageable sync": host time
    std::map<std::string, uint64_t> findingSavingsNs;  // by rule id: estimated saving
    // How long the process of the longest wall waited for a CPU (ProcessSummary::cpuWaitNs): the host's
    // load on the run, which diff weighs against a change of wall time.
    uint64_t cpuWaitNs = 0;
    bool cpuWaitKnown = false;
};
RunFigures runFigures(const Report&);

struct SpreadRow {
    std::string name;
    Spread spread;
};

// Every figure's spread over the runs; a kernel, transfer kind or finding missing from a run counts 0
// there (a finding that comes and goes is noise too).
struct RunsSummary {
    std::vector<RunFigures> runs;
    size_t medianRun = 0;  // index into runs: the run whose wall time is the median (the lower middle)
    std::vector<SpreadRow> headline, kernels, transfers, findings;
    size_t count() const { return runs.size(); }
};
RunsSummary summarizeRuns(std::vector<RunFigures> runs);

// "Runs" section of the text report, and the JSON's "runs" array and "spread" object.
std::string renderRunsText(const RunsSummary&);
void addRunsJson(nlohmann::ordered_json& report, const RunsSummary&);

}  // namespace gpuspy::collect
