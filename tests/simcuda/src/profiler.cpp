// cuProfilerStart/cuProfilerStop: the switch an app flips around the part it wants profiled (cudart's
// cudaProfilerStart/Stop reach these through cuGetProcAddress). The simulated driver profiles nothing;
// it keeps the switch's state and writes each call to the trace (type "profiler"), the ground truth a
// profiler's capture windows are checked against.
#include "sim.h"

namespace simcuda {
namespace {
std::atomic<bool> g_profiling{false};  // a real driver: one switch per process, any thread flips it

CUresult flip(ApiScope& scope, const char* what, bool on)
{
    if (!currentContext()) return scope.ret(noContextError());  // as the real driver: a context is required
    const bool changed = g_profiling.exchange(on) != on;
    traceProfiler(what, nowNs(), changed);
    return scope.ret(CUDA_SUCCESS);
}
}  // namespace
}  // namespace simcuda

SIM_EXPORT CUresult cuProfilerStart(void)
{
    SIM_API(cuProfilerStart);
    return simcuda::flip(scope, "start", true);
}

SIM_EXPORT CUresult cuProfilerStop(void)
{
    SIM_API(cuProfilerStop);
    return simcuda::flip(scope, "stop", false);
}
