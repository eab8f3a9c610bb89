// collector/replay/fix_library_setup.cpp: keep-library-setup, a library's setup made once and kept (fixes.h).
// The calls the finding names were made inside library calls (cublasCreate, cufftPlan1d, ...), each group by
// its invocation key, split into invocations as collector/analyze/library_time.h counts them
// (LibraryInvocationCounter::goesOn). The first invocation of each key stays; the others are taken out, and
// with them the host time between their calls (the library's own work). The time before an invocation's
// first call and after its last stays (the saving is then at least what it says: the user's, or the library's
// where gpuspy cannot tell), unless the scope asks for the upper end (withSurroundingGaps: all of it the
// library's).
#include "collector/replay/fixes.h"

#include "collector/analyze/library_time.h"

#include <map>

namespace gpuspy::collect::replay {

FixEffect keepLibrarySetup(RunGraph& g, const FixScope& scope)
{
    FixEffect fx;
    if (scope.invocationKeys.empty()) {
        fx.keptWhy = "no library setup to keep: the fix applies to the calls a library-setup-in-loop finding names";
        return fx;
    }
    std::map<uint64_t, uint64_t> invocations;  // per key, so far (every thread's)
    for (const Thread& t : g.threads) {
        uint64_t open = 0;
        uint32_t firstStack = 0;
        bool sawOther = false, removing = false;
        for (uint32_t ci : t.calls) {
            Call& c = g.calls[ci];
            const auto it = scope.invocationKeys.find(c.stackId);
            const uint64_t key = it == scope.invocationKeys.end() ? 0 : it->second;
            const bool goesOn = detail::LibraryInvocationCounter::goesOn(open, firstStack, sawOther, key, c.stackId);
            if (!goesOn) {
                // The call after a removed invocation: the host time before it is the library's, at the upper end.
                if (removing && scope.withSurroundingGaps) c.gap = 0;
                open = key;
                firstStack = c.stackId;
                sawOther = false;
                removing = false;
                if (!key) continue;
                removing = ++invocations[key] > 1;
            } else {
                sawOther |= c.stackId != firstStack;
            }
            if (!removing || c.removed) continue;
            c.removed = true;
            if (goesOn || scope.withSurroundingGaps) c.gap = 0;
            ++fx.changed;
        }
    }
    return fx;
}

}  // namespace gpuspy::collect::replay
