// collector/replay/fixes.cpp: each fix as a change of the run graph, and the calibration of the costs a
// fixed program pays.
#include "collector/replay/fixes.h"

#include "collector/analyze/internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace gpuspy::collect::replay {

namespace {

// Stated defaults, for captures that show no sample of a cost (a program with no pinned copy, no async
// call, no graph launch). Pinned copies: twice the bandwidth of the pageable ones measured (PCIe
// systems measure 1.5-3x); an async call: 3 us of host time; a graph launch: 2.5 us + 0.3 us per node
// (straight-line graphs on recent drivers).
constexpr double kDefaultPinnedSpeedup = 2.0, kPinnedSpeedupLow = 1.5, kPinnedSpeedupHigh = 3.0;
// A default with no sample of its own: the true cost taken to lie within half to twice of it.
constexpr double kDefaultLowScale = 0.5, kDefaultHighScale = 2.0;
constexpr double kDefaultAsyncCallNs = 3000;
constexpr double kDefaultGraphBaseNs = 2500, kDefaultGraphPerNodeNs = 300;
// A copy whose device time nothing in the capture measured (its spans only bound it: blocking copies on an
// idle stream): 2 us + bytes at 12 GB/s from pinned or device memory, 6 GB/s from pageable memory.
constexpr double kDefaultCopyFixedNs = 2000, kDefaultPinnedBytesPerNs = 12, kDefaultPageableBytesPerNs = 6;

uint64_t medianOf(std::vector<uint64_t> v)
{
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

// duration = a + b x bytes by least squares over (bytes, ns); one size only: through the origin.
bool fitLine(const std::vector<std::pair<double, double>>& xy, double* a, double* b)
{
    if (xy.empty()) return false;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : xy) {
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    const double n = double(xy.size());
    const double den = n * sxx - sx * sx;
    if (xy.size() >= 2 && den > 1e-9 * sxx * n) {
        *b = (n * sxy - sx * sy) / den;
        *a = (sy - *b * sx) / n;
        if (*b > 0 && *a >= 0) return true;
    }
    *a = 0;
    *b = sx > 0 ? sy / sx : 0;
    return *b > 0;
}

int dirIndex(wire::Direction d) { return d == wire::Direction::HtoD ? 0 : d == wire::Direction::DtoH ? 1 : -1; }

// Where a call is made from: its stack, or, in a capture without stacks, its entry point.
uint64_t siteOf(const Call& c) { return c.stackId ? c.stackId : (uint64_t(1) << 32) | c.apiId; }

std::map<uint64_t, uint64_t> callsPerSite(const RunGraph& g, CallKind a, CallKind b)
{
    std::map<uint64_t, uint64_t> n;
    for (const Call& c : g.calls)
        if (c.kind == a || c.kind == b) ++n[siteOf(c)];
    return n;
}

FixEffect pinned(RunGraph& g, const Calibration& cal, const FixScope& scope, bool onlySyncForm)
{
    FixEffect fx;
    for (Call& c : g.calls) {
        if (c.kind != CallKind::Copy || c.hostMem != wire::MemKind::Pageable || !scope.has(c.stackId)) continue;
        const int d = dirIndex(c.direction);
        if (d < 0 || (onlySyncForm && c.async)) continue;
        if (c.op != kNone) {
            Op& op = g.ops[c.op];
            const uint64_t now = op.end - op.begin, fixed = cal.pinnedCopy[d].at(c.bytes);
            if (fixed < now) op.end = op.begin + fixed;
        }
        if (c.async && c.wait == WaitKind::OwnOp) {
            // From pinned memory the async form returns once the copy is queued.
            c.wait = WaitKind::None;
            c.ownNs = std::min(c.end - c.begin, cal.asyncCall.at(0));
            c.postNs = 0;
        }
        ++fx.changed;
    }
    return fx;
}

FixEffect asyncCopies(RunGraph& g, const Calibration& cal, const FixScope& scope)
{
    FixEffect fx = pinned(g, cal, scope, true);  // an async copy from pageable memory still blocks
    fx.changed = 0;
    for (Call& c : g.calls) {
        if ((c.kind != CallKind::Copy && c.kind != CallKind::Memset) || c.async || c.wait != WaitKind::OwnOp ||
            !scope.has(c.stackId))
            continue;
        // A device-to-host copy's result is read by the host: the replay assumes no sooner than at the
        // thread's next wait already in the program (said with the prediction: `assumed`).
        if (c.direction == wire::Direction::DtoH) ++fx.assumed;
        c.wait = WaitKind::None;
        c.ownNs = std::min(c.end - c.begin, cal.asyncCall.at(0));
        c.postNs = 0;
        ++fx.changed;
    }
    if (fx.assumed)
        fx.assumption = "device-to-host copies made async: assumes the host reads their data no sooner than at its next "
                        "wait already in the program";
    return fx;
}

// Explicit syncs in loops, taken out but for the last of each site and those after which the host reads
// what the GPU wrote (a device-to-host copy queued since the thread's previous wait).
FixEffect fewerSyncs(RunGraph& g, const FixScope& scope)
{
    FixEffect fx;
    const auto perSite = callsPerSite(g, CallKind::Sync, CallKind::Sync);
    std::map<uint64_t, uint64_t> seen;
    for (const Thread& t : g.threads) {
        bool readsPending = false;  // a DtoH copy queued since this thread's last wait that stays
        for (uint32_t ci : t.calls) {
            Call& c = g.calls[ci];
            if (c.kind == CallKind::Copy && c.direction == wire::Direction::DtoH && c.wait == WaitKind::None) readsPending = true;
            const bool isWait = c.wait != WaitKind::None && c.kind != CallKind::Copy && c.kind != CallKind::Memset;
            if (!isWait) continue;
            if (c.kind != CallKind::Sync || !scope.has(c.stackId) || perSite.at(siteOf(c)) < kLoopCalls) {
                readsPending = false;
                continue;
            }
            const bool last = ++seen[siteOf(c)] == perSite.at(siteOf(c));
            const bool reads = readsPending;
            readsPending = false;
            if (last) continue;  // once after the loop
            if (reads) {
                ++fx.kept;
                continue;
            }
            c.removed = true;
            ++fx.changed;
        }
    }
    if (fx.kept) fx.keptWhy = "a device-to-host copy before the wait: the host reads its result";
    return fx;
}

// The sites whose allocations and frees ran in a loop, by the implicit-sync rule's test
// (collector/findings/syncs.cpp): kLoopCalls bursts or more (calls from the site one after the other on
// their thread, no other call between) and, where the calls name addresses, memory turned over that
// often (detail::AllocTurnover). The others are setup or teardown: 32 buffers allocated in a row before
// the loop, or one by one with their uploads, living until the frees after it.
std::set<uint64_t> loopAllocSites(const RunGraph& g)
{
    struct Tally {
        uint64_t bursts = 0, named = 0, turns = 0;
    };
    std::map<uint64_t, Tally> n;
    for (const Thread& t : g.threads) {
        uint64_t prev = UINT64_MAX;
        for (uint32_t i : t.calls) {
            const Call& c = g.calls[i];
            const bool alloc = c.kind == CallKind::Alloc || c.kind == CallKind::Free;
            const uint64_t site = alloc ? siteOf(c) : UINT64_MAX;
            if (alloc && site != prev) ++n[site].bursts;
            prev = site;
        }
    }
    detail::AllocTurnover turnover;
    for (const Call& c : g.calls)  // in host time order
        if (c.kind == CallKind::Alloc || c.kind == CallKind::Free) {
            Tally& t = n[siteOf(c)];
            const auto turn = turnover.onCall(siteOf(c), c.address, c.release, c.begin);
            t.named += turn != detail::CallInfo::Turnover::Unknown;
            t.turns += turn == detail::CallInfo::Turnover::Turns;
        }
    std::set<uint64_t> loops;
    for (const auto& [site, t] : n)
        if (t.bursts >= kLoopCalls && (!t.named || t.turns + 1 >= kLoopCalls)) loops.insert(site);
    return loops;
}

// Allocations and frees in loops: one allocation before the loop (the site's first), one free after it
// (its last); stream-ordered and pool allocations alike. Setup and teardown stay as they are.
FixEffect hoistAllocs(RunGraph& g, const FixScope& scope)
{
    FixEffect fx;
    const auto perSite = callsPerSite(g, CallKind::Alloc, CallKind::Free);
    const std::set<uint64_t> loops = loopAllocSites(g);
    std::map<uint64_t, uint64_t> seen;
    for (Call& c : g.calls) {
        if ((c.kind != CallKind::Alloc && c.kind != CallKind::Free) || !scope.has(c.stackId)) continue;
        const uint64_t n = perSite.at(siteOf(c));
        if (n < kLoopCalls || !loops.count(siteOf(c))) continue;
        const uint64_t k = ++seen[siteOf(c)];
        if ((c.kind == CallKind::Alloc && k == 1) || (c.kind == CallKind::Free && k == n)) continue;
        c.removed = true;
        ++fx.changed;
    }
    return fx;
}

// A pool that keeps its working size across synchronizations serves every allocation that grew it back
// from what it kept: the call costs what a served one does.
FixEffect poolThreshold(RunGraph& g, const Calibration& cal, const FixScope& scope)
{
    FixEffect fx;
    const uint64_t served = cal.poolServed.at(0);
    for (Call& c : g.calls)
        if (c.pool == Call::Pool::Regrew && !c.removed && scope.has(c.stackId) && c.ownNs > served) {
            c.ownNs = served;
            ++fx.changed;
        }
    return fx;
}

FixEffect blockingWait(RunGraph& g, const FixScope& scope)
{
    FixEffect fx;
    for (Call& c : g.calls)
        if (c.pollFirst != kNone && !c.notReady && scope.has(c.stackId)) {
            c.blockingPoll = true;
            ++fx.changed;
        }
    return fx;
}

// Runs of consecutive launches from one thread, each run one graph launch: the run's first call pays
// the graph launch, the others cost nothing; their kernels run as before, node k queued while the launch
// runs (after its base and k + 1 nodes' cost), as a driver streams a graph's work to the device.
FixEffect graphs(RunGraph& g, const Calibration& cal, const FixScope& scope)
{
    FixEffect fx;
    for (const Thread& t : g.threads) {
        size_t i = 0;
        while (i < t.calls.size()) {
            size_t j = i;
            while (j < t.calls.size()) {
                const Call& c = g.calls[t.calls[j]];
                if (c.kind != CallKind::Launch || c.op == kNone || c.removed || !scope.has(c.stackId)) break;
                ++j;
            }
            if (j - i >= kGraphRun) {
                Call& head = g.calls[t.calls[i]];
                uint64_t launchesNs = 0;
                for (size_t k = i; k < j; ++k) launchesNs += g.calls[t.calls[k]].ownNs;
                head.ownNs = std::min<uint64_t>(launchesNs, cal.graphLaunch.at(j - i));
                // Node k is queued once the launch has paid its base and k + 1 nodes' cost, the last at
                // the launch's return: the first kernel does not wait for the whole graph's submission.
                const double perNode = double(head.ownNs) / double(cal.graphLaunch.at(j - i)) * cal.graphLaunch.perByteNs;
                const uint64_t base = head.ownNs - std::min<uint64_t>(head.ownNs, uint64_t(perNode * double(j - i)));
                for (size_t k = i; k < j; ++k) {
                    Call& c = g.calls[t.calls[k]];
                    c.submitVia = t.calls[i];
                    c.submitAtNs = std::min<uint64_t>(head.ownNs, base + uint64_t(perNode * double(k - i + 1)));
                    if (k > i) c.removed = true;
                }
                fx.changed += j - i;
            }
            i = j == i ? i + 1 : j;
        }
    }
    return fx;
}

int copyIndex(wire::Direction d)
{
    return d == wire::Direction::HtoD ? 0 : d == wire::Direction::DtoH ? 1 : d == wire::Direction::DtoD ? 2 : -1;
}

// Runs of consecutive small copies from one thread (one direction, memory kind and stream) as one copy of
// their bytes: the run's first call makes it (its own host cost, its wait if it waited), the others are
// gone; the copy's device time is that of the capture's copies of the kind for the run's bytes.
FixEffect batchCopies(RunGraph& g, const Calibration& cal, const FixScope& scope)
{
    FixEffect fx;
    auto small = [&](const Call& c) {
        return c.kind == CallKind::Copy && !c.removed && c.op != kNone && c.bytes <= kSmallCopyBytes &&
               copyIndex(c.direction) >= 0 && scope.has(c.stackId);
    };
    for (const Thread& t : g.threads) {
        size_t i = 0;
        while (i < t.calls.size()) {
            const Call& first = g.calls[t.calls[i]];
            size_t j = i;
            uint64_t bytes = 0;
            while (j < t.calls.size()) {
                const Call& c = g.calls[t.calls[j]];
                if (!small(c) || c.direction != first.direction || c.hostMem != first.hostMem || c.async != first.async ||
                    g.ops[c.op].stream != g.ops[first.op].stream)
                    break;
                bytes += c.bytes;
                ++j;
            }
            if (j - i >= kBatchRun) {
                const Cost& k = cal.copy[copyIndex(first.direction)][first.hostMem == wire::MemKind::Pageable ? 0 : 1];
                uint64_t now = 0;
                for (size_t m = i; m < j; ++m) {
                    const Op& op = g.ops[g.calls[t.calls[m]].op];
                    now += op.end - op.begin;
                }
                Op& head = g.ops[first.op];
                head.end = head.begin + (k.perByteNs > 0 ? std::min(now, k.at(bytes)) : now);
                for (size_t m = i + 1; m < j; ++m) {
                    Call& c = g.calls[t.calls[m]];
                    c.removed = true;
                    Op& op = g.ops[c.op];
                    op.end = op.begin;  // its bytes move in the batch
                }
                fx.changed += j - i;
            } else {
                fx.kept += j - i;  // too few in a row: other work between them, nothing to pack them with
            }
            i = j == i ? i + 1 : j;
        }
    }
    if (fx.kept)
        fx.keptWhy = "small copies with other work between them (fewer than " + std::to_string(kBatchRun) +
                     " in a row of one direction and stream): nothing to pack them with";
    return fx;
}

}  // namespace

const std::vector<FixInfo>& allFixes()
{
    static const std::vector<FixInfo> v = {
        {FixKind::Pinned, "pinned", "copy from pinned host memory (cudaMallocHost / cudaHostRegister)"},
        {FixKind::AsyncCopies, "async-copies", "cudaMemcpyAsync from pinned memory, one wait where the host needs the data"},
        {FixKind::FewerSyncs, "fewer-syncs", "synchronize once after the loop, keeping the waits whose results the host reads"},
        {FixKind::HoistAllocs, "hoist-allocs", "allocate once before the loop and free once after it"},
        {FixKind::BlockingWait, "blocking-wait", "a blocking wait (cudaEventSynchronize, blocking-sync flag) instead of polling"},
        {FixKind::Graphs, "graphs", "capture the launch sequence into a CUDA graph and launch it once"},
        {FixKind::BatchCopies, "batch-copies", "pack consecutive small copies into one buffer and copy it once"},
        {FixKind::PoolThreshold, "pool-threshold",
         "set the stream-ordered pool's release threshold (cudaMemPoolAttrReleaseThreshold) to its working size"},
        {FixKind::NonBlockingStreams, "nonblocking-streams",
         "make the streams with cudaStreamNonBlocking (or use per-thread default streams), so that the legacy default "
         "stream neither waits for them nor holds them up"},
        {FixKind::CheaperGraphLaunches, "cheaper-graph-launches",
         "graph launches that cost the host no more than an empty graph's (fewer nodes, larger graphs between the "
         "host's waits, device-side launch): what those come to at best"},
        {FixKind::KeepLibrarySetup, "keep-library-setup",
         "make a library's handles, plans and programs once before the loop and keep them (the report's "
         "library-setup-in-loop names which)"},
    };
    return v;
}

std::optional<FixKind> fixByName(std::string_view name)
{
    for (const FixInfo& f : allFixes())
        if (name == f.name) return f.kind;
    return std::nullopt;
}

const FixInfo& fixInfo(FixKind k)
{
    for (const FixInfo& f : allFixes())
        if (f.kind == k) return f;
    return allFixes().front();
}

Calibration calibrate(const RunGraph& g)
{
    Calibration cal;
    std::vector<std::pair<double, double>> samples[2][2];  // [pinned?][dir]
    std::vector<uint64_t> asyncCalls, launches;
    for (const Call& c : g.calls) {
        if (c.removed) continue;
        if (c.kind == CallKind::Launch && !c.waited) launches.push_back(c.end - c.begin);
        if (c.kind != CallKind::Copy && c.kind != CallKind::Memset) continue;
        if (c.async && c.wait == WaitKind::None) asyncCalls.push_back(c.end - c.begin);
        const int d = dirIndex(c.direction);
        if (d < 0 || c.op == kNone || !g.ops[c.op].measured || g.ops[c.op].bounded || !c.bytes) continue;
        const Op& op = g.ops[c.op];
        if (c.hostMem == wire::MemKind::Pinned) samples[1][d].push_back({double(c.bytes), double(op.end - op.begin)});
        else if (c.hostMem == wire::MemKind::Pageable) samples[0][d].push_back({double(c.bytes), double(op.end - op.begin)});
    }
    std::vector<std::pair<double, double>> kinds[3][2];
    for (const Call& c : g.calls) {
        const int d = copyIndex(c.direction);
        if (c.kind != CallKind::Copy || d < 0 || c.op == kNone || !g.ops[c.op].measured || g.ops[c.op].bounded || !c.bytes)
            continue;
        const Op& op = g.ops[c.op];
        kinds[d][c.hostMem == wire::MemKind::Pageable ? 0 : 1].push_back({double(c.bytes), double(op.end - op.begin)});
    }
    for (int d = 0; d < 3; ++d)
        for (int m = 0; m < 2; ++m) {
            double a = 0, b = 0;
            if (fitLine(kinds[d][m], &a, &b))
                cal.copy[d][m] = {a, b, fmt::format("measured: {} timed copies of the kind", kinds[d][m].size())};
            else
            {
                cal.copy[d][m] = {kDefaultCopyFixedNs, 1.0 / (m ? kDefaultPinnedBytesPerNs : kDefaultPageableBytesPerNs),
                                  m ? "default: 2 us + 12 GB/s" : "default: 2 us + 6 GB/s", kDefaultLowScale, kDefaultHighScale};
            }
        }
    static const char* kDir[2] = {"HtoD", "DtoH"};
    for (int d = 0; d < 2; ++d) {
        Cost& k = cal.pinnedCopy[d];
        double a = 0, b = 0;
        if (fitLine(samples[1][d], &a, &b)) {
            k = {a, b, fmt::format("measured: {} timed pinned {} copies", samples[1][d].size(), kDir[d])};
        } else if (fitLine(samples[0][d], &a, &b)) {
            k = {a, b / kDefaultPinnedSpeedup,
                 fmt::format("default: {}x the bandwidth of the {} timed pageable {} copies (no pinned one timed; "
                             "{}-{}x on PCIe systems)",
                             kDefaultPinnedSpeedup, samples[0][d].size(), kDir[d], kPinnedSpeedupLow, kPinnedSpeedupHigh)};
            k.lowScale = kDefaultPinnedSpeedup / kPinnedSpeedupHigh;
            k.highScale = kDefaultPinnedSpeedup / kPinnedSpeedupLow;
        } else {
            k = {kDefaultCopyFixedNs, 1.0 / kDefaultPinnedBytesPerNs,
                 fmt::format("default: 2 us + 12 GB/s (no {} copy's device time measured)", kDir[d])};
            k.lowScale = kDefaultLowScale;
            k.highScale = kDefaultHighScale;
        }
    }
    if (!asyncCalls.empty()) {
        cal.asyncCall = {double(medianOf(asyncCalls)), 0, fmt::format("measured: median of {} async copy calls", asyncCalls.size())};
    } else if (!launches.empty()) {
        cal.asyncCall = {double(medianOf(launches)), 0, fmt::format("measured: median of {} launches (no async copy seen)", launches.size())};
    } else {
        cal.asyncCall = {kDefaultAsyncCallNs, 0, "default: 3 us", kDefaultLowScale, kDefaultHighScale};
    }
    cal.graphLaunch = {kDefaultGraphBaseNs, kDefaultGraphPerNodeNs, "default: 2.5 us + 0.3 us per node", kDefaultLowScale,
                       kDefaultHighScale};
    std::vector<uint64_t> served;
    for (const Call& c : g.calls)
        if (c.pool == Call::Pool::Served && !c.removed && !c.waited) served.push_back(c.end - c.begin);
    if (!served.empty())
        cal.poolServed = {double(medianOf(served)), 0, fmt::format("measured: median of {} served allocations", served.size())};
    else
        cal.poolServed = {2000, 0, "default: 2 us (no allocation served from a pool's kept memory)", 0.0, 1.0};
    if (!launches.empty()) {
        // Never dearer per kernel than the launches it replaces.
        const double perLaunch = double(medianOf(launches));
        if (perLaunch < cal.graphLaunch.perByteNs) cal.graphLaunch.perByteNs = perLaunch;
    }
    return cal;
}

namespace {

// The costs a fix rests on, by name (Cal: Calibration or const Calibration).
template <class Cal>
auto costRefs(Cal& cal, FixKind kind)
{
    static const char* kCopy[3] = {"HtoD", "DtoH", "DtoD"};
    std::vector<std::pair<std::string, decltype(&cal.asyncCall)>> v;
    switch (kind) {
    case FixKind::Pinned:
    case FixKind::AsyncCopies:
        v.push_back({"pinned HtoD copy", &cal.pinnedCopy[0]});
        v.push_back({"pinned DtoH copy", &cal.pinnedCopy[1]});
        v.push_back({"async copy call", &cal.asyncCall});
        break;
    case FixKind::Graphs: v.push_back({"graph launch", &cal.graphLaunch}); break;
    case FixKind::BatchCopies:
        for (int d = 0; d < 3; ++d)
            for (int m = 0; m < 2; ++m) v.push_back({fmt::format("{} copy from {} memory", kCopy[d], m ? "pinned or device" : "pageable"), &cal.copy[d][m]});
        break;
    case FixKind::PoolThreshold: v.push_back({"stream-ordered allocation served by its pool", &cal.poolServed}); break;
    case FixKind::FewerSyncs:
    case FixKind::HoistAllocs:
    case FixKind::BlockingWait:
    case FixKind::NonBlockingStreams:  // takes waits out, pays no new cost
    case FixKind::CheaperGraphLaunches: break;  // its floor is stated in the fix (fix_graph_launches.cpp)
    case FixKind::KeepLibrarySetup: break;      // takes calls and host time out, pays nothing new
    }
    return v;
}

}  // namespace

std::vector<std::string> costsOf(const Calibration& cal, FixKind kind)
{
    std::vector<std::string> out;
    for (const auto& [name, cost] : costRefs(cal, kind)) out.push_back(name + ": " + cost->source);
    return out;
}

bool restsOnAssumedCost(const Calibration& cal, FixKind kind)
{
    for (const auto& [name, cost] : costRefs(cal, kind))
        if (cost->assumed()) return true;
    return false;
}

Calibration atAssumedEnd(const Calibration& cal, FixKind kind, bool high)
{
    Calibration c = cal;
    for (const auto& [name, cost] : costRefs(c, kind))
        if (cost->assumed()) *cost = cost->scaled(high ? cost->highScale : cost->lowScale);
    return c;
}

FixEffect applyFix(RunGraph& g, FixKind kind, const Calibration& cal, const FixScope& scope)
{
    switch (kind) {
    case FixKind::Pinned: return pinned(g, cal, scope, false);
    case FixKind::AsyncCopies: return asyncCopies(g, cal, scope);
    case FixKind::FewerSyncs: return fewerSyncs(g, scope);
    case FixKind::HoistAllocs: return hoistAllocs(g, scope);
    case FixKind::BlockingWait: return blockingWait(g, scope);
    case FixKind::Graphs: return graphs(g, cal, scope);
    case FixKind::BatchCopies: return batchCopies(g, cal, scope);
    case FixKind::PoolThreshold: return poolThreshold(g, cal, scope);
    case FixKind::NonBlockingStreams: return nonBlockingStreams(g);
    case FixKind::CheaperGraphLaunches: return cheaperGraphLaunches(g, scope);
    case FixKind::KeepLibrarySetup: return keepLibrarySetup(g, scope);
    }
    return {};
}

}  // namespace gpuspy::collect::replay
