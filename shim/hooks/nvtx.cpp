// shim/hooks/nvtx.cpp: NVTX ranges and marks through NVTX's own injection mechanism: the app's
// NVTX finds libgpuspy.so through NVTX_INJECTION64_PATH and asks InitializeInjectionNvtx2 to fill
// its function tables (core and domain modules).
#include "shim/shim.h"

#include <nvtx3/nvToolsExt.h>

#include <cstring>

namespace gpuspy::shim {
namespace {

thread_local int t_nvtxDepth GS_TLS = 0;
std::atomic<uint64_t> g_rangeIds{0};

// Domain and registered-string handles are our string ids, never dereferenced by NVTX.
uint32_t handleId(const void* h) { return uint32_t(uintptr_t(h)); }

uint32_t messageOf(const nvtxEventAttributes_t* a)
{
    if (!a) return 0;
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii)
        return internString(a->message.ascii, strnlen(a->message.ascii, 4096));
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) return handleId(a->message.registered);
    return 0;
}

// The capture's NVTX trigger (--capture-range nvtx:NAME[@DOMAIN]) as this process names it: the
// domain handle and registered string made for those names (0: none yet).
std::atomic<uint32_t> g_triggerDomain{0};
std::atomic<uint32_t> g_triggerString{0};

bool sameText(const char* a, const char* b) { return a && b && strncmp(a, b, 4096) == 0; }

bool isTrigger(const nvtxEventAttributes_t* a, const char* ascii, uint32_t domain)
{
    const char* name = windowNvtxName();
    if (!name) return false;
    const bool wantDefault = windowNvtxDomain()[0] == 0;
    if (wantDefault ? domain != 0 : (domain == 0 || domain != g_triggerDomain.load(std::memory_order_relaxed))) return false;
    if (ascii) return sameText(ascii, name);
    if (!a) return false;
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return sameText(a->message.ascii, name);
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
        return handleId(a->message.registered) != 0 && handleId(a->message.registered) == g_triggerString.load(std::memory_order_relaxed);
    return false;
}

void emit(wire::NvtxKind kind, uint32_t message, uint32_t domain, uint64_t rangeId)
{
    // Outside a capture window NVTX events are not recorded either.
    if (g_window.load(std::memory_order_relaxed) == 0) return;
    if (t_depth++ != 0) {
        --t_depth;
        return;
    }
    const int saved = errno;
    if (g_state.load(std::memory_order_acquire) == int(State::On) || ensureStarted()) {
        ThreadState* ts = threadState();
        if (ts) {
            const uint64_t t0 = nowNs();
            Item item{};
            item.kind = Item::Nvtx;
            item.nvtx.timeNs = t0;
            item.nvtx.rangeId = rangeId;
            item.nvtx.tid = currentTid();
            item.nvtx.messageId = message;
            item.nvtx.domainId = domain;
            item.nvtx.kind = kind;
            enqueue(ts, item);
            addOwnTime(ts, nowNs() - t0);
        }
    }
    errno = saved;
    --t_depth;
}

uint32_t ascii(const char* s) { return s ? internString(s, strnlen(s, 4096)) : 0; }

void markEx(const nvtxEventAttributes_t* a) { emit(wire::NvtxKind::Mark, messageOf(a), 0, 0); }
void markA(const char* m) { emit(wire::NvtxKind::Mark, ascii(m), 0, 0); }
nvtxRangeId_t startEx(const nvtxEventAttributes_t* a)
{
    const uint64_t id = g_rangeIds.fetch_add(1) + 1;
    windowOnNvtxStart(id, isTrigger(a, nullptr, 0));
    emit(wire::NvtxKind::Start, messageOf(a), 0, id);
    return id;
}
nvtxRangeId_t startA(const char* m)
{
    const uint64_t id = g_rangeIds.fetch_add(1) + 1;
    windowOnNvtxStart(id, isTrigger(nullptr, m, 0));
    emit(wire::NvtxKind::Start, ascii(m), 0, id);
    return id;
}
void rangeEnd(nvtxRangeId_t id)
{
    emit(wire::NvtxKind::End, 0, 0, id);
    windowOnNvtxEnd(id);
}
int pushEx(const nvtxEventAttributes_t* a)
{
    windowOnNvtxPush(t_nvtxDepth, isTrigger(a, nullptr, 0));
    emit(wire::NvtxKind::Push, messageOf(a), 0, 0);
    return t_nvtxDepth++;
}
int pushA(const char* m)
{
    windowOnNvtxPush(t_nvtxDepth, isTrigger(nullptr, m, 0));
    emit(wire::NvtxKind::Push, ascii(m), 0, 0);
    return t_nvtxDepth++;
}
int pop()
{
    if (t_nvtxDepth <= 0) return -1;
    emit(wire::NvtxKind::Pop, 0, 0, 0);
    windowOnNvtxPop(t_nvtxDepth - 1);
    return --t_nvtxDepth;
}

void domainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { emit(wire::NvtxKind::Mark, messageOf(a), handleId(d), 0); }
nvtxRangeId_t domainStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a)
{
    const uint64_t id = g_rangeIds.fetch_add(1) + 1;
    windowOnNvtxStart(id, isTrigger(a, nullptr, handleId(d)));
    emit(wire::NvtxKind::Start, messageOf(a), handleId(d), id);
    return id;
}
void domainEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    emit(wire::NvtxKind::End, 0, handleId(d), id);
    windowOnNvtxEnd(id);
}
int domainPushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a)
{
    windowOnNvtxPush(t_nvtxDepth, isTrigger(a, nullptr, handleId(d)));
    emit(wire::NvtxKind::Push, messageOf(a), handleId(d), 0);
    return t_nvtxDepth++;
}
int domainPop(nvtxDomainHandle_t d)
{
    if (t_nvtxDepth <= 0) return -1;
    emit(wire::NvtxKind::Pop, 0, handleId(d), 0);
    windowOnNvtxPop(t_nvtxDepth - 1);
    return --t_nvtxDepth;
}
nvtxDomainHandle_t domainCreateA(const char* name)
{
    const uint32_t id = ascii(name);
    if (windowNvtxName() && sameText(name, windowNvtxDomain())) g_triggerDomain.store(id, std::memory_order_relaxed);
    return reinterpret_cast<nvtxDomainHandle_t>(uintptr_t(id));
}
nvtxStringHandle_t registerStringA(nvtxDomainHandle_t, const char* s)
{
    const uint32_t id = ascii(s);
    if (const char* name = windowNvtxName(); name && sameText(s, name)) g_triggerString.store(id, std::memory_order_relaxed);
    return reinterpret_cast<nvtxStringHandle_t>(uintptr_t(id));
}

template <class F>
void set(NvtxFunctionTable table, unsigned size, unsigned id, F fn)
{
    if (table && id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)
{
    if (!getExportTable) return 0;
    auto* cb = static_cast<const NvtxExportTableCallbacks*>(getExportTable(NVTX_ETID_CALLBACKS));
    if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks) || !cb->GetModuleFunctionTable) return 0;
    NvtxFunctionTable t = nullptr;
    unsigned size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size)) {
        set(t, size, NVTX_CBID_CORE_MarkEx, &markEx);
        set(t, size, NVTX_CBID_CORE_MarkA, &markA);
        set(t, size, NVTX_CBID_CORE_RangeStartEx, &startEx);
        set(t, size, NVTX_CBID_CORE_RangeStartA, &startA);
        set(t, size, NVTX_CBID_CORE_RangeEnd, &rangeEnd);
        set(t, size, NVTX_CBID_CORE_RangePushEx, &pushEx);
        set(t, size, NVTX_CBID_CORE_RangePushA, &pushA);
        set(t, size, NVTX_CBID_CORE_RangePop, &pop);
    }
    t = nullptr;
    size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size)) {
        set(t, size, NVTX_CBID_CORE2_DomainMarkEx, &domainMarkEx);
        set(t, size, NVTX_CBID_CORE2_DomainRangeStartEx, &domainStartEx);
        set(t, size, NVTX_CBID_CORE2_DomainRangeEnd, &domainEnd);
        set(t, size, NVTX_CBID_CORE2_DomainRangePushEx, &domainPushEx);
        set(t, size, NVTX_CBID_CORE2_DomainRangePop, &domainPop);
        set(t, size, NVTX_CBID_CORE2_DomainCreateA, &domainCreateA);
        set(t, size, NVTX_CBID_CORE2_DomainRegisterStringA, &registerStringA);
    }
    return 1;  // success: NVTX keeps our functions
}
