// collector/findings/allocs.cpp: which allocation sites run in the loop (shared with implicit-sync in
// syncs.cpp), and alloc-in-loop: stream-ordered allocations and frees (cudaMallocAsync,
// cudaMallocFromPoolAsync, cudaFreeAsync) repeated in the loop. They wait for nothing, but each costs host
// time on the thread that launches the work; whether that time is on the run's critical path only the
// replay can say: the rule finds them, its saving is the replay's hoist-allocs prediction, and a finding
// the replay finds costs under 1% of the wall is dropped there (collector/replay/predict.cpp).
#include "collector/findings/rules.h"

namespace gpuspy::collect::detail::rules {

std::string LoopSites::setAsideText() const
{
    return std::to_string(setAside) + " allocations and frees from " + std::to_string(setAsideSites) +
           " call site(s) that ran them in fewer than " + std::to_string(kMinHotAllocs) +
           " bursts (calls one after the other, none between) or on buffers that live from before the loop to after it "
           "(setup before the loop, teardown after it) were set aside";
}

LoopSites loopSites(const Context& cx, const std::map<uint32_t, HotAllocAcc>& accs)
{
    // Work done once is not the hot path. A call site is in the loop when its calls come back again and
    // again with other calls between them (cudaMalloc, a kernel, cudaFree, round after round): at least
    // kMinHotAllocs bursts. Calls one after the other from one site, nothing else between (32 cudaMalloc
    // before the loop, the 32 cudaFree after it), are one burst: setup or teardown, however many calls.
    // And the loop turns its memory over: it allocates again after it freed (CallInfo::turnover).
    // Buffers allocated one by one before the loop (each followed by a copy of its weights: 32 bursts)
    // live until teardown frees them: setup too. Where no call of the site could be judged (no address,
    // memory never seen allocated), bursts alone decide. What is left out is set aside and said so; as
    // is a site called once.
    std::map<int, HotAllocAcc> perSite;
    for (const auto& [raw, a] : accs) {
        HotAllocAcc& s = perSite[cx.rawSites[raw].site];
        s.count += a.count;
        s.bursts += a.bursts;
        s.judged += a.judged;
        s.turnsOver += a.turnsOver;
    }
    LoopSites out;
    for (const auto& [s, a] : perSite) {
        if (s == kNoSite) continue;
        if (a.bursts >= kMinHotAllocs && (!a.judged || a.turnsOver + 1 >= kMinHotAllocs)) {
            out.sites.insert(s);
        } else if (a.count >= kMinHotAllocs) {  // the repetition a loop would have
            out.setAside += a.count;
            ++out.setAsideSites;
        }
    }
    return out;
}

void allocInLoop(Builder& b)
{
    const Context& cx = b.cx();
    const LoopSites loop = loopSites(cx, cx.findings.streamOrderedAllocs);
    if (loop.sites.empty()) return;
    Matched h;
    for (const auto& [raw, a] : cx.findings.streamOrderedAllocs) {
        if (!loop.sites.count(cx.rawSites[raw].site)) continue;
        h.count += a.count;
        h.hostNs += a.hostNs;
        h.sites[raw] += a.hostNs;
    }
    const double share = cx.wallNs ? 100.0 * double(h.hostNs) / double(cx.wallNs) : 0;
    Finding& f = b.add("alloc-in-loop", h, h.hostNs,
                       std::to_string(h.count) + " stream-ordered allocations and frees (cudaMallocAsync, "
                       "cudaMallocFromPoolAsync, cudaFreeAsync) in the loop" +
                           siteLabel(cx, topSites(namedSites(cx, h.sites), 1)) + " took " + formatNs(h.hostNs) +
                           " of host time (" + fmtPct(share) + " of the wall) on the thread that queues the GPU's work. "
                           "They wait for nothing, but each is a driver call the launches behind it wait for. Allocate "
                           "once before the loop and reuse the buffer (free it after the loop). At most " +
                           formatNs(h.hostNs) + " to save: the calls' own host time." +
                           (loop.setAside ? " Done once, not in the loop: " + loop.setAsideText() + "." : std::string()));
    f.savingsBound = "at_most";
    f.evidence = {{"calls", double(h.count)}, {"host_ns", double(h.hostNs)}, {"setup_calls_set_aside", double(loop.setAside)}};
}

}  // namespace gpuspy::collect::detail::rules
