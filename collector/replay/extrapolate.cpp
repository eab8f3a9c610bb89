// collector/replay/extrapolate.cpp: a window's saving taken to the whole run (extrapolate.h).
#include "collector/replay/extrapolate.h"

#include <algorithm>
#include <cmath>

namespace gpuspy::collect::replay {

Extrapolation extrapolate(const ReplayedStretch& window, uint64_t lowNs, uint64_t highNs,
                          const std::vector<ReplayedStretch>& parts, uint64_t findingCallsInRun, double replayErrorPct)
{
    Extrapolation e;
    if (!window.findingCalls || findingCallsInRun < window.findingCalls) return e;
    e.possible = true;
    e.scale = double(findingCallsInRun) / double(window.findingCalls);
    auto scaled = [](uint64_t ns, double by) { return uint64_t(std::llround(double(ns) * by)); };
    e.savingNs = scaled(window.savingNs, e.scale);
    double low = double(std::min({lowNs, highNs, window.savingNs})) * e.scale;
    double high = double(std::max({lowNs, highNs, window.savingNs})) * e.scale;
    for (const ReplayedStretch& p : parts) {
        if (!p.findingCalls) continue;
        const double each = double(p.savingNs) * double(findingCallsInRun) / double(p.findingCalls);
        low = std::min(low, each);
        high = std::max(high, each);
    }
    // The parts' spread, both ways: the run's saving is as far from the estimate as any part's own
    // extrapolation is, below as above (a part that saves less at its edges pulls one side only).
    const double mid = double(e.savingNs);
    const double spread = std::max(mid - low, high - mid);
    low = std::min(low, mid - spread);
    high = std::max(high, mid + spread);
    const double err = std::min(1.0, std::fabs(replayErrorPct) / 100);
    e.lowNs = uint64_t(std::llround(std::max(0.0, low) * (1 - err)));
    e.highNs = uint64_t(std::llround(high * (1 + err)));
    return e;
}

}  // namespace gpuspy::collect::replay
