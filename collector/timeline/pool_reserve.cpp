// collector/timeline/pool_reserve.cpp: a stream-ordered pool's use and its reservation's floor (pool_reserve.h).
#include "collector/timeline/pool_reserve.h"

namespace gpuspy::collect {

bool PoolReserve::allocate(uint64_t bytes, uint64_t hostNs)
{
    ++m_allocations;
    m_used += bytes;
    m_peakUsed = std::max(m_peakUsed, m_used);
    if (m_used <= m_reservedMin) {
        m_servedHostNs += hostNs;
        return false;
    }
    // Reserved again up to what it held before: memory it gave back and now takes anew.
    const uint64_t back = std::min(m_used, m_peakReserved);
    if (back > m_reservedMin) {
        ++m_regrows;
        m_regrowBytes += back - m_reservedMin;
    }
    ++m_grows;
    m_growHostNs += hostNs;
    m_reservedMin = m_used;
    m_peakReserved = std::max(m_peakReserved, m_reservedMin);
    return true;
}

bool PoolReserve::lowerTo(uint64_t keep, uint64_t& counter)
{
    const uint64_t floor = std::max(m_used, std::min(m_reservedMin, keep));
    if (floor >= m_reservedMin) return false;
    m_releasedBytes += m_reservedMin - floor;
    m_reservedMin = floor;
    ++counter;
    return true;
}

}  // namespace gpuspy::collect
