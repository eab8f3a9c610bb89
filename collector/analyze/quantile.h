// collector/analyze/quantile.h: order statistics of a stream of durations in bounded memory: exact
// (every value kept) up to kExactValues values, then a log-linear histogram (64 buckets per power of
// two), so a median or p99 is within 1% of the true value however many values there are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuspy::collect {

struct DurationStats;

class QuantileSketch {
public:
    static constexpr size_t kExactValues = 4096;

    void add(uint64_t value);
    uint64_t count() const { return m_count; }
    bool exact() const { return m_buckets.empty(); }
    // count, total, min and max are exact; median (mean of the middle two for an even count) and p99
    // (nearest rank) are exact while exact(), else within 1%.
    DurationStats stats() const;

private:
    void spill();
    static int bucketOf(uint64_t value);
    static uint64_t valueOf(int bucket);  // the middle of the bucket

    std::vector<uint64_t> m_values;    // while exact
    std::vector<uint64_t> m_buckets;   // counts by bucket index - m_bucketBase, once spilled
    int m_bucketBase = 0;
    uint64_t m_zeros = 0;              // values of 0 (no bucket: log undefined), once spilled
    uint64_t m_count = 0, m_total = 0, m_min = UINT64_MAX, m_max = 0;
};

}  // namespace gpuspy::collect
