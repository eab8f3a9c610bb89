// cuGetProcAddress: hands out the ABI a requested CUDA version asks for, the per-thread twin when asked,
// and a loud NOT_SUPPORTED stub for anything this driver does not implement.
#include "sim.h"

#include <array>
#include <cstring>
#include <utility>

namespace simcuda {
namespace {

struct Entry {
    const char* name;
    int version;
    void* plain;
    void* perThread;
};

const Entry kEntries[] = {
#define SIM_ENTRY(name, version, plain, perThread) \
    {#name, version, reinterpret_cast<void*>(&::plain), reinterpret_cast<void*>(&::perThread)},
#include "entry_points.def"
#undef SIM_ENTRY
};

// One stub per unknown name, so each can say which call it stands for. Called with whatever arguments
// the caller passes; a function taking none is safe to call that way on the SysV ABI.
constexpr int kMaxStubs = 1024;
const char* g_stubNames[kMaxStubs];
int g_stubCount = 0;

template <int I>
CUresult unimplementedStub()
{
    logOnce("UNIMPLEMENTED", g_stubNames[I] ? g_stubNames[I] : "?");
    return CUDA_ERROR_NOT_SUPPORTED;
}

template <size_t... I>
constexpr std::array<void*, sizeof...(I)> makeStubs(std::index_sequence<I...>)
{
    return {{reinterpret_cast<void*>(&unimplementedStub<static_cast<int>(I)>)...}};
}
const std::array<void*, kMaxStubs> g_stubs = makeStubs(std::make_index_sequence<kMaxStubs>());

void* stubFor(const char* name)
{
    Lock g(bigLock());
    for (int i = 0; i < g_stubCount; ++i)
        if (!strcmp(g_stubNames[i], name)) return g_stubs[i];
    if (g_stubCount == kMaxStubs) return nullptr;
    g_stubNames[g_stubCount] = strdup(name);  // leaked: the stub may be called at exit
    return g_stubs[g_stubCount++];
}

CUresult lookup(const char* name, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status)
{
    if (!name || !pfn) return CUDA_ERROR_INVALID_VALUE;
    const Entry* best = nullptr;
    bool known = false;
    for (const Entry& e : kEntries) {
        if (strcmp(e.name, name) != 0) continue;
        known = true;
        if (e.version <= version && (!best || e.version > best->version)) best = &e;
    }
    if (best) {
        *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? best->perThread : best->plain;
        if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    if (known) {
        *pfn = nullptr;
        if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    // Never succeed silently: the stub names itself on stderr when called and returns NOT_SUPPORTED.
    *pfn = name[0] ? stubFor(name) : nullptr;
    if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace
}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* status)
{
    SIM_API(cuGetProcAddress_v2);
    return scope.ret(lookup(symbol, pfn, version, flags, status));
}

SIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags)
{
    SIM_API(cuGetProcAddress);
    return scope.ret(lookup(symbol, pfn, version, flags, nullptr));
}

namespace simcuda {

// Called by the weak stubs generated for every cuda.h entry point this driver does not define.
int unimplementedExport(const char* name)
{
    logOnce("UNIMPLEMENTED", name);
    return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace simcuda
