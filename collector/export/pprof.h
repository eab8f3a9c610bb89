// collector/export/pprof.h: the capture as a pprof profile (profile.proto, gzip-compressed), for `go tool
// pprof` and the profiling backends that take pprof (Pyroscope, Parca, Grafana): the host stacks of the
// CUDA calls, each ending in the CUDA call itself, weighted by calls, host time in CUDA, time blocked
// waiting for the GPU and the GPU time of the work the call submitted (measured spans only).
#pragma once

#include "collector/model/model.h"

#include <string>

namespace gpuspy::collect {

// Sample types, in this order (the default is cuda_host): calls (count), cuda_host, blocked, gpu
// (nanoseconds). Samples carry the labels pid and, where a capture holds several runs, run.
std::string exportPprof(const Capture& capture);

}  // namespace gpuspy::collect
