// collector/replay/predict.cpp: the findings' savings as replay predictions (predict.h).
#include "collector/replay/predict.h"

#include "collector/analyze/internal.h"
#include "collector/replay/extrapolate.h"
#include "collector/replay/fixes.h"
#include "collector/replay/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace gpuspy::collect::replay {

namespace {

struct RuleFix {
    const char* rule;
    FixKind fix;
};
constexpr RuleFix kRuleFixes[] = {
    {"pageable-memcpy", FixKind::Pinned},         {"pageable-async-memcpy", FixKind::Pinned},
    {"sync-memcpy", FixKind::AsyncCopies},        {"sync-in-loop", FixKind::FewerSyncs},
    {"launch-bound-kernels", FixKind::Graphs},    {"small-transfers", FixKind::BatchCopies},
    {"implicit-sync", FixKind::HoistAllocs},      {"pool-regrowth", FixKind::PoolThreshold},
    {"legacy-stream-serialisation", FixKind::NonBlockingStreams}, {"alloc-in-loop", FixKind::HoistAllocs},
    {"graph-launch-bound", FixKind::CheaperGraphLaunches}, {"library-setup-in-loop", FixKind::KeepLibrarySetup},
};

// Rules that only find a pattern and leave to the replay whether it costs anything: a finding of theirs
// whose predicted saving is under this share of the wall is dropped (the pattern is there, the problem
// is not).
bool confirmedByReplayOnly(const std::string& rule)
{
    return rule == "legacy-stream-serialisation" || rule == "alloc-in-loop";
}
constexpr double kConfirmedShare = 0.01;

std::optional<FixKind> fixKindOfRule(const std::string& rule)
{
    for (const RuleFix& rf : kRuleFixes)
        if (rule == rf.rule) return rf.fix;
    return std::nullopt;
}

std::string ms(uint64_t ns) { return detail::formatNs(ns); }

// One process replayed: its graph, calibration and unchanged prediction, built once for every finding.
struct Replayed {
    RunGraph graph;
    Calibration cal;
    Prediction unchanged;
    double errorPct = 0;
    // A process past the reader's budget (Process::windowed): the graph is its window's, `halves` its
    // window's halves replayed alone; callsByStack counts the calls kept in the window (and each half),
    // `process` the whole run's.
    const Process* windowOf = nullptr;
    std::vector<Replayed> halves;
    std::unordered_map<uint32_t, uint64_t> callsByStack, nsByStack;
    uint64_t calls = 0;
};

Replayed replayOf(RunGraph graph)
{
    Replayed rp;
    rp.graph = std::move(graph);
    rp.cal = calibrate(rp.graph);
    rp.unchanged = simulate(rp.graph);
    const uint64_t measured = rp.graph.wallNs();
    rp.errorPct = measured ? 100.0 * (double(rp.unchanged.wallNs) - double(measured)) / double(measured) : 0;
    return rp;
}

// A process held whole, or the window of one past the budget with its halves.
Replayed replayProcess(const Process& p)
{
    if (!p.windowed) return replayOf(buildRunGraph(p));
    std::vector<const wire::CallBody*> order;
    order.reserve(p.calls.size());
    for (const wire::CallBody& c : p.calls) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->beginNs < b->beginNs; });
    const uint64_t end = std::max(p.lastNs, order.back()->endNs);
    // A stretch starts after its first synchronize (within its first half): work queued before the stretch,
    // which its graph does not hold, is then done, and no wait in the stretch waits for what it cannot see
    // (a sync at its start would look like pure waiting, all of it saved by a fix).
    auto clean = [&](size_t from, size_t to) {
        for (size_t i = from; i < from + (to - from) / 2; ++i)
            if (order[i]->category == wire::Category::Sync) return i + 1;
        return from;
    };
    auto stretch = [&](size_t from, size_t to, uint64_t endNs) {
        std::vector<const wire::CallBody*> part(order.begin() + std::ptrdiff_t(from), order.begin() + std::ptrdiff_t(to));
        Replayed rp = replayOf(buildRunGraph(p, part, part.front()->beginNs, endNs));
        for (const wire::CallBody* c : part) {
            ++rp.callsByStack[c->stackId];
            rp.nsByStack[c->stackId] += c->endNs > c->beginNs ? c->endNs - c->beginNs : 0;
        }
        rp.calls = part.size();
        return rp;
    };
    const size_t first = clean(0, order.size());
    Replayed rp = stretch(first, order.size(), end);
    rp.windowOf = &p;
    const size_t mid = first + (order.size() - first) / 2;
    if (mid > first && mid < order.size()) {
        rp.halves.push_back(stretch(first, mid, order[mid]->beginNs));
        rp.halves.push_back(stretch(clean(mid, order.size()), order.size(), end));
    }
    return rp;
}

uint64_t callsAt(const std::unordered_map<uint32_t, uint64_t>& byStack, const FixScope& scope)
{
    uint64_t n = 0;
    for (uint32_t stack : scope.stacks)
        if (auto it = byStack.find(stack); it != byStack.end()) n += it->second;
    return n;
}

struct Tally {
    uint64_t saving = 0, low = 0, high = 0, wall = 0, fixedWall = 0, changed = 0, kept = 0;
    uint32_t processes = 0;
    double errorPct = 0;
    std::string keptWhy, assumption;
    std::vector<std::string> costs;
    bool missing = false;  // a process of the finding was not replayed
    bool absent = false;   // a process of the finding was replayed on a window that holds none of its calls
    uint64_t windowCalls = 0, processCalls = 0, findingWindowCalls = 0, findingCalls = 0, findingWindowNs = 0, findingNs = 0;
    uint64_t runWall = 0;  // the longest process's measured wall, whole (a window's saving is the whole run's)
};

uint64_t savingWith(const Replayed& rp, FixKind kind, const Calibration& cal, const FixScope& scope, FixEffect* fx,
                    uint64_t* fixedWall)
{
    RunGraph fixed = rp.graph;
    const FixEffect e = applyFix(fixed, kind, cal, scope);
    if (fx) *fx = e;
    const Prediction p = simulate(fixed);
    if (fixedWall) *fixedWall = p.wallNs;
    return sub(rp.unchanged.wallNs, p.wallNs);
}

std::string predictionText(const FindingPrediction& p, const std::string& assumption)
{
    std::string s = fmt::format(
        " Predicted saving {} by replaying the run's dependency graph with the fix ({}): wall {} -> {}; the unchanged "
        "replay is within {:.1f}% of the measured wall; {} call(s) changed",
        ms(p.savingNs), p.fix, ms(p.wallNs), ms(p.fixedWallNs), std::fabs(p.replayErrorPct), p.changed);
    if (p.kept) s += fmt::format(", {} kept ({})", p.kept, p.keptWhy);
    s += ".";
    if (p.windowCalls)
        s += fmt::format(" An ESTIMATE extrapolated from a window: the process is past the replay's budget of calls held "
                         "in memory, so the replay ran on its latest {} of {} calls, which hold {} of the finding's {} "
                         "calls, and its saving there was scaled by their host time in the run over the window's ({} / {}; the "
                         "walls above are the window's); estimate {} to {} (scaled by their count instead, the window's "
                         "halves extrapolated alone, corrected for the window's edges, widened by the window replay's "
                         "error).",
                         p.windowCalls, p.processCalls, p.findingWindowCalls, p.findingCalls, ms(p.findingNs),
                         ms(p.findingWindowNs), ms(p.lowNs), ms(p.highNs));
    else if (p.lowNs != p.highNs && p.fix == "keep-library-setup")
        s += fmt::format(" That is what the calls made inside the library calls and the time between them come to, so at "
                         "least that; the library's own host work before its first CUDA call and after its last is not "
                         "seen: were all of the host time around them the library's (none of it your code's), {} to {}.",
                         ms(p.lowNs), ms(p.highNs));
    else if (p.lowNs != p.highNs)
        s += fmt::format(" It rests on an assumed cost (no sample in the capture): {} to {} over its range.", ms(p.lowNs),
                         ms(p.highNs));
    if (!assumption.empty()) s += " Assumed: " + assumption + ".";
    if (!p.savingNs && p.formulaNs)
        s += " The rule's own formula said " + ms(p.formulaNs) +
             ", but what the fix shortens does not set the end of the run (another thread, stream or wait does).";
    else if (p.formulaNs != p.savingNs)
        s += " (The rule's formula over totals said " + ms(p.formulaNs) + ".)";
    return s;
}

// What set the end of the run, in the report's words.
CriticalPath criticalPathOf(const Replayed& rp)
{
    const RunGraph& g = rp.graph;
    std::vector<std::string> threads, streams;
    for (const Thread& t : g.threads) threads.push_back(threadName(t));
    for (const Stream& s : g.streams) streams.push_back(streamName(s));
    CriticalPath cp;
    cp.pid = g.pid;
    cp.wallNs = rp.unchanged.wallNs;
    cp.replayErrorPct = rp.errorPct;
    for (const PathPart& p : rp.unchanged.criticalPath) {
        CriticalPathPart part{pathPartKind(p.kind), pathPartName(p, threads, streams), p.ns};
        if (p.kind == PathPart::Host && p.index < g.threads.size()) {
            part.tid = g.threads[p.index].tid;
        } else if (p.kind != PathPart::Host && p.index < g.streams.size()) {
            const Stream& s = g.streams[p.index];
            part.device = s.device;
            part.stream = s.handle;
            part.perThread = s.perThread;
            part.tid = s.perThread ? s.tid : 0;
        }
        cp.parts.push_back(std::move(part));
    }
    for (uint32_t t : threadsOffPath(rp.unchanged)) {
        uint64_t cuda = 0;
        for (uint32_t c : g.threads[t].calls) cuda += sub(g.calls[c].end, g.calls[c].begin);
        cp.offPath.push_back({g.threads[t].tid, threads[t], rp.unchanged.threadEndNs[t], cuda});
    }
    return cp;
}

}  // namespace

void predictFindings(Report& r, const Capture& capture)
{
    // The report's processes that hold their events, replayed once each.
    std::map<uint32_t, const Process*> byPid;
    for (const Process& p : capture.processes) byPid.emplace(p.pid, &p);
    std::map<uint32_t, Replayed> replayed;
    std::vector<uint32_t> dropped;
    std::vector<const Process*> windowed;
    uint64_t longestWall = 0;
    for (const ProcessSummary& ps : r.processes) {
        longestWall = std::max(longestWall, ps.wallNs);
        auto it = byPid.find(ps.pid);
        if (it == byPid.end() || it->second->calls.empty()) {
            if (it != byPid.end() && it->second->eventsDropped) dropped.push_back(ps.pid);
            continue;
        }
        if (it->second->windowed && it->second->calls.size() < 2) continue;
        Replayed rp = replayProcess(*it->second);
        if (rp.windowOf) windowed.push_back(rp.windowOf);
        r.criticalPaths.push_back(criticalPathOf(rp));
        replayed.emplace(ps.pid, std::move(rp));
    }

    bool predicted = false;
    double worstError = 0;
    std::vector<const Finding*> unconfirmed;  // a pattern the replay finds costs nothing
    for (Finding& f : r.findings) {
        const auto kind = fixKindOfRule(f.rule);
        if (!kind || f.stacks.empty()) continue;
        std::map<uint32_t, FixScope> scopes;
        for (const auto& [pid, stack] : f.stacks) scopes[pid].stacks.insert(stack);
        for (const auto& [at, key] : f.invocationKeys) scopes[at.first].invocationKeys[at.second] = key;
        Tally t;
        for (const auto& [pid, scope] : scopes) {
            auto it = replayed.find(pid);
            if (it == replayed.end()) {
                t.missing = true;
                continue;
            }
            const Replayed& rp = it->second;
            FixEffect fx;
            uint64_t fixedWall = 0;
            const uint64_t s = savingWith(rp, *kind, rp.cal, scope, &fx, &fixedWall);
            uint64_t lo = s, hi = s;
            if (*kind == FixKind::KeepLibrarySetup) {
                // gpuspy sees a library call from its first CUDA call to its last: the host time around those
                // may be the library's too, or the user's. The upper end takes all of it for the library's.
                FixScope wide = scope;
                wide.withSurroundingGaps = true;
                hi = std::max(s, savingWith(rp, *kind, rp.cal, wide, nullptr, nullptr));
            } else if (restsOnAssumedCost(rp.cal, *kind)) {
                // The dearer end of the assumed cost saves less, the cheaper end more.
                const uint64_t dear = savingWith(rp, *kind, atAssumedEnd(rp.cal, *kind, true), scope, nullptr, nullptr);
                const uint64_t cheap = savingWith(rp, *kind, atAssumedEnd(rp.cal, *kind, false), scope, nullptr, nullptr);
                lo = std::min({s, dear, cheap});
                hi = std::max({s, dear, cheap});
            }
            uint64_t saving = s;
            if (rp.windowOf) {
                // Replayed on the window of a process past the budget: taken to the whole run by the
                // finding's calls in the window against the run's, the window's halves giving the spread.
                const uint64_t inWindow = callsAt(rp.callsByStack, scope);
                const uint64_t inRun = callsAt(rp.windowOf->callsByStack, scope);
                const uint64_t nsInWindow = callsAt(rp.nsByStack, scope);
                const uint64_t nsInRun = callsAt(rp.windowOf->nsByStack, scope);
                std::vector<ReplayedStretch> parts;
                for (const Replayed& h : rp.halves)
                    parts.push_back({savingWith(h, *kind, h.cal, scope, nullptr, nullptr), callsAt(h.callsByStack, scope),
                                     callsAt(h.nsByStack, scope)});
                const Extrapolation e = extrapolate({s, inWindow, nsInWindow}, lo, hi, parts, inRun, nsInRun, rp.errorPct);
                if (!e.possible) {
                    t.absent = true;
                    continue;
                }
                saving = e.savingNs;
                lo = e.lowNs;
                hi = e.highNs;
                fx.changed = uint64_t(std::llround(double(fx.changed) * e.scale));
                fx.kept = uint64_t(std::llround(double(fx.kept) * e.scale));
                t.windowCalls += rp.calls;
                t.processCalls += rp.windowOf->callsSeen;
                t.findingWindowCalls += inWindow;
                t.findingCalls += inRun;
                t.findingWindowNs += nsInWindow;
                t.findingNs += nsInRun;
            }
            t.saving += saving;
            t.low += lo;
            t.high += hi;
            t.wall = std::max(t.wall, rp.unchanged.wallNs);
            t.runWall = std::max(t.runWall, rp.windowOf ? sub(rp.windowOf->lastNs, rp.windowOf->startNs) : rp.unchanged.wallNs);
            t.fixedWall = std::max(t.fixedWall, fixedWall);
            t.changed += fx.changed;
            t.kept += fx.kept;
            if (t.keptWhy.empty()) t.keptWhy = fx.keptWhy;
            if (t.assumption.empty()) t.assumption = fx.assumption;
            ++t.processes;
            if (std::fabs(rp.errorPct) > std::fabs(t.errorPct)) t.errorPct = rp.errorPct;
            if (t.costs.empty()) t.costs = costsOf(rp.cal, *kind);
        }
        if (t.absent) {
            f.message += " None of this finding's calls is in the window of calls the replay kept of a process past its "
                         "budget (its latest calls), so this saving is the rule's formula, not a prediction.";
            continue;
        }
        if (t.missing || !t.processes) continue;
        if (confirmedByReplayOnly(f.rule) && (!t.changed || double(t.saving) < kConfirmedShare * double(t.runWall))) {
            unconfirmed.push_back(&f);
            continue;
        }
        if (!t.changed && t.kept) {
            // The fix keeps every one of the finding's calls, for a reason it states (a wait the host reads
            // after, copies with nothing to pack them with): it saves nothing, and the finding says why.
            FindingPrediction& p = f.prediction;
            p.fix = fixInfo(*kind).name;
            p.formulaNs = f.estimatedSavingsNs;
            p.formulaBound = f.savingsBound;
            p.wallNs = p.fixedWallNs = t.wall;
            p.kept = t.kept;
            p.keptWhy = t.keptWhy;
            p.replayErrorPct = t.errorPct;
            p.processes = t.processes;
            f.estimatedSavingsNs = 0;
            f.savingsBound = "estimate";
            f.severity = "info";
            f.message += fmt::format(" The replay's {} fix keeps every one of these {} call(s): {}; so it saves nothing (the "
                                     "rule's formula over totals said {}).",
                                     p.fix, p.kept, p.keptWhy, ms(p.formulaNs));
            predicted = true;
            continue;
        }
        if (!t.changed) {
            // The fix as the replay models it finds nothing to change among the finding's calls (launches
            // too few in a row for a graph): no prediction; the formula stands.
            f.message += fmt::format(" The replay's {} fix finds none of these calls to change (its model: {}), so this "
                                     "saving is the rule's formula, not a prediction.",
                                     fixInfo(*kind).name, fixInfo(*kind).what);
            continue;
        }

        FindingPrediction& p = f.prediction;
        p.fix = fixInfo(*kind).name;
        p.formulaNs = f.estimatedSavingsNs;
        p.formulaBound = f.savingsBound;
        // A bound the rule states holds whatever the model says (implicit-sync can save no more than its
        // calls' host time; a bounded copy's wait at least its measured part): the prediction stays inside it.
        auto clamp = [&](uint64_t v) {
            if (f.savingsBound == "at_most") return std::min(v, p.formulaNs);
            if (f.savingsBound == "at_least") return std::max(v, p.formulaNs);
            return v;
        };
        p.savingNs = clamp(t.saving);
        p.lowNs = clamp(t.low);
        p.highNs = clamp(t.high);
        p.wallNs = t.wall;
        p.fixedWallNs = t.fixedWall;
        p.changed = t.changed;
        p.kept = t.kept;
        p.keptWhy = t.keptWhy;
        p.replayErrorPct = t.errorPct;
        p.costs = t.costs;
        p.processes = t.processes;
        p.windowCalls = t.windowCalls;
        p.processCalls = t.processCalls;
        p.findingWindowCalls = t.findingWindowCalls;
        p.findingCalls = t.findingCalls;
        p.findingWindowNs = t.findingWindowNs;
        p.findingNs = t.findingNs;
        f.estimatedSavingsNs = p.savingNs;
        f.severity = findingSeverity(p.savingNs, longestWall);
        f.message += predictionText(p, t.assumption);
        f.evidence.push_back({"formula_saving_ns", double(p.formulaNs)});
        f.evidence.push_back({"replay_error_pct", std::round(p.replayErrorPct * 10) / 10});
        if (p.windowCalls) {
            f.evidence.push_back({"window_calls", double(p.windowCalls)});
            f.evidence.push_back({"process_calls", double(p.processCalls)});
        }
        if (p.lowNs != p.highNs) {
            f.evidence.push_back({"predicted_low_ns", double(p.lowNs)});
            f.evidence.push_back({"predicted_high_ns", double(p.highNs)});
        }
        predicted = true;
        worstError = std::max(worstError, std::fabs(p.replayErrorPct));
    }
    r.findings.erase(std::remove_if(r.findings.begin(), r.findings.end(),
                                    [&](const Finding& f) {
                                        return std::find(unconfirmed.begin(), unconfirmed.end(), &f) != unconfirmed.end();
                                    }),
                     r.findings.end());
    if (!predicted && dropped.empty() && windowed.empty()) return;

    rankFindings(r.findings);
    if (predicted)
        r.notes.push_back(fmt::format("the findings' savings that say \"predicted\" come from replaying each process's "
                                      "dependency graph with the fix applied to the finding's calls (gpuspy whatif "
                                      "shows the replay); replayed unchanged, it is within {:.1f}% of the measured wall",
                                      worstError));
    if (!windowed.empty()) {
        std::string pids;
        for (size_t i = 0; i < windowed.size() && i < 8; ++i)
            pids += fmt::format("{}{} ({} of {} calls)", i ? ", " : "", windowed[i]->pid, windowed[i]->calls.size(),
                                windowed[i]->callsSeen);
        if (windowed.size() > 8) pids += fmt::format(" and {} more", windowed.size() - 8);
        r.notes.push_back("pid(s) " + pids +
                          " are past the replay's budget of calls held in memory: each was replayed on a window of its "
                          "latest calls, its critical path is the window's, and its findings' savings are estimates "
                          "extrapolated from the window by their calls' share of it, with an interval; gpuspy whatif "
                          "--process PID replays one whole");
    }
    if (!dropped.empty()) {
        std::string pids;
        for (size_t i = 0; i < dropped.size() && i < 8; ++i) pids += fmt::format("{}{}", i ? ", " : "", dropped[i]);
        if (dropped.size() > 8) pids += fmt::format(" and {} more", dropped.size() - 8);
        r.notes.push_back("the replay kept no calls of pid(s) " + pids +
                          " (past its budget of calls held in memory): their findings' savings are the rules' formulas; "
                          "gpuspy whatif --process PID replays one");
    }
}

}  // namespace gpuspy::collect::replay
