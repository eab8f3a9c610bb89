// collector/replay/fix_graph_launches.cpp: graph launches made as cheap as an empty graph's (fixes.h). What
// the fixed program would pay is unknown (it depends on how many nodes fusing leaves, or whether the GPU
// launches the next step itself): this is the floor, what those fixes come to at best (fusing kernels
// also takes out the GPU's gaps between them, which this leaves).
#include "collector/replay/fixes.h"

#include "collector/analyze/internal.h"

#include <algorithm>

namespace gpuspy::collect::replay {

FixEffect cheaperGraphLaunches(RunGraph& g, const FixScope& scope)
{
    FixEffect fx;
    for (Call& c : g.calls) {
        if (c.kind != CallKind::GraphLaunch || c.removed || !scope.has(c.stackId) || c.ownNs <= detail::kGraphLaunchFloorNs) continue;
        c.ownNs = detail::kGraphLaunchFloorNs;
        ++fx.changed;
    }
    if (fx.changed) {
        fx.assumed = fx.changed;
        fx.assumption = "a graph launch costs the host at least an empty graph's (2.5 us): the floor, not what a given fix reaches";
    }
    return fx;
}

}  // namespace gpuspy::collect::replay
