// Memory: device, pinned, registered and managed ranges (an interval map), memory pools, VMM, pointer attributes.
//
// Device memory is host memory, so a CUdeviceptr is a host address and copies really move bytes.
#include "sim.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

namespace simcuda {
namespace {

constexpr size_t kGranularity = 2u << 20;

// A stream-ordered pool keeps what it reserved (in kGranularity chunks) for later allocations: memory
// in use returns to the pool when freed; what the pool reserves beyond its release threshold goes back
// to the system at the next stream, event or context synchronize (any of them: the rule of CUDA's
// documentation, not narrowed to the pool's device) or at cuMemPoolTrimTo, never below what is in use.
// Growing the reservation costs the allocation kPoolGrowNs more host time (the driver maps memory).
struct Pool {
    int dev = 0;
    cuuint64_t releaseThreshold = 0;
    cuuint64_t used = 0, reserved = 0, usedHigh = 0, reservedHigh = 0;
};
constexpr Ns kPoolGrowNs = 20000;

// Constant-initialized (std::mutex's constructor is constexpr; its destructor does nothing): no guarded
// first use for ThreadSanitizer to see racing when the first synchronizes come from several threads at once.
std::mutex g_poolLock;
std::mutex& poolLock() { return g_poolLock; }

std::vector<Pool*>& pools()
{
    static auto* v = new std::vector<Pool*>;
    return *v;
}

cuuint64_t chunksFor(cuuint64_t bytes) { return (bytes + kGranularity - 1) / kGranularity * kGranularity; }

// Gives back what the pool reserves beyond max(in use, keep), in whole chunks.
void trimPool(Pool* p, cuuint64_t keep)
{
    const cuuint64_t floor = std::max(chunksFor(p->used), keep >= p->reserved ? p->reserved : chunksFor(keep));
    p->reserved = std::min(p->reserved, floor);
}

struct Phys {
    int fd = -1;
    size_t size = 0;
    int dev = 0;
    CUmemAllocationProp prop{};
    int refs = 1;  // cuMemCreate's handle plus each cuMemRetainAllocationHandle; the last cuMemRelease retires it
};

std::map<uintptr_t, Range>& ranges()
{
    static auto* m = new std::map<uintptr_t, Range>;  // never destroyed (exit-handler calls)
    return *m;
}

std::map<uintptr_t, size_t>& reservations()
{
    static auto* m = new std::map<uintptr_t, size_t>;
    return *m;
}

int currentDevice()
{
    Context* c = currentContext();
    return c ? c->dev : 0;
}

void addRange(uintptr_t base, size_t size, MemKind kind, unsigned flags = 0)
{
    Range r;
    r.size = size;
    r.kind = kind;
    r.dev = currentDevice();
    r.ctx = currentContext();
    r.flags = flags;
    RangesWriteLock g;
    ranges()[base] = r;
}

// Frees one of our own allocations (device, pinned or managed), after the implicit device synchronization.
CUresult freeOwned(uintptr_t p, bool host, const char* api)
{
    if (!p) return CUDA_SUCCESS;
    uintptr_t base;
    Range r;
    if (!findRange(p, &base, &r) || base != p) return CUDA_ERROR_INVALID_VALUE;
    const bool isHost = r.kind == MemKind::Pinned;
    if (isHost != host || r.kind == MemKind::Registered || r.imported) return CUDA_ERROR_INVALID_VALUE;
    syncContextForFree(r.ctx, api, WaitReason::FreeSync);
    {
        RangesWriteLock g;
        if (!ranges().erase(base)) return CUDA_ERROR_INVALID_VALUE;  // another thread freed it meanwhile
    }
    if (r.kind == MemKind::Device) ipcForgetExport(base, r.size);  // shared with other processes: private again
    free(reinterpret_cast<void*>(base));
    return CUDA_SUCCESS;
}

Pool* asPool(CUmemoryPool p) { return liveHandle<Pool>(p, HandleKind::Pool); }

CUmemoryPool defaultPool(int dev)
{
    Lock g(bigLock());
    Device* d = device(dev);
    if (!d) return nullptr;
    if (!d->defaultPool) {
        auto* p = new Pool;
        p->dev = dev;
        registerHandle(p, HandleKind::Pool);
        std::lock_guard<std::mutex> pg(poolLock());
        pools().push_back(p);
        d->defaultPool = reinterpret_cast<CUmemoryPool>(p);
        d->currentPool = d->defaultPool;
    }
    return d->defaultPool;
}

CUresult allocAsync(CUdeviceptr* p, size_t bytes, CUstream h, bool pt, Pool* pool)
{
    // Stream-ordered allocation is modelled as immediate: the address is valid at once, as it is for
    // any op later in the same stream.
    if (CUresult rc = streamStatus(h, pt)) return rc;
    if (!pool) {
        const int dev = currentDevice();
        if (!defaultPool(dev)) return CUDA_ERROR_INVALID_DEVICE;
        pool = asPool(device(dev)->currentPool);
        if (!pool) return CUDA_ERROR_INVALID_VALUE;
    }
    // Not zeroed (neither is a real pool's memory): memory a pool serves again costs no page faults.
    if (CUresult rc = allocDevice(p, bytes, MemKind::Device, 0, false)) return rc;
    {
        RangesWriteLock g;
        ranges()[uintptr_t(*p)].pool = pool;
    }
    bool grew = false;
    {
        std::lock_guard<std::mutex> g(poolLock());
        pool->used += bytes;
        pool->usedHigh = std::max(pool->usedHigh, pool->used);
        if (pool->used > pool->reserved) {
            pool->reserved = chunksFor(pool->used);
            pool->reservedHigh = std::max(pool->reservedHigh, pool->reserved);
            grew = true;
        }
    }
    if (grew) spinFor(kPoolGrowNs);
    return CUDA_SUCCESS;
}

CUresult freeAsync(CUdeviceptr p, CUstream h, bool pt)
{
    if (CUresult rc = streamStatus(h, pt)) return rc;
    uintptr_t base;
    Range r;
    if (!findRange(p, &base, &r) || base != p || r.kind != MemKind::Device) return CUDA_ERROR_INVALID_VALUE;
    // Freed without waiting: work queued on the stream already moved its bytes at submission.
    {
        RangesWriteLock g;
        if (!ranges().erase(base)) return CUDA_ERROR_INVALID_VALUE;
    }
    if (r.pool) {
        std::lock_guard<std::mutex> g(poolLock());
        Pool* pool = static_cast<Pool*>(r.pool);
        pool->used -= std::min<cuuint64_t>(pool->used, r.size);
    }
    free(reinterpret_cast<void*>(base));
    return CUDA_SUCCESS;
}

CUresult hostAlloc(void** pp, size_t bytes, unsigned flags)
{
    if (!pp) return CUDA_ERROR_INVALID_VALUE;
    if (!currentContext()) return noContextError();
    void* m = aligned_alloc(4096, (std::max<size_t>(bytes, 1) + 4095) & ~size_t(4095));
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    addRange(reinterpret_cast<uintptr_t>(m), bytes, MemKind::Pinned, flags);
    *pp = m;
    return CUDA_SUCCESS;
}

CUresult hostRegister(void* p, size_t bytes, unsigned flags, const char* api)
{
    if (!p || !bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!currentContext()) return noContextError();
    uintptr_t base;
    if (findRange(reinterpret_cast<uintptr_t>(p), &base, nullptr)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    syncContextForFree(currentContext(), api, WaitReason::RegisterSync);
    addRange(reinterpret_cast<uintptr_t>(p), bytes, MemKind::Registered, flags);
    return CUDA_SUCCESS;
}

CUresult hostUnregister(void* p, const char* api)
{
    uintptr_t base;
    Range r;
    if (!findRange(reinterpret_cast<uintptr_t>(p), &base, &r) || base != reinterpret_cast<uintptr_t>(p) ||
        r.kind != MemKind::Registered)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    syncContextForFree(r.ctx, api, WaitReason::RegisterSync);
    RangesWriteLock g;
    ranges().erase(base);
    return CUDA_SUCCESS;
}

CUresult pointerAttribute(void* data, CUpointer_attribute a, CUdeviceptr p)
{
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t base;
    Range r;
    if (!findRange(p, &base, &r)) return CUDA_ERROR_INVALID_VALUE;  // pageable malloc memory: the real driver says so too
    const bool onDevice = r.kind == MemKind::Device || r.kind == MemKind::Managed;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(r.ctx); break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(data) = onDevice ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = p; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (r.kind == MemKind::Device) return CUDA_ERROR_INVALID_VALUE;
        *static_cast<void**>(data) = reinterpret_cast<void*>(p);
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<int*>(data) = r.kind == MemKind::Managed; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = r.dev; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = r.size; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<int*>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<int*>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long*>(data) = base; break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *static_cast<int*>(data) = 0; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *static_cast<CUmemoryPool*>(data) = nullptr; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

Phys* asPhys(CUmemGenericAllocationHandle h)
{
    return liveHandle<Phys>(reinterpret_cast<const void*>(static_cast<uintptr_t>(h)), HandleKind::Phys);
}

}  // namespace

// Profilers ask about the same few allocations on every call, from every thread: each thread remembers the last
// ranges it found, valid while no range changed, so a repeated question writes no shared memory at all.
struct CachedRange {
    uint64_t version = 0;
    uintptr_t base = 0;
    Range range;
};
constexpr int kRangeCacheSize = 4;
thread_local CachedRange t_rangeCache[kRangeCacheSize];
thread_local unsigned t_rangeCacheNext = 0;

bool findRange(uintptr_t p, uintptr_t* base, Range* out)
{
    const uint64_t version = rangesVersion();
    for (const CachedRange& c : t_rangeCache) {
        if (c.version == version && p >= c.base && p < c.base + std::max<size_t>(c.range.size, 1)) {
            if (base) *base = c.base;
            if (out) *out = c.range;
            return true;
        }
    }
    RangesReadLock g;  // shared: no writer can change the ranges (or the version) while it is held
    auto& m = ranges();
    auto it = m.upper_bound(p);
    if (it == m.begin()) return false;
    --it;
    if (p >= it->first + std::max<size_t>(it->second.size, 1)) return false;
    if (base) *base = it->first;
    if (out) *out = it->second;
    t_rangeCache[t_rangeCacheNext++ % kRangeCacheSize] = {rangesVersion(), it->first, it->second};
    return true;
}

bool rangeCovers(uintptr_t p, size_t n)
{
    if (!p) return false;
    RangesReadLock g;
    auto& m = ranges();
    const uintptr_t end = p + n;
    if (end < p) return false;
    auto it = m.upper_bound(p);
    if (it == m.begin()) return false;
    --it;
    // [p, end) may span adjacent ranges (VMM mappings side by side in one reservation).
    for (uintptr_t at = p;;) {
        const uintptr_t rangeEnd = it->first + std::max<size_t>(it->second.size, 1);
        if (at < it->first || at >= rangeEnd) return false;
        if (end <= rangeEnd) return true;
        at = rangeEnd;
        if (++it == m.end()) return false;
    }
}

CUresult allocDevice(CUdeviceptr* p, size_t bytes, MemKind kind, unsigned flags, bool zero, size_t align)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    if (!currentContext()) return noContextError();
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    void* m = aligned_alloc(align, (bytes + align - 1) & ~(align - 1));
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    if (zero) memset(m, 0, bytes);
    addRange(reinterpret_cast<uintptr_t>(m), bytes, kind, flags);
    *p = reinterpret_cast<CUdeviceptr>(m);
    return CUDA_SUCCESS;
}

void addSharedRange(uintptr_t base, size_t size, int dev, Context* ctx)
{
    Range r;
    r.size = size;
    r.kind = MemKind::Device;
    r.dev = dev;
    r.ctx = ctx;
    r.imported = true;
    RangesWriteLock g;
    ranges()[base] = r;
}

bool removeSharedRange(uintptr_t base)
{
    RangesWriteLock g;
    return ranges().erase(base) != 0;
}

PtrKind classifyPtr(const void* p, int* dev)
{
    Range r;
    if (!findRange(reinterpret_cast<uintptr_t>(p), nullptr, &r)) return PtrKind::Pageable;
    if (dev) *dev = r.dev;
    switch (r.kind) {
    case MemKind::Device: return PtrKind::Device;
    case MemKind::Managed: return PtrKind::Managed;
    case MemKind::Pinned:
    case MemKind::Registered: return PtrKind::Pinned;
    }
    return PtrKind::Pageable;
}

const char* ptrKindName(PtrKind k)
{
    switch (k) {
    case PtrKind::Pageable: return "pageable";
    case PtrKind::Pinned: return "pinned";
    case PtrKind::Managed: return "managed";
    case PtrKind::Device: return "device";
    }
    return "?";
}

void trimPools()
{
    std::lock_guard<std::mutex> g(poolLock());
    for (Pool* p : pools())
        if (p->reserved > p->releaseThreshold) trimPool(p, p->releaseThreshold);
}

}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes)
{
    SIM_API(cuMemAlloc_v2);
    return scope.ret(allocDevice(p, bytes, MemKind::Device, 0, true, kPageBytes));
}

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t width, size_t height, unsigned elem)
{
    SIM_API(cuMemAllocPitch_v2);
    if (!pitch || (elem != 4 && elem != 8 && elem != 16)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *pitch = (width + 511) & ~size_t(511);
    return scope.ret(allocDevice(p, *pitch * height, MemKind::Device, 0, true, kPageBytes));
}

SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* p, size_t bytes, unsigned flags)
{
    SIM_API(cuMemAllocManaged);
    return scope.ret(allocDevice(p, bytes, MemKind::Managed, flags));
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    SIM_API(cuMemFree_v2);
    return scope.ret(freeOwned(p, false, scope.name()));
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytes)
{
    SIM_API(cuMemAllocHost_v2);
    return scope.ret(hostAlloc(pp, bytes, 0));
}

SIM_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned flags)
{
    SIM_API(cuMemHostAlloc);
    return scope.ret(hostAlloc(pp, bytes, flags));
}

SIM_EXPORT CUresult cuMemFreeHost(void* p)
{
    SIM_API(cuMemFreeHost);
    return scope.ret(freeOwned(reinterpret_cast<uintptr_t>(p), true, scope.name()));
}

SIM_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned flags)
{
    SIM_API(cuMemHostRegister_v2);
    return scope.ret(hostRegister(p, bytes, flags, scope.name()));
}

SIM_EXPORT CUresult cuMemHostRegister(void* p, size_t bytes, unsigned flags)
{
    SIM_API(cuMemHostRegister);
    return scope.ret(hostRegister(p, bytes, flags, scope.name()));
}

SIM_EXPORT CUresult cuMemHostUnregister(void* p)
{
    SIM_API(cuMemHostUnregister);
    return scope.ret(hostUnregister(p, scope.name()));
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* d, void* p, unsigned)
{
    SIM_API(cuMemHostGetDevicePointer_v2);
    if (!d) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (classifyPtr(p) != PtrKind::Pinned) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *d = reinterpret_cast<CUdeviceptr>(p);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemHostGetFlags(unsigned* f, void* p)
{
    SIM_API(cuMemHostGetFlags);
    Range r;
    if (!f || !findRange(reinterpret_cast<uintptr_t>(p), nullptr, &r) || r.kind != MemKind::Pinned)
        return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *f = r.flags;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p)
{
    SIM_API(cuMemGetAddressRange_v2);
    uintptr_t b;
    Range r;
    if (!findRange(p, &b, &r) || r.kind == MemKind::Pinned || r.kind == MemKind::Registered)
        return scope.ret(CUDA_ERROR_NOT_FOUND);
    if (base) *base = b;
    if (size) *size = r.size;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p)
{
    SIM_API(cuPointerGetAttribute);
    return scope.ret(pointerAttribute(data, a, p));
}

SIM_EXPORT CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute* as, void** data, CUdeviceptr p)
{
    SIM_API(cuPointerGetAttributes);
    if (!as || !data) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    // Unlike the single-attribute call, unknown (pageable) memory succeeds with zeroed answers here,
    // as on the real driver: MEMORY_TYPE 0 tells the caller "not ours".
    for (unsigned i = 0; i < n; ++i) {
        if (pointerAttribute(data[i], as[i], p) != CUDA_SUCCESS) {
            const size_t size = as[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE || as[i] == CU_POINTER_ATTRIBUTE_CONTEXT ||
                                        as[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
                                        as[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER ||
                                        as[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
                                        as[i] == CU_POINTER_ATTRIBUTE_BUFFER_ID
                                    ? 8
                                    : 4;
            if (data[i]) memset(data[i], 0, size);
            if (as[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL && data[i]) *static_cast<int*>(data[i]) = -2;
        }
    }
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr, size_t, CUdevice, CUstream h)
{
    SIM_API(cuMemPrefetchAsync);
    return scope.ret(streamStatus(h, false));
}

SIM_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr, size_t, CUdevice, CUstream h)
{
    SIM_API(cuMemPrefetchAsync_ptsz);
    return scope.ret(streamStatus(h, true));
}

SIM_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream h)
{
    SIM_API(cuMemPrefetchAsync_v2);
    return scope.ret(streamStatus(h, false));
}

SIM_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream h)
{
    SIM_API(cuMemPrefetchAsync_v2_ptsz);
    return scope.ret(streamStatus(h, true));
}

// Discards (CUDA 13): managed ranges only (this driver reports no pageable memory access), flags zero, not
// the legacy NULL stream. Like prefetches they queue no traced device op: the bytes stay where they are
// (discarded contents are undefined, so keeping them is allowed).
static CUresult discardBatch(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags, CUstream h, bool pt)
{
    if (!dptrs || !sizes || !count || flags) return CUDA_ERROR_INVALID_VALUE;
    if (h == CU_STREAM_LEGACY || (!h && !pt)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
        Range r;
        if (!sizes[i] || !findRange(dptrs[i], nullptr, &r) || r.kind != MemKind::Managed || !rangeCovers(dptrs[i], sizes[i]))
            return CUDA_ERROR_INVALID_VALUE;
    }
    return streamStatus(h, pt);
}

static CUresult discardAndPrefetchBatch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locs, size_t* locIdxs,
                                 size_t numLocs, unsigned long long flags, CUstream h, bool pt)
{
    if (!locs || !locIdxs || !numLocs || numLocs > count || locIdxs[0] != 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 1; i < numLocs; ++i)
        if (locIdxs[i] <= locIdxs[i - 1] || locIdxs[i] >= count) return CUDA_ERROR_INVALID_VALUE;
    return discardBatch(dptrs, sizes, count, flags, h, pt);
}

// Prefetches (CUDA 13): the ranges must be managed memory (this driver reports no pageable memory
// access), the locations' indexes ascending from 0, flags zero, not the legacy NULL stream. Like
// cuMemPrefetchAsync they queue no traced device op: the bytes already are where any side reads them.
static CUresult prefetchBatch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locs, size_t* locIdxs,
                              size_t numLocs, unsigned long long flags, CUstream h, bool pt)
{
    if (!locs || !locIdxs || !numLocs || numLocs > count || locIdxs[0] != 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 1; i < numLocs; ++i)
        if (locIdxs[i] <= locIdxs[i - 1] || locIdxs[i] >= count) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numLocs; ++i) {
        const CUmemLocation& l = locs[i];
        const bool device = l.type == CU_MEM_LOCATION_TYPE_DEVICE && l.id >= 0 && l.id < deviceCount();
        const bool host = l.type == CU_MEM_LOCATION_TYPE_HOST || l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                          l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
        if (!device && !host) return CUDA_ERROR_INVALID_VALUE;
    }
    return discardBatch(dptrs, sizes, count, flags, h, pt);
}

extern "C" CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr*, size_t*, size_t, CUmemLocation*, size_t*, size_t,
                                                 unsigned long long, CUstream);
SIM_PAIR(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz,
         (CUdeviceptr* d, size_t* sz, size_t n, CUmemLocation* l, size_t* li, size_t nl, unsigned long long f, CUstream h),
         prefetchBatch(d, sz, n, l, li, nl, f, h, pt))
SIM_PAIR(cuMemDiscardBatchAsync, cuMemDiscardBatchAsync_ptsz,
         (CUdeviceptr* d, size_t* sz, size_t n, unsigned long long f, CUstream h), discardBatch(d, sz, n, f, h, pt))
SIM_PAIR(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync_ptsz,
         (CUdeviceptr* d, size_t* sz, size_t n, CUmemLocation* l, size_t* li, size_t nl, unsigned long long f, CUstream h),
         discardAndPrefetchBatch(d, sz, n, l, li, nl, f, h, pt))

SIM_EXPORT CUresult cuMemAdvise(CUdeviceptr, size_t, CUmem_advise, CUdevice)
{
    SIM_API(cuMemAdvise);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr, size_t, CUmem_advise, CUmemLocation)
{
    SIM_API(cuMemAdvise_v2);
    return scope.ret(CUDA_SUCCESS);
}

// ---- stream-ordered allocation and pools
SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t bytes, CUstream h)
{
    SIM_API(cuMemAllocAsync);
    return scope.ret(allocAsync(p, bytes, h, false, nullptr));
}

SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* p, size_t bytes, CUstream h)
{
    SIM_API(cuMemAllocAsync_ptsz);
    return scope.ret(allocAsync(p, bytes, h, true, nullptr));
}

SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t bytes, CUmemoryPool pool, CUstream h)
{
    SIM_API(cuMemAllocFromPoolAsync);
    if (!asPool(pool)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(allocAsync(p, bytes, h, false, asPool(pool)));
}

SIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* p, size_t bytes, CUmemoryPool pool, CUstream h)
{
    SIM_API(cuMemAllocFromPoolAsync_ptsz);
    if (!asPool(pool)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(allocAsync(p, bytes, h, true, asPool(pool)));
}

SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream h)
{
    SIM_API(cuMemFreeAsync);
    return scope.ret(freeAsync(p, h, false));
}

SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream h)
{
    SIM_API(cuMemFreeAsync_ptsz);
    return scope.ret(freeAsync(p, h, true));
}

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice d)
{
    SIM_API(cuDeviceGetDefaultMemPool);
    if (!pool) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *pool = defaultPool(d);
    return scope.ret(*pool ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE);
}

SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice d)
{
    SIM_API(cuDeviceGetMemPool);
    if (!pool) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!defaultPool(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    *pool = device(d)->currentPool;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice d, CUmemoryPool pool)
{
    SIM_API(cuDeviceSetMemPool);
    if (!defaultPool(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    if (!asPool(pool)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    device(d)->currentPool = pool;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props)
{
    SIM_API(cuMemPoolCreate);
    if (!pool || !props) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    auto* p = new Pool;
    p->dev = props->location.id;
    registerHandle(p, HandleKind::Pool);
    {
        std::lock_guard<std::mutex> g(poolLock());
        pools().push_back(p);
    }
    *pool = reinterpret_cast<CUmemoryPool>(p);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    SIM_API(cuMemPoolDestroy);
    Pool* p = asPool(pool);
    if (!p) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    {
        std::lock_guard<std::mutex> g(poolLock());
        auto& v = pools();
        v.erase(std::remove(v.begin(), v.end(), p), v.end());
    }
    retireHandle(p);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    SIM_API(cuMemPoolTrimTo);
    Pool* p = asPool(pool);
    if (!p) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    std::lock_guard<std::mutex> g(poolLock());
    trimPool(p, keep);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v)
{
    SIM_API(cuMemPoolSetAttribute);
    Pool* p = asPool(pool);
    if (!p || !v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    std::lock_guard<std::mutex> g(poolLock());
    switch (a) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->releaseThreshold = *static_cast<cuuint64_t*>(v); break;
    // The high-water marks may only be reset (to the current value), by setting 0.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*static_cast<cuuint64_t*>(v) != 0) return scope.ret(CUDA_ERROR_INVALID_VALUE);
        if (a == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) p->reservedHigh = p->reserved;
        else p->usedHigh = p->used;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: return scope.ret(CUDA_ERROR_INVALID_VALUE);
    default: break;
    }
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* v)
{
    SIM_API(cuMemPoolGetAttribute);
    Pool* p = asPool(pool);
    if (!p || !v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    std::lock_guard<std::mutex> g(poolLock());
    switch (a) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *static_cast<cuuint64_t*>(v) = p->releaseThreshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *static_cast<cuuint64_t*>(v) = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *static_cast<cuuint64_t*>(v) = p->reservedHigh; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *static_cast<cuuint64_t*>(v) = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *static_cast<cuuint64_t*>(v) = p->usedHigh; break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *static_cast<int*>(v) = 1; break;
    default: *static_cast<cuuint64_t*>(v) = 0; break;
    }
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc*, size_t)
{
    SIM_API(cuMemPoolSetAccess);
    return scope.ret(asPool(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

SIM_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool, CUmemLocation*)
{
    SIM_API(cuMemPoolGetAccess);
    if (!flags || !asPool(pool)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return scope.ret(CUDA_SUCCESS);
}

// ---- virtual memory management: reservations are PROT_NONE mappings, physical handles are memfds
SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags)
{
    SIM_API(cuMemGetAllocationGranularity);
    if (!g || !prop) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *g = kGranularity;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t, CUdeviceptr addr, unsigned long long)
{
    SIM_API(cuMemAddressReserve);
    if (!ptr || !size || size % kGranularity) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    void* m = mmap(reinterpret_cast<void*>(addr), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return scope.ret(CUDA_ERROR_OUT_OF_MEMORY);
    Lock g(bigLock());
    reservations()[reinterpret_cast<uintptr_t>(m)] = size;
    *ptr = reinterpret_cast<CUdeviceptr>(m);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    SIM_API(cuMemAddressFree);
    Lock g(bigLock());
    auto it = reservations().find(ptr);
    if (it == reservations().end() || it->second != size) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    munmap(reinterpret_cast<void*>(ptr), size);
    reservations().erase(it);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp* prop,
                                unsigned long long)
{
    SIM_API(cuMemCreate);
    if (!h || !prop || !size || size % kGranularity) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    // The location travels in the memfd's name: a process importing the descriptor learns it from there.
    char name[48];
    snprintf(name, sizeof name, "simcuda-vmm-%d-%d", static_cast<int>(prop->location.type), prop->location.id);
    const int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return scope.ret(CUDA_ERROR_OUT_OF_MEMORY);
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        close(fd);
        return scope.ret(CUDA_ERROR_OUT_OF_MEMORY);
    }
    auto* ph = new Phys;
    ph->fd = fd;
    ph->size = size;
    ph->dev = prop->location.id;
    ph->prop = *prop;
    registerHandle(ph, HandleKind::Phys);
    *h = reinterpret_cast<CUmemGenericAllocationHandle>(ph);
    return scope.ret(CUDA_SUCCESS);
}

// Shared between processes (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, requested at cuMemCreate): the export is a
// new descriptor of the allocation's memfd, which the importer maps as the same bytes. The caller owns both
// descriptors (the driver keeps neither), as with the real driver.
SIM_EXPORT CUresult cuMemExportToShareableHandle(void* out, CUmemGenericAllocationHandle h, CUmemAllocationHandleType type,
                                                 unsigned long long flags)
{
    SIM_API(cuMemExportToShareableHandle);
    Phys* ph = asPhys(h);
    if (!out || !ph || flags) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return scope.ret(CUDA_ERROR_NOT_SUPPORTED);
    if (!(ph->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    const int fd = dup(ph->fd);
    if (fd < 0) return scope.ret(CUDA_ERROR_OUT_OF_MEMORY);
    *static_cast<int*>(out) = fd;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* h, void* osHandle,
                                                   CUmemAllocationHandleType type)
{
    SIM_API(cuMemImportFromShareableHandle);
    if (!h) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return scope.ret(CUDA_ERROR_NOT_SUPPORTED);
    const int given = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
    // Only a descriptor this driver exported (a memfd named for its device) is an allocation.
    char link[64], target[128];
    snprintf(link, sizeof link, "/proc/self/fd/%d", given);
    const ssize_t n = readlink(link, target, sizeof target - 1);
    int where = -1, id = -1;
    struct stat st;
    if (n <= 0 || fstat(given, &st) != 0) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    target[n] = 0;
    if (sscanf(target, "/memfd:simcuda-vmm-%d-%d", &where, &id) != 2 || st.st_size <= 0 ||
        st.st_size % static_cast<off_t>(kGranularity))
        return scope.ret(CUDA_ERROR_INVALID_VALUE);
    const int fd = fcntl(given, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return scope.ret(CUDA_ERROR_OUT_OF_MEMORY);
    auto* ph = new Phys;
    ph->fd = fd;
    ph->size = static_cast<size_t>(st.st_size);
    ph->dev = id;  // as cuMemCreate keeps it: the location's id
    ph->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    ph->prop.location.type = static_cast<CUmemLocationType>(where);
    ph->prop.location.id = id;
    ph->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    registerHandle(ph, HandleKind::Phys);
    *h = reinterpret_cast<CUmemGenericAllocationHandle>(ph);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    SIM_API(cuMemRelease);
    Phys* ph = asPhys(h);
    if (!ph) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Lock g(bigLock());
    if (--ph->refs > 0) return scope.ret(CUDA_SUCCESS);
    close(ph->fd);  // mappings keep the memory alive, as the real driver's do
    retireHandle(ph);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long)
{
    SIM_API(cuMemMap);
    Phys* ph = asPhys(h);
    if (!ph || !size || offset + size > ph->size) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    void* m = mmap(reinterpret_cast<void*>(ptr), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, ph->fd,
                   static_cast<off_t>(offset));
    if (m == MAP_FAILED) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Range r;
    r.size = size;
    r.kind = MemKind::Device;
    r.dev = ph->dev;
    r.ctx = primaryContext(ph->dev);
    r.vmm = ph;
    RangesWriteLock g;
    ranges()[ptr] = r;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    SIM_API(cuMemUnmap);
    RangesWriteLock g;
    auto it = ranges().find(ptr);
    if (it == ranges().end() || it->second.size != size) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    ranges().erase(it);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t, const CUmemAccessDesc* desc, size_t count)
{
    SIM_API(cuMemSetAccess);
    if (!desc || !count || !findRange(ptr, nullptr, nullptr)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop, CUmemGenericAllocationHandle h)
{
    SIM_API(cuMemGetAllocationPropertiesFromHandle);
    Phys* ph = asPhys(h);
    if (!ph || !prop) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *prop = ph->prop;
    return scope.ret(CUDA_SUCCESS);
}

// The allocation mapped at addr, with one more reference (released with cuMemRelease). An allocation whose every
// handle was released while still mapped is not handed out again (INVALID_VALUE; a real driver would).
SIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* h, void* addr)
{
    SIM_API(cuMemRetainAllocationHandle);
    Range r;
    if (!h || !findRange(reinterpret_cast<uintptr_t>(addr), nullptr, &r) || !r.vmm) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Phys* ph = asPhys(reinterpret_cast<CUmemGenericAllocationHandle>(r.vmm));
    if (!ph) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Lock g(bigLock());
    ++ph->refs;
    *h = reinterpret_cast<CUmemGenericAllocationHandle>(ph);
    return scope.ret(CUDA_SUCCESS);
}
