// collector/export/perfetto.h: a capture as Chrome trace-event JSON, which ui.perfetto.dev and
// chrome://tracing open as they are: a track per host thread (CUDA calls with NVTX ranges around
// them), a track per device stream (kernels, copies, memsets on the host clock), flow arrows from each
// call to its GPU work, counters (GPU operations running, bytes moved), process and thread names.
#pragma once

#include "collector/model/model.h"

#include <cstdint>
#include <string>

namespace gpuspy::collect {

struct PerfettoStats {
    uint64_t events = 0;   // entries of traceEvents
    uint64_t slices = 0;   // complete ("X") events
    uint64_t flows = 0;    // call -> GPU work arrows
    uint64_t counters = 0; // GPU memory counter ("C") events: bytes in use per process and memory space
    uint64_t clamped = 0;  // slices that overlapped a slice of their track improperly and were cut at its end
};

// Timestamps are microseconds of the host CLOCK_MONOTONIC with three decimals (exact nanoseconds);
// slices on one track nest properly (Perfetto requires it): a slice that starts inside another and
// ends after it is cut at the other's end, and counted in `stats->clamped` and in otherData.
std::string exportPerfetto(const Capture& capture, PerfettoStats* stats = nullptr);

}  // namespace gpuspy::collect
