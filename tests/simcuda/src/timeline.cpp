// The device timeline: streams as in-order queues on CLOCK_MONOTONIC, events, host blocking, and the stream/event API.
//
// Completion times are computed at submission, so no worker thread exists: an op starts at
// max(submit + launch latency, the stream's tail, legacy-stream ordering) and ends a modelled time later.
#include "sim.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace simcuda {
namespace {

std::atomic<unsigned long long> g_nextStreamId{16};

Event* asEvent(CUevent e) { return liveHandle<Event>(e, HandleKind::Event); }

// Per-thread default streams: this thread's last one, so finding it again takes no lock.
struct PerThreadCache {
    Context* ctx = nullptr;
    Stream* stream = nullptr;
    unsigned forkGen = 0;
};
thread_local PerThreadCache t_perThread;

// The legacy stream waits for every blocking stream of its context; blocking streams wait for the legacy stream.
Ns legacyOrdering(Stream* s, Ns t)
{
    Context* c = s->ctx;
    if (s->legacy) {
        for (Stream* other : c->streams)
            if (other != s && other->blocking()) t = std::max(t, other->tail);
    } else if (s->blocking()) {
        t = std::max(t, c->legacy->tail);
    }
    return t;
}

CUresult captureCheck(Stream* s)
{
    if (s->capture) {
        invalidateCapture(s);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return CUDA_SUCCESS;
}

CUresult streamSynchronize(CUstream h, bool pt, const ApiScope& scope)
{
    Lock g(bigLock());
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    if (CUresult rc = captureCheck(s)) return rc;
    settleHeld(g, s, nullptr);
    const Ns target = s->tail;
    const int dev = s->ctx->dev;
    g.unlock();
    blockUntil(target, scope.name(), dev, WaitReason::StreamSync, scope.start(), &scope.api());
    trimPools();
    return CUDA_SUCCESS;
}

CUresult streamQuery(CUstream h, bool pt)
{
    Lock g(bigLock());
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    if (CUresult rc = captureCheck(s)) return rc;
    if (s->held && stillHeld(s)) return CUDA_ERROR_NOT_READY;
    return nowNs() >= s->tail ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult streamWaitEvent(CUstream h, CUevent he, unsigned flags, bool pt)
{
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    Event* e = asEvent(he);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    if (s->capture && (flags & CU_EVENT_WAIT_EXTERNAL)) {
        // CUDA: captured as an event wait node (of any event), not as a dependency.
        Op op;
        eventNodeOp(he, OpKind::EventWait, &op);
        captureOp(s->capture, std::move(op));
        return CUDA_SUCCESS;
    }
    if (e->capturedIn) {
        // Joining a capture: the fork/join pattern cudaStreamWaitEvent uses to capture several streams into one graph.
        if (!s->capture) s->capture = e->capturedIn;
        return CUDA_SUCCESS;
    }
    if (e->heldBy && !s->capture && stillHeld(e->heldBy)) {
        waitForHeldEvent(s, e);  // held in turn until the record is placed
        return CUDA_SUCCESS;
    }
    if (e->recorded && !s->capture) s->tail = std::max(s->tail, e->time);
    return CUDA_SUCCESS;
}

// Stream properties that never change after creation: no lock.
template <class T>
CUresult streamGet(CUstream h, bool pt, T* out, T (*get)(Stream*))
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    *out = get(s);
    return CUDA_SUCCESS;
}

CUresult streamCreate(CUstream* ph, unsigned flags, int priority)
{
    if (!ph) return CUDA_ERROR_INVALID_VALUE;
    Context* c = currentContext();
    if (!c) return noContextError();
    Stream* s;
    {
        Lock g(bigLock());
        s = newStream(c, flags, priority);
    }
    *ph = reinterpret_cast<CUstream>(s);
    return CUDA_SUCCESS;
}

CUresult streamDestroy(CUstream h)
{
    if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, false, &s)) return rc;
    if (s->legacy || s->perThread) return CUDA_ERROR_INVALID_HANDLE;
    // Pending work still completes and still counts for cuCtxSynchronize: the object stays in the context, unreachable.
    retireHandle(s);
    return CUDA_SUCCESS;
}

CUresult eventRecord(CUevent he, CUstream h, unsigned flags, bool pt, const ApiScope& scope)
{
    if (flags & ~unsigned(CU_EVENT_RECORD_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
    Event* e = asEvent(he);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    // A timing event costs what the config says; a CU_EVENT_DISABLE_TIMING one a tenth of it (2500 vs 250 ns by default).
    spinFor((e->flags & CU_EVENT_DISABLE_TIMING) ? hostCostOf(scope.api()) / 10 : hostCostOf(scope.api()));
    Lock g(bigLock());
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    // As CUDA: an event can be recorded only on a stream of the context it was made in (whichever is
    // current): another device's stream is refused.
    if (s->ctx != e->ctx) return CUDA_ERROR_INVALID_HANDLE;
    if (s->capture) {
        if (flags & CU_EVENT_RECORD_EXTERNAL) {
            // CUDA: captured as an event record node; a plain record only marks a point of the capture
            // that other streams may join (a dependency, no node).
            Op op;
            eventNodeOp(he, OpKind::EventRecord, &op);
            captureOp(s->capture, std::move(op));
        }
        e->capturedIn = s->capture;
        return CUDA_SUCCESS;
    }
    if (s->held && stillHeld(s)) {
        // Completes after the held work: its time is known once a write releases the stream.
        e->capturedIn = nullptr;
        deferRecord(s, e, submissionInstant(0));
        return CUDA_SUCCESS;
    }
    e->heldBy = nullptr;
    // The stream's tail if work is pending on it, else the submission instant + launch latency (then the
    // legacy-stream rules).
    const Ns now = submissionInstant(0);
    const Ns t = legacyOrdering(s, s->tail > now ? s->tail : now + config().launchLatency);
    s->tail = std::max(s->tail, t);
    e->time = t;
    e->recorded = true;
    e->capturedIn = nullptr;
    return CUDA_SUCCESS;
}

CUresult eventElapsed(float* ms, CUevent a, CUevent b)
{
    if (!ms) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    Event *ea = asEvent(a), *eb = asEvent(b);
    if (!ea || !eb) return CUDA_ERROR_INVALID_HANDLE;
    if ((ea->flags | eb->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    if (!ea->recorded || !eb->recorded) return CUDA_ERROR_INVALID_HANDLE;
    if ((ea->heldBy && stillHeld(ea->heldBy)) || (eb->heldBy && stillHeld(eb->heldBy))) return CUDA_ERROR_NOT_READY;
    const Ns now = nowNs();
    if (now < ea->time || now < eb->time) return CUDA_ERROR_NOT_READY;
    *ms = static_cast<float>(static_cast<double>(eb->time - ea->time) / 1e6);
    return CUDA_SUCCESS;
}

CUresult eventDestroy(CUevent he)
{
    Event* e = asEvent(he);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    retireHandle(e);  // leaked: a stream may still name it in a cudart structure
    return CUDA_SUCCESS;
}

CUresult hostFunc(CUstream h, bool pt, std::function<void()> fn, const char* api)
{
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    Op op;
    op.kind = OpKind::HostFunc;
    op.duration = config().hostFuncNs;
    op.hostFn = std::move(fn);
    return submitOp(s, std::move(op), api);
}

}  // namespace

Stream* newStream(Context* ctx, unsigned flags, int priority)
{
    auto* s = new Stream;
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority;
    s->id = g_nextStreamId++;
    Lock g(bigLock());
    ctx->streams.push_back(s);
    registerHandle(s, HandleKind::Stream);
    return s;
}

CUresult lookupStream(CUstream h, bool perThreadDefault, Stream** out, Context* ctx)
{
    *out = nullptr;
    if (!h) h = perThreadDefault ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        if (!ctx) ctx = currentContext();
        if (!ctx) return noContextError();
        if (ctx->destroyed.load(std::memory_order_acquire)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
        if (h == CU_STREAM_LEGACY) {
            *out = ctx->legacy;
            return CUDA_SUCCESS;
        }
        PerThreadCache& cache = t_perThread;
        const unsigned gen = forkGeneration();  // a forked child's thread is a new thread with its own stream
        if (cache.ctx == ctx && cache.forkGen == gen) {
            *out = cache.stream;
            return CUDA_SUCCESS;
        }
        Lock g(bigLock());
        Stream*& pt = ctx->perThread[threadId()];
        if (!pt) {
            pt = newStream(ctx, 0, 0);
            pt->perThread = true;
        }
        cache = {ctx, pt, gen};
        *out = pt;
        return CUDA_SUCCESS;
    }
    auto* s = static_cast<Stream*>(static_cast<void*>(h));
    switch (handleState(s, HandleKind::Stream)) {
    case HandleState::Unknown:
    case HandleState::Destroyed: return CUDA_ERROR_INVALID_HANDLE;
    case HandleState::Live: break;
    }
    if (s->ctx->destroyed.load(std::memory_order_acquire)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *out = s;
    return CUDA_SUCCESS;
}

Ns streamReadyTime(Stream* s, Ns submit)
{
    return legacyOrdering(s, std::max(submit + config().launchLatency, s->tail));
}

Ns contextTail(Context* c)
{
    Ns t = 0;
    for (Stream* s : c->streams) t = std::max(t, s->tail);
    return t;
}

void blockUntil(Ns target, const char* apiName, int dev, WaitReason reason, Ns callStart, const ApiInfo* costIfIdle)
{
    (void)callStart;
    const Ns start = nowNs();
    if (target > start) waitUntil(target);
    else if (costIfIdle) spinFor(hostCostOf(*costIfIdle));
    traceWait(apiName, dev, start, nowNs(), reason);
}

void syncContextForFree(Context* c, const char* apiName, WaitReason reason)
{
    Lock g(bigLock());
    if (!c) c = currentContext();
    const Ns target = c ? contextTail(c) : 0;
    const int dev = c ? c->dev : 0;
    g.unlock();
    blockUntil(target, apiName, dev, reason, 0, nullptr);
}

Ns placeOp(Stream* s, const Op& op, const char* apiName, Ns submit, bool fromGraph, Ns* startOut, pid_t tid)
{
    const Ns start = streamReadyTime(s, submit);
    Ns coupledEnd = 0;
    if (placeCoupled(s, op, apiName, submit, fromGraph, start, tid, &coupledEnd)) {
        if (startOut) *startOut = start;
        return coupledEnd;
    }
    const Ns end = start + op.duration;
    s->tail = end;
    traceOp(op, apiName, s->ctx->dev, s->ctx->id, s->id, submit, start, end, fromGraph, tid);
    if (op.kind == OpKind::MemOp) valueWritten(op.memopAddr, end);
    if (startOut) *startOut = start;
    return end;
}

namespace {

// A graph's event record or wait node: no device work, no time on the stream. A record marks the
// stream's tail (where the work before it ends); a wait holds the stream's next work until the event.
CUresult runEventNode(Stream* s, const Op& op, const char* apiName)
{
    Lock g(bigLock());
    const Ns at = std::max(s->tail, nowNs());
    if (Event* e = asEvent(op.event)) {
        if (op.kind == OpKind::EventRecord) {
            e->time = at;
            e->recorded = true;
            e->capturedIn = nullptr;
        } else if (e->recorded) {
            s->tail = std::max(s->tail, e->time);
        }
    }
    traceGraphEvent(op, apiName, s->ctx->dev, s->id, at);
    return CUDA_SUCCESS;
}

}  // namespace

CUresult submitOp(Stream* s, Op op, const char* apiName, bool fromGraph)
{
    {
        Lock g(bigLock());
        if (s->capture) {
            // Work on a capturing stream becomes a graph node; a call that must block cannot be captured.
            if (op.sync) {
                invalidateCapture(s);
                return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
            }
            captureOp(s->capture, std::move(op));
            return CUDA_SUCCESS;
        }
        // A graph's event node on a stream held by a wait-value (not modelled): it runs now, at the
        // stream's tail, rather than being deferred as work (it has none).
        if (s->held && stillHeld(s) && op.kind != OpKind::EventRecord && op.kind != OpKind::EventWait) {
            if (!op.sync && !(op.hostFn && !fromGraph)) {
                // Queued behind an unsatisfied wait: placed (and its bytes moved) when a write releases the stream.
                deferWork(s, std::move(op), apiName, submissionInstant(0), fromGraph);
                return CUDA_SUCCESS;
            }
            // A call that blocks on a held stream waits for its release, as on a device.
            settleHeld(g, s, nullptr);
        }
    }
    if (op.kind == OpKind::EventRecord || op.kind == OpKind::EventWait) return runEventNode(s, op, apiName);
    // Bytes move before the work is submitted, outside the lock (a large copy must not stall other
    // threads' calls). On a GPU an async call returns as soon as its work is queued and the device
    // starts it after that; moving the bytes after the submission time would put the modelled work
    // inside the call's own host time, which no real device does.
    if (op.effect) op.effect();
    Lock g(bigLock());
    // A call that returns once its work is queued submits at its return (submissionInstant); one that
    // blocks (a synchronous copy, a host function run here) submits now and waits after that.
    // A graph's host node does not block its launch (a real driver runs it on a thread of its own): it
    // runs at once, as copies move their bytes at submission; its time on the stream is the modelled one.
    const bool hostWaits = op.hostFn && !fromGraph;
    const Ns submit = op.sync || hostWaits ? nowNs() : submissionInstant(1);
    Ns start = 0;
    const Ns end = placeOp(s, op, apiName, submit, fromGraph, &start);
    const int dev = s->ctx->dev;
    g.unlock();
    if (op.hostFn && !hostWaits) op.hostFn();
    if (hostWaits) {
        // Host functions run on the submitting thread once their simulated start time has come.
        waitUntil(start);
        op.hostFn();
        const Ns done = nowNs();
        if (done > end) {
            Lock g2(bigLock());
            s->tail = std::max(s->tail, done);
        }
    }
    if (op.sync) blockUntil(end, apiName, dev, op.reason, 0, nullptr);
    return CUDA_SUCCESS;
}

}  // namespace simcuda

using namespace simcuda;

// ---- streams
SIM_EXPORT CUresult cuStreamCreate(CUstream* ph, unsigned flags)
{
    SIM_API(cuStreamCreate);
    return scope.ret(streamCreate(ph, flags, 0));
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream* ph, unsigned flags, int priority)
{
    SIM_API(cuStreamCreateWithPriority);
    return scope.ret(streamCreate(ph, flags, std::max(-5, std::min(0, priority))));
}

SIM_EXPORT CUresult cuStreamDestroy(CUstream h)
{
    SIM_API(cuStreamDestroy);
    return scope.ret(streamDestroy(h));
}

SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream h)
{
    SIM_API(cuStreamDestroy_v2);
    return scope.ret(streamDestroy(h));
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream h)
{
    SIM_API_MANUAL(cuStreamSynchronize, true);
    return scope.ret(streamSynchronize(h, false, scope));
}

SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h)
{
    SIM_API_MANUAL(cuStreamSynchronize_ptsz, true);
    return scope.ret(streamSynchronize(h, true, scope));
}

SIM_PAIR(cuStreamQuery, cuStreamQuery_ptsz, (CUstream h), streamQuery(h, pt))
SIM_PAIR(cuStreamWaitEvent, cuStreamWaitEvent_ptsz, (CUstream h, CUevent e, unsigned flags), streamWaitEvent(h, e, flags, pt))
SIM_PAIR(cuStreamGetFlags, cuStreamGetFlags_ptsz, (CUstream h, unsigned* f),
                streamGet<unsigned>(h, pt, f, [](Stream* s) { return s->flags; }))
SIM_PAIR(cuStreamGetPriority, cuStreamGetPriority_ptsz, (CUstream h, int* p),
                streamGet<int>(h, pt, p, [](Stream* s) { return s->priority; }))
SIM_PAIR(cuStreamGetId, cuStreamGetId_ptsz, (CUstream h, unsigned long long* id),
                streamGet<unsigned long long>(h, pt, id, [](Stream* s) { return s->id; }))
SIM_PAIR(cuStreamGetCtx, cuStreamGetCtx_ptsz, (CUstream h, CUcontext* c),
                streamGet<CUcontext>(h, pt, c, [](Stream* s) { return reinterpret_cast<CUcontext>(s->ctx); }))
SIM_PAIR(cuStreamGetDevice, cuStreamGetDevice_ptsz, (CUstream h, CUdevice* d),
                streamGet<CUdevice>(h, pt, d, [](Stream* s) { return static_cast<CUdevice>(s->ctx->dev); }))
SIM_PAIR(cuStreamGetCtx_v2, cuStreamGetCtx_v2_ptsz, (CUstream h, CUcontext* c, CUgreenCtx* gc),
                (gc ? (*gc = nullptr, 0) : 0,
                 streamGet<CUcontext>(h, pt, c, [](Stream* s) { return reinterpret_cast<CUcontext>(s->ctx); })))
SIM_PAIR(cuStreamAttachMemAsync, cuStreamAttachMemAsync_ptsz, (CUstream h, CUdeviceptr, size_t, unsigned),
                streamStatus(h, pt))
SIM_PAIR(cuStreamGetAttribute, cuStreamGetAttribute_ptsz, (CUstream h, CUstreamAttrID, CUstreamAttrValue* v),
                !v ? CUDA_ERROR_INVALID_VALUE : ((void)memset(v, 0, sizeof *v), streamStatus(h, pt)))
SIM_PAIR(cuStreamSetAttribute, cuStreamSetAttribute_ptsz, (CUstream h, CUstreamAttrID, const CUstreamAttrValue*),
                streamStatus(h, pt))
SIM_PAIR(cuStreamCopyAttributes, cuStreamCopyAttributes_ptsz, (CUstream dst, CUstream src),
                streamStatus(dst, pt) ? streamStatus(dst, pt) : streamStatus(src, pt))
SIM_PAIR(cuLaunchHostFunc, cuLaunchHostFunc_ptsz, (CUstream h, CUhostFn fn, void* ud),
                fn ? hostFunc(h, pt, [fn, ud] { fn(ud); }, scope.name()) : CUDA_ERROR_INVALID_VALUE)
SIM_PAIR(cuStreamAddCallback, cuStreamAddCallback_ptsz, (CUstream h, CUstreamCallback cb, void* ud, unsigned),
                cb ? hostFunc(h, pt, [cb, h, ud] { cb(h, CUDA_SUCCESS, ud); }, scope.name()) : CUDA_ERROR_INVALID_VALUE)

// ---- events
SIM_EXPORT CUresult cuEventCreate(CUevent* pe, unsigned flags)
{
    SIM_API(cuEventCreate);
    if (!pe) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Context* c = currentContext();
    if (!c) return scope.ret(noContextError());
    auto* e = new Event;
    e->flags = flags;
    e->ctx = c;
    registerHandle(e, HandleKind::Event);
    *pe = reinterpret_cast<CUevent>(e);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuEventRecord(CUevent e, CUstream h)
{
    SIM_API_MANUAL(cuEventRecord, true);
    return scope.ret(eventRecord(e, h, 0, false, scope));
}

SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h)
{
    SIM_API_MANUAL(cuEventRecord_ptsz, true);
    return scope.ret(eventRecord(e, h, 0, true, scope));
}

SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned flags)
{
    SIM_API_MANUAL(cuEventRecordWithFlags, true);
    return scope.ret(eventRecord(e, h, flags, false, scope));
}

SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned flags)
{
    SIM_API_MANUAL(cuEventRecordWithFlags_ptsz, true);
    return scope.ret(eventRecord(e, h, flags, true, scope));
}

SIM_EXPORT CUresult cuEventQuery(CUevent he)
{
    SIM_API(cuEventQuery);
    Lock g(bigLock());
    Event* e = asEvent(he);
    if (!e) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    if (e->capturedIn) return scope.ret(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (e->heldBy && stillHeld(e->heldBy)) return scope.ret(CUDA_ERROR_NOT_READY);
    return scope.ret(!e->recorded || nowNs() >= e->time ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent he)
{
    SIM_API_MANUAL(cuEventSynchronize, true);
    Lock g(bigLock());
    Event* e = asEvent(he);
    if (!e) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    if (e->capturedIn) return scope.ret(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (e->heldBy) settleHeld(g, e->heldBy, nullptr);
    const Ns target = e->recorded ? e->time : 0;
    const int dev = e->ctx ? e->ctx->dev : 0;
    g.unlock();
    blockUntil(target, scope.name(), dev, WaitReason::EventSync, scope.start(), &scope.api());
    trimPools();
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuEventDestroy(CUevent e)
{
    SIM_API(cuEventDestroy);
    return scope.ret(eventDestroy(e));
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    SIM_API(cuEventDestroy_v2);
    return scope.ret(eventDestroy(e));
}

SIM_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b)
{
    SIM_API(cuEventElapsedTime);
    return scope.ret(eventElapsed(ms, a, b));
}

SIM_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b)
{
    SIM_API(cuEventElapsedTime_v2);
    return scope.ret(eventElapsed(ms, a, b));
}
