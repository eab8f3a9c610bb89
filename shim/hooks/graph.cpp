// shim/hooks/graph.cpp: graph launches (timed as a whole) and stream capture, during which no
// timing events may be recorded (they would become graph nodes).
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

template <Api A>
CUresult graphLaunch(CUgraphExec g, CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuGraphLaunch)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        s.body().args.sync.object = uint64_t(uintptr_t(g));
        s.setStream(stream);
        s.setFlags(wire::kCallDeviceWork | wire::kCallAsync);
        gpuBefore(s, stream, GpuTiming::Preferred);
    }
    s.beforeReal();
    return s.finish(real(g, stream));
}

template <Api A>
CUresult beginCapture(CUstream stream, CUstreamCaptureMode mode)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamBeginCapture_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.beforeReal();
    const CUresult rc = real(stream, mode);
    if (rc == CUDA_SUCCESS) gpuCaptureBegin(stream, kApis[size_t(A)].perThread);
    return s.finish(rc);
}

template <Api A>
CUresult beginCaptureToGraph(CUstream stream, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* data,
                             size_t n, CUstreamCaptureMode mode)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamBeginCaptureToGraph)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.beforeReal();
    const CUresult rc = real(stream, graph, deps, data, n, mode);
    if (rc == CUDA_SUCCESS) gpuCaptureBegin(stream, kApis[size_t(A)].perThread);
    return s.finish(rc);
}

template <Api A>
CUresult endCapture(CUstream stream, CUgraph* graph)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamEndCapture)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.beforeReal();
    const CUresult rc = real(stream, graph);
    gpuCaptureEnd(stream, kApis[size_t(A)].perThread);
    return s.finish(rc);
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(graphLaunch, cuGraphLaunch, (CUgraphExec g, CUstream s), (g, s))
GS_WRAP(graphLaunch, cuGraphLaunch_ptsz, (CUgraphExec g, CUstream s), (g, s))
GS_WRAP(beginCapture, cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode m), (s, m))
GS_WRAP(beginCapture, cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode m), (s, m))
GS_WRAP(beginCaptureToGraph, cuStreamBeginCaptureToGraph,
        (CUstream s, CUgraph g, const CUgraphNode* d, const CUgraphEdgeData* e, size_t n, CUstreamCaptureMode m), (s, g, d, e, n, m))
GS_WRAP(beginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz,
        (CUstream s, CUgraph g, const CUgraphNode* d, const CUgraphEdgeData* e, size_t n, CUstreamCaptureMode m), (s, g, d, e, n, m))
GS_WRAP(endCapture, cuStreamEndCapture, (CUstream s, CUgraph* g), (s, g))
GS_WRAP(endCapture, cuStreamEndCapture_ptsz, (CUstream s, CUgraph* g), (s, g))
