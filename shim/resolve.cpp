// shim/resolve.cpp: every dlsym / cuGetProcAddress trick, and nothing else: where the real driver
// functions are, which of our wrappers answers which ABI, and the wrapped cuGetProcAddress.
#include "shim/shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <cstring>

namespace gpuspy::shim {

const ApiInfo kApis[kApiCount] = {
    {"", "", 0, false, wire::Category::Other},
#define GS_DRIVER(abi, base, since, pt, cat) {#abi, #base, since, pt != 0, wire::Category::cat},
#include "driver_hooks.def"
#undef GS_DRIVER
};

void* const kWrappers[kApiCount] = {
    nullptr,
#define GS_DRIVER(abi, base, since, pt, cat) reinterpret_cast<void*>(&::abi),
#include "driver_hooks.def"
#undef GS_DRIVER
};

std::atomic<void*> g_real[kApiCount];

namespace {

DlsymFn g_realDlsym;
std::atomic<void*> g_cudaHandle{nullptr};
Driver g_driver;
std::atomic<bool> g_driverReady{false};
pthread_mutex_t g_resolveLock = PTHREAD_MUTEX_INITIALIZER;

using GpaV2 = decltype(&::cuGetProcAddress_v2);
using GpaV1 = decltype(&::cuGetProcAddress);
std::atomic<GpaV2> g_realGpa2{nullptr};
std::atomic<GpaV1> g_realGpa1{nullptr};

GS_UNINSTRUMENTED void initRealDlsym()
{
    if (g_realDlsym) return;
    // glibc 2.34 moved dlsym into libc; older ones have only the GLIBC_2.2.5 version.
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    g_realDlsym = reinterpret_cast<DlsymFn>(p);
}

// Where libcuda is: the handle an app looked a cu* name up on, else the already-loaded library.
void* cudaHandle()
{
    void* h = g_cudaHandle.load(std::memory_order_acquire);
    if (h) return h;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD);
    if (h) g_cudaHandle.store(h, std::memory_order_release);  // the reference is kept on purpose
    return h;
}

void* lookupInDriver(const char* name)
{
    initRealDlsym();
    if (!g_realDlsym) return nullptr;
    void* h = cudaHandle();
    void* p = h ? g_realDlsym(h, name) : nullptr;
    if (!p) {
        // -lcuda programs: the next definition after ours in the global scope.
        p = g_realDlsym(RTLD_NEXT, name);
    }
    return p;
}

bool isOurWrapper(void* p)
{
    for (size_t i = 1; i < kApiCount; ++i)
        if (kWrappers[i] == p) return true;
    return false;
}

template <class F>
void loadDriverFn(F& slot, const char* name)
{
    void* p = lookupInDriver(name);
    if (p && !isOurWrapper(p)) slot = reinterpret_cast<F>(p);
}

void loadDriver()
{
    if (g_driverReady.load(std::memory_order_acquire)) return;
    pthread_mutex_lock(&g_resolveLock);
    if (!g_driverReady.load(std::memory_order_relaxed) && cudaHandle()) {
        loadDriverFn(g_driver.ctxGetCurrent, "cuCtxGetCurrent");
        loadDriverFn(g_driver.ctxGetDevice, "cuCtxGetDevice");
        loadDriverFn(g_driver.ctxSetCurrent, "cuCtxSetCurrent");
        loadDriverFn(g_driver.pointerGetAttribute, "cuPointerGetAttribute");
        loadDriverFn(g_driver.funcGetName, "cuFuncGetName");
        loadDriverFn(g_driver.kernelGetName, "cuKernelGetName");
        loadDriverFn(g_driver.eventCreate, "cuEventCreate");
        loadDriverFn(g_driver.eventDestroy, "cuEventDestroy_v2");
        loadDriverFn(g_driver.eventRecord, "cuEventRecord");
        loadDriverFn(g_driver.eventRecordPtsz, "cuEventRecord_ptsz");
        loadDriverFn(g_driver.eventQuery, "cuEventQuery");
        loadDriverFn(g_driver.eventSynchronize, "cuEventSynchronize");
        loadDriverFn(g_driver.eventElapsedTime, "cuEventElapsedTime_v2");
        loadDriverFn(g_driver.streamCreate, "cuStreamCreate");
        loadDriverFn(g_driver.streamGetCtx, "cuStreamGetCtx");
        loadDriverFn(g_driver.streamGetDevice, "cuStreamGetDevice");
        loadDriverFn(g_driver.streamIsCapturing, "cuStreamIsCapturing");
        loadDriverFn(g_driver.streamIsCapturingPtsz, "cuStreamIsCapturing_ptsz");
        loadDriverFn(g_driver.streamGetCaptureInfo3, "cuStreamGetCaptureInfo_v3");
        loadDriverFn(g_driver.streamGetCaptureInfo3Ptsz, "cuStreamGetCaptureInfo_v3_ptsz");
        loadDriverFn(g_driver.streamGetCaptureInfo, "cuStreamGetCaptureInfo_v2");
        loadDriverFn(g_driver.streamGetCaptureInfoPtsz, "cuStreamGetCaptureInfo_v2_ptsz");
        loadDriverFn(g_driver.deviceGetName, "cuDeviceGetName");
        loadDriverFn(g_driver.deviceGetUuid, "cuDeviceGetUuid_v2");
        if (!g_driver.deviceGetUuid) loadDriverFn(g_driver.deviceGetUuid, "cuDeviceGetUuid");
        loadDriverFn(g_driver.deviceGetPciBusId, "cuDeviceGetPCIBusId");
        g_driverReady.store(true, std::memory_order_release);
    }
    pthread_mutex_unlock(&g_resolveLock);
}

bool perThreadRequested(cuuint64_t flags)
{
    return (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
}

// The wrapper for what cuGetProcAddress resolved: substitutes ours and remembers the real one.
void substitute(const char* symbol, void** pfn, int version, cuuint64_t flags);

}  // namespace

GS_UNINSTRUMENTED DlsymFn realDlsym()
{
    initRealDlsym();
    return g_realDlsym;
}

const Driver& driver()
{
    loadDriver();
    return g_driver;
}

void* resolveReal(Api api)
{
    void* p = lookupInDriver(kApis[size_t(api)].abi);
    if (!p || isOurWrapper(p)) return nullptr;
    void* expected = nullptr;
    g_real[size_t(api)].compare_exchange_strong(expected, p, std::memory_order_acq_rel);
    return g_real[size_t(api)].load(std::memory_order_acquire);
}

Api selectAbiByVersion(const char* symbol, int version, cuuint64_t flags)
{
    const bool pt = perThreadRequested(flags);
    size_t best = 0;
    // The per-thread variant where one exists for this name and version, else the plain one
    // (names with no stream, like cuMemAlloc, have no per-thread variant).
    for (int pass = 0; pass < 2 && best == 0; ++pass) {
        const bool wantPt = pass == 0 ? pt : false;
        if (pass == 1 && !pt) break;
        for (size_t i = 1; i < kApiCount; ++i) {
            const ApiInfo& a = kApis[i];
            if (a.perThread != wantPt || a.since > version || std::strcmp(a.base, symbol) != 0) continue;
            if (best == 0 || a.since > kApis[best].since) best = i;
        }
    }
    if (best == 0) return Api::None;
    // A newer ABI of the same name that we do not hook (a higher version than any of ours that
    // the driver may hand out) cannot be told apart here; callers compare pointers first.
    return Api(best);
}

Api selectAbi(const char* symbol, int version, cuuint64_t flags, void* resolved)
{
    if (!symbol || !resolved) return Api::None;
    // Ask the driver which exported symbol it handed out: exact, whatever the version rules.
    bool known = false;
    for (size_t i = 1; i < kApiCount; ++i) {
        if (std::strcmp(kApis[i].base, symbol) != 0) continue;
        known = true;
        void* exported = realPtr(Api(i));
        if (exported == resolved) return Api(i);
    }
    if (!known) {
        // A name that is itself one of our ABIs under another base name (cuGraphInstantiateWithFlags is
        // both its own 11.4 name and cuGraphInstantiate's 12.0 ABI): ours when the driver handed out
        // exactly that export.
        for (size_t i = 1; i < kApiCount; ++i)
            if (std::strcmp(kApis[i].abi, symbol) == 0 && realPtr(Api(i)) == resolved) return Api(i);
        return Api::None;
    }
    return selectAbiByVersion(symbol, version, flags);
}

namespace {

CUresult wrappedGpa2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* status);
CUresult wrappedGpa1(const char* symbol, void** pfn, int version, cuuint64_t flags);

bool isOurGpa(void* p)
{
    return p == reinterpret_cast<void*>(&wrappedGpa2) || p == reinterpret_cast<void*>(&wrappedGpa1) ||
           p == reinterpret_cast<void*>(&::cuGetProcAddress_v2) || p == reinterpret_cast<void*>(&::cuGetProcAddress);
}

void substitute(const char* symbol, void** pfn, int version, cuuint64_t flags)
{
    if (!symbol || !pfn || !*pfn) return;
    if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
        // cudart fetches cuGetProcAddress again through itself and uses that pointer afterwards.
        // A driver that takes its own exported addresses may hand out ours (we interpose them).
        if (isOurGpa(*pfn)) return;
        if (version >= 12000) {
            g_realGpa2.store(reinterpret_cast<GpaV2>(*pfn), std::memory_order_release);
            *pfn = reinterpret_cast<void*>(&wrappedGpa2);
        } else {
            g_realGpa1.store(reinterpret_cast<GpaV1>(*pfn), std::memory_order_release);
            *pfn = reinterpret_cast<void*>(&wrappedGpa1);
        }
        return;
    }
    if (isOurWrapper(*pfn)) return;
    const Api api = selectAbi(symbol, version, flags, *pfn);
    if (api == Api::None) return;
    // The driver's answer is the function to call for this ABI (it may not be an exported symbol).
    g_real[size_t(api)].store(*pfn, std::memory_order_release);
    *pfn = kWrappers[size_t(api)];
}

CUresult wrappedGpa2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* status)
{
    GpaV2 real = g_realGpa2.load(std::memory_order_acquire);
    if (!real) {
        real = reinterpret_cast<GpaV2>(lookupInDriver("cuGetProcAddress_v2"));
        if (!real || isOurGpa(reinterpret_cast<void*>(real))) return CUDA_ERROR_NOT_INITIALIZED;
        g_realGpa2.store(real, std::memory_order_release);
    }
    const CUresult rc = real(symbol, pfn, version, flags, status);
    if (rc == CUDA_SUCCESS) {
        const int saved = errno;
        substitute(symbol, pfn, version, flags);
        errno = saved;
    }
    return rc;
}

CUresult wrappedGpa1(const char* symbol, void** pfn, int version, cuuint64_t flags)
{
    GpaV1 real = g_realGpa1.load(std::memory_order_acquire);
    if (!real) {
        real = reinterpret_cast<GpaV1>(lookupInDriver("cuGetProcAddress"));
        if (!real || isOurGpa(reinterpret_cast<void*>(real))) return CUDA_ERROR_NOT_INITIALIZED;
        g_realGpa1.store(real, std::memory_order_release);
    }
    const CUresult rc = real(symbol, pfn, version, flags);
    if (rc == CUDA_SUCCESS) {
        const int saved = errno;
        substitute(symbol, pfn, version, flags);
        errno = saved;
    }
    return rc;
}

}  // namespace

void* interceptDlsym(void* handle, const char* name, void* real)
{
    if (!real || !name || name[0] != 'c' || name[1] != 'u') return real;
    if (std::strcmp(name, "cuGetProcAddress_v2") == 0) {
        if (isOurGpa(real)) return real;  // ours already
        if (handle != RTLD_DEFAULT && handle != RTLD_NEXT) g_cudaHandle.store(handle, std::memory_order_release);
        g_realGpa2.store(reinterpret_cast<GpaV2>(real), std::memory_order_release);
        return reinterpret_cast<void*>(&::cuGetProcAddress_v2);
    }
    if (std::strcmp(name, "cuGetProcAddress") == 0) {
        if (isOurGpa(real)) return real;
        if (handle != RTLD_DEFAULT && handle != RTLD_NEXT) g_cudaHandle.store(handle, std::memory_order_release);
        g_realGpa1.store(reinterpret_cast<GpaV1>(real), std::memory_order_release);
        return reinterpret_cast<void*>(&::cuGetProcAddress);
    }
    for (size_t i = 1; i < kApiCount; ++i) {
        if (std::strcmp(kApis[i].abi, name) != 0) continue;
        if (real == kWrappers[i]) return real;
        if (handle != RTLD_DEFAULT && handle != RTLD_NEXT) g_cudaHandle.store(handle, std::memory_order_release);
        void* expected = nullptr;
        g_real[i].compare_exchange_strong(expected, real, std::memory_order_acq_rel);
        return kWrappers[i];
    }
    return real;
}

}  // namespace gpuspy::shim

using namespace gpuspy::shim;

// Exported for -lcuda programs and returned by our dlsym for lookups on the libcuda handle.
GS_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult* status)
{
    return wrappedGpa2(symbol, pfn, version, flags, status);
}

GS_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags)
{
    return wrappedGpa1(symbol, pfn, version, flags);
}
