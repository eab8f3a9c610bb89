// collector/analyze/nvtx.cpp: the host and GPU totals per NVTX range name. Push/pop ranges belong to
// their thread; start/end ranges to the whole process. A call counts toward every range that encloses
// it (inclusive totals), once per name even when ranges of one name nest; the window
// (collector/analyze/window.cpp) opens and closes the ranges and attributes each call as it passes.
#include "collector/analyze/internal.h"

#include <algorithm>

namespace gpuspy::collect::detail {

void finishNvtx(Context& cx, Report& r)
{
    for (auto& [name, row] : cx.nvtx) r.nvtx.push_back(row);
    std::stable_sort(r.nvtx.begin(), r.nvtx.end(), [](const NvtxRow& a, const NvtxRow& b) { return a.rangeNs > b.rangeNs; });
}

}  // namespace gpuspy::collect::detail
