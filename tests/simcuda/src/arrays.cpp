// CUDA arrays and mipmapped arrays: opaque handles over host memory of the descriptor's size (copies to and
// from them are in copies.cpp); nothing samples them, since kernels never run.
#include "sim.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace simcuda {
namespace {

struct SimMipmap {
    std::vector<SimArray*> levels;
};

// Bytes of one element of one channel; 0 for the formats this driver does not lay out (planar YUV,
// block-compressed, packed): those arrays are refused with NOT_SUPPORTED rather than mis-sized.
size_t formatBytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

CUresult createArray(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR& d)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (!currentContext()) return noContextError();
    const size_t elem = formatBytes(d.Format);
    if (!elem) return CUDA_ERROR_NOT_SUPPORTED;
    if (!d.Width || (d.NumChannels != 1 && d.NumChannels != 2 && d.NumChannels != 4) || (d.Depth && !d.Height))
        return CUDA_ERROR_INVALID_VALUE;
    auto* a = new SimArray;
    a->desc = d;
    a->rowBytes = d.Width * elem * d.NumChannels;
    a->height = d.Height ? d.Height : 1;
    a->depth = d.Depth ? d.Depth : 1;
    a->data = static_cast<char*>(calloc(a->bytes(), 1));
    if (!a->data) {
        delete a;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    registerHandle(a, HandleKind::Array);
    *out = reinterpret_cast<CUarray>(a);
    return CUDA_SUCCESS;
}

CUresult destroyArray(CUarray h)
{
    SimArray* a = asArray(h);
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    retireHandle(a);
    free(a->data);
    a->data = nullptr;
    return CUDA_SUCCESS;
}

CUDA_ARRAY3D_DESCRIPTOR from2D(const CUDA_ARRAY_DESCRIPTOR& d)
{
    CUDA_ARRAY3D_DESCRIPTOR r{};
    r.Width = d.Width;
    r.Height = d.Height;
    r.Format = d.Format;
    r.NumChannels = d.NumChannels;
    return r;
}

}  // namespace

SimArray* asArray(CUarray a) { return liveHandle<SimArray>(a, HandleKind::Array); }

}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuArrayCreate_v2(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d)
{
    SIM_API(cuArrayCreate_v2);
    if (!d) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(createArray(out, from2D(*d)));
}

SIM_EXPORT CUresult cuArray3DCreate_v2(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d)
{
    SIM_API(cuArray3DCreate_v2);
    if (!d) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    return scope.ret(createArray(out, *d));
}

SIM_EXPORT CUresult cuArrayDestroy(CUarray a)
{
    SIM_API(cuArrayDestroy);
    return scope.ret(destroyArray(a));
}

SIM_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* out, CUarray h)
{
    SIM_API(cuArrayGetDescriptor_v2);
    SimArray* a = asArray(h);
    if (!a) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    if (!out) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    out->Width = a->desc.Width;
    out->Height = a->desc.Height;
    out->Format = a->desc.Format;
    out->NumChannels = a->desc.NumChannels;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray h)
{
    SIM_API(cuArray3DGetDescriptor_v2);
    SimArray* a = asArray(h);
    if (!a) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    if (!out) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *out = a->desc;
    return scope.ret(CUDA_SUCCESS);
}

// A mipmapped array is its levels, each an array halving the extents of the one before (at least 1).
SIM_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels)
{
    SIM_API(cuMipmappedArrayCreate);
    if (!out || !d || !levels) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    auto* m = new SimMipmap;
    CUDA_ARRAY3D_DESCRIPTOR level = *d;
    for (unsigned i = 0; i < levels; ++i) {
        CUarray a = nullptr;
        if (CUresult rc = createArray(&a, level)) {
            for (SimArray* made : m->levels) destroyArray(reinterpret_cast<CUarray>(made));
            delete m;
            return scope.ret(rc);
        }
        m->levels.push_back(asArray(a));
        level.Width = level.Width > 1 ? level.Width / 2 : 1;
        if (level.Height) level.Height = level.Height > 1 ? level.Height / 2 : 1;
        if (level.Depth && !(level.Flags & CUDA_ARRAY3D_LAYERED)) level.Depth = level.Depth > 1 ? level.Depth / 2 : 1;
    }
    registerHandle(m, HandleKind::Mipmap);
    *out = reinterpret_cast<CUmipmappedArray>(m);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray* out, CUmipmappedArray h, unsigned level)
{
    SIM_API(cuMipmappedArrayGetLevel);
    auto* m = liveHandle<SimMipmap>(h, HandleKind::Mipmap);
    if (!m) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    if (!out || level >= m->levels.size()) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *out = reinterpret_cast<CUarray>(m->levels[level]);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    SIM_API(cuMipmappedArrayDestroy);
    auto* m = liveHandle<SimMipmap>(h, HandleKind::Mipmap);
    if (!m) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    retireHandle(m);
    for (SimArray* a : m->levels) destroyArray(reinterpret_cast<CUarray>(a));
    return scope.ret(CUDA_SUCCESS);
}
