// collector/timeline/pool_reserve.h: what one stream-ordered memory pool (cudaMallocAsync's) holds: the
// bytes in use and a lower bound on the bytes it keeps reserved, by CUDA's documented rule: a pool keeps
// what it reserved for later allocations and gives back what it reserves beyond its release threshold
// only at a stream, event or context synchronize, or at cuMemPoolTrimTo, never below what is in use.
// The driver may keep more (it reserves in chunks, and may fragment): every figure here is a floor.
// In use counts an allocation from its call to its free's call (the driver may hand memory freed in
// stream order to the same stream before the stream reaches the free). Pure: no I/O.
#pragma once

#include <algorithm>
#include <cstdint>

namespace gpuspy::collect {

class PoolReserve {
public:
    // An allocation of `bytes` whose call took `hostNs`; true when the pool had to reserve more.
    bool allocate(uint64_t bytes, uint64_t hostNs);
    void release(uint64_t bytes) { m_used -= std::min(m_used, bytes); }
    // A stream, event or context synchronize; true when the floor came down.
    bool synchronize() { return m_reservedMin > m_threshold && lowerTo(m_threshold, m_releasesAtSync); }
    bool trimTo(uint64_t keep) { return lowerTo(keep, m_trims); }
    void setThreshold(uint64_t bytes) { m_threshold = bytes, m_thresholdSet = true; }

    uint64_t used() const { return m_used; }
    uint64_t reservedMin() const { return m_reservedMin; }
    uint64_t unusedMin() const { return m_reservedMin - std::min(m_reservedMin, m_used); }
    uint64_t threshold() const { return m_threshold; }
    bool thresholdSet() const { return m_thresholdSet; }
    uint64_t allocations() const { return m_allocations; }
    uint64_t peakUsed() const { return m_peakUsed; }
    uint64_t peakReservedMin() const { return m_peakReserved; }
    uint64_t grows() const { return m_grows; }
    // Growths back into memory the pool had reserved before and gave back: the cost a release threshold
    // at the pool's working size would have saved.
    uint64_t regrows() const { return m_regrows; }
    uint64_t regrowBytes() const { return m_regrowBytes; }
    uint64_t releasesAtSync() const { return m_releasesAtSync; }
    uint64_t trims() const { return m_trims; }
    uint64_t releasedBytes() const { return m_releasedBytes; }
    // Host time of the allocations that grew the pool, and of those it served from what it kept.
    uint64_t growHostNs() const { return m_growHostNs; }
    uint64_t servedHostNs() const { return m_servedHostNs; }
    uint64_t served() const { return m_allocations - m_grows; }

private:
    bool lowerTo(uint64_t keep, uint64_t& counter);

    uint64_t m_used = 0, m_reservedMin = 0, m_threshold = 0;
    bool m_thresholdSet = false;
    uint64_t m_allocations = 0, m_peakUsed = 0, m_peakReserved = 0;
    uint64_t m_grows = 0, m_regrows = 0, m_regrowBytes = 0, m_releasesAtSync = 0, m_trims = 0, m_releasedBytes = 0;
    uint64_t m_growHostNs = 0, m_servedHostNs = 0;
};

}  // namespace gpuspy::collect
