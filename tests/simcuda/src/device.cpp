// Devices, their primary contexts, created contexts and the per-thread context stack (cuInit, cuDevice*, cuCtx*).
#include "sim.h"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace simcuda {

const int kDriverVersion = 13000;

namespace {

constexpr size_t kTotalMem = 80ull << 30;
std::atomic<bool> g_initialized{false};
std::atomic<unsigned long long> g_nextCtxId{1};

thread_local Context* t_current = nullptr;
thread_local std::vector<Context*>* t_stack = nullptr;  // pointer: no TLS destructor runs at thread exit

std::vector<Device*>& devices()
{
    // Never destroyed: cudart calls the driver from its exit handlers, after static destructors ran.
    static auto* v = [] {
        auto* d = new std::vector<Device*>;
        const std::vector<int>& visible = config().visible;
        for (size_t i = 0; i < visible.size(); ++i) {
            auto* dev = new Device;
            dev->ordinal = static_cast<int>(i);
            dev->physical = visible[i];
            dev->uuid = physicalUuid(dev->physical);
            dev->pciBus = 0x41 + dev->physical;
            d->push_back(dev);
        }
        return d;
    }();
    return *v;
}

Context* newContext(int dev, unsigned flags, bool primary)
{
    auto* c = new Context;
    c->dev = dev;
    c->flags = flags;
    c->primary = primary;
    c->id = g_nextCtxId++;
    Lock g(bigLock());
    c->legacy = newStream(c, 0, 0);
    c->legacy->legacy = true;
    registerHandle(c, HandleKind::Context);
    return c;
}

std::vector<Context*>& ctxStack()
{
    if (!t_stack) t_stack = new std::vector<Context*>;
    return *t_stack;
}

bool validDevice(CUdevice d) { return d >= 0 && d < deviceCount(); }

CUresult ctxCreate(CUcontext* pctx, unsigned flags, CUdevice dev)
{
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Lock g(bigLock());
    Context* c = newContext(dev, flags, false);
    if (t_current) ctxStack().push_back(t_current);
    t_current = c;
    *pctx = reinterpret_cast<CUcontext>(c);
    return CUDA_SUCCESS;
}

CUresult ctxSynchronize(Context* c, const ApiScope& scope)
{
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    Lock g(bigLock());
    for (Stream* s : c->streams) {
        if (s->capture) {
            invalidateCapture(s);
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    settleHeld(g, nullptr, c);
    const Ns target = contextTail(c);
    g.unlock();
    blockUntil(target, scope.name(), c->dev, WaitReason::CtxSync, scope.start(), &scope.api());
    trimPools();
    return CUDA_SUCCESS;
}

CUresult primaryRelease(CUdevice d)
{
    if (!validDevice(d)) return CUDA_ERROR_INVALID_DEVICE;
    Lock g(bigLock());
    Device* dev = device(d);
    if (dev->primaryRefs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--dev->primaryRefs == 0) dev->primaryActive = false;
    return CUDA_SUCCESS;
}

CUresult primaryReset(CUdevice d)
{
    if (!validDevice(d)) return CUDA_ERROR_INVALID_DEVICE;
    Lock g(bigLock());
    device(d)->primaryActive = false;
    device(d)->primaryRefs = 0;
    return CUDA_SUCCESS;
}

CUresult primarySetFlags(CUdevice d, unsigned flags)
{
    if (!validDevice(d)) return CUDA_ERROR_INVALID_DEVICE;
    Lock g(bigLock());
    device(d)->primaryFlags = flags;
    primaryContext(d)->flags = flags;
    return CUDA_SUCCESS;
}

CUresult deviceUuid(CUuuid* u, CUdevice d)
{
    if (!u) return CUDA_ERROR_INVALID_VALUE;
    if (!validDevice(d)) return CUDA_ERROR_INVALID_DEVICE;
    *u = device(d)->uuid;
    return CUDA_SUCCESS;
}

}  // namespace

bool initialized() { return g_initialized.load(); }
int deviceCount() { return static_cast<int>(devices().size()); }
Device* device(int ordinal) { return ordinal >= 0 && ordinal < deviceCount() ? devices()[ordinal] : nullptr; }
int physicalDevice(int ordinal) { return device(ordinal) ? device(ordinal)->physical : ordinal; }
int visibleOrdinal(int physical)
{
    for (int i = 0; i < deviceCount(); ++i)
        if (devices()[size_t(i)]->physical == physical) return i;
    return -1;
}

Context* primaryContext(int ordinal)
{
    Lock g(bigLock());
    Device* d = device(ordinal);
    if (!d) return nullptr;
    if (!d->primary) d->primary = newContext(ordinal, d->primaryFlags, true);
    return d->primary;
}

Context* currentContext()
{
    Context* c = t_current;
    return c && !c->destroyed.load(std::memory_order_acquire) ? c : nullptr;
}

CUresult noContextError()
{
    Context* c = t_current;
    return c && c->destroyed.load(std::memory_order_acquire) ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                                                             : CUDA_ERROR_INVALID_CONTEXT;
}

Context* asContext(CUcontext c) { return liveHandle<Context>(c, HandleKind::Context); }

CUresult contextError(CUcontext c)
{
    return handleState(c, HandleKind::Context) == HandleState::Destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                                                                        : CUDA_ERROR_INVALID_CONTEXT;
}

int deviceAttribute(CUdevice_attribute a, int ordinal)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return device(ordinal) ? device(ordinal)->pciBus : 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 50 << 20;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    default: return 0;
    }
}

// Green contexts (green_ctx.cpp) are backed by an ordinary context of their own, destroyed as cuCtxDestroy
// destroys one, without its wait: cuda.h does not say that cuGreenCtxDestroy waits for the work (cuCtxDestroy's
// does), and the work already queued completes on the timeline regardless.
Context* newBackingContext(int dev) { return newContext(dev, 0, false); }

void destroyBackingContext(Context* ctx)
{
    Lock g(bigLock());
    if (t_current == ctx) t_current = nullptr;
    ctx->destroyed.store(true, std::memory_order_release);
    retireHandle(ctx);
}

}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuInit(unsigned int flags)
{
    SIM_API(cuInit);
    if (flags != 0) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    // No device visible (CUDA_VISIBLE_DEVICES empty or starting with an invalid entry): as the real driver,
    // cuInit fails and the driver stays uninitialised (cudart reports cudaErrorNoDevice).
    if (deviceCount() == 0) return scope.ret(CUDA_ERROR_NO_DEVICE);
    g_initialized = true;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDriverGetVersion(int* v)
{
    SIM_API(cuDriverGetVersion);
    if (!v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *v = kDriverVersion;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceGetCount(int* n)
{
    SIM_API(cuDeviceGetCount);
    if (!initialized()) return scope.ret(CUDA_ERROR_NOT_INITIALIZED);
    if (!n) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *n = deviceCount();
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal)
{
    SIM_API(cuDeviceGet);
    if (!initialized()) return scope.ret(CUDA_ERROR_NOT_INITIALIZED);
    if (!d) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(ordinal)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    *d = ordinal;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice d)
{
    SIM_API(cuDeviceGetName);
    if (!name || len <= 0) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    snprintf(name, static_cast<size_t>(len), "gpuspy simulated GPU %d", device(d)->physical);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d)
{
    SIM_API(cuDeviceTotalMem_v2);
    if (!bytes) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    *bytes = kTotalMem;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t* freeBytes, size_t* total)
{
    SIM_API(cuMemGetInfo_v2);
    if (!currentContext()) return scope.ret(noContextError());
    if (freeBytes) *freeBytes = kTotalMem - (1ull << 30);
    if (total) *total = kTotalMem;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d)
{
    SIM_API(cuDeviceGetAttribute);
    if (!v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    *v = deviceAttribute(a, d);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* u, CUdevice d)
{
    SIM_API(cuDeviceGetUuid);
    return scope.ret(deviceUuid(u, d));
}

SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* u, CUdevice d)
{
    SIM_API(cuDeviceGetUuid_v2);
    return scope.ret(deviceUuid(u, d));
}

SIM_EXPORT CUresult cuDeviceGetPCIBusId(char* s, int len, CUdevice d)
{
    SIM_API(cuDeviceGetPCIBusId);
    if (!s || len <= 0) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    snprintf(s, static_cast<size_t>(len), "00000000:%02X:00.0", device(d)->pciBus);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* d, const char* s)
{
    SIM_API(cuDeviceGetByPCIBusId);
    if (!d || !s) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    if (sscanf(s, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    for (int i = 0; i < deviceCount(); ++i) {
        if (device(i)->pciBus == static_cast<int>(bus)) {
            *d = i;
            return scope.ret(CUDA_SUCCESS);
        }
    }
    return scope.ret(CUDA_ERROR_INVALID_DEVICE);
}

SIM_EXPORT CUresult cuDeviceGetP2PAttribute(int* v, CUdevice_P2PAttribute a, CUdevice src, CUdevice dst)
{
    SIM_API(cuDeviceGetP2PAttribute);
    if (!v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(src) || !validDevice(dst) || src == dst) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    *v = a == CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED || a == CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK ? 1 : 0;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceCanAccessPeer(int* v, CUdevice a, CUdevice b)
{
    SIM_API(cuDeviceCanAccessPeer);
    if (!v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(a) || !validDevice(b)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    *v = a != b;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* w, CUarray_format, unsigned, CUdevice d)
{
    SIM_API(cuDeviceGetTexture1DLinearMaxWidth);
    if (!w) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    *w = 1 << 27;
    return scope.ret(CUDA_SUCCESS);
}

// ---- primary contexts
SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice d)
{
    SIM_API(cuDevicePrimaryCtxRetain);
    if (!initialized()) return scope.ret(CUDA_ERROR_NOT_INITIALIZED);
    if (!pctx) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    Lock g(bigLock());
    Device* dev = device(d);
    ++dev->primaryRefs;
    dev->primaryActive = true;
    *pctx = reinterpret_cast<CUcontext>(primaryContext(d));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    SIM_API(cuDevicePrimaryCtxRelease);
    return scope.ret(primaryRelease(d));
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    SIM_API(cuDevicePrimaryCtxRelease_v2);
    return scope.ret(primaryRelease(d));
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned flags)
{
    SIM_API(cuDevicePrimaryCtxSetFlags);
    return scope.ret(primarySetFlags(d, flags));
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned flags)
{
    SIM_API(cuDevicePrimaryCtxSetFlags_v2);
    return scope.ret(primarySetFlags(d, flags));
}

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned* flags, int* active)
{
    SIM_API(cuDevicePrimaryCtxGetState);
    if (!flags || !active) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!validDevice(d)) return scope.ret(CUDA_ERROR_INVALID_DEVICE);
    Lock g(bigLock());
    *flags = device(d)->primaryFlags;
    *active = device(d)->primaryActive;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice d)
{
    SIM_API(cuDevicePrimaryCtxReset);
    return scope.ret(primaryReset(d));
}

SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
    SIM_API(cuDevicePrimaryCtxReset_v2);
    return scope.ret(primaryReset(d));
}

// ---- contexts
SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned flags, CUdevice dev)
{
    SIM_API(cuCtxCreate_v2);
    return scope.ret(ctxCreate(pctx, flags, dev));
}

SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam*, int, unsigned flags, CUdevice dev)
{
    SIM_API(cuCtxCreate_v3);
    return scope.ret(ctxCreate(pctx, flags, dev));
}

SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams*, unsigned flags, CUdevice dev)
{
    SIM_API(cuCtxCreate_v4);
    return scope.ret(ctxCreate(pctx, flags, dev));
}

SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
    SIM_API(cuCtxDestroy_v2);
    Context* ctx = asContext(c);
    if (!ctx) return scope.ret(contextError(c));
    if (ctx->primary) return scope.ret(CUDA_ERROR_INVALID_CONTEXT);
    syncContextForFree(ctx, scope.name(), WaitReason::CtxSync);
    Lock g(bigLock());
    if (t_current == ctx) t_current = nullptr;
    // The object leaks on purpose: its handle, its streams' and its events' must fail cleanly, not crash, and
    // threads that still have it current get CUDA_ERROR_CONTEXT_IS_DESTROYED.
    ctx->destroyed.store(true, std::memory_order_release);
    retireHandle(ctx);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext* c)
{
    SIM_API(cuCtxGetCurrent);
    if (!c) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *c = reinterpret_cast<CUcontext>(t_current);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
    SIM_API(cuCtxSetCurrent);
    if (c && !asContext(c)) return scope.ret(contextError(c));
    t_current = asContext(c);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
    SIM_API(cuCtxPushCurrent_v2);
    if (!asContext(c)) return scope.ret(contextError(c));
    ctxStack().push_back(t_current);
    t_current = asContext(c);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* pc)
{
    SIM_API(cuCtxPopCurrent_v2);
    if (!t_current) return scope.ret(CUDA_ERROR_INVALID_CONTEXT);
    if (pc) *pc = reinterpret_cast<CUcontext>(t_current);
    auto& st = ctxStack();
    t_current = st.empty() ? nullptr : st.back();
    if (!st.empty()) st.pop_back();
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice* d)
{
    SIM_API(cuCtxGetDevice);
    if (!d) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Context* ctx = currentContext();
    if (!ctx) return scope.ret(noContextError());
    *d = ctx->dev;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* d, CUcontext c)
{
    SIM_API(cuCtxGetDevice_v2);
    if (!d) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Context* ctx = c ? asContext(c) : currentContext();
    if (!ctx) return scope.ret(c ? contextError(c) : noContextError());
    *d = ctx->dev;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxSynchronize(void)
{
    SIM_API_MANUAL(cuCtxSynchronize, true);
    return scope.ret(currentContext() ? ctxSynchronize(currentContext(), scope) : noContextError());
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext c)
{
    SIM_API_MANUAL(cuCtxSynchronize_v2, true);
    Context* ctx = c ? asContext(c) : currentContext();
    if (!ctx) return scope.ret(c ? contextError(c) : noContextError());
    return scope.ret(ctxSynchronize(ctx, scope));
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned* f)
{
    SIM_API(cuCtxGetFlags);
    if (!f) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!currentContext()) return scope.ret(noContextError());
    *f = t_current->flags;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxSetFlags(unsigned f)
{
    SIM_API(cuCtxSetFlags);
    if (!currentContext()) return scope.ret(noContextError());
    t_current->flags = f;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetId(CUcontext c, unsigned long long* id)
{
    SIM_API(cuCtxGetId);
    Context* ctx = c ? asContext(c) : currentContext();
    if (!id) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!ctx) return scope.ret(c ? contextError(c) : noContextError());
    *id = ctx->id;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext, unsigned* v)
{
    SIM_API(cuCtxGetApiVersion);
    if (!v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *v = 3020;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetLimit(size_t* v, CUlimit l)
{
    SIM_API(cuCtxGetLimit);
    if (!v) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    switch (l) {
    case CU_LIMIT_STACK_SIZE: *v = 1024; break;
    case CU_LIMIT_PRINTF_FIFO_SIZE: *v = 1 << 20; break;
    case CU_LIMIT_MALLOC_HEAP_SIZE: *v = 8 << 20; break;
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: *v = 2048; break;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY: *v = 64; break;
    default: *v = 0;
    }
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxSetLimit(CUlimit, size_t)
{
    SIM_API(cuCtxSetLimit);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache* c)
{
    SIM_API(cuCtxGetCacheConfig);
    if (!c) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *c = CU_FUNC_CACHE_PREFER_NONE;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache)
{
    SIM_API(cuCtxSetCacheConfig);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetSharedMemConfig(CUsharedconfig* c)
{
    SIM_API(cuCtxGetSharedMemConfig);
    if (!c) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *c = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxSetSharedMemConfig(CUsharedconfig)
{
    SIM_API(cuCtxSetSharedMemConfig);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest)
{
    SIM_API(cuCtxGetStreamPriorityRange);
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxResetPersistingL2Cache(void)
{
    SIM_API(cuCtxResetPersistingL2Cache);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned)
{
    SIM_API(cuCtxEnablePeerAccess);
    if (!asContext(peer)) return scope.ret(contextError(peer));
    if (!currentContext()) return scope.ret(noContextError());
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    SIM_API(cuCtxDisablePeerAccess);
    if (!asContext(peer)) return scope.ret(contextError(peer));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* m)
{
    SIM_API(cuModuleGetLoadingMode);
    if (!m) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *m = CU_MODULE_LAZY_LOADING;
    return scope.ret(CUDA_SUCCESS);
}
