// shim/hooks/context.cpp: which context is current on each thread (set, push, pop, create, primary
// retain: tracked, not recorded, so that recorded calls never ask the driver), and context teardown:
// a context's timing events die with it, so the GPU spans still pending on it are resolved before the
// driver destroys it (bounded wait), and the event pool and clock anchor are dropped.
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

// Every cuCtxCreate ABI takes the device last.
template <class T>
T lastArg(T t)
{
    return t;
}
template <class T, class... Rest>
auto lastArg(T, Rest... rest)
{
    return lastArg(rest...);
}

// ---- tracking only: the driver's answer untouched, errno as the driver left it
template <Api A>
CUresult ctxSetCurrent(CUcontext ctx)
{
    auto real = realAs<decltype(&::cuCtxSetCurrent)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult rc = real(ctx);
    if (rc == CUDA_SUCCESS) noteCurrentContext(ctx);
    return rc;
}

template <Api A>
CUresult ctxPushCurrent(CUcontext ctx)
{
    auto real = realAs<decltype(&::cuCtxPushCurrent_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult rc = real(ctx);
    if (rc == CUDA_SUCCESS) noteCurrentContext(ctx);
    return rc;
}

// The context below the popped one is current now; only the driver knows which: ask next time.
template <Api A>
CUresult ctxPopCurrent(CUcontext* ctx)
{
    auto real = realAs<decltype(&::cuCtxPopCurrent_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult rc = real(ctx);
    if (rc == CUDA_SUCCESS) forgetThreadContext();
    return rc;
}

// A created context is pushed: current on this thread.
template <Api A, class... Args>
CUresult ctxCreate(CUcontext* ctx, Args... args)
{
    auto real = realAs<CUresult (*)(CUcontext*, Args...)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult rc = real(ctx, args...);
    if (rc == CUDA_SUCCESS && ctx) {
        noteCurrentContext(*ctx);
        noteContextDevice(*ctx, int(lastArg(args...)));
    }
    return rc;
}

template <Api A>
CUresult primaryRetain(CUcontext* ctx, CUdevice dev)
{
    auto real = realAs<decltype(&::cuDevicePrimaryCtxRetain)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    const CUresult rc = real(ctx, dev);
    if (rc == CUDA_SUCCESS && ctx) noteContextDevice(*ctx, int(dev));
    return rc;
}

// ---- teardown (recorded)
template <Api A>
CUresult ctxDestroy(CUcontext ctx)
{
    gpuBeforeContextTeardown();
    CallScope s(A);
    auto real = realAs<decltype(&::cuCtxDestroy_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) s.body().args.sync.object = uint64_t(uintptr_t(ctx));
    s.beforeReal();
    const CUresult rc = real(ctx);
    if (rc == CUDA_SUCCESS) {
        // The driver waited for the context's work before destroying it; and the context was popped
        // wherever it was current: every thread asks the driver again.
        s.setFlags(wire::kCallImplicitSync);
        forgetCurrentContexts();
    }
    return s.finish(rc);
}

template <Api A>
CUresult primaryRelease(CUdevice dev)
{
    gpuBeforeContextTeardown();
    CallScope s(A);
    auto real = realAs<decltype(&::cuDevicePrimaryCtxRelease_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(dev);
    if (rc == CUDA_SUCCESS) forgetCurrentContexts();
    return s.finish(rc);
}

template <Api A>
CUresult primaryReset(CUdevice dev)
{
    gpuBeforeContextTeardown();
    CallScope s(A);
    auto real = realAs<decltype(&::cuDevicePrimaryCtxReset_v2)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(dev);
    if (rc == CUDA_SUCCESS) forgetCurrentContexts();
    return s.finish(rc);
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(ctxSetCurrent, cuCtxSetCurrent, (CUcontext c), (c))
GS_WRAP(ctxPushCurrent, cuCtxPushCurrent_v2, (CUcontext c), (c))
GS_WRAP(ctxPopCurrent, cuCtxPopCurrent_v2, (CUcontext* c), (c))
GS_EXPORT CUresult cuCtxCreate_v2(CUcontext* c, unsigned int f, CUdevice d)
{
    return ctxCreate<Api::cuCtxCreate_v2>(c, f, d);
}
GS_EXPORT CUresult cuCtxCreate_v3(CUcontext* c, CUexecAffinityParam* p, int n, unsigned int f, CUdevice d)
{
    return ctxCreate<Api::cuCtxCreate_v3>(c, p, n, f, d);
}
GS_EXPORT CUresult cuCtxCreate_v4(CUcontext* c, CUctxCreateParams* p, unsigned int f, CUdevice d)
{
    return ctxCreate<Api::cuCtxCreate_v4>(c, p, f, d);
}
GS_WRAP(primaryRetain, cuDevicePrimaryCtxRetain, (CUcontext* c, CUdevice d), (c, d))
GS_WRAP(ctxDestroy, cuCtxDestroy_v2, (CUcontext c), (c))
GS_WRAP(primaryRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice d), (d))
GS_WRAP(primaryReset, cuDevicePrimaryCtxReset_v2, (CUdevice d), (d))
// The 7.0 ABIs cudart 13 still asks for (cudaDeviceReset): same shape as the _v2 ones.
GS_WRAP(primaryRelease, cuDevicePrimaryCtxRelease, (CUdevice d), (d))
GS_WRAP(primaryReset, cuDevicePrimaryCtxReset, (CUdevice d), (d))
