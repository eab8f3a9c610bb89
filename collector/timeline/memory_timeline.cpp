// collector/timeline/memory_timeline.cpp: bytes in use over time, the peak and its holders, what was never
// released, and the memory held at each failed allocation (MemoryTimeline, memory_timeline.h).
#include "collector/timeline/memory_timeline.h"

#include <algorithm>

namespace gpuspy::collect {

void MemoryTimeline::allocate(uint64_t key, uint64_t bytes, uint64_t atNs, uint32_t owner)
{
    ++m_allocations;
    m_allocatedBytes += bytes;
    if (m_blocks.count(key)) release(key, atNs);  // reused without a release we saw
    if (m_blocks.size() >= kMaxLive) {
        ++m_untracked;
        return;
    }
    m_blocks[key] = Block{bytes, atNs, owner};
    Owner& o = m_owners[owner];
    o.bytes += bytes;
    ++o.allocations;
    m_inUse += bytes;
    if (m_inUse > m_peak) {
        // The holders at the peak are taken when it ends (the next release), not at every new high.
        m_peak = m_inUse;
        m_peakNs = atNs;
        m_peakStale = true;
    }
    point(atNs);
}

bool MemoryTimeline::release(uint64_t key, uint64_t atNs)
{
    auto it = m_blocks.find(key);
    if (it == m_blocks.end()) {
        ++m_unknownReleases;
        return false;
    }
    ++m_releases;
    if (m_peakStale) {
        m_atPeak = holders();
        m_peakEndNs = atNs;
        m_peakStale = false;
    }
    const Block b = it->second;
    m_blocks.erase(it);
    auto o = m_owners.find(b.owner);
    o->second.bytes -= b.bytes;
    if (--o->second.allocations == 0) m_owners.erase(o);
    m_inUse -= b.bytes;
    point(atNs);
    return true;
}

void MemoryTimeline::failed(uint64_t bytes, uint64_t atNs, uint32_t owner, int32_t result, uint16_t api)
{
    ++m_failureCount;
    if (m_failures.size() >= kMaxFailures) return;
    Failure f;
    f.atNs = atNs;
    f.bytes = bytes;
    f.result = result;
    f.owner = owner;
    f.api = api;
    f.inUse = m_inUse;
    f.poolUnused = m_poolUnused;
    f.holders = holders();
    m_failures.push_back(std::move(f));
}

std::vector<MemoryTimeline::Holding> MemoryTimeline::holders() const
{
    std::vector<Holding> out;
    out.reserve(m_owners.size());
    for (const auto& [owner, o] : m_owners) out.push_back(Holding{owner, o.bytes, o.allocations});
    std::sort(out.begin(), out.end(), [](const Holding& a, const Holding& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.owner < b.owner;
    });
    return out;
}

std::vector<MemoryTimeline::Live> MemoryTimeline::live() const
{
    std::unordered_map<uint32_t, Live> by;
    for (const auto& [key, b] : m_blocks) {
        Live& l = by[b.owner];
        if (!l.allocations || b.atNs < l.firstNs) l.firstNs = b.atNs;
        l.lastNs = std::max(l.lastNs, b.atNs);
        l.owner = b.owner;
        l.bytes += b.bytes;
        ++l.allocations;
    }
    std::vector<Live> out;
    for (auto& [owner, l] : by) out.push_back(l);
    std::sort(out.begin(), out.end(), [](const Live& a, const Live& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.owner < b.owner;
    });
    return out;
}

void MemoryTimeline::setPoolUnused(uint64_t bytes, uint64_t atNs, bool point)
{
    m_pooled = true;
    m_poolUnused = bytes;
    if (point) heldPoint(atNs);
}

namespace {

void addPoint(std::vector<std::pair<uint64_t, uint64_t>>& series, uint64_t atNs, uint64_t value, size_t maxPoints)
{
    if (!series.empty() && series.back().first == atNs) series.back().second = value;
    else series.emplace_back(atNs, value);
    if (series.size() < maxPoints) return;
    // Halve the series, each pair kept as its higher point: the peak stays visible.
    std::vector<std::pair<uint64_t, uint64_t>> half;
    half.reserve(maxPoints / 2 + 1);
    for (size_t i = 0; i + 1 < series.size(); i += 2)
        half.push_back(series[i].second >= series[i + 1].second ? series[i] : series[i + 1]);
    if (series.size() % 2) half.push_back(series.back());
    half.back() = series.back();  // the latest state stays the last point
    series.swap(half);
}

}  // namespace

void MemoryTimeline::point(uint64_t atNs)
{
    addPoint(m_series, atNs, m_inUse, m_maxSeries);
    if (m_pooled) heldPoint(atNs);
}

void MemoryTimeline::heldPoint(uint64_t atNs)
{
    const uint64_t held = m_inUse + m_poolUnused;
    if (held > m_peakHeld) m_peakHeld = held, m_peakHeldNs = atNs;
    addPoint(m_held, atNs, held, m_maxSeries);
}

}  // namespace gpuspy::collect
