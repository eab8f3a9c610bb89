// collector/replay/extrapolate.cpp: a window's saving taken to the whole run (extrapolate.h).
#include "collector/replay/extrapolate.h"

#include <algorithm>
#include <cmath>

namespace gpuspy::collect::replay {

Extrapolation extrapolate(const ReplayedStretch& window, uint64_t lowNs, uint64_t highNs,
                          const std::vector<ReplayedStretch>& parts, uint64_t findingCallsInRun, uint64_t findingNsInRun,
                          double replayErrorPct)
{
    Extrapolation e;
    if (!window.findingCalls || findingCallsInRun < window.findingCalls) return e;
    e.possible = true;
    // A stretch's scale to the run: by its calls' host time where both are known, else by their count.
    auto scaleOf = [&](const ReplayedStretch& s) {
        if (s.findingNs && findingNsInRun >= s.findingNs) return double(findingNsInRun) / double(s.findingNs);
        return double(findingCallsInRun) / double(s.findingCalls);
    };
    e.scale = scaleOf(window);
    const double byCount = double(window.savingNs) * double(findingCallsInRun) / double(window.findingCalls);
    e.savingNs = uint64_t(std::llround(double(window.savingNs) * e.scale));
    double low = std::min(double(std::min({lowNs, highNs, window.savingNs})) * e.scale, byCount);
    double high = std::max(double(std::max({lowNs, highNs, window.savingNs})) * e.scale, byCount);
    for (const ReplayedStretch& p : parts) {
        if (!p.findingCalls) continue;
        const double each = double(p.savingNs) * scaleOf(p);
        low = std::min(low, each);
        high = std::max(high, each);
    }
    // The window's edges: a stretch cut out of the run loses what its fix would save across its ends (the
    // overlap with work before its first call and after its last), a loss that does not grow with it. Taken
    // as saving = a * calls - edge for the window and for its parts together (which hold at most its calls
    // and lose the edge once each), the run's saving corrected for it, a * runCalls - edge, joins the
    // interval where such a loss is seen (edge > 0).
    if (parts.size() >= 2) {
        double partsSaving = 0, partsCalls = 0;
        for (const ReplayedStretch& p : parts) {
            partsSaving += double(p.savingNs);
            partsCalls += double(p.findingCalls);
        }
        const double n = double(parts.size());
        const double denom = n * double(window.findingCalls) - partsCalls;
        if (denom > 0) {
            const double perCall = (n * double(window.savingNs) - partsSaving) / denom;
            const double edge = perCall * double(window.findingCalls) - double(window.savingNs);
            if (perCall > 0 && edge > 0) {
                const double corrected = perCall * double(findingCallsInRun) - edge;
                low = std::min(low, corrected);
                high = std::max(high, corrected);
            }
        }
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
