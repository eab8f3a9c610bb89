// collector/analyze_internal.h: what the analysis sections share: a per-process index of the capture
// (calls in time order, GPU spans by call, busy intervals per device, call sites) built once by analyze().
#pragma once

#include "collector/analyze.h"
#include "collector/timeline.h"

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gpuspy::collect::detail {

inline constexpr int32_t kCudaErrorNotReady = 600;
inline constexpr int kNoSite = -1;

struct ProcView {
    const Process* proc = nullptr;
    std::vector<const wire::CallBody*> calls;  // sorted by beginNs
    std::vector<int> site;                      // call site of calls[i], or kNoSite
    std::unordered_map<uint64_t, std::vector<const wire::GpuSpanBody*>> spans;  // by call seq
    std::map<int, IntervalSet> busy;            // per device: union of timed GPU work
    IntervalSet busyAll;                        // all devices
    IntervalSet hostInCuda;                     // any thread inside a hooked call
    uint64_t activeBegin = 0, activeEnd = 0;    // first to last CUDA call
    std::unordered_set<std::string> kernelFunctions;  // demangled kernel names, without parameters
    std::map<int, std::vector<uint64_t>> untimedSubmits;  // per device: host begin of device work without a span
    std::map<int, std::map<uint64_t, uint64_t>> submitOfEnd;  // per device: span end -> earliest submit ending there

    std::string apiName(const wire::CallBody& c) const;
    uint64_t gpuNs(const wire::CallBody& c) const;  // summed span lengths of the call's work
    bool timed(const wire::CallBody& c) const { return spans.count(c.seq) != 0; }
    // Length of the call's host interval during which its device (all devices if unknown) was busy.
    uint64_t busyDuring(const wire::CallBody& c) const;
    std::string kernelName(uint32_t kernelId, std::string* mangled = nullptr) const;
    // Whether an idle gap on a device is known: no untimed work (sampled out) was submitted after the
    // work that ends at the gap's start, so none of it can have run inside the gap.
    bool gapKnownIdle(int device, const Interval& gap) const;
};

struct Context {
    const ReportOptions* options = nullptr;
    std::vector<ProcView> procs;
    std::vector<CallSite> sites;  // ids are indices (renumbered by host time at the end)
    uint64_t wallNs = 0;          // the capture's span over the selected processes
};

inline uint64_t hostNs(const wire::CallBody& c) { return c.endNs > c.beginNs ? c.endNs - c.beginNs : 0; }
inline bool succeeded(const wire::CallBody& c) { return c.result == 0; }
inline bool hasFlag(const wire::CallBody& c, uint16_t f) { return (c.flags & f) != 0; }

std::string demangle(const std::string& mangled);
std::string formatNs(uint64_t ns);     // "1.23 ms"
std::string formatBytes(uint64_t b);   // "64.0 KiB"

// The `top` sites with the most time, from a site -> ns tally.
std::vector<uint32_t> topSites(const std::map<int, uint64_t>& nsBySite, size_t top);

void analyzeOverview(Context&, Report&);
void analyzeApis(Context&, Report&);
void analyzeTransfers(Context&, Report&);
void analyzeLaunches(Context&, Report&);
void analyzeSyncs(Context&, Report&);
void analyzeNvtx(Context&, Report&);
void analyzeFindings(Context&, Report&);

// Transfers: the kind of host memory involved, and whether a call counts as one (moved data).
std::string transferHostMemory(const wire::TransferArgs& t);
bool isCountedTransfer(const wire::CallBody& c);
// A kernel launch that ran (succeeded, not recorded into a capture).
bool isCountedLaunch(const wire::CallBody& c);

// Explicit host waits: context, stream and event synchronization and the query polls.
bool isExplicitSync(std::string_view abiName);
// Calls the shim flagged as synchronising implicitly, less those that cannot wait (a free of null).
bool isImplicitSync(const ProcView& pv, const wire::CallBody& c);
bool isQuery(std::string_view abiName);

}  // namespace gpuspy::collect::detail
