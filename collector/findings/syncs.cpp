// collector/findings/syncs.cpp: blocking syncs in a loop, and calls that synchronize implicitly (allocations and frees in the hot path).
#include "collector/findings/rules.h"

#include "collector/model/api_names.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

namespace gpuspy::collect::detail::rules {

void syncInLoop(Builder& b)
{
    const Context& cx = b.cx();
    // Per process and named site: the waits, and the span from the first to the last of them.
    struct Group {
        LoopSyncAcc acc;
        std::vector<uint32_t> raw;
    };
    std::map<std::pair<size_t, int>, Group> groups;
    for (const auto& [raw, a] : cx.findings.loopSyncs) {
        const RawSite& rs = cx.rawSites[raw];
        if (rs.site == kNoSite) continue;
        Group& g = groups[{rs.proc, rs.site}];
        g.acc.count += a.count;
        g.acc.blocked += a.blocked;
        g.acc.busy += a.busy;
        if (a.first < g.acc.first) g.acc.device = a.device;
        g.acc.first = std::min(g.acc.first, a.first);
        g.acc.last = std::max(g.acc.last, a.last);
        for (const auto& [api, n] : a.apis) g.acc.apis[api] += n;
        g.raw.push_back(raw);
    }
    Matched m;
    uint64_t savings = 0, between = 0, idleBetween = 0;
    std::string where;
    for (const auto& [key, g] : groups) {
        const LoopSyncAcc& a = g.acc;
        if (a.count < kMinLoopSyncs) continue;
        // With one wait after the loop, the host's work between the waits overlaps the GPU work it waited
        // for (as far as the GPU was busy in the waits), and the waits' own idle part goes too: the time
        // the host took to notice the GPU was done. But only where the GPU was idle: a wait on a GPU that
        // stays busy costs nothing (the GPU is the bottleneck), so the saving is at most the GPU's idle
        // time from the first wait to the last. tests/savings (sync-loop -> sync-once on a loaded host):
        // the waits woke 1.7 ms a step after the GPU was done; counting only the host's work between them
        // estimated a fifth of the saving.
        const uint64_t span = a.last - a.first;
        const uint64_t other = span > a.blocked ? span - a.blocked : 0;
        const uint64_t busy = std::min(a.busy, a.blocked);
        uint64_t idle = span;
        if (key.first < cx.devices.size())
            if (auto d = cx.devices[key.first].find(a.device); d != cx.devices[key.first].end())
                idle = d->second.idleBetween(a.first, a.last);
        savings += std::min({a.blocked - busy + std::min(other, busy), idle});
        between += other;
        idleBetween += idle;
        m.count += a.count;
        m.hostNs += a.blocked;
        m.busyNs += a.busy;
        for (uint32_t raw : g.raw) m.sites[raw] += cx.findings.loopSyncs.at(raw).blocked;
        if (where.size() < 400) {
            std::string api = a.apis.begin()->first;
            for (const auto& [n, k] : a.apis)
                if (k > a.apis.at(api)) api = n;
            where += std::string(where.empty() ? "" : "; ") + apiDisplay(cx, api) + " " + std::to_string(a.count) +
                     " times from " + cx.sites[size_t(key.second)].label;
        }
    }
    if (!m.count) return;
    Finding& f = b.add("sync-in-loop", m, savings,
                       "The host waited for the GPU over and over from the same place: " + where + ". " +
                           std::to_string(m.count) + " waits blocked " + formatNs(m.hostNs) + " (the GPU was busy " +
                           busyShare(b.report(), m.busyNs, m.hostNs, " of it") + "). Synchronize once after the loop, or wait on an event only where the host needs "
                           "the results. Estimated saving " + formatNs(savings) + ", assuming the host's work between "
                           "the waits (" + formatNs(between) + ") would overlap the GPU work it waited for and the "
                           "waits' idle part (the GPU done, the host not yet back: " + formatNs(m.hostNs - std::min(m.hostNs, m.busyNs)) +
                           ") would go, which saves no more than the GPU's idle time between the first and the last wait (" +
                           formatNs(idleBetween) + ").");
    f.evidence = {{"waits", double(m.count)}, {"blocked_ns", double(m.hostNs)}, {"gpu_busy_ns", double(m.busyNs)},
                  {"host_work_between_ns", double(between)}, {"gpu_idle_between_ns", double(idleBetween)}};
}

void implicitSync(Builder& b)
{
    const Context& cx = b.cx();
    const Matched& all = cx.findings.hotAll;
    // Work done once is not the hot path. A call site is in the loop when its calls come back again and
    // again with other calls between them (cudaMalloc, a kernel, cudaFree, round after round): at least
    // kMinHotAllocs bursts. Calls one after the other from one site, nothing else between (32 cudaMalloc
    // before the loop, the 32 cudaFree after it), are one burst: setup or teardown, however many calls.
    // And the loop turns its memory over: it allocates again after it freed (CallInfo::turnover).
    // Buffers allocated one by one before the loop (each followed by a copy of its weights: 32 bursts)
    // live until teardown frees them: setup too. Where no call of the site could be judged (no address,
    // memory never seen allocated), bursts alone decide. What is left out is set aside and said so; as
    // is a site called once.
    const LoopSites loop = loopSites(cx, cx.findings.hotAllocs);
    const std::set<int>& hotSites = loop.sites;
    const uint64_t setAside = loop.setAside;
    const std::string setAsideText = loop.setAsideText();
    if (hotSites.empty()) {
        if (setAside) b.note("implicit-sync: " + setAsideText + ", not counted as in the hot path");
        return;
    }
    // Only the calls from the hot sites.
    Matched h;
    for (const auto& [raw, a] : cx.findings.hotAllocs) {
        if (!hotSites.count(cx.rawSites[raw].site)) continue;
        h.count += a.count;
        h.hostNs += a.hostNs;
        h.busyNs += a.busyNs;
        h.sites[raw] += a.hostNs;
    }
    const Matched& pooled = cx.findings.pooled;
    uint64_t ref = 0;
    std::string refText = "assuming a memory pool makes them nearly free";
    if (pooled.count) {
        ref = pooled.host.stats().median;
        refText = "assuming each would cost the " + formatNs(ref) +
                  " (median) this program's stream-ordered allocations (cudaMallocAsync/cudaFreeAsync) cost";
    }
    uint64_t savings = h.hostNs > ref * h.count ? h.hostNs - ref * h.count : 0;
    // The part the frees waited on a busy GPU is saved only as far as the host's work can fill the GPU's
    // idle time (a wait on a GPU that stays busy costs nothing). tests/savings (free-loop -> free-once, a
    // 20 ms kernel before each free): the calls took 20 ms a step, the fix saved the 0.3 ms of host work a
    // step that now overlaps the kernel.
    const uint64_t idle = deviceIdleNs(b.report());
    const uint64_t busyWait = std::min(savings, h.busyNs);
    const uint64_t idleWait = savings - busyWait;  // the GPU sat idle then: part of its idle time already
    const uint64_t room = idle > idleWait ? idle - idleWait : 0;
    if (busyWait > room) {
        savings = idleWait + room;
        refText += "; of it, " + formatNs(busyWait) + " waited on a busy GPU, which saves no more than the GPU's idle "
                   "time (" + formatNs(idle) + ")";
    }
    Finding& f = b.add("implicit-sync", h, savings,
                       std::to_string(h.count) + " allocations and frees in the hot path" + siteLabel(cx, topSites(namedSites(cx, h.sites), 1)) +
                           " took " + formatNs(h.hostNs) + " of host time; frees wait for the whole device (the GPU "
                           "was busy " + busyShare(b.report(), h.busyNs, h.hostNs, " of it") +
                           "). Allocate once outside the loop, or use stream-ordered allocation "
                           "(cudaMallocAsync/cudaFreeAsync) or a pool. Estimated saving at most " + formatNs(savings) +
                           ", " + refText + "; less where the host has no work of its own to overlap the GPU work the "
                           "frees waited for (the waits on a busy GPU then move elsewhere)." +
                           (setAside ? " Done once, not in the hot path: " + setAsideText + "." : std::string()));
    // An upper bound: the calls' own host time is all that removing them can take off the host's path.
    // tests/savings (free-loop -> free-once): the fix saved 0.2x-0.9x of it, never more.
    f.savingsBound = "at_most";
    f.evidence = {{"calls", double(h.count)}, {"host_ns", double(h.hostNs)}, {"gpu_busy_ns", double(h.busyNs)},
                  {"alloc_free_calls_total", double(all.count)}, {"reference_call_ns", double(ref)},
                  {"gpu_idle_ns", double(idle)}, {"setup_calls_set_aside", double(setAside)}};
}

}  // namespace gpuspy::collect::detail::rules
