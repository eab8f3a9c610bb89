// shim/runtime.cpp: the lifecycle (Off -> On -> Draining -> Dead), per-thread state, and the call
// scope that every wrapper opens: guard, clocks, record, lane.
#include "shim/shim.h"

#include "shim/clock.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <new>

namespace gpuspy::shim {

std::atomic<int> g_state{int(State::Off)};
thread_local int t_depth GS_TLS = 0;
namespace {
std::atomic<int> g_stopFor{int(StopFor::None)};  // what the stop under way (or last made) is for
thread_local bool t_stopping GS_TLS = false;     // this thread runs stopRecording
}  // namespace

// The counters are written by the owning thread only (plain stores, no locked instruction on the
// hot path) and read by others: the drain thread's totals, the exit report.
// Cache-line aligned and padded (allocated with posix_memalign): its owner writes it on every call,
// and a heap neighbour another thread writes (a lane's queue bookkeeping, which the drain thread
// updates) would make each of those writes a transfer.
struct alignas(64) ThreadState {
    uint32_t tid = 0;
    // Its records' way to the drain thread, made at the first recorded call. Kept when the thread
    // exits, with what it still holds: the next thread that gets this state goes on filling it.
    Lane* lane = nullptr;
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> dropped{0};
    // gpuspy's own time on this thread (ownTimeNs): measured on every NVTX event and on the state's
    // first kOwnTimeExact calls (exactNs, exactCalls); then on one call in kOwnTimeEvery (sampledNs
    // over sampledCalls), scaled to the calls after the exact ones.
    std::atomic<uint64_t> exactCalls{0};
    std::atomic<uint64_t> exactNs{0};
    std::atomic<uint64_t> sampledCalls{0};
    std::atomic<uint64_t> sampledNs{0};
    uint32_t ownCountdown = 0;  // calls until the next sampled one (the owner's own counter)
    // Records this state's threads made, and calls GPU timing left out, kept across reuse (the
    // process totals sum every state).
    std::atomic<uint64_t> made{0};
    std::atomic<uint64_t> gpuSampledOut{0};
    uint64_t seqNext = 0;  // this thread's block of sequence numbers: [seqNext, seqEnd)
    uint64_t seqEnd = 0;
    ThreadState* next = nullptr;  // all states, live or free, for the exit report
    // Who holds the state (and fills its lane): changed under g_threadsLock, which hands the lane's
    // producer side from an exiting thread to the next one.
    bool live = false;
    // python.cpp's memo of the last frames (its entries are checked against the code object, so a
    // reused state's entries from an earlier thread are as good as its own). Here, not in TLS: the
    // shim's initial-exec TLS must fit the few hundred bytes glibc keeps for a dlopen (gpuspy attach).
    alignas(16) unsigned char pyMemo[kPyMemoBytes] = {};
    // The thread's last call's end, and the process's CPU time at the last reading (noteIdleBefore), for
    // the thread `idleTid` (a reused state starts over).
    uint32_t idleTid = 0;
    uint64_t lastEndNs = 0, lastCpuNs = 0, lastCpuAtNs = 0;
};

unsigned char* threadPyMemo()
{
    ThreadState* ts = threadState();
    return ts ? ts->pyMemo : nullptr;
}

namespace {

// A call's own time takes two clock stamps (entry and done) beside the two of its record, about 20 ns
// of a hook's ~60. So it is measured on a thread's first kOwnTimeExact calls, which carry the one-off
// costs (the thread's lane and event pool, first touches), then on one call in kOwnTimeEvery: the
// report states a per-thread total, and a sample of one in seven estimates the steady part well.
// Seven shares no factor with the lanes' 64-record blocks: sampled calls fall on every position of a
// block in turn (a block's first record costs more).
constexpr uint32_t kOwnTimeExact = 64;
constexpr uint32_t kOwnTimeEvery = 7;

thread_local ThreadState* t_state GS_TLS = nullptr;
thread_local uint32_t t_tid GS_TLS = 0;

pthread_once_t g_once = PTHREAD_ONCE_INIT;
pthread_key_t g_threadKey;
pthread_mutex_t g_threadsLock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_startLock = PTHREAD_MUTEX_INITIALIZER;
ThreadState* g_threads = nullptr;  // intrusive list; states are reused, never freed
std::atomic<uint64_t> g_seq{0};
constexpr uint64_t kSeqBlock = 256;  // sequence numbers a thread takes at a time
std::atomic<uint64_t> g_made{0};     // records made without a thread state; the rest are counted per state
std::atomic<uint64_t> g_dropped{0};
bool g_disabled = false;
// When this process started recording (Off -> On, before its first record; in a forked child, its
// first use after the fork): the Process record's start, which no record may precede.
uint64_t g_startMonoNs = 0;
uint64_t g_startRealNs = 0;
pid_t g_recordingPid = 0;
// The calls and own time of threads that have ended (their states reused, counters reset), for the
// Tally's running totals. Changed under g_threadsLock together with the state's `live`, so that a Tally
// counts every thread once.
uint64_t g_endedCalls = 0, g_endedOwnNs = 0;

void resetCounters(ThreadState* ts)
{
    ts->calls.store(0);
    ts->dropped.store(0);
    ts->exactCalls.store(0);
    ts->exactNs.store(0);
    ts->sampledCalls.store(0);
    ts->sampledNs.store(0);
    ts->ownCountdown = 0;
}

// The state's own-time estimate: what was measured exactly, and the sampled calls' time scaled to
// all the calls after the exact ones.
uint64_t ownTimeNs(const ThreadState* ts)
{
    const uint64_t sampled = ts->sampledCalls.load(std::memory_order_relaxed);
    const uint64_t exactCalls = ts->exactCalls.load(std::memory_order_relaxed);
    const uint64_t calls = ts->calls.load(std::memory_order_relaxed);
    uint64_t ns = ts->exactNs.load(std::memory_order_relaxed);
    if (sampled && calls > exactCalls)
        ns += uint64_t((unsigned __int128)ts->sampledNs.load(std::memory_order_relaxed) * (calls - exactCalls) / sampled);
    return ns;
}

void threadExit(void* p)
{
    // The thread is going away: report its totals into its lane, keep the state and the lane for the
    // next thread (threads come and go by thousands; memory stays bounded). What the lane still holds
    // is drained as usual: the drain thread walks every lane, not only those of live threads.
    auto* ts = static_cast<ThreadState*>(p);
    if (!ts) return;
    ++t_depth;
    if (g_state.load(std::memory_order_acquire) == int(State::On) && ts->lane) {
        Item item{};
        item.kind = Item::ThreadStats;
        item.stats.tid = ts->tid;
        item.stats.calls = ts->calls.load(std::memory_order_relaxed);
        item.stats.dropped = ts->dropped.load(std::memory_order_relaxed);
        item.stats.overheadNs = ownTimeNs(ts);
        enqueue(ts, item);
        noteThreadEndCpuWait();
    }
    // Releases the lane's producer side: the next thread to take this state (under the same lock)
    // sees every record this one put in it.
    pthread_mutex_lock(&g_threadsLock);
    g_endedCalls += ts->calls.load(std::memory_order_relaxed);
    g_endedOwnNs += ownTimeNs(ts);
    ts->live = false;
    pthread_mutex_unlock(&g_threadsLock);
    t_state = nullptr;
    --t_depth;
}

void atExit();

void prefork()
{
    pthread_mutex_lock(&g_startLock);
    pthread_mutex_lock(&g_threadsLock);
    internPrefork();
}

void postforkParent()
{
    internPostforkParent();
    pthread_mutex_unlock(&g_threadsLock);
    pthread_mutex_unlock(&g_startLock);
}

void postforkChild()
{
    // A new process to trace: no drain thread here, the parent's queued records are not ours.
    internPostforkChild();
    pthread_mutex_unlock(&g_threadsLock);
    pthread_mutex_unlock(&g_startLock);
    lanesAfterForkChild();
    for (ThreadState* ts = g_threads; ts; ts = ts->next) {
        ts->lane = nullptr;  // the parent's records (leaked with it); a new lane at the first recorded call
        ts->live = false;
        resetCounters(ts);
        ts->made.store(0);
        ts->gpuSampledOut.store(0);
        ts->seqNext = ts->seqEnd = 0;
    }
    t_state = nullptr;
    t_tid = 0;
    g_seq.store(0);
    g_made.store(0);
    g_dropped.store(0);
    g_endedCalls = g_endedOwnNs = 0;
    drainAfterForkChild();
    gpuAfterForkChild();
    clockAfterForkChild();
    windowAfterForkChild();
#ifdef GPUSPY_HAVE_STACK
    stackAfterForkChild();
#endif
    g_state.store(int(State::Off));
}

void onceInit()
{
    g_disabled = disabledSetting();
    // Recording off: no handler, no thread, no descriptor (libunwind's pipe is made by stackConfigure).
    if (g_disabled) return;
    pthread_key_create(&g_threadKey, threadExit);
    pthread_atfork(prefork, postforkParent, postforkChild);
    atexit(atExit);
    // An attached process keeps its signal dispositions: it was running without us, and detach must
    // leave it as it was (its normal exit still ends the stream, through atexit).
    if (!attachedAt(nullptr)) installExitPaths();
    clockConfigure();
    gpuConfigure();
    windowConfigure();
#ifdef GPUSPY_HAVE_STACK
    stackConfigure(stackDepthSetting());
#endif
}

void atExit()
{
    // Exit drains with a time limit, then leaks on purpose: cudart's own exit handlers call the
    // driver after us and must find working (pass-through) wrappers.
    stopRecording(2000000000ull, false, 0, StopFor::Ending);
}

__attribute__((destructor)) void libraryTeardown()
{
    atExit();
}

}  // namespace

bool stopRecording(uint64_t timeoutNs, bool fast, int exitReason, StopFor why)
{
    // Only the process that started recording: a vfork child shares our memory but not our drain
    // thread, and must not end the parent's stream.
    if (g_recordingPid == 0 || pid_t(syscall(SYS_getpid)) != g_recordingPid) return false;
    if (onDrainThread()) return false;
    int expected = int(State::On);
    if (!g_state.compare_exchange_strong(expected, int(State::Draining))) return false;
    g_stopFor.store(int(why), std::memory_order_release);
    // Inside a hooked call: a signal handler interrupted it (and now ends the process), perhaps with
    // the driver's locks held.
    const bool insideCall = t_depth > 0;
    t_stopping = true;
    ++t_depth;
    drainStopAndFlush(timeoutNs, fast, exitReason, insideCall);
    g_state.store(int(State::Dead));
    --t_depth;
    t_stopping = false;
    return true;
}

StopFor awaitStopUnderWay(uint64_t timeoutNs)
{
    if (g_recordingPid == 0 || pid_t(syscall(SYS_getpid)) != g_recordingPid) return StopFor::None;
    if (g_state.load(std::memory_order_acquire) != int(State::Draining)) return StopFor::None;
    const StopFor why = StopFor(g_stopFor.load(std::memory_order_acquire));
    if (t_stopping) return why;  // nested in the stop itself: it goes on when the handler returns
    const uint64_t deadline = nowNs() + timeoutNs;
    while (g_state.load(std::memory_order_acquire) == int(State::Draining) && nowNs() < deadline) {
        timespec ts{0, 500000};
        nanosleep(&ts, nullptr);
    }
    return why;
}

bool flushRecording(uint64_t timeoutNs)
{
    if (g_recordingPid == 0 || pid_t(syscall(SYS_getpid)) != g_recordingPid) return false;
    if (g_state.load(std::memory_order_acquire) != int(State::On)) return false;
    return drainFlushNow(timeoutNs);
}

void resumeRecording()
{
    // An exec failed after its stop: recording may start again, as a new stream (a new file).
    if (g_state.load() != int(State::Dead)) return;
    drainRestartable();
    g_state.store(int(State::Off));
}

uint32_t currentTid()
{
    if (t_tid == 0) t_tid = uint32_t(syscall(SYS_gettid));
    return t_tid;
}

void startTimes(uint64_t* monoNs, uint64_t* realNs)
{
    *monoNs = g_startMonoNs;
    *realNs = g_startRealNs;
}

uint64_t nextSeq(ThreadState* ts)
{
    if (ts->seqNext == ts->seqEnd) {
        ts->seqNext = g_seq.fetch_add(kSeqBlock, std::memory_order_relaxed) + 1;
        ts->seqEnd = ts->seqNext + kSeqBlock;
    }
    return ts->seqNext++;
}

bool ensureStarted()
{
    int s = g_state.load(std::memory_order_acquire);
    if (s == int(State::On)) return true;
    if (s != int(State::Off)) return false;
    pthread_once(&g_once, onceInit);
    if (g_disabled) return false;
    pthread_mutex_lock(&g_startLock);
    if (g_state.load() == int(State::Off)) {
        g_startMonoNs = nowNs();
        g_recordingPid = pid_t(syscall(SYS_getpid));
        timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        g_startRealNs = uint64_t(rt.tv_sec) * 1000000000u + uint64_t(rt.tv_nsec);
        lanesConfigure();
        g_state.store(int(State::On), std::memory_order_release);
        drainStart();
    }
    pthread_mutex_unlock(&g_startLock);
    return g_state.load(std::memory_order_acquire) == int(State::On);
}

ThreadState* threadState()
{
    ThreadState* ts = t_state;
    if (ts && ts->lane) return ts;
    if (!ts) {
        pthread_once(&g_once, onceInit);  // the thread-exit key must exist before it is set
        // Reuse a state a finished thread left behind; allocate only when none is free.
        pthread_mutex_lock(&g_threadsLock);
        for (ThreadState* s = g_threads; s; s = s->next) {
            if (!s->live) {
                ts = s;
                break;
            }
        }
        if (!ts) {
            void* mem = nullptr;
            if (posix_memalign(&mem, alignof(ThreadState), sizeof(ThreadState)) != 0) mem = nullptr;
            if (!mem) {
                pthread_mutex_unlock(&g_threadsLock);
                return nullptr;
            }
            ts = new (mem) ThreadState;
            ts->next = g_threads;
            g_threads = ts;
        }
        ts->live = true;
        ts->tid = currentTid();
        resetCounters(ts);
        pthread_mutex_unlock(&g_threadsLock);
        t_state = ts;
        pthread_setspecific(g_threadKey, ts);
        noteThreadName(ts->tid);
    }
    if (!ts->lane) {
        // This state's first recorded call (threads that never record pay nothing), or the first in a
        // forked child. Out of memory: this call is not recorded, the next one tries again.
        ts->lane = laneCreate();
        if (!ts->lane) return nullptr;
    }
    return ts;
}

bool enqueue(ThreadState* ts, const Item& item)
{
    if (ts) bump(ts->made, 1);
    else g_made.fetch_add(1, std::memory_order_relaxed);
    if (ts && ts->lane && laneTryEnqueue(ts->lane, item)) return true;
    gpuDropped(item);
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    if (ts) ts->dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
}

void addOwnTime(ThreadState* ts, uint64_t ns)
{
    if (ts) bump(ts->exactNs, ns);
}

void forEachPyMemoImpl(void (*fn)(const unsigned char*, void*), void* arg)
{
    pthread_mutex_lock(&g_threadsLock);
    for (ThreadState* s = g_threads; s; s = s->next) fn(s->pyMemo, arg);
    pthread_mutex_unlock(&g_threadsLock);
}

namespace {
// A per-state counter summed over every state, live or free (states are reused, never freed).
uint64_t sumOverStates(std::atomic<uint64_t> ThreadState::*counter)
{
    uint64_t n = 0;
    pthread_mutex_lock(&g_threadsLock);
    for (ThreadState* s = g_threads; s; s = s->next) n += (s->*counter).load(std::memory_order_relaxed);
    pthread_mutex_unlock(&g_threadsLock);
    return n;
}
}  // namespace

// For the drain thread's End record and final ThreadStats.
uint64_t recordsMade() { return g_made.load() + sumOverStates(&ThreadState::made); }
uint64_t recordsDropped() { return g_dropped.load(); }
uint64_t gpuSampledOut() { return sumOverStates(&ThreadState::gpuSampledOut); }
void countDrainDrop(uint64_t n) { g_dropped.fetch_add(n); }
void countMade(uint64_t n) { g_made.fetch_add(n); }

size_t snapshotThreadStats(wire::ThreadStatsBody* out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&g_threadsLock);
    for (ThreadState* s = g_threads; s && n < cap; s = s->next) {
        if (!s->live) continue;
        wire::ThreadStatsBody b{};
        b.tid = s->tid;
        b.calls = s->calls.load(std::memory_order_relaxed);
        b.dropped = s->dropped.load(std::memory_order_relaxed);
        b.overheadNs = ownTimeNs(s);
        out[n++] = b;
    }
    pthread_mutex_unlock(&g_threadsLock);
    return n;
}

void tallyTotals(wire::TallyBody& b)
{
    pthread_mutex_lock(&g_threadsLock);
    b.calls = g_endedCalls;
    b.overheadNs = g_endedOwnNs;
    for (ThreadState* s = g_threads; s; s = s->next) {
        if (!s->live) continue;
        b.calls += s->calls.load(std::memory_order_relaxed);
        b.overheadNs += ownTimeNs(s);
    }
    pthread_mutex_unlock(&g_threadsLock);
    b.dropped = recordsDropped();
}

void CallScope::open(Api api)
{
    const int savedErrno = errno;
    if (g_state.load(std::memory_order_acquire) != int(State::On) && !ensureStarted()) {
        errno = savedErrno;
        return;
    }
    // Outside a capture window: counted, nothing else (no clock, no stack, no record).
    const uint32_t window = g_window.load(std::memory_order_relaxed);
    if (window == 0) {
        countLeftOut(api);
        errno = savedErrno;
        return;
    }
    m_ts = threadState();
    if (!m_ts) {
        errno = savedErrno;
        return;
    }
    m_t0 = m_begin = m_wallBegin = m_cpuBegin = m_cpuRead = 0;
    m_measure = Measure::No;
    m_tsc = clockUsesTsc();
    if (m_ts->exactCalls.load(std::memory_order_relaxed) < kOwnTimeExact) {
        m_measure = Measure::Exact;
    } else if (m_ts->ownCountdown == 0) {
        m_measure = Measure::Sampled;
        m_ts->ownCountdown = kOwnTimeEvery - 1;
    } else {
        --m_ts->ownCountdown;
    }
    if (m_measure != Measure::No) m_t0 = clockStamp(m_tsc);
    m_errno = savedErrno;
    m_active = true;
    const ApiInfo& info = kApis[size_t(api)];
    m_perThread = info.perThread;
    m_item.kind = Item::Call;
    m_item.pad1 = 0;
    m_item.evBegin = nullptr;
    m_item.evEnd = nullptr;
    m_item.endRecordDelayNs = 0;
    std::memset(&m_item.call, 0, sizeof m_item.call);
    wire::CallBody& b = m_item.call;
    b.apiId = uint16_t(api);
    b.category = info.category;
    b.tid = m_ts->tid;
    b.device = -1;
    b.window = window == kNoWindows ? 0 : window;
    if (m_perThread) b.flags |= wire::kCallPerThreadStream;
#ifdef GPUSPY_HAVE_STACK
    b.stackId = stackCapture(1);
#endif
    errno = savedErrno;
}

void CallScope::countGpuSampledOut()
{
    bump(m_ts->gpuSampledOut, 1);
}

uint64_t CallScope::entryNs()
{
    if (!m_t0) m_t0 = clockStamp(m_tsc);
    return clockMapFor(m_tsc, m_t0).toNs(m_t0);
}

void CallScope::beforeRealActive()
{
    if (m_item.evBegin && m_item.evBegin != m_item.evEnd) {
        // A timed call: whether the thread was held up inside it (gpuRecordEnd). The thread CPU clock
        // is a system call (~1 us on a VM): the budget pays for the reading.
        m_wallBegin = nowNs();
        m_cpuBegin = threadCpuNs();
        m_cpuRead = nowNs() - m_wallBegin;
    }
    m_begin = clockStamp(m_tsc);
    errno = m_errno;
}

namespace {

// A pause of the thread between CUDA calls longer than kIdleGapNs, over which the process used less than a
// tenth of a CPU: the program waited for work (a server between requests), which is not the GPU starving
// for it. The process's CPU clock is read after such a pause and after a call longer than kCpuReadCallNs
// (a wait: usually what comes before a pause), so the reading before a pause is close to its start; a
// pause is judged only where it is most (4/5) of the time between the two readings.
constexpr uint64_t kIdleGapNs = 1000000, kCpuReadCallNs = 50000;

void noteIdleBefore(ThreadState* ts, wire::CallBody& b)
{
    if (ts->idleTid != ts->tid) {
        ts->idleTid = ts->tid;
        ts->lastEndNs = ts->lastCpuAtNs = 0;
    }
    const uint64_t gap = ts->lastEndNs && b.beginNs > ts->lastEndNs ? b.beginNs - ts->lastEndNs : 0;
    if (gap > kIdleGapNs || b.endNs - b.beginNs > kCpuReadCallNs || !ts->lastCpuAtNs) {
        const uint64_t cpu = processCpuNs();
        if (gap > kIdleGapNs && ts->lastCpuAtNs && cpu >= ts->lastCpuNs && b.endNs > ts->lastCpuAtNs) {
            const uint64_t window = b.endNs - ts->lastCpuAtNs;
            if (gap * 5 >= window * 4 && (cpu - ts->lastCpuNs) * 10 < gap) b.flags |= wire::kCallIdleBefore;
        }
        ts->lastCpuNs = cpu;
        ts->lastCpuAtNs = b.endNs;
    }
    ts->lastEndNs = b.endNs;
}

}  // namespace

CUresult CallScope::finishActive(CUresult rc)
{
    const uint64_t end = clockStamp(m_tsc);
    m_errno = errno;  // what the driver left is what the app must see
    wire::CallBody& b = m_item.call;
    const bool timed = m_item.evBegin != nullptr;
    if (timed) {
        // GPU timing measures how late its end event is recorded against clock_gettime: give it
        // that clock's own reading (this call pays an event record anyway).
        b.endNs = m_tsc ? nowNs() : end;
        gpuRecordEnd(*this, rc, b.endNs);  // first: every bookkeeping step comes after the end event
    }
    const ClockMap map = clockMapFor(m_tsc, end);
    b.beginNs = map.toNs(m_begin);
    if (!timed) b.endNs = map.toNs(end);
    if (b.endNs < b.beginNs) b.endNs = b.beginNs;  // two clocks (a timed call) may disagree by ns
    b.result = int32_t(rc);
    b.seq = nextSeq(m_ts);
    if (b.device < 0) b.device = int16_t(deviceOfCurrentContext(nullptr));
    gpuAfter(*this, rc);
    noteIdleBefore(m_ts, b);
    enqueue(m_ts, m_item);
    bump(m_ts->calls, 1);
    if (m_measure != Measure::No) {
        const uint64_t own = map.durationNs((m_begin - m_t0) + (clockStamp(m_tsc) - end));
        const bool exact = m_measure == Measure::Exact;
        bump(exact ? m_ts->exactCalls : m_ts->sampledCalls, 1);
        bump(exact ? m_ts->exactNs : m_ts->sampledNs, own);
    }
    if (!m_tsc) clockWarmUp(end);
    errno = m_errno;
    return rc;
}

}  // namespace gpuspy::shim
