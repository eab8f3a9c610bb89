// shim/hooks/stream_ops.cpp: stream-ordered entry points NVIDIA's libraries use beside launches and
// copies (stream memory operations, callbacks, external semaphores, context-wide events, graph
// uploads) and the virtual-address calls NCCL maps its buffers with: each recorded with its stream and
// the object it acts on, so that the API summary has a row for it.
#include "shim/hooks/hook_util.h"

#include <atomic>

namespace gpuspy::shim {
namespace {

// A call on a stream acting on `object` (an address, an event, a semaphore array, an exec).
template <Api A, class Fn, class... Args>
CUresult onStream(CUstream stream, const void* object, Args... args)
{
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            s.setStream(stream);
            s.setFlags(wire::kCallAsync);
            s.body().args.sync.object = uint64_t(uintptr_t(object));
        },
        args...);
}

// A write-value is device work (a few bytes written in stream order): timed like a copy. The address is
// the object, which the device timeline matches the waits on it against.
template <Api A, class V>
CUresult streamWrite(CUstream stream, CUdeviceptr addr, V value, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<CUresult (*)(CUstream, CUdeviceptr, V, unsigned int)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        s.body().args.sync.object = uint64_t(addr);
        s.setStream(stream);
        s.setFlags(wire::kCallDeviceWork | wire::kCallAsync);
        gpuBefore(s, stream, GpuTiming::Preferred);
    }
    s.beforeReal();
    return s.finish(real(stream, addr, value, flags));
}

// A wait-value holds the stream until the value is written, without occupying the device: never timed,
// and the stream's next operation may start later than its last one ended, so GPU timing must not reuse
// that end as the next start (as for cuStreamWaitEvent).
template <Api A, class V>
CUresult streamWait(CUstream stream, CUdeviceptr addr, V value, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<CUresult (*)(CUstream, CUdeviceptr, V, unsigned int)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        s.body().args.sync.object = uint64_t(addr);
        s.setStream(stream);
        s.setFlags(wire::kCallAsync);
    }
    gpuStreamTouched(stream, kApis[size_t(A)].perThread);
    s.beforeReal();
    return s.finish(real(stream, addr, value, flags));
}

// A batch of writes only is timed as one piece of device work; one that waits holds its stream like a
// wait-value (its writes then run untimed: a span would hold the wait as GPU time). The object is the
// first write's address, else the first wait's, as for the single operations (the device timeline takes
// a batch that writes as a write, one that only waits as a wait).
template <Api A>
CUresult batchMemOp(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* ops, unsigned int flags)
{
    bool waits = false, writes = false;
    CUdeviceptr waited = 0, written = 0;
    for (unsigned int i = 0; ops && i < count; ++i) {
        const auto op = ops[i].operation;
        if ((op == CU_STREAM_MEM_OP_WAIT_VALUE_32 || op == CU_STREAM_MEM_OP_WAIT_VALUE_64) && !waits) {
            waits = true;
            waited = ops[i].waitValue.address;
        }
        if ((op == CU_STREAM_MEM_OP_WRITE_VALUE_32 || op == CU_STREAM_MEM_OP_WRITE_VALUE_64) && !writes) {
            writes = true;
            written = ops[i].writeValue.address;
        }
    }
    CallScope s(A);
    auto real = realAs<decltype(&::cuStreamBatchMemOp_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        s.body().args.sync.object = uint64_t(writes ? written : waited);
        s.setStream(stream);
        s.setFlags(wire::kCallAsync | (writes ? wire::kCallDeviceWork : 0));
        if (writes && !waits) gpuBefore(s, stream, GpuTiming::Preferred);
    }
    if (waits) gpuStreamTouched(stream, kApis[size_t(A)].perThread);
    s.beforeReal();
    return s.finish(real(stream, count, ops, flags));
}

template <Api A>
CUresult addCallback(CUstream stream, CUstreamCallback fn, void* user, unsigned int flags)
{
    return onStream<A, decltype(&::cuStreamAddCallback)>(stream, reinterpret_cast<const void*>(fn), stream, fn, user, flags);
}

template <Api A>
CUresult graphUpload(CUgraphExec exec, CUstream stream)
{
    return onStream<A, decltype(&::cuGraphUpload)>(stream, exec, exec, stream);
}

template <Api A>
CUresult signalSemaphores(const CUexternalSemaphore* sems, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params,
                          unsigned int n, CUstream stream)
{
    return onStream<A, decltype(&::cuSignalExternalSemaphoresAsync)>(stream, sems, sems, params, n, stream);
}

template <Api A>
CUresult waitSemaphores(const CUexternalSemaphore* sems, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* params, unsigned int n,
                        CUstream stream)
{
    return onStream<A, decltype(&::cuWaitExternalSemaphoresAsync)>(stream, sems, sems, params, n, stream);
}

template <Api A>
CUresult ctxEvent(CUcontext ctx, CUevent event)
{
    return forwardCall<A, decltype(&::cuCtxRecordEvent)>(
        [&](CallScope& s) { s.body().args.sync.object = uint64_t(uintptr_t(event)); }, ctx, event);
}

// Discards name their first range as the object (the API summary's row; no bytes move).
template <Api A>
CUresult discardBatch(CUdeviceptr* d, size_t* sizes, size_t n, unsigned long long flags, CUstream stream)
{
    return onStream<A, decltype(&::cuMemDiscardBatchAsync)>(stream, d && n ? reinterpret_cast<const void*>(d[0]) : nullptr,
                                                            d, sizes, n, flags, stream);
}

template <Api A>
CUresult discardAndPrefetchBatch(CUdeviceptr* d, size_t* sizes, size_t n, CUmemLocation* locs, size_t* locIdxs,
                                 size_t numLocs, unsigned long long flags, CUstream stream)
{
    return onStream<A, decltype(&::cuMemDiscardAndPrefetchBatchAsync)>(
        stream, d && n ? reinterpret_cast<const void*>(d[0]) : nullptr, d, sizes, n, locs, locIdxs, numLocs, flags, stream);
}

// Green contexts (cuDNN): record and wait act on the green context's work as cuEventRecord and
// cuStreamWaitEvent do on a stream's (recorded the same way: the event as the object, the green context
// in the record's stream field, where the device timeline looks for its streams). A wait makes every
// stream of the green context start its next operation possibly later than its last one ended: GPU
// timing must not reuse that end as the next start, so the streams each green context made are kept
// (a fixed table: a stream beyond it is only not forgotten by the wait).
struct GreenStream {
    std::atomic<uintptr_t> green{0};
    std::atomic<uintptr_t> stream{0};
};
constexpr size_t kGreenStreams = 1024;
GreenStream g_greenStreams[kGreenStreams];

void rememberGreenStream(CUgreenCtx g, CUstream stream)
{
    for (GreenStream& e : g_greenStreams) {
        uintptr_t expected = 0;
        if (e.green.compare_exchange_strong(expected, uintptr_t(g), std::memory_order_acq_rel)) {
            e.stream.store(uintptr_t(stream), std::memory_order_release);
            return;
        }
    }
}

void forgetGreen(CUgreenCtx g)
{
    for (GreenStream& e : g_greenStreams)
        if (e.green.load(std::memory_order_acquire) == uintptr_t(g)) {
            e.stream.store(0, std::memory_order_release);
            e.green.store(0, std::memory_order_release);
        }
}

template <Api A>
CUresult greenEvent(CUgreenCtx ctx, CUevent event)
{
    return forwardCall<A, decltype(&::cuGreenCtxRecordEvent)>(
        [&](CallScope& s) {
            s.body().args.sync.object = uint64_t(uintptr_t(event));
            s.setStream(reinterpret_cast<CUstream>(ctx));
        },
        ctx, event);
}

template <Api A>
CUresult greenWait(CUgreenCtx ctx, CUevent event)
{
    for (GreenStream& e : g_greenStreams)
        if (e.green.load(std::memory_order_acquire) == uintptr_t(ctx))
            if (const uintptr_t st = e.stream.load(std::memory_order_acquire)) gpuStreamTouched(reinterpret_cast<CUstream>(st), false);
    return greenEvent<A>(ctx, event);
}

// The stream made is the record's stream, the green context its object.
template <Api A>
CUresult greenStreamCreate(CUstream* ps, CUgreenCtx g, unsigned int flags, int priority)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuGreenCtxStreamCreate)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) s.body().args.sync.object = uint64_t(uintptr_t(g));
    s.beforeReal();
    const CUresult rc = real(ps, g, flags, priority);
    if (rc == CUDA_SUCCESS && ps) {
        if (s.active()) s.setStream(*ps);
        rememberGreenStream(g, *ps);
    }
    return s.finish(rc);
}

// A stream made (wire/format.h, kStreamFlagsSlot): the record's stream is the new one, with its flags
// (CU_STREAM_NON_BLOCKING or not: the legacy default stream waits for and holds up only the blocking ones)
// and priority.
static_assert(wire::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
template <Api A, class Fn, class... Priority>
CUresult streamCreate(CUstream* ps, unsigned int flags, Priority... priority)
{
    return forwardThen<A, Fn>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            if (rc != CUDA_SUCCESS || !ps) return;
            gpuStreamMade(*ps, flags);
            if (!s.active()) return;
            s.setStream(*ps);
            s.body().args.raw[wire::kStreamFlagsSlot] = flags;
            ((s.body().args.raw[wire::kStreamPrioritySlot] = uint64_t(int64_t(priority))), ...);
        },
        ps, flags, priority...);
}

// The stream's timing state (its last end event, its context) goes first: its handle may come back
// for a stream of another context.
template <Api A>
CUresult streamDestroy(CUstream stream)
{
    gpuStreamDestroyed(stream);
    return forwardCall<A, decltype(&::cuStreamDestroy_v2)>([&](CallScope& s) { s.setStream(stream); }, stream);
}

template <Api A, class Fn, class Handle, class... Args>
CUresult onHandle(Handle h, Args... args)
{
    return forwardCall<A, Fn>([&](CallScope& s) { s.body().args.sync.object = uint64_t(uintptr_t(h)); }, args...);
}

template <Api A>
CUresult addressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemAddressReserve)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(ptr, size, alignment, addr, flags);
    if (s.active() && rc == CUDA_SUCCESS && ptr) {
        s.body().args.alloc.ptr = *ptr;
        s.body().args.alloc.bytes = size;
        s.body().args.alloc.mem = wire::MemKind::Device;
    }
    return s.finish(rc);
}

// The reservation's release: address space given back (the report's VMM reservation per device).
template <Api A>
CUresult addressFree(CUdeviceptr ptr, size_t size)
{
    return forwardCall<A, decltype(&::cuMemAddressFree)>(
        [&](CallScope& s) {
            s.body().args.alloc.ptr = ptr;
            s.body().args.alloc.bytes = size;
            s.body().args.alloc.mem = wire::MemKind::Device;
        },
        ptr, size);
}

template <Api A>
CUresult setAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count)
{
    return forwardCall<A, decltype(&::cuMemSetAccess)>(
        [&](CallScope& s) {
            s.body().args.alloc.ptr = ptr;
            s.body().args.alloc.bytes = size;
            s.body().args.alloc.mem = wire::MemKind::Device;
        },
        ptr, size, desc, count);
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

#define GS_STREAM_VALUE(abi, how, V)                                                                    \
    GS_EXPORT CUresult abi(CUstream s, CUdeviceptr a, V v, unsigned int f) { return how<Api::abi, V>(s, a, v, f); }
GS_STREAM_VALUE(cuStreamWaitValue32_v2, streamWait, cuuint32_t)
GS_STREAM_VALUE(cuStreamWaitValue32_v2_ptsz, streamWait, cuuint32_t)
GS_STREAM_VALUE(cuStreamWaitValue64_v2, streamWait, cuuint64_t)
GS_STREAM_VALUE(cuStreamWaitValue64_v2_ptsz, streamWait, cuuint64_t)
GS_STREAM_VALUE(cuStreamWriteValue32_v2, streamWrite, cuuint32_t)
GS_STREAM_VALUE(cuStreamWriteValue32_v2_ptsz, streamWrite, cuuint32_t)
GS_STREAM_VALUE(cuStreamWriteValue64_v2, streamWrite, cuuint64_t)
GS_STREAM_VALUE(cuStreamWriteValue64_v2_ptsz, streamWrite, cuuint64_t)
#undef GS_STREAM_VALUE
GS_WRAP_TYPED(streamCreate, cuStreamCreate, cuStreamCreate, (CUstream* p, unsigned int f), (p, f))
GS_WRAP_TYPED(streamCreate, cuStreamCreateWithPriority, cuStreamCreateWithPriority, (CUstream* p, unsigned int f, int prio),
              (p, f, prio))
GS_WRAP(batchMemOp, cuStreamBatchMemOp_v2, (CUstream s, unsigned int n, CUstreamBatchMemOpParams* p, unsigned int f), (s, n, p, f))
GS_WRAP(batchMemOp, cuStreamBatchMemOp_v2_ptsz, (CUstream s, unsigned int n, CUstreamBatchMemOpParams* p, unsigned int f),
        (s, n, p, f))
GS_WRAP(addCallback, cuStreamAddCallback, (CUstream s, CUstreamCallback c, void* u, unsigned int f), (s, c, u, f))
GS_WRAP(addCallback, cuStreamAddCallback_ptsz, (CUstream s, CUstreamCallback c, void* u, unsigned int f), (s, c, u, f))
GS_WRAP(graphUpload, cuGraphUpload, (CUgraphExec e, CUstream s), (e, s))
GS_WRAP(graphUpload, cuGraphUpload_ptsz, (CUgraphExec e, CUstream s), (e, s))
GS_WRAP(signalSemaphores, cuSignalExternalSemaphoresAsync,
        (const CUexternalSemaphore* e, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* p, unsigned int n, CUstream s), (e, p, n, s))
GS_WRAP(signalSemaphores, cuSignalExternalSemaphoresAsync_ptsz,
        (const CUexternalSemaphore* e, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* p, unsigned int n, CUstream s), (e, p, n, s))
GS_WRAP(waitSemaphores, cuWaitExternalSemaphoresAsync,
        (const CUexternalSemaphore* e, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* p, unsigned int n, CUstream s), (e, p, n, s))
GS_WRAP(waitSemaphores, cuWaitExternalSemaphoresAsync_ptsz,
        (const CUexternalSemaphore* e, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* p, unsigned int n, CUstream s), (e, p, n, s))
GS_WRAP(ctxEvent, cuCtxRecordEvent, (CUcontext c, CUevent e), (c, e))
GS_WRAP(ctxEvent, cuCtxWaitEvent, (CUcontext c, CUevent e), (c, e))
GS_WRAP(addressReserve, cuMemAddressReserve, (CUdeviceptr* p, size_t n, size_t a, CUdeviceptr at, unsigned long long f),
        (p, n, a, at, f))
GS_WRAP(addressFree, cuMemAddressFree, (CUdeviceptr p, size_t n), (p, n))
GS_WRAP(setAccess, cuMemSetAccess, (CUdeviceptr p, size_t n, const CUmemAccessDesc* d, size_t c), (p, n, d, c))
GS_WRAP(discardBatch, cuMemDiscardBatchAsync, (CUdeviceptr* d, size_t* sz, size_t n, unsigned long long f, CUstream s),
        (d, sz, n, f, s))
GS_WRAP(discardBatch, cuMemDiscardBatchAsync_ptsz, (CUdeviceptr* d, size_t* sz, size_t n, unsigned long long f, CUstream s),
        (d, sz, n, f, s))
GS_WRAP(discardAndPrefetchBatch, cuMemDiscardAndPrefetchBatchAsync,
        (CUdeviceptr* d, size_t* sz, size_t n, CUmemLocation* l, size_t* li, size_t nl, unsigned long long f, CUstream s),
        (d, sz, n, l, li, nl, f, s))
GS_WRAP(discardAndPrefetchBatch, cuMemDiscardAndPrefetchBatchAsync_ptsz,
        (CUdeviceptr* d, size_t* sz, size_t n, CUmemLocation* l, size_t* li, size_t nl, unsigned long long f, CUstream s),
        (d, sz, n, l, li, nl, f, s))
GS_WRAP(greenEvent, cuGreenCtxRecordEvent, (CUgreenCtx c, CUevent e), (c, e))
GS_WRAP(greenWait, cuGreenCtxWaitEvent, (CUgreenCtx c, CUevent e), (c, e))
GS_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx* g, CUdevResourceDesc d, CUdevice dev, unsigned int f)
{
    return onHandle<Api::cuGreenCtxCreate, decltype(&::cuGreenCtxCreate)>(d, g, d, dev, f);
}
GS_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx g)
{
    forgetGreen(g);
    return onHandle<Api::cuGreenCtxDestroy, decltype(&::cuGreenCtxDestroy)>(g, g);
}
GS_WRAP(greenStreamCreate, cuGreenCtxStreamCreate, (CUstream* s, CUgreenCtx g, unsigned int f, int p), (s, g, f, p))
GS_WRAP(streamDestroy, cuStreamDestroy_v2, (CUstream s), (s))
GS_EXPORT CUresult cuCtxFromGreenCtx(CUcontext* c, CUgreenCtx g)
{
    return onHandle<Api::cuCtxFromGreenCtx, decltype(&::cuCtxFromGreenCtx)>(g, c, g);
}
