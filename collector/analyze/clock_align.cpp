// collector/analyze/clock_align.cpp: the captures of several ranks or nodes on one clock: wall-clock pairs,
// then the ends of the collectives their ranks share (see clock_align.h).
#include "collector/analyze/clock_align.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

namespace gpuspy::collect {
namespace {

using Key = std::tuple<uint64_t, std::string, uint64_t>;  // communicator, operation, sequence number

int64_t medianOf(std::vector<int64_t> v)
{
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

std::string us(int64_t ns)
{
    return std::llabs(ns) < 1000 ? fmt::format("{} ns", ns) : fmt::format("{:.1f} us", double(ns) / 1000.0);
}

}  // namespace

std::vector<ClockAlignment> alignClocks(const std::vector<CaptureClock>& captures)
{
    std::vector<ClockAlignment> out(captures.size());
    if (captures.empty()) return out;
    const CaptureClock& ref = captures[0];
    for (size_t i = 0; i < captures.size(); ++i) {
        ClockAlignment& a = out[i];
        a.name = captures[i].name;
        a.sameHost = !captures[i].host.empty() && captures[i].host == ref.host;
        if (i == 0) {
            a.basis = "reference";
            continue;
        }
        if (ref.pair.known() && captures[i].pair.known()) {
            a.wallShiftNs = captures[i].pair.wallMinusMono() - ref.pair.wallMinusMono();
            a.pairErrorNs = (ref.pair.errorNs + 1) / 2 + (captures[i].pair.errorNs + 1) / 2;
            a.basis = "wall_clock";
        } else {
            a.basis = "none";
        }
        a.shiftNs = a.wallShiftNs;
    }
    // The aligned captures' collective ends, on the reference clock: several ranks' ends of one
    // collective are averaged.
    std::map<Key, std::pair<int64_t, int64_t>> aligned;  // key -> (sum of ends, count)
    auto addEnds = [&](size_t i) {
        for (const CollectiveEnd& e : captures[i].ends) {
            auto& [sum, n] = aligned[{e.commId, e.op, e.seq}];
            sum += int64_t(e.endNs) + out[i].shiftNs;
            ++n;
        }
    };
    std::vector<bool> done(captures.size(), false);
    done[0] = true;
    addEnds(0);
    for (;;) {
        // The capture with the most collectives in common with those aligned so far goes next.
        size_t best = 0, bestMatches = 0;
        for (size_t i = 1; i < captures.size(); ++i) {
            if (done[i]) continue;
            size_t m = 0;
            for (const CollectiveEnd& e : captures[i].ends) m += aligned.count({e.commId, e.op, e.seq});
            if (m > bestMatches) {
                best = i;
                bestMatches = m;
            }
        }
        if (bestMatches == 0) break;
        ClockAlignment& a = out[best];
        std::vector<int64_t> residuals;
        for (const CollectiveEnd& e : captures[best].ends) {
            auto it = aligned.find({e.commId, e.op, e.seq});
            if (it == aligned.end()) continue;
            const int64_t refEnd = it->second.first / it->second.second;
            residuals.push_back(refEnd - (int64_t(e.endNs) + a.wallShiftNs));
        }
        const int64_t correction = medianOf(residuals);
        std::vector<int64_t> dev;
        for (int64_t r : residuals) dev.push_back(std::llabs(r - correction));
        a.shiftNs = a.wallShiftNs + correction;
        a.matched = residuals.size();
        a.residualSpreadNs = uint64_t(medianOf(dev));
        a.residualMaxNs = uint64_t(*std::max_element(dev.begin(), dev.end()));
        a.basis = "collectives";
        done[best] = true;
        addEnds(best);
    }
    return out;
}

std::vector<std::string> clockAlignmentNotes(const std::vector<ClockAlignment>& alignments)
{
    std::vector<std::string> notes;
    if (alignments.size() < 2) return notes;
    std::string s = fmt::format("{} captures read as one run, on the clock of {}:", alignments.size(), alignments[0].name);
    for (size_t i = 1; i < alignments.size(); ++i) {
        const ClockAlignment& a = alignments[i];
        s += fmt::format(" {} shifted by {}", a.name, us(a.shiftNs));
        if (a.basis == "collectives")
            s += fmt::format(" (wall clock {}, refined by {} collective ends: residuals within {} median, {} at most)",
                             us(a.wallShiftNs), a.matched, us(int64_t(a.residualSpreadNs)), us(int64_t(a.residualMaxNs)));
        else if (a.basis == "wall_clock" && a.sameHost)
            s += fmt::format(" (wall-clock pairs, the same host: within {})", us(int64_t(a.pairErrorNs)));
        else if (a.basis == "wall_clock")
            s += fmt::format(" (wall-clock pairs only, another host and no collective in common: within {} plus the "
                             "difference of the two hosts' realtime clocks, which NTP keeps to about a millisecond, "
                             "PTP to microseconds)",
                             us(int64_t(a.pairErrorNs)));
        else
            s += " (no wall-clock pair nor collective in common: left as recorded, its times cannot be compared)";
        s += i + 1 < alignments.size() ? ";" : "";
    }
    notes.push_back(s);
    return notes;
}

}  // namespace gpuspy::collect
