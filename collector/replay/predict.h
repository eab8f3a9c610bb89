// collector/replay/predict.h: each finding's saving as the replay predicts it. A finding whose advice is a
// fix the replay models (pageable-memcpy: pinned memory, sync-memcpy: async copies, sync-in-loop: fewer
// syncs, launch-bound-kernels: graphs, small-transfers: batched copies, implicit-sync: hoisted
// allocations) has that fix applied to its own calls (its stacks) in each process's run graph; its saving
// becomes replay(unchanged) - replay(fixed), summed over the processes, kept within the bound the rule
// states (an at-most or at-least that holds whatever the model says), and the findings are ranked again.
// The rule's own figure stays in the prediction (formulaNs) and the evidence. Pure: no I/O.
#pragma once

#include "collector/analyze/analyze.h"
#include "collector/model/model.h"


namespace gpuspy::collect::replay {

// `capture` holds the report's processes with their events (a process whose events were not kept,
// Process::eventsDropped, keeps its findings' formulas, and a note says so).
void predictFindings(Report& r, const Capture& capture);

}  // namespace gpuspy::collect::replay
