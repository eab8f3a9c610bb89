// collector/analyze/quantile.cpp: the bounded-memory quantile sketch behind every median and p99 of the
// report (exact for small counts, a log-linear histogram with buckets under 2% wide beyond).
#include "collector/analyze/quantile.h"

#include "collector/analyze/analyze.h"

#include <algorithm>
#include <cmath>

namespace gpuspy::collect {

namespace {

// Log-linear buckets: each power of two split into kSub equal parts, so a bucket is at most 1/kSub of
// its lower bound wide and its middle is within 1/(2 kSub) < 1% of any value in it.
constexpr int kSub = 64;

}  // namespace

int QuantileSketch::bucketOf(uint64_t value)
{
    int e = 0;
    const double m = std::frexp(double(value), &e);  // value = m * 2^e, m in [0.5, 1)
    return e * kSub + std::min(kSub - 1, int((m - 0.5) * 2 * kSub));
}

uint64_t QuantileSketch::valueOf(int bucket)
{
    const int e = bucket >= 0 ? bucket / kSub : -((-bucket + kSub - 1) / kSub);
    const int sub = bucket - e * kSub;
    return uint64_t(std::ldexp(0.5 + (sub + 0.5) / (2.0 * kSub), e) + 0.5);
}

void QuantileSketch::add(uint64_t v)
{
    ++m_count;
    m_total += v;
    m_min = std::min(m_min, v);
    m_max = std::max(m_max, v);
    if (m_buckets.empty()) {
        m_values.push_back(v);
        if (m_values.size() > kExactValues) spill();
        return;
    }
    if (v == 0) {
        ++m_zeros;
        return;
    }
    const int b = bucketOf(v);
    if (b < m_bucketBase) {
        m_buckets.insert(m_buckets.begin(), size_t(m_bucketBase - b), 0);
        m_bucketBase = b;
    } else if (size_t(b - m_bucketBase) >= m_buckets.size()) {
        m_buckets.resize(size_t(b - m_bucketBase) + 1, 0);
    }
    ++m_buckets[size_t(b - m_bucketBase)];
}

void QuantileSketch::spill()
{
    std::vector<uint64_t> values;
    values.swap(m_values);
    int lo = INT32_MAX, hi = INT32_MIN;
    for (uint64_t v : values)
        if (v) {
            lo = std::min(lo, bucketOf(v));
            hi = std::max(hi, bucketOf(v));
        }
    if (lo > hi) lo = hi = 0;
    m_bucketBase = lo;
    m_buckets.assign(size_t(hi - lo) + 1, 0);
    for (uint64_t v : values) {
        if (v == 0) ++m_zeros;
        else ++m_buckets[size_t(bucketOf(v) - m_bucketBase)];
    }
}

DurationStats QuantileSketch::stats() const
{
    if (exact()) return durationStats(m_values);
    DurationStats s;
    s.count = m_count;
    s.total = m_total;
    s.min = m_min;
    s.max = m_max;
    s.avg = double(m_total) / double(m_count);
    // The value of 1-based rank r, from the histogram.
    auto at = [&](uint64_t r) -> uint64_t {
        if (r <= m_zeros) return 0;
        uint64_t seen = m_zeros;
        for (size_t i = 0; i < m_buckets.size(); ++i) {
            seen += m_buckets[i];
            if (seen >= r) return std::clamp(valueOf(m_bucketBase + int(i)), m_min, m_max);
        }
        return m_max;
    };
    const uint64_t n = m_count;
    s.median = n % 2 ? at(n / 2 + 1) : (at(n / 2) + at(n / 2 + 1)) / 2;
    const uint64_t rank = uint64_t(std::ceil(0.99 * double(n)));
    s.p99 = at(std::min(n, std::max<uint64_t>(rank, 1)));
    return s;
}

}  // namespace gpuspy::collect
