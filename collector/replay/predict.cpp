// collector/replay/predict.cpp: the findings' savings as replay predictions (predict.h).
#include "collector/replay/predict.h"

#include "collector/analyze/internal.h"
#include "collector/replay/fixes.h"
#include "collector/replay/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

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
    {"graph-launch-bound", FixKind::CheaperGraphLaunches},
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
};

struct Tally {
    uint64_t saving = 0, low = 0, high = 0, wall = 0, fixedWall = 0, changed = 0, kept = 0;
    uint32_t processes = 0;
    double errorPct = 0;
    std::string keptWhy, assumption;
    std::vector<std::string> costs;
    bool missing = false;  // a process of the finding was not replayed
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
    if (p.lowNs != p.highNs)
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
    uint64_t longestWall = 0;
    for (const ProcessSummary& ps : r.processes) {
        longestWall = std::max(longestWall, ps.wallNs);
        auto it = byPid.find(ps.pid);
        if (it == byPid.end() || it->second->calls.empty()) {
            if (it != byPid.end() && it->second->eventsDropped) dropped.push_back(ps.pid);
            continue;
        }
        Replayed rp;
        rp.graph = buildRunGraph(*it->second);
        rp.cal = calibrate(rp.graph);
        rp.unchanged = simulate(rp.graph);
        const uint64_t measured = rp.graph.wallNs();
        rp.errorPct = measured ? 100.0 * (double(rp.unchanged.wallNs) - double(measured)) / double(measured) : 0;
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
            if (restsOnAssumedCost(rp.cal, *kind)) {
                // The dearer end of the assumed cost saves less, the cheaper end more.
                const uint64_t dear = savingWith(rp, *kind, atAssumedEnd(rp.cal, *kind, true), scope, nullptr, nullptr);
                const uint64_t cheap = savingWith(rp, *kind, atAssumedEnd(rp.cal, *kind, false), scope, nullptr, nullptr);
                lo = std::min({s, dear, cheap});
                hi = std::max({s, dear, cheap});
            }
            t.saving += s;
            t.low += lo;
            t.high += hi;
            t.wall = std::max(t.wall, rp.unchanged.wallNs);
            t.fixedWall = std::max(t.fixedWall, fixedWall);
            t.changed += fx.changed;
            t.kept += fx.kept;
            if (t.keptWhy.empty()) t.keptWhy = fx.keptWhy;
            if (t.assumption.empty()) t.assumption = fx.assumption;
            ++t.processes;
            if (std::fabs(rp.errorPct) > std::fabs(t.errorPct)) t.errorPct = rp.errorPct;
            if (t.costs.empty()) t.costs = costsOf(rp.cal, *kind);
        }
        if (t.missing || !t.processes) continue;
        if (confirmedByReplayOnly(f.rule) && (!t.changed || double(t.saving) < kConfirmedShare * double(t.wall))) {
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
        f.estimatedSavingsNs = p.savingNs;
        f.severity = findingSeverity(p.savingNs, longestWall);
        f.message += predictionText(p, t.assumption);
        f.evidence.push_back({"formula_saving_ns", double(p.formulaNs)});
        f.evidence.push_back({"replay_error_pct", std::round(p.replayErrorPct * 10) / 10});
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
    if (!predicted && dropped.empty()) return;

    rankFindings(r.findings);
    if (predicted)
        r.notes.push_back(fmt::format("the findings' savings that say \"predicted\" come from replaying each process's "
                                      "dependency graph with the fix applied to the finding's calls (gpuspy whatif "
                                      "shows the replay); replayed unchanged, it is within {:.1f}% of the measured wall",
                                      worstError));
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
