// collector/replay/whatif.h: what each fix, and a set of fixes together, would make of a process's run:
// the replay of its graph unchanged (against the measured wall: the model's error on this capture) and
// with the fixes applied. Pure: no I/O.
#pragma once

#include "collector/replay/fixes.h"
#include "collector/replay/replay.h"

#include <string>
#include <vector>

namespace gpuspy::collect::replay {

struct Scenario {
    std::vector<FixKind> fixes;  // empty: unchanged
    std::string name;            // "pinned", "pinned+fewer-syncs", "unchanged"
    Prediction prediction;
    std::vector<FixEffect> effects;  // per fix
};

struct WhatIf {
    uint32_t pid = 0;
    std::string command;
    uint64_t measuredWallNs = 0;
    uint64_t calls = 0, ops = 0;
    Calibration calibration;
    Scenario unchanged;
    std::vector<Scenario> scenarios;  // each fix alone that changes anything, then the requested sets
    std::vector<std::string> threadNames;  // per graph thread: "tid 123 (name)"
    std::vector<std::string> streamNames;  // per graph stream
    // The replay's error on the capture: (replayed - measured) / measured.
    double errorPct() const
    {
        return measuredWallNs ? 100.0 * (double(unchanged.prediction.wallNs) - double(measuredWallNs)) / double(measuredWallNs) : 0;
    }
};

// `sets`: the combinations to predict besides each fix alone (e.g. {pinned, fewer-syncs}); `only`: when
// non-empty, the single fixes to try (else every fix).
WhatIf whatIf(const Process& p, const std::vector<std::vector<FixKind>>& sets, const std::vector<FixKind>& only = {});

// The same on a graph already built (the unit tests build theirs by hand).
WhatIf whatIf(const RunGraph& g, const std::vector<std::vector<FixKind>>& sets, const std::vector<FixKind>& only = {});

}  // namespace gpuspy::collect::replay
