// shim/hooks/failure_only.cpp: the setup and query entry points (Category Query in driver_hooks.def),
// hooked for their failures only. The wrapper calls the real function and compares its result: a call
// that succeeds costs nothing more (no record, clock, stack, errno touched); one that fails is recorded
// after it returned, like any failed call (API, error, thread, the host time it returned at, stack), so
// that a program whose only CUDA calls failed here does not read as a capture with no CUDA call in it.
// gpuspy's own calls of these (current context, device names, timing events) go through the real
// pointers of resolve.cpp's Driver, never through these wrappers.
#include "shim/hooks/hook_util.h"

#include <cudaTypedefs.h>

#include <type_traits>

namespace gpuspy::shim {

// Each Query entry's SinceVersion names the ABI cuda.h types it with: the wrapper answers a
// cuGetProcAddress(Base, version) request only from that version on, so a wrong version would hand the
// caller a function of another signature. PFN_<Base>_v<SinceVersion> is cudaTypedefs.h's type for it.
#define GS_SINCE_Query(abi, base, since)                                                                 \
    static_assert(std::is_same_v<decltype(&::abi), PFN_##base##_v##since>,                               \
                  #abi " is not the ABI cuGetProcAddress(" #base ", " #since ") answers with");
#define GS_SINCE_Other(abi, base, since)
#define GS_SINCE_Transfer(abi, base, since)
#define GS_SINCE_Launch(abi, base, since)
#define GS_SINCE_Alloc(abi, base, since)
#define GS_SINCE_Sync(abi, base, since)
#define GS_SINCE_Module(abi, base, since)
#define GS_SINCE_Graph(abi, base, since)
#define GS_DRIVER(abi, base, since, pt, cat) GS_SINCE_##cat(abi, base, since)
#include "shim/driver_hooks.def"
#undef GS_DRIVER

namespace {

// Off the success path: opens the call's scope now, after the real call (inert when nested in another
// hook, on gpuspy's own threads, when not recording; counted only, outside a capture window), and
// records it as having begun and ended now.
__attribute__((noinline, cold)) void recordFailure(Api api, CUresult rc)
{
    CallScope s(api);
    if (!s.active()) return;
    s.beforeReal();
    s.finish(rc);
}

template <Api A, class Fn, class... Args>
inline CUresult failureOnly(Args... args)
{
    const auto real = realAs<Fn>(A);
    if (__builtin_expect(real == nullptr, 0)) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult rc = real(args...);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0)) recordFailure(A, rc);
    return rc;
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

// One exported wrapper per Query ABI; shim.h declares each with cuda.h's type, so a parameter list that
// differs from the driver's does not compile.
#define GS_FAILURE_ONLY(abi, params, args) \
    GS_EXPORT CUresult abi params { return failureOnly<Api::abi, decltype(&::abi)> args; }

GS_FAILURE_ONLY(cuInit, (unsigned int flags), (flags))
GS_FAILURE_ONLY(cuDriverGetVersion, (int* v), (v))
GS_FAILURE_ONLY(cuDeviceGet, (CUdevice* d, int ordinal), (d, ordinal))
GS_FAILURE_ONLY(cuDeviceGetCount, (int* n), (n))
GS_FAILURE_ONLY(cuDeviceGetName, (char* name, int len, CUdevice d), (name, len, d))
GS_FAILURE_ONLY(cuDeviceGetAttribute, (int* v, CUdevice_attribute a, CUdevice d), (v, a, d))
GS_FAILURE_ONLY(cuDeviceTotalMem_v2, (size_t* bytes, CUdevice d), (bytes, d))
GS_FAILURE_ONLY(cuDeviceGetUuid, (CUuuid* u, CUdevice d), (u, d))
GS_FAILURE_ONLY(cuDeviceGetUuid_v2, (CUuuid* u, CUdevice d), (u, d))
GS_FAILURE_ONLY(cuDeviceComputeCapability, (int* major, int* minor, CUdevice d), (major, minor, d))
GS_FAILURE_ONLY(cuDeviceGetPCIBusId, (char* id, int len, CUdevice d), (id, len, d))
GS_FAILURE_ONLY(cuDevicePrimaryCtxGetState, (CUdevice d, unsigned int* flags, int* active), (d, flags, active))
GS_FAILURE_ONLY(cuDevicePrimaryCtxSetFlags_v2, (CUdevice d, unsigned int flags), (d, flags))
GS_FAILURE_ONLY(cuCtxGetCurrent, (CUcontext* c), (c))
GS_FAILURE_ONLY(cuCtxGetDevice, (CUdevice* d), (d))
GS_FAILURE_ONLY(cuCtxGetDevice_v2, (CUdevice* d, CUcontext c), (d, c))
GS_FAILURE_ONLY(cuCtxGetApiVersion, (CUcontext c, unsigned int* v), (c, v))
GS_FAILURE_ONLY(cuCtxGetFlags, (unsigned int* flags), (flags))
GS_FAILURE_ONLY(cuCtxGetLimit, (size_t* v, CUlimit l), (v, l))
GS_FAILURE_ONLY(cuCtxSetLimit, (CUlimit l, size_t v), (l, v))
GS_FAILURE_ONLY(cuCtxGetStreamPriorityRange, (int* least, int* greatest), (least, greatest))
GS_FAILURE_ONLY(cuModuleUnload, (CUmodule m), (m))
GS_FAILURE_ONLY(cuModuleGetGlobal_v2, (CUdeviceptr* p, size_t* bytes, CUmodule m, const char* name), (p, bytes, m, name))
GS_FAILURE_ONLY(cuLibraryGetGlobal, (CUdeviceptr* p, size_t* bytes, CUlibrary l, const char* name), (p, bytes, l, name))
GS_FAILURE_ONLY(cuLibraryUnload, (CUlibrary l), (l))
GS_FAILURE_ONLY(cuLinkCreate_v2, (unsigned int n, CUjit_option* o, void** v, CUlinkState* st), (n, o, v, st))
GS_FAILURE_ONLY(cuLinkAddData_v2,
                (CUlinkState st, CUjitInputType t, void* data, size_t size, const char* name, unsigned int n,
                 CUjit_option* o, void** v),
                (st, t, data, size, name, n, o, v))
GS_FAILURE_ONLY(cuLinkAddFile_v2,
                (CUlinkState st, CUjitInputType t, const char* path, unsigned int n, CUjit_option* o, void** v),
                (st, t, path, n, o, v))
GS_FAILURE_ONLY(cuLinkComplete, (CUlinkState st, void** cubin, size_t* size), (st, cubin, size))
GS_FAILURE_ONLY(cuLinkDestroy, (CUlinkState st), (st))
GS_FAILURE_ONLY(cuFuncGetAttribute, (int* v, CUfunction_attribute a, CUfunction f), (v, a, f))
GS_FAILURE_ONLY(cuFuncSetAttribute, (CUfunction f, CUfunction_attribute a, int v), (f, a, v))
GS_FAILURE_ONLY(cuFuncSetCacheConfig, (CUfunction f, CUfunc_cache c), (f, c))
GS_FAILURE_ONLY(cuKernelGetAttribute, (int* v, CUfunction_attribute a, CUkernel k, CUdevice d), (v, a, k, d))
GS_FAILURE_ONLY(cuKernelSetAttribute, (CUfunction_attribute a, int v, CUkernel k, CUdevice d), (a, v, k, d))
GS_FAILURE_ONLY(cuPointerGetAttribute, (void* data, CUpointer_attribute a, CUdeviceptr p), (data, a, p))
GS_FAILURE_ONLY(cuPointerGetAttributes, (unsigned int n, CUpointer_attribute* a, void** data, CUdeviceptr p),
                (n, a, data, p))
GS_FAILURE_ONLY(cuMemGetInfo_v2, (size_t* freeBytes, size_t* total), (freeBytes, total))
GS_FAILURE_ONLY(cuMemGetAddressRange_v2, (CUdeviceptr* base, size_t* size, CUdeviceptr p), (base, size, p))
GS_FAILURE_ONLY(cuMemHostGetDevicePointer_v2, (CUdeviceptr* d, void* p, unsigned int flags), (d, p, flags))
GS_FAILURE_ONLY(cuEventCreate, (CUevent* e, unsigned int flags), (e, flags))
GS_FAILURE_ONLY(cuEventDestroy_v2, (CUevent e), (e))
GS_FAILURE_ONLY(cuEventElapsedTime, (float* ms, CUevent a, CUevent b), (ms, a, b))
GS_FAILURE_ONLY(cuEventElapsedTime_v2, (float* ms, CUevent a, CUevent b), (ms, a, b))
GS_FAILURE_ONLY(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int* n, CUfunction f, int block, size_t smem),
                (n, f, block, smem))
GS_FAILURE_ONLY(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
                (int* n, CUfunction f, int block, size_t smem, unsigned int flags), (n, f, block, smem, flags))
GS_FAILURE_ONLY(cuOccupancyMaxPotentialBlockSize,
                (int* minGrid, int* block, CUfunction f, CUoccupancyB2DSize toSmem, size_t smem, int limit),
                (minGrid, block, f, toSmem, smem, limit))
