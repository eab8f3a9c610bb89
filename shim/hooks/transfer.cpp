// shim/hooks/transfer.cpp: copies, memsets and prefetches: bytes, direction, host memory kind,
// sync or async, stream; and the GPU time of each (copies are always timed).
#include "shim/hooks/graph_nodes.h"

namespace gpuspy::shim {
namespace {

using wire::Direction;
using wire::MemKind;

MemKind kindOf(const void* p)
{
    const MemKind k = memKindOf(uint64_t(uintptr_t(p)), true);
    return k == MemKind::Unknown ? MemKind::Pageable : k;
}

// Device memory to device memory: between two devices' memory it is a peer copy (the driver tells them
// apart by the pointers, whatever the call's name says).
void deviceToDevice(wire::TransferArgs& t)
{
    const int dd = deviceOfPointer(t.dst), sd = dd < 0 ? -1 : deviceOfPointer(t.src);
    t.direction = dd >= 0 && sd >= 0 && dd != sd ? Direction::PtoP : Direction::DtoD;
    if (t.direction == Direction::PtoP) t.peerDevice = uint32_t(dd);
}

// Unified addressing: the pointers decide the direction (as cuMemcpy itself does).
void describeUnified(CallScope& s, const void* dst, const void* src, size_t bytes)
{
    wire::TransferArgs& t = s.body().args.transfer;
    const MemKind sk = kindOf(src), dk = kindOf(dst);
    t.bytes = bytes;
    t.dst = uint64_t(uintptr_t(dst));
    t.src = uint64_t(uintptr_t(src));
    t.srcMem = sk;
    t.dstMem = dk;
    if (sk == MemKind::Device && dk == MemKind::Device) deviceToDevice(t);
    else if (sk == MemKind::Device) t.direction = Direction::DtoH;
    else if (dk == MemKind::Device) t.direction = Direction::HtoD;
    else if (sk == MemKind::Managed && dk == MemKind::Managed) t.direction = Direction::DtoD;
    else if (sk == MemKind::Managed) t.direction = Direction::DtoH;
    else if (dk == MemKind::Managed) t.direction = Direction::HtoD;
    else t.direction = Direction::HtoH;
}

// The kind of the host side of a transfer (Device for device-to-device).
MemKind hostSide(const wire::TransferArgs& t)
{
    switch (t.direction) {
    case Direction::HtoD: return t.srcMem;
    case Direction::DtoH: return t.dstMem;
    case Direction::HtoH: return t.srcMem == MemKind::Pageable || t.dstMem == MemKind::Pageable ? MemKind::Pageable : MemKind::Pinned;
    default: return MemKind::Device;
    }
}

// Flags and GPU timing common to every copy. A copy that is not *Async blocks the host; an Async
// one from or to pageable memory is staged and blocks as well (CUDA "API synchronization behavior").
void submitCopy(CallScope& s, CUstream stream, bool async)
{
    s.setStream(stream);
    s.setFlags(wire::kCallDeviceWork | (async ? wire::kCallAsync : 0));
    const wire::TransferArgs& t = s.body().args.transfer;
    const bool hostInvolved = t.direction == Direction::HtoD || t.direction == Direction::DtoH || t.direction == Direction::HtoH;
    if (!async || (hostInvolved && hostSide(t) == MemKind::Pageable)) s.setFlags(wire::kCallImplicitSync);
    gpuBefore(s, stream, GpuTiming::Preferred);
}

template <class P>
const void* addr(CUmemorytype type, const void* host, CUdeviceptr dev, const P& p)
{
    (void)p;
    return type == CU_MEMORYTYPE_HOST ? host : reinterpret_cast<const void*>(dev);
}

// A CUDA array is device memory (MemKind::Array): a copy with an array side is HtoD, DtoH or DtoD. The
// entry point's name gives the direction (`forced`: HtoA, AtoD...), else the other side's pointer does
// (device or managed memory: DtoD), as the driver decides it. The array side's address is its handle.
void describeArrayCopy(CallScope& s, CUarray dstArray, const void* dst, CUarray srcArray, const void* src, size_t n,
                       Direction forced)
{
    wire::TransferArgs& t = s.body().args.transfer;
    t.bytes = n;
    t.dst = dstArray ? uint64_t(uintptr_t(dstArray)) : uint64_t(uintptr_t(dst));
    t.src = srcArray ? uint64_t(uintptr_t(srcArray)) : uint64_t(uintptr_t(src));
    t.dstMem = dstArray ? MemKind::Array : kindOf(dst);
    t.srcMem = srcArray ? MemKind::Array : kindOf(src);
    if (dstArray && srcArray) {
        t.direction = Direction::DtoD;
        return;
    }
    MemKind& other = dstArray ? t.srcMem : t.dstMem;
    const bool otherOnDevice = other == MemKind::Device || other == MemKind::Managed;
    t.direction = forced != Direction::Unknown ? forced : otherOnDevice ? Direction::DtoD : dstArray ? Direction::HtoD : Direction::DtoH;
    if (t.direction != Direction::DtoD && other == MemKind::Device) other = MemKind::Pinned;  // mapped pinned memory
    if (t.direction == Direction::DtoD && !otherOnDevice) other = MemKind::Device;
}

template <class C>
void describe2D3D(CallScope& s, const C* c, size_t bytes)
{
    if (!c) return;
    const void* src = addr(c->srcMemoryType, c->srcHost, c->srcDevice, *c);
    const void* dst = addr(c->dstMemoryType, c->dstHost, c->dstDevice, *c);
    const bool srcArray = c->srcMemoryType == CU_MEMORYTYPE_ARRAY, dstArray = c->dstMemoryType == CU_MEMORYTYPE_ARRAY;
    if (srcArray || dstArray) {
        describeArrayCopy(s, dstArray ? c->dstArray : nullptr, dst, srcArray ? c->srcArray : nullptr, src, bytes, Direction::Unknown);
        return;
    }
    describeUnified(s, dst, src, bytes);
}

// The body every copy and memset shares: `describe(CallScope&)` fills the transfer's arguments, then
// the copy is submitted on `stream` (flags, GPU timing), all only while recording.
template <Api A, class Fn, class Describe, class... Args>
CUresult copyCall(CUstream stream, bool async, Describe&& describe, Args... args)
{
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            describe(s);
            submitCopy(s, stream, async);
        },
        args...);
}

const void* ptr(CUdeviceptr p) { return reinterpret_cast<const void*>(p); }
const void* ptr(const void* p) { return p; }

// ---- linear copies
template <Api A>
CUresult memcpyUnified(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copyCall<A, decltype(&::cuMemcpy)>(nullptr, false, [&](CallScope& s) { describeUnified(s, ptr(dst), ptr(src), n); },
                                              dst, src, n);
}

template <Api A>
CUresult memcpyUnifiedAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return copyCall<A, decltype(&::cuMemcpyAsync)>(
        stream, true, [&](CallScope& s) { describeUnified(s, ptr(dst), ptr(src), n); }, dst, src, n, stream);
}

void describePeer(CallScope& s, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
{
    wire::TransferArgs& t = s.body().args.transfer;
    t.bytes = n;
    t.dst = dst;
    t.src = src;
    t.srcMem = t.dstMem = MemKind::Device;
    const int dd = deviceOfContext(dctx), sd = deviceOfContext(sctx);
    t.direction = dd != sd ? Direction::PtoP : Direction::DtoD;
    t.peerDevice = uint32_t(dd < 0 ? 0 : dd);
}

template <Api A>
CUresult memcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
{
    return copyCall<A, decltype(&::cuMemcpyPeer)>(
        nullptr, false, [&](CallScope& s) { describePeer(s, dst, dctx, src, sctx, n); }, dst, dctx, src, sctx, n);
}

template <Api A>
CUresult memcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream stream)
{
    return copyCall<A, decltype(&::cuMemcpyPeerAsync)>(
        stream, true, [&](CallScope& s) { describePeer(s, dst, dctx, src, sctx, n); }, dst, dctx, src, sctx, n, stream);
}

// Explicit directions: the name says HtoD/DtoH/DtoD; the host pointer says pinned or pageable
// (a device pointer given as host memory is mapped pinned memory).
void describeExplicit(CallScope& s, Direction dir, const void* dst, const void* src, size_t n)
{
    wire::TransferArgs& t = s.body().args.transfer;
    t.bytes = n;
    t.dst = uint64_t(uintptr_t(dst));
    t.src = uint64_t(uintptr_t(src));
    t.direction = dir;
    if (dir == Direction::HtoD) {
        t.srcMem = kindOf(src);
        if (t.srcMem == MemKind::Device) t.srcMem = MemKind::Pinned;
        t.dstMem = MemKind::Device;
    } else if (dir == Direction::DtoH) {
        t.dstMem = kindOf(dst);
        if (t.dstMem == MemKind::Device) t.dstMem = MemKind::Pinned;
        t.srcMem = MemKind::Device;
    } else {
        t.srcMem = t.dstMem = MemKind::Device;
        deviceToDevice(t);
    }
}

// One template for the six explicit copies (Fn, the ABI's type, gives Dst and Src).
template <Api A, class Fn, class Dst, class Src>
CUresult memcpyExplicit(Direction dir, Dst dst, Src src, size_t n)
{
    return copyCall<A, Fn>(nullptr, false, [&](CallScope& s) { describeExplicit(s, dir, ptr(dst), ptr(src), n); }, dst, src, n);
}

template <Api A, class Fn, class Dst, class Src>
CUresult memcpyExplicitAsync(Direction dir, Dst dst, Src src, size_t n, CUstream stream)
{
    return copyCall<A, Fn>(stream, true, [&](CallScope& s) { describeExplicit(s, dir, ptr(dst), ptr(src), n); }, dst, src,
                           n, stream);
}

// ---- the linear array copies: byte offsets into an array, the direction in the name
template <Api A, class Fn, class... Args>
CUresult memcpyArray(Direction dir, CUarray dstArray, const void* dst, CUarray srcArray, const void* src, size_t n, bool async,
                     CUstream stream, Args... args)
{
    return copyCall<A, Fn>(
        stream, async, [&](CallScope& s) { describeArrayCopy(s, dstArray, dst, srcArray, src, n, dir); }, args...);
}

// ---- 2D / 3D: a descriptor says where each side is; no descriptor, nothing to describe (the
// driver refuses the call)
size_t bytesOf(const CUDA_MEMCPY2D* c) { return c->WidthInBytes * c->Height; }
template <class C>
size_t bytesOf(const C* c)
{
    return c->WidthInBytes * c->Height * (c->Depth ? c->Depth : 1);
}

template <Api A, class Fn, class C>
CUresult memcpyDescribed(const C* c)
{
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            if (!c) return;
            describe2D3D(s, c, bytesOf(c));
            submitCopy(s, nullptr, false);
        },
        c);
}

template <Api A, class Fn, class C>
CUresult memcpyDescribedAsync(const C* c, CUstream stream)
{
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            if (!c) return;
            describe2D3D(s, c, bytesOf(c));
            submitCopy(s, stream, true);
        },
        c, stream);
}

// ---- batches: one record for the call, the bytes summed; direction from the first pair when all agree
void describeBatch(CallScope& s, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUstream stream)
{
    if (!dsts || !srcs || !sizes || count == 0) return;
    size_t total = 0;
    for (size_t i = 0; i < count; ++i) total += sizes[i];
    describeUnified(s, ptr(dsts[0]), ptr(srcs[0]), total);
    submitCopy(s, stream, true);
}

template <Api A>
CUresult memcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                          size_t* attrIdxs, size_t numAttrs, CUstream stream)
{
    return forwardCall<A, decltype(&::cuMemcpyBatchAsync_v2)>(
        [&](CallScope& s) { describeBatch(s, dsts, srcs, sizes, count, stream); },
        dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, stream);
}

// ---- memsets: the *Async forms are asynchronous; the plain ones block the host until the memset is
// done (the driver waits for it, as for a synchronous copy)
void describeMemset(CallScope& s, CUdeviceptr dst, size_t bytes, CUstream stream, bool async)
{
    wire::TransferArgs& t = s.body().args.transfer;
    t.bytes = bytes;
    t.dst = dst;
    t.direction = Direction::Memset;
    t.dstMem = memKindOf(dst, false);
    if (t.dstMem == MemKind::Pageable) t.dstMem = MemKind::Device;
    t.srcMem = MemKind::Unknown;
    s.setStream(stream);
    s.setFlags(wire::kCallDeviceWork | (async ? wire::kCallAsync : wire::kCallImplicitSync));
    gpuBefore(s, stream, GpuTiming::Preferred);
}

template <Api A, class T>
CUresult memsetD(CUdeviceptr dst, T value, size_t n)
{
    return forwardCall<A, CUresult (*)(CUdeviceptr, T, size_t)>(
        [&](CallScope& s) { describeMemset(s, dst, n * sizeof(T), nullptr, false); }, dst, value, n);
}

template <Api A, class T>
CUresult memsetDAsync(CUdeviceptr dst, T value, size_t n, CUstream stream)
{
    return forwardCall<A, CUresult (*)(CUdeviceptr, T, size_t, CUstream)>(
        [&](CallScope& s) { describeMemset(s, dst, n * sizeof(T), stream, true); }, dst, value, n, stream);
}

template <Api A, class T>
CUresult memsetD2D(CUdeviceptr dst, size_t pitch, T value, size_t w, size_t h)
{
    return forwardCall<A, CUresult (*)(CUdeviceptr, size_t, T, size_t, size_t)>(
        [&](CallScope& s) { describeMemset(s, dst, w * h * sizeof(T), nullptr, false); }, dst, pitch, value, w, h);
}

template <Api A, class T>
CUresult memsetD2DAsync(CUdeviceptr dst, size_t pitch, T value, size_t w, size_t h, CUstream stream)
{
    return forwardCall<A, CUresult (*)(CUdeviceptr, size_t, T, size_t, size_t, CUstream)>(
        [&](CallScope& s) { describeMemset(s, dst, w * h * sizeof(T), stream, true); }, dst, pitch, value, w, h, stream);
}

// A prefetch of managed memory to a device (or location) on a stream.
void describePrefetch(CallScope& s, CUdeviceptr p, size_t n, int to, CUstream stream)
{
    wire::TransferArgs& t = s.body().args.transfer;
    t.bytes = n;
    t.src = p;
    t.direction = Direction::Prefetch;
    t.srcMem = t.dstMem = MemKind::Managed;
    t.peerDevice = uint32_t(to);
    s.setStream(stream);
    s.setFlags(wire::kCallAsync);
}

template <Api A>
CUresult prefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags, CUstream stream)
{
    return forwardCall<A, decltype(&::cuMemPrefetchAsync_v2)>(
        [&](CallScope& s) { describePrefetch(s, p, n, loc.id, stream); }, p, n, loc, flags, stream);
}

// The 8.0 ABI cudart still resolves beside the 12.2 one: a destination device instead of a location.
template <Api A>
CUresult prefetchAsyncV1(CUdeviceptr p, size_t n, CUdevice dst, CUstream stream)
{
    return forwardCall<A, CUresult (*)(CUdeviceptr, size_t, CUdevice, CUstream)>(
        [&](CallScope& s) { describePrefetch(s, p, n, dst, stream); }, p, n, dst, stream);
}

// The 12.8 ABI: the same batch with a failure index the 13.0 one dropped.
template <Api A>
CUresult memcpyBatchAsyncV1(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                            size_t* attrIdxs, size_t numAttrs, size_t* failIdx, CUstream stream)
{
    using Fn = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t, size_t*, CUstream);
    return forwardCall<A, Fn>(
        [&](CallScope& s) { describeBatch(s, dsts, srcs, sizes, count, stream); },
        dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, stream);
}

// 3D batches: one record for the call, timed as one piece of device work (the batch runs in stream
// order as a whole), the bytes summed and the direction that of the first copy. Extents are in elements:
// 1 byte between pointers; an array operand's element size is not known here (its copies count their
// elements).
void describe3DBatch(CallScope& s, size_t numOps, const CUDA_MEMCPY3D_BATCH_OP* ops, CUstream stream)
{
    s.setStream(stream);
    if (!ops || numOps == 0) {
        s.setFlags(wire::kCallAsync);
        return;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < numOps; ++i)
        total += uint64_t(ops[i].extent.width) * ops[i].extent.height * (ops[i].extent.depth ? ops[i].extent.depth : 1);
    const CUmemcpy3DOperand &src = ops[0].src, &dst = ops[0].dst;
    const bool srcArray = src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY, dstArray = dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY;
    if (srcArray || dstArray)
        describeArrayCopy(s, dstArray ? dst.op.array.array : nullptr, dstArray ? nullptr : ptr(dst.op.ptr.ptr),
                          srcArray ? src.op.array.array : nullptr, srcArray ? nullptr : ptr(src.op.ptr.ptr), total,
                          Direction::Unknown);
    else
        describeUnified(s, ptr(dst.op.ptr.ptr), ptr(src.op.ptr.ptr), total);
    submitCopy(s, stream, true);
}

template <Api A>
CUresult memcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream stream)
{
    return forwardCall<A, CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, unsigned long long, CUstream)>(
        [&](CallScope& s) { describe3DBatch(s, numOps, ops, stream); }, numOps, ops, flags, stream);
}

// The 12080 ABI: with failIdx.
template <Api A>
CUresult memcpy3DBatchAsyncV1(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* failIdx, unsigned long long flags,
                              CUstream stream)
{
    return forwardCall<A, CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP*, size_t*, unsigned long long, CUstream)>(
        [&](CallScope& s) { describe3DBatch(s, numOps, ops, stream); }, numOps, ops, failIdx, flags, stream);
}

template <Api A>
CUresult prefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locs, size_t* locIdxs,
                            size_t numLocs, unsigned long long flags, CUstream stream)
{
    using Fn = CUresult (*)(CUdeviceptr*, size_t*, size_t, CUmemLocation*, size_t*, size_t, unsigned long long, CUstream);
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            wire::TransferArgs& t = s.body().args.transfer;
            t.direction = Direction::Prefetch;
            t.srcMem = t.dstMem = MemKind::Managed;
            if (dptrs && sizes && count) {
                t.src = dptrs[0];
                for (size_t i = 0; i < count; ++i) t.bytes += sizes[i];
            }
            s.setStream(stream);
            s.setFlags(wire::kCallAsync);
        },
        dptrs, sizes, count, locs, locIdxs, numLocs, flags, stream);
}

// ---- graph nodes built by the node API: the copy or memset each launch of the graph runs
using AddMemcpyNodeFn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMCPY3D*, CUcontext);
using AddMemsetNodeFn = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMSET_NODE_PARAMS*,
                                     CUcontext);

template <Api A>
CUresult addMemcpyNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n, const CUDA_MEMCPY3D* c,
                       CUcontext ctx)
{
    return addGraphNode<A, AddMemcpyNodeFn>(
        out, graph, [&](CallScope& s) { describe2D3D(s, c, c ? bytesOf(c) : 0); }, deps, n, c, ctx);
}

void describeMemsetNode(CallScope& s, const CUDA_MEMSET_NODE_PARAMS* p)
{
    if (!p) return;
    wire::TransferArgs& t = s.body().args.transfer;
    t.bytes = uint64_t(p->elementSize) * p->width * (p->height ? p->height : 1);
    t.dst = p->dst;
    t.direction = Direction::Memset;
    t.dstMem = memKindOf(p->dst, false);
    if (t.dstMem == MemKind::Pageable) t.dstMem = MemKind::Device;
    t.srcMem = MemKind::Unknown;
}

template <Api A>
CUresult addMemsetNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n, const CUDA_MEMSET_NODE_PARAMS* p,
                       CUcontext ctx)
{
    return addGraphNode<A, AddMemsetNodeFn>(out, graph, [&](CallScope& s) { describeMemsetNode(s, p); }, deps, n, p, ctx);
}

// ---- a copy or memset node given new parameters (cuGraph(Exec)MemcpyNodeSetParams,
// cuGraph(Exec)MemsetNodeSetParams): a Graph-category record whose args are the node's new transfer,
// except that dst holds the exec (0: the graph's node) and src the seq of the call that made the node
// (wire/format.h); no device work.
void nameEditedNode(CallScope& s, CUgraphExec exec, CUgraphNode node)
{
    wire::TransferArgs& t = s.body().args.transfer;
    t.dst = uint64_t(uintptr_t(exec));
    t.src = graphNodeSeq(node);
}

template <Api A>
CUresult memcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D* c)
{
    using Fn = CUresult (*)(CUgraphNode, const CUDA_MEMCPY3D*);
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            describe2D3D(s, c, c ? bytesOf(c) : 0);
            nameEditedNode(s, nullptr, node);
        },
        node, c);
}

template <Api A>
CUresult execMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D* c, CUcontext ctx)
{
    using Fn = CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D*, CUcontext);
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            describe2D3D(s, c, c ? bytesOf(c) : 0);
            nameEditedNode(s, exec, node);
        },
        exec, node, c, ctx);
}

template <Api A>
CUresult memsetNodeSetParams(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p)
{
    using Fn = CUresult (*)(CUgraphNode, const CUDA_MEMSET_NODE_PARAMS*);
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            describeMemsetNode(s, p);
            nameEditedNode(s, nullptr, node);
        },
        node, p);
}

template <Api A>
CUresult execMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx)
{
    using Fn = CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_MEMSET_NODE_PARAMS*, CUcontext);
    return forwardCall<A, Fn>(
        [&](CallScope& s) {
            describeMemsetNode(s, p);
            nameEditedNode(s, exec, node);
        },
        exec, node, p, ctx);
}

}  // namespace

void describeCopyNode(CallScope& s, const CUDA_MEMCPY3D& c) { describe2D3D(s, &c, bytesOf(&c)); }

void describeMemsetNodeV2(CallScope& s, const CUDA_MEMSET_NODE_PARAMS_v2& p)
{
    CUDA_MEMSET_NODE_PARAMS v1{};
    v1.dst = p.dst;
    v1.elementSize = p.elementSize;
    v1.width = p.width;
    v1.height = p.height;
    describeMemsetNode(s, &v1);
}

}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(prefetchAsyncV1, cuMemPrefetchAsync, (CUdeviceptr p, size_t n, CUdevice d, CUstream s), (p, n, d, s))
GS_WRAP(prefetchAsyncV1, cuMemPrefetchAsync_ptsz, (CUdeviceptr p, size_t n, CUdevice d, CUstream s), (p, n, d, s))
GS_WRAP(memcpyBatchAsyncV1, cuMemcpyBatchAsync,
        (CUdeviceptr* d, CUdeviceptr* s, size_t* sz, size_t n, CUmemcpyAttributes* a, size_t* ai, size_t na, size_t* f,
         CUstream st),
        (d, s, sz, n, a, ai, na, f, st))
GS_WRAP(memcpyBatchAsyncV1, cuMemcpyBatchAsync_ptsz,
        (CUdeviceptr* d, CUdeviceptr* s, size_t* sz, size_t n, CUmemcpyAttributes* a, size_t* ai, size_t na, size_t* f,
         CUstream st),
        (d, s, sz, n, a, ai, na, f, st))
GS_WRAP(memcpy3DBatchAsync, cuMemcpy3DBatchAsync_v2, (size_t n, CUDA_MEMCPY3D_BATCH_OP* o, unsigned long long f, CUstream s),
        (n, o, f, s))
GS_WRAP(memcpy3DBatchAsync, cuMemcpy3DBatchAsync_v2_ptsz,
        (size_t n, CUDA_MEMCPY3D_BATCH_OP* o, unsigned long long f, CUstream s), (n, o, f, s))
GS_WRAP(memcpy3DBatchAsyncV1, cuMemcpy3DBatchAsync,
        (size_t n, CUDA_MEMCPY3D_BATCH_OP* o, size_t* fi, unsigned long long f, CUstream s), (n, o, fi, f, s))
GS_WRAP(memcpy3DBatchAsyncV1, cuMemcpy3DBatchAsync_ptsz,
        (size_t n, CUDA_MEMCPY3D_BATCH_OP* o, size_t* fi, unsigned long long f, CUstream s), (n, o, fi, f, s))
GS_WRAP(prefetchBatchAsync, cuMemPrefetchBatchAsync,
        (CUdeviceptr* d, size_t* sz, size_t n, CUmemLocation* l, size_t* li, size_t nl, unsigned long long f, CUstream s),
        (d, sz, n, l, li, nl, f, s))
GS_WRAP(prefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz,
        (CUdeviceptr* d, size_t* sz, size_t n, CUmemLocation* l, size_t* li, size_t nl, unsigned long long f, CUstream s),
        (d, sz, n, l, li, nl, f, s))

GS_WRAP(memcpyUnified, cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))
GS_WRAP(memcpyUnified, cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))
GS_WRAP(memcpyUnifiedAsync, cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))
GS_WRAP(memcpyUnifiedAsync, cuMemcpyAsync_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))
GS_WRAP(memcpyPeer, cuMemcpyPeer, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n), (d, dc, s, sc, n))
GS_WRAP(memcpyPeer, cuMemcpyPeer_ptds, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n), (d, dc, s, sc, n))
GS_WRAP(memcpyPeerAsync, cuMemcpyPeerAsync, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st), (d, dc, s, sc, n, st))
GS_WRAP(memcpyPeerAsync, cuMemcpyPeerAsync_ptsz, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st), (d, dc, s, sc, n, st))
GS_WRAP_TYPED(memcpyExplicit, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2, (CUdeviceptr d, const void* s, size_t n), (Direction::HtoD, d, s, n))
GS_WRAP_TYPED(memcpyExplicit, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, (CUdeviceptr d, const void* s, size_t n), (Direction::HtoD, d, s, n))
GS_WRAP_TYPED(memcpyExplicit, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2, (void* d, CUdeviceptr s, size_t n), (Direction::DtoH, d, s, n))
GS_WRAP_TYPED(memcpyExplicit, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, (void* d, CUdeviceptr s, size_t n), (Direction::DtoH, d, s, n))
GS_WRAP_TYPED(memcpyExplicit, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), (Direction::DtoD, d, s, n))
GS_WRAP_TYPED(memcpyExplicit, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (Direction::DtoD, d, s, n))
GS_WRAP_TYPED(memcpyExplicitAsync, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void* s, size_t n, CUstream st), (Direction::HtoD, d, s, n, st))
GS_WRAP_TYPED(memcpyExplicitAsync, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr d, const void* s, size_t n, CUstream st), (Direction::HtoD, d, s, n, st))
GS_WRAP_TYPED(memcpyExplicitAsync, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2, (void* d, CUdeviceptr s, size_t n, CUstream st), (Direction::DtoH, d, s, n, st))
GS_WRAP_TYPED(memcpyExplicitAsync, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, (void* d, CUdeviceptr s, size_t n, CUstream st), (Direction::DtoH, d, s, n, st))
GS_WRAP_TYPED(memcpyExplicitAsync, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (Direction::DtoD, d, s, n, st))
GS_WRAP_TYPED(memcpyExplicitAsync, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (Direction::DtoD, d, s, n, st))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy2D_v2, cuMemcpy2D_v2, (const CUDA_MEMCPY2D* c), (c))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D* c), (c))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D* c), (c))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D* c), (c))
GS_WRAP_TYPED(memcpyDescribedAsync, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D* c, CUstream st), (c, st))
GS_WRAP_TYPED(memcpyDescribedAsync, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D* c, CUstream st), (c, st))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy3D_v2, cuMemcpy3D_v2, (const CUDA_MEMCPY3D* c), (c))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D* c), (c))
GS_WRAP_TYPED(memcpyDescribedAsync, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D* c, CUstream st), (c, st))
GS_WRAP_TYPED(memcpyDescribedAsync, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D* c, CUstream st), (c, st))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy3DPeer, cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER* c), (c))
GS_WRAP_TYPED(memcpyDescribed, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER* c), (c))
GS_WRAP_TYPED(memcpyDescribedAsync, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER* c, CUstream st), (c, st))
GS_WRAP_TYPED(memcpyDescribedAsync, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER* c, CUstream st), (c, st))
GS_WRAP(memcpyBatchAsync, cuMemcpyBatchAsync_v2,
        (CUdeviceptr* d, CUdeviceptr* s, size_t* sz, size_t n, CUmemcpyAttributes* a, size_t* ai, size_t na, CUstream st),
        (d, s, sz, n, a, ai, na, st))
GS_WRAP(memcpyBatchAsync, cuMemcpyBatchAsync_v2_ptsz,
        (CUdeviceptr* d, CUdeviceptr* s, size_t* sz, size_t n, CUmemcpyAttributes* a, size_t* ai, size_t na, CUstream st),
        (d, s, sz, n, a, ai, na, st))

#define GS_MEMSET(bits, T)                                                                                               \
    GS_EXPORT CUresult cuMemsetD##bits##_v2(CUdeviceptr d, T v, size_t n) { return memsetD<Api::cuMemsetD##bits##_v2, T>(d, v, n); } \
    GS_EXPORT CUresult cuMemsetD##bits##_v2_ptds(CUdeviceptr d, T v, size_t n) { return memsetD<Api::cuMemsetD##bits##_v2_ptds, T>(d, v, n); } \
    GS_EXPORT CUresult cuMemsetD##bits##Async(CUdeviceptr d, T v, size_t n, CUstream s) { return memsetDAsync<Api::cuMemsetD##bits##Async, T>(d, v, n, s); } \
    GS_EXPORT CUresult cuMemsetD##bits##Async_ptsz(CUdeviceptr d, T v, size_t n, CUstream s) { return memsetDAsync<Api::cuMemsetD##bits##Async_ptsz, T>(d, v, n, s); } \
    GS_EXPORT CUresult cuMemsetD2D##bits##_v2(CUdeviceptr d, size_t p, T v, size_t w, size_t h) { return memsetD2D<Api::cuMemsetD2D##bits##_v2, T>(d, p, v, w, h); } \
    GS_EXPORT CUresult cuMemsetD2D##bits##_v2_ptds(CUdeviceptr d, size_t p, T v, size_t w, size_t h) { return memsetD2D<Api::cuMemsetD2D##bits##_v2_ptds, T>(d, p, v, w, h); } \
    GS_EXPORT CUresult cuMemsetD2D##bits##Async(CUdeviceptr d, size_t p, T v, size_t w, size_t h, CUstream s) { return memsetD2DAsync<Api::cuMemsetD2D##bits##Async, T>(d, p, v, w, h, s); } \
    GS_EXPORT CUresult cuMemsetD2D##bits##Async_ptsz(CUdeviceptr d, size_t p, T v, size_t w, size_t h, CUstream s) { return memsetD2DAsync<Api::cuMemsetD2D##bits##Async_ptsz, T>(d, p, v, w, h, s); }
GS_MEMSET(8, unsigned char)
GS_MEMSET(16, unsigned short)
GS_MEMSET(32, unsigned int)

GS_WRAP(prefetchAsync, cuMemPrefetchAsync_v2, (CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s), (p, n, l, f, s))
GS_WRAP(prefetchAsync, cuMemPrefetchAsync_v2_ptsz, (CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s), (p, n, l, f, s))
GS_WRAP(addMemcpyNode, cuGraphAddMemcpyNode,
        (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, const CUDA_MEMCPY3D* c, CUcontext x), (o, g, d, n, c, x))
GS_WRAP(memcpyNodeSetParams, cuGraphMemcpyNodeSetParams, (CUgraphNode node, const CUDA_MEMCPY3D* c), (node, c))
GS_WRAP(execMemcpyNodeSetParams, cuGraphExecMemcpyNodeSetParams,
        (CUgraphExec e, CUgraphNode node, const CUDA_MEMCPY3D* c, CUcontext x), (e, node, c, x))
GS_WRAP(memsetNodeSetParams, cuGraphMemsetNodeSetParams, (CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p), (node, p))
GS_WRAP(execMemsetNodeSetParams, cuGraphExecMemsetNodeSetParams,
        (CUgraphExec e, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext x), (e, node, p, x))
GS_WRAP(addMemsetNode, cuGraphAddMemsetNode,
        (CUgraphNode* o, CUgraph g, const CUgraphNode* d, size_t n, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext x),
        (o, g, d, n, p, x))

// CUDA arrays (cudart 13 copies to and from arrays with cuMemcpy3D/3DAsync; these are the driver API's own)
#define GS_ARRAY_COPY(abi, typed, params, dir, dArr, dPtr, sArr, sPtr, n, async, stream, args)                         \
    GS_EXPORT CUresult abi params                                                                                   \
    {                                                                                                               \
        return memcpyArray<Api::abi, decltype(&::typed)>(dir, dArr, dPtr, sArr, sPtr, n, async, stream, GS_UNPAREN args); \
    }
#define GS_UNPAREN(...) __VA_ARGS__
GS_ARRAY_COPY(cuMemcpyHtoA_v2, cuMemcpyHtoA_v2, (CUarray d, size_t o, const void* s, size_t n), Direction::HtoD, d, nullptr, nullptr, s, n, false, nullptr, (d, o, s, n))
GS_ARRAY_COPY(cuMemcpyHtoA_v2_ptds, cuMemcpyHtoA_v2, (CUarray d, size_t o, const void* s, size_t n), Direction::HtoD, d, nullptr, nullptr, s, n, false, nullptr, (d, o, s, n))
GS_ARRAY_COPY(cuMemcpyAtoH_v2, cuMemcpyAtoH_v2, (void* d, CUarray s, size_t o, size_t n), Direction::DtoH, nullptr, d, s, nullptr, n, false, nullptr, (d, s, o, n))
GS_ARRAY_COPY(cuMemcpyAtoH_v2_ptds, cuMemcpyAtoH_v2, (void* d, CUarray s, size_t o, size_t n), Direction::DtoH, nullptr, d, s, nullptr, n, false, nullptr, (d, s, o, n))
GS_ARRAY_COPY(cuMemcpyDtoA_v2, cuMemcpyDtoA_v2, (CUarray d, size_t o, CUdeviceptr s, size_t n), Direction::DtoD, d, nullptr, nullptr, ptr(s), n, false, nullptr, (d, o, s, n))
GS_ARRAY_COPY(cuMemcpyDtoA_v2_ptds, cuMemcpyDtoA_v2, (CUarray d, size_t o, CUdeviceptr s, size_t n), Direction::DtoD, d, nullptr, nullptr, ptr(s), n, false, nullptr, (d, o, s, n))
GS_ARRAY_COPY(cuMemcpyAtoD_v2, cuMemcpyAtoD_v2, (CUdeviceptr d, CUarray s, size_t o, size_t n), Direction::DtoD, nullptr, ptr(d), s, nullptr, n, false, nullptr, (d, s, o, n))
GS_ARRAY_COPY(cuMemcpyAtoD_v2_ptds, cuMemcpyAtoD_v2, (CUdeviceptr d, CUarray s, size_t o, size_t n), Direction::DtoD, nullptr, ptr(d), s, nullptr, n, false, nullptr, (d, s, o, n))
GS_ARRAY_COPY(cuMemcpyAtoA_v2, cuMemcpyAtoA_v2, (CUarray d, size_t dO, CUarray s, size_t sO, size_t n), Direction::DtoD, d, nullptr, s, nullptr, n, false, nullptr, (d, dO, s, sO, n))
GS_ARRAY_COPY(cuMemcpyAtoA_v2_ptds, cuMemcpyAtoA_v2, (CUarray d, size_t dO, CUarray s, size_t sO, size_t n), Direction::DtoD, d, nullptr, s, nullptr, n, false, nullptr, (d, dO, s, sO, n))
GS_ARRAY_COPY(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2, (CUarray d, size_t o, const void* s, size_t n, CUstream st), Direction::HtoD, d, nullptr, nullptr, s, n, true, st, (d, o, s, n, st))
GS_ARRAY_COPY(cuMemcpyHtoAAsync_v2_ptsz, cuMemcpyHtoAAsync_v2, (CUarray d, size_t o, const void* s, size_t n, CUstream st), Direction::HtoD, d, nullptr, nullptr, s, n, true, st, (d, o, s, n, st))
GS_ARRAY_COPY(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2, (void* d, CUarray s, size_t o, size_t n, CUstream st), Direction::DtoH, nullptr, d, s, nullptr, n, true, st, (d, s, o, n, st))
GS_ARRAY_COPY(cuMemcpyAtoHAsync_v2_ptsz, cuMemcpyAtoHAsync_v2, (void* d, CUarray s, size_t o, size_t n, CUstream st), Direction::DtoH, nullptr, d, s, nullptr, n, true, st, (d, s, o, n, st))
#undef GS_ARRAY_COPY
#undef GS_UNPAREN
