// collector/analyze/window.cpp: the bounded window in which one process's calls wait for what the
// analysis needs to know about them. A call's GPU span arrives after the call (the shim resolves the
// events later), and "how busy was the GPU while the host waited" needs every span around it; threads'
// records interleave out of time order. So calls are held (at most Context::windowCalls of them) and, when the
// window is full, the older half is processed in time order, with NVTX events merged in. Each processed
// call goes through the device timeline (collector/timeline/device_timeline.h), which places untimed device work once an
// anchor bounds it. Busy intervals (measured spans and placements) are final once they end before the
// oldest call still held and before anything still pending on the timeline: then they count toward busy
// time and idle gaps and are dropped. A capture smaller than the window is analysed exactly as if it were all in RAM;
// beyond it, a span or call that arrives after the window moved past its time is counted as late.
#include "collector/analyze/internal.h"
#include "collector/analyze/library_time.h"

#include "collector/model/api_names.h"

#include <algorithm>
#include <array>
#include <deque>

namespace gpuspy::collect::detail {

namespace {

constexpr size_t kMaxCarried = 1u << 17;   // host intervals kept for idle gaps not yet final

struct OpenRange {
    std::string name;
    uint32_t tid = 0;
    uint64_t begin = 0;
};

// A call between its placement on the device timeline and its accounting. "How busy was the GPU while
// the host waited" needs the work other threads submitted during the wait, and their calls begin after
// it (a waiting thread may sit in the wait for milliseconds, blocked or descheduled, while the others
// launch): so a wait (explicit or implicit) is counted once every call beginning before its end has
// been placed. Other calls are counted at once, with what is placed by then.
struct Unaccounted {
    wire::CallBody call;  // a held wait's copy (ci.call points here); unused for a call counted at once
    CallInfo ci;
    bool wait = false;  // an explicit wait or an implicitly synchronizing call (processCall decides)
    bool deviceOp = false, known = true;
};
// Waits counted early (with what is placed so far) rather than held beyond this many: a wait that spans
// that many of other threads' waits is not worth the memory.
constexpr size_t kMaxUnaccounted = size_t(1) << 14;

}  // namespace

struct ProcState {
    ProcView view;
    ProcessSummary summary;
    std::map<int, DeviceAcc> devices;
    std::vector<StreamAcc> streams;  // by DeviceTimeline stream index
    std::unordered_set<uint32_t> tids;
    std::unordered_map<uint32_t, uint64_t> threadCalls;  // calls placed per thread (CallInfo::threadOrdinal)
    AllocTurnover turnover;  // CallInfo::turnover
    MemoryBook memory;
    CollectiveBook collectives;
    uint64_t maxSpanEnd = 0;
    bool anyCall = false;
    std::map<uint32_t, WindowTally> windowTally;  // by CallBody::window

    std::unordered_map<uint16_t, ApiClass> apiClasses;
    ApiClass undefinedApi;  // the last id used before its ApiDef
    std::unordered_map<uint64_t, uint32_t> siteIndex;  // (stack, category) -> raw site
    std::vector<uint32_t> rawSites;                    // this process's raw sites, in order of creation

    // The window.
    std::vector<wire::CallBody> calls;  // waiting, in arrival order until a flush sorts them
    std::unordered_map<uint64_t, std::vector<wire::GpuSpanBody>> spans;  // by call seq
    std::vector<wire::NvtxBody> nvtx;
    std::vector<std::pair<uint64_t, uint32_t>> order;  // a flush's scratch: (begin, arrival index)
    std::vector<wire::CallBody> spare;                  // and the buffer it sorts the calls into
    uint64_t frontier = 0;  // calls beginning before this have been processed
    // Per device and pass (est, lo, hi): work not yet final, measured spans and placements alike.
    std::map<int, std::array<IntervalMap, 3>> busy;
    IntervalMap busyAll;              // est, any device
    IntervalSet hostCarry;            // host intervals of processed calls that idle gaps not yet final may need
    // The pauses before calls flagged kCallIdleBefore (from the thread's previous call's end) of processed
    // calls, kept as hostCarry is; and each thread's last processed call's end.
    IntervalSet waitCarry;
    std::unordered_map<uint32_t, uint64_t> lastEndByTid;
    // Host time inside a library invocation (the CUDA calls made inside a library call and the time
    // between two of one invocation: library_time.h), kept as hostCarry
    // is; each thread's last processed call as the invocations see it; that time per library file.
    LibraryInvocations libs;
    IntervalSet libCarry;
    std::unordered_map<uint32_t, LibraryStep> lastLibByTid;
    std::map<std::string, uint64_t> libraryHostNs;
    LibraryInvocationCounter invocations;  // how often each library call was invoked (library-setup-in-loop)
    DeviceTimeline timeline{[this](const Placement& p) { placed(p); }};
    // Waits placed on the timeline whose accounting waits until every call that begins before they end
    // has been placed too (Unaccounted): in time order.
    std::deque<Unaccounted> unaccounted;

    // NVTX ranges still open.
    std::map<std::pair<uint32_t, uint32_t>, std::vector<OpenRange>> pushed;  // (domain, tid) -> stack
    std::map<uint64_t, OpenRange> started;                                   // range id -> start/end range

    const ApiClass& api(uint16_t id)
    {
        auto it = apiClasses.find(id);
        if (it != apiClasses.end()) return it->second;
        const auto def = view.proc->apis.find(id);
        ApiClass a = classifyApi(def != view.proc->apis.end() ? def->second.name : "api#" + std::to_string(id));
        if (def == view.proc->apis.end()) {
            undefinedApi = std::move(a);  // not cached: its ApiDef may still come
            return undefinedApi;
        }
        return apiClasses.emplace(id, std::move(a)).first->second;
    }
    DeviceAcc& device(int d) { return devices[d]; }

    // The timeline placed an operation (measured or inferred): its busy time and its stream's figures.
    void placed(const Placement& p)
    {
        if (p.stream >= streams.size()) streams.resize(p.stream + 1);
        StreamAcc& st = streams[p.stream];
        st.id = timeline.streamOf(p.stream);
        ++st.ops;
        for (int k = 0; k < 3; ++k) st.busy[k] += p.end[k] - p.begin[k];
        if (p.estimated || p.bounded) ++st.estimatedOps;
        auto& sets = busy[p.device];
        for (int k = 0; k < 3; ++k)
            if (p.end[k] > p.begin[k]) sets[k].add(p.begin[k], p.end[k]);
        if (p.end[kEst] > p.begin[kEst]) busyAll.add(p.begin[kEst], p.end[kEst]);
    }
};

Context::Context() = default;
Context::~Context() = default;

ProcState& procState(Context& cx, const Process& p)
{
    if (cx.lastProcess == &p) return *cx.lastState;
    auto it = cx.open.find(&p);
    if (it == cx.open.end()) {
        auto ps = std::make_unique<ProcState>();
        ps->view.proc = &p;
        ps->libs.bind(&p);
        it = cx.open.emplace(&p, std::move(ps)).first;
    }
    cx.lastProcess = &p;
    cx.lastState = it->second.get();
    return *cx.lastState;
}

DeviceTimeline::Result placeOnTimeline(DeviceTimeline& timeline, const ApiClass& api, const wire::CallBody& c,
                                       const std::vector<wire::GpuSpanBody>* spans, bool upperBound)
{
    const bool deviceOp = isDeviceOp(c);
    const bool implicitWait = !deviceOp && succeeded(c) && c.device >= 0 && isImplicitSync(api, c);
    const TimelineRole role = implicitWait && api.role == TimelineRole::None ? TimelineRole::CtxSync : api.role;
    return timeline.add(c, role, deviceOp, hasFlag(c, wire::kCallImplicitSync), spans, upperBound);
}

namespace {

// How long the call's device was busy while the call ran. For a wait, other streams' work still pending
// on the timeline (placed provisionally, not yet settled by an anchor of its own) counts too: another
// thread's stream runs while this one waits.
uint64_t busyDuring(const ProcState& ps, const wire::CallBody& c, bool wait)
{
    if (c.device < 0) return ps.busyAll.overlap(c.beginNs, c.endNs);
    std::vector<Interval> pending;
    if (wait) ps.timeline.pendingWithin(c.device, c.beginNs, c.endNs, pending);
    auto it = ps.busy.find(c.device);
    if (it == ps.busy.end()) return IntervalMap().overlap(c.beginNs, c.endNs, std::move(pending));
    return it->second[kEst].overlap(c.beginNs, c.endNs, std::move(pending));
}

void applyNvtx(Context& cx, ProcState& ps, const wire::NvtxBody& n)
{
    const Process& p = *ps.view.proc;
    auto close = [&](const OpenRange& r, uint64_t end) {
        NvtxRow& row = cx.nvtx[r.name];
        row.name = r.name;
        ++row.ranges;
        row.rangeNs += end - r.begin;
    };
    switch (n.kind) {
    case wire::NvtxKind::Push: ps.pushed[{n.domainId, n.tid}].push_back({p.nvtxName(n), n.tid, n.timeNs}); break;
    case wire::NvtxKind::Pop: {
        auto& st = ps.pushed[{n.domainId, n.tid}];
        if (st.empty()) break;  // a pop without a push (the push predates the shim): nothing to close
        close(st.back(), std::max(n.timeNs, st.back().begin));
        st.pop_back();
        break;
    }
    case wire::NvtxKind::Start: ps.started[n.rangeId] = {p.nvtxName(n), n.tid, n.timeNs}; break;
    case wire::NvtxKind::End: {
        auto it = ps.started.find(n.rangeId);
        if (it == ps.started.end()) break;
        close(it->second, std::max(n.timeNs, it->second.begin));
        ps.started.erase(it);
        break;
    }
    case wire::NvtxKind::Mark: break;
    }
}

// A call counts toward every range open around it (its thread's pushes, the process's starts), once
// per name even when ranges of one name nest.
void attributeNvtx(Context& cx, ProcState& ps, const CallInfo& ci)
{
    if (ps.pushed.empty() && ps.started.empty()) return;
    const wire::CallBody& c = *ci.call;
    std::vector<const std::string*> names;
    auto note = [&](const std::string& n) {
        for (const std::string* s : names)
            if (*s == n) return;
        names.push_back(&n);
    };
    for (const auto& [key, st] : ps.pushed)
        if (key.second == c.tid)
            for (const OpenRange& r : st) note(r.name);
    for (const auto& [id, r] : ps.started) note(r.name);
    const bool sync = ci.api->explicitWait || isImplicitSync(*ci.api, c);
    for (const std::string* name : names) {
        NvtxRow& row = cx.nvtx[*name];
        row.name = *name;
        ++row.calls;
        row.cudaApiNs += hostNs(c);
        row.gpuNs += ci.gpuNs;
        if (ci.upperBound) {
            ++row.upperBoundCount;
            row.upperBoundGpuNs += ci.boundGpuNs;
        }
        if (isCountedTransfer(c)) {
            ++row.transfers;
            row.transferBytes += c.args.transfer.bytes;
            row.transferHostNs += hostNs(c);
        }
        if (isCountedLaunch(*ci.api, c)) {
            ++row.launches;
            row.launchHostNs += hostNs(c);
        }
        if (sync) {
            ++row.syncs;
            row.syncBlockedNs += hostNs(c);
        }
    }
}

// The call's part that needs no other thread's later work: its GPU spans, its placement on the device
// timeline (which must see the calls in time order), its call site and NVTX ranges (those open now).
void placeCall(Context& cx, ProcState& ps, const wire::CallBody& c, const ApiClass& api, Unaccounted& u)
{
    CallInfo& ci = u.ci;
    ci.call = &c;
    ci.api = &api;
    auto sp = ps.spans.find(c.seq);
    if (sp != ps.spans.end()) {
        ci.timed = true;
        ci.spans = &sp->second;
        for (const wire::GpuSpanBody& s : sp->second) {
            ci.gpuNs += s.endNs - s.beginNs;
            if (gpuSpanIsUpperBound(c, s)) {
                ci.upperBound = true;
                ci.boundGpuNs += s.endNs - s.beginNs;
            }
        }
    }
    u.deviceOp = isDeviceOp(c);
    const DeviceTimeline::Result placed = placeOnTimeline(ps.timeline, api, c, ci.spans, ci.upperBound);
    ci.foundEmpty = placed.foundEmpty;
    u.known = placed.known;
    ci.rawSite = rawSiteOf(cx, ps.siteIndex, ps.rawSites, c);
    ci.threadOrdinal = ++ps.threadCalls[c.tid];
    if (c.category == wire::Category::Alloc && ci.rawSite != kNoRawSite)
        ci.turnover = ps.turnover.onCall(ci.rawSite, succeeded(c) ? c.args.alloc.ptr : 0, isRelease(api), c.beginNs);
    ps.memory.feed(c, api, ci.rawSite,
                   c.category == wire::Category::Alloc && api.asyncName ? ps.timeline.readyAt(streamIdOf(c)) : 0);
    attributeNvtx(cx, ps, ci);
}

// The rest, once the calls that began while it ran are placed: the GPU's busy time during it, and every
// table and finding it counts toward.
void accountCall(Context& cx, ProcState& ps, Unaccounted& u)
{
    CallInfo& ci = u.ci;
    const wire::CallBody& c = *ci.call;
    const bool deviceOp = u.deviceOp;
    ci.busyNs = busyDuring(ps, c, u.wait);

    // Overview.
    ProcessSummary& s = ps.summary;
    s.cudaApiNs += hostNs(c);
    if (deviceOp) {
        ++s.deviceOps;
        DeviceAcc* d = c.device >= 0 ? &ps.device(c.device) : nullptr;
        if (d) ++d->ops;
        if (ci.timed) {
            ++s.timedOps;
            if (d) ++d->timedOps;
        } else if (hasFlag(c, wire::kCallGpuSampledOut)) {
            ++s.sampledOutOps;
            if (d) ++d->sampledOutOps;
        } else if (hasFlag(c, wire::kCallGpuTimed) && d) {
            ++d->lostOps;
            if (hasFlag(c, wire::kCallHeldUp)) {
                ++d->heldUpOps;
                d->heldUpNs += hostNs(c);
            }
        }
        if (!u.known && d) ++d->unknownOps;
    }
    if (ci.spans)
        for (const wire::GpuSpanBody& g : *ci.spans) {
            auto d = ps.devices.find(g.device);
            if (d == ps.devices.end()) continue;  // a zero-length span on a device nothing else names
            const uint64_t len = g.endNs - g.beginNs;
            if (c.category == wire::Category::Launch) d->second.kernelNs += len;
            else if (c.category == wire::Category::Transfer) d->second.transferNs += len;
            else d->second.otherNs += len;
            if (gpuSpanIsUpperBound(c, g)) {
                ++d->second.upperBoundOps;
                d->second.upperBoundNs += len;
            }
        }

    addApi(cx, ci);
    addTransfer(cx, ps.view, ci);
    addGraphCall(cx, ps.view, ci);
    addLaunch(cx, ps.view, ci);
    noteCollectiveLaunch(ps.collectives, ps.view, ci);
    addSync(cx, ps.view, ci);
    addFindingCall(cx, ps.view, ci);
    if (ci.spans) ps.spans.erase(c.seq);
}

// Accounts the waits placed so far that no call still to be placed (none begins before placedUpTo)
// can overlap; the oldest early when too many are held.
void accountReady(Context& cx, ProcState& ps, uint64_t placedUpTo)
{
    while (!ps.unaccounted.empty()) {
        Unaccounted& u = ps.unaccounted.front();
        if (u.call.endNs > placedUpTo && ps.unaccounted.size() <= kMaxUnaccounted) break;
        accountCall(cx, ps, u);
        ps.unaccounted.pop_front();
    }
}

void processCall(Context& cx, ProcState& ps, const wire::CallBody& c)
{
    const ApiClass& api = ps.api(c.apiId);
    const bool wait = api.explicitWait || isImplicitSync(api, c);
    // (A call whose ApiDef has not come is counted at once: its class is a scratch copy the next such
    // call overwrites.)
    if (wait && &api != &ps.undefinedApi) {
        Unaccounted& u = ps.unaccounted.emplace_back();
        u.call = c;
        u.wait = true;
        placeCall(cx, ps, u.call, api, u);
    } else {
        Unaccounted u;
        u.wait = wait;
        placeCall(cx, ps, c, api, u);
        accountCall(cx, ps, u);
    }
    accountReady(cx, ps, c.beginNs);
}

// One call of a thread through the library invocations (library_time.h): learns whether it begins one
// (into `learnt`), adds to `into` the time since the thread's previous call when both lie in one
// invocation, and the call itself when made inside a library; prev becomes the call. Returns the time
// added between the calls (0: none). lastEnd: the thread's previous call's end (null: none).
uint64_t libraryStep(const LibraryInvocations& libs, LibraryStep& prev, std::unordered_set<uint64_t>& learnt,
                     const std::unordered_set<uint64_t>* extra, const uint64_t* lastEnd, const wire::CallBody& c,
                     IntervalSet& into)
{
    const LibraryStep cur = libs.step(c.stackId);
    libs.learn(prev, cur, learnt);
    uint64_t between = 0;
    if (lastEnd && *lastEnd < c.beginNs && libs.inside(prev, cur, extra)) {
        into.add(*lastEnd, c.beginNs);
        between = c.beginNs - *lastEnd;
    }
    if (cur.key) into.add(c.beginNs, c.endNs);
    prev = cur;
    return between;
}

// Host time inside CUDA around the gaps that become final in a flush: the carried intervals and every
// call still held. Built only when a gap needs it.
class HostInCuda {
public:
    HostInCuda(const ProcState& ps) : m_ps(ps) {}
    const IntervalSet& get()
    {
        if (!m_built) {
            m_set = m_ps.hostCarry;
            for (const wire::CallBody& c : m_ps.calls) m_set.add(c.beginNs, c.endNs);
            m_built = true;
        }
        return m_set;
    }
    // Host time in CUDA or waiting for work: the pauses flagged kCallIdleBefore beside the calls.
    const IntervalSet& withWaiting()
    {
        if (!m_waitBuilt) {
            m_wait = get();
            for (const auto& i : m_ps.waitCarry.merged()) m_wait.add(i.begin, i.end);
            std::unordered_map<uint32_t, uint64_t> lastEnd = m_ps.lastEndByTid;
            for (const auto& [begin, index] : m_ps.order) {
                const wire::CallBody& c = m_ps.calls[index];
                auto it = lastEnd.find(c.tid);
                if (hasFlag(c, wire::kCallIdleBefore) && it != lastEnd.end() && it->second < c.beginNs)
                    m_wait.add(it->second, c.beginNs);
                uint64_t& e = lastEnd[c.tid];
                e = std::max(e, c.endNs);
            }
            m_waitBuilt = true;
        }
        return m_wait;
    }

    // Host time inside library invocations: the CUDA calls made inside a library call and the time
    // between two of one invocation.
    const IntervalSet& library()
    {
        if (!m_libBuilt) {
            m_libOnly = m_ps.libCarry;
            std::unordered_map<uint32_t, uint64_t> lastEnd = m_ps.lastEndByTid;
            std::unordered_map<uint32_t, LibraryStep> last = m_ps.lastLibByTid;
            std::unordered_set<uint64_t> starts;  // learned in this look-ahead only
            for (const auto& [begin, index] : m_ps.order) {
                const wire::CallBody& c = m_ps.calls[index];
                auto it = lastEnd.find(c.tid);
                libraryStep(m_ps.libs, last[c.tid], starts, &starts, it != lastEnd.end() ? &it->second : nullptr, c, m_libOnly);
                uint64_t& e = lastEnd[c.tid];
                e = std::max(e, c.endNs);
            }
            m_libBuilt = true;
        }
        return m_libOnly;
    }
    // Host time in CUDA, waiting for work, or inside a library invocation.
    const IntervalSet& withLibrary()
    {
        if (!m_withLibBuilt) {
            m_lib = withWaiting();
            for (const auto& i : library().merged()) m_lib.add(i.begin, i.end);
            m_withLibBuilt = true;
        }
        return m_lib;
    }

private:
    const ProcState& m_ps;
    IntervalSet m_set, m_wait, m_lib, m_libOnly;
    bool m_built = false, m_waitBuilt = false, m_libBuilt = false, m_withLibBuilt = false;
};

constexpr size_t kMaxIdleLog = 1u << 20;

void gap(DeviceAcc& d, const Interval& g, HostInCuda& host)
{
    d.idleLog.push_back({g.begin, d.idleGapNs});
    d.idleGapNs += g.length();
    d.idleLog.push_back({g.end, d.idleGapNs});
    if (d.idleLog.size() > kMaxIdleLog) {
        // Keep every other gap: idleBetween interpolates across the ones dropped.
        std::vector<std::pair<uint64_t, uint64_t>> thin;
        for (size_t i = 0; i < d.idleLog.size(); i += 4) thin.insert(thin.end(), d.idleLog.begin() + long(i), d.idleLog.begin() + long(std::min(i + 2, d.idleLog.size())));
        d.idleLog.swap(thin);
    }
    d.largestGapNs = std::max(d.largestGapNs, g.length());
    ++d.gaps;
    const uint64_t inCuda = host.get().overlap(g.begin, g.end);
    const uint64_t covered = std::max(inCuda, host.withWaiting().overlap(g.begin, g.end));
    const uint64_t starved = g.length() - std::min(g.length(), covered);
    d.starvedNs += starved;
    d.waitingNs += covered - inCuda;
    d.largestStarvedNs = std::max(d.largestStarvedNs, starved);
    // Idle while the host was inside a library invocation (its CUDA calls included): its one-time setup,
    // which the share of starved time is not taken over.
    d.idleInLibraryNs += host.library().overlap(g.begin, g.end);
    if (!starved) return;
    // Of the starved time, what the host spent inside library calls (library_time.h): not the user's.
    const uint64_t withLib = std::max(covered, host.withLibrary().overlap(g.begin, g.end));
    const uint64_t inLibrary = std::min(starved, withLib - covered);
    d.starvedInLibraryNs += inLibrary;
    d.largestUserStarvedNs = std::max(d.largestUserStarvedNs, starved - inLibrary);
}

// Processes the calls that begin before `until` (all of them when final), then the busy intervals that
// can no longer change.
void flush(Context& cx, ProcState& ps, bool final)
{
    auto& calls = ps.calls;
    // Time order, ties in arrival order: sort keys, not 96-byte calls.
    auto& order = ps.order;
    order.resize(calls.size());
    for (size_t i = 0; i < calls.size(); ++i) order[i] = {calls[i].beginNs, uint32_t(i)};
    std::sort(order.begin(), order.end());
    std::stable_sort(ps.nvtx.begin(), ps.nvtx.end(), [](const wire::NvtxBody& a, const wire::NvtxBody& b) { return a.timeNs < b.timeNs; });
    size_t k = calls.size();
    uint64_t until = UINT64_MAX;
    if (!final) {
        k = calls.size() / 2;
        until = order[k].first;
        while (k > 0 && order[k - 1].first == until) --k;
        if (k == 0) {  // half the window begins at one instant: take all of that instant
            while (k < order.size() && order[k].first == until) ++k;
            until = k < order.size() ? order[k].first : until + 1;
        }
    }
    auto call = [&](size_t i) -> const wire::CallBody& { return calls[order[i].second]; };
    HostInCuda host(ps);

    size_t n = 0;
    for (size_t i = 0; i < k; ++i) {
        while (n < ps.nvtx.size() && ps.nvtx[n].timeNs <= call(i).beginNs) applyNvtx(cx, ps, ps.nvtx[n++]);
        processCall(cx, ps, call(i));
    }
    while (n < ps.nvtx.size() && (final || ps.nvtx[n].timeNs < until)) applyNvtx(cx, ps, ps.nvtx[n++]);

    // Busy intervals that end by `until` are final: no span still to come can begin before it, nor any
    // placement the timeline still holds back, nor does any call still to be accounted overlap them.
    if (final) ps.timeline.finish();
    accountReady(cx, ps, final ? UINT64_MAX : until);
    uint64_t settled = std::min(until, ps.timeline.pendingFrom());
    if (!ps.unaccounted.empty()) settled = std::min(settled, ps.unaccounted.front().call.beginNs);
    const uint64_t activeBegin = ps.summary.activeBeginNs, activeEnd = ps.summary.activeEndNs;
    auto inActive = [&](const Interval& i) {
        const uint64_t b = std::max(i.begin, activeBegin), e = std::min(i.end, activeEnd);
        return e > b ? e - b : 0;
    };
    for (auto& [dev, sets] : ps.busy) {
        DeviceAcc& d = ps.device(dev);
        for (Interval i : sets[kEst].takeEndingBy(settled)) {
            // Work that ends by `settled` is final, but work placed later may still begin exactly there.
            if (d.anyBusy && i.begin <= d.lastBusy) i.begin = d.lastBusy;
            else if (d.anyBusy) gap(d, {d.lastBusy, i.begin}, host);
            else d.firstBusy = i.begin;
            d.anyBusy = true;
            d.lastBusy = std::max(d.lastBusy, i.end);
            d.busyNs += inActive(i);
        }
        for (const Interval& i : sets[kLo].takeEndingBy(settled)) d.busyLoNs += inActive(i);
        for (const Interval& i : sets[kHi].takeEndingBy(settled)) d.busyHiNs += inActive(i);
    }
    ps.busyAll.takeEndingBy(settled);

    // Keep the host intervals that a gap still to become final may overlap: from the earliest last end.
    uint64_t keepFrom = settled;
    for (const auto& [dev, d] : ps.devices)
        if (d.anyBusy) keepFrom = std::min(keepFrom, d.lastBusy);
    for (size_t i = 0; i < k; ++i) {
        const wire::CallBody& c = call(i);
        ps.hostCarry.add(c.beginNs, c.endNs);
        auto it = ps.lastEndByTid.find(c.tid);
        if (hasFlag(c, wire::kCallIdleBefore) && it != ps.lastEndByTid.end() && it->second < c.beginNs)
            ps.waitCarry.add(it->second, c.beginNs);
        LibraryStep& lib = ps.lastLibByTid[c.tid];
        if (const uint64_t between = libraryStep(ps.libs, lib, ps.libs.starts(), nullptr,
                                                 it != ps.lastEndByTid.end() ? &it->second : nullptr, c, ps.libCarry))
            ps.libraryHostNs[ps.libs.libraryOf(lib.key)] += between;
        ps.invocations.onCall(lib.key, c.stackId, c.tid, c.beginNs, c.endNs, isDeviceOp(c));
        uint64_t& e = ps.lastEndByTid[c.tid];
        e = std::max(e, c.endNs);
    }
    ps.hostCarry.takeEndingBy(keepFrom);
    ps.waitCarry.takeEndingBy(keepFrom);
    ps.libCarry.takeEndingBy(keepFrom);
    if (ps.libCarry.size() > kMaxCarried) ps.libCarry.takeEndingBy(ps.libCarry.merged()[ps.libCarry.size() / 2].end);
    if (ps.waitCarry.size() > kMaxCarried) ps.waitCarry.takeEndingBy(ps.waitCarry.merged()[ps.waitCarry.size() / 2].end);
    if (ps.hostCarry.size() > kMaxCarried) ps.hostCarry.takeEndingBy(ps.hostCarry.merged()[ps.hostCarry.size() / 2].end);

    // The calls still held, in time order, into the spare buffer (no allocation per flush).
    ps.spare.clear();
    ps.spare.reserve(calls.capacity());
    for (size_t i = k; i < order.size(); ++i) ps.spare.push_back(call(i));
    calls.swap(ps.spare);
    ps.nvtx.erase(ps.nvtx.begin(), ps.nvtx.begin() + long(n));
    ps.frontier = std::max(ps.frontier, until);
}

}  // namespace

void addCall(Context& cx, ProcState& ps, const wire::CallBody& c)
{
    ProcessSummary& s = ps.summary;
    ++s.calls;
    if (!ps.anyCall) s.activeBeginNs = c.beginNs;
    s.activeBeginNs = std::min(s.activeBeginNs, c.beginNs);
    s.activeEndNs = std::max(s.activeEndNs, c.endNs);
    ps.anyCall = true;
    ps.tids.insert(c.tid);
    WindowTally& wt = ps.windowTally[c.window];
    ++wt.calls;
    ++wt.byCategory[size_t(c.category) % wire::kWindowCategories];
    if (c.device >= 0 && hasFlag(c, wire::kCallDeviceWork)) ps.device(c.device);
    if (c.beginNs < ps.frontier) ++cx.lateRecords;
    ps.calls.push_back(c);
    if (ps.calls.size() >= cx.windowCalls) flush(cx, ps, false);
}

void addSpan(Context& cx, ProcState& ps, const wire::GpuSpanBody& s)
{
    if (s.endNs < s.beginNs) return;
    ps.maxSpanEnd = std::max(ps.maxSpanEnd, s.endNs);
    if (s.endNs > s.beginNs) ps.device(s.device);  // a device the process ran work on
    if (s.beginNs < ps.frontier) {
        // Its call has been processed without it: its busy time still counts, from the frontier on.
        ++cx.lateRecords;
        if (s.endNs > ps.frontier) {
            for (IntervalMap& set : ps.busy[s.device]) set.add(ps.frontier, s.endNs);
            ps.busyAll.add(ps.frontier, s.endNs);
        }
        return;
    }
    // Its busy time goes in when its call goes through the device timeline (it begins no earlier than
    // its call, so nothing final can precede it); a zero-length span still says the call was timed.
    ps.spans[s.seq].push_back(s);
}

void addNvtx(Context& cx, ProcState& ps, const wire::NvtxBody& n)
{
    if (n.timeNs < ps.frontier) ++cx.lateRecords;
    ps.nvtx.push_back(n);
}

void addEvent(Context& cx, ProcState& ps, const wire::RecordView& v)
{
    switch (v.type) {
    case wire::RecordType::Call: addCall(cx, ps, v.as<wire::CallBody>()); break;
    case wire::RecordType::GpuSpan: addSpan(cx, ps, v.as<wire::GpuSpanBody>()); break;
    case wire::RecordType::Nvtx: addNvtx(cx, ps, v.as<wire::NvtxBody>()); break;
    default: break;
    }
}

uint64_t DeviceAcc::idleBetween(uint64_t from, uint64_t to) const
{
    // Cumulative idle at t: piecewise linear through the log's points (exact at every gap's ends).
    auto at = [&](uint64_t t) -> double {
        auto it = std::lower_bound(idleLog.begin(), idleLog.end(), std::make_pair(t, uint64_t(0)));
        if (it == idleLog.begin()) return 0;
        if (it == idleLog.end()) return idleLog.empty() ? 0 : double(idleLog.back().second);
        const auto& [t1, i1] = *it;
        const auto& [t0, i0] = *(it - 1);
        return t1 > t0 ? double(i0) + double(i1 - i0) * double(t - t0) / double(t1 - t0) : double(i1);
    };
    return to > from ? uint64_t(std::max(0.0, at(to) - at(from))) : 0;
}

// A process's state is forgotten with its address: the next capture read into the same analysis
// (several captures as one run) may put a new Process where this one was.
void forgetProcess(Context& cx, const Process& p)
{
    cx.open.erase(&p);
    if (cx.lastProcess == &p) {
        cx.lastProcess = nullptr;
        cx.lastState = nullptr;
    }
}

void dropProcess(Context& cx, const Process& p)
{
    forgetProcess(cx, p);
}

// The library calls the process invoked again and again (LibraryInvocationCounter), with the raw sites of
// the CUDA calls made inside them: library-setup-in-loop's input (collector/findings/library_setup.cpp).
void noteLibraryRepeats(Context& cx, ProcState& ps)
{
    ps.invocations.finish();
    for (const auto& [key, t] : ps.invocations.byKey()) {
        if (t.steps < kMinLibraryRepeats) continue;
        LibraryRepeat r;
        r.proc = cx.processes.size();
        r.key = key;
        r.count = t.count;
        r.ns = t.ns;
        r.firstNs = t.firstNs;
        r.stacks.assign(t.stacks.begin(), t.stacks.end());
        for (uint32_t raw : ps.rawSites)
            if (t.stacks.count(cx.rawSites[raw].stackId)) r.rawSites.push_back(raw);
        if (!r.rawSites.empty()) cx.libraryRepeats.push_back(std::move(r));
    }
}

void endProcess(Context& cx, const Process& p)
{
    ProcState& ps = procState(cx, p);
    flush(cx, ps, true);
    ProcessSummary& s = ps.summary;

    // NVTX ranges still open when the process ended run to its last record.
    const uint64_t last = std::max(p.lastNs, s.activeEndNs);
    auto close = [&](const OpenRange& r) {
        NvtxRow& row = cx.nvtx[r.name];
        row.name = r.name;
        ++row.ranges;
        row.rangeNs += std::max(last, r.begin) - r.begin;
    };
    for (const auto& [key, st] : ps.pushed)
        for (const OpenRange& r : st) close(r);
    for (const auto& [id, r] : ps.started) close(r);

    s.pid = p.pid;
    s.ppid = p.ppid;
    s.command = p.command;
    s.rank = p.identity.rank;
    s.localRank = p.identity.localRank;
    s.worldSize = p.identity.worldSize;
    s.launcher = p.identity.launcher;
    s.host = p.identity.host;
    s.capture = p.captureName;
    s.ended = p.ended;
    s.streamError = p.streamError;
    s.notices = p.notices;
    // The shim starts inside the first call it sees, so that call may begin before startNs.
    const uint64_t start = p.startNs && ps.anyCall ? std::min(p.startNs, s.activeBeginNs) : p.startNs ? p.startNs : s.activeBeginNs;
    const uint64_t end = std::max({p.lastNs, s.activeEndNs, p.ended ? p.end.endNs : 0, ps.maxSpanEnd});
    s.wallNs = end > start ? end - start : 0;
    s.cudaApiPct = s.wallNs ? 100.0 * double(s.cudaApiNs) / double(s.wallNs) : 0;
    uint64_t threadDropped = 0;
    for (const wire::ThreadStatsBody& t : p.threadStats) {
        s.gpuspyOverheadNs += t.overheadNs;
        threadDropped += t.dropped;
        ps.tids.insert(t.tid);
    }
    // A stream cut short (killed, its connection lost) lacks its live threads' final ThreadStats; its
    // latest Tally (sent to a collector about once a second) still counts their own time until then.
    s.gpuspyOverheadNs = std::max(s.gpuspyOverheadNs, p.tally.overheadNs);
    s.cpuWaitKnown = p.cpuWaitKnown;
    s.cpuWaitNs = p.cpuWaitKnown ? p.cpuWait.runDelayNs : 0;
    for (const wire::GpuBudgetBody& b : p.gpuBudgets) {
        ProcessSummary::GpuTimingCost& g = s.gpuTiming;
        g.known = true;
        g.budgetPpm = std::max(g.budgetPpm, b.budgetPpm);
        g.recordNs += b.recordNs;
        g.bookkeepingNs += b.bookkeepingNs;
        g.choosingNs += b.choosingNs;
        g.drainNs += b.drainNs;
        g.overNs += b.lastNs > b.firstNs ? b.lastNs - b.firstNs : 0;
        g.timedOps += b.timedOps;
        g.untimedOps += b.untimedOps;
        g.lateEndSpans += b.lateEndSpans;
        g.heldUpSpans += b.heldUpSpans;
    }
    threadDropped = std::max(threadDropped, p.tally.dropped);
    s.threads = std::max<uint64_t>(p.threads.size(), ps.tids.size());
    s.droppedRecords = std::max(p.ended ? p.end.recordsDropped : 0, threadDropped);
    s.recordsMade = p.ended ? p.end.recordsMade : 0;

    for (const auto& [d, name] : p.devices) ps.device(d).name = name;
    for (const auto& [d, ids] : p.deviceIds)
        if (auto it = ps.devices.find(d); it != ps.devices.end()) it->second.uuid = ids.uuid;
    resolveSites(cx, ps.view, ps.rawSites);
    endCollectives(cx, p, ps.view, ps.collectives);
    for (uint32_t raw : ps.rawSites) cx.rawSites[raw].proc = cx.processes.size();
    noteLibraryRepeats(cx, ps);
    cx.starts.push_back(p.startNs ? std::min(p.startNs, s.activeBeginNs ? s.activeBeginNs : p.startNs) : s.activeBeginNs);
    cx.processes.push_back(std::move(s));
    // The libraries whose own host work left the GPU idle, by their host time inside them.
    std::vector<std::pair<uint64_t, std::string>> libraries;
    for (const auto& [name, ns] : ps.libraryHostNs) libraries.emplace_back(ns, name);
    std::sort(libraries.rbegin(), libraries.rend());
    for (auto& [dev, d] : ps.devices)
        if (d.starvedInLibraryNs)
            for (const auto& [ns, name] : libraries) d.starvedLibraries.push_back(name);
    cx.devices.push_back(std::move(ps.devices));
    cx.streams.push_back(std::move(ps.streams));
    finishCaptureWindows(cx, p, ps.windowTally);
    ps.memory.finish();
    if (!ps.memory.spaces.empty()) {
        ps.memory.pid = p.pid;
        ps.memory.originNs = cx.processes.back().activeBeginNs;
        cx.memory.push_back(std::move(ps.memory));
    }
    forgetProcess(cx, p);
}

}  // namespace gpuspy::collect::detail
