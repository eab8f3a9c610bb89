// collector/analyze/cycle_histogram.cpp: durations of a poll loop's cycles in log buckets, and the CPU time
// they took once the stretches the thread spent off the CPU are left out (CycleHistogram, internal.h).
#include "collector/analyze/internal.h"

#include <algorithm>
#include <cmath>

namespace gpuspy::collect::detail {

void CycleHistogram::add(uint64_t ns)
{
    const size_t b = ns ? std::min<size_t>(63, size_t(2.0 * std::log2(double(ns)))) : 0;
    ++buckets[b].first;
    buckets[b].second += ns;
}

void CycleHistogram::merge(const CycleHistogram& o)
{
    for (size_t i = 0; i < buckets.size(); ++i) {
        buckets[i].first += o.buckets[i].first;
        buckets[i].second += o.buckets[i].second;
    }
}

uint64_t CycleHistogram::onCpuNs() const
{
    uint64_t n = 0;
    for (const auto& [count, sum] : buckets) n += count;
    if (!n) return 0;
    uint64_t seen = 0, median = 0;
    for (const auto& [count, sum] : buckets) {
        seen += count;
        if (2 * seen >= n) {
            median = sum / count;  // the bucket's mean: within a factor sqrt(2) of the median
            break;
        }
    }
    // A poll loop's cycles are a poll and the loop around it; some are longer now and then (the driver or
    // a tool writing what it buffered: 18 us every 16 polls under the simulated driver's trace), which is
    // CPU time too. A cycle past 64 typical ones and 100 us is the thread taken off the CPU.
    const uint64_t offCpu = std::max<uint64_t>(64 * median, 100000);
    uint64_t ns = 0;
    for (const auto& [count, sum] : buckets) ns += count && sum / count > offCpu ? count * median : sum;
    return ns;
}

}  // namespace gpuspy::collect::detail
