// bench/bench_common.h: what the benchmarks share: a cycle-counter timer calibrated against
// CLOCK_MONOTONIC, a per-call latency histogram (median and p99 without storing every sample), and
// a recursion of known depth to call from.
#pragma once

#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace gpuspy::bench {

inline uint64_t monoNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// rdtsc fenced on both sides, so that the timed call can neither start before the first read nor
// finish after the second (about 20-30 ns per pair on the VMs we use; the same on both sides of a
// direct-vs-hooked comparison, so it cancels in the difference).
inline uint64_t ticks()
{
    _mm_lfence();
    const uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

// Nanoseconds per tick, measured once against CLOCK_MONOTONIC over 20 ms (constant_tsc assumed:
// the results header says whether the CPU has it).
inline double nsPerTick()
{
    static const double k = [] {
        const uint64_t n0 = monoNs(), t0 = ticks();
        timespec d{0, 20000000};
        nanosleep(&d, nullptr);
        const uint64_t n1 = monoNs(), t1 = ticks();
        return double(n1 - n0) / double(t1 - t0);
    }();
    return k;
}

// Per-call durations in ticks: exact below kLinear ticks, then buckets of 64 ticks up to the cap.
// One per benchmark thread; no allocation in add().
class TickHistogram {
public:
    static constexpr uint32_t kLinear = 1u << 14;
    static constexpr uint32_t kCoarseShift = 6;
    static constexpr uint32_t kBuckets = kLinear + (1u << 16);

    TickHistogram() : m_counts(kBuckets, 0) {}

    void add(uint64_t t)
    {
        uint64_t b = t < kLinear ? t : kLinear + ((t - kLinear) >> kCoarseShift);
        if (b >= kBuckets) b = kBuckets - 1;
        ++m_counts[size_t(b)];
        ++m_n;
        m_sum += t;
    }
    uint64_t count() const { return m_n; }
    double meanTicks() const { return m_n ? double(m_sum) / double(m_n) : 0; }
    // Mean and count of the calls shorter than `limit` ticks (coarse buckets counted at their lower
    // edge): the mean without the rare calls a preemption stretched.
    double meanBelowTicks(uint64_t limit, uint64_t* over) const
    {
        double sum = 0;
        uint64_t n = 0;
        for (size_t b = 0; b < m_counts.size(); ++b) {
            const uint64_t v = b < kLinear ? b : kLinear + ((b - kLinear) << kCoarseShift);
            if (v >= limit) break;
            sum += double(v) * double(m_counts[b]);
            n += m_counts[b];
        }
        if (over) *over = m_n - n;
        return n ? sum / double(n) : 0;
    }
    // Nearest-rank quantile, in ticks (a coarse bucket reports its lower edge).
    double quantileTicks(double q) const
    {
        if (m_n == 0) return 0;
        uint64_t rank = uint64_t(q * double(m_n));
        if (rank >= m_n) rank = m_n - 1;
        uint64_t seen = 0;
        for (size_t b = 0; b < m_counts.size(); ++b) {
            seen += m_counts[b];
            if (seen > rank) return b < kLinear ? double(b) : double(kLinear + ((b - kLinear) << kCoarseShift));
        }
        return double(kBuckets);
    }

private:
    std::vector<uint64_t> m_counts;
    uint64_t m_n = 0;
    uint64_t m_sum = 0;
};

// Runs body() `levels` frames below the caller, so that a stack captured inside it is at least that
// deep whatever the harness's own depth. noipa: neither inlined nor turned into a loop.
template <class F>
__attribute__((noipa)) void atDepth(int levels, F& body)
{
    if (levels <= 0) {
        body();
    } else {
        atDepth(levels - 1, body);
    }
    asm volatile("" ::: "memory");
}

// Resident set size of this process, in KiB, from /proc/self/status (VmRSS); 0 if unreadable.
inline long rssKiB()
{
    FILE* f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    long kib = 0;
    while (fgets(line, sizeof line, f))
        if (std::strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, nullptr, 10);
    fclose(f);
    return kib;
}

}  // namespace gpuspy::bench
