// collector/compare/repeat_render.cpp: the runs of a repeated recording in the report: the "Runs" section of
// the text report and the JSON's "runs" array and "spread" object (schema in collector/report/json.cpp's
// header comment: runs[] {run, exit_status, pids, headline}, spread {headline, kernels, transfers,
// findings}: [{name, median, min, max, runs, spread_pct, wide}]).
#include "collector/analyze/internal.h"
#include "collector/compare/repeat.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace gpuspy::collect {

namespace {

using Json = nlohmann::ordered_json;
using detail::formatBytes;
using detail::formatNs;

bool isBytes(const std::string& name) { return name == "transfer_bytes"; }
bool isCount(const std::string& name) { return name == "launches"; }

std::string figure(const std::string& name, uint64_t v)
{
    if (isBytes(name)) return formatBytes(v);
    if (isCount(name)) return std::to_string(v);
    return formatNs(v);
}

std::string spreadText(const std::string& name, const Spread& s)
{
    const double pct = s.spreadPct();
    const std::string width = std::isinf(pct) ? "" : fmt::format("  ±{:.0f}%", pct / 2);
    return fmt::format("{:>11} [{} - {}]{}{}", figure(name, s.median), figure(name, s.min), figure(name, s.max), width,
                       s.wide() ? "  WIDE: do not trust" : "");
}

std::string label(const std::string& name)
{
    static const std::map<std::string, std::string> kLabels = {
        {"wall_ns", "wall"},         {"cuda_api_ns", "CUDA API time"},   {"gpu_busy_ns", "GPU busy"},
        {"launches", "kernel launches"}, {"sync_blocked_ns", "blocked in syncs"}, {"transfer_bytes", "bytes transferred"}};
    auto it = kLabels.find(name);
    return it == kLabels.end() ? name : it->second;
}

void section(std::string& out, const char* title, const std::vector<SpreadRow>& rows, bool headline)
{
    if (rows.empty()) return;
    out += fmt::format("  {}\n", title);
    for (const SpreadRow& r : rows) {
        const std::string name = headline ? label(r.name) : r.name;
        out += fmt::format("    {:<34} {}\n", name.size() > 34 ? name.substr(0, 31) + "..." : name,
                           spreadText(headline ? r.name : "", r.spread));
    }
}

Json spreadJson(const std::vector<SpreadRow>& rows)
{
    Json a = Json::array();
    for (const SpreadRow& r : rows) {
        const double pct = r.spread.spreadPct();
        a.push_back({{"name", r.name},
                     {"median", r.spread.median},
                     {"min", r.spread.min},
                     {"max", r.spread.max},
                     {"runs", r.spread.runs},
                     {"spread_pct", std::isinf(pct) ? Json(nullptr) : Json(std::round(pct * 10) / 10)},
                     {"wide", r.spread.wide()}});
    }
    return a;
}

}  // namespace

std::string renderRunsText(const RunsSummary& s)
{
    if (s.runs.empty()) return "";
    std::string out = fmt::format(
        "\nRuns ({} runs of the command; the tables above are run {}'s, the run of median wall time)\n",
        s.count(), s.runs[s.medianRun].run + 1);
    out += "  run  exit         wall   CUDA API     GPU busy  launches  pids\n";
    for (const RunFigures& r : s.runs) {
        std::string pids;
        for (uint32_t p : r.pids) pids += (pids.empty() ? "" : ",") + std::to_string(p);
        auto h = [&](const char* name) {
            auto it = r.headline.find(name);
            return it == r.headline.end() ? uint64_t(0) : it->second;
        };
        out += fmt::format("  {:>3}  {:>4}  {:>11}  {:>9}  {:>11}  {:>8}  {}\n", r.run + 1, r.exitStatus,
                           formatNs(h("wall_ns")), formatNs(h("cuda_api_ns")), formatNs(h("gpu_busy_ns")),
                           h("launches"), pids);
    }
    out += fmt::format("  median [min - max] over the runs, ±half the range as a share of the median; WIDE: a "
                       "range over {:.0f}% of the median\n",
                       kWideSpreadPct);
    section(out, "headline", s.headline, true);
    section(out, "kernels (GPU time)", s.kernels, false);
    section(out, "transfers (host time)", s.transfers, false);
    section(out, "findings (estimated saving)", s.findings, false);
    return out;
}

void addRunsJson(Json& report, const RunsSummary& s)
{
    Json runs = Json::array();
    for (const RunFigures& r : s.runs) {
        Json headline = Json::object();
        for (const auto& [name, value] : r.headline) headline[name] = value;
        runs.push_back({{"run", r.run}, {"exit_status", r.exitStatus}, {"pids", r.pids}, {"headline", headline}});
    }
    report["runs"] = runs;
    report["median_run"] = s.runs.empty() ? 0 : s.runs[s.medianRun].run;
    report["spread"] = {{"wide_pct", kWideSpreadPct},
                        {"headline", spreadJson(s.headline)},
                        {"kernels", spreadJson(s.kernels)},
                        {"transfers", spreadJson(s.transfers)},
                        {"findings", spreadJson(s.findings)}};
}

}  // namespace gpuspy::collect
