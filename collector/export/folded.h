// collector/export/folded.h: folded stacks ("outer;inner;leaf value" per line) for flamegraph.pl,
// inferno and speedscope, weighted by a chosen metric.
#pragma once

#include "collector/model/model.h"

#include <string>
#include <string_view>

namespace gpuspy::collect {

enum class FoldedMetric {
    Blocked,   // ns the host was blocked in calls that wait for the GPU (the report's syncs)
    Transfer,  // bytes moved by copies and memsets
    Launch,    // ns of host time in kernel and graph launches
    Calls,     // number of CUDA calls
};

// "blocked", "transfer", "launch", "calls"; false for anything else.
bool parseFoldedMetric(std::string_view name, FoldedMetric& out);

// One line per distinct stack, sorted: the call's frames outermost first, then the API ("cudaMemcpy"),
// then for launches the kernel and for transfers the direction. ';' inside a frame becomes ':'.
std::string exportFolded(const Capture& capture, FoldedMetric metric);

}  // namespace gpuspy::collect
