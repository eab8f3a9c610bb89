// collector/replay/extrapolate.h: a saving replayed on a window of a process's calls (a process past the
// reader's budget keeps its latest calls only, Process::windowed) taken to the whole run, by how many of
// the finding's calls fall in the window against the run, with an interval. Pure.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuspy::collect::replay {

// A stretch of the run that was replayed: the saving the fix brought there and the finding's calls in it.
struct ReplayedStretch {
    uint64_t savingNs = 0;
    uint64_t findingCalls = 0;
    uint64_t findingNs = 0;  // the finding's calls' measured host time in it (0: not known)
};

struct Extrapolation {
    bool possible = false;  // false: none of the finding's calls is in the window (the formula stands)
    double scale = 0;       // run's finding calls' host time / window's (their counts where no time is known)
    uint64_t savingNs = 0, lowNs = 0, highNs = 0;
};

// `window`: the whole window's saving (lowNs..highNs: its range over an assumed cost, both savingNs where
// none); `parts`: the same saving replayed on each part of the window (its halves), each extrapolated on
// its own; `findingCallsInRun`, `findingNsInRun`: the finding's calls in the whole process and their host
// time (counted while streaming). The estimate is the window's saving times the finding's calls' host
// time in the run over the window's (their measured cost: a run whose calls cost more outside the window,
// warming up or under load, saves more there), or their counts where no time is known; the interval spans
// that, the count-scaled estimate, the window's saving over the assumed
// cost's range and every part's own extrapolation, made as wide below the estimate as above it and the
// other way round (a part saves less at its edges, so its extrapolation errs one way only), widened by the
// window replay's error against the measured window (replayErrorPct, as a share of the saving).
Extrapolation extrapolate(const ReplayedStretch& window, uint64_t lowNs, uint64_t highNs,
                          const std::vector<ReplayedStretch>& parts, uint64_t findingCallsInRun, uint64_t findingNsInRun,
                          double replayErrorPct);

}  // namespace gpuspy::collect::replay
