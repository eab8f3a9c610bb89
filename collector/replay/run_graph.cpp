// collector/replay/run_graph.cpp: the run graph of a process, and the calibration of each call's and each
// operation's costs from the capture itself.
//
// Calibration, per call and per op, so that the graph replayed unchanged gives back the run:
// - a call that waited (its waited work ended after it began) returns `postNs` after that work's end, and
//   costs at least `ownNs` of host time: the median time of its entry point's calls that did not wait
//   (capped by its own duration), else its post time; a call that did not wait costs what it took;
// - an op that found its stream free (began after its stream's previous op and the events it waits on)
//   starts `latency` after its submission, as measured; one queued behind others is given the median
//   latency of its device's free ops (at most its own begin less its submission).
#include "collector/replay/run_graph.h"

#include "collector/analyze/internal.h"
#include "collector/timeline/device_timeline.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace gpuspy::collect::replay {

namespace {

using detail::ApiClass;
using detail::hasFlag;

// A call that blocks on its own work (a synchronous copy or memset) has its work's end event recorded after
// it returns: where the work ended before the return (the host descheduled inside the call, or slow to
// return), the event reads the time of its record, not the work's end. Such a span is only an upper bound
// of the work; its length is taken as the median per byte (per op without bytes) of its kind's blocking
// spans (same call kind, direction, host memory kind; at least kTrimSamples of them), where the span is
// more than twice that: one slow return does not make the GPU slow in every replay of the fix. The call's
// wait then returns later after the work (postNs), so the run replayed unchanged is the same.
constexpr size_t kTrimSamples = 3;

// Call i's op taken to last `length`: the rest of its span is the call's, after the work (done[i]).
void shortenOwnOp(RunGraph& g, std::vector<uint64_t>& done, size_t i, uint64_t length)
{
    Op& op = g.ops[g.calls[i].op];
    if (op.end - op.begin <= length) return;
    op.end = op.begin + length;
    op.trimmed = true;
    done[i] = std::min(done[i], op.end);
}

void trimLateEnds(RunGraph& g, std::vector<uint64_t>& done)
{
    auto keyOf = [](const Call& c) { return std::tuple(int(c.kind), int(c.direction), int(c.hostMem), c.bytes ? 0 : int(c.apiId)); };
    auto rateOf = [&](const Call& c, const Op& op) { return double(op.end - op.begin) / double(c.bytes ? c.bytes : 1); };
    std::map<std::tuple<int, int, int, int>, std::vector<double>> rates;
    for (const Call& c : g.calls) {
        if (c.wait != WaitKind::OwnOp || c.op == kNone || !g.ops[c.op].measured || g.ops[c.op].bounded) continue;
        rates[keyOf(c)].push_back(rateOf(c, g.ops[c.op]));
    }
    std::map<std::tuple<int, int, int, int>, double> typical;
    for (auto& [k, v] : rates) {
        if (v.size() < kTrimSamples) continue;
        std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
        typical[k] = v[v.size() / 2];
    }
    for (size_t i = 0; i < g.calls.size(); ++i) {
        const Call& c = g.calls[i];
        if (c.wait != WaitKind::OwnOp || c.op == kNone || !g.ops[c.op].measured || g.ops[c.op].bounded) continue;
        auto t = typical.find(keyOf(c));
        if (t == typical.end()) continue;
        const Op& op = g.ops[c.op];
        const uint64_t likely = uint64_t(t->second * double(c.bytes ? c.bytes : 1));
        if (op.end - op.begin > 2 * likely) shortenOwnOp(g, done, i, likely);
    }
}

// A blocking copy or memset on an idle stream has only an upper bound for its span: CUDA events cannot see
// when its work began, so the span holds the driver's host time around the work (and any time the host was
// descheduled inside the call). Alike ones (same call kind, direction, host memory kind and size) do the
// same device work: each is taken to last the shortest span of its kind, the tightest bound there is (the
// report's findings take it so, collector/findings/transfers.cpp), and the rest of its span is host time
// of the call (postNs), which a fix that shortens the work does not remove.
void tightenBoundedSpans(RunGraph& g, std::vector<uint64_t>& done)
{
    auto keyOf = [](const Call& c) { return std::tuple(int(c.kind), int(c.direction), int(c.hostMem), c.bytes); };
    std::map<std::tuple<int, int, int, uint64_t>, uint64_t> shortest;
    auto bounded = [&](const Call& c) { return c.wait == WaitKind::OwnOp && c.op != kNone && g.ops[c.op].bounded; };
    for (const Call& c : g.calls) {
        if (!bounded(c)) continue;
        const Op& op = g.ops[c.op];
        auto [it, fresh] = shortest.try_emplace(keyOf(c), op.end - op.begin);
        if (!fresh) it->second = std::min(it->second, op.end - op.begin);
    }
    for (size_t i = 0; i < g.calls.size(); ++i) {
        const Call& c = g.calls[i];
        if (bounded(c)) shortenOwnOp(g, done, i, shortest[keyOf(c)]);
    }
}

struct PlacedWork {
    uint64_t begin = UINT64_MAX, end = 0;
    bool measured = false, bounded = false;
    StreamId stream;
};

struct StreamKey {
    int device;
    uint64_t handle;
    uint32_t tid;
    bool perThread;
    bool operator<(const StreamKey& o) const
    {
        return std::tie(device, handle, tid, perThread) < std::tie(o.device, o.handle, o.tid, o.perThread);
    }
};

uint64_t median(std::vector<uint64_t>& v)
{
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

CallKind kindOf(const wire::CallBody& c, const ApiClass& api)
{
    if (api.hostFunc) return CallKind::HostFunc;
    switch (api.role) {
    case TimelineRole::EventRecord:
    case TimelineRole::GreenRecord: return CallKind::EventRecord;
    case TimelineRole::StreamWaitEvent:
    case TimelineRole::GreenWait: return CallKind::WaitEvent;
    default: break;
    }
    if (api.query) return CallKind::Query;
    if (api.explicitWait) return CallKind::Sync;
    switch (c.category) {
    case wire::Category::Launch: return CallKind::Launch;
    case wire::Category::Graph: return hasFlag(c, wire::kCallDeviceWork) ? CallKind::GraphLaunch : CallKind::Other;
    case wire::Category::Transfer:
        return c.args.transfer.direction == wire::Direction::Memset ? CallKind::Memset : CallKind::Copy;
    case wire::Category::Alloc: return api.freeLike ? CallKind::Free : CallKind::Alloc;
    default: return CallKind::Other;
    }
}

wire::MemKind hostSide(const wire::TransferArgs& t)
{
    switch (t.direction) {
    case wire::Direction::HtoD: return t.srcMem;
    case wire::Direction::DtoH: return t.dstMem;
    default: return wire::MemKind::Unknown;
    }
}

}  // namespace

std::string streamName(const Stream& s)
{
    std::string dev = "GPU " + std::to_string(s.device) + " ";
    if (s.perThread) return dev + "per-thread stream of tid " + std::to_string(s.tid);
    if (s.handle == 0) return dev + "default stream";
    char buf[32];
    snprintf(buf, sizeof buf, "stream 0x%llx", static_cast<unsigned long long>(s.handle));
    return dev + buf;
}

namespace {

// How far back (ops of the device in a row already ended by then) a device-wide wait looks for untimed work
// placed past its return.
constexpr size_t kClampWindow = 256;

// The joins between threads (Call::joinFirst): a thread's end inside another thread's host time between
// two calls, the call after it coming within kJoinSlackNs of the latest such end.
void findJoins(RunGraph& g)
{
    if (g.threads.size() < 2) return;
    std::map<uint32_t, std::vector<uint32_t>> ended;  // per waiting call: the last calls of threads ended before it
    for (const Thread& b : g.threads) {
        if (b.calls.empty()) continue;
        const uint32_t last = b.calls.back();
        const uint64_t endB = g.calls[last].end;
        for (const Thread& a : g.threads) {
            if (&a == &b || a.calls.size() < 2) continue;
            // A's first call beginning at or after B's end, whose previous call returned before it.
            auto it = std::lower_bound(a.calls.begin(), a.calls.end(), endB,
                                       [&](uint32_t c, uint64_t t) { return g.calls[c].begin < t; });
            if (it == a.calls.begin() || it == a.calls.end()) continue;
            if (g.calls[*std::prev(it)].end >= endB) continue;
            ended[*it].push_back(last);
        }
    }
    for (auto& [i, lasts] : ended) {
        Call& c = g.calls[i];
        uint64_t nearest = UINT64_MAX;
        for (uint32_t l : lasts) nearest = std::min(nearest, sub(c.begin, g.calls[l].end));
        if (nearest > kJoinSlackNs) continue;
        c.joinFirst = uint32_t(g.joins.size());
        c.joinCount = uint32_t(lasts.size());
        for (uint32_t l : lasts) g.joins.push_back({l, sub(c.begin, g.calls[l].end)});
    }
}

}  // namespace

std::string threadName(const Thread& t)
{
    return "tid " + std::to_string(t.tid) + (t.name.empty() ? "" : " (" + t.name + ")");
}

RunGraph buildRunGraph(const Process& p)
{
    std::vector<const wire::CallBody*> order;
    order.reserve(p.calls.size());
    for (const wire::CallBody& c : p.calls) order.push_back(&c);
    auto byBegin = [](auto* a, auto* b) { return a->beginNs < b->beginNs; };
    if (!std::is_sorted(order.begin(), order.end(), byBegin)) std::stable_sort(order.begin(), order.end(), byBegin);
    return buildRunGraph(p, order, p.startNs, std::max(p.lastNs, p.startNs));
}

RunGraph buildRunGraph(const Process& p, const std::vector<const wire::CallBody*>& order, uint64_t startNs,
                       uint64_t endNs)
{
    RunGraph g;
    g.pid = p.pid;
    g.command = p.command;
    g.startNs = startNs;
    g.endNs = std::max(endNs, startNs);
    g.calls.reserve(order.size());
    g.ops.reserve(p.spans.size());

    std::unordered_map<uint64_t, PlacedWork> work;  // by call seq
    detail::placeProcess(p, order, [&](const Placement& pl, const StreamId& id) {
        PlacedWork& w = work[pl.seq];
        w.begin = std::min(w.begin, pl.begin[kEst]);
        w.end = std::max(w.end, pl.end[kEst]);
        w.measured = w.measured || !pl.estimated;
        w.bounded = w.bounded || pl.bounded;
        w.stream = id;
    });

    std::unordered_map<uint16_t, ApiClass> apis;
    std::unordered_map<uint32_t, uint32_t> threadOf;
    std::map<StreamKey, uint32_t> streamOf;
    struct EventAt {
        uint32_t stream, upTo;
        uint64_t done;
    };
    std::unordered_map<uint64_t, EventAt> events;
    std::vector<std::vector<EventWait>> pendingWaits;  // per stream: waits for its next op
    std::map<int, uint64_t> deviceTail;                // latest placed end of the ops so far, per device
    std::vector<uint64_t> streamTail;                  // the same per stream
    std::vector<uint64_t> done;                        // per call: the measured end of what it waited for
    std::map<uint16_t, std::vector<uint64_t>> unblocked;  // per API: durations of its calls that did not wait
    std::map<int, std::vector<uint64_t>> freeLatency;    // per device: latencies of ops that found their stream free
    std::vector<bool> queued;                           // per op
    struct Poll {
        uint32_t first;
        uint64_t object;
    };
    std::unordered_map<uint32_t, Poll> openPoll;  // per thread: the not-ready polls since its last other call

    std::unordered_map<uint64_t, bool> madeNonBlocking;  // stream handle -> made with CU_STREAM_NON_BLOCKING
    auto streamIndex = [&](const StreamId& id) {
        const StreamKey k{id.device, id.handle, id.tid, id.perThread};
        auto it = streamOf.find(k);
        if (it != streamOf.end()) return it->second;
        Stream s;
        s.device = id.device;
        s.handle = id.handle;
        s.tid = id.tid;
        s.perThread = id.perThread;
        auto made = madeNonBlocking.find(id.handle);
        s.order = id.perThread ? Stream::Order::Blocking
                  : id.handle == 0 ? Stream::Order::Legacy
                  : made != madeNonBlocking.end() ? (made->second ? Stream::Order::NonBlocking : Stream::Order::Blocking)
                                                  : Stream::Order::Unknown;
        g.streams.push_back(s);
        pendingWaits.emplace_back();
        streamTail.push_back(0);
        return streamOf[k] = uint32_t(g.streams.size() - 1);
    };

    // The legacy default stream's rules as waits before an op (EventWait::legacy): on the legacy stream,
    // for what each blocking stream of its device holds; on a blocking stream, for what the legacy stream
    // holds. A wait already made for as many ops is not made again.
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> legacyWaited;  // (stream, source) -> ops waited for
    auto addLegacyWaits = [&](uint32_t si, int device) {
        const Stream& s = g.streams[si];
        auto wait = [&](uint32_t source) {
            const uint32_t upTo = uint32_t(g.streams[source].ops.size());
            uint32_t& done = legacyWaited[{si, source}];
            if (!upTo || done == upTo) return;
            done = upTo;
            pendingWaits[si].push_back({source, upTo, true});
        };
        for (uint32_t o = 0; o < g.streams.size(); ++o) {
            const Stream& other = g.streams[o];
            if (o == si || other.device != device) continue;
            if ((s.order == Stream::Order::Legacy && other.order == Stream::Order::Blocking) ||
                (s.order == Stream::Order::Blocking && other.order == Stream::Order::Legacy))
                wait(o);
        }
    };

    detail::MemoryBook pools;  // which stream-ordered allocations grew their pool (the report's model)
    auto poolTotals = [&] {
        std::pair<uint64_t, uint64_t> n{0, 0};
        for (const auto& [key, pool] : pools.pools) n.first += pool.reserve.grows(), n.second += pool.reserve.regrows();
        return n;
    };

    uint64_t lastReturn = 0;
    for (const wire::CallBody* cp : order) {
        const wire::CallBody& c = *cp;
        auto api = apis.find(c.apiId);
        if (api == apis.end()) {
            auto def = p.apis.find(c.apiId);
            api = apis.emplace(c.apiId, detail::classifyApi(def != p.apis.end() ? def->second.name : "api#" + std::to_string(c.apiId)))
                      .first;
        }
        const ApiClass& a = api->second;
        const uint32_t index = uint32_t(g.calls.size());
        Call call;
        call.seq = c.seq;
        call.begin = c.beginNs;
        call.end = std::max(c.endNs, c.beginNs);
        call.kind = kindOf(c, a);
        call.apiId = c.apiId;
        call.stackId = c.stackId;
        call.device = c.device;
        call.async = hasFlag(c, wire::kCallAsync);
        if (c.category == wire::Category::Transfer) {
            call.direction = c.args.transfer.direction;
            call.hostMem = hostSide(c.args.transfer);
            call.bytes = c.args.transfer.bytes;
        } else if (c.category == wire::Category::Alloc) {
            call.bytes = c.args.alloc.bytes;
            call.address = c.result == 0 ? c.args.alloc.ptr : 0;
            call.release = detail::isRelease(a);
            if (a.mem.streamOrdered || !pools.pools.empty()) {
                const auto before = poolTotals();
                pools.onCall(c, a, 0, 0);
                const auto after = poolTotals();
                if (a.mem.streamOrdered && a.mem.role == detail::MemRole::Alloc && c.result == 0)
                    call.pool = after.second != before.second ? Call::Pool::Regrew
                                : after.first != before.first ? Call::Pool::Grew
                                                              : Call::Pool::Served;
            }
        } else if (c.category == wire::Category::Launch) {
            call.kernelId = c.args.launch.kernelId;
        }
        if (c.category != wire::Category::Alloc) pools.feed(c, a, 0);  // a pool's configuration, a synchronize
        if (c.result == 0 && c.stream && a.role == TimelineRole::StreamCreate) {
            const bool nonBlocking = (c.args.raw[wire::kStreamFlagsSlot] & wire::kStreamNonBlocking) != 0;
            madeNonBlocking[c.stream] = nonBlocking;
            for (Stream& s : g.streams)  // a handle that comes back for a new stream
                if (s.handle == c.stream && !s.perThread)
                    s.order = nonBlocking ? Stream::Order::NonBlocking : Stream::Order::Blocking;
        }
        auto [th, fresh] = threadOf.try_emplace(c.tid, uint32_t(g.threads.size()));
        if (fresh) {
            Thread t;
            t.tid = c.tid;
            if (auto n = p.threads.find(c.tid); n != p.threads.end()) t.name = n->second;
            g.threads.push_back(std::move(t));
        }
        call.thread = th->second;
        Thread& thread = g.threads[call.thread];
        call.gap = thread.calls.empty() ? 0 : sub(call.begin, g.calls[thread.calls.back()].end);
        uint64_t waitedDone = 0;
        const bool ok = c.result == 0;

        // Its device work.
        auto w = work.find(c.seq);
        if (w != work.end() && w->second.end >= w->second.begin && detail::isDeviceOp(c)) {
            const uint32_t si = streamIndex(w->second.stream);
            Op op;
            op.call = index;
            op.stream = si;
            op.device = w->second.stream.device >= 0 ? w->second.stream.device : c.device;
            op.begin = w->second.begin;
            op.end = w->second.end;
            op.measured = w->second.measured;
            op.bounded = w->second.bounded;
            op.waitsFirst = uint32_t(g.eventWaits.size());
            addLegacyWaits(si, op.device);
            uint64_t deps = streamTail[si];
            for (const EventWait& ew : pendingWaits[si]) {
                g.eventWaits.push_back(ew);
                if (ew.upTo) deps = std::max(deps, g.ops[g.streams[ew.source].ops[ew.upTo - 1]].end);
            }
            op.waitsCount = uint32_t(pendingWaits[si].size());
            pendingWaits[si].clear();
            const bool blocking = hasFlag(c, wire::kCallImplicitSync);
            const uint64_t submit = blocking ? call.begin : call.end;
            op.latency = int64_t(op.begin) - int64_t(submit);
            // Placed at (or close to) the end of what it waited for: it waited. Close: within a rounding's reach,
            // or within 2% of its wait since its submission (an untimed op it follows ends where its siblings'
            // lengths put it, off by a little; a wait that long was for that op, not the driver's latency).
            constexpr uint64_t kPlacementSlackNs = 200;
            const uint64_t slack = std::max<uint64_t>(kPlacementSlackNs, sub(op.begin, submit) / 50);
            const bool isQueued = op.begin <= deps + slack;
            call.op = uint32_t(g.ops.size());
            g.streams[si].ops.push_back(call.op);
            streamTail[si] = std::max(streamTail[si], op.end);
            uint64_t& dt = deviceTail[op.device];
            dt = std::max(dt, op.end);
            if (!isQueued) freeLatency[op.device].push_back(uint64_t(std::max<int64_t>(0, op.latency)));
            queued.push_back(isQueued);
            g.ops.push_back(op);
            if (blocking) {
                call.wait = WaitKind::OwnOp;
                waitedDone = op.end;
            }
        }

        // What it waits for, and what it tells later calls.
        const StreamId sid = streamIdOf(c);
        auto pollOf = openPoll.find(call.thread);
        const bool pollContinues = pollOf != openPoll.end() && (call.kind == CallKind::Query) &&
                                   pollOf->second.object == (a.role == TimelineRole::EventQuery ? c.args.sync.object : c.stream);
        if (ok || c.result == detail::kCudaErrorNotReady) {
            switch (a.role) {
            case TimelineRole::StreamSync:
            case TimelineRole::StreamQuery:
                if (!ok) break;
                if (a.role == TimelineRole::StreamQuery && !pollContinues) break;  // a look, not a wait
                call.wait = WaitKind::Stream;
                call.waitStream = streamIndex(sid);
                call.waitUpTo = uint32_t(g.streams[call.waitStream].ops.size());
                waitedDone = streamTail[call.waitStream];
                break;
            case TimelineRole::EventSync:
            case TimelineRole::EventQuery: {
                if (!ok) break;
                if (a.role == TimelineRole::EventQuery && !pollContinues) break;
                auto ev = events.find(c.args.sync.object);
                if (ev == events.end()) break;
                call.wait = WaitKind::Event;
                call.waitStream = ev->second.stream;
                call.waitUpTo = ev->second.upTo;
                waitedDone = ev->second.done;
                break;
            }
            case TimelineRole::CtxSync:
                if (!ok) break;
                call.wait = WaitKind::Device;
                waitedDone = c.device >= 0 ? deviceTail[c.device] : 0;
                if (c.device < 0)
                    for (const auto& [d, t] : deviceTail) waitedDone = std::max(waitedDone, t);
                break;
            case TimelineRole::EventRecord:
                if (ok) {
                    const uint32_t si = streamIndex(sid);
                    events[c.args.sync.object] = {si, uint32_t(g.streams[si].ops.size()), streamTail[si]};
                }
                break;
            case TimelineRole::StreamWaitEvent:
                if (ok) {
                    auto ev = events.find(c.args.sync.object);
                    if (ev != events.end()) pendingWaits[streamIndex(sid)].push_back({ev->second.stream, ev->second.upTo});
                }
                break;
            default: break;
            }
        }
        // An implicit sync with no work of its own (a free, a host unregister) waits as a context sync does.
        if (call.wait == WaitKind::None && call.op == kNone && ok && c.device >= 0 && detail::isImplicitSync(a, c)) {
            call.wait = WaitKind::Device;
            waitedDone = deviceTail[c.device];
        }
        if (call.wait == WaitKind::Device) call.waitUpTo = uint32_t(g.ops.size());
        // A device-wide wait that returned: the work it waited for had ended by then. Untimed work that the
        // estimate placed past that return is brought back to it, so the replay does not make the wait (and
        // whatever waits for this thread) longer than it was.
        if (call.wait == WaitKind::Device && waitedDone > call.end) {
            size_t settled = 0;
            for (size_t k = g.ops.size(); k-- > 0 && settled < kClampWindow;) {
                Op& op = g.ops[k];
                if (c.device >= 0 && op.device != c.device) continue;
                if (op.end <= call.end || op.measured) {
                    ++settled;
                    continue;
                }
                settled = 0;
                // Its length kept, ending by the wait's return, starting no earlier than its call did; where
                // that is before its call returned (a call held up after it submitted), it is queued from the
                // call's begin.
                const uint64_t length = op.end - op.begin;
                Call& by = g.calls[op.call];
                op.end = call.end;
                op.begin = std::min(op.end, std::max(by.begin, sub(op.end, length)));
                if (op.begin < by.end && by.submitVia == kNone && by.wait != WaitKind::OwnOp) {
                    by.submitVia = op.call;
                    by.submitAtNs = 0;
                    op.latency = int64_t(op.begin - by.begin);
                }
                const std::vector<uint32_t>& on = g.streams[op.stream].ops;
                streamTail[op.stream] = on.empty() ? 0 : g.ops[on.back()].end;
            }
            uint64_t tail = 0;
            for (size_t k = 0; k < g.streams.size(); ++k)
                if (g.streams[k].device == c.device && !g.streams[k].ops.empty()) tail = std::max(tail, streamTail[k]);
            if (c.device >= 0) deviceTail[c.device] = tail;
            waitedDone = std::min(waitedDone, call.end);
        }

        // Polls: a run of not-ready queries on one object, ended by the one that found it done.
        if (call.kind == CallKind::Query && c.result == detail::kCudaErrorNotReady) {
            const uint64_t object = a.role == TimelineRole::EventQuery ? c.args.sync.object : c.stream;
            if (!pollContinues) openPoll[call.thread] = {index, object};
            call.notReady = true;
            call.pollFirst = openPoll[call.thread].first;
        } else {
            if (pollContinues && call.wait != WaitKind::None) call.pollFirst = pollOf->second.first;
            openPoll.erase(call.thread);
        }

        // (a poll that begins with this call: pollFirst is its own index, not in g.calls yet)
        const uint64_t from = call.pollFirst != kNone && call.pollFirst < index ? g.calls[call.pollFirst].begin : call.begin;
        call.waited = call.wait != WaitKind::None && waitedDone > from;
        if (!call.waited && call.wait != WaitKind::OwnOp && !call.notReady && call.pollFirst == kNone)
            unblocked[c.apiId].push_back(call.end - call.begin);
        done.push_back(waitedDone);
        thread.calls.push_back(index);
        lastReturn = std::max(lastReturn, call.end);
        g.calls.push_back(call);
    }

    trimLateEnds(g, done);
    tightenBoundedSpans(g, done);

    // Calibration (see the head of this file).
    std::map<uint16_t, uint64_t> typical;
    for (auto& [id, v] : unblocked) typical[id] = median(v);
    std::map<int, uint64_t> typicalLatency;
    for (auto& [d, v] : freeLatency) typicalLatency[d] = median(v);
    for (size_t i = 0; i < g.calls.size(); ++i) {
        Call& c = g.calls[i];
        const uint64_t from = c.pollFirst != kNone && !c.notReady ? g.calls[c.pollFirst].begin : c.begin;
        const uint64_t took = c.end - from;
        if (c.waited) {
            c.postNs = sub(c.end, std::max(done[i], from));
            auto t = typical.find(c.apiId);
            const uint64_t own = t != typical.end() ? t->second : c.postNs;
            c.ownNs = std::min(took, own);
        } else {
            c.ownNs = took;
            c.postNs = 0;
        }
    }
    for (size_t i = 0; i < g.ops.size(); ++i) {
        if (!queued[i]) continue;
        Op& op = g.ops[i];
        auto t = typicalLatency.find(op.device);
        const int64_t typicalLat = t != typicalLatency.end() ? int64_t(t->second) : 0;
        op.latency = std::min(op.latency, typicalLat);
    }
    g.tailNs = sub(g.endNs, lastReturn);
    findJoins(g);
    return g;
}

}  // namespace gpuspy::collect::replay
