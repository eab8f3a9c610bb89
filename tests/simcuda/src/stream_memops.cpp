// Stream memory operations (cuStreamWriteValue*, cuStreamWaitValue*, cuStreamBatchMemOp) and TMA descriptors
// (cuTensorMapEncodeTiled), which cuBLAS, cuBLASLt and cuFFT look up. Kernels never run here, so:
// * a write happens at submission (bytes move at submission, as copies do); it is not traced as an op;
// * a wait is taken as satisfied at once (no kernel will ever write the value a real wait would block on);
// * on a capturing stream they return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (memop graph nodes are not modelled).
#include "sim.h"

#include <cstring>

namespace simcuda {
namespace {

CUresult memop(CUstream h, bool pt, CUdeviceptr addr, size_t bytes, const void* write)
{
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    if (s->capture) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (addr % bytes || !rangeCovers(addr, bytes)) return CUDA_ERROR_INVALID_VALUE;
    if (write) memcpy(reinterpret_cast<void*>(addr), write, bytes);
    return CUDA_SUCCESS;
}

CUresult write32(CUstream h, bool pt, CUdeviceptr addr, cuuint32_t v) { return memop(h, pt, addr, sizeof v, &v); }
CUresult write64(CUstream h, bool pt, CUdeviceptr addr, cuuint64_t v) { return memop(h, pt, addr, sizeof v, &v); }
CUresult wait(CUstream h, bool pt, CUdeviceptr addr, size_t bytes) { return memop(h, pt, addr, bytes, nullptr); }

CUresult batch(CUstream h, bool pt, unsigned count, const CUstreamBatchMemOpParams* ops)
{
    if (count && !ops) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; ++i) {
        const auto& op = ops[i];
        CUresult rc = CUDA_SUCCESS;
        switch (op.operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32: rc = wait(h, pt, op.waitValue.address, 4); break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64: rc = wait(h, pt, op.waitValue.address, 8); break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32: rc = write32(h, pt, op.writeValue.address, op.writeValue.value); break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64: rc = write64(h, pt, op.writeValue.address, op.writeValue.value64); break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER: {
            Stream* s = nullptr;
            rc = lookupStream(h, pt, &s);
            break;
        }
        default: rc = CUDA_ERROR_INVALID_VALUE;
        }
        if (rc) return rc;
    }
    return CUDA_SUCCESS;
}

// The checks the real cuTensorMapEncodeTiled documents; the 128-byte descriptor holds the arguments.
CUresult encodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* global, const cuuint64_t* dims,
                     const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* elementStrides,
                     CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle)
{
    if (!map || reinterpret_cast<uintptr_t>(map) % 64 || !dims || !box || !elementStrides || (rank > 1 && !strides))
        return CUDA_ERROR_INVALID_VALUE;
    if (static_cast<unsigned>(type) > CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B) return CUDA_ERROR_INVALID_VALUE;
    if (rank < (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? 1u : 3u) || rank > 5) return CUDA_ERROR_INVALID_VALUE;
    const uintptr_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
    if (!global || reinterpret_cast<uintptr_t>(global) % align) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; ++i) {
        if (!dims[i] || dims[i] > (1ULL << 32)) return CUDA_ERROR_INVALID_VALUE;
        if (!box[i] || box[i] > 256 || !elementStrides[i] || elementStrides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
        if (i + 1 < rank && (strides[i] % 16 || strides[i] >= (1ULL << 40))) return CUDA_ERROR_INVALID_VALUE;
    }
    if (static_cast<unsigned>(swizzle) > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B) return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t words[16] = {};
    words[0] = reinterpret_cast<uintptr_t>(global);
    words[1] = (static_cast<cuuint64_t>(type) << 32) | rank;
    for (cuuint32_t i = 0; i < rank; ++i) {
        words[2 + i] = dims[i];
        words[7 + i] = (static_cast<cuuint64_t>(box[i]) << 32) | elementStrides[i];
    }
    static_assert(sizeof(CUtensorMap) == sizeof words, "CUtensorMap is 128 bytes");
    memcpy(map, words, sizeof words);
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda

using namespace simcuda;

// v1 ABI (CUDA 8/9) and v2 (11.7): the same here. cuda.h declares no _v2_ptsz twins; the real driver's
// cuGetProcAddress hands them out for per-thread lookups of version 11070.
extern "C" {
CUresult cuStreamWriteValue32_v2_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned);
CUresult cuStreamWaitValue32_v2_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned);
CUresult cuStreamWriteValue64_v2_ptsz(CUstream, CUdeviceptr, cuuint64_t, unsigned);
CUresult cuStreamWaitValue64_v2_ptsz(CUstream, CUdeviceptr, cuuint64_t, unsigned);
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned);
}
SIM_PAIR(cuStreamWriteValue32, cuStreamWriteValue32_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t v, unsigned),
         write32(h, pt, a, v))
SIM_PAIR(cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t v, unsigned),
         write32(h, pt, a, v))
SIM_PAIR(cuStreamWriteValue64, cuStreamWriteValue64_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t v, unsigned),
         write64(h, pt, a, v))
SIM_PAIR(cuStreamWriteValue64_v2, cuStreamWriteValue64_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t v, unsigned),
         write64(h, pt, a, v))
SIM_PAIR(cuStreamWaitValue32, cuStreamWaitValue32_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t, unsigned),
         wait(h, pt, a, 4))
SIM_PAIR(cuStreamWaitValue32_v2, cuStreamWaitValue32_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t, unsigned),
         wait(h, pt, a, 4))
SIM_PAIR(cuStreamWaitValue64, cuStreamWaitValue64_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t, unsigned),
         wait(h, pt, a, 8))
SIM_PAIR(cuStreamWaitValue64_v2, cuStreamWaitValue64_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t, unsigned),
         wait(h, pt, a, 8))
SIM_PAIR(cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz, (CUstream h, unsigned n, CUstreamBatchMemOpParams* ops, unsigned),
         batch(h, pt, n, ops))
SIM_PAIR(cuStreamBatchMemOp_v2, cuStreamBatchMemOp_v2_ptsz,
         (CUstream h, unsigned n, CUstreamBatchMemOpParams* ops, unsigned), batch(h, pt, n, ops))

SIM_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* global,
                                           const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                           const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
                                           CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill)
{
    SIM_API(cuTensorMapEncodeTiled);
    return scope.ret(encodeTiled(map, type, rank, global, dims, strides, box, elementStrides, interleave, swizzle));
}
