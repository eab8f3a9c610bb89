// collector/timeline/device_timeline.cpp: the placement of untimed device operations on their streams, from
// what CUDA guarantees: a stream runs its work in order, an operation starts no earlier than its call
// (an asynchronous one no earlier than the call's return plus the device's submit latency), no earlier
// than an event its stream waits on, and a sync, a successful query or a blocking call returned only
// once the work it waited for had ended. A timed operation's measured begin ends the stretch before it:
// the untimed work in between fits inside, and if the measured op was held back by it, filled it.
#include "collector/timeline/device_timeline.h"

#include "collector/model/api_names.h"

#include <algorithm>
#include <cmath>

namespace gpuspy::collect {

namespace {

constexpr uint64_t kCuStreamLegacy = 0x1, kCuStreamPerThread = 0x2;
constexpr int32_t kNotReady = 600;
// A wait that returned later than this after its call began blocked on device work (not merely took a
// quick look): the work it waited for ended as it returned. Only believed where the stream may still
// have been busy when the wait began (the long-duration pass ends after its begin): a wait preempted
// on a loaded machine is no evidence of device work.
constexpr uint64_t kBlockedNs = 10000;
// A timed operation whose measured begin lies further than this past its earliest possible start
// (its call's return plus the submit latency) was held back by the work before it.
constexpr uint64_t kHeldBackNs = 5000;
constexpr size_t kMaxPending = 4096;   // per stream: beyond, the oldest half is placed as it stands
constexpr size_t kMaxEvents = 1u << 16;

uint64_t mix(uint64_t a, uint64_t b)
{
    return (a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2))) * 0xff51afd7ed558ccdull;
}

unsigned sizeClass(uint64_t bytes)
{
    unsigned c = 0;
    while (bytes > 1) bytes >>= 1, ++c;
    return c;
}

bool isTransfer(const wire::CallBody& c) { return c.category == wire::Category::Transfer; }

// Per-unit keys: (exact, coarse).
std::pair<uint64_t, uint64_t> keysOf(const wire::CallBody& c)
{
    if (c.category == wire::Category::Launch && c.args.launch.kernelId) {
        const wire::LaunchArgs& l = c.args.launch;
        const uint64_t coarse = mix(1, l.kernelId);
        return {mix(coarse, uint64_t(l.grid[0]) * l.grid[1] * l.grid[2]), coarse};
    }
    if (isTransfer(c)) {
        const wire::TransferArgs& t = c.args.transfer;
        const uint64_t coarse = mix(mix(mix(2, uint64_t(t.direction)), uint64_t(t.srcMem)), uint64_t(t.dstMem));
        return {mix(coarse, sizeClass(t.bytes)), coarse};
    }
    const uint64_t coarse = mix(3, c.apiId);
    return {mix(coarse, c.stackId), coarse};
}

double unitsOf(const wire::CallBody& c) { return isTransfer(c) ? double(std::max<uint64_t>(c.args.transfer.bytes, 1)) : 1.0; }

uint64_t sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// A wait names its stream as the work did; a wait whose device is unknown matches on the handle alone.
bool sameStream(const StreamId& a, const StreamId& waited)
{
    return a.handle == waited.handle && a.perThread == waited.perThread && a.tid == waited.tid &&
           (waited.device < 0 || a.device == waited.device);
}

}  // namespace

TimelineRole timelineRole(std::string_view abiName)
{
    const std::string_view b = driverBaseName(abiName);
    if (b == "cuCtxSynchronize") return TimelineRole::CtxSync;
    if (b == "cuStreamSynchronize") return TimelineRole::StreamSync;
    if (b == "cuEventSynchronize") return TimelineRole::EventSync;
    if (b == "cuStreamQuery") return TimelineRole::StreamQuery;
    if (b == "cuEventQuery") return TimelineRole::EventQuery;
    if (b == "cuEventRecord" || b == "cuEventRecordWithFlags") return TimelineRole::EventRecord;
    if (b == "cuStreamWaitEvent") return TimelineRole::StreamWaitEvent;
    if (b == "cuStreamWriteValue32" || b == "cuStreamWriteValue64") return TimelineRole::WriteValue;
    // A batch of memory operations is a wait unless it writes: then it is device work, a write (add()). The
    // shim names its first write's address, else its first wait's.
    if (b == "cuStreamWaitValue32" || b == "cuStreamWaitValue64" || b == "cuStreamBatchMemOp") return TimelineRole::WaitValue;
    if (b == "cuGreenCtxStreamCreate") return TimelineRole::GreenStream;
    if (b == "cuStreamCreate" || b == "cuStreamCreateWithPriority") return TimelineRole::StreamCreate;
    if (b == "cuGreenCtxRecordEvent") return TimelineRole::GreenRecord;
    if (b == "cuGreenCtxWaitEvent") return TimelineRole::GreenWait;
    return TimelineRole::None;
}

StreamId streamIdOf(const wire::CallBody& c)
{
    uint64_t h = c.stream;
    bool perThread = (c.flags & wire::kCallPerThreadStream) != 0;
    if (h == kCuStreamLegacy) h = 0, perThread = false;
    if (h == kCuStreamPerThread) h = 0, perThread = true;
    if (h) perThread = false;
    return StreamId{c.device, h, perThread ? c.tid : 0u, perThread};
}

// ---- durations

void DurationModel::Samples::add(double v, bool dropFirst)
{
    // A kernel's first timed launch carries one-off costs (a lazily loaded module): once others are
    // known it no longer speaks for the rest.
    if (dropFirst && n == 1 && ring.size() == 1) ring.clear();
    ++n;
    if (ring.size() < kRing) ring.push_back(v);
    else ring[n % kRing] = v;
    dirty = true;
}

Times DurationModel::Samples::quantiles(double scale) const
{
    if (dirty) {
        sorted = ring;
        std::sort(sorted.begin(), sorted.end());
        dirty = false;
    }
    const size_t m = sorted.size();
    auto at = [&](double q) { return uint64_t(std::llround(sorted[size_t(q * double(m - 1) + 0.5)] * scale)); };
    return {at(0.5), at(0.1), at(0.9)};
}

void DurationModel::learnInto(Map& exactMap, Map& coarseMap, const wire::CallBody& c, uint64_t gpuNs)
{
    const auto [exact, coarse] = keysOf(c);
    const double v = double(gpuNs) / unitsOf(c);
    const bool kernel = c.category == wire::Category::Launch;
    exactMap[exact].add(v, kernel);
    coarseMap[coarse].add(v, kernel);
}

Times DurationModel::guessFrom(const Map& exactMap, const Map& coarseMap, const wire::CallBody& c, bool* known)
{
    const auto [exact, coarse] = keysOf(c);
    const double units = unitsOf(c);
    for (const Map* map : {&exactMap, &coarseMap})
        if (auto it = map->find(map == &exactMap ? exact : coarse); it != map->end() && !it->second.ring.empty()) {
            *known = true;
            return it->second.quantiles(units);
        }
    *known = false;
    return {0, 0, 0};
}

void DurationModel::learn(const wire::CallBody& c, uint64_t gpuNs) { learnInto(m_exact, m_coarse, c, gpuNs); }
Times DurationModel::guess(const wire::CallBody& c, bool* known) const { return guessFrom(m_exact, m_coarse, c, known); }
void DurationModel::learnBound(const wire::CallBody& c, uint64_t gpuNs) { learnInto(m_boundExact, m_boundCoarse, c, gpuNs); }
Times DurationModel::guessBound(const wire::CallBody& c, bool* known) const
{
    return guessFrom(m_boundExact, m_boundCoarse, c, known);
}

// ---- placement

int64_t& DeviceTimeline::latency(int device)
{
    return m_latency.try_emplace(device, INT64_MAX).first->second;
}

uint32_t DeviceTimeline::streamIndex(const StreamId& id)
{
    auto& list = m_byHandle[id.handle];
    for (uint32_t i : list)
        if (m_streams[i].id == id) return i;
    Stream s;
    s.id = id;
    auto made = m_madeNonBlocking.find(id.handle);
    s.order = id.perThread ? Order::Blocking
              : id.handle == 0 ? Order::Legacy
              : made != m_madeNonBlocking.end() ? (made->second ? Order::NonBlocking : Order::Blocking)
                                                : Order::Unknown;
    m_streams.push_back(std::move(s));
    list.push_back(uint32_t(m_streams.size() - 1));
    return list.back();
}

Times DeviceTimeline::legacyReady(const Stream& s) const
{
    Times t{};
    if (s.order != Order::Legacy && s.order != Order::Blocking) return t;
    auto kinds = m_legacyKinds.find(s.id.device);
    if (kinds == m_legacyKinds.end() || kinds->second != 3) return t;
    const Order partner = s.order == Order::Legacy ? Order::Blocking : Order::Legacy;
    for (const Stream& o : m_streams)
        if (&o != &s && o.order == partner && o.id.device == s.id.device)
            for (int k = 0; k < 3; ++k) t[k] = std::max(t[k], o.ready[k]);
    return t;
}

void DeviceTimeline::emit(const Stream& s, uint32_t index, const Pending& p)
{
    Placement pl;
    pl.seq = p.seq;
    pl.device = s.id.device;
    pl.stream = index;
    pl.begin = p.start;
    pl.end = p.end;
    for (int k = 0; k < 3; ++k) pl.end[k] = std::max(pl.end[k], pl.begin[k]);
    m_sink(pl);
}

size_t DeviceTimeline::prefixOf(const Stream& s, uint64_t serial) const
{
    size_t n = 0;
    while (n < s.pending.size() && s.pending[n].serial < serial) ++n;
    return n;
}

void DeviceTimeline::anchorPass(Stream& s, size_t count, uint64_t t, bool busyUntil, int k)
{
    count = std::min(count, s.pending.size());
    if (!count) return;
    Pending& last = s.pending[count - 1];
    const uint64_t a = s.pending[0].start[k], p = last.end[k];
    if (p > t) {
        // They ended by t: squeeze them into [a, t], keeping their order and proportions.
        const uint64_t to = std::max(t, a);
        const double f = p > a ? double(to - a) / double(p - a) : 0;
        for (size_t i = 0; i < count; ++i) {
            Pending& q = s.pending[i];
            q.start[k] = a + uint64_t(double(q.start[k] - a) * f);
            q.end[k] = a + uint64_t(double(q.end[k] - a) * f);
        }
    } else if (busyUntil && p < t) {
        // The stream was busy until t: the back-to-back run that ends the stretch lasted longer than
        // its durations said. Stretch that run (from its first op that waited for its submission, not
        // for the op before it) to t; the gaps before it stay.
        size_t j = count - 1;
        while (j > 0 && s.pending[j].queued[k]) --j;
        const uint64_t c0 = s.pending[j].start[k];
        if (p > c0) {
            const double f = double(t - c0) / double(p - c0);
            for (size_t i = j; i < count; ++i) {
                Pending& q = s.pending[i];
                q.start[k] = c0 + uint64_t(double(q.start[k] - c0) * f);
                q.end[k] = c0 + uint64_t(double(q.end[k] - c0) * f);
            }
        }
        last.end[k] = t;
    }
    if (count == s.pending.size()) s.ready[k] = std::max(s.pending[count - 1].end[k], s.waitUntil[k]);
}

void DeviceTimeline::anchor(Stream& s, size_t count, uint64_t t, Until until, bool close)
{
    count = std::min(count, s.pending.size());
    if (until == Until::Soft && count) {
        // A wait that returned late may have waited on the device or merely been preempted (a loaded
        // machine): the estimate stretches the work no further than its long durations reach, the
        // short pass not at all, the long pass to the wait's return.
        // (Work no timed sibling gave a length has no such reach: the wait is all there is to go by.)
        const Pending& last = s.pending[count - 1];
        const uint64_t reach = last.unknown ? t : last.end[kHi];
        anchorPass(s, count, std::min(t, reach), true, kEst);
        anchorPass(s, count, t, false, kLo);
        anchorPass(s, count, t, true, kHi);
    } else {
        // Work no timed sibling gave a length may have lasted until t: the long pass says so.
        bool unknown = false;
        for (size_t i = 0; i < count && !unknown && t != UINT64_MAX; ++i) unknown = s.pending[i].unknown;
        for (int k = 0; k < 3; ++k) anchorPass(s, count, t, until == Until::Hard || (k == kHi && unknown), k);
    }
    if (!close) return;
    const uint32_t index = uint32_t(&s - m_streams.data());
    for (size_t i = 0; i < count; ++i) emit(s, index, s.pending[i]);
    s.pending.erase(s.pending.begin(), s.pending.begin() + long(count));
}

DeviceTimeline::Result DeviceTimeline::add(const wire::CallBody& c, TimelineRole role, bool deviceOp, bool blocking,
                                           const std::vector<wire::GpuSpanBody>* spans, bool upperBound)
{
    Result r;
    if (role == TimelineRole::WaitValue && deviceOp) role = TimelineRole::WriteValue;  // a batch that writes
    const uint64_t t = c.endNs;
    const bool ok = c.result == 0;
    const bool blocked = c.endNs > c.beginNs + kBlockedNs;
    auto mayHaveBeenBusy = [&](const Stream& s) {
        return !s.pending.empty() && (s.pending.back().end[kHi] >= c.beginNs || s.pending.back().unknown);
    };

    switch (role) {
    case TimelineRole::CtxSync:
    case TimelineRole::StreamSync: {
        if (!ok) break;
        const StreamId id = streamIdOf(c);
        // The stream(s) waited on; of several, only the one that ended last kept the wait going.
        std::vector<Stream*> waited;
        for (Stream& s : m_streams) {
            const bool match = role == TimelineRole::CtxSync ? (c.device < 0 || s.id.device == c.device) : sameStream(s.id, id);
            if (match && !s.pending.empty()) waited.push_back(&s);
        }
        // The shim marked when the stream drained (an event recorded before the wait, gpuMarkDrain): its
        // work ended then exactly, if the stream was still busy when it was recorded.
        if (role == TimelineRole::StreamSync && spans && !spans->empty()) {
            uint64_t drained = 0;
            for (const wire::GpuSpanBody& g : *spans) drained = std::max(drained, g.endNs);
            drained = std::min(drained, t);
            for (Stream* s : waited)
                anchor(*s, s->pending.size(), drained, drained > c.beginNs + kHeldBackNs ? Until::Hard : Until::None, true);
            break;
        }
        Stream* lastToEnd = nullptr;
        for (Stream* s : waited)
            if (!lastToEnd || s->pending.back().end[kEst] > lastToEnd->pending.back().end[kEst]) lastToEnd = s;
        for (Stream* s : waited)
            anchor(*s, s->pending.size(), t, blocked && s == lastToEnd && mayHaveBeenBusy(*s) ? Until::Soft : Until::None, true);
        break;
    }
    case TimelineRole::StreamQuery: {
        const StreamId id = streamIdOf(c);
        for (Stream& s : m_streams) {
            if (!sameStream(s.id, id) || s.pending.empty()) continue;
            if (ok) anchor(s, s.pending.size(), t, Until::None, true);
            else if (c.result == kNotReady) anchor(s, s.pending.size(), c.beginNs, Until::Hard, false);
        }
        break;
    }
    case TimelineRole::EventSync:
    case TimelineRole::EventQuery: {
        auto ev = m_events.find(c.args.sync.object);
        if (ev == m_events.end()) break;
        Stream& s = m_streams[ev->second.stream];
        const size_t n = prefixOf(s, ev->second.serial);
        if (!n) break;
        if (ok) anchor(s, n, t, role == TimelineRole::EventSync && blocked && mayHaveBeenBusy(s) ? Until::Soft : Until::None, true);
        else if (c.result == kNotReady) anchor(s, n, c.beginNs, Until::Hard, false);
        break;
    }
    case TimelineRole::EventRecord: {
        if (!ok) break;
        if (m_events.size() >= kMaxEvents) m_events.clear();
        const uint32_t si = streamIndex(streamIdOf(c));
        const Stream& src = m_streams[si];
        m_events[c.args.sync.object] = Event{si, src.serial, src.ready, !src.pending.empty() || !src.lastMeasured};
        break;
    }
    case TimelineRole::StreamWaitEvent: {
        if (!ok) break;
        auto ev = m_events.find(c.args.sync.object);
        if (ev == m_events.end()) break;
        Stream& s = m_streams[streamIndex(streamIdOf(c))];
        for (int k = 0; k < 3; ++k) s.waitUntil[k] = std::max(s.waitUntil[k], ev->second.done[k]);
        if (ev->second.estimated) s.waitedOnEstimate = true;
        break;
    }
    case TimelineRole::WaitValue: {
        if (!ok) break;
        const uint32_t si = streamIndex(streamIdOf(c));
        Stream& s = m_streams[si];
        // Written before (in host order): the stream's next work follows that write. Else it waits for
        // the next write of the address, placed when that write is (the wait holds no device time).
        s.held = true;
        s.heldAfter = s.serial;
        if (auto v = m_values.find(c.args.sync.object); v != m_values.end()) {
            for (int k = 0; k < 3; ++k) s.waitUntil[k] = std::max(s.waitUntil[k], v->second[k]);
        } else {
            if (m_valueWaiters.size() >= kMaxEvents) m_valueWaiters.clear();
            auto& w = m_valueWaiters[c.args.sync.object];
            if (w.size() < kMaxEvents) w.push_back({si, s.serial});
        }
        break;
    }
    case TimelineRole::GreenStream: {
        if (!ok || !c.stream) break;
        auto& list = m_greenStreams[c.args.sync.object];
        if (list.size() < kMaxEvents) list.push_back(streamIndex(streamIdOf(c)));
        break;
    }
    case TimelineRole::GreenRecord: {
        // As cuEventRecord on each of the green context's streams: it completes when the last of them does.
        if (!ok) break;
        auto g = m_greenStreams.find(c.stream);
        if (g == m_greenStreams.end() || g->second.empty()) break;
        if (m_events.size() >= kMaxEvents) m_events.clear();
        uint32_t last = g->second.front();
        Times done{};
        for (uint32_t si : g->second) {
            const Stream& s = m_streams[si];
            for (int k = 0; k < 3; ++k) done[k] = std::max({done[k], s.ready[k], s.waitUntil[k]});
            if (s.ready[kEst] > m_streams[last].ready[kEst]) last = si;
        }
        m_events[c.args.sync.object] = Event{last, m_streams[last].serial, done};
        break;
    }
    case TimelineRole::GreenWait: {
        if (!ok) break;
        auto ev = m_events.find(c.args.sync.object);
        auto g = m_greenStreams.find(c.stream);
        if (ev == m_events.end() || g == m_greenStreams.end()) break;
        for (uint32_t si : g->second) {
            Stream& s = m_streams[si];
            for (int k = 0; k < 3; ++k) s.waitUntil[k] = std::max(s.waitUntil[k], ev->second.done[k]);
            s.held = true;
            s.heldAfter = s.serial;
        }
        break;
    }
    case TimelineRole::StreamCreate: {
        if (!ok || !c.stream) break;
        const bool nonBlocking = (c.args.raw[wire::kStreamFlagsSlot] & wire::kStreamNonBlocking) != 0;
        m_madeNonBlocking[c.stream] = nonBlocking;
        for (uint32_t i : m_byHandle[c.stream])  // a handle that comes back for a new stream
            if (!m_streams[i].id.perThread) m_streams[i].order = nonBlocking ? Order::NonBlocking : Order::Blocking;
        break;
    }
    case TimelineRole::WriteValue:
    case TimelineRole::None: break;
    }
    if (!deviceOp) return r;
    if (role == TimelineRole::WriteValue) {
        const Result res = add(c, TimelineRole::None, deviceOp, blocking, spans, upperBound);
        if (!ok) return res;
        Stream& s = m_streams[streamIndex(streamIdOf(c))];
        if (m_values.size() >= kMaxEvents) m_values.clear();
        const Times done = s.ready;
        m_values[c.args.sync.object] = done;
        if (auto w = m_valueWaiters.find(c.args.sync.object); w != m_valueWaiters.end()) {
            const std::vector<ValueWaiter> waiters = std::move(w->second);
            m_valueWaiters.erase(w);
            for (const ValueWaiter& x : waiters) holdUntil(m_streams[x.stream], x.serial, done);
        }
        return res;
    }

    r.deviceOp = true;
    const uint32_t si = streamIndex(streamIdOf(c));
    Stream& s = m_streams[si];
    if (s.order == Order::Legacy) m_legacyKinds[s.id.device] |= 1;
    if (s.order == Order::Blocking) m_legacyKinds[s.id.device] |= 2;
    const Times partners = legacyReady(s);
    int64_t& lat = latency(c.device);
    if (spans && !spans->empty()) {
        uint64_t b = UINT64_MAX, e = 0, gpu = 0;
        for (const wire::GpuSpanBody& g : *spans) {
            b = std::min(b, g.beginNs);
            e = std::max(e, g.endNs);
        }
        // The shim's start event is the stream's previous end event when nothing untimed ran between: under
        // the legacy stream's rules the work may then have waited for a partner stream's after that end, so
        // a span that begins exactly at its stream's last end, before the partners' work ends, began when
        // that work ended.
        const uint64_t legacyStart = s.lastMeasured && b == s.ready[kEst] && partners[kEst] > b ? std::min(partners[kEst], e) : 0;
        if (legacyStart) b = legacyStart;
        for (const wire::GpuSpanBody& g : *spans) gpu += g.endNs - std::max(g.beginNs, std::min(legacyStart, g.endNs));
        bool heldBack = false, unjudged = false;
        if (upperBound) {
            m_model.learnBound(c, gpu);
        } else {
            m_model.learn(c, gpu);
            if (!blocking) {
                const int64_t x = std::max(int64_t(b) - int64_t(c.endNs), -int64_t(c.endNs - c.beginNs));
                // The device's first measured op has no latency to be judged by: its begin may lie late
                // because the untimed work before it held it back, or because the driver was slow to
                // start it. Either may be: that work may have run until then (Soft).
                unjudged = lat == INT64_MAX;
                const int64_t known = unjudged ? x : lat;
                heldBack = int64_t(b) > int64_t(c.endNs) + known + int64_t(kHeldBackNs);
                lat = std::min(lat, x);
            }
        }
        // Held by a wait for a value (or a green context's event) after pending work: its late begin says when
        // the wait ended, not that the work before the wait ran until then.
        const bool heldByWait = s.held && (s.pending.empty() || s.heldAfter > s.pending.front().serial);
        s.held = false;
        if (heldByWait) heldBack = unjudged = false;
        // After a wait on another stream's event whose end was only estimated, a late begin may be that
        // stream's work ending later than estimated (which also moved this stream's pending work later, not
        // longer): the work before may have run until then, no more is known (Soft).
        const bool heldByOther = heldBack && (s.waitedOnEstimate || partners[kEst] > s.ready[kEst]);
        // Held by the legacy stream's rule (its partner's work ran last): the work before it ended before that
        // partner's began, which says nothing of running until this begin.
        const bool heldByPartner = heldBack && partners[kEst] > s.ready[kEst];
        s.waitedOnEstimate = false;
        r.foundEmpty = !heldBack;
        anchor(s, s.pending.size(), b,
               heldByPartner ? Until::None
               : heldBack && !heldByOther ? Until::Hard
               : heldBack || unjudged     ? Until::Soft
                                          : Until::None,
               true);
        // A span that is only an upper bound (a copy or memset that blocked its call on an idle stream:
        // events cannot see when its work began) holds the work somewhere before its end: the estimate and
        // the long pass take all of it (the bound, as the report says), the short pass what measured
        // siblings say, else none of it (collector/README.md, "The device timeline").
        bool known = false;
        const Times d = upperBound ? m_model.guess(c, &known) : Times{};
        for (const wire::GpuSpanBody& g : *spans) {
            Placement pl;
            pl.seq = c.seq;
            pl.device = g.device;
            pl.stream = si;
            const uint64_t gb = std::max(g.beginNs, std::min(legacyStart, g.endNs));
            pl.begin = {gb, gb, gb};
            pl.end = {g.endNs, g.endNs, g.endNs};
            pl.estimated = false;
            if (upperBound) {
                const uint64_t lo = known ? std::min(g.endNs - g.beginNs, d[kLo]) : 0;
                pl.begin[kLo] = g.endNs - lo;
                pl.bounded = true;
            }
            m_sink(pl);
        }
        for (int k = 0; k < 3; ++k) s.ready[k] = std::max(e, s.waitUntil[k]);
        s.lastMeasured = true;
        ++s.serial;
        return r;
    }

    bool known = false;
    Times d = m_model.guess(c, &known);
    if (!known) {
        ++m_unknown;
        r.known = false;
    }
    const int64_t l = lat == INT64_MAX ? 0 : lat;
    const uint64_t earliest = blocking ? c.beginNs : std::max<uint64_t>(c.beginNs, uint64_t(std::max<int64_t>(0, int64_t(c.endNs) + l)));
    Pending p;
    p.seq = c.seq;
    p.serial = s.serial++;
    p.unknown = !known;
    for (int k = 0; k < 3; ++k) {
        const uint64_t base = std::max({s.ready[k], s.waitUntil[k], partners[k]});
        p.queued[k] = base > earliest;
        p.start[k] = std::max(base, earliest);
        p.end[k] = p.start[k] + d[k];
        s.ready[k] = p.end[k];
    }
    r.foundEmpty = !p.queued[kEst];
    s.pending.push_back(p);
    s.lastMeasured = false;
    if (blocking) {
        // The call returned once its own device work had ended: the work before it ended by then, and
        // it ended just before the return. Its length is its siblings'. With none measured exactly, the
        // whole call is the only bound: the long pass takes it (as it does in any case), the short pass
        // none of it, the estimate what siblings timed only as upper bounds took at most (a call held up
        // off the CPU lasts far longer than its copy), else the whole call.
        anchor(s, s.pending.size(), t, Until::None, false);
        const size_t n = s.pending.size();
        bool bounded = false;
        const Times ub = known ? Times{} : m_model.guessBound(c, &bounded);
        for (int k = 0; k < 3; ++k) {
            Pending& q = s.pending[n - 1];
            const uint64_t whole = t - std::min(t, q.start[k]);
            const uint64_t len = k == kHi ? whole : known ? d[k] : k == kLo ? 0 : bounded ? std::min(whole, ub[kEst]) : whole;
            const uint64_t start = std::max(q.start[k], sub(t, len));
            // Queued behind earlier work, it started when that work ended, which therefore ran until then.
            if (start > q.start[k] && q.queued[k]) anchorPass(s, n - 1, start, true, k);
            q.start[k] = start;
            q.end[k] = std::max(start, t);
            s.ready[k] = std::max(t, s.waitUntil[k]);
        }
        anchor(s, s.pending.size(), t, Until::None, true);
    } else if (s.pending.size() > kMaxPending) {
        anchor(s, s.pending.size() / 2, UINT64_MAX, Until::None, true);
    }
    return r;
}

void DeviceTimeline::holdUntil(Stream& s, uint64_t serial, const Times& done)
{
    // Work already placed for good (measured, or anchored) is where it was seen; pending estimates after the
    // wait move behind the write, keeping their order and lengths.
    const size_t from = prefixOf(s, serial);
    for (int k = 0; k < 3; ++k) {
        uint64_t carry = done[k];
        for (size_t i = from; i < s.pending.size(); ++i) {
            Pending& q = s.pending[i];
            if (q.start[k] < carry) {
                const uint64_t shift = carry - q.start[k];
                q.start[k] += shift;
                q.end[k] += shift;
                q.queued[k] = true;
            }
            carry = q.end[k];
        }
        s.ready[k] = std::max(s.ready[k], carry);
        s.waitUntil[k] = std::max(s.waitUntil[k], done[k]);
    }
}

uint64_t DeviceTimeline::readyAt(const StreamId& id) const
{
    auto it = m_byHandle.find(id.handle);
    if (it == m_byHandle.end()) return 0;
    for (uint32_t i : it->second)
        if (m_streams[i].id == id) return std::max(m_streams[i].ready[kEst], m_streams[i].waitUntil[kEst]);
    return 0;
}

void DeviceTimeline::finish()
{
    for (Stream& s : m_streams) anchor(s, s.pending.size(), UINT64_MAX, Until::None, true);
}

void DeviceTimeline::pendingWithin(int device, uint64_t begin, uint64_t end, std::vector<Interval>& out) const
{
    for (const Stream& s : m_streams) {
        if (s.id.device != device) continue;
        for (const Pending& p : s.pending) {
            if (p.start[kEst] >= end) break;  // in order: the rest start later
            if (p.end[kEst] > begin && p.end[kEst] > p.start[kEst]) out.push_back({p.start[kEst], p.end[kEst]});
        }
    }
}

uint64_t DeviceTimeline::pendingFrom() const
{
    uint64_t from = UINT64_MAX;
    for (const Stream& s : m_streams)
        if (!s.pending.empty())
            for (int k = 0; k < 3; ++k) from = std::min(from, s.pending.front().start[k]);
    return from;
}

}  // namespace gpuspy::collect

