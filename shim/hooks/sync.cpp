// shim/hooks/sync.cpp: where the host waits for the device (context, stream, event), polls it
// (stream/event queries), or orders streams (wait event, event record).
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

void waitsOn(CallScope& s, const void* object)
{
    s.body().args.sync.object = uint64_t(uintptr_t(object));
}

template <Api A>
CUresult ctxSynchronize()
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuCtxSynchronize)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real());
}

template <Api A>
CUresult ctxSynchronizeV2(CUcontext ctx)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuCtxSynchronize_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) waitsOn(s, ctx);
    s.beforeReal();
    return s.finish(real(ctx));
}

template <Api A>
CUresult streamSynchronize(CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamSynchronize)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        waitsOn(s, stream);
        s.setStream(stream);
    }
    s.beforeReal();
    return s.finish(real(stream));
}

template <Api A>
CUresult streamQuery(CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamQuery)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        waitsOn(s, stream);
        s.setStream(stream);
    }
    s.beforeReal();
    return s.finish(real(stream));
}

template <Api A>
CUresult eventSynchronize(CUevent e)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuEventSynchronize)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) waitsOn(s, e);
    s.beforeReal();
    return s.finish(real(e));
}

template <Api A>
CUresult eventQuery(CUevent e)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuEventQuery)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) waitsOn(s, e);
    s.beforeReal();
    return s.finish(real(e));
}

// The stream now also waits for another: its next operation may start later than the last one
// ended, so GPU timing must not reuse the last end event as the next start.
template <Api A>
CUresult streamWaitEvent(CUstream stream, CUevent e, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamWaitEvent)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        waitsOn(s, e);
        s.setStream(stream);
    }
    gpuStreamTouched(stream, kApis[size_t(A)].perThread);
    s.beforeReal();
    return s.finish(real(stream, e, flags));
}

template <Api A>
CUresult eventRecord(CUevent e, CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuEventRecord)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        waitsOn(s, e);
        s.setStream(stream);
        s.setFlags(wire::kCallAsync);
    }
    s.beforeReal();
    return s.finish(real(e, stream));
}

template <Api A>
CUresult eventRecordWithFlags(CUevent e, CUstream stream, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuEventRecordWithFlags)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        waitsOn(s, e);
        s.setStream(stream);
        s.setFlags(wire::kCallAsync);
    }
    s.beforeReal();
    return s.finish(real(e, stream, flags));
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(ctxSynchronize, cuCtxSynchronize, (void), ())
GS_WRAP(ctxSynchronizeV2, cuCtxSynchronize_v2, (CUcontext c), (c))
GS_WRAP(streamSynchronize, cuStreamSynchronize, (CUstream s), (s))
GS_WRAP(streamSynchronize, cuStreamSynchronize_ptsz, (CUstream s), (s))
GS_WRAP(eventSynchronize, cuEventSynchronize, (CUevent e), (e))
GS_WRAP(streamWaitEvent, cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int f), (s, e, f))
GS_WRAP(streamWaitEvent, cuStreamWaitEvent_ptsz, (CUstream s, CUevent e, unsigned int f), (s, e, f))
GS_WRAP(streamQuery, cuStreamQuery, (CUstream s), (s))
GS_WRAP(streamQuery, cuStreamQuery_ptsz, (CUstream s), (s))
GS_WRAP(eventQuery, cuEventQuery, (CUevent e), (e))
GS_WRAP(eventRecord, cuEventRecord, (CUevent e, CUstream s), (e, s))
GS_WRAP(eventRecord, cuEventRecord_ptsz, (CUevent e, CUstream s), (e, s))
GS_WRAP(eventRecordWithFlags, cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned int f), (e, s, f))
GS_WRAP(eventRecordWithFlags, cuEventRecordWithFlags_ptsz, (CUevent e, CUstream s, unsigned int f), (e, s, f))
