// shim/lanes.cpp: the lanes that carry records from the app's threads to the drain thread: one bounded
// queue per thread state, with one producer at a time (the thread that holds the state) and one
// consumer (the drain thread), so that no thread's burst can take another thread's space.
//
// Why not one queue shared by every thread: moodycamel's explicit producers never give a block back to
// the shared pool, so after a burst filled a shared queue the bursting threads held every block and a
// quiet or new thread dropped all it made (tests/hardening/quiet_after_burst.sh). Implicit producers
// allocate on the hot path and are not recycled when threads come and go by thousands. A queue per
// lane with its one explicit producer has nobody to lose blocks to.
//
// A lane that fills wakes the drain thread (drainWake) instead of waiting out its poll period: once
// each time it crosses half full. The producer knows how full its lane is from two counters, what it
// put in and what the drain thread took out, and reads the drain thread's counter only at the
// enqueue where the lane could first reach half full since it last looked: a steady stream the drain
// thread keeps up with pays an increment and a compare per record, no shared cache line and no
// syscall. (moodycamel's size_approx would read the queue's head, written by every dequeue, on every
// record.)
#include "shim/shim.h"

#if __has_include(<concurrentqueue/moodycamel/concurrentqueue.h>)
#include <concurrentqueue/moodycamel/concurrentqueue.h>
#else
#include <concurrentqueue/concurrentqueue.h>
#endif

#include <sys/mman.h>
#include <cstdlib>
#include <new>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gpuspy::shim {
namespace {

// A lane's memory comes resident: its block pool is handed out front to back before any block is
// reused, so lazily mapped pages would fault on the app thread one by one through its first records,
// and a first touch costs 12-30 us on a VM (1 us per page populated in bulk). The header keeps the
// mapping's size for free().
struct LaneMemory {
    static constexpr size_t kHeader = 64;  // keeps the caller's pointer 64-byte aligned
    static constexpr size_t kMapAbove = 4096;
    static void* allocate(size_t size)
    {
        const bool map = size >= kMapAbove;
        uint8_t* raw = nullptr;
        if (map) {
            void* p = mmap(nullptr, size + kHeader, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            raw = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
        } else {
            // Whole cache lines of its own: the drain thread writes the queue's bookkeeping (the
            // producer's head and dequeue counts), and no heap neighbour may share those lines.
            void* p = nullptr;
            raw = posix_memalign(&p, 64, (size + kHeader + 63) & ~size_t(63)) == 0 ? static_cast<uint8_t*>(p) : nullptr;
        }
        if (!raw) return nullptr;
        reinterpret_cast<size_t*>(raw)[0] = map ? size + kHeader : 0;
        return raw + kHeader;
    }
    static void release(void* p)
    {
        if (!p) return;
        uint8_t* raw = static_cast<uint8_t*>(p) - kHeader;
        const size_t mapped = reinterpret_cast<size_t*>(raw)[0];
        if (mapped) munmap(raw, mapped);
        else std::free(raw);
    }
};

thread_local bool t_allocFailed GS_TLS = false;  // while a lane is built: one of its allocations failed

struct LaneTraits : moodycamel::ConcurrentQueueDefaultTraits {
    static const size_t BLOCK_SIZE = 64;
    // The producer's block index is sized from the lane's block pool (one entry per block it can hold),
    // so try_enqueue never needs a bigger one; this is only its floor.
    static const size_t EXPLICIT_INITIAL_INDEX_SIZE = 2;
    // No implicit producers: try_enqueue without a token would allocate.
    static const size_t INITIAL_IMPLICIT_PRODUCER_HASH_SIZE = 0;
    static inline void* malloc(size_t size)
    {
        void* p = LaneMemory::allocate(size);
        if (!p) t_allocFailed = true;
        return p;
    }
    static inline void free(void* p) { LaneMemory::release(p); }
};
// Whether the CPU has PREFETCHW (CPUID 0x80000001, ECX bit 8; every x86-64 CPU since about 2014):
// older ones may fault on it. Without it, a plain prefetch (the line arrives shared, the write still
// has to take it).
bool g_prefetchw = false;

// How far ahead of its write a lane slot is fetched for writing, in records.
//
// A slot's cache lines were last read by the drain thread, on another core, one lap of the lane ago:
// the write has to take them back (an ownership transfer, or a miss when they left the cache, 150-200
// ns on our VMs). The store buffer does not hide that: the hook's next stores queue behind it, and
// the app pays it at its next call. So each enqueue fetches the slot kAhead records on for writing,
// one call or more before its write. Measured (bench/NOTES.md): the launch loop's added time per
// launch fell from ~200 to ~110 ns; a copy followed by a fence, in a test program, from ~450 to ~130
// cycles, where fetching only the next slot gave ~450 (its lines are still in flight when it is
// written). Within the block only: the memory past a block's slots is moodycamel's bookkeeping, which
// the drain thread writes.
constexpr uint64_t kAhead = 4;

inline void prefetchForWrite(const void* p)
{
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63);
    const uintptr_t last = (reinterpret_cast<uintptr_t>(p) + sizeof(Item) - 1) & ~uintptr_t(63);
    for (uintptr_t line = first; line <= last; line += 64) {
#if defined(__x86_64__)
        if (g_prefetchw) {
            asm volatile("prefetchw (%0)" ::"r"(line));
            continue;
        }
#endif
        __builtin_prefetch(reinterpret_cast<const void*>(line), 1, 3);
    }
}

// A lane's queue slot. moodycamel move-constructs it into place from the temporary the producer
// passes (try_enqueue takes the element type only): the move copies the record and, when asked,
// fetches the slot kAhead records on for writing (see kAhead). Dequeued into an Item through the
// conversion.
struct LaneSlot {
    LaneSlot(const Item& it, bool ahead) noexcept : item(it) { item.laneAhead = ahead; }
    LaneSlot(LaneSlot&& o) noexcept : item(o.item)
    {
        if (o.item.laneAhead) prefetchForWrite(this + kAhead);
    }
    operator const Item&() const { return item; }
    Item item;
};
static_assert(sizeof(LaneSlot) == sizeof(Item));

using LaneQueue = moodycamel::ConcurrentQueue<LaneSlot, LaneTraits>;

// Records a lane holds before it drops, per thread. It must hold what one thread makes while the drain
// thread does not run: its 2 ms poll period (shortened by the half-full wake), and on a loaded machine
// the time it waits for a CPU after a wake. One thread launching flat out (about 0.6 us a record on the
// simulated driver; launches cost 2-5 us on a real GPU) into lanes of 4096, 8192 and 16384, on a
// 2-core machine shared with other work, dropped a median of 8%, 4% and 0% of 100,000 launches
// (with the wake; 30% at 4096 without it). A lane of 16384 takes 2.03 MiB (257 blocks of 64
// items of 128 bytes, and the queue's index), made resident at the thread's first recorded call (0.4-0.5
// ms there on a VM, once per thread state; 0.1-0.2 ms at 4096); a sustained rate above what the drain
// thread writes drops whatever the size.
size_t g_laneItems = 16384;

// While the lane is at or above half full after a wake, the producer looks at the drain thread's
// progress again every this many records, to know when the lane went below and may wake it again.
constexpr uint64_t kRecheckItems = 64;

std::atomic<Lane*> g_lanes{nullptr};  // every lane of this process, newest first; never shrinks

}  // namespace

struct Lane {
    explicit Lane(size_t items) : queue(capacityFor(items)), token(queue), wakeAt(items / 2), checkAt(items / 2) {}
    // All blocks allocated up front (bounded, nothing allocated on enqueue). One block more than the
    // items: the block the drain thread is part way through cannot take new records yet.
    static size_t capacityFor(size_t items)
    {
        constexpr size_t kBlock = LaneTraits::BLOCK_SIZE;
        return ((items + kBlock - 1) / kBlock + 1) * kBlock;
    }
    LaneQueue queue;
    // The lane's one explicit producer. It outlives the threads that use it: the next thread that gets
    // the thread state goes on from where the last one stopped (handed over under runtime.cpp's lock).
    moodycamel::ProducerToken token;
    Lane* next = nullptr;

    // The producer's side, on a cache line of its own (handed over with the token).
    alignas(64) uint64_t enqueued = 0;  // records put in, ever
    const uint64_t wakeAt;              // records waiting at which the drain thread is woken
    uint64_t checkAt;                   // the next value of `enqueued` at which to look at `taken`
    bool armed = true;                  // below half full since the last wake: the next crossing wakes
    // The drain thread's side: records taken out, ever (written after each dequeue, read by the producer).
    alignas(64) std::atomic<uint64_t> taken{0};
};

void lanesConfigure()
{
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) g_prefetchw = (c >> 8) & 1;
#endif
    if (const char* e = setting("GPUSPY_QUEUE_ITEMS")) {
        const unsigned long v = strtoul(e, nullptr, 10);
        if (v >= 1024 && v <= (1ul << 20)) g_laneItems = v;
    }
}

Lane* laneCreate()
{
    void* mem = nullptr;
    if (posix_memalign(&mem, alignof(Lane), sizeof(Lane)) != 0) return nullptr;
    t_allocFailed = false;
    Lane* lane = new (mem) Lane(g_laneItems);
    if (t_allocFailed || !lane->token.valid()) {
        lane->~Lane();
        std::free(mem);
        return nullptr;
    }
    // Published for the drain thread: everything above happens before it finds the lane.
    Lane* head = g_lanes.load(std::memory_order_relaxed);
    do {
        lane->next = head;
    } while (!g_lanes.compare_exchange_weak(head, lane, std::memory_order_release, std::memory_order_relaxed));
    return lane;
}

namespace {

// The producer reached `checkAt`: how many records wait now? Half full or more wakes the drain thread,
// once, then looks again every kRecheckItems records until the lane went below (armed again). Below:
// the next look is at the earliest record that could make it half full, given what was taken so far.
// `taken` only grows, so the lane cannot reach half full between two looks unseen.
__attribute__((noinline)) void laneCheckFill(Lane* lane)
{
    const uint64_t taken = lane->taken.load(std::memory_order_acquire);
    if (lane->enqueued - taken >= lane->wakeAt) {
        if (lane->armed) {
            lane->armed = false;
            drainWake();
        }
        lane->checkAt = lane->enqueued + kRecheckItems;
    } else {
        lane->armed = true;
        lane->checkAt = taken + lane->wakeAt;
    }
}

}  // namespace

bool laneTryEnqueue(Lane* lane, const Item& item)
{
    // The producer's n-th record goes to slot n mod BLOCK_SIZE of its block (moodycamel's tail index
    // counts from 0, like `enqueued`, and both count successful enqueues only).
    const bool ahead = (lane->enqueued % LaneTraits::BLOCK_SIZE) + kAhead < LaneTraits::BLOCK_SIZE;
    if (!lane->queue.try_enqueue(lane->token, LaneSlot(item, ahead))) return false;
    if (++lane->enqueued >= lane->checkAt) laneCheckFill(lane);
    return true;
}

// ThreadSanitizer reports the producer reusing a block the drain thread emptied: moodycamel orders them
// with a relaxed load and an acquire fence, which it does not model (tests/hardening/tsan.supp).
size_t laneDequeue(Lane* lane, Item* out, size_t max)
{
    const size_t n = lane->queue.try_dequeue_bulk_from_producer(lane->token, out, max);
    if (n) lane->taken.store(lane->taken.load(std::memory_order_relaxed) + n, std::memory_order_release);
    return n;
}

Lane* lanesFirst() { return g_lanes.load(std::memory_order_acquire); }

Lane* laneNext(const Lane* lane) { return lane->next; }

void lanesAfterForkChild()
{
    // The parent's lanes hold the parent's records: leaked, never sent twice. Each thread state of the
    // child gets a new lane at its first recorded call.
    g_lanes.store(nullptr, std::memory_order_release);
}

}  // namespace gpuspy::shim
