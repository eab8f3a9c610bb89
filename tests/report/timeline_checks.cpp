// tests/report/timeline_checks.cpp: see timeline_checks.h.
#include "timeline_checks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <set>

namespace timeline_checks {

namespace {

constexpr double kBusyPoints = 10, kIntervalPoints = 20, kWaitPoints = 15, kSavingsFactor = 1.5;
// A kind of wait is compared when it is a pattern, not an incident: one preempted call of a handful
// (a free that waited 1.6 ms on a loaded machine) says nothing of the timeline.
constexpr long long kMinBlockedNs = 5000000;
constexpr long long kMinWaits = 20;

// The union of spans clipped to [lo, hi), merged and sorted.
std::vector<Span> merged(std::vector<Span> v, long long lo, long long hi)
{
    std::sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.b < b.b; });
    std::vector<Span> out;
    for (Span s : v) {
        s.b = std::max(s.b, lo);
        s.e = std::min(s.e, hi);
        if (s.e <= s.b) continue;
        if (!out.empty() && s.b <= out.back().e) out.back().e = std::max(out.back().e, s.e);
        else out.push_back(s);
    }
    return out;
}

long long total(const std::vector<Span>& m)
{
    long long t = 0;
    for (const Span& s : m) t += s.e - s.b;
    return t;
}

long long overlap(const std::vector<Span>& m, long long b, long long e)
{
    long long t = 0;
    for (const Span& s : m) t += std::max(0LL, std::min(s.e, e) - std::max(s.b, b));
    return t;
}

std::string pct(double v)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", v);
    return b;
}

struct ProcSpan {
    long long lo = 0, hi = 0;
};

}  // namespace

void check(const nlohmann::json& report, const Truth& truth, const Check& check)
{
    std::map<long long, ProcSpan> active;
    for (const auto& p : report["processes"])
        active[p.value("pid", 0LL)] = {p.value("active_begin_ns", 0LL), p.value("active_end_ns", 0LL)};
    std::map<std::pair<long long, long long>, std::vector<Span>> busy;  // (pid, dev) -> truth union in the active span
    long long activeAll = 0, streamIdleAll = 0;
    for (const auto& [key, ops] : truth.ops) {
        const ProcSpan a = active[key.first];
        busy[key] = merged(ops, a.lo, a.hi);
    }

    // Busy and idle per device.
    for (const auto& d : report["devices"]) {
        const long long pid = d.value("pid", 0LL), dev = d.value("id", 0LL);
        const ProcSpan a = active[pid];
        const double span = double(a.hi - a.lo);
        if (span <= 0) continue;
        const std::vector<Span>& m = busy[{pid, dev}];
        const double truthPct = 100.0 * double(total(m)) / span;
        long long busiest = 0;
        auto streams = truth.streams.find({pid, dev});
        if (streams != truth.streams.end())
            for (const auto& [stream, spans] : streams->second) busiest = std::max(busiest, total(merged(spans, a.lo, a.hi)));
        streamIdleAll += (a.hi - a.lo) - busiest;
        activeAll += a.hi - a.lo;
        const std::string who = "timeline: device " + std::to_string(dev) + " pid " + std::to_string(pid) + ": ";
        const double est = d.value("busy_pct", 0.0), lo = d.value("busy_pct_min", est), hi = d.value("busy_pct_max", est);
        const bool near = std::fabs(est - truthPct) <= kBusyPoints;
        // A busy time that holds spans that are only upper bounds (blocking copies on an idle stream) is
        // itself reported as a bound: its interval must hold the truth, however wide.
        const bool bounded = d.value("upper_bound_ops", 0) > 0;
        const bool holds = lo <= truthPct + 0.5 && truthPct <= hi + 0.5 && (bounded || hi - lo <= kIntervalPoints);
        check(near || holds, who + "busy " + pct(est) + " [" + pct(lo) + ", " + pct(hi) + "] (" + d.value("busy_basis", "") +
                                 ") against the truth " + pct(truthPct) + ": within " + pct(kBusyPoints) +
                                 " or an interval of at most " + pct(kIntervalPoints) + " that holds it");
        check(lo <= est + 1e-6 && est <= hi + 1e-6, who + "busy_pct_min <= busy_pct <= busy_pct_max");
        long long gaps = 0;
        for (size_t i = 1; i < m.size(); ++i) gaps += m[i].b - m[i - 1].e;
        const double gapPct = 100.0 * d.value("idle_gap_ns", 0.0) / span, truthGapPct = 100.0 * double(gaps) / span;
        // An op whose thread was held up inside its call may have run anywhere in that call's host time:
        // the report says how much time that is (held_up_ns), and the gaps may be off by as much.
        const double heldUpPct = 100.0 * d.value("held_up_ns", 0.0) / span;
        check(std::fabs(gapPct - truthGapPct) <= kBusyPoints + heldUpPct || holds,
              who + "idle gaps " + pct(gapPct) + " of the active span against the truth " + pct(truthGapPct) +
                  (heldUpPct > 0 ? " (held-up calls' time " + pct(heldUpPct) + ")" : ""));
    }

    // Busy per stream: the report's streams of a device against the truth's, each sorted by busy time (the
    // simulated driver numbers its streams, it does not name them by handle), held as the devices are: within
    // kBusyPoints of the active span, or an interval of at most kIntervalPoints that holds the truth. An
    // untimed copy stretched over the time it waited for another stream's event fails it.
    std::map<std::pair<long long, long long>, std::vector<std::array<double, 3>>> streamRows;  // est, lo, hi
    std::set<std::pair<long long, long long>> boundedDevices;  // with spans that are only upper bounds
    for (const auto& d : report.value("devices", nlohmann::json::array()))
        if (d.is_object() && d.value("upper_bound_ops", 0) > 0) boundedDevices.insert({d.value("pid", 0LL), d.value("id", 0LL)});
    for (const auto& st : report.value("streams", nlohmann::json::array())) {
        if (!st.is_object()) continue;
        const double est = st.value("busy_ns", 0.0);
        streamRows[{st.value("pid", 0LL), st.value("device", 0LL)}].push_back(
            {est, st.value("busy_ns_min", est), st.value("busy_ns_max", est)});
    }
    for (auto& [key, rows] : streamRows) {
        const ProcSpan a = active[key.first];
        const double span = double(a.hi - a.lo);
        auto streams = truth.streams.find(key);
        if (span <= 0 || streams == truth.streams.end()) continue;
        std::vector<double> truths;
        for (const auto& [stream, spans] : streams->second) truths.push_back(double(total(merged(spans, a.lo, a.hi))));
        if (truths.size() != rows.size()) continue;  // a stream of no work in the active span: nothing to pair
        std::sort(truths.begin(), truths.end());
        std::sort(rows.begin(), rows.end());
        for (size_t i = 0; i < rows.size(); ++i) {
            const double est = 100 * rows[i][0] / span, lo = 100 * rows[i][1] / span, hi = 100 * rows[i][2] / span;
            const double t = 100 * truths[i] / span;
            const bool near = std::fabs(est - t) <= kBusyPoints;
            // A stream whose busy time holds upper-bound spans is itself a bound: its interval must hold the truth.
            const bool holds = lo <= t + 0.5 && t <= hi + 0.5 && (boundedDevices.count(key) || hi - lo <= kIntervalPoints);
            check(near || holds, "timeline: pid " + std::to_string(key.first) + " device " + std::to_string(key.second) +
                                     ": the stream " + std::to_string(i + 1) + " of " + std::to_string(rows.size()) +
                                     " by busy time is busy " + pct(est) + " [" + pct(lo) + ", " + pct(hi) +
                                     "] of the active span against the truth " + pct(t));
        }
    }

    // The GPU's share of each kind of wait: the truth's busy time inside the same host intervals the
    // report divides by (the calls as the shim timed them), so that only the timeline is compared.
    std::map<std::string, std::pair<double, double>> waits;  // api -> (blocked, busy during)
    for (const Wait& w : truth.calls) {
        auto& [blocked, during] = waits[w.api];
        blocked += double(w.end - w.start);
        during += double(overlap(busy[{w.pid, w.dev}], w.start, w.end));
    }
    struct Row {
        double blocked = 0, during = 0;
        long long count = 0;
        bool bounded = false;  // some of its calls' own spans are upper bounds: so is its busy share
    };
    std::map<std::string, Row> reported;
    for (const auto& s : report["syncs"]) {
        Row& r = reported[s.value("api", "")];
        r.blocked += s.value("blocked_ns", 0.0);
        r.during += s.value("gpu_busy_ns", 0.0);
        r.count += s.value("count", 0LL);
        r.bounded |= s.value("upper_bound_count", 0) > 0;
    }
    for (const auto& [api, r] : reported) {
        auto w = waits.find(api);
        if (w == waits.end() || w->second.first < double(kMinBlockedNs) || r.blocked < double(kMinBlockedNs) ||
            r.count < kMinWaits)
            continue;
        const double truthShare = 100.0 * w->second.second / w->second.first, share = 100.0 * r.during / r.blocked;
        const bool ok = r.bounded ? share >= truthShare - kWaitPoints : std::fabs(share - truthShare) <= kWaitPoints;
        check(ok, "timeline: " + api + ": the GPU busy " + pct(share) + " of the waits against the truth " + pct(truthShare) +
                      " in the same calls (" + (r.bounded ? "an upper bound, at least the truth less " : "within ") +
                      pct(kWaitPoints) + ")");
    }

    // Savings that rest on the GPU's idle time.
    std::map<long long, std::pair<long long, long long>> waitSpan;  // pid -> first explicit wait, last
    for (const Wait& w : truth.waits) {
        if (!w.explicitWait) continue;
        auto [it, fresh] = waitSpan.try_emplace(w.pid, w.start, w.end);
        it->second.first = std::min(it->second.first, w.start);
        it->second.second = std::max(it->second.second, w.end);
    }
    long long idleBetweenWaits = 0;
    for (const auto& [key, m] : busy) {
        auto ws = waitSpan.find(key.first);
        if (ws == waitSpan.end()) continue;
        const auto [b, e] = ws->second;
        idleBetweenWaits += (e - b) - overlap(m, b, e);
    }
    const double slack = 0.01 * double(activeAll);
    for (const auto& f : report["findings"]) {
        const std::string rule = f.value("rule", "");
        const double saving = f.value("estimated_savings_ns", 0.0);
        double bound = -1;
        if (rule == "sync-in-loop") bound = double(idleBetweenWaits);
        else if (rule == "launch-bound-kernels" || rule == "gpu-starved") bound = double(streamIdleAll);
        if (bound < 0) continue;
        check(saving <= kSavingsFactor * bound + slack,
              "timeline: finding " + rule + " saves " + std::to_string((long long)saving) + " ns, at most 1.5x the GPU idle " +
                  "time it can give back (truth " + std::to_string((long long)bound) + " ns" +
                  (rule == "sync-in-loop" ? "" : ": the busiest stream's idle time") + ") + 1% of the active span");
    }
}

}  // namespace timeline_checks
