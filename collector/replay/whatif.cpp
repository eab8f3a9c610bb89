// collector/replay/whatif.cpp: the replay of each fix and of sets of fixes.
#include "collector/replay/whatif.h"

#include <algorithm>

namespace gpuspy::collect::replay {

namespace {

Scenario run(const RunGraph& g, const Calibration& cal, const std::vector<FixKind>& fixes)
{
    Scenario s;
    s.fixes = fixes;
    RunGraph fixed = g;
    for (FixKind k : fixes) {
        s.effects.push_back(applyFix(fixed, k, cal));
        if (!s.name.empty()) s.name += "+";
        s.name += fixInfo(k).name;
    }
    if (s.name.empty()) s.name = "unchanged";
    s.prediction = simulate(fixed);
    return s;
}

}  // namespace

WhatIf whatIf(const RunGraph& g, const std::vector<std::vector<FixKind>>& sets, const std::vector<FixKind>& only)
{
    WhatIf w;
    w.pid = g.pid;
    w.command = g.command;
    w.measuredWallNs = g.wallNs();
    w.calls = g.calls.size();
    w.ops = g.ops.size();
    w.calibration = calibrate(g);
    w.unchanged = run(g, w.calibration, {});
    for (const Thread& t : g.threads) w.threadNames.push_back(threadName(t));
    for (const Stream& s : g.streams) w.streamNames.push_back(streamName(s));
    for (const FixInfo& f : allFixes()) {
        if (!only.empty() && std::find(only.begin(), only.end(), f.kind) == only.end()) continue;
        Scenario s = run(g, w.calibration, {f.kind});
        if (s.effects.front().changed || !only.empty()) w.scenarios.push_back(std::move(s));
    }
    for (const auto& set : sets)
        if (set.size() > 1) w.scenarios.push_back(run(g, w.calibration, set));
    return w;
}

WhatIf whatIf(const Process& p, const std::vector<std::vector<FixKind>>& sets, const std::vector<FixKind>& only)
{
    return whatIf(buildRunGraph(p), sets, only);
}

}  // namespace gpuspy::collect::replay
