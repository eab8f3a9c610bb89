// collector/analyze/memory_pools.cpp: stream-ordered pools (cudaMallocAsync's) in the GPU memory section:
// which pool each stream-ordered allocation and free is served by (a device's current pool, or the one
// named), how the program configured them (release threshold, trims, the device's current pool), the
// synchronizations at which they give memory back, and what each keeps reserved but unused (a floor,
// PoolReserve) on its device's timeline.
#include "collector/analyze/internal.h"

#include <algorithm>

namespace gpuspy::collect::detail {

namespace {
constexpr uint64_t kReleaseThreshold = 4;  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
}

uint64_t MemoryBook::defaultPool(int device)
{
    const uint64_t key = kDefaultPool | uint64_t(uint32_t(device));
    pools[key].device = device;
    return key;
}

uint64_t MemoryBook::poolOf(uint64_t handle, int device)
{
    if (auto a = m_poolAlias.find(handle); a != m_poolAlias.end()) return a->second;
    // A handle never seen made or answered (an attach): a pool of its own, on the caller's device.
    m_poolAlias[handle] = handle;
    pools[handle].device = device;
    return handle;
}

uint64_t MemoryBook::poolChange(const wire::CallBody& c, const MemClass& m, bool alloc, uint32_t rawSite)
{
    // The bytes of the pool's memory it takes or gives back (a free's record names none).
    if (!alloc) {
        auto it = m_poolBlocks.find(c.args.alloc.ptr);
        if (it == m_poolBlocks.end()) return 0;
        const auto [key, bytes] = it->second;
        m_poolBlocks.erase(it);
        pools[key].reserve.release(bytes);
        return bytes;
    }
    if (!m.streamOrdered) return 0;
    uint64_t key = 0;
    if (c.args.alloc.pool) key = poolOf(c.args.alloc.pool, c.device);
    else if (auto cur = m_currentPool.find(c.device); cur != m_currentPool.end()) key = cur->second;
    else key = defaultPool(c.device);
    Pool& p = pools[key];
    const uint64_t regrows = p.reserve.regrows();
    p.reserve.allocate(c.args.alloc.bytes, hostNs(c));
    if (p.reserve.regrows() != regrows) ++p.regrowSites[rawSite];
    m_poolBlocks[c.args.alloc.ptr] = {key, c.args.alloc.bytes};
    return c.args.alloc.bytes;
}

void MemoryBook::feed(const wire::CallBody& c, const ApiClass& api, uint32_t rawSite, uint64_t streamReadyNs)
{
    if (api.mem.pool != PoolOp::None) {
        if (api.mem.pool != PoolOp::Synchronize || !pools.empty()) onPoolCall(c, api);
    } else if (c.category == wire::Category::Alloc) {
        onCall(c, api, rawSite, streamReadyNs);
    }
}

void MemoryBook::onPoolCall(const wire::CallBody& c, const ApiClass& api)
{
    const PoolOp op = api.mem.pool;
    if (op == PoolOp::None || !succeeded(c)) return;
    applyUntil(c.endNs);
    const wire::PoolArgs& a = c.args.pool;
    std::vector<int> changed;
    switch (op) {
    case PoolOp::Synchronize:
        // Any synchronize, for every pool: the documented rule, not narrowed (the floor stays a floor).
        for (auto& [key, p] : pools)
            if (p.reserve.synchronize()) changed.push_back(p.device);
        break;
    case PoolOp::Create:
        if (!a.pool) break;
        m_poolAlias[a.pool] = a.pool;
        pools[a.pool] = Pool{};
        pools[a.pool].device = a.device;
        break;
    case PoolOp::Destroy:
        if (!a.pool) break;
        if (Pool& p = pools[poolOf(a.pool, c.device)]; !p.destroyed) {
            p.destroyed = true;
            if (p.reserve.trimTo(0)) changed.push_back(p.device);
        }
        break;
    case PoolOp::SetAttribute:
        if (a.pool && a.attribute == kReleaseThreshold) pools[poolOf(a.pool, c.device)].reserve.setThreshold(a.value);
        break;
    case PoolOp::TrimTo:
        if (!a.pool) break;
        if (Pool& p = pools[poolOf(a.pool, c.device)]; p.reserve.trimTo(a.value)) changed.push_back(p.device);
        break;
    case PoolOp::GetDefault:
        if (!a.pool) break;
        m_poolAlias[a.pool] = defaultPool(a.device);
        break;
    case PoolOp::GetCurrent:
        if (!a.pool || m_poolAlias.count(a.pool)) break;
        if (auto cur = m_currentPool.find(a.device); cur != m_currentPool.end()) m_poolAlias[a.pool] = cur->second;
        else m_poolAlias[a.pool] = defaultPool(a.device);
        break;
    case PoolOp::SetCurrent:
        if (a.pool) m_currentPool[a.device] = poolOf(a.pool, a.device);
        break;
    case PoolOp::None: break;
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    for (int d : changed) showPools(d, c.endNs);
}

void MemoryBook::showPools(int device, uint64_t atNs, bool point)
{
    uint64_t reserved = 0;
    for (const auto& [key, p] : pools)
        if (p.device == device) reserved += p.reserve.reservedMin();
    const uint64_t inUse = m_pooledInUse[device];
    space(MemSpace::Device, device).setPoolUnused(reserved > inUse ? reserved - inUse : 0, atNs, point);
}

}  // namespace gpuspy::collect::detail
