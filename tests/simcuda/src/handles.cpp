// The registry of handles this driver handed out, the model's locks, and what happens to both across fork().
//
// Handles are checked against the registry before anything dereferences them, so a stale, foreign or random
// pointer is an error code, never a crash. Objects are never freed (cudart calls in from exit handlers and a
// destroyed handle must stay recognisable), so a registered address stays readable for the life of the process.
// Lookups take no lock: the table is open-addressed, insert-only, and grows by publishing a bigger copy.
#include "sim.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <new>

namespace simcuda {
namespace {

struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<uint8_t> kind{0};
    std::atomic<uint8_t> live{0};
};

struct Table {
    size_t mask;
    Slot* slots;
};

std::atomic<Table*> g_table{nullptr};
size_t g_used = 0;  // written under bigLock

size_t hashOf(uintptr_t p)
{
    uint64_t x = static_cast<uint64_t>(p) >> 4;
    x *= 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(x ^ (x >> 29));
}

Slot* find(const Table* t, uintptr_t p)
{
    for (size_t i = hashOf(p) & t->mask;; i = (i + 1) & t->mask) {
        const uintptr_t k = t->slots[i].key.load(std::memory_order_acquire);
        if (k == p) return &t->slots[i];
        if (k == 0) return nullptr;
    }
}

void insert(Table* t, uintptr_t p, uint8_t kind, uint8_t live)
{
    for (size_t i = hashOf(p) & t->mask;; i = (i + 1) & t->mask) {
        Slot& s = t->slots[i];
        const uintptr_t k = s.key.load(std::memory_order_relaxed);
        if (k == p || k == 0) {
            s.kind.store(kind, std::memory_order_relaxed);
            s.live.store(live, std::memory_order_relaxed);
            s.key.store(p, std::memory_order_release);  // readers see kind and state once they see the key
            return;
        }
    }
}

Table* newTable(size_t capacity)
{
    auto* t = new Table;
    t->mask = capacity - 1;
    t->slots = new Slot[capacity];
    return t;
}

// ---- locks and fork: statically initialised, so they work from any constructor or exit handler
pthread_mutex_t g_modelMutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
pthread_mutex_t g_registrationMutex = PTHREAD_MUTEX_INITIALIZER;
// Writers first: hot readers on many threads must not starve cuMemAlloc/cuMemFree.
pthread_rwlock_t g_rangesLock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
std::atomic<unsigned> g_forkGeneration{0};
std::atomic<uint64_t> g_rangesVersion{1};  // bumped by every writer of the address ranges
ModelMutex g_model;

// Before fork: finish initialisation and hold every lock, so the child's copy of the model is consistent.
// The parent then releases them; the child, whose other threads are gone, starts from fresh locks (a recursive
// mutex stays owned by the parent thread's id) and invalidates its thread-local caches.
void prepareFork()
{
    (void)config();
    (void)deviceCount();  // function-local statics: initialised now, not caught half-done by the fork
    pthread_mutex_lock(&g_registrationMutex);  // never held while taking the others
    pthread_mutex_lock(&g_modelMutex);
    pthread_rwlock_wrlock(&g_rangesLock);
}

void parentAfterFork()
{
    pthread_rwlock_unlock(&g_rangesLock);
    pthread_mutex_unlock(&g_modelMutex);
    pthread_mutex_unlock(&g_registrationMutex);
}

void childAfterFork()
{
    g_modelMutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    g_registrationMutex = PTHREAD_MUTEX_INITIALIZER;
    g_rangesLock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
    g_forkGeneration.fetch_add(1);
    traceAfterFork();
}

__attribute__((constructor)) void registerForkHandlers() { pthread_atfork(prepareFork, parentAfterFork, childAfterFork); }

}  // namespace

void ModelMutex::lock() { pthread_mutex_lock(&g_modelMutex); }
void ModelMutex::unlock() { pthread_mutex_unlock(&g_modelMutex); }
bool ModelMutex::try_lock() { return pthread_mutex_trylock(&g_modelMutex) == 0; }
ModelMutex& bigLock() { return g_model; }

RegistrationLock::RegistrationLock() { pthread_mutex_lock(&g_registrationMutex); }
RegistrationLock::~RegistrationLock() { pthread_mutex_unlock(&g_registrationMutex); }

RangesReadLock::RangesReadLock() { pthread_rwlock_rdlock(&g_rangesLock); }
RangesReadLock::~RangesReadLock() { pthread_rwlock_unlock(&g_rangesLock); }
RangesWriteLock::RangesWriteLock()
{
    pthread_rwlock_wrlock(&g_rangesLock);
    g_rangesVersion.fetch_add(1, std::memory_order_release);
}
uint64_t rangesVersion() { return g_rangesVersion.load(std::memory_order_acquire); }
RangesWriteLock::~RangesWriteLock() { pthread_rwlock_unlock(&g_rangesLock); }

unsigned forkGeneration() { return g_forkGeneration.load(std::memory_order_relaxed); }

void registerHandle(const void* p, HandleKind kind)
{
    Lock g(bigLock());
    Table* t = g_table.load(std::memory_order_relaxed);
    if (!t) {
        t = newTable(1024);
        g_table.store(t, std::memory_order_release);
    }
    if ((g_used + 1) * 2 > t->mask + 1) {
        // Grow: copy into a table twice the size and publish it. The old one is never freed, since a reader may
        // still be probing it; it holds every handle registered before, which is all such a reader can ask about.
        Table* bigger = newTable((t->mask + 1) * 2);
        for (size_t i = 0; i <= t->mask; ++i) {
            const uintptr_t k = t->slots[i].key.load(std::memory_order_relaxed);
            if (k) insert(bigger, k, t->slots[i].kind.load(std::memory_order_relaxed), t->slots[i].live.load());
        }
        g_table.store(bigger, std::memory_order_release);
        t = bigger;
    }
    if (!find(t, reinterpret_cast<uintptr_t>(p))) ++g_used;
    insert(t, reinterpret_cast<uintptr_t>(p), static_cast<uint8_t>(kind), 1);
}

void retireHandle(const void* p)
{
    Lock g(bigLock());
    Table* t = g_table.load(std::memory_order_relaxed);
    if (Slot* s = t ? find(t, reinterpret_cast<uintptr_t>(p)) : nullptr)
        s->live.store(0, std::memory_order_release);
}

HandleState handleState(const void* p, HandleKind kind)
{
    const Table* t = g_table.load(std::memory_order_acquire);
    if (!p || !t) return HandleState::Unknown;
    const Slot* s = find(t, reinterpret_cast<uintptr_t>(p));
    if (!s || s->kind.load(std::memory_order_relaxed) != static_cast<uint8_t>(kind)) return HandleState::Unknown;
    return s->live.load(std::memory_order_acquire) ? HandleState::Live : HandleState::Destroyed;
}

}  // namespace simcuda

// Test hook (exported for simcuda's own tests only): holds the model lock for `ns`, setting *held once it has it.
SIM_EXPORT void simcudaTestHoldModelLock(long long ns, volatile int* held)
{
    using namespace simcuda;
    Lock g(bigLock());
    if (held) *held = 1;
    waitUntil(nowNs() + ns);
}
