// collector/findings/findings.cpp: the findings: patterns that cost time, each with its evidence, its
// call sites, and an estimate of the time a fix would save whose assumption the message states. Every
// number comes from the capture; the thresholds (rules.h) only decide when a pattern is worth a finding.
// Where a number rests on GPU times that are only upper bounds (collector/README.md, "GPU time
// sources"), the message says "at most" or "at least" and why. This file feeds each call to the
// accumulators (addFindingCall) and runs the rules at the end (analyzeFindings); each rule family has
// its own file.
#include "collector/findings/rules.h"

#include "collector/model/api_names.h"

#include <algorithm>

namespace gpuspy::collect::detail {

using namespace rules;

void Matched::add(const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    ++count;
    hostNs += detail::hostNs(c);
    host.add(detail::hostNs(c));
    busyNs += ci.busyNs;
    if (c.category == wire::Category::Transfer) bytes += c.args.transfer.bytes;
    if (ci.timed) {
        ++timed;
        timedGpuNs += ci.gpuNs;
        timedHostNs += detail::hostNs(c);
        const uint64_t moved = c.category == wire::Category::Transfer ? c.args.transfer.bytes : 0;
        timedBytes += moved;
        // Per kind of copy (direction, memory kinds, bytes) the shortest GPU time: alike copies do the
        // same device work.
        auto addToGroup = [&](std::map<GroupKey, BoundedGroup>& groups, uint64_t& looseNs) {
            auto g = groups.end();
            if (c.category == wire::Category::Transfer) {
                const wire::TransferArgs& t = c.args.transfer;
                const GroupKey key = std::make_tuple(uint8_t(t.direction), uint8_t(t.srcMem), uint8_t(t.dstMem), moved);
                g = groups.find(key);
                if (g == groups.end() && groups.size() < kMaxBoundedGroups) g = groups.emplace(key, BoundedGroup{}).first;
            }
            if (g != groups.end()) {
                ++g->second.count;
                g->second.minGpuNs = std::min(g->second.minGpuNs, ci.gpuNs);
            } else {
                looseNs += ci.gpuNs;
            }
        };
        if (!ci.upperBound) {
            gpu.add(ci.gpuNs);
            addToGroup(measuredGroups, measuredLooseNs);
        } else {
            ++bounded;
            boundedGpuNs += ci.gpuNs;
            boundedBytes += moved;
            boundedHostNs += detail::hostNs(c);
            addToGroup(boundedGroups, boundedLooseNs);
        }
    }
    sites[ci.rawSite] += detail::hostNs(c);
}

uint64_t Matched::measuredTightNs() const
{
    uint64_t ns = measuredLooseNs;
    for (const auto& [key, g] : measuredGroups) ns += g.count * g.minGpuNs;
    return ns;
}

uint64_t Matched::boundedTightNs() const
{
    uint64_t ns = boundedLooseNs;
    for (const auto& [key, g] : boundedGroups) ns += g.count * g.minGpuNs;
    return ns;
}

void addFindingCall(Context& cx, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    FindingAccs& F = cx.findings;
    addFailedCall(F.failures[pv.proc->pid], ci);
    if (isCountedTransfer(c)) {
        const wire::Direction dir = c.args.transfer.direction;
        const int side = dir == wire::Direction::HtoD ? 0 : dir == wire::Direction::DtoH ? 1 : -1;
        const bool async = hasFlag(c, wire::kCallAsync);
        const std::string memory = transferHostMemory(c.args.transfer);
        if (side >= 0 && !async && memory == "pageable") F.pageable[side].add(ci);
        if (side >= 0 && memory == "pinned") F.pinned[side].add(ci);
        if (!async && isCopy(c) && (isHostCopy(c) || hasFlag(c, wire::kCallImplicitSync))) {
            F.syncMemcpy.add(ci);
            auto [it, fresh] = F.syncMemcpySpan.try_emplace(pv.proc ? pv.proc->pid : 0, c.beginNs, c.endNs);
            it->second = {std::min(it->second.first, c.beginNs), std::max(it->second.second, c.endNs)};
        }
        if (async && isHostCopy(c) && memory == "pageable") F.pageableAsync.add(ci);
        if (async && isHostCopy(c) && memory == "pinned") F.pinnedAsync.add(ci);
        if (isCopy(c) && c.args.transfer.bytes <= kSmallCopyBytes) F.small.add(ci);
    }
    if (isCountedLaunch(*ci.api, c)) F.launches.add(ci);
    if (ci.api->explicitWait && !ci.api->query && ci.rawSite != kNoRawSite) {
        LoopSyncAcc& a = F.loopSyncs[ci.rawSite];
        ++a.count;
        a.blocked += hostNs(c);
        a.busy += ci.busyNs;
        if (c.beginNs < a.first) a.device = c.device;
        a.first = std::min(a.first, c.beginNs);
        a.last = std::max(a.last, c.endNs);
        ++a.apis[ci.api->name];
    }
    addPoll(F, pv, ci);
    addStreamUse(F, pv, ci);
    addGraphLaunchUse(F, pv, ci);
    if (c.category == wire::Category::Alloc) {
        auto addHot = [&](std::map<uint32_t, HotAllocAcc>& accs) {
            if (ci.rawSite == kNoRawSite) return;
            HotAllocAcc& a = accs[ci.rawSite];
            ++a.count;
            a.hostNs += hostNs(c);
            a.busyNs += ci.busyNs;
            // A new burst unless the thread's previous call came from this site too (calls are placed
            // per thread in host time order; waits may be accounted after a later call, so the
            // ordinal, not this order, says what came before).
            uint64_t& last = F.hotAllocLast[{ci.rawSite, c.tid}];
            if (!last || ci.threadOrdinal != last + 1) ++a.bursts;
            last = ci.threadOrdinal;
            a.judged += ci.turnover != CallInfo::Turnover::Unknown;
            a.turnsOver += ci.turnover == CallInfo::Turnover::Turns;
        };
        if (!hasFlag(c, wire::kCallAsync) && !ci.api->asyncName) {
            F.hotAll.add(ci);
            addHot(F.hotAllocs);
        }
        if (ci.api->asyncName) {
            F.pooled.add(ci);
            addHot(F.streamOrderedAllocs);
        }
    }
}

void analyzeFindings(Context& cx, Report& r)
{
    Builder b(cx, r);
    pageableMemcpy(b);
    syncMemcpy(b);
    pageableAsyncMemcpy(b);
    smallTransfers(b);
    launchBound(b, r);
    graphLaunchBound(b);
    gpuIdleAndStarved(b, r);
    syncInLoop(b);
    implicitSync(b);
    allocInLoop(b);
    spinWait(b);
    legacyStream(b);
    droppedRecords(b, r);
    memoryFindings(b, r);
    stragglers(b, r);
    callsFailed(b);
    librarySetupInLoop(b);
    b.setApartLibraryCalls();
    markOverlappingFindings(r.findings);
    rankFindings(r.findings);
}

}  // namespace gpuspy::collect::detail
