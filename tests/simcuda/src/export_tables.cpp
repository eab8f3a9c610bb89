// The private export tables cudart fetches with cuGetExportTable, including the HMAC-MD2 integrity check it demands.
//
// Facts (UUIDs, slot layouts, the integrity key and record) come from the fakecuda prototype and ZLUDA.
#include "sim.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

namespace simcuda {
namespace {

constexpr int kMaxSlots = 96;

struct Table {
    const char* name;
    unsigned char uuid[16];
    const void* slots[kMaxSlots];
};

enum {
    kRequirements,
    kCudart,
    kToolsTls,
    kCallbackHooks,
    kContextStorage,
    kContextChecks,
    kIntegrity,
    kContextInfo,
    kModuleInfo,
    kUnknown1734,
    kTableCount
};

Table g_tables[kTableCount] = {
    {"requirements", {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9}, {}},
    {"cudart_interface", {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}, {}},
    {"tools_tls", {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc}, {}},
    {"tools_runtime_callbacks", {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66}, {}},
    {"context_local_storage", {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93}, {}},
    {"context_checks", {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e}, {}},
    {"integrity_check", {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2}, {}},
    {"context_info", {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2}, {}},
    {"module_info", {0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e}, {}},
    {"unknown_1734dc26", {0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca}, {}},
};

// Unknown slots: say so once (with the first call's arguments, to learn the contract from) and fail with
// CUDA_ERROR_NOT_SUPPORTED, never a silent success: a caller that trusts an output we did not write would go on
// with garbage. Slots with no return value ignore it.
template <int T, int S>
uintptr_t slotStub(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d, uintptr_t e, uintptr_t f)
{
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
        logLine("UNIMPLEMENTED export-table %s slot %d (first call: %#lx %#lx %#lx %#lx %#lx %#lx)", g_tables[T].name, S,
                static_cast<unsigned long>(a), static_cast<unsigned long>(b), static_cast<unsigned long>(c),
                static_cast<unsigned long>(d), static_cast<unsigned long>(e), static_cast<unsigned long>(f));
    return CUDA_ERROR_NOT_SUPPORTED;
}

template <int T, size_t... S>
void fillStubs(const void** tbl, std::index_sequence<S...>)
{
    ((tbl[S] = reinterpret_cast<const void*>(&slotStub<T, static_cast<int>(S)>)), ...);
}

template <size_t... T>
void fillAllStubs(std::index_sequence<T...>)
{
    (fillStubs<static_cast<int>(T)>(g_tables[T].slots, std::make_index_sequence<kMaxSlots>()), ...);
}

// cudart_interface slot 2: the primary context of a device.
CUresult cudartGetPrimaryCtx(CUcontext* pctx, CUdevice dev)
{
    Context* c = primaryContext(dev);
    if (!c || !pctx) return CUDA_ERROR_INVALID_DEVICE;
    Lock g(bigLock());
    device(dev)->primaryActive = true;
    *pctx = reinterpret_cast<CUcontext>(c);
    return CUDA_SUCCESS;
}

// tools_tls slot 2: the calling thread's current context (NULL when none). cuBLASLt keys its kernel registry on it.
CUresult toolsCurrentContext(CUcontext* out)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    *out = reinterpret_cast<CUcontext>(currentContext());
    return CUDA_SUCCESS;
}

// context_info slot 4: the context's unique id, as cuCtxGetId (NULL = the current context).
CUresult contextInfoId(CUcontext c, unsigned long long* id)
{
    Context* ctx = c ? asContext(c) : currentContext();
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    if (!ctx) return c ? contextError(c) : noContextError();
    *id = ctx->id;
    return CUDA_SUCCESS;
}

// module_info slot 7: (ctx, module, callback, user) calls callback(user, function) for each kernel of the module's
// loaded image, in image order, and returns 1 (0 for a bad module). cuFFT loads one kernel per module and keeps the
// last function the callback is given; a module without one fails its plan (NULL function).
int moduleForEachFunction(CUcontext, CUmodule m, void (*cb)(void*, CUfunction), void* user)
{
    std::vector<Kernel*> kernels;
    if (!cb || moduleKernels(m, &kernels) != CUDA_SUCCESS) return 0;
    for (Kernel* k : kernels) cb(user, reinterpret_cast<CUfunction>(k));
    return 1;
}

// context_info slot 51: (ctx, stream, &out, perThread) resolves a stream handle as the launch calls do: NULL is
// the context's legacy stream (its per-thread stream when perThread), CU_STREAM_LEGACY/PER_THREAD the same;
// a created stream is itself. cuBLAS passes perThread = (stream == CU_STREAM_PER_THREAD) and keys its
// per-stream workspace cache on what slot 39 says about the result.
CUresult contextResolveStream(CUcontext c, CUstream h, CUstream* out, int perThread)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = c ? asContext(c) : currentContext();
    if (!ctx) return c ? contextError(c) : noContextError();
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, perThread != 0, &s, ctx)) return rc;
    *out = reinterpret_cast<CUstream>(s);
    return CUDA_SUCCESS;
}

// context_info slot 39: (ctx, stream, &id) the stream's id, as cuStreamGetId.
CUresult contextStreamId(CUcontext c, CUstream h, unsigned long long* id)
{
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = c ? asContext(c) : currentContext();
    if (!ctx) return c ? contextError(c) : noContextError();
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, false, &s, ctx)) return rc;
    *id = s->id;
    return CUDA_SUCCESS;
}

// tools_runtime_callbacks slots 2 and 6: scratch buffers cudart writes into.
uint64_t g_callbackBuf1[1024];
unsigned char g_callbackBuf2[64];
void callbackBuf1(void** p, size_t* n) { *p = g_callbackBuf1; *n = 1024; }
void callbackBuf2(void** p, size_t* n) { *p = g_callbackBuf2; *n = 14; }

// context_local_storage: slot 0 put(ctx, key, value, dtor), slot 1 delete(ctx, key), slot 2 get(&value, ctx, key).
std::map<std::pair<void*, void*>, void*>& storage()
{
    static auto* m = new std::map<std::pair<void*, void*>, void*>;
    return *m;
}
void* storageCtx(CUcontext c) { return c ? static_cast<void*>(c) : static_cast<void*>(currentContext()); }

CUresult storagePut(CUcontext c, void* key, void* value, void*)
{
    Lock g(bigLock());
    storage()[{storageCtx(c), key}] = value;
    return CUDA_SUCCESS;
}

CUresult storageDelete(CUcontext c, void* key)
{
    Lock g(bigLock());
    storage().erase({storageCtx(c), key});
    return CUDA_SUCCESS;
}

CUresult storageGet(void** value, CUcontext c, void* key)
{
    Lock g(bigLock());
    auto it = storage().find({storageCtx(c), key});
    if (it == storage().end()) {
        *value = nullptr;
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *value = it->second;
    return CUDA_SUCCESS;
}

CUresult contextCheck(CUcontext, unsigned* flags, const void** detail)
{
    if (flags) *flags = 0;
    if (detail) *detail = nullptr;
    return CUDA_SUCCESS;
}
unsigned contextCheckGlobal() { return 0; }

// ---- integrity check: HMAC-MD2 (RFC 1319 / RFC 2104) over a record cudart recomputes itself
const unsigned char kMd2S[256] = {
    41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19, 98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202,
    30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18, 190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122,
    169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33, 128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
    255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198, 79, 184, 56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241,
    69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2, 27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15,
    85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38, 44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82,
    106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74, 120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57,
    242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10, 49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20};

class Md2 {
public:
    void update(const void* p, size_t len)
    {
        for (size_t i = 0; i < len; ++i) {
            m_buf[m_n++] = static_cast<const unsigned char*>(p)[i];
            if (m_n == 16) {
                block(m_buf, true);
                m_n = 0;
            }
        }
    }
    void final(unsigned char out[16])
    {
        const unsigned char pad = static_cast<unsigned char>(16 - m_n);
        unsigned char p[16];
        memset(p, pad, 16);
        update(p, pad);
        unsigned char c[16];
        memcpy(c, m_c, 16);
        block(c, false);
        memcpy(out, m_x, 16);
    }

private:
    void block(const unsigned char* m, bool checksum)
    {
        for (int j = 0; j < 16; ++j) {
            m_x[16 + j] = m[j];
            m_x[32 + j] = m_x[16 + j] ^ m_x[j];
        }
        unsigned t = 0;
        for (int j = 0; j < 18; ++j) {
            for (int k = 0; k < 48; ++k) t = m_x[k] ^= kMd2S[t];
            t = (t + j) & 255;
        }
        if (checksum)
            for (int j = 0; j < 16; ++j) m_l = m_c[j] ^= kMd2S[m[j] ^ m_l];
    }
    unsigned char m_x[48] = {}, m_c[16] = {}, m_buf[16] = {};
    int m_n = 0;
    unsigned char m_l = 0;
};

const unsigned char kIntegrityKey[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                         0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

// The per-device part of the integrity record: 28 packed bytes.
struct __attribute__((packed)) DeviceIdentity {
    unsigned char uuid[16];
    int32_t domain, bus, device;
};
static_assert(sizeof(DeviceIdentity) == 28, "integrity record layout");

DeviceIdentity deviceIdentity(int ordinal)
{
    DeviceIdentity id = {};
    memcpy(id.uuid, device(ordinal)->uuid.bytes, 16);
    id.domain = deviceAttribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, ordinal);
    id.bus = deviceAttribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, ordinal);
    id.device = deviceAttribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, ordinal);
    return id;
}

CUresult integrityCheck(unsigned version, uint64_t unixSeconds, unsigned char result[16])
{
    if (version % 10 < 2) {
        uint64_t r[2] = {0x3341181c03cb675cULL, 0x8ed383aa1f4cd1e8ULL};
        if (version % 10 == 1) reinterpret_cast<unsigned char*>(r)[7] = 0x18;
        memcpy(result, r, 16);
        return CUDA_SUCCESS;
    }
    struct __attribute__((packed)) {
        uint32_t driverVersion, version, pid, tid;
        const void *cudartTable, *integrityTable, *fn;
        uint64_t unixSeconds;
    } rec = {static_cast<uint32_t>(kDriverVersion), version, static_cast<uint32_t>(getpid()),
             static_cast<uint32_t>(reinterpret_cast<uintptr_t>(reinterpret_cast<void*>(pthread_self()))),
             g_tables[kCudart].slots, g_tables[kIntegrity].slots, reinterpret_cast<const void*>(&integrityCheck),
             unixSeconds};
    unsigned char k[16], inner[16];
    Md2 a;
    for (int i = 0; i < 16; ++i) k[i] = kIntegrityKey[i] ^ 0x36;
    a.update(k, 16);
    a.update(&rec, sizeof rec);
    // Then every device's identity, in ordinal order: cudart recomputes the hash over all the devices it sees.
    for (int d = 0; d < deviceCount(); ++d) {
        const DeviceIdentity id = deviceIdentity(d);
        a.update(&id, sizeof id);
    }
    a.final(inner);
    Md2 b;
    for (int i = 0; i < 16; ++i) k[i] = kIntegrityKey[i] ^ 0x5c;
    b.update(k, 16);
    b.update(inner, 16);
    b.final(result);
    return CUDA_SUCCESS;
}

template <class F>
const void* fn(F* f) { return reinterpret_cast<const void*>(f); }

void initTables()
{
    static std::once_flag once;
    std::call_once(once, [] {
        fillAllStubs(std::make_index_sequence<kTableCount>());
        // Slot 0 of some tables is the table's size in bytes, not a function.
        const void** t = g_tables[kCudart].slots;
        t[0] = reinterpret_cast<const void*>(13 * sizeof(void*));
        t[2] = fn(&cudartGetPrimaryCtx);
        g_tables[kToolsTls].slots[0] = reinterpret_cast<const void*>(4 * sizeof(void*));
        g_tables[kToolsTls].slots[2] = fn(&toolsCurrentContext);
        t = g_tables[kContextInfo].slots;
        t[0] = reinterpret_cast<const void*>(93 * sizeof(void*));
        t[4] = fn(&contextInfoId);
        t[39] = fn(&contextStreamId);
        t[51] = fn(&contextResolveStream);
        t = g_tables[kModuleInfo].slots;
        t[0] = reinterpret_cast<const void*>(kMaxSlots * sizeof(void*));
        t[7] = fn(&moduleForEachFunction);
        t = g_tables[kCallbackHooks].slots;
        t[0] = reinterpret_cast<const void*>(7 * sizeof(void*));
        t[2] = fn(&callbackBuf1);
        t[6] = fn(&callbackBuf2);
        t = g_tables[kContextStorage].slots;
        t[0] = fn(&storagePut);
        t[1] = fn(&storageDelete);
        t[2] = fn(&storageGet);
        t = g_tables[kContextChecks].slots;
        t[2] = fn(&contextCheck);
        t[3] = fn(&contextCheckGlobal);
        t = g_tables[kIntegrity].slots;
        t[0] = reinterpret_cast<const void*>(3 * sizeof(void*));
        t[1] = fn(&integrityCheck);
    });
}

}  // namespace
}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuGetExportTable(const void** out, const CUuuid* id)
{
    // Not wrapped in SIM_API: export tables are private plumbing, not driver calls to trace or fault.
    if (!out || !id) return CUDA_ERROR_INVALID_VALUE;
    initTables();
    for (int t = 0; t < kTableCount; ++t) {
        if (memcmp(id->bytes, g_tables[t].uuid, 16) != 0) continue;
        // The requirements table is refused on purpose: cudart then falls back to its defaults.
        if (t == kRequirements) break;
        *out = g_tables[t].slots;
        return CUDA_SUCCESS;
    }
    *out = nullptr;
    char uuid[40];
    const auto* b = reinterpret_cast<const unsigned char*>(id->bytes);
    snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    if (memcmp(b, g_tables[kRequirements].uuid, 16) != 0) logOnce("UNIMPLEMENTED export table", uuid);
    return CUDA_ERROR_NOT_FOUND;
}
