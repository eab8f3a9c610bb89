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
CUresult allocated(CallScope& s, CUresult rc, uint64_t ptr, uint64_t bytes, MemKind kind)
{
    if (rc == CUDA_SUCCESS) memAddRange(ptr, bytes, kind);
    if (s.active()) describeAlloc(s, rc == CUDA_SUCCESS ? ptr : 0, bytes, kind);
    return s.finish(rc);
}

template <Api A>
CUresult memAlloc(CUdeviceptr* p, size_t bytes)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemAlloc_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(p, bytes);
    return allocated(s, rc, rc == CUDA_SUCCESS && p ? *p : 0, bytes, MemKind::Device);
}

template <Api A>
CUresult memAllocPitch(CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned int elem)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemAllocPitch_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(p, pitch, w, h, elem);
    const bool ok = rc == CUDA_SUCCESS && p && pitch;
    return allocated(s, rc, ok ? *p : 0, ok ? uint64_t(*pitch) * h : uint64_t(w) * h, MemKind::Device);
}

template <Api A>
CUresult memAllocManaged(CUdeviceptr* p, size_t bytes, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemAllocManaged)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(p, bytes, flags);
    return allocated(s, rc, rc == CUDA_SUCCESS && p ? *p : 0, bytes, MemKind::Managed);
}

template <Api A>
CUresult memAllocAsync(CUdeviceptr* p, size_t bytes, CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemAllocAsync)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.setFlags(wire::kCallAsync);
    s.beforeReal();
    const CUresult rc = real(p, bytes, stream);
    return allocated(s, rc, rc == CUDA_SUCCESS && p ? *p : 0, bytes, MemKind::Device);
}

template <Api A>
CUresult memAllocFromPoolAsync(CUdeviceptr* p, size_t bytes, CUmemoryPool pool, CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemAllocFromPoolAsync)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.setStream(stream);
    s.setFlags(wire::kCallAsync);
    s.beforeReal();
    const CUresult rc = real(p, bytes, pool, stream);
    return allocated(s, rc, rc == CUDA_SUCCESS && p ? *p : 0, bytes, MemKind::Device);
}

// Frees and (un)registrations synchronise the device (CUDA "API synchronization behavior") when they
// do something: freeing null (cudaFree(nullptr), cudart's way to initialise) and a call the driver
// refused wait for nothing.
void syncedIf(CallScope& s, CUresult rc, bool didSomething)
{
    if (rc == CUDA_SUCCESS && didSomething) s.setFlags(wire::kCallImplicitSync);
}

template <Api A>
CUresult memFree(CUdeviceptr p)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemFree_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeAlloc(s, p, 0, memKindOf(p, false));
    s.beforeReal();
    const CUresult rc = real(p);
    if (rc == CUDA_SUCCESS) memRemoveRange(p);
    syncedIf(s, rc, p != 0);
    return s.finish(rc);
}

template <Api A>
CUresult memFreeAsync(CUdeviceptr p, CUstream stream)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemFreeAsync)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        describeAlloc(s, p, 0, MemKind::Device);
        s.setStream(stream);
        s.setFlags(wire::kCallAsync);
    }
    s.beforeReal();
    const CUresult rc = real(p, stream);
    if (rc == CUDA_SUCCESS) memRemoveRange(p);
    return s.finish(rc);
}

template <Api A>
CUresult memHostAlloc(void** pp, size_t bytes, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemHostAlloc)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(pp, bytes, flags);
    return allocated(s, rc, rc == CUDA_SUCCESS && pp ? uint64_t(uintptr_t(*pp)) : 0, bytes, MemKind::Pinned);
}

template <Api A>
CUresult memAllocHost(void** pp, size_t bytes)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemAllocHost_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(pp, bytes);
    return allocated(s, rc, rc == CUDA_SUCCESS && pp ? uint64_t(uintptr_t(*pp)) : 0, bytes, MemKind::Pinned);
}

template <Api A>
CUresult memFreeHost(void* p)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemFreeHost)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeAlloc(s, uint64_t(uintptr_t(p)), 0, MemKind::Pinned);
    s.beforeReal();
    const CUresult rc = real(p);
    if (rc == CUDA_SUCCESS) memRemoveRange(uint64_t(uintptr_t(p)));
    syncedIf(s, rc, p != nullptr);
    return s.finish(rc);
}

// Registering host memory synchronises the device.
template <Api A>
CUresult memHostRegister(void* p, size_t bytes, unsigned int flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemHostRegister_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(p, bytes, flags);
    syncedIf(s, rc, true);
    return allocated(s, rc, uint64_t(uintptr_t(p)), bytes, MemKind::Pinned);
}

template <Api A>
CUresult memHostUnregister(void* p)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemHostUnregister)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeAlloc(s, uint64_t(uintptr_t(p)), 0, MemKind::Pinned);
    s.beforeReal();
    const CUresult rc = real(p);
    if (rc == CUDA_SUCCESS) memRemoveRange(uint64_t(uintptr_t(p)));
    syncedIf(s, rc, p != nullptr);
    return s.finish(rc);
}

// ---- the VMM path (PyTorch's expandable segments): create physical memory, map it, release it
template <Api A>
CUresult memCreate(CUmemGenericAllocationHandle* h, size_t bytes, const CUmemAllocationProp* prop, unsigned long long flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemCreate)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(h, bytes, prop, flags);
    if (s.active()) describeAlloc(s, rc == CUDA_SUCCESS && h ? uint64_t(*h) : 0, bytes, MemKind::Device);
    return s.finish(rc);
}

template <Api A>
CUresult memMap(CUdeviceptr p, size_t bytes, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemMap)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(p, bytes, offset, h, flags);
    return allocated(s, rc, p, bytes, MemKind::Device);
}

template <Api A>
CUresult memUnmap(CUdeviceptr p, size_t bytes)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemUnmap)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeAlloc(s, p, bytes, MemKind::Device);
    s.beforeReal();
    const CUresult rc = real(p, bytes);
    if (rc == CUDA_SUCCESS) memRemoveRange(p);
    return s.finish(rc);
}

template <Api A>
CUresult memRelease(CUmemGenericAllocationHandle h)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuMemRelease)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeAlloc(s, uint64_t(h), 0, MemKind::Device);
    s.beforeReal();
    return s.finish(real(h));
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
