// collector/analyze/clock_align.h: several captures (the ranks or nodes of one job, each on its own host's
// CLOCK_MONOTONIC) put on the first capture's clock. First by their wall-clock pairs (realtime - monotonic
// at one moment: two hosts' difference of it is their clocks' offset, as far as their realtime clocks
// agree), then refined by the ends of the same collectives (communicator, operation, sequence number),
// which the ranks of a collective reach together; what remains is stated (the residuals' spread). Pure.
#pragma once

#include "collector/analyze/analyze.h"
#include "collector/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspy::collect {

// What one capture says about its clock.
struct CaptureClock {
    std::string name;
    std::string host;                  // its processes' host; "" when unknown
    ClockPair pair;                    // its tightest wall-clock pair; realtimeNs 0: none (an older capture)
    std::vector<CollectiveEnd> ends;   // its collectives' ends, on its clock
};

// One entry per capture, in the same order; the first is the reference.
std::vector<ClockAlignment> alignClocks(const std::vector<CaptureClock>& captures);

// The report's notes on how the captures were put on one clock.
std::vector<std::string> clockAlignmentNotes(const std::vector<ClockAlignment>& alignments);

}  // namespace gpuspy::collect
