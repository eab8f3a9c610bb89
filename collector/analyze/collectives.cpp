// collector/analyze/collectives.cpp: NCCL's operations (wire::CollectiveBody, from NCCL's profiler plugin)
// joined to the kernel launches that carried them. NCCL launches one kernel per communicator and group:
// the Collective records of a group follow their launch on the launching thread (the record's launchNs is
// when NCCL began that launch), so each operation is matched to the first NCCL launch of its thread that
// began at or after it. Several operations matched to one launch were fused into it: its device time is
// split among them by bytes (an estimate; the table says how many were fused).
//
// Across ranks: the ranks of one collective (communicator id and sequence number) run one kernel each,
// and on a GPU a rank's kernel cannot finish its part before every rank has arrived: the kernel of a rank
// that started early spends the time until the last rank's kernel starts waiting for its peers. So where
// every rank of a collective is in the capture (one process driving several devices, or several
// processes recorded together) and timed, the wait is the last rank's start less this rank's, and the
// rest of its kernel is moving data. On one host the processes share CLOCK_MONOTONIC, so their spans
// compare directly.
#include "collector/analyze/internal.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace gpuspy::collect::detail {
namespace {

// Bytes of one element of an NCCL datatype, by its name ("ncclFloat32", "ncclBfloat16", "ncclUint8",
// "ncclFloat8e4m3"); 0 when unknown.
uint64_t elementBytes(const std::string& type)
{
    if (type.find("Float8") != std::string::npos) return 1;
    if (type.find("Bfloat16") != std::string::npos) return 2;
    auto ends = [&](std::string_view s) { return type.size() >= s.size() && type.compare(type.size() - s.size(), s.size(), s) == 0; };
    if (ends("Int8") || ends("Uint8") || ends("Char")) return 1;
    if (ends("16") || ends("Half")) return 2;
    if (ends("32") || ends("Float") || ends("Int")) return 4;
    if (ends("64") || ends("Double")) return 8;
    return 0;
}

// The message size a collective moves, as nccl-tests counts it: NCCL's count is per rank for AllGather
// (the send count) and ReduceScatter (the receive count), so their size is count x ranks.
uint64_t messageBytes(const std::string& op, uint64_t count, uint64_t element, int nranks)
{
    const uint64_t b = count * element;
    if (op == "AllGather" || op == "ReduceScatter") return b * uint64_t(std::max(nranks, 1));
    return b;
}

// nccl-tests' bus bandwidth factor: what each rank's links carry relative to the message size.
double busFactor(const std::string& op, int nranks)
{
    const double n = std::max(nranks, 1);
    if (op == "AllReduce") return 2 * (n - 1) / n;
    if (op == "AllGather" || op == "ReduceScatter" || op == "AllToAll") return (n - 1) / n;
    return 1;
}

std::string textOf(const Process& p, uint32_t id)
{
    auto it = p.strings.find(id);
    return id && it != p.strings.end() ? it->second : std::string();
}

// Which rank arrived last at each collective (stragglers). The operations of one fused launch are one
// arrival of their rank: counted once, by the last rank's launch.
class StragglerBook {
public:
    void onCollective(const std::vector<CollectiveArrival>& a, size_t from, size_t to)
    {
        // One entry per rank (the range holds one operation's ranks, in rank order).
        const CollectiveArrival* last = nullptr;
        const CollectiveArrival* before = nullptr;
        for (size_t k = from; k < to; ++k) {
            const CollectiveArrival& x = a[k];
            if (!last || x.gpuBeginNs > last->gpuBeginNs) {
                before = last;
                last = &x;
            } else if (!before || x.gpuBeginNs > before->gpuBeginNs) {
                before = &x;
            }
        }
        if (!last || !before || !m_seen.insert({last->proc, last->launch}).second) return;
        ++m_compared[last->commId];
        m_arrivals[last->commId].push_back(last->gpuBeginNs);
        const uint64_t late = last->gpuBeginNs - before->gpuBeginNs;
        if (late <= kLateNs) return;
        Acc& s = accOf(*last);
        ++s.row.last;
        s.row.lateNs += late;
        s.late.push_back(late);
        uint64_t othersLaunch = 0;
        for (size_t k = from; k < to; ++k) {
            if (&a[k] == last) continue;
            s.row.othersWaitNs += last->gpuBeginNs - a[k].gpuBeginNs;
            othersLaunch = std::max(othersLaunch, a[k].launchHostNs);
        }
        // Late on the host: its launch came after the others' by half its lateness or more.
        const uint64_t lag = last->launchHostNs > othersLaunch ? last->launchHostNs - othersLaunch : 0;
        if (2 * lag >= late) {
            ++s.row.hostLate;
            s.lags.push_back(lag);
        } else {
            ++s.row.gpuLate;
        }
    }

    // A collective with one rank's kernel untimed: that rank arrived last where its launch call began after
    // every other rank's kernel had started (a kernel cannot start before its launch is called). Its
    // lateness is then at least that difference; the waits stay unmeasured.
    void onOrdered(const std::vector<CollectiveArrival>& a, size_t from, size_t to)
    {
        const CollectiveArrival* untimed = nullptr;
        uint64_t knownLast = 0, othersLaunch = 0;
        for (size_t k = from; k < to; ++k) {
            const CollectiveArrival& x = a[k];
            if (!x.timed) {
                if (untimed) return;  // two unknown arrivals: either may be the last
                untimed = &x;
                continue;
            }
            knownLast = std::max(knownLast, x.gpuBeginNs);
            othersLaunch = std::max(othersLaunch, x.launchHostNs);
        }
        if (!untimed || !knownLast || untimed->launchHostNs <= knownLast + kLateNs) return;
        if (!m_seen.insert({untimed->proc, untimed->launch}).second) return;
        ++m_ordered[untimed->commId];
        Acc& s = accOf(*untimed);
        ++s.row.lastOrdered;
        const uint64_t low = untimed->launchHostNs - knownLast;
        s.row.lateLowNs += low;
        s.late.push_back(low);  // a lower bound: the median it enters can only read low
        ++s.row.hostLate;       // its launch came after the others had arrived: late on the host
        s.lags.push_back(untimed->launchHostNs > othersLaunch ? untimed->launchHostNs - othersLaunch : 0);
    }

    // collectives: each (communicator, rank)'s launches that carried a collective (Context::collectiveLaunches).
    void finish(Report& r, const std::map<std::pair<uint64_t, int>, uint64_t>& collectives)
    {
        for (auto& [key, s] : m_acc) {
            s.row.compared = m_compared[key.first];
            s.row.ordered = m_ordered[key.first];
            std::vector<uint64_t>& at = m_arrivals[key.first];
            std::sort(at.begin(), at.end());
            std::vector<uint64_t> gaps;
            for (size_t i = 1; i < at.size(); ++i) gaps.push_back(at[i] - at[i - 1]);
            s.row.medianIntervalNs = median(gaps);
            auto n = collectives.find(key);
            s.row.collectives = n != collectives.end() ? n->second : s.row.compared;
            s.row.medianLateNs = median(s.late);
            s.row.medianHostLagNs = median(s.lags);
            r.stragglers.push_back(s.row);
        }
        std::stable_sort(r.stragglers.begin(), r.stragglers.end(),
                         [](const StragglerRow& x, const StragglerRow& y) { return x.othersWaitNs > y.othersWaitNs; });
    }

private:
    struct Acc;
    // The row of the rank that arrived last at a collective.
    Acc& accOf(const CollectiveArrival& x)
    {
        Acc& s = m_acc[{x.commId, x.rank}];
        s.row.pid = x.pid;
        s.row.commId = x.commId;
        s.row.rank = x.rank;
        s.row.nranks = x.nranks;
        s.row.device = x.device;
        return s;
    }
    // Later than the rank before it by more than this: a rank's launches a few microseconds apart are not late.
    static constexpr uint64_t kLateNs = 10'000;
    struct Acc {
        StragglerRow row;
        std::vector<uint64_t> late, lags;
    };
    static uint64_t median(std::vector<uint64_t>& v)
    {
        if (v.empty()) return 0;
        std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
        return v[v.size() / 2];
    }
    std::set<std::pair<size_t, uint64_t>> m_seen;        // (process, launch) of a last rank, counted
    std::map<uint64_t, uint64_t> m_compared;            // communicator -> collectives compared
    std::map<uint64_t, uint64_t> m_ordered;             // communicator -> collectives ordered by a launch alone
    std::map<std::pair<uint64_t, int>, Acc> m_acc;      // (communicator, rank)
    std::map<uint64_t, std::vector<uint64_t>> m_arrivals;  // communicator -> each compared collective's last arrival
};

}  // namespace

void noteCollectiveLaunch(CollectiveBook& book, const ProcView& pv, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    if (c.category != wire::Category::Launch || !(c.flags & wire::kCallDeviceWork) || c.result != 0) return;
    if (pv.proc->kernels.empty()) return;
    const uint32_t kernel = c.args.launch.kernelId;
    auto [it, fresh] = book.ncclKernel.emplace(kernel, false);
    if (fresh) {
        auto k = pv.proc->kernels.find(kernel);
        it->second = k != pv.proc->kernels.end() && (k->second.find("ncclDevKernel") != std::string::npos ||
                                                      k->second.find("ncclKernel") != std::string::npos);
    }
    if (!it->second) return;
    CollectiveLaunch l;
    l.tid = c.tid;
    l.device = c.device;
    l.beginNs = c.beginNs;
    l.stream = c.stream;
    if (ci.spans && !ci.spans->empty() && !ci.upperBound) {
        l.timed = true;
        l.gpuBeginNs = ci.spans->front().beginNs;
        l.gpuEndNs = ci.spans->back().endNs;
    }
    book.launches.push_back(l);
}

void endCollectives(Context& cx, const Process& p, const ProcView& pv, CollectiveBook& book)
{
    cx.collectivesDropped += p.collectivesDropped;
    if (p.collectives.empty()) return;
    // Launches per thread, in time order.
    std::map<uint32_t, std::vector<size_t>> byTid;
    std::sort(book.launches.begin(), book.launches.end(),
              [](const CollectiveLaunch& a, const CollectiveLaunch& b) { return a.beginNs < b.beginNs; });
    for (size_t i = 0; i < book.launches.size(); ++i) byTid[book.launches[i].tid].push_back(i);

    struct Op {
        size_t row;
        long launch;  // index into book.launches, -1: none matched
        uint64_t bytes, commId, seq;
        int rank, nranks;
    };
    std::vector<Op> ops;
    ops.reserve(p.collectives.size());
    std::map<std::tuple<uint64_t, int, std::string, bool>, size_t> rowOf;  // comm, rank, op, p2p -> row
    std::unordered_map<uint32_t, std::string> sites;
    for (const wire::CollectiveBody& b : p.collectives) {
        const bool p2p = b.kind == wire::CollectiveKind::PointToPoint;
        const std::string op = textOf(p, b.funcId);
        const std::string type = textOf(p, b.datatypeId);
        const std::string algo = p2p ? std::string() : textOf(p, b.algoId) + "/" + textOf(p, b.protoId);
        auto [pos, fresh] = rowOf.emplace(std::make_tuple(b.commId, b.rank, op, p2p), cx.collectiveRows.size());
        if (fresh) {
            CollectiveRow r;
            r.pid = p.pid;
            r.commId = b.commId;
            r.rank = b.rank;
            r.nranks = b.nranks;
            r.nNodes = b.nNodes;
            r.op = op.empty() ? "(unnamed)" : op;
            r.pointToPoint = p2p;
            r.datatype = type;
            r.algorithm = algo;
            cx.collectiveRows.push_back(std::move(r));
        }
        CollectiveRow& r = cx.collectiveRows[pos->second];
        if (r.datatype != type) r.datatype = "mixed";
        if (r.algorithm != algo) r.algorithm = "mixed";
        if (r.site.empty() && b.stackId) {
            auto s = sites.find(b.stackId);
            if (s == sites.end()) s = sites.emplace(b.stackId, siteLabelOf(pv, b.stackId)).first;
            r.site = s->second;
        }
        const uint64_t bytes = messageBytes(op, b.count, elementBytes(type), b.nranks);
        ++r.calls;
        r.bytes += bytes;
        r.maxBytes = std::max(r.maxBytes, bytes);
        // Its launch: the first NCCL launch of its thread that began at or after NCCL began launching it.
        long launch = -1;
        auto t = byTid.find(b.tid);
        if (t != byTid.end() && b.launchNs) {
            const auto& v = t->second;
            auto it = std::lower_bound(v.begin(), v.end(), b.launchNs,
                                       [&](size_t i, uint64_t ns) { return book.launches[i].beginNs < ns; });
            // The same launch only if it began before NCCL scheduled this operation (its record comes after).
            if (it != v.end() && book.launches[*it].beginNs <= b.startNs) launch = long(*it);
        }
        ops.push_back(Op{pos->second, launch, bytes, b.commId, b.seq, b.rank, b.nranks});
    }
    // A launch's time split over the operations it carried, by bytes.
    std::unordered_map<long, std::pair<uint64_t, uint64_t>> perLaunch;  // launch -> operations, bytes
    for (const Op& o : ops)
        if (o.launch >= 0) {
            auto& [n, bytes] = perLaunch[o.launch];
            ++n;
            bytes += o.bytes;
        }
    // Each rank's collectives, a fused launch's operations once: its distinct launches that carried one.
    std::set<std::tuple<uint64_t, int, long>> carried;
    for (const Op& o : ops)
        if (o.launch >= 0 && o.seq != ~0ull && carried.insert({o.commId, o.rank, o.launch}).second)
            ++cx.collectiveLaunches[{o.commId, o.rank}];
    for (const Op& o : ops) {
        if (o.launch < 0) continue;
        CollectiveRow& r = cx.collectiveRows[o.row];
        ++r.launched;
        const auto& [n, bytes] = perLaunch[o.launch];
        if (n > 1) ++r.fused;
        const CollectiveLaunch& l = book.launches[size_t(o.launch)];
        if (!l.timed) {
            // Its rank's arrival is unknown, but not its launch: which rank came last may still be told.
            if (o.seq != ~0ull) {
                CollectiveArrival x{o.commId, o.seq, nullptr, o.rank, o.nranks, o.row, 0, 0, 0.0, l.beginNs, uint64_t(o.launch), p.pid, l.device,
                                    cx.processes.size()};
                x.timed = false;
                cx.collectiveArrivals.push_back(x);
            }
            continue;
        }
        const double share = n <= 1 ? 1.0 : bytes ? double(o.bytes) / double(bytes) : 1.0 / double(n);
        ++r.timed;
        r.timedBytes += o.bytes;
        r.gpuNs += uint64_t(double(l.gpuEndNs - l.gpuBeginNs) * share);
        if (o.seq != ~0ull)
            cx.collectiveArrivals.push_back(CollectiveArrival{o.commId, o.seq, nullptr, o.rank, o.nranks, o.row, l.gpuBeginNs,
                                                              l.gpuEndNs, share, l.beginNs, uint64_t(o.launch), p.pid, l.device,
                                                              cx.processes.size()});
    }
}

void finishCollectives(Context& cx, Report& r)
{
    r.collectivesDropped = cx.collectivesDropped;
    // Each collective's ranks: the last one's start is when every rank had arrived.
    // A collective is its communicator, its operation and its sequence number (NCCL counts each operation's
    // calls apart: a group's all-reduce and all-gather can both be number 0).
    auto& a = cx.collectiveArrivals;
    for (CollectiveArrival& x : a) {
        x.op = &cx.collectiveRows[x.row].op;
        // Only a timed kernel's end: an untimed one's (a launch whose span was lost) is unknown, not 0.
        if (x.timed && r.collectiveEnds.size() < kMaxCollectiveEnds)
            r.collectiveEnds.push_back(CollectiveEnd{x.commId, *x.op, x.seq, x.rank, x.gpuEndNs});
    }
    StragglerBook stragglers;
    std::sort(a.begin(), a.end(), [](const CollectiveArrival& x, const CollectiveArrival& y) {
        return std::tie(x.commId, *x.op, x.seq, x.rank) < std::tie(y.commId, *y.op, y.seq, y.rank);
    });
    for (size_t i = 0; i < a.size();) {
        size_t j = i;
        uint64_t last = 0;
        std::vector<int> ranks;
        bool allTimed = true;
        while (j < a.size() && a[j].commId == a[i].commId && *a[j].op == *a[i].op && a[j].seq == a[i].seq) {
            last = std::max(last, a[j].gpuBeginNs);
            allTimed = allTimed && a[j].timed;
            if (ranks.empty() || ranks.back() != a[j].rank) ranks.push_back(a[j].rank);
            ++j;
        }
        if (int(ranks.size()) == a[i].nranks && !allTimed) {
            stragglers.onOrdered(a, i, j);
        } else if (int(ranks.size()) == a[i].nranks) {
            stragglers.onCollective(a, i, j);
            for (size_t k = i; k < j; ++k) {
                const CollectiveArrival& x = a[k];
                const uint64_t len = x.gpuEndNs - x.gpuBeginNs;
                const uint64_t wait = std::min(len, last - x.gpuBeginNs);
                CollectiveRow& row = cx.collectiveRows[x.row];
                ++row.withPeers;
                row.waitNs += uint64_t(double(wait) * x.share);
                row.moveNs += uint64_t(double(len - wait) * x.share);
            }
        }
        i = j;
    }
    for (CollectiveRow& row : cx.collectiveRows) {
        row.estimatedGpuNs = row.timed ? uint64_t(double(row.gpuNs) * double(row.launched) / double(row.timed)) : 0;
        // Bandwidths over the timed calls' bytes.
        if (row.gpuNs) {
            row.algBwGBps = double(row.timedBytes) / double(row.gpuNs);  // bytes per ns = GB/s
            row.busBwGBps = row.algBwGBps * busFactor(row.op, row.nranks);
        }
        r.collectives.push_back(row);
    }
    stragglers.finish(r, cx.collectiveLaunches);
    std::stable_sort(r.collectives.begin(), r.collectives.end(), [](const CollectiveRow& x, const CollectiveRow& y) {
        return x.estimatedGpuNs != y.estimatedGpuNs ? x.estimatedGpuNs > y.estimatedGpuNs : x.calls > y.calls;
    });
}

}  // namespace gpuspy::collect::detail
