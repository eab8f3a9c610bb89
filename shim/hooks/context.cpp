// shim/hooks/context.cpp: context teardown. A context's timing events die with it, so the GPU spans
// still pending on it are resolved before the driver destroys it (bounded wait), and the event pool
// and clock anchor are dropped.
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

template <Api A>
CUresult ctxDestroy(CUcontext ctx)
{
    gpuBeforeContextTeardown();
    CallScope s(A);
    auto real = realAs<decltype(&::cuCtxDestroy_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) s.body().args.sync.object = uint64_t(uintptr_t(ctx));
    s.beforeReal();
    return s.finish(real(ctx));
}

template <Api A>
CUresult primaryRelease(CUdevice dev)
{
    gpuBeforeContextTeardown();
    CallScope s(A);
    auto real = realAs<decltype(&::cuDevicePrimaryCtxRelease_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(dev));
}

template <Api A>
CUresult primaryReset(CUdevice dev)
{
    gpuBeforeContextTeardown();
    CallScope s(A);
    auto real = realAs<decltype(&::cuDevicePrimaryCtxReset_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(dev));
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(ctxDestroy, cuCtxDestroy_v2, (CUcontext c), (c))
GS_WRAP(primaryRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice d), (d))
GS_WRAP(primaryReset, cuDevicePrimaryCtxReset_v2, (CUdevice d), (d))
