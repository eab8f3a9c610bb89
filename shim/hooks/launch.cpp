// shim/hooks/launch.cpp: kernel launches and host functions: kernel, grid, block, shared memory,
// stream; kernels may be sampled out of GPU timing when they come too fast.
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

void describeLaunch(CallScope& s, const void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, unsigned smem, CUstream stream)
{
    wire::LaunchArgs& l = s.body().args.launch;
    l.kernelId = kernelIdOf(f);
    l.grid[0] = gx;
    l.grid[1] = gy;
    l.grid[2] = gz;
    l.block[0] = bx;
    l.block[1] = by;
    l.block[2] = bz;
    l.sharedMem = smem;
    s.setStream(stream);
    s.setFlags(wire::kCallDeviceWork | wire::kCallAsync);
    // A kernel timed fewer than twice is timed whatever the budget says (and charged to it): every
    // kernel gets a GPU time even when copies and a few hot kernels spend all of the budget.
    const bool first = kernelNeedsFirstTimings(l.kernelId);
    gpuBefore(s, stream, first ? GpuTiming::Always : GpuTiming::Sampled);
    if (first && s.item().evBegin) noteKernelTimed(l.kernelId);
}

template <Api A>
CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned smem, CUstream stream, void** params, void** extra)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchKernel)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeLaunch(s, f, gx, gy, gz, bx, by, bz, smem, stream);
    s.beforeReal();
    return s.finish(real(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra));
}

template <Api A>
CUresult launchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchKernelEx)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active() && config)
        describeLaunch(s, f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                       config->blockDimZ, config->sharedMemBytes, config->hStream);
    s.beforeReal();
    return s.finish(real(config, f, params, extra));
}

template <Api A>
CUresult launchCooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned smem, CUstream stream, void** params)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchCooperativeKernel)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describeLaunch(s, f, gx, gy, gz, bx, by, bz, smem, stream);
    s.beforeReal();
    return s.finish(real(f, gx, gy, gz, bx, by, bz, smem, stream, params));
}

template <Api A>
CUresult launchHostFunc(CUstream stream, CUhostFn fn, void* user)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLaunchHostFunc)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) {
        s.setStream(stream);
        s.setFlags(wire::kCallDeviceWork | wire::kCallAsync);
        gpuBefore(s, stream, GpuTiming::Sampled);
    }
    s.beforeReal();
    return s.finish(real(stream, fn, user));
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

#define GS_LAUNCH_PARAMS \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream st, void** p, void** e)
GS_WRAP(launchKernel, cuLaunchKernel, GS_LAUNCH_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p, e))
GS_WRAP(launchKernel, cuLaunchKernel_ptsz, GS_LAUNCH_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p, e))
GS_WRAP(launchKernelEx, cuLaunchKernelEx, (const CUlaunchConfig* c, CUfunction f, void** p, void** e), (c, f, p, e))
GS_WRAP(launchKernelEx, cuLaunchKernelEx_ptsz, (const CUlaunchConfig* c, CUfunction f, void** p, void** e), (c, f, p, e))
#define GS_COOP_PARAMS \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream st, void** p)
GS_WRAP(launchCooperative, cuLaunchCooperativeKernel, GS_COOP_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p))
GS_WRAP(launchCooperative, cuLaunchCooperativeKernel_ptsz, GS_COOP_PARAMS, (f, gx, gy, gz, bx, by, bz, smem, st, p))
GS_WRAP(launchHostFunc, cuLaunchHostFunc, (CUstream st, CUhostFn fn, void* u), (st, fn, u))
GS_WRAP(launchHostFunc, cuLaunchHostFunc_ptsz, (CUstream st, CUhostFn fn, void* u), (st, fn, u))
