// collector/analyze/capture_windows.cpp: capture windows (record --capture-range, --delay/--duration,
// ctl start/stop): each window's span and recorded calls, the calls the shim left out between them,
// and a loud finding for a window that recorded nothing (users lose runs to empty windows).
#include "collector/analyze/internal.h"

#include <algorithm>

namespace gpuspy::collect::detail {
namespace {

const char* triggerName(wire::WindowTrigger t)
{
    switch (t) {
    case wire::WindowTrigger::ProfilerApi: return "cudaProfilerApi";
    case wire::WindowTrigger::Nvtx: return "nvtx";
    case wire::WindowTrigger::Time: return "time";
    case wire::WindowTrigger::Control: return "control";
    case wire::WindowTrigger::None: break;
    }
    return "start";
}

uint64_t sum(const uint64_t* v)
{
    uint64_t n = 0;
    for (size_t c = 0; c < wire::kWindowCategories; ++c) n += v[c];
    return n;
}

constexpr size_t kLaunch = size_t(wire::Category::Launch);

}  // namespace

void finishCaptureWindows(Context& cx, const Process& p, const std::map<uint32_t, WindowTally>& tallies)
{
    if (p.windows.empty()) return;
    CaptureWindows& cw = cx.captureWindows;
    cw.used = true;
    std::map<uint32_t, CaptureWindowRow> rows;
    uint64_t prevOut[wire::kWindowCategories] = {};  // left-out totals at the previous edge
    uint64_t lastOut[wire::kWindowCategories] = {};
    std::vector<wire::WindowBody> edges = p.windows;
    std::stable_sort(edges.begin(), edges.end(), [](const wire::WindowBody& a, const wire::WindowBody& b) {
        return a.timeNs < b.timeNs || (a.timeNs == b.timeNs && a.edge < b.edge);
    });
    const uint64_t start = p.startNs;
    auto rel = [&](uint64_t t) { return t > start ? t - start : 0; };
    for (const wire::WindowBody& e : edges) {
        if (e.edge == wire::WindowEdge::Tally) {
            std::copy(e.leftOut, e.leftOut + wire::kWindowCategories, lastOut);
            continue;
        }
        CaptureWindowRow& row = rows[e.index];
        row.pid = p.pid;
        row.index = e.index;
        if (e.edge == wire::WindowEdge::Begin) {
            row.trigger = triggerName(e.trigger);
            row.beginNs = rel(e.timeNs);
            row.leftOutBefore = sum(e.leftOut) - sum(prevOut);
            row.leftOutLaunchesBefore = e.leftOut[kLaunch] - prevOut[kLaunch];
        } else {
            row.endedBy = triggerName(e.trigger);
            row.endNs = rel(e.timeNs);
        }
        std::copy(e.leftOut, e.leftOut + wire::kWindowCategories, prevOut);
        std::copy(e.leftOut, e.leftOut + wire::kWindowCategories, lastOut);
    }
    const uint64_t end = rel(std::max(p.lastNs, p.ended ? p.end.endNs : 0));
    for (auto& entry : rows) {
        const uint32_t index = entry.first;
        auto& row = entry.second;  // a named reference: lambdas may not capture structured bindings (C++17)
        if (row.trigger.empty()) row.trigger = "start";  // recording from the start, stopped at runtime
        if (row.endedBy.empty()) {
            row.endedBy = "exit";
            row.endNs = end;
        }
        // Calls of a window recorded from the start carry window 0 (the shim had no windows then).
        auto count = [&](uint32_t w) {
            auto it = tallies.find(w);
            if (it == tallies.end()) return;
            const WindowTally& t = it->second;
            row.calls += t.calls;
            row.launches += t.byCategory[kLaunch];
            row.transfers += t.byCategory[size_t(wire::Category::Transfer)];
            row.syncs += t.byCategory[size_t(wire::Category::Sync)];
            row.allocs += t.byCategory[size_t(wire::Category::Alloc)];
        };
        count(index);
        if (index == 1 && row.trigger == "start") count(0);
        if (row.empty()) ++cw.emptyWindows;
        cw.rows.push_back(row);
    }
    cw.leftOut += sum(lastOut);
    cw.leftOutLaunches += lastOut[kLaunch];
    cw.leftOutAfter += sum(lastOut) - sum(prevOut);
}

void captureWindowFindings(Context& cx, Report& r)
{
    r.captureWindows = cx.captureWindows;
    const CaptureWindows& cw = r.captureWindows;
    if (!cw.used) return;
    uint64_t recorded = 0;
    for (const CaptureWindowRow& w : cw.rows) recorded += w.calls;
    if (cw.rows.empty()) {
        r.notes.push_back("NO CAPTURE WINDOW OPENED: recording waited for a window that never came; " + std::to_string(cw.leftOut) +
                          " CUDA calls were left out (check --capture-range against what the app calls)");
    } else {
        r.notes.push_back(std::to_string(cw.rows.size()) + " capture window(s) recorded " + std::to_string(recorded) + " calls; " +
                          std::to_string(cw.leftOut) + " calls outside them were counted, not recorded");
    }
    if (cw.emptyWindows == 0 && !cw.rows.empty()) return;
    Finding f;
    f.rule = "empty-capture-window";
    f.severity = "high";
    f.count = cw.rows.empty() ? 1 : cw.emptyWindows;
    std::string which;
    for (const CaptureWindowRow& w : cw.rows)
        if (w.empty()) which += (which.empty() ? "" : ", ") + std::string("pid ") + std::to_string(w.pid) + " window " + std::to_string(w.index);
    f.message = cw.rows.empty()
                    ? "No capture window opened: nothing between the app's first and last CUDA call was recorded (" +
                          std::to_string(cw.leftOut) + " calls left out). The app may never call cudaProfilerStart or "
                          "open the NVTX range named in --capture-range, or the run ended before --delay."
                    : "Empty capture window(s) (" + which + "): opened and closed with no CUDA call inside. The work may "
                      "run on another range, or before the window opened.";
    f.evidence = {{"windows", double(cw.rows.size())}, {"empty_windows", double(cw.emptyWindows)}, {"left_out", double(cw.leftOut)}};
    r.findings.insert(r.findings.begin(), std::move(f));
}

}  // namespace gpuspy::collect::detail
