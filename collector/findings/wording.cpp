// collector/findings/wording.cpp: the figures and bounds as the findings word them, and the facts about copies and devices they share.
#include "collector/findings/rules.h"

#include <cstdio>

namespace gpuspy::collect::detail::rules {

std::string fmtPct(double pct)
{
    char b[16];
    std::snprintf(b, sizeof b, "%.0f%%", pct);
    return b;
}

std::string fmtGbps(double gbps)
{
    char b[24];
    std::snprintf(b, sizeof b, "%.2f GB/s", gbps);
    return b;
}

std::string siteLabel(const Context& cx, const std::vector<uint32_t>& sites)
{
    if (sites.empty()) return "";
    std::string s = " (" + (sites.size() == 1 ? std::string("at ") : std::string("top: ")) + cx.sites[sites[0]].label + ")";
    return s;
}

bool isHostCopy(const wire::CallBody& c)
{
    const wire::Direction d = c.args.transfer.direction;
    return d == wire::Direction::HtoD || d == wire::Direction::DtoH;
}

bool isCopy(const wire::CallBody& c)
{
    const wire::Direction d = c.args.transfer.direction;
    return d != wire::Direction::Memset && d != wire::Direction::Prefetch && d != wire::Direction::Unknown;
}


// The reference bandwidth of pinned copies in one direction: what this program's pinned copies with a
// measured GPU time reached (0 if it made none). Pinned copies that blocked on an idle stream are left
// out: their GPU times are upper bounds, so their rates are lower bounds, not a reference.
double pinnedGbps(const Context& cx, wire::Direction dir)
{
    const Matched& m = cx.findings.pinned[dir == wire::Direction::HtoD ? 0 : 1];
    return m.measuredGpuNs() ? double(m.measuredBytes()) / double(m.measuredGpuNs()) : 0;
}

// Whether this program's pinned copies in one direction were timed only with GPU times that are upper
// bounds (then they exist but give no reference), for the text of the fallback.
bool pinnedOnlyBounded(const Context& cx, wire::Direction dir)
{
    const Matched& m = cx.findings.pinned[dir == wire::Direction::HtoD ? 0 : 1];
    return m.bounded && !m.measured();
}

// The device time of a set of copies and whether it is only an upper bound. Measured GPU times count
// as they are; copies whose GPU time is a bound count as the shortest bound among the copies alike
// (Matched::boundedTightNs); untimed copies as the mean of the timed ones, or, with none timed, as their
// host time (which holds the copy, so it is a bound too).
CopyTime copyTime(const Matched& m)
{
    if (!m.timed) return {double(m.hostNs), true};
    const double timedNs = double(m.measuredGpuNs() + m.boundedTightNs());
    return {timedNs * double(m.count) / double(m.timed), m.bounded > 0};
}

// The sentence that says why a finding's numbers built on GPU times are bounds ("" when none is).
std::string boundedCopiesText(const Matched& m)
{
    if (!m.bounded) return "";
    return " " + std::to_string(m.bounded) + " of these copies blocked on an idle stream, where CUDA events cannot "
           "see when a copy began: their GPU times are upper bounds, and each copy is taken to last at most the "
           "shortest of its kind (direction, memory, size).";
}

// "~62% (55-70%)" for an estimate, "62%" when measured; "at most" when a span in it is an upper bound.
std::string busyPctText(const DeviceSummary& d)
{
    std::string s = d.busyBasis == "upper_bound" ? "at most " : "";
    if (d.busyBasis != "estimated") return s + fmtPct(d.busyPct);
    s += "~" + fmtPct(d.busyPct);
    if (d.busyPctHi - d.busyPctLo >= 1) s += " (" + fmtPct(d.busyPctLo) + "-" + fmtPct(d.busyPctHi) + ")";
    return s + " (estimated: " + std::to_string(d.estimatedOps) + " of " + std::to_string(d.ops) + " operations untimed)";
}

// Whether the busy time of any device holds a span that is only an upper bound: then every "the GPU
// was busy" share is at most that (busy intervals do not remember which span they came from).
bool busyIsUpperBound(const Report& r)
{
    for (const DeviceSummary& d : r.devices)
        if (d.upperBoundOps) return true;
    return false;
}

// "the GPU was busy X of it": a wait's busy share of its host time, "at most" (and why) when it may
// hold a span that is an upper bound.
std::string busyShare(const Report& r, uint64_t busyNs, uint64_t hostNs, const std::string& ofWhat)
{
    const bool bound = busyNs && busyIsUpperBound(r);
    return (bound ? "at most " : "") + fmtPct(hostNs ? 100.0 * double(busyNs) / double(hostNs) : 0) + ofWhat +
           (bound ? " (GPU times that are upper bounds count as busy)" : "");
}


// The device time the GPU sat idle in the processes of a report: the most that making the host
// faster (fewer launches, no waits) can give back.
uint64_t deviceIdleNs(const Report& r)
{
    uint64_t idle = 0;
    for (const DeviceSummary& d : r.devices) idle += d.activeNs - std::min(d.activeNs, d.busyNs);
    return idle;
}

}  // namespace gpuspy::collect::detail::rules
