// shim/hooks/memory.cpp: allocation and release of device, managed and pinned host memory (and the
// VMM path); also the memory ranges that later tell a transfer's memory kind.
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

using wire::MemKind;

void describeAlloc(CallScope& s, uint64_t ptr, uint64_t bytes, MemKind kind)
{
    wire::AllocArgs& a = s.body().args.alloc;
    a.ptr = ptr;
    a.bytes = bytes;
    a.mem = kind;
}

// Records the allocation once the driver said yes; the range is remembered even when not recording.
void allocated(CallScope& s, CUresult rc, uint64_t ptr, uint64_t bytes, MemKind kind)
{
    if (rc == CUDA_SUCCESS) memAddRange(ptr, bytes, kind);
    if (s.active()) describeAlloc(s, rc == CUDA_SUCCESS ? ptr : 0, bytes, kind);
}

// Frees and (un)registrations synchronise the device (CUDA "API synchronization behavior") when they
// do something: freeing null (cudaFree(nullptr), cudart's way to initialise) and a call the driver
// refused wait for nothing.
void syncedIf(CallScope& s, CUresult rc, bool didSomething)
{
    if (rc == CUDA_SUCCESS && didSomething) s.setFlags(wire::kCallImplicitSync);
}


// An allocation, described by the driver's answer: `answer(rc)` gives the address and bytes it
// allocated (or asked for, when it refused).
struct Allocation {
    uint64_t ptr;
    uint64_t bytes;
};
template <Api A, class Fn, class Describe, class Answer, class... Args>
CUresult allocCall(MemKind kind, Describe&& describe, Answer&& answer, Args... args)
{
    return forwardThen<A, Fn>(
        describe,
        [&](CallScope& s, CUresult rc) {
            const Allocation a = answer(rc);
            allocated(s, rc, a.ptr, a.bytes, kind);
        },
        args...);
}

// A release of `address`, described before the call; its range is forgotten once the driver said
// yes, and `syncs`: a release that did something synchronised the device.
template <Api A, class Fn, class Describe, class... Args>
CUresult releaseCall(uint64_t address, bool syncs, Describe&& describe, Args... args)
{
    return forwardThen<A, Fn>(
        describe,
        [&](CallScope& s, CUresult rc) {
            if (rc == CUDA_SUCCESS) memRemoveRange(address);
            if (syncs) syncedIf(s, rc, address != 0);
        },
        args...);
}

uint64_t addressOf(const void* p) { return uint64_t(uintptr_t(p)); }

template <Api A>
CUresult memAlloc(CUdeviceptr* p, size_t bytes)
{
    return allocCall<A, decltype(&::cuMemAlloc_v2)>(
        MemKind::Device, nothingBefore,
        [&](CUresult rc) { return Allocation{rc == CUDA_SUCCESS && p ? *p : 0, bytes}; }, p, bytes);
}

template <Api A>
CUresult memAllocPitch(CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned int elem)
{
    return allocCall<A, decltype(&::cuMemAllocPitch_v2)>(
        MemKind::Device, nothingBefore,
        [&](CUresult rc) {
            const bool ok = rc == CUDA_SUCCESS && p && pitch;
            return Allocation{ok ? *p : 0, ok ? uint64_t(*pitch) * h : uint64_t(w) * h};
        },
        p, pitch, w, h, elem);
}

template <Api A>
CUresult memAllocManaged(CUdeviceptr* p, size_t bytes, unsigned int flags)
{
    return allocCall<A, decltype(&::cuMemAllocManaged)>(
        MemKind::Managed, nothingBefore,
        [&](CUresult rc) { return Allocation{rc == CUDA_SUCCESS && p ? *p : 0, bytes}; }, p, bytes, flags);
}

void onStreamAsync(CallScope& s, CUstream stream)
{
    s.setStream(stream);
    s.setFlags(wire::kCallAsync);
}

template <Api A>
CUresult memAllocAsync(CUdeviceptr* p, size_t bytes, CUstream stream)
{
    return allocCall<A, decltype(&::cuMemAllocAsync)>(
        MemKind::Device, [&](CallScope& s) { onStreamAsync(s, stream); },
        [&](CUresult rc) { return Allocation{rc == CUDA_SUCCESS && p ? *p : 0, bytes}; }, p, bytes, stream);
}

template <Api A>
CUresult memAllocFromPoolAsync(CUdeviceptr* p, size_t bytes, CUmemoryPool pool, CUstream stream)
{
    return allocCall<A, decltype(&::cuMemAllocFromPoolAsync)>(
        MemKind::Device,
        [&](CallScope& s) {
            onStreamAsync(s, stream);
            s.body().args.alloc.pool = uint64_t(uintptr_t(pool));
        },
        [&](CUresult rc) { return Allocation{rc == CUDA_SUCCESS && p ? *p : 0, bytes}; }, p, bytes, pool, stream);
}

// ---- pools: their configuration, rarely called (the collector works out what each keeps reserved)
void describePool(CallScope& s, CUresult rc, CUmemoryPool pool, uint64_t attribute, uint64_t value, int device)
{
    if (!s.active() || rc != CUDA_SUCCESS) return;
    wire::PoolArgs& a = s.body().args.pool;
    a.pool = uint64_t(uintptr_t(pool));
    a.attribute = attribute;
    a.value = value;
    a.device = device;
}

template <Api A>
CUresult memPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props)
{
    return forwardThen<A, decltype(&::cuMemPoolCreate)>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            if (pool && props) describePool(s, rc, *pool, 0, 0, props->location.id);
        },
        pool, props);
}

template <Api A>
CUresult memPoolDestroy(CUmemoryPool pool)
{
    return forwardThen<A, decltype(&::cuMemPoolDestroy)>(
        nothingBefore, [&](CallScope& s, CUresult rc) { describePool(s, rc, pool, 0, 0, -1); }, pool);
}

// The release threshold and the high-water marks are cuuint64_t; the reuse policies int.
uint64_t poolAttributeValue(CUmemPool_attribute a, const void* v)
{
    if (!v) return 0;
    switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return uint64_t(*static_cast<const int*>(v));
    default: return *static_cast<const cuuint64_t*>(v);
    }
}

template <Api A>
CUresult memPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value)
{
    return forwardThen<A, decltype(&::cuMemPoolSetAttribute)>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) { describePool(s, rc, pool, uint64_t(attr), poolAttributeValue(attr, value), -1); },
        pool, attr, value);
}

template <Api A>
CUresult memPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    return forwardThen<A, decltype(&::cuMemPoolTrimTo)>(
        nothingBefore, [&](CallScope& s, CUresult rc) { describePool(s, rc, pool, 0, keep, -1); }, pool, keep);
}

template <Api A, class Fn>
CUresult deviceGetPool(CUmemoryPool* pool, CUdevice dev)
{
    return forwardThen<A, Fn>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            if (pool) describePool(s, rc, *pool, 0, 0, int(dev));
        },
        pool, dev);
}

template <Api A>
CUresult deviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    return forwardThen<A, decltype(&::cuDeviceSetMemPool)>(
        nothingBefore, [&](CallScope& s, CUresult rc) { describePool(s, rc, pool, 0, 0, int(dev)); }, dev, pool);
}

template <Api A>
CUresult memFree(CUdeviceptr p)
{
    return releaseCall<A, decltype(&::cuMemFree_v2)>(
        p, true, [&](CallScope& s) { describeAlloc(s, p, 0, memKindOf(p, false)); }, p);
}

template <Api A>
CUresult memFreeAsync(CUdeviceptr p, CUstream stream)
{
    return releaseCall<A, decltype(&::cuMemFreeAsync)>(
        p, false,
        [&](CallScope& s) {
            describeAlloc(s, p, 0, MemKind::Device);
            onStreamAsync(s, stream);
        },
        p, stream);
}

template <Api A>
CUresult memHostAlloc(void** pp, size_t bytes, unsigned int flags)
{
    return allocCall<A, decltype(&::cuMemHostAlloc)>(
        MemKind::Pinned, nothingBefore,
        [&](CUresult rc) { return Allocation{rc == CUDA_SUCCESS && pp ? addressOf(*pp) : 0, bytes}; }, pp, bytes, flags);
}

template <Api A>
CUresult memAllocHost(void** pp, size_t bytes)
{
    return allocCall<A, decltype(&::cuMemAllocHost_v2)>(
        MemKind::Pinned, nothingBefore,
        [&](CUresult rc) { return Allocation{rc == CUDA_SUCCESS && pp ? addressOf(*pp) : 0, bytes}; }, pp, bytes);
}

template <Api A>
CUresult memFreeHost(void* p)
{
    return releaseCall<A, decltype(&::cuMemFreeHost)>(
        addressOf(p), true, [&](CallScope& s) { describeAlloc(s, addressOf(p), 0, MemKind::Pinned); }, p);
}

// Registering host memory synchronises the device.
template <Api A>
CUresult memHostRegister(void* p, size_t bytes, unsigned int flags)
{
    return forwardThen<A, decltype(&::cuMemHostRegister_v2)>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            syncedIf(s, rc, true);
            allocated(s, rc, addressOf(p), bytes, MemKind::Pinned);
        },
        p, bytes, flags);
}

template <Api A>
CUresult memHostUnregister(void* p)
{
    return releaseCall<A, decltype(&::cuMemHostUnregister)>(
        addressOf(p), true, [&](CallScope& s) { describeAlloc(s, addressOf(p), 0, MemKind::Pinned); }, p);
}

// ---- the VMM path (PyTorch's expandable segments): create physical memory, map it, release it
template <Api A>
CUresult memCreate(CUmemGenericAllocationHandle* h, size_t bytes, const CUmemAllocationProp* prop, unsigned long long flags)
{
    return forwardThen<A, decltype(&::cuMemCreate)>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            if (s.active()) describeAlloc(s, rc == CUDA_SUCCESS && h ? uint64_t(*h) : 0, bytes, MemKind::Device);
        },
        h, bytes, prop, flags);
}

template <Api A>
CUresult memMap(CUdeviceptr p, size_t bytes, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags)
{
    return allocCall<A, decltype(&::cuMemMap)>(
        MemKind::Device, nothingBefore, [&](CUresult) { return Allocation{p, bytes}; }, p, bytes, offset, h, flags);
}

template <Api A>
CUresult memUnmap(CUdeviceptr p, size_t bytes)
{
    return releaseCall<A, decltype(&::cuMemUnmap)>(
        p, false, [&](CallScope& s) { describeAlloc(s, p, bytes, MemKind::Device); }, p, bytes);
}

template <Api A>
CUresult memRelease(CUmemGenericAllocationHandle h)
{
    return forwardCall<A, decltype(&::cuMemRelease)>([&](CallScope& s) { describeAlloc(s, uint64_t(h), 0, MemKind::Device); },
                                                     h);
}

// ---- CUDA arrays: opaque handles, not addresses (no memory range); recorded as allocations of the
// descriptor's bytes (width x height x depth x channels x element, the driver's padding unknown) with
// the handle as their address
uint64_t arrayBytes(size_t width, size_t height, size_t depth, CUarray_format format, unsigned int channels)
{
    uint64_t elem = 0;
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: elem = 1; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: elem = 2; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: elem = 4; break;
    default: break;  // planar, packed and block-compressed formats: size unknown here
    }
    return elem * channels * width * (height ? height : 1) * (depth ? depth : 1);
}

void describeArray(CallScope& s, CUresult rc, const void* handle, uint64_t bytes)
{
    if (s.active()) describeAlloc(s, rc == CUDA_SUCCESS ? addressOf(handle) : 0, bytes, MemKind::Array);
}

template <Api A>
CUresult arrayCreate(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d)
{
    return forwardThen<A, decltype(&::cuArrayCreate_v2)>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            describeArray(s, rc, rc == CUDA_SUCCESS && out ? *out : nullptr,
                          d ? arrayBytes(d->Width, d->Height, 0, d->Format, d->NumChannels) : 0);
        },
        out, d);
}

template <Api A>
CUresult array3DCreate(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d)
{
    return forwardThen<A, decltype(&::cuArray3DCreate_v2)>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            describeArray(s, rc, rc == CUDA_SUCCESS && out ? *out : nullptr,
                          d ? arrayBytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels) : 0);
        },
        out, d);
}

// Each level halves the extents of the one before (at least 1; a layered array keeps its layers).
template <Api A>
CUresult mipmappedArrayCreate(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned int levels)
{
    return forwardThen<A, decltype(&::cuMipmappedArrayCreate)>(
        nothingBefore,
        [&](CallScope& s, CUresult rc) {
            uint64_t bytes = 0;
            if (d) {
                size_t w = d->Width, h = d->Height, z = d->Depth;
                for (unsigned int i = 0; i < levels; ++i) {
                    bytes += arrayBytes(w, h, z, d->Format, d->NumChannels);
                    w = w > 1 ? w / 2 : 1;
                    if (h) h = h > 1 ? h / 2 : 1;
                    if (z && !(d->Flags & CUDA_ARRAY3D_LAYERED)) z = z > 1 ? z / 2 : 1;
                }
            }
            describeArray(s, rc, rc == CUDA_SUCCESS && out ? *out : nullptr, bytes);
        },
        out, d, levels);
}

template <Api A, class Fn, class H>
CUresult arrayDestroy(H handle)
{
    return forwardCall<A, Fn>([&](CallScope& s) { describeAlloc(s, addressOf(handle), 0, MemKind::Array); }, handle);
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(memAlloc, cuMemAlloc_v2, (CUdeviceptr* p, size_t n), (p, n))
GS_WRAP(memAllocPitch, cuMemAllocPitch_v2, (CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned int e), (p, pitch, w, h, e))
GS_WRAP(memAllocManaged, cuMemAllocManaged, (CUdeviceptr* p, size_t n, unsigned int f), (p, n, f))
GS_WRAP(memAllocAsync, cuMemAllocAsync, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s))
GS_WRAP(memAllocAsync, cuMemAllocAsync_ptsz, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s))
GS_WRAP(memAllocFromPoolAsync, cuMemAllocFromPoolAsync, (CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s))
GS_WRAP(memAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s))
GS_WRAP(memFree, cuMemFree_v2, (CUdeviceptr p), (p))
GS_WRAP(memPoolCreate, cuMemPoolCreate, (CUmemoryPool* pool, const CUmemPoolProps* props), (pool, props))
GS_WRAP(memPoolDestroy, cuMemPoolDestroy, (CUmemoryPool pool), (pool))
GS_WRAP(memPoolSetAttribute, cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute a, void* v), (pool, a, v))
GS_WRAP(memPoolTrimTo, cuMemPoolTrimTo, (CUmemoryPool pool, size_t keep), (pool, keep))
GS_WRAP_TYPED(deviceGetPool, cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, (CUmemoryPool* pool, CUdevice d), (pool, d))
GS_WRAP_TYPED(deviceGetPool, cuDeviceGetMemPool, cuDeviceGetMemPool, (CUmemoryPool* pool, CUdevice d), (pool, d))
GS_WRAP(deviceSetMemPool, cuDeviceSetMemPool, (CUdevice d, CUmemoryPool pool), (d, pool))
GS_WRAP(memFreeAsync, cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s))
GS_WRAP(memFreeAsync, cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), (p, s))
GS_WRAP(memHostAlloc, cuMemHostAlloc, (void** pp, size_t n, unsigned int f), (pp, n, f))
GS_WRAP(memAllocHost, cuMemAllocHost_v2, (void** pp, size_t n), (pp, n))
GS_WRAP(memFreeHost, cuMemFreeHost, (void* p), (p))
GS_WRAP(memHostRegister, cuMemHostRegister_v2, (void* p, size_t n, unsigned int f), (p, n, f))
GS_WRAP(memHostUnregister, cuMemHostUnregister, (void* p), (p))
GS_WRAP(memCreate, cuMemCreate, (CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* p, unsigned long long f), (h, n, p, f))
GS_WRAP(memMap, cuMemMap, (CUdeviceptr p, size_t n, size_t o, CUmemGenericAllocationHandle h, unsigned long long f), (p, n, o, h, f))
GS_WRAP(memUnmap, cuMemUnmap, (CUdeviceptr p, size_t n), (p, n))
GS_WRAP(memRelease, cuMemRelease, (CUmemGenericAllocationHandle h), (h))
GS_WRAP(arrayCreate, cuArrayCreate_v2, (CUarray* a, const CUDA_ARRAY_DESCRIPTOR* d), (a, d))
GS_WRAP(array3DCreate, cuArray3DCreate_v2, (CUarray* a, const CUDA_ARRAY3D_DESCRIPTOR* d), (a, d))
GS_WRAP_TYPED(arrayDestroy, cuArrayDestroy, cuArrayDestroy, (CUarray a), (a))
GS_WRAP(mipmappedArrayCreate, cuMipmappedArrayCreate, (CUmipmappedArray* m, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned int n),
        (m, d, n))
GS_WRAP_TYPED(arrayDestroy, cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, (CUmipmappedArray m), (m))
