// collector/compare/diff.h: two reports side by side (`gpuspy diff A B`): headline figures, transfers by kind,
// blocked time by sync kind, kernels, call sites and findings of capture A against capture B, matched by
// what they are (command, kernel name, call-site frame, rule id), never by ids. diffReports() is pure;
// renderDiffText / renderDiffJson (schema "gpuspy.diff/1") print the result.
#pragma once

#include "collector/analyze/analyze.h"
#include "collector/compare/repeat.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspy::collect {

// One figure in A and in B.
struct DiffPair {
    uint64_t a = 0, b = 0;
    int64_t delta() const { return int64_t(b) - int64_t(a); }
    // (b - a) / a in percent; 0 when both are 0, +infinity when only a is 0.
    double pct() const;
    bool changed() const { return a != b; }
};

// A GPU-busy figure as the report's devices give it: the estimate, the interval it may lie in, and
// its basis ("measured", "upper_bound" or "estimated", see DeviceSummary::busyBasis).
struct BusyFigure {
    uint64_t ns = 0, loNs = 0, hiNs = 0, activeNs = 0;
    double pct = 0, pctLo = 0, pctHi = 0;
    std::string basis = "measured";
    bool estimate() const { return basis != "measured"; }
};

// The whole capture. wallNs is the longest process's wall time (under `gpuspy record` the program's
// own process, or the worker that lived longest); cudaApiNs and calls sum over the processes.
struct HeadlineDiff {
    DiffPair wallNs, cudaApiNs, calls, launches, graphLaunches, transferBytes, syncBlockedNs;
    DiffPair hostFunctions;  // cudaLaunchHostFunc calls and graph host nodes run (not in launches)
    // GPU memory (Report::memory): the largest peak of any device's memory, and the bytes leaked (still held
    // at the end by sites that allocated again and again), summed over every space.
    DiffPair memoryPeakBytes, leakedBytes;
    BusyFigure busyA, busyB;  // over every device of every process
};

// Processes are paired by command: the same rank and program (where a launcher gave both ranks), else
// the same command line, else the same program (other arguments), else the one process left on
// each side.
struct ProcessDiff {
    std::string command;   // A's (B's when only in B)
    std::string commandB;  // B's when it differs from A's
    bool inA = false, inB = false;
    uint32_t pidA = 0, pidB = 0;
    int rank = -1;  // the rank its launcher gave it (A's, else B's); -1: none
    DiffPair wallNs, cudaApiNs, calls;
    BusyFigure busyA, busyB;  // the process's devices together
};

struct TransferDiff {
    std::string direction, hostMemory, mode;  // the report's TransferRow key
    bool inA = false, inB = false;
    DiffPair count, bytes, hostNs, gpuNs;
};

struct SyncKindDiff {
    std::string kind;  // SyncRow::kind: context, stream, event, copy, free, ...
    bool inA = false, inB = false;
    DiffPair count, blockedNs;
};

struct KernelDiff {
    std::string name;
    bool inA = false, inB = false;
    DiffPair launches, gpuNs, medianGpuNs, launchHostNs;  // gpuNs: scaled to every launch
    bool estimatedA = false, estimatedB = false;          // some launches untimed: gpuNs scaled up
};

// Call sites are matched by category and site frame: function, file and line, or, without symbols,
// the module's file name and the offset.
struct CallSiteDiff {
    std::string category, label;
    bool inA = false, inB = false;
    DiffPair count, ns;
};

struct FindingDiff {
    std::string rule;
    std::string status;  // resolved (only in A), new (only in B), changed, same
    std::string severityA, severityB, boundA, boundB;
    DiffPair savingsNs, count, ns;
};

// One figure over the runs of each capture (captures of `record --repeat N`; a single run is a range
// of one value). verdict: "noise" when the two ranges [min, max] overlap, else "lower" or "higher"
// (B's whole range below or above A's): a change the runs' spread cannot explain.
struct SpreadDiff {
    std::string section;  // headline, kernels, transfers, findings
    std::string name;     // as RunsSummary names it
    Spread a, b;
    std::string verdict;
    // The wall's row only, when every run of both sides told its CPU wait (RunFigures::cpuWaitNs): each
    // side's waits, and why a change of wall beyond the runs' noise was still called noise: "host_load"
    // when the walls less their CPU waits do not show it (the host was busier on one side; its load, not
    // the program, may have made the difference). Empty: the verdict is the walls' own.
    bool cpuWaitKnown = false;
    Spread cpuWaitA, cpuWaitB;
    std::string why;
};

struct ReportDiff {
    std::string schema = "gpuspy.diff/1";
    HeadlineDiff headline;
    std::vector<ProcessDiff> processes;     // A's order, then B's unmatched
    std::vector<TransferDiff> transfers;    // by largest host time in either
    std::vector<SyncKindDiff> syncs;        // by largest blocked time in either
    std::vector<KernelDiff> kernels;        // by largest GPU time in either
    std::vector<CallSiteDiff> callsites;    // by largest host time in either
    std::vector<FindingDiff> findings;      // resolved, new, changed, same
    std::vector<std::string> notes;         // what the reader must know to trust the comparison
    // How each side's captures were put on one clock, when a side is several captures read as one run
    // (`gpuspy diff --before A1 A2 --after B1 B2`): the reports' Report::clockAlignment.
    std::vector<ClockAlignment> clocksA, clocksB;
    size_t runsA = 1, runsB = 1;            // runs in each capture (record --repeat)
    std::vector<SpreadDiff> spreads;        // every run figure's range in A and B (when either repeated)
    // Whether any figure differs (a capture compared with itself: false).
    bool changed() const;
};

ReportDiff diffReports(const Report& a, const Report& b);

// Compares the runs' figures of the two captures (filled in `spreads`, runsA and runsB): call it when
// either capture holds repeated runs. The headline rows stay those of the reports given to diffReports
// (each capture's run of median wall).
void addRunSpreads(ReportDiff&, const RunsSummary& a, const RunsSummary& b);
// The verdict on a figure ("noise", "lower", "higher"), or empty when the runs were not compared.
std::string spreadVerdict(const ReportDiff&, const std::string& section, const std::string& name);

// How much slower B's wall time is than A's, in percent (negative: faster). A's wall of 0: 0 when B's
// is 0 too, else +infinity.
double wallSlowdownPct(const ReportDiff&);

// Text for people (100 columns, `top` rows per table) and the JSON document.
std::string renderDiffText(const ReportDiff&, const std::string& nameA, const std::string& nameB, size_t top);
nlohmann::ordered_json diffJson(const ReportDiff&, const std::string& nameA, const std::string& nameB);
std::string renderDiffJson(const ReportDiff&, const std::string& nameA, const std::string& nameB);

}  // namespace gpuspy::collect
