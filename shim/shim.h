// shim/shim.h: what the parts of the injected library share: the hook table, the call scope every
// wrapper opens, the queue item and the lanes that carry it, the lifecycle. Nothing here allocates or
// throws.
#pragma once

// Declare every ABI name (_v2, _ptds, _ptsz) with its own signature, as the driver itself does, so
// that each wrapper is checked against cuda.h by the compiler.
#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
#include <cudaProfiler.h>

#include "wire/format.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <signal.h>
#include <pthread.h>

// Exported, and protected: the library's own references (the wrapper table, the address it hands out
// for cuGetProcAddress) bind to its own definitions. Preloaded, those are the first definitions in the
// process anyway; loaded by gpuspy attach (dlopen, local scope) they would otherwise bind to libcuda's.
#define GS_EXPORT extern "C" __attribute__((visibility("protected")))
#define GS_TLS __attribute__((tls_model("initial-exec")))
// Not instrumented in sanitizer builds: code a sanitizer runtime reaches while it starts (it looks its
// real functions up through our dlsym), before instrumented code may run.
#define GS_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

namespace gpuspy::shim {

enum class Api : uint16_t {
    None = 0,
#define GS_DRIVER(abi, base, since, pt, cat) abi,
#include "driver_hooks.def"
#undef GS_DRIVER
    Count
};
inline constexpr size_t kApiCount = size_t(Api::Count);

struct ApiInfo {
    const char* abi;   // the exported symbol
    const char* base;  // the name cuGetProcAddress is asked for
    int since;         // the lowest requested version that gets this ABI
    bool perThread;    // the _ptds/_ptsz variant
    wire::Category category;
};
extern const ApiInfo kApis[kApiCount];     // [0] = None
extern void* const kWrappers[kApiCount];  // our exported wrapper for each ABI

// ---- resolve.cpp: real entry points
using DlsymFn = void* (*)(void*, const char*);
DlsymFn realDlsym();
extern std::atomic<void*> g_real[kApiCount];
void* resolveReal(Api api);  // slow path: looks the ABI up in libcuda
inline void* realPtr(Api api)
{
    void* p = g_real[size_t(api)].load(std::memory_order_acquire);
    return p ? p : resolveReal(api);
}
#define GS_REAL(abi) reinterpret_cast<decltype(&::abi)>(::gpuspy::shim::realPtr(::gpuspy::shim::Api::abi))
// Which hooked ABI a cuGetProcAddress answer is: 0 when none (leave it alone). `resolved` is the
// real driver's answer, compared against the exported symbols first; the version rule decides
// when the driver hands out an address that is not an exported symbol.
Api selectAbi(const char* symbol, int version, cuuint64_t flags, void* resolved);
Api selectAbiByVersion(const char* symbol, int version, cuuint64_t flags);
// dlsym(handle, name) answered `real`: our wrapper where we hook the name, else `real`.
void* interceptDlsym(void* handle, const char* name, void* real);
// The real driver functions the shim itself calls (never recorded: callers hold the depth guard).
struct Driver {
    decltype(&::cuCtxGetCurrent) ctxGetCurrent;
    decltype(&::cuCtxGetDevice) ctxGetDevice;
    decltype(&::cuCtxSetCurrent) ctxSetCurrent;
    decltype(&::cuPointerGetAttribute) pointerGetAttribute;
    decltype(&::cuFuncGetName) funcGetName;
    decltype(&::cuKernelGetName) kernelGetName;
    decltype(&::cuEventCreate) eventCreate;
    decltype(&::cuEventDestroy_v2) eventDestroy;
    decltype(&::cuEventRecord) eventRecord;
    decltype(&::cuEventRecord_ptsz) eventRecordPtsz;
    decltype(&::cuEventQuery) eventQuery;
    decltype(&::cuEventSynchronize) eventSynchronize;
    decltype(&::cuEventElapsedTime_v2) eventElapsedTime;
    decltype(&::cuStreamCreate) streamCreate;
    decltype(&::cuStreamGetCtx) streamGetCtx;
    decltype(&::cuStreamGetDevice) streamGetDevice;  // CUDA 12.8+: a context no hook saw (a green one's)
    decltype(&::cuStreamIsCapturing) streamIsCapturing;
    decltype(&::cuStreamIsCapturing_ptsz) streamIsCapturingPtsz;
    // Which graph a capturing call joins: the 12.3 ABI, else the 11.3 one (a driver may drop either).
    decltype(&::cuStreamGetCaptureInfo_v3) streamGetCaptureInfo3;
    decltype(&::cuStreamGetCaptureInfo_v3_ptsz) streamGetCaptureInfo3Ptsz;
    decltype(&::cuStreamGetCaptureInfo_v2) streamGetCaptureInfo;
    decltype(&::cuStreamGetCaptureInfo_v2_ptsz) streamGetCaptureInfoPtsz;
    decltype(&::cuDeviceGetName) deviceGetName;
    decltype(&::cuDeviceGetUuid_v2) deviceGetUuid;  // cuDeviceGetUuid_v2, else cuDeviceGetUuid (same signature)
    decltype(&::cuDeviceGetPCIBusId) deviceGetPciBusId;
};
const Driver& driver();  // members may be null before libcuda is found
// The process's running calls, own time and dropped records, ended threads' included (a Tally record).
void tallyTotals(wire::TallyBody& b);

// ---- runtime.cpp: lifecycle, threads, the call scope
enum class State : int { Off = 0, On = 1, Draining = 2, Dead = 3 };
extern std::atomic<int> g_state;
extern thread_local int t_depth GS_TLS;

inline uint64_t nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
uint32_t currentTid();
bool ensureStarted();  // Off -> On on the first recorded call; false when not recording
void startTimes(uint64_t* monoNs, uint64_t* realNs);  // when recording started (Off -> On)
// What a stop is for: the process ends (exit, _exit, quick_exit, a signal's default action) or goes on
// in some form (an exec, a detach).
enum class StopFor : int { None = 0, Ending = 1, Exec = 2, Detach = 3 };
// On -> Draining -> Dead: ends the stream, waiting at most timeoutNs (fast: not for pending GPU spans).
// Async-signal-safe. False when this process was not recording (or a vfork child shares our memory),
// or another stop is under way. A thread that stops from inside a hooked call (a signal handler that
// exits there) may hold the driver's locks: the drain thread makes no driver call after that, and is
// not waited for while it is inside one (drain.cpp, "the driver gate").
bool stopRecording(uint64_t timeoutNs, bool fast, int exitReason, StopFor why);
// A signal's view of a stop another path began (the app's exit flush): waits, at most timeoutNs, for it
// to end and says what it was for; StopFor::None when no stop was under way when it was called. At
// once on the thread that runs the stop (a signal nested in it). Async-signal-safe.
StopFor awaitStopUnderWay(uint64_t timeoutNs);
bool flushRecording(uint64_t timeoutNs);  // everything recorded so far written; recording goes on
void resumeRecording();                   // after a stop for an exec that failed

// ---- attach.cpp: gpuspy attach (recording started in a running process, not at load)
bool attachedAt(uint64_t* monoNs);  // recording was started by an attach, at *monoNs

// ---- lifecycle.cpp: the exit paths atexit does not see (fatal signals, _exit, quick_exit, exec)
void installExitPaths();
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
SigactionFn realSigaction();  // libc's, behind our interposer
// The app's sigaction (preload.cpp): for a signal we handle, it reads and replaces the action behind ours.
int appSigaction(int sig, const struct sigaction* act, struct sigaction* old);

// ---- window.cpp: capture windows. g_window is the open window's number (from 1), 0 when none is
// open (calls are counted, not recorded), kNoWindows when no window was asked for (everything is
// recorded, as window 1 should a control stop come).
inline constexpr uint32_t kNoWindows = 0xffffffffu;
extern std::atomic<uint32_t> g_window;
void windowConfigure();                        // GPUSPY_CAPTURE_RANGE, _END, DELAY, DURATION, PAUSED
// The dormant path: one call not recorded, counted in the thread's slot of per-category counters (a
// thread-local pointer, a table read and a plain add; window.cpp registers the slot on first use).
struct alignas(64) LeftOutSlot {
    std::atomic<uint64_t> n[wire::kWindowCategories];
};
extern thread_local LeftOutSlot* t_leftOutSlot GS_TLS;
extern thread_local unsigned t_leftOutGen GS_TLS;
extern unsigned g_leftOutGen;  // bumped in a forked child: its threads register again
void countLeftOutSlow(Api api);
inline void countLeftOut(Api api)
{
    LeftOutSlot* s = t_leftOutSlot;
    if (__builtin_expect(s != nullptr && t_leftOutGen == g_leftOutGen + 1, 1)) {
        std::atomic<uint64_t>& n = s->n[size_t(kApis[size_t(api)].category) % wire::kWindowCategories];
        n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
    }
    countLeftOutSlow(api);
}
bool windowOpen(wire::WindowTrigger trigger, uint64_t atNs, uint32_t tid);   // false: not opened now
bool windowClose(wire::WindowTrigger trigger, uint64_t atNs, uint32_t tid);  // false: none was open
void windowOnProfilerApi(bool start);          // cuProfilerStart/Stop (after the real call succeeded)
// NVTX trigger: the range name (null when NVTX is not the trigger) and its domain ("": the default).
const char* windowNvtxName();
const char* windowNvtxDomain();
void windowOnNvtxPush(int depth, bool matches);  // matches: the range is the trigger's
void windowOnNvtxPop(int depth);
void windowOnNvtxStart(uint64_t rangeId, bool matches);
void windowOnNvtxEnd(uint64_t rangeId);
void windowTick(uint64_t now);                 // drain thread, each pass: time triggers, duration
size_t drainWindowRecords(uint8_t* out, size_t cap, bool final);  // final: and the Tally
// The window open now (g_window) and the calls left out so far, by category, for a Tally record.
uint32_t windowState(uint64_t leftOut[wire::kWindowCategories]);
void windowAfterForkChild();

// ---- settings.cpp: GPUSPY_* as set when the library loaded (a daemon's chdir, clearenv come later);
// one not set then is read from the environment now. GPUSPY_OUTPUT and GPUSPY_SOCKET are absolute.
const char* setting(const char* name);
bool disabledSetting();         // GPUSPY_DISABLE=1: no recording, no handler, thread or descriptor
unsigned stackDepthSetting();   // GPUSPY_STACK_DEPTH, 24 when unset (0: stacks off)
uint64_t loadMonoNs();        // CLOCK_MONOTONIC when the library loaded (--delay counts from it)
// gpuspy attach: the value it passed replaces what was read at load ("": unset).
void settingOverride(const char* name, const char* value);
const char* loadDirectory();  // the working directory when the library loaded; null when unknown
bool userChangedSinceLoad(unsigned* euidAtLoad);  // the process switched its effective user since then

// ---- identity.cpp: who the process is (launcher ranks, host name), read at load; the Identity record
void identityLoad();  // from the settings' constructor, before the app can change its environment
const char* identityHost();
// A CLOCK_REALTIME stamp, the CLOCK_MONOTONIC time midway between two readings around it, and their
// distance (the tightest of a few tries).
void wallClockPair(uint64_t* realtimeNs, uint64_t* monotonicNs, uint64_t* errorNs);
size_t encodeIdentity(uint8_t* out, size_t cap, wire::IdentityEdge edge);
// How long the app's threads waited for a CPU (cpu_wait.cpp): an ending thread adds its own; the drain
// thread's CpuWait record (0 bytes when /proc cannot be read) adds the threads alive at the end.
void noteThreadEndCpuWait();
size_t encodeCpuWait(uint8_t* out, size_t cap);
// GPUSPY_OUTPUT's %h (host name) and %q{VAR} (VAR's value, empty when unset) replaced in place; %p is
// left for the process that opens the file. False (value unchanged): the result would not fit in cap.
bool expandOutputName(char* value, size_t cap);

// ---- fds.cpp: the shim's own descriptors, above a high floor and known by identity
struct OwnedFd {
    int fd = -1;
    uint64_t dev = 0;
    uint64_t ino = 0;
};
int fdMoveHigh(int fd);        // fd, or a close-on-exec copy above the floor (fd then closed)
OwnedFd fdOwn(int fd);         // moved high, its identity taken
bool fdStillOurs(const OwnedFd& o);  // the number still refers to what we opened (the app may own it now)
// Spares made at load, while the app's limit is the one it started with (settings.cpp's constructor):
// a socket for the collector, a pipe for libunwind, an unnamed capture file in fileDir (null: none).
// Each is handed out once, if still ours, and only in the process it belongs to: each fork gives the
// child a socket and file of its own (fork handlers registered here).
void fdsReserveAtLoad(bool socket, bool pipe, const char* fileDir);
int fdTakeSpareSocket();                  // -1: none (then socket() as usual)
int fdTakeSpareFile(const char* path);    // the spare file, named path (as O_CREAT|O_EXCL); -1: none
bool fdTakeSparePipe(int fds[2], int flags);  // false: none (then pipe2 as usual)
void fdRelease(OwnedFd& o);    // closed only when still ours; forgotten either way
// While one is alive on a thread, pipes made there (libunwind's validation pipe) go above the floor.
struct OwnPipesScope {
    OwnPipesScope();
    ~OwnPipesScope();
};
bool inOwnPipesScope();
void noteUnwindPipe(int* fds);  // libunwind's pipe2 made its validation pipe into fds (its own array)
// The drain thread, per write batch: when the app took over a number of libunwind's pipe, libunwind
// is made to forget it (never to read, write or close it) and to make a new pipe when it next needs one.
void unwindPipeCheck();

// One lane element: a record body plus what the drain thread needs to finish it.
struct Item {
    enum Kind : uint8_t { Call = 1, Nvtx = 2, ThreadStats = 3, Collective = 4 };
    Kind kind;
    uint8_t laneAhead;          // lanes.cpp's own: fetch the slot ahead for writing (LaneSlot)
    uint8_t pad0[2];
    uint32_t endRecordDelayNs;  // Call with GPU timing: from the call's return to its end event recorded
    uint64_t pad1;
    CUevent evBegin;   // GPU timing events (null: untimed)
    CUevent evEnd;
    union {
        wire::CallBody call;
        wire::NvtxBody nvtx;
        wire::ThreadStatsBody stats;
        wire::CollectiveBody collective;  // hooks/nccl_profiler.cpp
    };
};
static_assert(sizeof(Item) == 128);

struct ThreadState;
// This thread's state and its lane, made at its first recorded call; null when out of memory.
ThreadState* threadState();
bool enqueue(ThreadState* ts, const Item& item);  // into the thread's lane; false: dropped (and counted)
void addOwnTime(ThreadState* ts, uint64_t ns);  // gpuspy's time outside a CallScope (NVTX events)

uint64_t nextSeq(ThreadState* ts);  // unique per process, from 1; handed to threads in blocks
// The calling thread's room for python.cpp's frame memo (kPyMemoBytes, zeroed at first); null when it
// has no state (out of memory).
constexpr size_t kPyMemoBytes = 5760;
unsigned char* threadPyMemo();
// The owning thread's increment of its own counter (no other thread writes it; others only read it):
// no locked instruction.
inline void bump(std::atomic<uint64_t>& c, uint64_t n)
{
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Calls fn(room) with every thread state's room (live or free: states are reused, never freed), under
// the thread list's lock: python.cpp sums its per-thread counts.
void forEachPyMemoImpl(void (*fn)(const unsigned char*, void*), void* arg);
template <class Fn>
void forEachPyMemo(Fn&& fn)
{
    forEachPyMemoImpl([](const unsigned char* room, void* arg) { (*static_cast<Fn*>(arg))(room); }, &fn);
}

// What every wrapper opens first. Inert (everything a no-op) when nested inside another hook,
// on the drain thread, or when gpuspy is not recording.
class CallScope {
public:
    explicit CallScope(Api api)
    {
        if (t_depth++ != 0) return;
        // The dormant path (outside a capture window): counted, nothing else: no errno touched, no
        // clock, stack or record, not even this scope's other members (bench/dormant_instructions.sh).
        if (g_window.load(std::memory_order_relaxed) == 0 && g_state.load(std::memory_order_acquire) == int(State::On)) {
            countLeftOut(api);
            return;
        }
        open(api);
    }
    ~CallScope()
    {
        --t_depth;
        if (m_active) errno = m_errno;
    }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

    bool active() const { return m_active; }
    wire::CallBody& body() { return m_item.call; }
    Item& item() { return m_item; }
    bool perThread() const { return m_perThread; }
    // A timed call's wall and thread CPU clocks right before the real call (0: not taken).
    uint64_t wallBeginNs() const { return m_wallBegin; }
    uint64_t cpuBeginNs() const { return m_cpuBegin; }
    uint64_t cpuReadNs() const { return m_cpuRead; }  // what reading them took (GPU timing pays it)
    void setStream(CUstream s) { m_item.call.stream = uint64_t(uintptr_t(s)); }
    void setFlags(uint16_t f) { m_item.call.flags |= f; }
    // GPU timing left this call out (its budget): counted per thread for the End record.
    void countGpuSampledOut();
    // Now, in CLOCK_MONOTONIC ns, for what runs before the real call (GPU timing's budget): the
    // entry stamp (taken here when this call's own time is not measured).
    uint64_t entryNs();
    // Call right before the real function: the host begin time.
    void beforeReal()
    {
        if (m_active) beforeRealActive();
    }
    // Call right after it with its result; queues the record. Returns rc untouched.
    CUresult finish(CUresult rc) { return m_active ? finishActive(rc) : rc; }

private:
    void open(Api api);  // not nested, not dormant: everything else the constructor does
    void beforeRealActive();
    CUresult finishActive(CUresult rc);

    // Only m_active is set on every path; open() sets the rest (the dormant path leaves them).
    bool m_active = false;
    bool m_perThread;
    bool m_tsc;  // the stamps are TSC ticks, not ns
    enum class Measure : uint8_t { No, Exact, Sampled };
    Measure m_measure;  // how this call's own time counts (kOwnTimeExact, runtime.cpp)
    int m_errno;
    ThreadState* m_ts;
    uint64_t m_t0;     // clock stamps (shim/clock.h): entry (0: not taken), and right before the real call
    uint64_t m_begin;
    uint64_t m_wallBegin, m_cpuBegin;  // a timed call's clocks before the real call (kCallHeldUp)
    uint64_t m_cpuRead;
    Item m_item;
};

// ---- hooks/nccl_profiler.cpp: NCCL's profiler plugin
bool ncclLaunchUnderWay();  // this thread is inside NCCL's launch of a collective's kernel (its KernelLaunch event)

// ---- intern.cpp: names, memory kinds, devices
uint32_t internKernelName(const void* handle, const char* name);  // handle -> id (name copied)
void aliasKernel(const void* handle, const void* sameAs);         // cuKernelGetFunction
uint32_t kernelIdOf(const void* handle);                          // 0 = unknown; may ask cuFuncGetName
bool kernelNeedsFirstTimings(uint32_t kernelId);  // fewer than two of its launches timed yet (false for 0)
// A first timing of the kernel lost its span (set aside by the drain): one more is owed, a few at most.
void retryKernelTiming(uint32_t kernelId);
void noteKernelTimed(uint32_t kernelId);          // one of its launches has GPU timing set up
uint32_t internString(const char* s, size_t n);                   // NVTX messages and domains
int deviceOfCurrentContext(CUcontext* ctxOut);                    // -1 when none; no driver call once known
// The calling thread's current context as the context hooks saw it set; asks the driver once per
// thread (and again after a context may have been destroyed).
CUcontext currentContext();
void noteCurrentContext(CUcontext ctx);       // this thread made ctx current (set, push, pop, create)
void forgetCurrentContexts();                 // a context may be gone: every thread asks again
void forgetThreadContext();                   // this thread's current context changed to one we cannot name
void noteContextDevice(CUcontext ctx, int device);  // ctx belongs to device (primary retain, create)
int deviceOfContext(CUcontext ctx);                               // -1 when never seen current
void noteDevice(int device);
void memAddRange(uint64_t start, uint64_t bytes, wire::MemKind kind);
void memRemoveRange(uint64_t start);
wire::MemKind memKindOf(uint64_t address, bool deviceSide);
int deviceOfPointer(uint64_t address);  // a device pointer's device (asked of the driver when several are in use); -1 unknown
void noteThreadName(uint32_t tid);

// Drained by drain.cpp: definitions not yet sent. Each returns bytes written (0 = none pending).
size_t drainKernelDefs(uint8_t* out, size_t cap);
size_t drainStringDefs(uint8_t* out, size_t cap);
size_t drainDeviceDefs(uint8_t* out, size_t cap);
void resolveDeviceNames();  // the drain thread, before it encodes: the driver's names of devices seen
size_t drainThreadDefs(uint8_t* out, size_t cap);
void internForgetSent();  // a new stream: every definition is pending again
void internPrefork();
void internPostforkParent();
void internPostforkChild();

// ---- drain.cpp
void drainStart();
// Starts a detached thread of gpuspy's own with every signal blocked (the app's handlers run on the
// app's threads): the drain thread, the attach thread. False when it could not.
bool startOwnThread(pthread_t* thread, void* (*main)(void*));
// Ends the stream (End record, exitReason as in wire::EndBody) and waits, at most timeoutNs, for the
// drain thread to write it; fast: no waiting for pending GPU spans. The drain thread stops taking
// records a little before the limit: what it has not written then is counted as dropped, and End goes
// out. mayHoldDriver: the calling thread may hold the driver's locks (it stops from inside a hooked
// call): the driver gate closes, and a drain thread blocked inside a driver call has its work taken
// over by the caller. Async-signal-safe.
void drainStopAndFlush(uint64_t timeoutNs, bool fast = false, int exitReason = 0, bool mayHoldDriver = false);
// The driver gate: the drain thread's driver calls (event queries, anchors, device names) go between
// these. Enter is false once an exit closed the gate (no driver call, nothing resolved); Leave never
// returns to a drain thread whose work an exit took over while it was inside (it parks for good).
bool drainDriverEnter();
void drainDriverLeave();
// The gate is closed (or the drain's work taken over): an exit from inside a hooked call is under way,
// and a lock an app thread holds may never be let go. The drain's own locks are taken without waiting.
bool drainGateClosed();
// Waits, at most timeoutNs, until everything queued so far is written; the stream goes on.
// Async-signal-safe. False: timed out or nothing to flush.
bool drainFlushNow(uint64_t timeoutNs);
bool onDrainThread();
void drainRestartable();  // after a stop: the next recorded call may start a new stream
// Ends the drain thread's wait between passes now (a lane crossed half full, a stop or flush request)
// rather than at the end of its poll period. Async-signal-safe; never blocks or allocates; a syscall
// only when the drain thread is waiting.
void drainWake();
uint32_t drainWakeCount();  // wakes asked for so far (wraps; tests read it)
void drainAfterForkChild();

// ---- lanes.cpp: one bounded queue of Items per thread state (its lane), emptied by the drain thread
struct Lane;
void lanesConfigure();  // GPUSPY_QUEUE_ITEMS: the capacity of the lanes made from now on (per thread)
Lane* laneCreate();     // at a thread state's first recorded call, memory resident; null: out of memory
// By the thread that holds the lane's thread state (one at a time, handed over under a lock): never
// allocates, locks or waits; wakes the drain thread when the lane crosses half full. False: the lane is
// full (the caller counts the drop).
bool laneTryEnqueue(Lane* lane, const Item& item);
size_t laneDequeue(Lane* lane, Item* out, size_t max);  // the drain thread only
// Every lane of this process, newest first, for the drain thread: the list only grows (a lane stays
// with its thread state when the thread exits), so it is walked without a lock.
Lane* lanesFirst();
Lane* laneNext(const Lane* lane);
void lanesAfterForkChild();  // the parent's lanes are forgotten; thread states get new ones

// ---- gpu_time.cpp
void gpuConfigure();
// How a call's device work competes for the GPU timing budget (gpu_budget.h).
enum class GpuTiming : uint8_t {
    Sampled,    // kernels: timed while the budget has credit, sampled out beyond it
    Preferred,  // copies, memsets, graph launches: may borrow a burst ahead of the budget
    Always,     // a kernel's first two timings (kernelNeedsFirstTimings): one-off, charged to the budget
};
// Around a call that submits device work on `stream`. No-ops when GPU timing is off.
void gpuBefore(CallScope& scope, CUstream stream, GpuTiming how);
// Right after the real call returned (at returnedNs): records the end event taken by gpuBefore, or
// gives both events back when the call failed. Nothing else may run between the return and this.
void gpuRecordEnd(CallScope& scope, CUresult rc, uint64_t returnedNs);
// A timed call whose thread spent longer than this off the CPU within it is flagged wire::kCallHeldUp.
constexpr uint64_t kHeldUpNs = 10000;
// Later in the same call: the bookkeeping (flags, the end shared as the stream's next start).
void gpuAfter(CallScope& scope, CUresult rc);
// Before a stream synchronize: when untimed work may be queued on `stream` (its last operation was not
// timed), records one event there, within the budget; its span (begin = end) is when the stream drained.
void gpuMarkDrain(CallScope& scope, CUstream stream);
void gpuDropped(const Item& item);  // a timed record its lane could not take: events back to the pool
void gpuStreamTouched(CUstream stream, bool perThread);  // untimed work joined the stream
void gpuStreamDestroyed(CUstream stream);                  // its handle may come back for another stream
void gpuStreamMade(CUstream stream, unsigned int flags);   // blocking or not (the legacy stream's rules)
// ---- hooks/graph.cpp, from gpuAfter: a launch, copy or memset just captured into a stream capture has
// its node (made by the driver) tied to the call's seq, like a node added by the node API, so that a
// later cuGraph(Exec)*SetParams on that node names the recorded node it changes.
void noteCapturedNode(CallScope& scope, CUresult rc);
void gpuCaptureBegin(CUstream stream, bool perThread);
// Before a context may be destroyed (app thread, not in a hook): waits, bounded, until the drain
// thread resolved every pending span, then forgets every pooled event and clock anchor.
void gpuBeforeContextTeardown();
void gpuCaptureEnd(CUstream stream, bool perThread);
// Drain thread: resolve what completed; returns bytes written into out.
size_t gpuDrain(uint8_t* out, size_t cap, const Item* calls, size_t n, bool final);
// At the stream's end: a GpuBudget record for each thread that chose whether to time (counted in *records).
size_t gpuBudgetRecords(uint8_t* out, size_t cap, uint64_t* records);
uint64_t gpuSampledOut();  // calls not GPU-timed for the budget, every thread's (runtime.cpp)
void gpuAfterForkChild();

}  // namespace gpuspy::shim

#ifdef GPUSPY_HAVE_STACK
#include "shim/stack.h"
#endif

// The exported wrappers, declared with cuda.h's type for their ABI name.
extern "C" {
#define GS_DRIVER(abi, base, since, pt, cat) __attribute__((visibility("protected"))) decltype(::abi) abi;
#include "driver_hooks.def"
#undef GS_DRIVER
}
