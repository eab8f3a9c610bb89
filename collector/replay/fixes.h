// collector/replay/fixes.h: the fixes gpuspy recommends, each as a change of the run graph (run_graph.h), and
// the costs they need that the changed calls never showed (a pinned copy's bandwidth, an async call's
// host cost, a graph launch's), calibrated from other calls of the same capture where it has them, else
// a stated default. What a fix saves is replay(unchanged) - replay(fixed) (whatif.h).
#pragma once

#include "collector/replay/run_graph.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpuspy::collect::replay {

enum class FixKind : uint8_t {
    Pinned, AsyncCopies, FewerSyncs, HoistAllocs, BlockingWait, Graphs, BatchCopies, PoolThreshold, NonBlockingStreams, CheaperGraphLaunches,
    KeepLibrarySetup
};

struct FixInfo {
    FixKind kind;
    const char* name;  // as `whatif --fix` takes it
    const char* what;  // the change, as the user would make it
};
const std::vector<FixInfo>& allFixes();
std::optional<FixKind> fixByName(std::string_view name);
const FixInfo& fixInfo(FixKind k);

// A cost the fixed program pays that the capture may not show, and where it came from.
struct Cost {
    double fixedNs = 0, perByteNs = 0;  // fixedNs + perByteNs x bytes
    std::string source;                  // "measured: N pinned HtoD copies" or "default: ..."
    // An assumed cost (a default): the range the true cost may lie in, as factors of this one (both 1
    // for a measured cost).
    double lowScale = 1, highScale = 1;
    uint64_t at(uint64_t bytes) const { return uint64_t(fixedNs + perByteNs * double(bytes)); }
    bool assumed() const { return lowScale != 1 || highScale != 1; }
    Cost scaled(double f) const
    {
        Cost c = *this;
        c.fixedNs *= f;
        c.perByteNs *= f;
        return c;
    }
};
struct Calibration {
    Cost pinnedCopy[2];  // device time of a pinned copy: HtoD, DtoH
    Cost asyncCall;      // host time of an async copy or memset call that does not wait
    Cost graphLaunch;    // host time of a graph launch: fixedNs + perByteNs x nodes
    // Device time of a copy by direction (HtoD, DtoH, DtoD) and host memory (pageable, pinned/device),
    // from the capture's timed copies of that kind: the batched copy's time for its bytes.
    Cost copy[3][2];
    Cost poolServed;     // host time of a stream-ordered allocation its pool served from what it kept
};
Calibration calibrate(const RunGraph& g);

// The costs `kind` rests on, each with its source ("pinned HtoD copy: measured: ..."), and `cal` with
// those that are assumed set to the low (`high` false) or high end of their range.
std::vector<std::string> costsOf(const Calibration& cal, FixKind kind);
bool restsOnAssumedCost(const Calibration& cal, FixKind kind);
Calibration atAssumedEnd(const Calibration& cal, FixKind kind, bool high);

// Which calls a fix may change: by stack (a finding's call sites); empty: all it applies to.
struct FixScope {
    std::set<uint32_t> stacks;
    // keep-library-setup: the library invocation each stack's calls were made inside (Finding::invocationKeys);
    // without them that fix has nothing to group and changes nothing.
    std::map<uint32_t, uint64_t> invocationKeys;
    // keep-library-setup's upper end: the host time before a removed invocation's first call and after its
    // last (to the thread's calls around it) taken out too, as though all of it were the library's.
    bool withSurroundingGaps = false;
    bool has(uint32_t stackId) const { return stacks.empty() || stacks.count(stackId) != 0; }
};

// What a fix did to the graph.
struct FixEffect {
    uint64_t changed = 0;  // calls changed or taken out
    uint64_t kept = 0;     // calls it had to leave as they were, and why (`keptWhy`)
    std::string keptWhy;
    uint64_t assumed = 0;    // calls changed on an assumption the capture cannot check (`assumption`)
    std::string assumption;
};

// Applies the fix to `g` in place.
FixEffect applyFix(RunGraph& g, FixKind kind, const Calibration& cal, const FixScope& scope = {});

// The fixes of how streams are made (fix_streams.cpp): the legacy default stream's waits taken out,
// but those of a copy to the host (the host reads what it copies: the fixed program keeps that ordering
// with one explicit wait).
FixEffect nonBlockingStreams(RunGraph& g);
// Graph launches whose host time the GPU waited for brought down to an empty graph's launch
// (fix_graph_launches.cpp): the most fewer nodes, larger graphs or device-side launch can save.
FixEffect cheaperGraphLaunches(RunGraph& g, const FixScope& scope);
// A library's setup made once (fix_library_setup.cpp): of each library call's invocations (its calls grouped
// by the scope's invocation keys), the first kept, the others taken out with the library's host work between
// their calls.
FixEffect keepLibrarySetup(RunGraph& g, const FixScope& scope);

// A call site that calls this often is a loop's (fewer syncs, hoisted allocations; work done once is not).
inline constexpr uint64_t kLoopCalls = 3;
// Consecutive launches from one thread that a graph would replace (launch-bound kernels).
inline constexpr size_t kGraphRun = 4;
// Consecutive small copies (of one direction, memory kind and stream) that one batched copy replaces.
inline constexpr size_t kBatchRun = 4;
inline constexpr uint64_t kSmallCopyBytes = 64 * 1024;

}  // namespace gpuspy::collect::replay
