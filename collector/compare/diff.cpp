// collector/compare/diff.cpp: the diff stage: pairs the rows of two Reports by what they are and takes the
// difference of each figure. Pure: no I/O.
#include "collector/compare/diff.h"
#include "collector/analyze/clock_align.h"
#include "collector/compare/significance.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <utility>

namespace gpuspy::collect {

namespace {

// Pairs the items of a and b with equal keys, the n-th of a key in A with the n-th in B, and calls
// visit(itemA or null, itemB or null) in A's order, then for B's unmatched in B's order.
template <class T, class Key, class Visit>
void pairBy(const std::vector<T>& a, const std::vector<T>& b, Key key, Visit visit)
{
    std::map<std::string, std::vector<size_t>> inB;
    for (size_t i = 0; i < b.size(); ++i) inB[key(b[i])].push_back(i);
    std::map<std::string, size_t> used;
    std::vector<bool> taken(b.size(), false);
    for (const T& x : a) {
        const std::string k = key(x);
        const T* match = nullptr;
        auto it = inB.find(k);
        size_t& n = used[k];
        if (it != inB.end() && n < it->second.size()) {
            taken[it->second[n]] = true;
            match = &b[it->second[n]];
        }
        ++n;
        visit(&x, match);
    }
    for (size_t i = 0; i < b.size(); ++i)
        if (!taken[i]) visit(static_cast<const T*>(nullptr), &b[i]);
}

// The program a command runs: its first word without the directory.
std::string programOf(const std::string& command)
{
    const std::string first = command.substr(0, command.find(' '));
    const size_t slash = first.rfind('/');
    return slash == std::string::npos ? first : first.substr(slash + 1);
}

// Processes paired by command: the same rank (its launcher's) and program first, then the same command
// line, then the same program (the same binary
// run with other arguments, as a changed experiment often is), then, when one process is left on each
// side, those two. visit() is called for the pairs in A's order, then for B's unmatched.
template <class Visit>
void pairProcesses(const std::vector<ProcessSummary>& a, const std::vector<ProcessSummary>& b, Visit visit)
{
    std::vector<int> match(a.size(), -1);
    std::vector<bool> taken(b.size(), false);
    // key "" with `keyed`: the process takes no part in the pass.
    auto pass = [&](const std::function<std::string(const ProcessSummary&)>& key, bool keyed = true) {
        for (size_t i = 0; i < a.size(); ++i) {
            if (match[i] >= 0 || (keyed && key(a[i]).empty())) continue;
            for (size_t j = 0; j < b.size(); ++j)
                if (!taken[j] && key(a[i]) == key(b[j])) {
                    match[i] = int(j);
                    taken[j] = true;
                    break;
                }
        }
    };
    // The ranks of a job (several captures per side, or one capture of a launcher's processes): rank R
    // before with rank R after, whatever the order of the captures or of the processes.
    // The same rank and program (its arguments may be the change).
    pass([](const ProcessSummary& p) { return p.rank >= 0 ? std::to_string(p.rank) + '|' + programOf(p.command) : std::string(); });
    pass([](const ProcessSummary& p) { return p.command; });
    pass([](const ProcessSummary& p) { return programOf(p.command); });
    const auto leftA = std::count(match.begin(), match.end(), -1);
    const auto leftB = std::count(taken.begin(), taken.end(), false);
    if (leftA == 1 && leftB == 1) pass([](const ProcessSummary&) { return std::string(); }, false);
    for (size_t i = 0; i < a.size(); ++i) visit(&a[i], match[i] >= 0 ? &b[size_t(match[i])] : nullptr);
    for (size_t j = 0; j < b.size(); ++j)
        if (!taken[j]) visit(static_cast<const ProcessSummary*>(nullptr), &b[j]);
}

template <class T>
DiffPair pairOf(const T* a, const T* b, uint64_t T::*field)
{
    return {a ? a->*field : 0, b ? b->*field : 0};
}

// Folds the busy figures of some devices into one: sums of the spans, percentages of the summed
// active spans, and the weakest basis of them.
BusyFigure busyOf(const Report& r, const std::function<bool(const DeviceSummary&)>& which)
{
    BusyFigure f;
    size_t n = 0;
    for (const DeviceSummary& d : r.devices) {
        if (!which(d)) continue;
        ++n;
        f.ns += d.busyNs;
        f.loNs += d.busyLoNs;
        f.hiNs += d.busyHiNs;
        f.activeNs += d.activeNs;
        if (d.busyBasis == "estimated" || (d.busyBasis == "upper_bound" && f.basis == "measured")) f.basis = d.busyBasis;
        if (n == 1) {
            f.pct = d.busyPct;
            f.pctLo = d.busyPctLo;
            f.pctHi = d.busyPctHi;
        }
    }
    if (n > 1 && f.activeNs) {
        const double active = double(f.activeNs);
        f.pct = 100.0 * double(f.ns) / active;
        f.pctLo = 100.0 * double(f.loNs) / active;
        f.pctHi = 100.0 * double(f.hiNs) / active;
    }
    return f;
}

bool busyDiffers(const BusyFigure& a, const BusyFigure& b)
{
    return a.ns != b.ns || a.loNs != b.loNs || a.hiNs != b.hiNs || a.basis != b.basis;
}

std::string siteKey(const CallSite& s)
{
    if (s.siteFrame < s.frames.size()) {
        const ReportFrame& f = s.frames[s.siteFrame];
        if (!f.function.empty() || !f.file.empty())
            return s.category + '|' + f.function + '|' + f.file + ':' + std::to_string(f.line);
        if (!f.module.empty()) {
            const size_t slash = f.module.rfind('/');
            return s.category + "|+" + f.module.substr(slash == std::string::npos ? 0 : slash + 1) + '+' +
                   std::to_string(f.offset);
        }
    }
    return s.category + "||" + s.label;  // "(no stack)": one row per category
}

HeadlineDiff headlineOf(const Report& a, const Report& b)
{
    HeadlineDiff h;
    auto fill = [](const Report& r, uint64_t DiffPair::*side, HeadlineDiff& out) {
        uint64_t wall = 0, api = 0, calls = 0, bytes = 0, blocked = 0;
        for (const ProcessSummary& p : r.processes) {
            wall = std::max(wall, p.wallNs);
            api += p.cudaApiNs;
            calls += p.calls;
        }
        for (const TransferRow& t : r.transfers) bytes += t.bytes;
        for (const SyncRow& s : r.syncs) blocked += s.blockedNs;
        out.wallNs.*side = wall;
        out.cudaApiNs.*side = api;
        out.calls.*side = calls;
        out.launches.*side = r.launches.count;
        out.graphLaunches.*side = r.launches.graphLaunches;
        out.hostFunctions.*side = r.hostFunctions.count;
        out.transferBytes.*side = bytes;
        out.syncBlockedNs.*side = blocked;
        uint64_t peak = 0, leaked = 0;
        for (const MemoryRow& m : r.memory) {
            if (m.space == "device") peak = std::max(peak, m.peakBytes);
            leaked += m.leakedBytes();
        }
        out.memoryPeakBytes.*side = peak;
        out.leakedBytes.*side = leaked;
    };
    fill(a, &DiffPair::a, h);
    fill(b, &DiffPair::b, h);
    auto all = [](const DeviceSummary&) { return true; };
    h.busyA = busyOf(a, all);
    h.busyB = busyOf(b, all);
    return h;
}

// Rows sorted by the larger of their two figures, descending (ties: as paired).
template <class T, class F>
void sortByLarger(std::vector<T>& rows, F figure)
{
    std::stable_sort(rows.begin(), rows.end(), [&](const T& x, const T& y) {
        const DiffPair& fx = figure(x);
        const DiffPair& fy = figure(y);
        return std::max(fx.a, fx.b) > std::max(fy.a, fy.b);
    });
}

}  // namespace

double DiffPair::pct() const
{
    if (a == 0) return b == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    return 100.0 * (double(b) - double(a)) / double(a);
}

bool ReportDiff::changed() const
{
    const HeadlineDiff& h = headline;
    if (h.wallNs.changed() || h.cudaApiNs.changed() || h.calls.changed() || h.launches.changed() ||
        h.graphLaunches.changed() || h.hostFunctions.changed() || h.transferBytes.changed() || h.syncBlockedNs.changed() ||
        h.memoryPeakBytes.changed() || h.leakedBytes.changed() ||
        busyDiffers(h.busyA, h.busyB))
        return true;
    for (const ProcessDiff& p : processes)
        if (!p.inA || !p.inB || p.wallNs.changed() || p.cudaApiNs.changed() || p.calls.changed()) return true;
    for (const TransferDiff& t : transfers)
        if (!t.inA || !t.inB || t.count.changed() || t.bytes.changed() || t.hostNs.changed() || t.gpuNs.changed())
            return true;
    for (const SyncKindDiff& s : syncs)
        if (!s.inA || !s.inB || s.count.changed() || s.blockedNs.changed()) return true;
    for (const KernelDiff& k : kernels)
        if (!k.inA || !k.inB || k.launches.changed() || k.gpuNs.changed() || k.launchHostNs.changed()) return true;
    for (const CallSiteDiff& c : callsites)
        if (!c.inA || !c.inB || c.count.changed() || c.ns.changed()) return true;
    for (const FindingDiff& f : findings)
        if (f.status != "same") return true;
    return false;
}

double wallSlowdownPct(const ReportDiff& d) { return d.headline.wallNs.pct(); }

namespace {

// A change of wall time beyond the runs' noise is the program's only if it is larger than the change of
// the time the program waited for a CPU: runs taken minutes apart on a shared host see different loads,
// and a capture's runs, taken one after the other, share theirs, so a rank test over the runs reads a
// change of load as a change of the program. The wait bounds what the load added to the wall (it even
// overstates it: a thread descheduled while it waits on the GPU loses nothing), so a change of the median
// wall no larger than the change of the median wait, the same way, is within what the load explains.
void weighHostLoad(ReportDiff& d, const RunsSummary& a, const RunsSummary& b)
{
    auto known = [](const RunsSummary& r) {
        return !r.runs.empty() && std::all_of(r.runs.begin(), r.runs.end(), [](const RunFigures& f) { return f.cpuWaitKnown; });
    };
    if (!known(a) || !known(b)) return;
    auto it = std::find_if(d.spreads.begin(), d.spreads.end(),
                           [](const SpreadDiff& s) { return s.section == "headline" && s.name == "wall_ns"; });
    if (it == d.spreads.end()) return;
    auto waits = [](const RunsSummary& r) {
        std::vector<uint64_t> v;
        for (const RunFigures& f : r.runs) v.push_back(f.cpuWaitNs);
        return spreadOf(std::move(v));
    };
    it->cpuWaitKnown = true;
    it->cpuWaitA = waits(a);
    it->cpuWaitB = waits(b);
    if (it->verdict != "higher" && it->verdict != "lower") return;
    const double wall = double(it->b.median) - double(it->a.median);
    const double wait = double(it->cpuWaitB.median) - double(it->cpuWaitA.median);
    if (wall * wait > 0 && std::fabs(wall) <= std::fabs(wait)) {
        it->verdict = "noise";
        it->why = "host_load";
    }
}

}  // namespace

void addRunSpreads(ReportDiff& d, const RunsSummary& a, const RunsSummary& b)
{
    d.runsA = a.count();
    d.runsB = b.count();
    d.spreads.clear();
    auto compare = [&](const char* section, const std::vector<SpreadRow>& ra, const std::vector<SpreadRow>& rb) {
        pairBy(ra, rb, [](const SpreadRow& r) { return r.name; }, [&](const SpreadRow* x, const SpreadRow* y) {
            SpreadDiff s;
            s.section = section;
            s.name = x ? x->name : y->name;
            // Absent from every run of one side: 0 in each of its runs.
            s.a = x ? x->spread : Spread{0, 0, 0, a.count(), std::vector<uint64_t>(a.count(), 0)};
            s.b = y ? y->spread : Spread{0, 0, 0, b.count(), std::vector<uint64_t>(b.count(), 0)};
            // A rank test and Welch's t-test over the runs (significance.h), not overlapping ranges.
            s.verdict = changeVerdict(s.a.values, s.b.values);
            d.spreads.push_back(std::move(s));
        });
    };
    compare("headline", a.headline, b.headline);
    weighHostLoad(d, a, b);
    compare("kernels", a.kernels, b.kernels);
    compare("transfers", a.transfers, b.transfers);
    compare("findings", a.findings, b.findings);
}

std::string spreadVerdict(const ReportDiff& d, const std::string& section, const std::string& name)
{
    for (const SpreadDiff& s : d.spreads)
        if (s.section == section && s.name == name) return s.verdict;
    return "";
}

ReportDiff diffReports(const Report& a, const Report& b)
{
    ReportDiff d;
    d.headline = headlineOf(a, b);

    pairProcesses(a.processes, b.processes, [&](const ProcessSummary* x, const ProcessSummary* y) {
               ProcessDiff p;
               p.command = (x ? x : y)->command;
               p.commandB = x && y && y->command != x->command ? y->command : "";
               p.inA = x != nullptr;
               p.inB = y != nullptr;
               p.pidA = x ? x->pid : 0;
               p.pidB = y ? y->pid : 0;
               p.rank = (x ? x : y)->rank;
               p.wallNs = pairOf(x, y, &ProcessSummary::wallNs);
               p.cudaApiNs = pairOf(x, y, &ProcessSummary::cudaApiNs);
               p.calls = pairOf(x, y, &ProcessSummary::calls);
               if (x) p.busyA = busyOf(a, [&](const DeviceSummary& dev) { return dev.pid == x->pid; });
               if (y) p.busyB = busyOf(b, [&](const DeviceSummary& dev) { return dev.pid == y->pid; });
               d.processes.push_back(std::move(p));
    });

    pairBy(a.transfers, b.transfers,
           [](const TransferRow& t) { return t.direction + '|' + t.hostMemory + '|' + t.mode; },
           [&](const TransferRow* x, const TransferRow* y) {
               const TransferRow& r = x ? *x : *y;
               TransferDiff t;
               t.direction = r.direction;
               t.hostMemory = r.hostMemory;
               t.mode = r.mode;
               t.inA = x != nullptr;
               t.inB = y != nullptr;
               t.count = pairOf(x, y, &TransferRow::count);
               t.bytes = pairOf(x, y, &TransferRow::bytes);
               t.hostNs = pairOf(x, y, &TransferRow::hostNs);
               t.gpuNs = pairOf(x, y, &TransferRow::gpuNs);
               d.transfers.push_back(std::move(t));
           });
    sortByLarger(d.transfers, [](const TransferDiff& t) -> const DiffPair& { return t.hostNs; });

    // Sync rows are per API; the comparison is per kind (a sync copy and a cudaDeviceSynchronize block
    // for different reasons, two spellings of a stream sync for the same one).
    std::vector<SyncRow> kindsA, kindsB;
    auto byKind = [](const Report& r, std::vector<SyncRow>& out) {
        for (const SyncRow& s : r.syncs) {
            auto it = std::find_if(out.begin(), out.end(), [&](const SyncRow& k) { return k.kind == s.kind; });
            if (it == out.end()) {
                SyncRow k;
                k.kind = s.kind;
                out.push_back(k);
                it = out.end() - 1;
            }
            it->count += s.count;
            it->blockedNs += s.blockedNs;
        }
    };
    byKind(a, kindsA);
    byKind(b, kindsB);
    pairBy(kindsA, kindsB, [](const SyncRow& s) { return s.kind; }, [&](const SyncRow* x, const SyncRow* y) {
        SyncKindDiff s;
        s.kind = (x ? x : y)->kind;
        s.inA = x != nullptr;
        s.inB = y != nullptr;
        s.count = pairOf(x, y, &SyncRow::count);
        s.blockedNs = pairOf(x, y, &SyncRow::blockedNs);
        d.syncs.push_back(std::move(s));
    });
    sortByLarger(d.syncs, [](const SyncKindDiff& s) -> const DiffPair& { return s.blockedNs; });

    pairBy(a.kernels, b.kernels, [](const KernelRow& k) { return k.name; },
           [&](const KernelRow* x, const KernelRow* y) {
               KernelDiff k;
               k.name = (x ? x : y)->name;
               k.inA = x != nullptr;
               k.inB = y != nullptr;
               k.launches = pairOf(x, y, &KernelRow::count);
               k.gpuNs = pairOf(x, y, &KernelRow::estimatedGpuNs);
               k.medianGpuNs = {x ? x->gpu.median : 0, y ? y->gpu.median : 0};
               k.launchHostNs = pairOf(x, y, &KernelRow::launchHostNs);
               k.estimatedA = x && x->timedCount < x->count;
               k.estimatedB = y && y->timedCount < y->count;
               d.kernels.push_back(std::move(k));
           });
    sortByLarger(d.kernels, [](const KernelDiff& k) -> const DiffPair& { return k.gpuNs; });

    pairBy(a.callsites, b.callsites, siteKey, [&](const CallSite* x, const CallSite* y) {
        CallSiteDiff c;
        c.category = (x ? x : y)->category;
        c.label = (x ? x : y)->label;
        c.inA = x != nullptr;
        c.inB = y != nullptr;
        c.count = pairOf(x, y, &CallSite::count);
        c.ns = pairOf(x, y, &CallSite::ns);
        d.callsites.push_back(std::move(c));
    });
    sortByLarger(d.callsites, [](const CallSiteDiff& c) -> const DiffPair& { return c.ns; });

    pairBy(a.findings, b.findings, [](const Finding& f) { return f.rule; }, [&](const Finding* x, const Finding* y) {
        FindingDiff f;
        f.rule = (x ? x : y)->rule;
        f.severityA = x ? x->severity : "";
        f.severityB = y ? y->severity : "";
        f.boundA = x ? x->savingsBound : "";
        f.boundB = y ? y->savingsBound : "";
        f.savingsNs = pairOf(x, y, &Finding::estimatedSavingsNs);
        f.count = pairOf(x, y, &Finding::count);
        f.ns = pairOf(x, y, &Finding::ns);
        // A finding that saves nothing on either side (gpu-idle, an INFO note) has changed only if its
        // severity did: its count and time move with every run, and "0 ns -> 0 ns" read as a change.
        const bool savesNothing = f.savingsNs.a == 0 && f.savingsNs.b == 0;
        f.status = !y ? "resolved"
                 : !x ? "new"
                 : (f.severityA != f.severityB ||
                    (!savesNothing && (f.savingsNs.changed() || f.count.changed() || f.ns.changed())))
                     ? "changed"
                     : "same";
        d.findings.push_back(std::move(f));
    });
    auto rank = [](const std::string& s) { return s == "resolved" ? 0 : s == "new" ? 1 : s == "changed" ? 2 : 3; };
    std::stable_sort(d.findings.begin(), d.findings.end(),
                     [&](const FindingDiff& x, const FindingDiff& y) { return rank(x.status) < rank(y.status); });

    if (d.headline.busyA.estimate() || d.headline.busyB.estimate())
        d.notes.push_back("GPU busy is an estimate where not every device operation was timed (basis "
                          "\"estimated\") or an upper bound where some spans are (basis \"upper_bound\"): "
                          "compare the intervals, not only the estimates");
    if (std::any_of(d.kernels.begin(), d.kernels.end(), [](const KernelDiff& k) { return k.estimatedA || k.estimatedB; }))
        d.notes.push_back("kernel GPU times marked ~ are scaled from the timed launches to all of them");
    if (a.processes.size() > 1 || b.processes.size() > 1)
        d.notes.push_back(std::string("processes are paired by ") +
                          (std::any_of(d.processes.begin(), d.processes.end(), [](const ProcessDiff& p) { return p.rank >= 0; })
                               ? "rank and command"
                               : "command") +
                          "; the tables sum over every process of a capture, and wall is the longest process's");
    d.clocksA = a.clockAlignment;
    d.clocksB = b.clockAlignment;
    for (const auto& [side, clocks] : {std::pair{"A", &d.clocksA}, std::pair{"B", &d.clocksB}})
        for (const std::string& note : clockAlignmentNotes(*clocks)) d.notes.push_back(std::string(side) + ": " + note);
    for (const Report* r : {&a, &b})
        if (r->badStreams)
            d.notes.push_back(std::string("capture ") + (r == &a ? "A" : "B") + " has damaged streams: its figures "
                              "cover what was read");
    return d;
}

}  // namespace gpuspy::collect
