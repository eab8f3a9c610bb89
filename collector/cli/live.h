// collector/cli/live.h: what `gpuspy collect` does for a running server beyond collecting (the flight
// recorder's snapshots) and the client side of its control requests (`gpuspy ctl`).
#pragma once

#include "collector/live/flight_recorder.h"

#include <string>

namespace gpuspy::collect::cli {

class ArgReader;

// Writes the flight recorder's records as a capture at `path` (symbolized, readable by report).
// Returns "wrote PATH: N process(es), M calls from the last S s". Throws std::runtime_error when the
// ring holds nothing or the file cannot be written (then no file is left behind).
std::string writeSnapshot(const FlightRecorder& ring, const std::string& path, bool force);

// The control requests a collector with a flight recorder answers ("snapshot ...", "ring"): the
// answer line ("ok ..." or "error ...", newline-terminated), or empty when `request` is none of them.
std::string answerRingRequest(FlightRecorder* ring, const std::string& request);

// Sends one request line to the control socket of the collector listening at `socketPath`
// (controlPath(), collector/live/control.h) and returns its answer (without the trailing newline). Throws
// std::runtime_error naming the socket when it cannot be reached.
std::string controlRequest(const std::string& socketPath, const std::string& request);

// An "error ..." or "error: ..." answer's text after that word.
std::string controlError(const std::string& answer);

// `gpuspy ctl --socket PATH snapshot -o FILE [-f]`: `args` stands after the verb (--socket may come
// there too). Returns the exit status.
int ctlSnapshot(std::string socketPath, ArgReader& args);

}  // namespace gpuspy::collect::cli
