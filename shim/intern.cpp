// shim/intern.cpp: what records refer to by id or look up on the hot path: kernel names, strings,
// devices, threads, and the memory ranges that tell pinned, managed and device memory apart.
#include "shim/shim.h"

#include "wire/codec.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {

namespace {

// ---- an insert-under-lock, read-lock-free hash table: key -> id
template <size_t N>
struct IdTable {
    std::atomic<uint64_t> keys[N];
    std::atomic<uint32_t> ids[N];
    uint32_t find(uint64_t key) const
    {
        for (size_t i = 0, h = mix(key); i < 64; ++i, ++h) {
            const uint64_t k = keys[h % N].load(std::memory_order_acquire);
            if (k == key) return ids[h % N].load(std::memory_order_acquire);
            if (k == 0) return 0;
        }
        return 0;
    }
    bool insert(uint64_t key, uint32_t id)  // caller holds the lock
    {
        for (size_t i = 0, h = mix(key); i < 64; ++i, ++h) {
            const uint64_t k = keys[h % N].load(std::memory_order_relaxed);
            if (k == key || k == 0) {
                ids[h % N].store(id, std::memory_order_release);
                keys[h % N].store(key, std::memory_order_release);
                return true;
            }
        }
        return false;
    }
    static size_t mix(uint64_t k)
    {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdull;
        k ^= k >> 33;
        return size_t(k);
    }
};

constexpr uint32_t kMaxNames = 1 << 16;
constexpr uint32_t kUnknown = 0xffffffffu;  // asked the driver, no name

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

IdTable<1 << 15> g_kernels;  // handle -> kernel id
const char* g_kernelNames[kMaxNames];
std::atomic<uint32_t> g_kernelCount{0};
uint32_t g_kernelSent = 0;

IdTable<1 << 14> g_strings;  // content hash -> string id
const char* g_stringText[kMaxNames];
uint32_t g_stringLen[kMaxNames];
std::atomic<uint32_t> g_stringCount{0};
uint32_t g_stringSent = 0;

constexpr int kMaxDevices = 64;
std::atomic<uint64_t> g_devicesSeen{0};
uint64_t g_devicesSent = 0;
// The devices' names, looked up by the drain thread (resolveDeviceNames) before it encodes anything:
// a driver call that an exit takes over (drain.cpp's gate) then loses no definition already marked sent.
uint64_t g_devicesNamed = 0;
char g_deviceNames[kMaxDevices][128];
// Asked with the name: what joins the device to the fleet's GPU metrics (a DeviceInfo record).
uint64_t g_devicesIdentified = 0;
wire::DeviceInfoBody g_deviceInfo[kMaxDevices];

constexpr size_t kMaxThreadDefs = 4096;
uint32_t g_threadTids[kMaxThreadDefs];
size_t g_threadHead = 0, g_threadTail = 0;

uint64_t hashBytes(const char* s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ uint8_t(s[i])) * 1099511628211ull;
    return h ? h : 1;
}

uint32_t addKernelLocked(const void* handle, const char* name)
{
    // Same name again (another handle for it): one id per name keeps the report grouped.
    const size_t len = strnlen(name, 4096);
    const uint64_t nameKey = hashBytes(name, len) | (1ull << 63);
    uint32_t id = g_kernels.find(nameKey);
    if (id == 0 || id == kUnknown || strcmp(g_kernelNames[id], name) != 0) {
        id = g_kernelCount.load(std::memory_order_relaxed) + 1;
        if (id >= kMaxNames) return 0;
        char* copy = static_cast<char*>(malloc(len + 1));
        if (!copy) return 0;
        memcpy(copy, name, len);
        copy[len] = 0;
        g_kernelNames[id] = copy;
        g_kernelCount.store(id, std::memory_order_release);
        g_kernels.insert(nameKey, id);
    }
    g_kernels.insert(uint64_t(uintptr_t(handle)), id);
    return id;
}

// ---- memory ranges (sorted by start), for the host memory kind of a transfer. Every copy looks a
// pointer up, allocations and frees change the table: a seqlock, so that a lookup writes nothing
// shared (a reader-writer lock took two locked instructions on one cache line per copy, from every
// thread). Writers are serialised by g_rangeWriteLock and hold g_rangeSeq odd while they write;
// readers retry when it changed. Fields are atomics, so a reader racing a writer reads whole words.
struct Range {
    std::atomic<uint64_t> start, end;
    std::atomic<uint8_t> kind;
};
constexpr size_t kMaxRanges = 1 << 16;
Range g_ranges[kMaxRanges];
std::atomic<size_t> g_rangeCount{0};
std::atomic<uint32_t> g_rangeSeq{0};
pthread_mutex_t g_rangeWriteLock = PTHREAD_MUTEX_INITIALIZER;
std::atomic<uint32_t> g_rangeGen{1};

// cuPointerGetAttribute answers for memory we did not see allocated, cached per page.
struct KindCache {
    std::atomic<uint64_t> page;
    std::atomic<uint32_t> gen;
    std::atomic<uint8_t> kind;
};
KindCache g_kindCache[1024];

// ---- contexts -> device
struct CtxDev {
    std::atomic<uintptr_t> ctx;
    std::atomic<int> dev;
};
CtxDev g_ctxDev[64];
pthread_mutex_t g_ctxDevLock = PTHREAD_MUTEX_INITIALIZER;
thread_local CUcontext t_lastCtx GS_TLS = nullptr;
thread_local int t_lastDev GS_TLS = -1;
thread_local uint32_t t_lastEpoch GS_TLS = 0;

// The current context per thread, kept by the context hooks. Valid while t_ctxEpoch matches
// g_ctxEpoch (0 never does: a new thread asks the driver once).
thread_local CUcontext t_ctx GS_TLS = nullptr;
thread_local uint32_t t_ctxEpoch GS_TLS = 0;
std::atomic<uint32_t> g_ctxEpoch{1};

// How many of each kernel's launches had GPU timing set up, up to kFirstTimings (a byte per kernel id):
// until then the kernel's launches are timed whatever the budget says, so that every kernel gets a GPU
// time, not only those that come first or most often, and not from its first launch alone (one-off
// costs: a driver loads a lazily loaded module in it). A one-off cost per kernel, charged to the budget.
// Read on every launch, written twice per kernel.
constexpr uint8_t kFirstTimings = 2;
std::atomic<uint8_t> g_kernelTimings[kMaxNames];
// A first timing whose span was set aside (its thread held up, its end event recorded late: a loaded
// host) gives no GPU time: the kernel gets another, up to kFirstRetries in all, so that a short process
// on a busy machine still times each of its kernels soundly (an exec'd child of 25 launches timed none).
constexpr uint8_t kFirstRetries = 4;
std::atomic<uint8_t> g_kernelRetries[kMaxNames];

}  // namespace

bool kernelNeedsFirstTimings(uint32_t id)
{
    return id != 0 && id < kMaxNames && g_kernelTimings[id].load(std::memory_order_relaxed) < kFirstTimings;
}

void noteKernelTimed(uint32_t id)
{
    if (id != 0 && id < kMaxNames) g_kernelTimings[id].fetch_add(1, std::memory_order_relaxed);
}

void retryKernelTiming(uint32_t id)
{
    if (id == 0 || id >= kMaxNames) return;
    if (g_kernelRetries[id].load(std::memory_order_relaxed) >= kFirstRetries) return;
    if (g_kernelTimings[id].load(std::memory_order_relaxed) == 0) return;
    g_kernelRetries[id].fetch_add(1, std::memory_order_relaxed);
    g_kernelTimings[id].fetch_sub(1, std::memory_order_relaxed);
}

uint32_t internKernelName(const void* handle, const char* name)
{
    if (!handle || !name) return 0;
    pthread_mutex_lock(&g_lock);
    const uint32_t id = addKernelLocked(handle, name);
    pthread_mutex_unlock(&g_lock);
    return id;
}

void aliasKernel(const void* handle, const void* sameAs)
{
    if (!handle || !sameAs) return;
    const uint32_t id = g_kernels.find(uint64_t(uintptr_t(sameAs)));
    if (id == 0) return;
    pthread_mutex_lock(&g_lock);
    g_kernels.insert(uint64_t(uintptr_t(handle)), id);
    pthread_mutex_unlock(&g_lock);
}

uint32_t kernelIdOf(const void* handle)
{
    if (!handle) return 0;
    const uint32_t id = g_kernels.find(uint64_t(uintptr_t(handle)));
    if (id == kUnknown) return 0;
    if (id != 0) return id;
    // A handle we did not see created (loaded before us, or through an unhooked path): ask the
    // driver once. The caller holds the depth guard, so nothing here is recorded.
    const Driver& d = driver();
    const char* name = nullptr;
    if (d.funcGetName && d.funcGetName(&name, reinterpret_cast<CUfunction>(const_cast<void*>(handle))) != CUDA_SUCCESS)
        name = nullptr;
    if (!name && d.kernelGetName &&
        d.kernelGetName(&name, reinterpret_cast<CUkernel>(const_cast<void*>(handle))) != CUDA_SUCCESS)
        name = nullptr;
    pthread_mutex_lock(&g_lock);
    uint32_t got = name ? addKernelLocked(handle, name) : 0;
    if (!got) g_kernels.insert(uint64_t(uintptr_t(handle)), kUnknown);
    pthread_mutex_unlock(&g_lock);
    return got;
}

uint32_t internString(const char* s, size_t n)
{
    if (!s) return 0;
    const uint64_t key = hashBytes(s, n);
    uint32_t id = g_strings.find(key);
    if (id != 0 && g_stringLen[id] == n && memcmp(g_stringText[id], s, n) == 0) return id;
    pthread_mutex_lock(&g_lock);
    id = g_strings.find(key);
    if (id == 0 || g_stringLen[id] != n || memcmp(g_stringText[id], s, n) != 0) {
        id = g_stringCount.load(std::memory_order_relaxed) + 1;
        char* copy = id < kMaxNames ? static_cast<char*>(malloc(n + 1)) : nullptr;
        if (!copy) {
            pthread_mutex_unlock(&g_lock);
            return 0;
        }
        memcpy(copy, s, n);
        copy[n] = 0;
        g_stringText[id] = copy;
        g_stringLen[id] = uint32_t(n);
        g_stringCount.store(id, std::memory_order_release);
        g_strings.insert(key, id);
    }
    pthread_mutex_unlock(&g_lock);
    return id;
}

CUcontext currentContext()
{
    const uint32_t epoch = g_ctxEpoch.load(std::memory_order_acquire);
    if (t_ctxEpoch == epoch) return t_ctx;
    const Driver& d = driver();
    CUcontext ctx = nullptr;
    if (!d.ctxGetCurrent || d.ctxGetCurrent(&ctx) != CUDA_SUCCESS) return nullptr;  // asked again next time
    t_ctx = ctx;
    t_ctxEpoch = epoch;
    return ctx;
}

void noteCurrentContext(CUcontext ctx)
{
    t_ctx = ctx;
    t_ctxEpoch = g_ctxEpoch.load(std::memory_order_acquire);
}

void forgetCurrentContexts()
{
    g_ctxEpoch.fetch_add(1, std::memory_order_acq_rel);
    t_lastCtx = nullptr;
    t_lastDev = -1;
}

void forgetThreadContext()
{
    t_ctxEpoch = 0;
}

void noteContextDevice(CUcontext ctx, int device)
{
    if (!ctx || device < 0) return;
    // Inserts are serialised (rare: once per context); readers go without the lock. A slot's device is
    // written before its context is published, so a reader that finds the context finds its device.
    pthread_mutex_lock(&g_ctxDevLock);
    CtxDev* slot = nullptr;
    for (auto& e : g_ctxDev) {
        const uintptr_t c = e.ctx.load(std::memory_order_acquire);
        if (c == uintptr_t(ctx) || c == 0) {
            slot = &e;
            break;
        }
    }
    if (slot) {
        // A context address can come back for another device after a destroy: the newest wins.
        slot->dev.store(device, std::memory_order_release);
        slot->ctx.store(uintptr_t(ctx), std::memory_order_release);
    }
    pthread_mutex_unlock(&g_ctxDevLock);
    if (t_lastCtx == ctx) t_lastDev = device;
    noteDevice(device);
}

int deviceOfCurrentContext(CUcontext* ctxOut)
{
    const Driver& d = driver();
    CUcontext ctx = currentContext();
    if (!ctx) {
        if (ctxOut) *ctxOut = nullptr;
        return -1;
    }
    if (ctxOut) *ctxOut = ctx;
    const uint32_t epoch = g_ctxEpoch.load(std::memory_order_relaxed);
    if (ctx == t_lastCtx && t_lastEpoch == epoch) return t_lastDev;
    int dev = -1;
    for (auto& e : g_ctxDev) {
        if (e.ctx.load(std::memory_order_acquire) == uintptr_t(ctx)) {
            dev = e.dev.load(std::memory_order_relaxed);
            break;
        }
    }
    if (dev < 0 && d.ctxGetDevice) {
        // A context no hook saw created (made current before we were loaded): ask once.
        CUdevice cd = -1;
        if (d.ctxGetDevice(&cd) == CUDA_SUCCESS) dev = cd;
        noteContextDevice(ctx, dev);
    }
    t_lastCtx = ctx;
    t_lastDev = dev;
    t_lastEpoch = epoch;
    return dev;
}

int deviceOfContext(CUcontext ctx)
{
    for (auto& e : g_ctxDev)
        if (e.ctx.load(std::memory_order_acquire) == uintptr_t(ctx)) return e.dev.load(std::memory_order_relaxed);
    return -1;
}

void noteDevice(int device)
{
    if (device < 0 || device >= kMaxDevices) return;
    g_devicesSeen.fetch_or(1ull << device, std::memory_order_relaxed);
}

void noteThreadName(uint32_t tid)
{
    pthread_mutex_lock(&g_lock);
    if (g_threadHead - g_threadTail < kMaxThreadDefs) g_threadTids[g_threadHead++ % kMaxThreadDefs] = tid;
    pthread_mutex_unlock(&g_lock);
}

namespace {

// Writers only (under g_rangeWriteLock): the first range whose start is not below `start`.
size_t rangeLowerBound(uint64_t start, size_t count)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (g_ranges[mid].start.load(std::memory_order_relaxed) < start) lo = mid + 1; else hi = mid;
    }
    return lo;
}

void copyRange(size_t to, size_t from)
{
    g_ranges[to].start.store(g_ranges[from].start.load(std::memory_order_relaxed), std::memory_order_relaxed);
    g_ranges[to].end.store(g_ranges[from].end.load(std::memory_order_relaxed), std::memory_order_relaxed);
    g_ranges[to].kind.store(g_ranges[from].kind.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void setRange(size_t at, uint64_t start, uint64_t end, wire::MemKind kind)
{
    g_ranges[at].start.store(start, std::memory_order_relaxed);
    g_ranges[at].end.store(end, std::memory_order_relaxed);
    g_ranges[at].kind.store(uint8_t(kind), std::memory_order_relaxed);
}

// Opens a write: the acquire keeps the writes after the odd sequence number; returns it.
uint32_t beginRangeWrite()
{
    pthread_mutex_lock(&g_rangeWriteLock);
    return g_rangeSeq.fetch_add(1, std::memory_order_acquire);
}

void endRangeWrite(uint32_t seq)
{
    g_rangeGen.fetch_add(1, std::memory_order_release);
    g_rangeSeq.store(seq + 2, std::memory_order_release);
    pthread_mutex_unlock(&g_rangeWriteLock);
}

}  // namespace

void memAddRange(uint64_t start, uint64_t bytes, wire::MemKind kind)
{
    if (!start || !bytes) return;
    const uint32_t seq = beginRangeWrite();
    const size_t count = g_rangeCount.load(std::memory_order_relaxed);
    const size_t lo = rangeLowerBound(start, count);
    if (lo < count && g_ranges[lo].start.load(std::memory_order_relaxed) == start) {
        setRange(lo, start, start + bytes, kind);
    } else if (count < kMaxRanges) {
        for (size_t i = count; i > lo; --i) copyRange(i, i - 1);
        setRange(lo, start, start + bytes, kind);
        g_rangeCount.store(count + 1, std::memory_order_relaxed);
    }
    endRangeWrite(seq);
}

void memRemoveRange(uint64_t start)
{
    if (!start) return;
    const uint32_t seq = beginRangeWrite();
    const size_t count = g_rangeCount.load(std::memory_order_relaxed);
    const size_t lo = rangeLowerBound(start, count);
    if (lo < count && g_ranges[lo].start.load(std::memory_order_relaxed) == start) {
        for (size_t i = lo; i + 1 < count; ++i) copyRange(i, i + 1);
        g_rangeCount.store(count - 1, std::memory_order_relaxed);
    }
    endRangeWrite(seq);
}

wire::MemKind memKindOf(uint64_t address, bool mayAskDriver)
{
    if (!address) return wire::MemKind::Unknown;
    wire::MemKind kind = wire::MemKind::Unknown;
    for (unsigned spins = 0;; ++spins) {
        if (spins >= 64) sched_yield();  // a writer is shifting the table, or was preempted doing it
        // Acquire loads (plain moves on x86): the second sequence read cannot pass the table's.
        const uint32_t seq = g_rangeSeq.load(std::memory_order_acquire);
        if (seq & 1) continue;
        size_t lo = 0, hi = g_rangeCount.load(std::memory_order_acquire);
        if (hi > kMaxRanges) hi = kMaxRanges;
        while (lo < hi) {
            const size_t mid = (lo + hi) / 2;
            if (g_ranges[mid].start.load(std::memory_order_acquire) <= address) lo = mid + 1; else hi = mid;
        }
        kind = wire::MemKind::Unknown;
        if (lo > 0 && address < g_ranges[lo - 1].end.load(std::memory_order_acquire))
            kind = wire::MemKind(g_ranges[lo - 1].kind.load(std::memory_order_acquire));
        if (g_rangeSeq.load(std::memory_order_relaxed) == seq) break;
    }
    if (kind != wire::MemKind::Unknown || !mayAskDriver) return kind == wire::MemKind::Unknown ? wire::MemKind::Pageable : kind;

    const uint64_t page = address >> 12;
    const uint32_t gen = g_rangeGen.load(std::memory_order_acquire);
    KindCache& c = g_kindCache[page % 1024];
    if (c.page.load(std::memory_order_acquire) == page && c.gen.load(std::memory_order_acquire) == gen)
        return wire::MemKind(c.kind.load(std::memory_order_relaxed));
    const Driver& d = driver();
    kind = wire::MemKind::Pageable;
    unsigned int type = 0;
    if (d.pointerGetAttribute &&
        d.pointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(address)) == CUDA_SUCCESS) {
        int managed = 0;
        d.pointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, CUdeviceptr(address));
        if (managed) kind = wire::MemKind::Managed;
        else if (type == CU_MEMORYTYPE_HOST) kind = wire::MemKind::Pinned;
        else if (type == CU_MEMORYTYPE_DEVICE) kind = wire::MemKind::Device;
    }
    c.kind.store(uint8_t(kind), std::memory_order_relaxed);
    c.gen.store(gen, std::memory_order_release);
    c.page.store(page, std::memory_order_release);
    return kind;
}

int deviceOfPointer(uint64_t address)
{
    // One device seen: every device pointer is its.
    const uint64_t seen = g_devicesSeen.load(std::memory_order_acquire);
    if (seen && !(seen & (seen - 1))) return __builtin_ctzll(seen);
    const Driver& d = driver();
    int ordinal = -1;
    if (!address || !d.pointerGetAttribute ||
        d.pointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CUdeviceptr(address)) != CUDA_SUCCESS)
        return -1;
    return ordinal;
}

size_t drainKernelDefs(uint8_t* out, size_t cap)
{
    size_t n = 0;
    const uint32_t count = g_kernelCount.load(std::memory_order_acquire);
    while (g_kernelSent < count) {
        const uint32_t id = g_kernelSent + 1;
        const char* name = g_kernelNames[id];
        wire::KernelDefBody b{};
        b.kernelId = id;
        b.length = uint32_t(strnlen(name, 8192));
        const size_t k = wire::encodeVar(out + n, cap - n, b, name, b.length);
        if (k == 0) break;
        n += k;
        g_kernelSent = id;
    }
    return n;
}

size_t drainStringDefs(uint8_t* out, size_t cap)
{
    size_t n = 0;
    const uint32_t count = g_stringCount.load(std::memory_order_acquire);
    while (g_stringSent < count) {
        const uint32_t id = g_stringSent + 1;
        wire::StringDefBody b{};
        b.stringId = id;
        b.length = g_stringLen[id] < 8192 ? g_stringLen[id] : 8192;
        const size_t k = wire::encodeVar(out + n, cap - n, b, g_stringText[id], b.length);
        if (k == 0) break;
        n += k;
        g_stringSent = id;
    }
    return n;
}

void resolveDeviceNames()
{
    const uint64_t seen = g_devicesSeen.load(std::memory_order_acquire);
    for (int dev = 0; dev < kMaxDevices; ++dev) {
        const uint64_t bit = 1ull << dev;
        if (!(seen & bit) || (g_devicesNamed & bit)) continue;
        const Driver& d = driver();
        char name[sizeof g_deviceNames[0]] = {0};
        if (!drainDriverEnter()) return;  // closed by an exit: the defs say "device N"
        const bool named = d.deviceGetName && d.deviceGetName(name, sizeof name - 1, CUdevice(dev)) == CUDA_SUCCESS;
        wire::DeviceInfoBody info{};
        info.device = dev;
        CUuuid uuid{};
        const bool hasUuid = d.deviceGetUuid && d.deviceGetUuid(&uuid, CUdevice(dev)) == CUDA_SUCCESS;
        if (hasUuid) memcpy(info.uuid, uuid.bytes, sizeof info.uuid);
        const bool hasBus = d.deviceGetPciBusId &&
                            d.deviceGetPciBusId(info.pciBusId, int(sizeof info.pciBusId - 1), CUdevice(dev)) == CUDA_SUCCESS;
        if (!hasBus) info.pciBusId[0] = 0;
        drainDriverLeave();
        if (!named) snprintf(name, sizeof name, "device %d", dev);
        memcpy(g_deviceNames[dev], name, sizeof name);
        g_devicesNamed |= bit;
        if (hasUuid || hasBus) {
            g_deviceInfo[dev] = info;
            g_devicesIdentified |= bit;
        }
    }
}

size_t drainDeviceDefs(uint8_t* out, size_t cap)
{
    size_t n = 0;
    const uint64_t seen = g_devicesSeen.load(std::memory_order_acquire);
    for (int dev = 0; dev < kMaxDevices; ++dev) {
        const uint64_t bit = 1ull << dev;
        if (!(seen & bit) || (g_devicesSent & bit)) continue;
        char placeholder[32];
        snprintf(placeholder, sizeof placeholder, "device %d", dev);
        const char* name = (g_devicesNamed & bit) ? g_deviceNames[dev] : placeholder;
        wire::DeviceDefBody b{};
        b.device = dev;
        b.length = uint32_t(strnlen(name, sizeof g_deviceNames[0]));
        const size_t k = wire::encodeVar(out + n, cap - n, b, name, b.length);
        if (k == 0 || cap - n - k < wire::encodedSize<wire::DeviceInfoBody>()) break;
        n += k;
        if (g_devicesIdentified & bit) n += wire::encode(out + n, cap - n, g_deviceInfo[dev]);
        g_devicesSent |= bit;
    }
    return n;
}

// g_lock taken by the drain thread, or by an exit that took its work over. It waits while an app thread
// holds it (interning a new name: a moment), but not once an exit from inside a hooked call closed the
// driver gate: the app thread that holds it may be the one a signal handler ends the process from (or
// the exiting thread itself), and would hold it until the process is gone. False then: the thread names
// still queued are not sent (the report gives their tids).
static bool lockForDrain()
{
    for (unsigned spins = 0;; ++spins) {
        if (pthread_mutex_trylock(&g_lock) == 0) return true;
        if (drainGateClosed()) return false;
        if (spins < 64) {
            sched_yield();
        } else {
            timespec ts{0, 50000};
            nanosleep(&ts, nullptr);
        }
    }
}

size_t drainThreadDefs(uint8_t* out, size_t cap)
{
    size_t n = 0;
    for (;;) {
        if (cap - n < wire::encodedSize<wire::ThreadDefBody>(64)) break;  // a name of at most 63 bytes
        uint32_t tid = 0;
        if (!lockForDrain()) break;
        if (g_threadTail < g_threadHead) tid = g_threadTids[g_threadTail++ % kMaxThreadDefs];
        pthread_mutex_unlock(&g_lock);
        if (tid == 0) break;
        char path[64], name[64] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
        size_t len = 0;
        OwnedFd fd = fdOwn(open(path, O_RDONLY | O_CLOEXEC));  // out of the app's way (fds.cpp)
        if (fd.fd >= 0) {
            ssize_t r = read(fd.fd, name, sizeof name - 1);
            if (r > 0) len = size_t(r);
            fdRelease(fd);
        }
        while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == 0)) --len;
        wire::ThreadDefBody b{};
        b.tid = tid;
        b.length = uint32_t(len);
        const size_t k = wire::encodeVar(out + n, cap - n, b, name, b.length);
        if (k == 0) break;
        n += k;
    }
    return n;
}

void internForgetSent()
{
    g_kernelSent = 0;
    g_stringSent = 0;
    g_devicesSent = 0;
}

void internPrefork()
{
    pthread_mutex_lock(&g_lock);
    pthread_mutex_lock(&g_rangeWriteLock);  // no write cut short by the fork
}

void internPostforkParent()
{
    pthread_mutex_unlock(&g_rangeWriteLock);
    pthread_mutex_unlock(&g_lock);
}

void internPostforkChild()
{
    pthread_mutex_unlock(&g_rangeWriteLock);
    pthread_mutex_unlock(&g_lock);
    g_threadHead = g_threadTail = 0;
    t_lastCtx = nullptr;
    t_lastDev = -1;
    t_ctxEpoch = 0;  // contexts do not survive fork
}

}  // namespace gpuspy::shim
