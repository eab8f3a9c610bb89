// Copies and memsets: direction and host-memory kind from the pointers, bandwidth-modelled durations, sync rules.
#include "sim.h"

#include <cstring>

namespace simcuda {
namespace {

struct Direction {
    const char* dir;
    PtrKind host;  // the host-side pointer's kind; Device for DtoD/PtoP
};

// Unified addressing: the pointers alone decide the direction (cuMemcpy, cuMemcpyAsync, 2D/3D with UNIFIED).
Direction directionOf(const void* dst, const void* src)
{
    int sdev = 0, ddev = 0;
    const PtrKind s = classifyPtr(src, &sdev), d = classifyPtr(dst, &ddev);
    if (s == PtrKind::Device && d == PtrKind::Device) return {sdev != ddev ? "PtoP" : "DtoD", PtrKind::Device};
    if (s == PtrKind::Device) return {"DtoH", d};
    if (d == PtrKind::Device) return {"HtoD", s};
    if (s == PtrKind::Managed && d == PtrKind::Managed) return {"DtoD", PtrKind::Device};
    if (s == PtrKind::Managed) return {"DtoH", d};
    if (d == PtrKind::Managed) return {"HtoD", s};
    return {"HtoH", s == PtrKind::Pageable || d == PtrKind::Pageable ? PtrKind::Pageable : PtrKind::Pinned};
}

double bandwidth(const Direction& d)
{
    const Config& c = config();
    if (!strcmp(d.dir, "DtoD")) return c.bwDtoD;
    if (!strcmp(d.dir, "PtoP")) return c.bwPtoP;
    if (!strcmp(d.dir, "HtoH")) return c.bwHtoH;
    return d.host == PtrKind::Pageable ? c.bwPageable : c.bwPinned;
}

Op copyOp(size_t bytes, Direction d, bool async, std::function<void()> effect)
{
    Op op;
    op.kind = OpKind::Memcpy;
    op.bytes = bytes;
    op.dir = d.dir;
    op.hostMem = ptrKindName(d.host);
    op.duration = config().copyFixed + static_cast<Ns>(static_cast<double>(bytes) / bandwidth(d));
    // A non-Async copy blocks; an Async one with pageable host memory is staged and so blocks as well.
    op.sync = !async || d.host == PtrKind::Pageable;
    op.reason = !async ? WaitReason::SyncCopy : WaitReason::PageableCopy;
    op.effect = std::move(effect);
    return op;
}

// Device-side addresses must lie in memory this driver handed out (address 0 never does): the real driver
// answers CUDA_ERROR_INVALID_VALUE for anything else, and we must not touch such memory.
bool deviceOk(const void* p, size_t n) { return !n || rangeCovers(reinterpret_cast<uintptr_t>(p), n); }

// A unified-addressing pointer: host memory we do not know is pageable and fine; one inside a known range must
// keep the whole extent inside known memory.
bool unifiedOk(const void* p, size_t n)
{
    if (!n) return true;
    if (!p) return false;
    return !findRange(reinterpret_cast<uintptr_t>(p), nullptr, nullptr) || rangeCovers(reinterpret_cast<uintptr_t>(p), n);
}

CUresult submitCopy(const char* api, CUstream h, bool pt, Op op)
{
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    return submitOp(s, std::move(op), api);
}

CUresult linear(const char* api, CUstream h, bool pt, bool async, void* dst, const void* src, size_t n, const char* forced)
{
    if ((!dst || !src) && n) return CUDA_ERROR_INVALID_VALUE;
    const bool devDst = forced && strcmp(forced, "DtoH") != 0, devSrc = forced && strcmp(forced, "HtoD") != 0;
    if (!(devDst ? deviceOk(dst, n) : unifiedOk(dst, n)) || !(devSrc ? deviceOk(src, n) : unifiedOk(src, n)))
        return CUDA_ERROR_INVALID_VALUE;
    Direction d = directionOf(dst, src);
    if (forced) {
        // Explicit-direction calls trust their name for the direction; the host pointer still decides pinned/pageable.
        if (!strcmp(forced, "HtoD")) d = {"HtoD", classifyPtr(src) == PtrKind::Device ? PtrKind::Pinned : classifyPtr(src)};
        else if (!strcmp(forced, "DtoH")) d = {"DtoH", classifyPtr(dst) == PtrKind::Device ? PtrKind::Pinned : classifyPtr(dst)};
        else if (strcmp(d.dir, "PtoP") != 0) d = {"DtoD", PtrKind::Device};
    }
    return submitCopy(api, h, pt, copyOp(n, d, async, [dst, src, n] { memmove(dst, src, n); }));
}

CUresult peer(const char* api, CUstream h, bool pt, bool async, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
              CUcontext sctx, size_t n)
{
    Context *dc = asContext(dctx), *sc = asContext(sctx);
    if (!dc) return contextError(dctx);
    if (!sc) return contextError(sctx);
    if (!deviceOk(reinterpret_cast<const void*>(dst), n) || !deviceOk(reinterpret_cast<const void*>(src), n))
        return CUDA_ERROR_INVALID_VALUE;
    const Direction d{dc->dev != sc->dev ? "PtoP" : "DtoD", PtrKind::Device};
    void* dp = reinterpret_cast<void*>(dst);
    const void* sp = reinterpret_cast<const void*>(src);
    return submitCopy(api, h, pt, copyOp(n, d, async, [dp, sp, n] { memmove(dp, sp, n); }));
}

// One side of a 2D/3D copy: a host or device address with the caller's pitch and height, or a CUDA array
// (its buffer, with the array's packed pitch and height).
struct Side {
    const char* base = nullptr;
    size_t pitch = 0, height = 0;
    const SimArray* array = nullptr;
};

Side sideOf(CUmemorytype type, const void* host, CUdeviceptr dev, CUarray arr, size_t pitch, size_t height)
{
    Side s;
    if (type == CU_MEMORYTYPE_ARRAY) {
        s.array = asArray(arr);
        if (s.array) s.base = s.array->data, s.pitch = s.array->rowBytes, s.height = s.array->height;
        return s;
    }
    s.base = type == CU_MEMORYTYPE_HOST ? static_cast<const char*>(host) : reinterpret_cast<const char*>(dev);
    s.pitch = pitch;
    s.height = height;
    return s;
}

// `first` is the side's first byte, `extent` the bytes from there to its last one.
bool sideOk(CUmemorytype type, const Side& s, const char* first, size_t extent)
{
    if (!extent) return true;
    if (!s.base) return false;
    if (s.array) return first >= s.base && first + extent <= s.base + s.array->bytes();
    return type == CU_MEMORYTYPE_DEVICE ? deviceOk(first, extent) : unifiedOk(first, extent);
}

// An array is device memory: the other side's pointer decides host or device (as for unified addresses).
Direction directionOfSides(const Side& dst, const char* dp, const Side& src, const char* sp)
{
    if (!dst.array && !src.array) return directionOf(dp, sp);
    if (dst.array && src.array) return {"DtoD", PtrKind::Device};
    const PtrKind other = classifyPtr(dst.array ? sp : dp);
    if (other == PtrKind::Device || other == PtrKind::Managed) return {"DtoD", PtrKind::Device};
    return {dst.array ? "HtoD" : "DtoH", other};
}

CUresult copy2D(const char* api, CUstream h, bool pt, bool async, const CUDA_MEMCPY2D* c)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    const CUDA_MEMCPY2D p = *c;
    const Side ss = sideOf(p.srcMemoryType, p.srcHost, p.srcDevice, p.srcArray, p.srcPitch, 0);
    const Side ds = sideOf(p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.dstPitch, 0);
    if ((p.srcMemoryType == CU_MEMORYTYPE_ARRAY && !ss.array) || (p.dstMemoryType == CU_MEMORYTYPE_ARRAY && !ds.array))
        return CUDA_ERROR_INVALID_HANDLE;
    const size_t sPitch = ss.pitch, dPitch = ds.pitch;
    const char* src = ss.base + p.srcY * sPitch + p.srcXInBytes;
    char* dst = const_cast<char*>(ds.base) + p.dstY * dPitch + p.dstXInBytes;
    const size_t rows = p.WidthInBytes && p.Height ? p.Height : 0;
    if (!sideOk(p.srcMemoryType, ss, src, rows ? (rows - 1) * sPitch + p.WidthInBytes : 0) ||
        !sideOk(p.dstMemoryType, ds, dst, rows ? (rows - 1) * dPitch + p.WidthInBytes : 0))
        return CUDA_ERROR_INVALID_VALUE;
    const Direction d = directionOfSides(ds, dst, ss, src);
    return submitCopy(api, h, pt, copyOp(p.WidthInBytes * p.Height, d, async, [p, src, dst, sPitch, dPitch] {
        for (size_t y = 0; y < p.Height; ++y) memmove(dst + y * dPitch, src + y * sPitch, p.WidthInBytes);
    }));
}

// CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER share these field names.
template <class T>
CUresult copy3DOp(const T* c, bool async, Op* out)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    const T p = *c;
    const Side ss = sideOf(p.srcMemoryType, p.srcHost, p.srcDevice, p.srcArray, p.srcPitch, p.srcHeight ? p.srcHeight : p.Height);
    const Side ds = sideOf(p.dstMemoryType, p.dstHost, p.dstDevice, p.dstArray, p.dstPitch, p.dstHeight ? p.dstHeight : p.Height);
    if ((p.srcMemoryType == CU_MEMORYTYPE_ARRAY && !ss.array) || (p.dstMemoryType == CU_MEMORYTYPE_ARRAY && !ds.array))
        return CUDA_ERROR_INVALID_HANDLE;
    const size_t sPitch = ss.pitch, dPitch = ds.pitch;
    const size_t srcSlice = sPitch * ss.height, dstSlice = dPitch * ds.height;
    const char* src = ss.base + p.srcZ * srcSlice + p.srcY * sPitch + p.srcXInBytes;
    char* dst = const_cast<char*>(ds.base) + p.dstZ * dstSlice + p.dstY * dPitch + p.dstXInBytes;
    const size_t depth = p.Depth ? p.Depth : 1;
    const bool any = p.WidthInBytes && p.Height;
    if (!sideOk(p.srcMemoryType, ss, src, any ? (depth - 1) * srcSlice + (p.Height - 1) * sPitch + p.WidthInBytes : 0) ||
        !sideOk(p.dstMemoryType, ds, dst, any ? (depth - 1) * dstSlice + (p.Height - 1) * dPitch + p.WidthInBytes : 0))
        return CUDA_ERROR_INVALID_VALUE;
    const Direction d = directionOfSides(ds, dst, ss, src);
    *out = copyOp(p.WidthInBytes * p.Height * depth, d, async, [p, src, dst, sPitch, dPitch, srcSlice, dstSlice, depth] {
        for (size_t z = 0; z < depth; ++z)
            for (size_t y = 0; y < p.Height; ++y)
                memmove(dst + z * dstSlice + y * dPitch, src + z * srcSlice + y * sPitch, p.WidthInBytes);
    });
    return CUDA_SUCCESS;
}

template <class T>
CUresult copy3D(const char* api, CUstream h, bool pt, bool async, const T* c)
{
    Op op;
    if (CUresult rc = copy3DOp(c, async, &op)) return rc;
    return submitCopy(api, h, pt, std::move(op));
}

// The linear array copies (HtoA, AtoH, DtoA, AtoD, AtoA): byte offsets into an array's packed buffer; the
// array side is device memory, the other side's kind decides pinned/pageable (a device pointer given as host
// memory is mapped pinned memory, as for cuMemcpyHtoD).
CUresult arrayBytes(CUarray h, size_t offset, size_t n, char** out)
{
    SimArray* a = asArray(h);
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    if (offset > a->bytes() || n > a->bytes() - offset) return CUDA_ERROR_INVALID_VALUE;
    *out = a->data + offset;
    return CUDA_SUCCESS;
}

PtrKind hostKind(const void* p)
{
    const PtrKind k = classifyPtr(p);
    return k == PtrKind::Device ? PtrKind::Pinned : k;
}

CUresult arrayCopy(const char* api, CUstream h, bool pt, bool async, CUarray dstArray, size_t dstOffset, void* dstPtr,
                   CUarray srcArray, size_t srcOffset, const void* srcPtr, size_t n, bool deviceOther)
{
    char* dst = static_cast<char*>(dstPtr);
    const char* src = static_cast<const char*>(srcPtr);
    if (dstArray) {
        char* p = nullptr;
        if (CUresult rc = arrayBytes(dstArray, dstOffset, n, &p)) return rc;
        dst = p;
    }
    if (srcArray) {
        char* p = nullptr;
        if (CUresult rc = arrayBytes(srcArray, srcOffset, n, &p)) return rc;
        src = p;
    }
    if ((!dst || !src) && n) return CUDA_ERROR_INVALID_VALUE;
    Direction d{"DtoD", PtrKind::Device};
    if (!dstArray || !srcArray) {
        const void* other = dstArray ? static_cast<const void*>(src) : dst;
        if (deviceOther ? !deviceOk(other, n) : !unifiedOk(other, n)) return CUDA_ERROR_INVALID_VALUE;
        if (!deviceOther) d = {dstArray ? "HtoD" : "DtoH", hostKind(other)};
    }
    return submitCopy(api, h, pt, copyOp(n, d, async, [dst, src, n] { memmove(dst, src, n); }));
}

CUresult batch(const char* api, CUstream h, bool pt, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
               size_t* failIdx)
{
    if (!dsts || !srcs || !sizes || !count) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
        const CUresult rc = linear(api, h, pt, true, reinterpret_cast<void*>(dsts[i]), reinterpret_cast<const void*>(srcs[i]),
                                   sizes[i], nullptr);
        if (rc != CUDA_SUCCESS) {
            if (failIdx) *failIdx = i;
            return rc;
        }
    }
    if (failIdx) *failIdx = SIZE_MAX;
    return CUDA_SUCCESS;
}

// cuMemcpy3DBatchAsync's operands as the CUDA_MEMCPY3D a copy of the batch is: extents in elements (1
// byte between pointers, the array's element otherwise); a pointer's rowLength/layerHeight of 0 packs
// it to the extent. One traced copy per operation, as cuMemcpyBatchAsync's; the batch as a whole is in
// stream order (copies within it in any order: here in list order).
CUresult batch3DOp(const CUDA_MEMCPY3D_BATCH_OP& b, CUDA_MEMCPY3D* out)
{
    const CUextent3D& e = b.extent;
    if (!e.width || !e.height || !e.depth) return CUDA_ERROR_INVALID_VALUE;
    if (b.srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || b.srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
        return CUDA_ERROR_INVALID_VALUE;
    size_t elem = 1;
    for (const CUmemcpy3DOperand* o : {&b.src, &b.dst}) {
        if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
            SimArray* a = asArray(o->op.array.array);
            if (!a) return CUDA_ERROR_INVALID_HANDLE;
            const size_t ae = a->rowBytes / a->desc.Width;
            if (elem != 1 && ae != elem) return CUDA_ERROR_INVALID_VALUE;  // two arrays: the same element size
            elem = ae;
        } else if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.WidthInBytes = e.width * elem;
    c.Height = e.height;
    c.Depth = e.depth;
    auto side = [&](const CUmemcpy3DOperand& o, CUmemorytype& type, CUdeviceptr& dev, CUarray& arr, size_t& x, size_t& y,
                    size_t& z, size_t& pitch, size_t& height) {
        if (o.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
            type = CU_MEMORYTYPE_ARRAY;
            arr = o.op.array.array;
            x = o.op.array.offset.x * elem;
            y = o.op.array.offset.y;
            z = o.op.array.offset.z;
            return o.op.array.offset.x + e.width <= asArray(arr)->desc.Width;
        }
        if ((o.op.ptr.rowLength && o.op.ptr.rowLength < e.width) || (o.op.ptr.layerHeight && o.op.ptr.layerHeight < e.height))
            return false;
        type = CU_MEMORYTYPE_UNIFIED;
        dev = o.op.ptr.ptr;
        pitch = (o.op.ptr.rowLength ? o.op.ptr.rowLength : e.width) * elem;
        height = o.op.ptr.layerHeight ? o.op.ptr.layerHeight : e.height;
        return true;
    };
    if (!side(b.src, c.srcMemoryType, c.srcDevice, c.srcArray, c.srcXInBytes, c.srcY, c.srcZ, c.srcPitch, c.srcHeight) ||
        !side(b.dst, c.dstMemoryType, c.dstDevice, c.dstArray, c.dstXInBytes, c.dstY, c.dstZ, c.dstPitch, c.dstHeight))
        return CUDA_ERROR_INVALID_VALUE;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult batch3D(const char* api, CUstream h, bool pt, size_t n, const CUDA_MEMCPY3D_BATCH_OP* ops, size_t* failIdx,
                 unsigned long long flags)
{
    if (failIdx) *failIdx = SIZE_MAX;
    if (!n || !ops || flags) return CUDA_ERROR_INVALID_VALUE;
    if (h == CU_STREAM_LEGACY || (!h && !pt)) return CUDA_ERROR_INVALID_VALUE;  // "must not be default NULL stream"
    // Every operation is checked before any is queued.
    std::vector<Op> copies(n);
    for (size_t i = 0; i < n; ++i) {
        CUDA_MEMCPY3D c;
        CUresult rc = batch3DOp(ops[i], &c);
        if (!rc) rc = copy3DOp(&c, true, &copies[i]);
        if (rc) {
            if (failIdx) *failIdx = i;
            return rc;
        }
    }
    for (Op& op : copies)
        if (CUresult rc = submitCopy(api, h, pt, std::move(op))) return rc;
    return CUDA_SUCCESS;
}

template <class T>
CUresult memsetOp(bool async, CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height, Op* out)
{
    if (width && height && (pitch < width * sizeof(T) || !deviceOk(reinterpret_cast<const void*>(dst),
                                                                   (height - 1) * pitch + width * sizeof(T))))
        return CUDA_ERROR_INVALID_VALUE;
    Op op;
    op.kind = OpKind::Memset;
    op.bytes = width * height * sizeof(T);
    op.duration = config().memsetFixed + static_cast<Ns>(static_cast<double>(op.bytes) / config().bwMemset);
    op.sync = !async;
    op.reason = WaitReason::SyncMemset;
    char* base = reinterpret_cast<char*>(dst);
    op.effect = [base, pitch, value, width, height] {
        for (size_t y = 0; y < height; ++y) {
            T* row = reinterpret_cast<T*>(base + y * pitch);
            for (size_t x = 0; x < width; ++x) row[x] = value;
        }
    };
    *out = std::move(op);
    return CUDA_SUCCESS;
}

template <class T>
CUresult memset2D(const char* api, CUstream h, bool pt, bool async, CUdeviceptr dst, size_t pitch, T value, size_t width,
                  size_t height)
{
    Op op;
    if (CUresult rc = memsetOp<T>(async, dst, pitch, value, width, height, &op)) return rc;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    return submitOp(s, std::move(op), api);
}

template <class T>
CUresult memset1D(const char* api, CUstream h, bool pt, bool async, CUdeviceptr dst, T value, size_t n)
{
    return memset2D<T>(api, h, pt, async, dst, n * sizeof(T), value, n, 1);
}

void* vp(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
const void* cvp(CUdeviceptr p) { return reinterpret_cast<const void*>(p); }

}  // namespace

// Graph nodes (graph.cpp): the op a memcpy or memset node runs at each launch, never blocking the host.
CUresult memcpyNodeOp(const CUDA_MEMCPY3D* c, Op* out) { return copy3DOp(c, true, out); }

CUresult memsetNodeOp(const CUDA_MEMSET_NODE_PARAMS* p, Op* out)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    const size_t height = p->height ? p->height : 1;
    const size_t pitch = height > 1 ? p->pitch : p->width * p->elementSize;
    switch (p->elementSize) {
    case 1: return memsetOp<unsigned char>(true, p->dst, pitch, static_cast<unsigned char>(p->value), p->width, height, out);
    case 2: return memsetOp<unsigned short>(true, p->dst, pitch, static_cast<unsigned short>(p->value), p->width, height, out);
    case 4: return memsetOp<unsigned int>(true, p->dst, pitch, p->value, p->width, height, out);
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

}  // namespace simcuda

using namespace simcuda;

// ---- synchronous copies (plain: legacy stream; _ptds: the thread's per-thread stream)
SIM_PAIR(cuMemcpy, cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n),
         linear(scope.name(), nullptr, pt, false, vp(dst), cvp(src), n, nullptr))
SIM_PAIR(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, (CUdeviceptr dst, const void* src, size_t n),
         linear(scope.name(), nullptr, pt, false, vp(dst), src, n, "HtoD"))
SIM_PAIR(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, (void* dst, CUdeviceptr src, size_t n),
         linear(scope.name(), nullptr, pt, false, dst, cvp(src), n, "DtoH"))
SIM_PAIR(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n),
         linear(scope.name(), nullptr, pt, false, vp(dst), cvp(src), n, "DtoD"))
SIM_PAIR(cuMemcpyPeer, cuMemcpyPeer_ptds, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n),
         peer(scope.name(), nullptr, pt, false, dst, dc, src, sc, n))
SIM_PAIR(cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D* c), copy2D(scope.name(), nullptr, pt, false, c))
SIM_PAIR(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D* c),
         copy2D(scope.name(), nullptr, pt, false, c))
SIM_PAIR(cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D* c), copy3D(scope.name(), nullptr, pt, false, c))
SIM_PAIR(cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER* c), copy3D(scope.name(), nullptr, pt, false, c))

// ---- asynchronous copies (plain: NULL is the legacy stream; _ptsz: NULL is the per-thread stream)
SIM_PAIR(cuMemcpyAsync, cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h),
         linear(scope.name(), h, pt, true, vp(dst), cvp(src), n, nullptr))
SIM_PAIR(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dst, const void* src, size_t n, CUstream h),
         linear(scope.name(), h, pt, true, vp(dst), src, n, "HtoD"))
SIM_PAIR(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, (void* dst, CUdeviceptr src, size_t n, CUstream h),
         linear(scope.name(), h, pt, true, dst, cvp(src), n, "DtoH"))
SIM_PAIR(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h),
         linear(scope.name(), h, pt, true, vp(dst), cvp(src), n, "DtoD"))
SIM_PAIR(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
         (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream h),
         peer(scope.name(), h, pt, true, dst, dc, src, sc, n))
SIM_PAIR(cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D* c, CUstream h),
         copy2D(scope.name(), h, pt, true, c))
SIM_PAIR(cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D* c, CUstream h),
         copy3D(scope.name(), h, pt, true, c))
SIM_PAIR(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER* c, CUstream h),
         copy3D(scope.name(), h, pt, true, c))
// ---- CUDA arrays (linear offsets into the array; 2D/3D copies with CU_MEMORYTYPE_ARRAY sides are above)
SIM_PAIR(cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds, (CUarray dst, size_t off, const void* src, size_t n),
         arrayCopy(scope.name(), nullptr, pt, false, dst, off, nullptr, nullptr, 0, src, n, false))
SIM_PAIR(cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds, (void* dst, CUarray src, size_t off, size_t n),
         arrayCopy(scope.name(), nullptr, pt, false, nullptr, 0, dst, src, off, nullptr, n, false))
SIM_PAIR(cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds, (CUarray dst, size_t off, CUdeviceptr src, size_t n),
         arrayCopy(scope.name(), nullptr, pt, false, dst, off, nullptr, nullptr, 0, cvp(src), n, true))
SIM_PAIR(cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds, (CUdeviceptr dst, CUarray src, size_t off, size_t n),
         arrayCopy(scope.name(), nullptr, pt, false, nullptr, 0, vp(dst), src, off, nullptr, n, true))
SIM_PAIR(cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds, (CUarray dst, size_t doff, CUarray src, size_t soff, size_t n),
         arrayCopy(scope.name(), nullptr, pt, false, dst, doff, nullptr, src, soff, nullptr, n, true))
SIM_PAIR(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz, (CUarray dst, size_t off, const void* src, size_t n, CUstream h),
         arrayCopy(scope.name(), h, pt, true, dst, off, nullptr, nullptr, 0, src, n, false))
SIM_PAIR(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz, (void* dst, CUarray src, size_t off, size_t n, CUstream h),
         arrayCopy(scope.name(), h, pt, true, nullptr, 0, dst, src, off, nullptr, n, false))
// 12080 ABI (with failIdx) and 13000 ABI (without)
SIM_PAIR(cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz,
         (CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes*, size_t*, size_t,
          size_t* failIdx, CUstream h),
         batch(scope.name(), h, pt, dsts, srcs, sizes, count, failIdx))
SIM_PAIR(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz,
         (CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes*, size_t*, size_t,
          CUstream h),
         batch(scope.name(), h, pt, dsts, srcs, sizes, count, nullptr))

// 12080 ABI (with failIdx) and 13000 ABI (without); cuda.h declares no _v2_ptsz, which cudart resolves.
extern "C" CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t, CUDA_MEMCPY3D_BATCH_OP*, unsigned long long, CUstream);
SIM_PAIR(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz,
         (size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* failIdx, unsigned long long flags, CUstream h),
         batch3D(scope.name(), h, pt, n, ops, failIdx, flags))
SIM_PAIR(cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz,
         (size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream h),
         batch3D(scope.name(), h, pt, n, ops, nullptr, flags))

// ---- memsets
SIM_PAIR(cuMemsetD8_v2, cuMemsetD8_v2_ptds, (CUdeviceptr d, unsigned char v, size_t n),
         memset1D<unsigned char>(scope.name(), nullptr, pt, false, d, v, n))
SIM_PAIR(cuMemsetD16_v2, cuMemsetD16_v2_ptds, (CUdeviceptr d, unsigned short v, size_t n),
         memset1D<unsigned short>(scope.name(), nullptr, pt, false, d, v, n))
SIM_PAIR(cuMemsetD32_v2, cuMemsetD32_v2_ptds, (CUdeviceptr d, unsigned int v, size_t n),
         memset1D<unsigned int>(scope.name(), nullptr, pt, false, d, v, n))
SIM_PAIR(cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds, (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h),
         memset2D<unsigned char>(scope.name(), nullptr, pt, false, d, pitch, v, w, h))
SIM_PAIR(cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds, (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h),
         memset2D<unsigned short>(scope.name(), nullptr, pt, false, d, pitch, v, w, h))
SIM_PAIR(cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds, (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h),
         memset2D<unsigned int>(scope.name(), nullptr, pt, false, d, pitch, v, w, h))
SIM_PAIR(cuMemsetD8Async, cuMemsetD8Async_ptsz, (CUdeviceptr d, unsigned char v, size_t n, CUstream s),
         memset1D<unsigned char>(scope.name(), s, pt, true, d, v, n))
SIM_PAIR(cuMemsetD16Async, cuMemsetD16Async_ptsz, (CUdeviceptr d, unsigned short v, size_t n, CUstream s),
         memset1D<unsigned short>(scope.name(), s, pt, true, d, v, n))
SIM_PAIR(cuMemsetD32Async, cuMemsetD32Async_ptsz, (CUdeviceptr d, unsigned int v, size_t n, CUstream s),
         memset1D<unsigned int>(scope.name(), s, pt, true, d, v, n))
SIM_PAIR(cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz,
         (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s),
         memset2D<unsigned char>(scope.name(), s, pt, true, d, pitch, v, w, h))
SIM_PAIR(cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz,
         (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s),
         memset2D<unsigned short>(scope.name(), s, pt, true, d, pitch, v, w, h))
SIM_PAIR(cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz,
         (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s),
         memset2D<unsigned int>(scope.name(), s, pt, true, d, pitch, v, w, h))
