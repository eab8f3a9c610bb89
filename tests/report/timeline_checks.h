// tests/report/timeline_checks.h: the report's device timeline (busy %, idle, the GPU's share of the
// waits, the savings that rest on them) against the simulated driver's truth of every operation, with
// the tolerances of issue 14 (tests/report/README.md, "The device timeline").
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace timeline_checks {

struct Span {
    long long b = 0, e = 0;
};
struct Wait {
    std::string api;  // the driver entry point as the trace names it
    long long pid = 0, dev = 0, start = 0, end = 0;
    bool explicitWait = false;  // cuCtx/Stream/EventSynchronize
};
struct Truth {
    std::map<std::pair<long long, long long>, std::vector<Span>> ops;  // (pid, device) -> every op's [start, end)
    // (pid, device) -> stream -> its ops' [start, end): a stream runs its work in order, so no fix of the
    // host makes a device's work take less than its busiest stream's
    std::map<std::pair<long long, long long>, std::map<long long, std::vector<Span>>> streams;
    std::vector<Wait> waits;   // the driver's own waits (trace)
    std::vector<Wait> calls;   // every call as the shim timed it (dump): the host time the report divides by
};

using Check = std::function<bool(bool, const std::string&)>;

// Busy % of each estimated device within 10 points of the truth (or an interval at most 20 points wide
// that holds it), its idle gaps likewise, the GPU's busy share of each kind of wait within 15 points
// (kinds that blocked at least 5 ms in 20 calls or more), and the savings of sync-in-loop, launch-bound-kernels and
// gpu-starved at most 1.5x the GPU idle time they can give back (+1% of the active span): for sync-in-loop
// the idle time between the first and the last wait, for the launch fixes the time each device's busiest
// stream stood idle (a faster host may let streams overlap that ran one after the other, so more than the
// device's idle time can go, never more than that stream's).
void check(const nlohmann::json& report, const Truth& truth, const Check& check);

}  // namespace timeline_checks
