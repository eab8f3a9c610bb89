// collector/replay/replay.h: a discrete-event replay of a run graph (run_graph.h): each host thread runs its
// calls in program order, the host time between them as measured; each stream runs its operations in
// order, each starting no earlier than its submission plus its latency, its stream's previous op and
// the events it waits on; a blocking call returns when what it waited for has ended (plus its measured
// wake-up). Costs are the graph's (calibrated from the capture, or changed by a fix). Replayed
// unchanged it gives back the run; the difference is the model's error on this capture.
//
// What it cannot see, and keeps as measured: dependencies between host threads other than through the
// GPU (locks, queues, joins: each thread keeps its own host time and its first call's start), and
// whether the host's own work between calls would change.
#pragma once

#include "collector/replay/run_graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspy::collect::replay {

// One stretch of the critical path, by what held it: a thread's own host work (and calls' host cost),
// a device's work on a stream, or the gap between a submission and its work starting.
struct PathPart {
    enum Kind : uint8_t { Host, Device, Latency } kind = Host;
    uint32_t index = 0;  // thread (Host) or stream (Device, Latency)
    uint64_t ns = 0;
};

struct Prediction {
    uint64_t wallNs = 0;      // the process's wall time
    uint64_t gpuBusyNs = 0;   // summed over devices: the union of each device's work
    uint64_t hostBusyNs = 0;  // host time on the threads seen outside blocked waits (a spinning poll counts)
    uint64_t hostWaitNs = 0;  // host time blocked in waits
    std::vector<uint64_t> threadEndNs;  // per thread: its last call's return (relative to the start)
    std::vector<PathPart> criticalPath; // summed per thread / stream, by ns (largest first)
    uint32_t endThread = kNone;         // the thread whose end sets the wall
};

Prediction simulate(const RunGraph& g);

// The threads none of whose host time is on the critical path: shortening their calls would not shorten
// the run.
std::vector<uint32_t> threadsOffPath(const Prediction& p);

// A stretch of the path in words ("host tid 12 (main)", "GPU 0 stream 0x5 (work)"), by the graph's thread
// and stream names (threadName, streamName); and its kind ("host", "device", "latency").
std::string pathPartName(const PathPart& p, const std::vector<std::string>& threadNames,
                         const std::vector<std::string>& streamNames);
const char* pathPartKind(PathPart::Kind k);

}  // namespace gpuspy::collect::replay
