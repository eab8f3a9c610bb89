// shim/gpu_time.cpp: GPU begin/end of device work from CUDA timing events: pooled events recorded
// on the app's stream around the operations a per-thread budget of timing time allows (the rest
// sampled out; every part of timing's work on the thread is charged to it, the drain thread's reads of
// its events included), the end of one operation shared as the start of the next, resolved by the
// drain thread (query only) and placed on the host clock through a per-context anchor event.
#include "shim/shim.h"

#include "shim/clock.h"
#include "shim/gpu_budget.h"

#include "wire/codec.h"

#include <pthread.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace gpuspy::shim {

namespace {

bool g_on = true;
// The share of each thread's time its event records may take (parts per million; GPUSPY_GPU_BUDGET in
// percent, 100 = time everything; see gpu_budget.h). Operations beyond it are sampled out: their calls,
// bytes and counts are recorded exactly, only their GPU span is missing (kCallGpuSampledOut, counted in
// the End record).
uint64_t g_budgetPpm = 30000;
std::atomic<int> g_capturing{0};  // streams in capture right now (any mode)
// Device work seen on the legacy default stream, and on a blocking stream (made without
// CU_STREAM_NON_BLOCKING, a per-thread default stream, or one whose making was not seen). Once both
// have been, an operation on either may wait for the other's work after its own stream's last end: that
// end is then no start for it (its start event is recorded afresh). Set once, read on each timed call.
std::atomic<bool> g_legacyUsed{false}, g_blockingUsed{false};
std::atomic<int64_t> g_inFlight{0};
std::atomic<uint64_t> g_lateEnds{0};       // spans dropped: end event recorded too late to trust, or
                                           // the thread held up inside the call (see heldUp)
// An end event recorded later than this after its call returned may carry the record's time rather
// than the work's end: with the driver's launch latency (a few us) the span would be off by more
// than the event placement bound, so such a span is dropped rather than sent wrong.
constexpr uint64_t kLateRecordNs = 10000;
static_assert(kHeldUpNs == kLateRecordNs, "a span is trusted with as much delay either way");
std::atomic<uint32_t> g_epoch{0};     // bumped when contexts may have died: pools and anchors are stale
// Streams whose slot holds a last end event now: while none does, a call left out of timing has nothing
// to forget (see leftOutQuickly). Changed under the slots' locks, as their ends come and go.
std::atomic<int64_t> g_endsHeld{0};

// A pooled event with a reference count: the span that ends with it, the span that starts with it,
// and the stream slot that may share it as the next start.
struct Ev {
    CUevent event;
    std::atomic<int> refs;
    Ev* nextFree;
    struct Pool* pool;
    // The drain thread's: the event's host time, read against the anchor taken at `hostFor` (an end
    // shared as the next span's begin is read once).
    uint64_t hostNs;
    uint64_t hostFor;
};

struct Pool {
    std::atomic<CUcontext> ctx{nullptr};
    int device = -1;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    Ev* free = nullptr;
    unsigned created = 0;
};
constexpr size_t kMaxPools = 32;
constexpr unsigned kMaxEventsPerPool = 8192;
Pool g_pools[kMaxPools];

Pool* poolFor(CUcontext ctx, int device)
{
    for (Pool& p : g_pools) {
        CUcontext c = p.ctx.load(std::memory_order_acquire);
        if (c == ctx) return &p;
        if (c == nullptr) {
            CUcontext expected = nullptr;
            if (p.ctx.compare_exchange_strong(expected, ctx)) {
                p.device = device;
                return &p;
            }
            if (expected == ctx) return &p;
        }
    }
    return nullptr;
}

// App thread, inside a hook (depth guard held), with `pool`'s context current.
Ev* acquire(Pool* pool)
{
    pthread_mutex_lock(&pool->lock);
    Ev* ev = pool->free;
    if (ev) pool->free = ev->nextFree;
    pthread_mutex_unlock(&pool->lock);
    if (ev) {
        ev->refs.store(1, std::memory_order_relaxed);
        ev->hostFor = 0;
        return ev;
    }
    if (__atomic_load_n(&pool->created, __ATOMIC_RELAXED) >= kMaxEventsPerPool) return nullptr;
    const Driver& d = driver();
    CUevent e = nullptr;
    if (!d.eventCreate) return nullptr;
    // An event belongs to the context current when it is made, and can be recorded only on that
    // context's streams: a pool of another context (a stream of another device used while this one is
    // current) makes its events with its own context current for the moment.
    const CUcontext own = pool->ctx.load(std::memory_order_relaxed), current = currentContext();
    if (own != current && (!d.ctxSetCurrent || d.ctxSetCurrent(own) != CUDA_SUCCESS)) return nullptr;
    const CUresult made = d.eventCreate(&e, CU_EVENT_DEFAULT);
    if (own != current) d.ctxSetCurrent(current);
    if (made != CUDA_SUCCESS) return nullptr;
    void* mem = malloc(sizeof(Ev));
    if (!mem) return nullptr;
    ev = new (mem) Ev{e, {1}, nullptr, pool, 0, 0};
    __atomic_fetch_add(&pool->created, 1u, __ATOMIC_RELAXED);
    return ev;
}

void release(Ev* ev)
{
    if (!ev || ev->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    pthread_mutex_lock(&ev->pool->lock);
    ev->nextFree = ev->pool->free;
    ev->pool->free = ev;
    pthread_mutex_unlock(&ev->pool->lock);
}

// What we know of a stream: its last end event, valid as the next start while nothing we did
// not time ran in between. Outside a capture window nothing is timed and nothing is told (the dormant
// path): work launched there joins the stream unseen, so the end event is valid only within the
// window its operation was recorded in (`window`, the calls' CallBody::window; 0 without windows).
struct StreamSlot {
    std::atomic<uint64_t> key{0};
    // The context the stream belongs to and its device (a created stream; the default streams belong
    // to the current context): asked of the driver once, forgotten when the stream is destroyed.
    std::atomic<CUcontext> ctx{nullptr};
    std::atomic<int> device{-1};
    std::atomic_flag busy = ATOMIC_FLAG_INIT;
    // Written under `busy`; read without it only to skip taking it when there is nothing to forget.
    std::atomic<Ev*> lastEnd{nullptr};
    std::atomic<uint32_t> window{0};
    bool capturing = false;
    // Made with CU_STREAM_NON_BLOCKING (gpuStreamMade): the legacy default stream's rules pass it by.
    std::atomic<bool> nonBlocking{false};
};
constexpr size_t kSlots = 4096;
StreamSlot g_slots[kSlots];

// The per-thread default stream is one per thread; the legacy one per context.
uint64_t streamKey(CUstream s, bool perThread, CUcontext ctx)
{
    uintptr_t h = uintptr_t(s);
    if (h == uintptr_t(CU_STREAM_LEGACY)) h = 0, perThread = false;
    if (h == uintptr_t(CU_STREAM_PER_THREAD)) h = 0, perThread = true;
    if (h != 0) return uint64_t(h);
    if (perThread) return (uint64_t(currentTid()) << 1) | 1ull | (1ull << 62);
    return (uint64_t(uintptr_t(ctx)) << 1) | 1ull | (1ull << 63);
}

StreamSlot* slotFor(uint64_t key, bool create)
{
    size_t h = size_t((key * 0x9E3779B97F4A7C15ull) >> 40);
    for (size_t i = 0; i < 32; ++i) {
        StreamSlot& s = g_slots[(h + i) % kSlots];
        uint64_t k = s.key.load(std::memory_order_acquire);
        if (k == key) return &s;
        if (k == 0) {
            if (!create) return nullptr;
            uint64_t expected = 0;
            if (s.key.compare_exchange_strong(expected, key)) return &s;
            if (expected == key) return &s;
        }
    }
    return nullptr;
}

// Puts `with` (recorded in `window`) as the stream's last end event and returns the one it replaces,
// under the slot's lock; `oldWindow` gets the window that one was recorded in.
Ev* swapLastEnd(StreamSlot* s, Ev* with, uint32_t window = 0, uint32_t* oldWindow = nullptr)
{
    while (s->busy.test_and_set(std::memory_order_acquire)) {
    }
    Ev* old = s->lastEnd.load(std::memory_order_relaxed);
    if (!old != !with) g_endsHeld.fetch_add(with ? 1 : -1, std::memory_order_relaxed);
    if (oldWindow) *oldWindow = s->window.load(std::memory_order_relaxed);
    s->lastEnd.store(with, std::memory_order_relaxed);
    s->window.store(window, std::memory_order_relaxed);
    s->busy.clear(std::memory_order_release);
    return old;
}

// Whether the stream has a last end event recorded in `window`: one from an earlier window may have
// had a dormant gap's work queued after it (read without the lock, as a hint).
bool hasLastEndIn(const StreamSlot* s, uint32_t window)
{
    return s->lastEnd.load(std::memory_order_relaxed) && s->window.load(std::memory_order_relaxed) == window;
}

thread_local TimingBudget t_budget GS_TLS;
thread_local ChoiceCost t_choice GS_TLS;
thread_local BudgetAccount* t_account GS_TLS = nullptr;
thread_local uint64_t t_lastReturnNs GS_TLS = 0;  // the thread's last recorded call's return
BudgetAccount g_noAccount;  // threads beyond the table's room: charged, not reported

// Every thread that chose whether to time has an account (up to kAccounts; a thread beyond them is
// still held to its budget, only not reported). A thread id that comes back shares its account.
constexpr size_t kAccounts = 512;
BudgetAccount g_accounts[kAccounts];

BudgetAccount* accountOf(uint32_t tid, bool create)
{
    if (tid == 0) return nullptr;
    const size_t h = size_t((uint64_t(tid) * 0x9E3779B97F4A7C15ull) >> 40);
    for (size_t i = 0; i < 16; ++i) {
        BudgetAccount& a = g_accounts[(h + i) % kAccounts];
        uint32_t t = a.tid.load(std::memory_order_acquire);
        if (t == tid) return &a;
        if (t == 0) {
            if (!create) return nullptr;
            if (a.tid.compare_exchange_strong(t, tid, std::memory_order_acq_rel)) return &a;
            if (t == tid) return &a;
        }
    }
    return nullptr;
}

// Charges timing work measured on this thread to its budget and its account.
void charge(TimingPart part, uint64_t ns)
{
    const uint64_t c = t_budget.charge(ns);
    if (BudgetAccount* a = t_account) bump(a->spent[size_t(part)], c);
}

// What the drain thread spent on this thread's spans since the thread last looked: charged before it
// times more (the drain's reads contend with the app's calls for the driver and the CPU).
void chargeDrainDebt()
{
    BudgetAccount* a = t_account;
    if (!a) return;
    const uint64_t owed = a->drainNs.load(std::memory_order_relaxed);
    std::atomic<uint64_t>& paid = a->spent[size_t(TimingPart::Drain)];
    const uint64_t before = paid.load(std::memory_order_relaxed);
    if (owed <= before) return;
    t_budget.chargeMeasured(owed - before);
    paid.store(owed, std::memory_order_relaxed);
}

// The choice made on every call, charged on every call: its sampled mean (see ChoiceCost), and the
// timing of it when this call is a sample (c0: its clockStamp(clockUsesTsc()) when the choice began; the
// TSC where it may be used: a clock_gettime read costs about as much as the choice).
enum class Chosen : uint8_t { Neither, Untimed, Timed };
void chargeChoice(bool sampled, uint64_t c0, Chosen chosen)
{
    if (sampled) {
        const bool tsc = clockUsesTsc();
        const uint64_t c1 = clockStamp(tsc);
        t_choice.note(c1 > c0 ? clockMapFor(tsc, c1).durationNs(c1 - c0) : 0);
    }
    charge(TimingPart::Choosing, t_choice.perCallNs());
    if (BudgetAccount* a = t_account; a && chosen != Chosen::Neither) {
        bump(chosen == Chosen::Timed ? a->timed : a->untimed, 1);
        if (!a->firstNs.load(std::memory_order_relaxed)) a->firstNs.store(t_budget.firstNs(), std::memory_order_relaxed);
        a->lastNs.store(t_budget.lastNs(), std::memory_order_relaxed);
    }
}

// A created stream's own context and device in place of the current ones: a stream of device 1 may be
// used while device 0 is current (cudaMemcpyPeerAsync, a library's stream); its work runs on device 1,
// and only events of its own context can be recorded on it (a green context's stream: its own backing
// context). A context no hook saw has its device asked of the stream (CUDA 12.8+), else taken to be the
// current one's. The driver cannot say: the current ones stand.
void ownContext(StreamSlot* slot, CUstream stream, CUcontext* ctx, int* dev)
{
    if (!slot || uintptr_t(stream) <= uintptr_t(CU_STREAM_PER_THREAD)) return;
    CUcontext own = slot->ctx.load(std::memory_order_acquire);
    if (!own) {
        const Driver& d = driver();
        if (!d.streamGetCtx || d.streamGetCtx(stream, &own) != CUDA_SUCCESS || !own) return;
        int ownDev = own == *ctx ? *dev : deviceOfContext(own);
        if (ownDev < 0) {
            CUdevice sd = -1;
            if (d.streamGetDevice && d.streamGetDevice(stream, &sd) == CUDA_SUCCESS && sd >= 0) {
                ownDev = sd;
                noteContextDevice(own, ownDev);
            } else {
                ownDev = *dev;
            }
        }
        if (ownDev < 0) return;
        slot->device.store(ownDev, std::memory_order_relaxed);
        slot->ctx.store(own, std::memory_order_release);
    }
    if (own == *ctx) return;
    *ctx = own;
    *dev = slot->device.load(std::memory_order_relaxed);
}

void forgetLastEnd(StreamSlot* slot)
{
    // Most calls that come too fast to be timed follow another such call: nothing to forget, and
    // no locked instruction for it.
    if (!slot->lastEnd.load(std::memory_order_relaxed)) return;
    release(swapLastEnd(slot, nullptr));
}

CUresult recordOn(Ev* ev, CUstream s, bool perThread)
{
    const Driver& d = driver();
    auto rec = perThread && d.eventRecordPtsz ? d.eventRecordPtsz : d.eventRecord;
    return rec ? rec(ev->event, s) : CUDA_ERROR_NOT_INITIALIZED;
}

// ---- drain side: pending spans and the clock anchors
struct Pending {
    uint64_t seq;
    uint64_t callBegin, callEnd;
    Ev* begin;
    Ev* end;
    int device;
    bool blocking;  // the host waited for the work: it ended before the call returned
    uint64_t endRecordedNs;  // when the end event was recorded (host)
    // The thread was off the CPU for longer than kHeldUpNs inside the call or before its end record
    // (preempted, or asleep in the driver: wire::kCallHeldUp). Work on an idle stream starts when the call submits it,
    // placed at the call's return (placeBegin): a thread held up after submitting returns late, and the
    // span would sit late and short (a graph launch preempted for 740 us after its submit measured
    // 3.7 us of its 22 us, 740 us after it ran, under a CPU hog). Its work may lie anywhere between
    // the begin event and the end: no span rather than a wrong one (the report estimates it).
    bool heldUp;
    uint32_t tid;     // who made it: its thread is charged the drain's work on it
    uint64_t stream;  // with tid and device: ends recorded by one thread on one stream complete in order
    uint32_t kernelId;  // a launch's kernel (0: not a launch): a span set aside is owed another timing
};
constexpr size_t kMaxPending = 1 << 15;
// The most a span's query and reads are charged: they take well under a microsecond; more is the drain
// thread descheduled between them (a loaded machine), which costs the app's thread nothing.
constexpr uint64_t kMaxDrainChargeNs = 2000;
Pending* g_pending = nullptr;
size_t g_pendingCount = 0;

struct Anchor {
    CUcontext ctx = nullptr;
    CUstream stream = nullptr;
    CUevent event = nullptr;
    CUevent spare = nullptr;  // the other attempt's event while anchoring (see anchorFor)
    uint64_t hostNs = 0;
    uint64_t errorNs = 0;
    // How long after its cuEventRecord returned the anchor completed on the drain thread's idle stream:
    // the driver's submit-to-start latency as seen from a call's return. Work submitted to an idle stream
    // by a call that returned at R starts at R + this (see placeBegin).
    int64_t returnToStartNs = 0;
    bool failed = false;
};
Anchor g_anchors[kMaxPools];

Anchor* anchorFor(CUcontext ctx, int device, uint8_t* out, size_t cap, size_t& n)
{
    Anchor* a = nullptr;
    for (Anchor& x : g_anchors) {
        if (x.ctx == ctx) { a = &x; break; }
        if (!x.ctx) { x.ctx = ctx; a = &x; break; }
    }
    if (!a || a->failed) return nullptr;
    const uint64_t now = nowNs();
    if (a->event && now - a->hostNs < 500000000ull) return a;
    const Driver& d = driver();
    if (!d.ctxSetCurrent || !d.streamCreate || !d.eventCreate || !d.eventSynchronize || !d.eventRecord) {
        a->failed = true;
        return nullptr;
    }
    // The drain thread's own non-blocking stream: anchoring never waits for, or orders, app work.
    if (d.ctxSetCurrent(ctx) != CUDA_SUCCESS) return nullptr;
    if (!a->stream && d.streamCreate(&a->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        a->failed = true;
        return nullptr;
    }
    if ((!a->event && d.eventCreate(&a->event, CU_EVENT_DEFAULT) != CUDA_SUCCESS) ||
        (!a->spare && d.eventCreate(&a->spare, CU_EVENT_DEFAULT) != CUDA_SUCCESS)) {
        a->failed = true;
        return nullptr;
    }
    // Poll rather than synchronize: a synchronize returns some time after the event completed (wake-up,
    // the driver's own bookkeeping), which would shift every span later by that much. The anchor
    // completed between the last query that said "not ready" and the first that said "ready": an
    // attempt whose bracket is under 2 µs is tight. A preempted poll widens the bracket (over 100 µs
    // seen under load), and every span inherits that error.
    //
    // The record's return can also come late after the driver stamped it (a preemption, a contended
    // lock's wake-up: ~1 µs seen), which shortens the measured return-to-start latency and would place
    // idle-stream work early. Of kTight tight attempts (32 tries at most) the one with the longest
    // latency wins, each recorded on its own event so that the offset and the latency come from the
    // same attempt: the winner stays in a->event, the next try goes to the spare.
    if (!d.eventQuery) return nullptr;
    constexpr int kTight = 3;
    uint64_t bestHost = 0, bestErr = UINT64_MAX;
    int64_t bestLatency = INT64_MIN;
    int tight = 0;
    for (int attempt = 0; attempt < 32 && tight < kTight; ++attempt) {
        uint64_t prev = nowNs();
        if (d.eventRecord(a->spare, a->stream) != CUDA_SUCCESS) return nullptr;
        const uint64_t returned = nowNs();
        const uint64_t giveUp = prev + 100000000ull;
        uint64_t host = 0, err = 0;
        for (;;) {
            const uint64_t tq = nowNs();
            const CUresult q = d.eventQuery(a->spare);
            if (q == CUDA_SUCCESS) {
                err = tq - prev;
                host = prev + (tq - prev) / 2;
                break;
            }
            if (q != CUDA_ERROR_NOT_READY || tq > giveUp) return nullptr;
            prev = tq;
        }
        const bool isTight = err < 2000;
        tight += isTight;
        const int64_t latency = int64_t(host) - int64_t(returned);
        // A tight attempt beats any loose one; among tight ones (or, failing any, loose ones) the
        // narrower bracket wins for the first, the longer latency after that.
        const bool bestTight = bestErr < 2000;
        const bool better = bestErr == UINT64_MAX || (isTight && !bestTight) ||
                            (isTight == bestTight && (isTight ? latency > bestLatency : err < bestErr));
        if (!better) continue;
        std::swap(a->event, a->spare);
        bestHost = host;
        bestErr = err;
        bestLatency = latency;
    }
    if (bestErr == UINT64_MAX) return nullptr;
    a->hostNs = bestHost;
    a->errorNs = bestErr;
    // bestHost carries the bracket's error, and so does every converted event time: measured against the
    // same midpoint, a begin placed at "return + returnToStartNs" keeps the span's length free of it
    // (which is also why it is not clamped at 0).
    a->returnToStartNs = bestLatency;
    wire::ClockBody cb{};
    cb.device = device;
    cb.offsetNs = int64_t(a->hostNs);
    cb.errorNs = a->errorNs;
    if (cap - n >= 64) n += wire::encode(out + n, cap - n, cb);
    return a;
}

// The start of a span's work from its begin event. The begin event completes no later than the work
// starts: it is the previous operation's end on the stream, or was recorded just before the call. On a
// stream that was idle it completes as soon as it arrives, before the call even submitted the work, so
// the call's own host cost would count as GPU time. A call that returns once its work is queued
// submits it as it returns (a driver writes the doorbell last), and work on an idle stream starts the
// driver's latency after that: as long after the call's return as the clock anchor completed after
// its own record returned. The work starts at the later of the two: the begin event (a busy stream)
// and return + latency (an idle one). A call that blocked submitted long before it returned: only
// its begin event and its own begin bound it.
uint64_t placeBegin(const Anchor& a, const Pending& p, uint64_t beginEvent)
{
    uint64_t b = std::max(beginEvent, p.callBegin);
    if (!p.blocking) b = std::max<int64_t>(int64_t(b), int64_t(p.callEnd) + a.returnToStartNs);
    return b;
}

// Whether a span is known although its thread was held up (or its end recorded late): its work began
// at its begin event, which completed well after the call returned (the stream was busy with earlier
// work until then, and the call had submitted this work before returning), and ended at its end
// event, which completed well after it was recorded (the work was still running then). Either event
// is otherwise no later than the truth only, and the span is dropped. "Well after": the driver's
// submit-to-start latency, the anchor's error and the trust bound of kLateRecordNs.
bool settledBy(const Anchor& a, const Pending& p, uint64_t beginEvent, uint64_t endEvent)
{
    const uint64_t margin = uint64_t(std::max<int64_t>(a.returnToStartNs, 0)) + a.errorNs + kLateRecordNs;
    return beginEvent >= p.callEnd + margin && endEvent >= p.endRecordedNs + margin;
}

bool eventHostNs(const Anchor* a, Ev* ev, uint64_t& ns)
{
    if (ev->hostFor == a->hostNs && a->hostNs) {
        ns = ev->hostNs;
        return true;
    }
    const Driver& d = driver();
    float ms = 0;
    if (!d.eventElapsedTime || d.eventElapsedTime(&ms, a->event, ev->event) != CUDA_SUCCESS) return false;
    ns = uint64_t(int64_t(a->hostNs) + int64_t(double(ms) * 1e6));
    ev->hostNs = ns;
    ev->hostFor = a->hostNs;
    return true;
}

}  // namespace

void gpuConfigure()
{
    const char* on = setting("GPUSPY_GPU_TIME");
    g_on = !(on && on[0] == '0');
    if (const char* s = setting("GPUSPY_GPU_BUDGET")) {
        const double pct = strtod(s, nullptr);
        if (pct > 0) g_budgetPpm = pct >= 100 ? 1000000 : uint64_t(pct * 10000);
    }
}

namespace {

// The time the budget is topped up to on this call: the thread's last return (no clock read on the
// calls the budget leaves out: most of them). After a pause it lags: the first call after one is judged
// on the credit before the pause, the next on all of it; a copy or memset (preferred, and costly
// anyway) reads the clock.
uint64_t choiceNowNs(CallScope& scope, GpuTiming how)
{
    if (how == GpuTiming::Preferred || t_lastReturnNs == 0) return scope.entryNs();
    return t_lastReturnNs;
}

// The legacy stream's rules: which kind of stream this is (noted: once both kinds were used, an end
// on one is no start on the other).
struct StreamKind {
    bool legacy, blocking, partnerUsed;
};
StreamKind streamKind(CUstream stream, bool pt, const StreamSlot* slot)
{
    const uintptr_t h = uintptr_t(stream);
    const bool legacy = h == uintptr_t(CU_STREAM_LEGACY) || (h == 0 && !pt);
    const bool blocking = !legacy && !(slot && slot->nonBlocking.load(std::memory_order_relaxed));
    std::atomic<bool>& mine = legacy ? g_legacyUsed : g_blockingUsed;
    if ((legacy || blocking) && !mine.load(std::memory_order_relaxed)) mine.store(true, std::memory_order_relaxed);
    const bool partnerUsed = legacy ? g_blockingUsed.load(std::memory_order_relaxed)
                           : blocking ? g_legacyUsed.load(std::memory_order_relaxed) : false;
    return {legacy, blocking, partnerUsed};
}

// The call the budget leaves out, when nothing else needs seeing to: no capture under way, and no
// stream holding an end event that untimed work would make stale. A default stream belongs to the
// current context (its device is filled in with the record); a created one's context is known from
// its slot. Most calls of a launch loop end here: no clock read, no slot taken.
bool leftOutQuickly(CallScope& scope, CUstream stream, bool sampled, uint64_t c0)
{
    if (g_capturing.load(std::memory_order_acquire) > 0 || g_endsHeld.load(std::memory_order_relaxed) != 0) return false;
    const bool pt = scope.perThread();
    const StreamSlot* slot = nullptr;
    if (uintptr_t(stream) > uintptr_t(CU_STREAM_PER_THREAD)) {
        slot = slotFor(uint64_t(uintptr_t(stream)), false);
        if (!slot) return false;
        const CUcontext own = slot->ctx.load(std::memory_order_acquire);
        if (!own) return false;
        if (own != currentContext()) scope.body().device = int16_t(slot->device.load(std::memory_order_relaxed));
    }
    streamKind(stream, pt, slot);
    scope.setFlags(wire::kCallGpuSampledOut);
    scope.countGpuSampledOut();
    chargeChoice(sampled, c0, Chosen::Untimed);
    return true;
}

// Returns whether the choice was charged (not on the ways out before one was made: no context, a capture).
bool beforeTimed(CallScope& scope, CUstream stream, GpuTiming how, bool& sampled, uint64_t c0)
{
    // The budget is topped up on every call; a kernel's first timings go ahead even without credit.
    const bool preferred = how == GpuTiming::Preferred;
    bool allowed = t_budget.allows(choiceNowNs(scope, how), preferred, g_budgetPpm);
    if (allowed) {
        chargeDrainDebt();
        allowed = t_budget.stillAllows(preferred);
    }
    if (!allowed && how != GpuTiming::Always && leftOutQuickly(scope, stream, sampled, c0)) return true;
    CUcontext ctx = nullptr;
    int dev = deviceOfCurrentContext(&ctx);
    const bool pt = scope.perThread();
    StreamSlot* slot = ctx ? slotFor(streamKey(stream, pt, ctx), true) : nullptr;
    ownContext(slot, stream, &ctx, &dev);
    scope.body().device = int16_t(dev);
    if (!ctx) return false;
    if (g_capturing.load(std::memory_order_acquire) > 0) {
        // Something is capturing: ask the driver whether this stream is (it may have joined a capture
        // through an event wait); events recorded into a capture would become graph nodes.
        // The graph it joins goes in the call (kCaptureGraphSlot): the collector rebuilds each
        // graph's nodes from the calls captured into it.
        // The driver's answer costs microseconds, on calls made only while something captures: measured
        // and charged here, each time, and kept out of the sampled cost of the everyday choice.
        const uint64_t q0 = nowNs();
        sampled = false;
        const Driver& d = driver();
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        CUgraph graph = nullptr;
        CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
        auto info3 = pt && d.streamGetCaptureInfo3Ptsz ? d.streamGetCaptureInfo3Ptsz : d.streamGetCaptureInfo3;
        auto info = pt && d.streamGetCaptureInfoPtsz ? d.streamGetCaptureInfoPtsz : d.streamGetCaptureInfo;
        if (info3) rc = info3(stream, &st, nullptr, &graph, nullptr, nullptr, nullptr);
        else if (info) rc = info(stream, &st, nullptr, &graph, nullptr, nullptr);
        if (rc != CUDA_SUCCESS) {
            auto isCap = pt && d.streamIsCapturingPtsz ? d.streamIsCapturingPtsz : d.streamIsCapturing;
            rc = isCap ? isCap(stream, &st) : CUDA_ERROR_NOT_SUPPORTED;
            graph = nullptr;
        }
        charge(TimingPart::Choosing, nowNs() - q0);
        if (rc != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE) {
            scope.setFlags(wire::kCallCapturing);
            if (st == CU_STREAM_CAPTURE_STATUS_ACTIVE)
                scope.body().args.raw[wire::kCaptureGraphSlot] = uint64_t(uintptr_t(graph));
            return false;
        }
    }
    // Whether the stream's last end may start this call's span (the legacy stream's rules).
    const bool partnerUsed = streamKind(stream, pt, slot).partnerUsed;
    if (!allowed && how != GpuTiming::Always) {
        scope.setFlags(wire::kCallGpuSampledOut);
        scope.countGpuSampledOut();
        if (slot) forgetLastEnd(slot);  // untimed work joins the stream: its last end is no start
        chargeChoice(sampled, c0, Chosen::Untimed);
        return true;
    }
    chargeChoice(sampled, c0, Chosen::Timed);
    // From here on, the work of a timed call: measured and charged (records apart).
    const uint64_t t0 = nowNs();
    uint64_t recordNs = 0;
    Pool* pool = poolFor(ctx, dev);
    // The end event is taken now, so that between the call's return and its record there is nothing
    // but the record itself (no lock, no event creation, no allocation).
    Ev* end = pool && slot ? acquire(pool) : nullptr;
    if (!end) {
        charge(TimingPart::Bookkeeping, nowNs() - t0);
        return true;
    }
    // The previous operation's end, if nothing untimed ran since: not one from an earlier window, whose
    // dormant gap may have queued unseen work behind it (the first span after the gap would start
    // before that work, stretched over it).
    uint32_t beganIn = 0;
    Ev* begin = swapLastEnd(slot, nullptr, 0, &beganIn);
    if (begin && (beganIn != scope.body().window || partnerUsed)) {
        release(begin);
        begin = nullptr;
    }
    if (!begin) {
        begin = acquire(pool);
        const uint64_t r0 = nowNs();
        const bool recorded = begin && recordOn(begin, stream, pt) == CUDA_SUCCESS;
        const uint64_t r1 = nowNs();
        recordNs = r1 - r0;
        charge(TimingPart::Record, recordNs);
        if (!recorded) {
            release(begin);
            release(end);
            charge(TimingPart::Bookkeeping, nowNs() - t0 - recordNs);
            return true;
        }
    }
    scope.item().evBegin = reinterpret_cast<CUevent>(begin);  // the references move to the span
    scope.item().evEnd = reinterpret_cast<CUevent>(end);
    charge(TimingPart::Bookkeeping, nowNs() - t0 - recordNs);
    return true;
}

// The calling thread's account, claimed at its first timing choice or mark.
inline void ensureAccount()
{
    if (__builtin_expect(t_account == nullptr, 0)) {
        BudgetAccount* a = accountOf(currentTid(), true);
        t_account = a ? a : &g_noAccount;
    }
}

}  // namespace

void gpuBefore(CallScope& scope, CUstream stream, GpuTiming how)
{
    if (!g_on || !scope.active()) return;
    ensureAccount();
    // The choice is timed on one call in ChoiceCost::kEvery (two clock reads), charged on each.
    bool sampled = t_choice.sampleNow();
    const uint64_t c0 = sampled ? clockStamp(clockUsesTsc()) : 0;
    if (!beforeTimed(scope, stream, how, sampled, c0)) chargeChoice(sampled, c0, Chosen::Neither);
}


void gpuMarkDrain(CallScope& scope, CUstream stream)
{
    if (!g_on || !scope.active() || g_capturing.load(std::memory_order_acquire) > 0) return;
    ensureAccount();  // a thread whose first timed work is a mark (a sync after untimed work) has one too
    CUcontext ctx = nullptr;
    int dev = deviceOfCurrentContext(&ctx);
    if (!ctx) return;
    const bool pt = scope.perThread();
    // A stream whose last operation was timed has its end already; one never seen has nothing queued.
    StreamSlot* slot = slotFor(streamKey(stream, pt, ctx), false);
    if (!slot || hasLastEndIn(slot, scope.body().window)) return;
    ownContext(slot, stream, &ctx, &dev);
    if (!t_budget.allows(scope.entryNs(), true, g_budgetPpm)) return;
    // A mark is timed work like any other: its event, its record and this bookkeeping are charged.
    const uint64_t t0 = nowNs();
    Pool* pool = poolFor(ctx, dev);
    Ev* ev = pool ? acquire(pool) : nullptr;
    if (!ev) return;
    const uint64_t r0 = nowNs();
    const bool recorded = recordOn(ev, stream, pt) == CUDA_SUCCESS;
    const uint64_t r1 = nowNs();
    charge(TimingPart::Record, r1 - r0);
    charge(TimingPart::Bookkeeping, r0 - t0);
    if (!recorded) {
        release(ev);
        return;
    }
    if (BudgetAccount* a = t_account) bump(a->timed, 1);
    ev->refs.fetch_add(1, std::memory_order_relaxed);  // the span's begin and end
    scope.body().device = int16_t(dev);
    scope.item().evBegin = scope.item().evEnd = reinterpret_cast<CUevent>(ev);
}

void gpuRecordEnd(CallScope& scope, CUresult rc, uint64_t returnedNs)
{
    Item& it = scope.item();
    if (!it.evBegin || it.evBegin == it.evEnd) return;  // none, or a drain mark: recorded already
    Ev* begin = reinterpret_cast<Ev*>(it.evBegin);
    Ev* end = reinterpret_cast<Ev*>(it.evEnd);
    if (rc == CUDA_SUCCESS &&
        recordOn(end, reinterpret_cast<CUstream>(uintptr_t(it.call.stream)), scope.perThread()) == CUDA_SUCCESS) {
        // The event took its time no later than now: how late that may be tells the drain thread
        // whether the span's end can be trusted (a thread preempted here records a late end).
        const uint64_t w0 = nowNs();
        const uint64_t late = w0 - returnedNs;
        it.endRecordDelayNs = late > 0xffffffffull ? 0xffffffffu : uint32_t(late);
        charge(TimingPart::Record, late);  // the record itself, all but a clock read
        // Off the CPU inside the call or before its end record (preempted, or asleep in the driver):
        // where its work went in that time is unknown (see Pending::heldUp). Off it for longer than
        // kHeldUpNs takes longer than that on the wall clock: a quicker call needs no second reading of
        // the thread's CPU clock (a system call).
        if (scope.cpuBeginNs() && !(it.call.flags & wire::kCallImplicitSync) && w0 - scope.wallBeginNs() > kHeldUpNs) {
            const uint64_t cpu = threadCpuNs() - scope.cpuBeginNs();
            if (w0 - scope.wallBeginNs() > cpu + kHeldUpNs) it.call.flags |= wire::kCallHeldUp;
            charge(TimingPart::Bookkeeping, nowNs() - w0);
        }
        charge(TimingPart::Bookkeeping, scope.cpuReadNs());  // the reading before the call
        return;
    }
    release(begin);
    release(end);
    it.evBegin = nullptr;
    it.evEnd = nullptr;
}

namespace {

void afterTimed(CallScope& scope)
{
    Item& it = scope.item();
    Ev* end = reinterpret_cast<Ev*>(it.evEnd);
    it.call.flags |= wire::kCallGpuTimed;
    g_inFlight.fetch_add(1, std::memory_order_acq_rel);
    if (it.evBegin == it.evEnd) return;  // a drain mark: no work of its own to share the end of
    // Share the end as the next operation's start on this stream.
    StreamSlot* slot = slotFor(streamKey(reinterpret_cast<CUstream>(uintptr_t(it.call.stream)), scope.perThread(),
                                         end->pool->ctx.load(std::memory_order_relaxed)),
                               false);
    if (slot && (it.call.flags & wire::kCallHeldUp)) {
        // Its span will be dropped (Pending::heldUp): the stream's last work counts as untimed, so the
        // next stream sync records a drain mark (the wait's anchor) and the next timed op its own begin.
        forgetLastEnd(slot);
    } else if (slot && !(it.call.flags & wire::kCallImplicitSync)) {
        end->refs.fetch_add(1, std::memory_order_relaxed);
        release(swapLastEnd(slot, end, it.call.window));
    }
}

}  // namespace

void gpuAfter(CallScope& scope, CUresult rc)
{
    Item& it = scope.item();
    if (it.call.flags & wire::kCallCapturing) noteCapturedNode(scope, rc);
    t_lastReturnNs = it.call.endNs;
    if (!it.evBegin) return;
    const uint64_t t0 = nowNs();
    afterTimed(scope);
    charge(TimingPart::Bookkeeping, nowNs() - t0);
}

void gpuDropped(const Item& it)
{
    // A record its lane could not take: nobody will resolve its span, so its events go back to the
    // pool and it stops counting as in flight (a context teardown waits for what is in flight).
    if (it.kind != Item::Call || !it.evBegin) return;
    release(reinterpret_cast<Ev*>(it.evBegin));
    release(reinterpret_cast<Ev*>(it.evEnd));
    if (it.call.flags & wire::kCallGpuTimed) g_inFlight.fetch_sub(1, std::memory_order_acq_rel);
}

void gpuStreamTouched(CUstream stream, bool perThread)
{
    if (!g_on) return;
    CUcontext ctx = nullptr;
    if (uintptr_t(stream) <= 2) deviceOfCurrentContext(&ctx);
    if (StreamSlot* slot = slotFor(streamKey(stream, perThread, ctx), false)) forgetLastEnd(slot);
}

void gpuStreamMade(CUstream stream, unsigned int flags)
{
    if (uintptr_t(stream) <= uintptr_t(CU_STREAM_PER_THREAD)) return;
    // A slot only for a non-blocking one (a slot is taken for good): a stream without one is blocking.
    const bool nonBlocking = (flags & CU_STREAM_NON_BLOCKING) != 0;
    if (StreamSlot* slot = slotFor(streamKey(stream, false, nullptr), nonBlocking))
        slot->nonBlocking.store(nonBlocking, std::memory_order_relaxed);
}

void gpuStreamDestroyed(CUstream stream)
{
    if (uintptr_t(stream) <= uintptr_t(CU_STREAM_PER_THREAD)) return;
    // Its handle may come back for a stream of another context: neither its end nor its context stays.
    if (StreamSlot* slot = slotFor(streamKey(stream, false, nullptr), false)) {
        forgetLastEnd(slot);
        slot->ctx.store(nullptr, std::memory_order_release);
        slot->nonBlocking.store(false, std::memory_order_relaxed);
    }
}

void gpuCaptureBegin(CUstream stream, bool perThread)
{
    g_capturing.fetch_add(1, std::memory_order_acq_rel);
    gpuStreamTouched(stream, perThread);
}

void gpuCaptureEnd(CUstream stream, bool perThread)
{
    if (g_capturing.load() > 0) g_capturing.fetch_sub(1, std::memory_order_acq_rel);
    gpuStreamTouched(stream, perThread);
}

void gpuBeforeContextTeardown()
{
    if (!g_on || t_depth != 0 || g_state.load(std::memory_order_acquire) != int(State::On)) return;
    const uint64_t deadline = nowNs() + 200000000ull;
    while (g_inFlight.load(std::memory_order_acquire) > 0 && g_capturing.load() == 0 && nowNs() < deadline) {
        timespec ts{0, 200000};
        nanosleep(&ts, nullptr);
    }
    // The context may be gone after this call: no shared end event or pooled event of it may be used
    // again (a new context can get the same address). The events are leaked with it.
    for (StreamSlot& s : g_slots) {
        if (!s.key.load(std::memory_order_acquire)) continue;
        release(swapLastEnd(&s, nullptr));
    }
    for (Pool& p : g_pools) {
        pthread_mutex_lock(&p.lock);
        p.free = nullptr;
        p.created = 0;
        pthread_mutex_unlock(&p.lock);
    }
    g_epoch.fetch_add(1, std::memory_order_acq_rel);
}

void gpuAfterForkChild()
{
    // The parent's contexts and events mean nothing here.
    for (Pool& p : g_pools) {
        p.ctx.store(nullptr);
        p.free = nullptr;
        p.created = 0;
        pthread_mutex_init(&p.lock, nullptr);
    }
    for (StreamSlot& s : g_slots) {
        s.key.store(0);
        s.lastEnd.store(nullptr, std::memory_order_relaxed);
        s.busy.clear();
    }
    g_endsHeld.store(0, std::memory_order_relaxed);
    for (Anchor& a : g_anchors) a = Anchor{};
    // The parent's threads are not this process's: their accounts go (this thread claims a new one).
    for (BudgetAccount& a : g_accounts) a.tid.store(0, std::memory_order_relaxed);
    t_account = nullptr;
    g_pending = nullptr;
    g_pendingCount = 0;
    g_capturing.store(0);
}

namespace {

size_t resolveSpans(uint8_t* out, size_t cap, const Item* calls, size_t count, bool final)
{
    size_t n = 0;
    if (!g_pending) {
        g_pending = static_cast<Pending*>(calloc(kMaxPending, sizeof(Pending)));
        if (!g_pending) return 0;
    }
    for (size_t i = 0; i < count; ++i) {
        const Item& it = calls[i];
        if (it.kind != Item::Call || !it.evBegin || !it.evEnd) continue;
        Ev* b = reinterpret_cast<Ev*>(it.evBegin);
        Ev* e = reinterpret_cast<Ev*>(it.evEnd);
        if (g_pendingCount == kMaxPending) {
            release(b);
            release(e);
            g_inFlight.fetch_sub(1, std::memory_order_acq_rel);
            continue;
        }
        // A drain mark (one event, recorded before its call waited) is placed as it completed, as work
        // the host waited for is: not after the call's return.
        g_pending[g_pendingCount++] =
            Pending{it.call.seq, it.call.beginNs, it.call.endNs, b, e, it.call.device,
                    (it.call.flags & wire::kCallImplicitSync) != 0 || b == e, it.call.endNs + it.endRecordDelayNs,
                    (it.call.flags & wire::kCallHeldUp) != 0, it.call.tid, it.call.stream,
                    it.call.category == wire::Category::Launch ? it.call.args.launch.kernelId : 0};
    }
    static uint32_t seenEpoch = 0;
    if (seenEpoch != g_epoch.load(std::memory_order_acquire)) {
        seenEpoch = g_epoch.load(std::memory_order_acquire);
        for (Anchor& a : g_anchors) a = Anchor{};  // their streams and events died with the contexts
    }
    // A query during a global-mode capture could invalidate it: wait until captures end.
    if (g_pendingCount == 0 || g_capturing.load(std::memory_order_acquire) > 0) return n;
    const Driver& d = driver();
    if (!d.eventQuery) return n;
    size_t keep = 0;
    const uint64_t giveUp = final ? nowNs() + 300000000ull : 0;
    // The (thread, stream, device) whose end event was not ready this pass: its later ends are not
    // either, and are not asked (a query takes the driver's lock the app's calls need).
    struct Waiting {
        uint32_t tid;
        int device;
        uint64_t stream;
    };
    Waiting waiting[16];
    size_t nWaiting = 0;
    // The drain thread's work on one thread's spans, charged to that thread (see chargeDrainDebt).
    BudgetAccount* chargeTo = nullptr;
    uint64_t owed = 0;
    auto settle = [&](uint32_t tid) {
        if (chargeTo && (!tid || chargeTo->tid.load(std::memory_order_relaxed) != tid)) {
            chargeTo->drainNs.fetch_add(owed, std::memory_order_relaxed);
            chargeTo = nullptr;
            owed = 0;
        }
        if (tid && !chargeTo) chargeTo = accountOf(tid, false);
    };
    for (size_t i = 0; i < g_pendingCount; ++i) {
        Pending p = g_pending[i];
        bool behind = false;
        for (size_t w = 0; w < nWaiting && !final; ++w)
            behind |= waiting[w].tid == p.tid && waiting[w].device == p.device && waiting[w].stream == p.stream;
        if (behind) {
            g_pending[keep++] = p;
            continue;
        }
        settle(p.tid);
        // The query that found the span's end and the reads of its events are charged; the waits between
        // queries at the end, and the anchor's own calls (the drain thread's stream, once in 500 ms), are not.
        uint64_t q0 = nowNs();
        CUresult q = d.eventQuery(p.end->event);
        uint64_t spent = nowNs() - q0;
        while (final && q == CUDA_ERROR_NOT_READY && nowNs() < giveUp) {
            timespec ts{0, 100000};
            nanosleep(&ts, nullptr);
            q0 = nowNs();
            q = d.eventQuery(p.end->event);
            spent = nowNs() - q0;
        }
        // A poll that finds the work still running is the drain thread's own cost, not charged: at most one
        // a pass per thread and stream (above), made while the app runs on or waits (a 3 ms kernel polled
        // through its wait charged 15 us a span to slow_kernel's thread, and timed none of the next three).
        if (q == CUDA_ERROR_NOT_READY) {
            if (nWaiting < 16) waiting[nWaiting++] = Waiting{p.tid, p.device, p.stream};
            g_pending[keep++] = p;
            continue;
        }
        if (q == CUDA_SUCCESS && cap - n >= 64) {
            Anchor* a = anchorFor(p.begin->pool->ctx.load(), p.device, out, cap, n);
            uint64_t b = 0, e = 0;
            const uint64_t r0 = nowNs();
            const bool read = a && eventHostNs(a, p.begin, b) && eventHostNs(a, p.end, e);
            spent += nowNs() - r0;
            if (read) {
                const uint64_t beginEvent = b;
                b = placeBegin(*a, p, b);
                // Work the host waited for ended before the call returned (an end event recorded on an
                // idle stream completes later).
                if (p.blocking && e > p.callEnd) e = p.callEnd;
                if (b > e) b = e;
                // The thread was held up between the call's return and the end event record, and the
                // event completed after that record: the work may have ended long before. No span
                // rather than a wrong one, unless the stream itself fixed both ends (settledBy).
                const bool lateEnd =
                    !p.blocking && ((p.endRecordedNs - p.callEnd > kLateRecordNs && e >= p.callEnd) || p.heldUp);
                if (lateEnd && !settledBy(*a, p, beginEvent, e)) {
                    owed += std::min<uint64_t>(spent, kMaxDrainChargeNs);
                    if (chargeTo) (p.heldUp ? chargeTo->heldUp : chargeTo->lateEnds).fetch_add(1, std::memory_order_relaxed);
                    release(p.begin);
                    release(p.end);
                    g_inFlight.fetch_sub(1, std::memory_order_acq_rel);
                    g_lateEnds.fetch_add(1, std::memory_order_relaxed);
                    retryKernelTiming(p.kernelId);
                    continue;
                }
                wire::GpuSpanBody gs{};
                gs.seq = p.seq;
                gs.beginNs = b;
                gs.endNs = e;
                gs.device = p.device;
                n += wire::encode(out + n, cap - n, gs);
            }
        }
        owed += std::min<uint64_t>(spent, kMaxDrainChargeNs);
        release(p.begin);
        release(p.end);
        g_inFlight.fetch_sub(1, std::memory_order_acq_rel);
    }
    settle(0);
    g_pendingCount = keep;
    return n;
}

}  // namespace

size_t gpuBudgetRecords(uint8_t* out, size_t cap, uint64_t* records)
{
    size_t n = 0;
    for (BudgetAccount& a : g_accounts) {
        const uint32_t tid = a.tid.load(std::memory_order_acquire);
        if (!tid || cap - n < 128) continue;
        wire::GpuBudgetBody b{};
        b.tid = tid;
        b.budgetPpm = uint32_t(std::min<uint64_t>(g_budgetPpm, 1000000));
        b.firstNs = a.firstNs.load(std::memory_order_relaxed);
        b.lastNs = a.lastNs.load(std::memory_order_relaxed);
        b.recordNs = a.spent[size_t(TimingPart::Record)].load(std::memory_order_relaxed);
        b.bookkeepingNs = a.spent[size_t(TimingPart::Bookkeeping)].load(std::memory_order_relaxed);
        b.choosingNs = a.spent[size_t(TimingPart::Choosing)].load(std::memory_order_relaxed);
        b.drainNs = a.drainNs.load(std::memory_order_relaxed);
        b.timedOps = a.timed.load(std::memory_order_relaxed);
        b.untimedOps = a.untimed.load(std::memory_order_relaxed);
        b.lateEndSpans = a.lateEnds.load(std::memory_order_relaxed);
        b.heldUpSpans = a.heldUp.load(std::memory_order_relaxed);
        if (b.timedOps + b.untimedOps == 0) continue;
        n += wire::encode(out + n, cap - n, b);
        ++*records;
    }
    return n;
}

size_t gpuDrain(uint8_t* out, size_t cap, const Item* calls, size_t count, bool final)
{
    // Behind the driver gate (drain.cpp): once an exit closed it, nothing here runs, not even the
    // pending list's bookkeeping (a drain thread whose work was taken over may still be inside it).
    // The spans not resolved then are lost with the process.
    if (!drainDriverEnter()) return 0;
    const size_t n = resolveSpans(out, cap, calls, count, final);
    drainDriverLeave();
    return n;
}

}  // namespace gpuspy::shim
