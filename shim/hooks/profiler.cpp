// shim/hooks/profiler.cpp: cuProfilerStart/Stop (cudart's cudaProfilerStart/Stop), the app's own
// marks around what it wants profiled: with --capture-range cudaProfilerApi they open and close the
// capture window (neither is recorded: a window holds what ran between them).
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

template <Api A>
CUresult profilerStart()
{
    CallScope s(A);  // before the window opens: counted as left out when none was open
    const auto real = realAs<decltype(&::cuProfilerStart)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = s.finish(real());
    // The driver decides whether the call is valid (a context current); only then does a window open.
    if (rc == CUDA_SUCCESS && t_depth == 1) windowOnProfilerApi(true);
    return rc;
}

template <Api A>
CUresult profilerStop()
{
    // Closed before the scope opens: the start and the stop both fall outside the window (a window
    // with nothing between them reads as empty, as it is).
    if (t_depth == 0) windowOnProfilerApi(false);
    CallScope s(A);
    const auto real = realAs<decltype(&::cuProfilerStop)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real());
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_EXPORT CUresult cuProfilerStart(void) { return profilerStart<Api::cuProfilerStart>(); }
GS_EXPORT CUresult cuProfilerStop(void) { return profilerStop<Api::cuProfilerStop>(); }
