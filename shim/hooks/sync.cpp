// shim/hooks/sync.cpp: where the host waits for the device (context, stream, event), polls it
// (stream/event queries), or orders streams (wait event, event record).
#include "shim/hooks/graph_nodes.h"

namespace gpuspy::shim {
namespace {

void waitsOn(CallScope& s, const void* object)
{
    s.body().args.sync.object = uint64_t(uintptr_t(object));
}

// A wait or query on a stream: the stream is both what is waited on and the record's stream.
void onStream(CallScope& s, CUstream stream)
{
    waitsOn(s, stream);
    s.setStream(stream);
}

// An event recorded into a stream: asynchronous.
void recordsInto(CallScope& s, CUevent e, CUstream stream)
{
    waitsOn(s, e);
    s.setStream(stream);
    s.setFlags(wire::kCallAsync);
}

template <Api A>
CUresult ctxSynchronize()
{
    return forwardCall<A, decltype(&::cuCtxSynchronize)>([](CallScope&) {});
}

template <Api A>
CUresult ctxSynchronizeV2(CUcontext ctx)
{
    return forwardCall<A, decltype(&::cuCtxSynchronize_v2)>([&](CallScope& s) { waitsOn(s, ctx); }, ctx);
}

// Stream synchronize and query: the stream is waited on (or polled).
template <Api A, class Fn>
CUresult onStreamCall(CUstream stream)
{
    return forwardCall<A, Fn>([&](CallScope& s) { onStream(s, stream); }, stream);
}

// Stream synchronize: where untimed work may still be queued, an event marks when the stream drained
// (the end of its last operation: the device timeline's firmest anchor, collector/timeline/device_timeline.h).
template <Api A, class Fn>
CUresult streamSynchronize(CUstream stream)
{
    return forwardCall<A, Fn>([&](CallScope& s) {
        onStream(s, stream);
        gpuMarkDrain(s, stream);
    }, stream);
}

// Event synchronize and query.
template <Api A, class Fn>
CUresult onEventCall(CUevent e)
{
    return forwardCall<A, Fn>([&](CallScope& s) { waitsOn(s, e); }, e);
}

// The stream now also waits for another: its next operation may start later than the last one
// ended, so GPU timing must not reuse the last end event as the next start (recording or not).
template <Api A>
CUresult streamWaitEvent(CUstream stream, CUevent e, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamWaitEvent)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        waitsOn(s, e);
        s.setStream(stream);
        if (flags & CU_EVENT_WAIT_EXTERNAL) noteCapturedEventNode(s, stream, wire::kEventNodeWait);
    }
    gpuStreamTouched(stream, kApis[size_t(A)].perThread);
    s.beforeReal();
    return s.finish(real(stream, e, flags));
}

template <Api A>
CUresult eventRecord(CUevent e, CUstream stream)
{
    return forwardCall<A, decltype(&::cuEventRecord)>([&](CallScope& s) { recordsInto(s, e, stream); }, e, stream);
}

template <Api A>
CUresult eventRecordWithFlags(CUevent e, CUstream stream, unsigned int flags)
{
    return forwardCall<A, decltype(&::cuEventRecordWithFlags)>([&](CallScope& s) {
        recordsInto(s, e, stream);
        if (flags & CU_EVENT_RECORD_EXTERNAL) noteCapturedEventNode(s, stream, wire::kEventNodeRecord);
    }, e, stream, flags);
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(ctxSynchronize, cuCtxSynchronize, (void), ())
GS_WRAP(ctxSynchronizeV2, cuCtxSynchronize_v2, (CUcontext c), (c))
GS_WRAP_TYPED(streamSynchronize, cuStreamSynchronize, cuStreamSynchronize, (CUstream s), (s))
GS_WRAP_TYPED(streamSynchronize, cuStreamSynchronize, cuStreamSynchronize_ptsz, (CUstream s), (s))
GS_WRAP_TYPED(onEventCall, cuEventSynchronize, cuEventSynchronize, (CUevent e), (e))
GS_WRAP(streamWaitEvent, cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int f), (s, e, f))
GS_WRAP(streamWaitEvent, cuStreamWaitEvent_ptsz, (CUstream s, CUevent e, unsigned int f), (s, e, f))
GS_WRAP_TYPED(onStreamCall, cuStreamQuery, cuStreamQuery, (CUstream s), (s))
GS_WRAP_TYPED(onStreamCall, cuStreamQuery, cuStreamQuery_ptsz, (CUstream s), (s))
GS_WRAP_TYPED(onEventCall, cuEventQuery, cuEventQuery, (CUevent e), (e))
GS_WRAP(eventRecord, cuEventRecord, (CUevent e, CUstream s), (e, s))
GS_WRAP(eventRecord, cuEventRecord_ptsz, (CUevent e, CUstream s), (e, s))
GS_WRAP(eventRecordWithFlags, cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned int f), (e, s, f))
GS_WRAP(eventRecordWithFlags, cuEventRecordWithFlags_ptsz, (CUevent e, CUstream s, unsigned int f), (e, s, f))
