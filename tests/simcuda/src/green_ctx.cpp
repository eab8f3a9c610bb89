// Green contexts (cuDNN looks the family up): SM resources that split by count, descriptors, and green
// contexts backed by an ordinary context of their own, with their streams and context-wide events. SM
// partitions change nothing on the simulated timeline (kernels never run); the bookkeeping is real.
#include "sim.h"

#include <algorithm>
#include <cstring>

namespace simcuda {
namespace {

constexpr unsigned kMinPartition = 8;  // CC 9.0: partitions of at least 8 SMs, in multiples of 8 (cuda.h)

struct ResourceDesc {
    unsigned smCount = 0;
};

struct GreenCtx {
    Context* ctx = nullptr;
    unsigned smCount = 0;
};

GreenCtx* asGreen(CUgreenCtx h) { return liveHandle<GreenCtx>(h, HandleKind::GreenCtx); }

CUresult smResource(CUdevResource* out, CUdevResourceType type, unsigned smCount)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    memset(out, 0, sizeof *out);
    out->type = CU_DEV_RESOURCE_TYPE_SM;
    out->sm.smCount = smCount;
    out->sm.minSmPartitionSize = kMinPartition;
    out->sm.smCoscheduledAlignment = smCount % kMinPartition ? 2 : kMinPartition;
    return CUDA_SUCCESS;
}

unsigned deviceSms(int dev) { return static_cast<unsigned>(deviceAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)); }

// The green context whose backing context is `c`, if any (cuCtxGetDevResource, cuStreamGetGreenCtx).
GreenCtx* g_greens[256];
int g_greenCount = 0;
GreenCtx* greenOf(const Context* c)
{
    Lock g(bigLock());
    for (int i = 0; i < g_greenCount; ++i)
        if (g_greens[i]->ctx == c && asGreen(reinterpret_cast<CUgreenCtx>(g_greens[i]))) return g_greens[i];
    return nullptr;
}

CUresult splitByCount(CUdevResource* result, unsigned* nbGroups, const CUdevResource* input, CUdevResource* remaining,
                      unsigned minCount)
{
    if (!nbGroups || !input) return CUDA_ERROR_INVALID_VALUE;
    if (input->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    const unsigned total = input->sm.smCount;
    if (minCount > total) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    const unsigned size = std::max(kMinPartition, (minCount + kMinPartition - 1) / kMinPartition * kMinPartition);
    unsigned groups = total / size;
    if (result) groups = std::min(groups, *nbGroups);
    *nbGroups = groups;
    if (result)
        for (unsigned i = 0; i < groups; ++i) smResource(&result[i], CU_DEV_RESOURCE_TYPE_SM, size);
    if (remaining) smResource(remaining, CU_DEV_RESOURCE_TYPE_SM, total - groups * size);
    return CUDA_SUCCESS;
}

CUresult generateDesc(CUdevResourceDesc* out, CUdevResource* resources, unsigned n)
{
    if (!out || !resources || !n) return CUDA_ERROR_INVALID_VALUE;
    auto* d = new ResourceDesc;
    for (unsigned i = 0; i < n; ++i) {
        if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM) {
            delete d;
            return CUDA_ERROR_INVALID_RESOURCE_TYPE;
        }
        d->smCount += resources[i].sm.smCount;
    }
    registerHandle(d, HandleKind::ResourceDesc);
    *out = reinterpret_cast<CUdevResourceDesc>(d);
    return CUDA_SUCCESS;
}

CUresult greenCreate(CUgreenCtx* out, CUdevResourceDesc hd, CUdevice dev, unsigned flags)
{
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    auto* d = liveHandle<ResourceDesc>(hd, HandleKind::ResourceDesc);
    if (!out || !d || !(flags & CU_GREEN_CTX_DEFAULT_STREAM)) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= deviceCount()) return CUDA_ERROR_INVALID_DEVICE;
    if (d->smCount > deviceSms(dev)) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    Lock g(bigLock());
    if (g_greenCount == 256) return CUDA_ERROR_OUT_OF_MEMORY;
    auto* gc = new GreenCtx;
    gc->ctx = newBackingContext(dev);
    gc->smCount = d->smCount;
    g_greens[g_greenCount++] = gc;
    registerHandle(gc, HandleKind::GreenCtx);
    *out = reinterpret_cast<CUgreenCtx>(gc);
    return CUDA_SUCCESS;
}

// The green context's work so far: every stream of its context. An event recorded there completes when
// all of it has (now + latency when idle, as cuEventRecord on an idle stream).
CUresult greenRecord(CUgreenCtx h, CUevent he)
{
    GreenCtx* gc = asGreen(h);
    if (!gc) return CUDA_ERROR_INVALID_HANDLE;
    auto* e = liveHandle<Event>(he, HandleKind::Event);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    Lock g(bigLock());
    const Ns now = submissionInstant(0);
    e->time = std::max(contextTail(gc->ctx), now + config().launchLatency);
    e->recorded = true;
    e->capturedIn = nullptr;
    return CUDA_SUCCESS;
}

// Work submitted to the green context after this call starts no earlier than the event.
CUresult greenWait(CUgreenCtx h, CUevent he)
{
    GreenCtx* gc = asGreen(h);
    if (!gc) return CUDA_ERROR_INVALID_HANDLE;
    auto* e = liveHandle<Event>(he, HandleKind::Event);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    Lock g(bigLock());
    if (e->heldBy && stillHeld(e->heldBy)) {
        for (Stream* s : gc->ctx->streams) waitForHeldEvent(s, e);  // each held until the record is placed
        return CUDA_SUCCESS;
    }
    if (e->recorded)
        for (Stream* s : gc->ctx->streams) s->tail = std::max(s->tail, e->time);
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource* r, CUdevResourceType type)
{
    SIM_API(cuDeviceGetDevResource);
    if (dev < 0 || dev >= deviceCount()) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    return scope.ret(smResource(r, type, deviceSms(dev)));
}

SIM_EXPORT CUresult cuCtxGetDevResource(CUcontext c, CUdevResource* r, CUdevResourceType type)
{
    SIM_API(cuCtxGetDevResource);
    Context* ctx = c ? asContext(c) : currentContext();
    if (!ctx) return scope.ret(c ? contextError(c) : noContextError());
    GreenCtx* gc = greenOf(ctx);
    return scope.ret(smResource(r, type, gc ? gc->smCount : deviceSms(ctx->dev)));
}

SIM_EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx h, CUdevResource* r, CUdevResourceType type)
{
    SIM_API(cuGreenCtxGetDevResource);
    GreenCtx* gc = asGreen(h);
    if (!gc) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    return scope.ret(smResource(r, type, gc->smCount));
}

SIM_EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned* nbGroups, const CUdevResource* input,
                                                CUdevResource* remaining, unsigned, unsigned minCount)
{
    SIM_API(cuDevSmResourceSplitByCount);
    return scope.ret(splitByCount(result, nbGroups, input, remaining, minCount));
}

SIM_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* out, CUdevResource* resources, unsigned n)
{
    SIM_API(cuDevResourceGenerateDesc);
    return scope.ret(generateDesc(out, resources, n));
}

SIM_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx* out, CUdevResourceDesc desc, CUdevice dev, unsigned flags)
{
    SIM_API(cuGreenCtxCreate);
    return scope.ret(greenCreate(out, desc, dev, flags));
}

SIM_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx h)
{
    SIM_API(cuGreenCtxDestroy);
    GreenCtx* gc = asGreen(h);
    if (!gc) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    retireHandle(gc);
    destroyBackingContext(gc->ctx);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxFromGreenCtx(CUcontext* out, CUgreenCtx h)
{
    SIM_API(cuCtxFromGreenCtx);
    GreenCtx* gc = asGreen(h);
    if (!gc) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    if (!out) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *out = reinterpret_cast<CUcontext>(gc->ctx);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGreenCtxStreamCreate(CUstream* out, CUgreenCtx h, unsigned flags, int priority)
{
    SIM_API(cuGreenCtxStreamCreate);
    GreenCtx* gc = asGreen(h);
    if (!gc) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    // cuda.h: CU_STREAM_NON_BLOCKING is required.
    if (!out || !(flags & CU_STREAM_NON_BLOCKING)) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Lock g(bigLock());
    *out = reinterpret_cast<CUstream>(newStream(gc->ctx, flags, priority));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGreenCtxRecordEvent(CUgreenCtx h, CUevent e)
{
    SIM_API(cuGreenCtxRecordEvent);
    return scope.ret(greenRecord(h, e));
}

SIM_EXPORT CUresult cuGreenCtxWaitEvent(CUgreenCtx h, CUevent e)
{
    SIM_API(cuGreenCtxWaitEvent);
    return scope.ret(greenWait(h, e));
}

SIM_EXPORT CUresult cuStreamGetGreenCtx(CUstream h, CUgreenCtx* out)
{
    SIM_API(cuStreamGetGreenCtx);
    if (!out) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, false, &s)) return scope.ret(rc);
    *out = reinterpret_cast<CUgreenCtx>(greenOf(s->ctx));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuGreenCtxGetId(CUgreenCtx h, unsigned long long* id)
{
    SIM_API(cuGreenCtxGetId);
    GreenCtx* gc = asGreen(h);
    if (!gc) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    if (!id) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *id = gc->ctx->id;
    return scope.ret(CUDA_SUCCESS);
}
