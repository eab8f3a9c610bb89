// collector/replay/replay.cpp: the replay of a run graph, and the critical path through it.
//
// Calls go in the graph's order (the run's host time order), which keeps the run's order of submission
// between threads: an op waits for ops submitted before it as the program submitted them. Each call and
// op remembers what bounded its start (the thread's previous call, a wait, its submission, its stream's
// previous op, an event): walking those back from the call that sets the end is the critical path.
#include "collector/replay/replay.h"

#include <algorithm>
#include <map>

namespace gpuspy::collect::replay {

namespace {

// What bounded a node: for a call, `call` is its thread's previous call (kNone: its first) and `op` the op
// whose end its wait returned after (kNone: its own cost set its end); for an op, the call that submitted
// it or the op it followed (its stream's previous, or an event's).
struct Bound {
    uint32_t call = kNone;
    uint32_t op = kNone;
};

uint64_t unionLength(std::vector<std::pair<uint64_t, uint64_t>>& v)
{
    std::sort(v.begin(), v.end());
    uint64_t total = 0, curB = 0, curE = 0;
    bool open = false;
    for (const auto& [b, e] : v) {
        if (e <= b) continue;
        if (!open || b > curE) {
            if (open) total += curE - curB;
            curB = b;
            curE = e;
            open = true;
        } else {
            curE = std::max(curE, e);
        }
    }
    if (open) total += curE - curB;
    return total;
}

}  // namespace

Prediction simulate(const RunGraph& g)
{
    Prediction pr;
    const size_t nc = g.calls.size(), no = g.ops.size();
    std::vector<uint64_t> cb(nc, 0), ce(nc, 0), ob(no, 0), oe(no, 0);
    std::vector<Bound> callBound(nc), opBound(no);
    std::vector<uint32_t> lastCall(g.threads.size(), kNone);
    std::vector<uint32_t> streamLast(g.streams.size(), kNone);  // last op placed per stream
    std::map<int, uint32_t> deviceLast;                         // the op ending latest so far, per device
    std::vector<uint32_t> opsPlaced(g.streams.size(), 0);
    uint64_t hostBusy = 0, hostWait = 0;

    auto placeOp = [&](uint32_t oi, uint64_t submit, uint32_t byCall) {
        const Op& op = g.ops[oi];
        uint64_t start = uint64_t(std::max<int64_t>(0, int64_t(submit) + op.latency));
        Bound b{byCall, kNone};
        const uint32_t prev = streamLast[op.stream];
        if (prev != kNone && oe[prev] > start) {
            start = oe[prev];
            b = {kNone, prev};
        }
        for (uint32_t k = 0; k < op.waitsCount; ++k) {
            const EventWait& ew = g.eventWaits[op.waitsFirst + k];
            if (!ew.upTo || ew.source >= g.streams.size()) continue;
            const uint32_t src = g.streams[ew.source].ops[ew.upTo - 1];
            if (oe[src] > start) {
                start = oe[src];
                b = {kNone, src};
            }
        }
        ob[oi] = start;
        oe[oi] = start + (op.end - op.begin);
        opBound[oi] = b;
        streamLast[op.stream] = oi;
        ++opsPlaced[op.stream];
        auto [it, fresh] = deviceLast.try_emplace(op.device, oi);
        if (!fresh && oe[oi] > oe[it->second]) it->second = oi;
    };
    // Where and by which call an op is queued: at the call's return (`ret`), or where a fix queues it from
    // another call (a graph launch's node: Call::submitVia).
    auto queuedAt = [&](const Call& c, uint64_t ret) { return c.submitVia == kNone ? ret : cb[c.submitVia] + c.submitAtNs; };
    auto queuedBy = [&](const Call& c, uint32_t i) { return c.submitVia == kNone ? i : c.submitVia; };
    // The op whose end a wait waits for (kNone: nothing to wait for).
    auto waitedOp = [&](const Call& c) -> uint32_t {
        switch (c.wait) {
        case WaitKind::OwnOp: return c.op;
        case WaitKind::Stream:
        case WaitKind::Event: {
            if (c.waitStream >= g.streams.size() || !c.waitUpTo) return kNone;
            const auto& ops = g.streams[c.waitStream].ops;
            return c.waitUpTo <= ops.size() ? ops[c.waitUpTo - 1] : kNone;
        }
        case WaitKind::Device: {
            uint32_t best = kNone;
            for (const auto& [d, oi] : deviceLast)
                if ((c.device < 0 || d == c.device) && (best == kNone || oe[oi] > oe[best])) best = oi;
            return best;
        }
        case WaitKind::None: return kNone;
        }
        return kNone;
    };

    for (uint32_t i = 0; i < nc; ++i) {
        const Call& c = g.calls[i];
        // A poll answered not-ready is part of the wait its run ends with (replayed by its last poll).
        if (c.notReady && c.pollFirst != kNone) continue;
        const uint32_t t = c.thread;
        const uint32_t prev = lastCall[t];
        const Call& head = c.pollFirst != kNone ? g.calls[c.pollFirst] : c;
        uint64_t begin = prev == kNone ? head.begin : ce[prev] + head.gap;
        callBound[i] = {prev, kNone};
        uint64_t ownGap = head.gap;
        if (prev != kNone && head.joinCount) {
            // A join: after the threads it waited for, or its own work after the join, whichever is later.
            ownGap = UINT64_MAX;
            for (uint32_t k = 0; k < head.joinCount; ++k) ownGap = std::min(ownGap, g.joins[head.joinFirst + k].afterNs);
            begin = ce[prev] + ownGap;
            // Of joins ending together (as replayed unchanged, all at the measured begin), the thread
            // that ended last is the one waited for.
            uint64_t boundEnd = 0;
            for (uint32_t k = 0; k < head.joinCount; ++k) {
                const Join& j = g.joins[head.joinFirst + k];
                const uint64_t at = ce[j.call] + j.afterNs;
                    if (at > begin || (at == begin && ce[j.call] > boundEnd)) {
                    begin = at;
                    boundEnd = ce[j.call];
                    callBound[i].call = j.call;
                }
            }
            hostWait += begin - ce[prev] - ownGap;
        }
        cb[i] = begin;
        lastCall[t] = i;
        if (c.removed) {
            ce[i] = begin;
            if (c.op != kNone) placeOp(c.op, queuedAt(c, begin), queuedBy(c, i));
            continue;
        }
        const bool waitsOnOwn = c.wait == WaitKind::OwnOp && c.op != kNone;
        if (waitsOnOwn) placeOp(c.op, begin, i);
        uint64_t end = begin + c.ownNs;
        const uint32_t w = c.wait == WaitKind::None ? kNone : waitedOp(c);
        if (w != kNone && oe[w] + c.postNs > end) {
            end = oe[w] + c.postNs;
            callBound[i].op = w;
        }
        ce[i] = end;
        if (c.op != kNone && !waitsOnOwn) placeOp(c.op, queuedAt(c, end), queuedBy(c, i));
        const uint64_t blocked = end - begin - std::min(end - begin, c.ownNs);
        const bool spinning = c.pollFirst != kNone && !c.blockingPoll;
        if (spinning) hostBusy += end - begin;
        else {
            hostBusy += end - begin - blocked;
            hostWait += blocked;
        }
        hostBusy += prev == kNone ? 0 : ownGap;
    }

    // The wall: the thread that ends last, then the host's own work after CUDA as measured.
    uint64_t lastEnd = 0;
    pr.threadEndNs.assign(g.threads.size(), 0);
    for (uint32_t t = 0; t < g.threads.size(); ++t) {
        if (lastCall[t] == kNone) continue;
        pr.threadEndNs[t] = sub(ce[lastCall[t]], g.startNs);
        if (pr.endThread == kNone || ce[lastCall[t]] > lastEnd) {
            lastEnd = ce[lastCall[t]];
            pr.endThread = t;
        }
    }
    uint64_t firstBegin = g.startNs;
    pr.wallNs = lastCall.empty() || pr.endThread == kNone ? g.wallNs() : sub(lastEnd + g.tailNs, firstBegin);
    // Work still queued when the host is done (a fix took away the wait that held the host) ends the run no
    // sooner than it completes: the driver drains the context before the process is gone.
    uint64_t lastOp = 0;
    for (size_t i = 0; i < no; ++i) lastOp = std::max(lastOp, oe[i]);
    if (pr.endThread != kNone) pr.wallNs = std::max(pr.wallNs, sub(lastOp, firstBegin));
    pr.hostBusyNs = hostBusy;
    pr.hostWaitNs = hostWait;

    std::map<int, std::vector<std::pair<uint64_t, uint64_t>>> byDevice;
    for (size_t i = 0; i < no; ++i) byDevice[g.ops[i].device].push_back({ob[i], oe[i]});
    for (auto& [d, v] : byDevice) pr.gpuBusyNs += unionLength(v);

    // The critical path: back from the last call of the thread that ends last.
    std::map<std::pair<int, uint32_t>, uint64_t> parts;
    if (pr.endThread != kNone) {
        parts[{PathPart::Host, pr.endThread}] += g.tailNs;
        uint32_t call = lastCall[pr.endThread], op = kNone;
        // From a call back along its thread (its host time and the gaps before it) until a call whose end a
        // wait set (then on to the op it waited for) or the thread's start. `until`: the call's end, or its
        // begin where the path arrives at a submission made at the begin.
        auto walkHost = [&](uint32_t i, uint64_t until) {
            op = kNone;
            while (i != kNone) {
                const Bound b = callBound[i];
                const uint32_t t = g.calls[i].thread;
                if (b.op != kNone && until == ce[i]) {
                    parts[{PathPart::Host, t}] += sub(ce[i], oe[b.op]);
                    op = b.op;
                    return;
                }
                parts[{PathPart::Host, t}] += sub(until, b.call != kNone ? ce[b.call] : g.startNs);
                i = b.call;
                if (i != kNone) until = ce[i];
            }
        };
        size_t guard = nc + no + 1;
        walkHost(call, ce[call]);
        while (guard-- > 0 && op != kNone) {
            const Op& o = g.ops[op];
            const Bound b = opBound[op];
            parts[{PathPart::Device, o.stream}] += oe[op] - ob[op];
            if (b.op != kNone) {
                op = b.op;
                continue;
            }
            const uint32_t here = op;
            op = kNone;
            if (b.call == kNone) break;
            // Submitted by a call: at its return, or at its begin for a call that waits on its own op.
            const Call& by = g.calls[b.call];
            const bool atBegin = by.wait == WaitKind::OwnOp && !by.removed;
            const uint64_t ret = atBegin ? cb[b.call] : ce[b.call];
            const uint64_t submitted = o.call != kNone ? queuedAt(g.calls[o.call], ret) : ret;
            parts[{PathPart::Latency, o.stream}] += sub(ob[here], submitted);
            // Work may start before its call returns (a launch's kernel while the driver finishes the call):
            // the path reaches the call where the work began, so that no stretch of time counts twice.
            walkHost(b.call, std::min(submitted, ob[here]));
        }
    }
    for (const auto& [k, ns] : parts)
        if (ns) pr.criticalPath.push_back({PathPart::Kind(k.first), k.second, ns});
    std::sort(pr.criticalPath.begin(), pr.criticalPath.end(), [](const PathPart& a, const PathPart& b) { return a.ns > b.ns; });
    return pr;
}

std::string pathPartName(const PathPart& p, const std::vector<std::string>& threadNames,
                         const std::vector<std::string>& streamNames)
{
    auto name = [](const std::vector<std::string>& v, uint32_t i) { return i < v.size() ? v[i] : std::string("?"); };
    switch (p.kind) {
    case PathPart::Host: return "host " + name(threadNames, p.index);
    case PathPart::Device: return name(streamNames, p.index) + " (work)";
    case PathPart::Latency: return name(streamNames, p.index) + " (submit to start)";
    }
    return "?";
}

const char* pathPartKind(PathPart::Kind k) { return k == PathPart::Host ? "host" : k == PathPart::Device ? "device" : "latency"; }

std::vector<uint32_t> threadsOffPath(const Prediction& p)
{
    std::vector<uint32_t> off;
    for (uint32_t t = 0; t < p.threadEndNs.size(); ++t) {
        bool onPath = false;
        for (const PathPart& part : p.criticalPath) onPath = onPath || (part.kind == PathPart::Host && part.index == t);
        if (!onPath) off.push_back(t);
    }
    return off;
}

}  // namespace gpuspy::collect::replay
