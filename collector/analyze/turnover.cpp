// collector/analyze/turnover.cpp: whether an allocation or release turns memory over as a loop does, from
// the addresses the calls name (AllocTurnover, internal.h).
#include "collector/analyze/internal.h"

#include <algorithm>

namespace gpuspy::collect::detail {

bool isRelease(const ApiClass& api)
{
    return api.freeLike || api.name.find("Unregister") != std::string::npos || api.name.find("Destroy") != std::string::npos;
}

CallInfo::Turnover AllocTurnover::onCall(uint64_t site, uint64_t address, bool release, uint64_t beginNs)
{
    using T = CallInfo::Turnover;
    // One lookup for this site: references into an unordered_map survive its rehashing.
    auto& [prevNs, freedMineNs] = m_sites[site];
    T out = T::Unknown;
    if (address && release) {
        if (auto it = m_live.find(address); it != m_live.end()) {
            out = it->second.second >= prevNs ? T::Turns : T::Stays;  // allocated since this site's previous call?
            auto& owner = m_sites[it->second.first].second;
            owner = std::max(owner, beginNs);
            m_live.erase(it);
        }
    } else if (address && m_live.size() < kMaxLive) {
        out = freedMineNs > prevNs ? T::Turns : T::Stays;  // one of its allocations freed since its previous call?
        m_live[address] = {site, beginNs};
    }
    prevNs = beginNs;
    return out;
}

}  // namespace gpuspy::collect::detail
