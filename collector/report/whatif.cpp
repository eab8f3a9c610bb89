// collector/report/whatif.cpp: the renderers of `gpuspy whatif`.
#include "collector/report/whatif.h"

#include "collector/analyze/analyze.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuspy::collect {

namespace {

using replay::PathPart;
using replay::Prediction;
using replay::WhatIf;

std::string ms(uint64_t ns) { return fmt::format("{:.2f} ms", double(ns) / 1e6); }
double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0; }

std::string partName(const WhatIf& w, const PathPart& p) { return replay::pathPartName(p, w.threadNames, w.streamNames); }
const char* partKind(PathPart::Kind k) { return replay::pathPartKind(k); }

std::vector<uint32_t> offPath(const WhatIf& w) { return replay::threadsOffPath(w.unchanged.prediction); }

}  // namespace

std::string renderWhatIfText(const std::vector<WhatIf>& all)
{
    std::string out;
    for (const WhatIf& w : all) {
        const Prediction& u = w.unchanged.prediction;
        out += fmt::format("pid {} · {}\n", w.pid, w.command);
        out += fmt::format("  measured wall {}; replayed unchanged {} (error {:+.1f}%), GPU busy {}, host busy {}\n",
                           ms(w.measuredWallNs), ms(u.wallNs), w.errorPct(), ms(u.gpuBusyNs), ms(u.hostBusyNs));
        out += "  critical path (what sets the end of the run):\n";
        size_t shown = 0;
        for (const PathPart& p : u.criticalPath) {
            if (shown++ == 6) break;
            out += fmt::format("    {:<48} {:>11} {:>5.1f}%\n", partName(w, p), ms(p.ns), pct(p.ns, u.wallNs));
        }
        for (uint32_t t : offPath(w))
            out += fmt::format("  {} is off the critical path (its last call returns at {} of {}): shortening its "
                               "calls would not shorten the run\n",
                               t < w.threadNames.size() ? w.threadNames[t] : "?", ms(u.threadEndNs[t]), ms(u.wallNs));
        if (w.scenarios.empty()) {
            out += "  no fix applies to this run\n";
        } else {
            out += fmt::format("  {:<28} {:>11} {:>18} {:>11} {:>11}  calls changed\n", "predicted with", "wall", "saves",
                               "GPU busy", "host busy");
            for (const replay::Scenario& s : w.scenarios) {
                const Prediction& p = s.prediction;
                const int64_t saved = int64_t(u.wallNs) - int64_t(p.wallNs);
                uint64_t changed = 0;
                for (const replay::FixEffect& e : s.effects) changed += e.changed;
                out += fmt::format("  {:<28} {:>11} {:>18} {:>11} {:>11}  {}\n", s.name, ms(p.wallNs),
                                   fmt::format("{} ({:.1f}%)", ms(uint64_t(std::max<int64_t>(0, saved))), pct(uint64_t(std::max<int64_t>(0, saved)), u.wallNs)),
                                   ms(p.gpuBusyNs), ms(p.hostBusyNs), changed);
                for (const replay::FixEffect& e : s.effects)
                    if (e.kept) out += fmt::format("  {:<28} kept {} call(s): {}\n", "", e.kept, e.keptWhy);
                for (const replay::FixEffect& e : s.effects)
                    if (e.assumed) out += fmt::format("  {:<28} {} call(s): {}\n", "", e.assumed, e.assumption);
            }
        }
        const replay::Calibration& c = w.calibration;
        out += fmt::format("  calibration: pinned HtoD {}; pinned DtoH {}; async call {}; graph launch {}\n",
                           c.pinnedCopy[0].source, c.pinnedCopy[1].source, c.asyncCall.source, c.graphLaunch.source);
    }
    out += "Predictions replay the capture's dependency graph with the fix applied; savings of several fixes do not add.\n";
    return out;
}

nlohmann::ordered_json whatIfJson(const std::vector<WhatIf>& all)
{
    nlohmann::ordered_json doc;
    doc["schema"] = "gpuspy.whatif/1";
    auto& procs = doc["processes"] = nlohmann::ordered_json::array();
    auto predictionJson = [](const Prediction& p) {
        nlohmann::ordered_json j;
        j["wall_ns"] = p.wallNs;
        j["gpu_busy_ns"] = p.gpuBusyNs;
        j["host_busy_ns"] = p.hostBusyNs;
        j["host_wait_ns"] = p.hostWaitNs;
        return j;
    };
    for (const WhatIf& w : all) {
        nlohmann::ordered_json pj;
        pj["pid"] = w.pid;
        pj["command"] = w.command;
        pj["calls"] = w.calls;
        pj["device_ops"] = w.ops;
        pj["measured_wall_ns"] = w.measuredWallNs;
        pj["unchanged"] = predictionJson(w.unchanged.prediction);
        pj["replay_error_pct"] = w.errorPct();
        auto& path = pj["critical_path"] = nlohmann::ordered_json::array();
        for (const PathPart& p : w.unchanged.prediction.criticalPath)
            path.push_back({{"kind", partKind(p.kind)}, {"what", partName(w, p)}, {"ns", p.ns}});
        auto& off = pj["off_critical_path"] = nlohmann::ordered_json::array();
        for (uint32_t t : offPath(w))
            off.push_back({{"thread", w.threadNames[t]}, {"end_ns", w.unchanged.prediction.threadEndNs[t]}});
        auto& sc = pj["scenarios"] = nlohmann::ordered_json::array();
        for (const replay::Scenario& s : w.scenarios) {
            nlohmann::ordered_json sj;
            sj["name"] = s.name;
            auto& fixes = sj["fixes"] = nlohmann::ordered_json::array();
            for (size_t i = 0; i < s.fixes.size(); ++i)
                fixes.push_back({{"fix", replay::fixInfo(s.fixes[i]).name},
                                 {"what", replay::fixInfo(s.fixes[i]).what},
                                 {"calls_changed", s.effects[i].changed},
                                 {"calls_kept", s.effects[i].kept},
                                 {"kept_because", s.effects[i].keptWhy},
                                 {"calls_assumed", s.effects[i].assumed},
                                 {"assumption", s.effects[i].assumption}});
            sj["predicted"] = predictionJson(s.prediction);
            sj["saving_ns"] = int64_t(w.unchanged.prediction.wallNs) - int64_t(s.prediction.wallNs);
            sj["basis"] = "prediction";
            sc.push_back(std::move(sj));
        }
        const replay::Calibration& c = w.calibration;
        auto cost = [](const replay::Cost& k) {
            return nlohmann::ordered_json{{"fixed_ns", k.fixedNs}, {"per_unit_ns", k.perByteNs}, {"source", k.source}};
        };
        pj["calibration"] = {{"pinned_htod", cost(c.pinnedCopy[0])},
                             {"pinned_dtoh", cost(c.pinnedCopy[1])},
                             {"async_call", cost(c.asyncCall)},
                             {"graph_launch", cost(c.graphLaunch)}};
        procs.push_back(std::move(pj));
    }
    return doc;
}

}  // namespace gpuspy::collect
