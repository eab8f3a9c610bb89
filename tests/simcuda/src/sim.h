// The simulated driver's shared internal model: handles, the device timeline, memory ranges and the per-call scope.
#pragma once

// Build against cuda.h the way the real driver does: every ABI name (_v2, _ptds, _ptsz and the old
// pre-_v2 ones) is declared with its own signature, so the compiler checks each exported definition.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaProfiler.h>

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace simcuda {

using Ns = int64_t;

// ---- clock and host blocking (host_cost.cpp)
Ns nowNs();
void spinFor(Ns ns);
void waitUntil(Ns deadline);  // sleeps, then spins the last microseconds

// ---- configuration from the environment (config.cpp)
struct KernelRule {
    std::regex re;
    Ns ns;
};
// SIMCUDA_FAIL and SIMCUDA_STALL: name@N=value, the Nth call (0: every call) of that name.
struct CallRule {
    std::string name;
    long nth;
    long long value;  // the CUresult to return (FAIL), the ns to hold the thread up (STALL), the signal (SIGNAL)
};
struct Config {
    int devices = 1;  // physical devices (SIMCUDA_DEVICES)
    // The physical ordinals this process sees, in visible order (CUDA_VISIBLE_DEVICES; visible_devices.cpp).
    std::vector<int> visible;
    bool visibleSet = false;  // CUDA_VISIBLE_DEVICES was set (the trace then names each line's physical device)
    Ns launchLatency = 2000;
    Ns graphNodeCost = 0;  // host time cuGraphLaunch spends per node (SIMCUDA_GRAPH_NODE_NS)
    int ncclRanks = 0;     // NCCL's kernels couple across devices 0..N-1 (SIMCUDA_NCCL_RANKS; collectives.cpp)
    std::string ncclJob;   // ...across the processes of this job (SIMCUDA_NCCL_JOB; collectives.cpp)
    Ns kernelDefault = 5000;
    std::vector<KernelRule> kernelRules;
    double bwPinned = 25, bwPageable = 8, bwDtoD = 1000, bwPtoP = 50, bwHtoH = 10, bwMemset = 1500;  // GB/s == bytes/ns
    Ns copyFixed = 1000, memsetFixed = 1000, hostFuncNs = 1000;
    bool hostCostOn = true;
    std::map<std::string, Ns> hostCost;  // base name -> ns (overrides)
    std::vector<CallRule> fails;
    std::vector<CallRule> stalls;
    std::vector<CallRule> signals;
    std::string tracePath;
    bool traceCalls = false;
    bool quiet = false;
};
const Config& config();
std::string baseName(const std::string& abiName);

// ---- per-call bookkeeping: fault injection, host cost, call trace (faults.cpp, host_cost.cpp)
struct ApiInfo {
    const char* name;
    std::string base;
    Ns cost;
    std::vector<int> failRules;  // indexes into config().fails
    std::vector<int> stallRules;  // indexes into config().stalls
    std::vector<int> signalRules;  // indexes into config().signals
    bool poll = false;           // cuEventQuery, cuStreamQuery: see ApiScope
    bool eventRecord = false;    // cuEventRecord(WithFlags): see ApiScope
};
ApiInfo& registerApi(const char* abiName);
Ns hostCostOf(const ApiInfo& api);

class ApiScope {
public:
    // manualCost: the call spends its host cost itself (synchronize, event record).
    explicit ApiScope(ApiInfo& api, bool manualCost = false);
    ~ApiScope();
    ApiScope(const ApiScope&) = delete;
    ApiScope& operator=(const ApiScope&) = delete;
    bool injected() const { return m_injected; }
    CUresult injectedRc() const { return m_rc; }
    CUresult ret(CUresult rc) { m_rc = rc; return rc; }
    const char* name() const { return m_api.name; }
    const ApiInfo& api() const { return m_api; }
    Ns start() const { return m_start; }  // when the call began; 0 unless SIMCUDA_TRACE_CALLS

private:
    ApiInfo& m_api;
    Ns m_start;
    bool m_injected = false;
    CUresult m_rc = CUDA_SUCCESS;
};
bool injectFault(ApiInfo& api, CUresult* rc);
// SIMCUDA_STALL: the calling thread sleeps after the call submitted its work, before it returns.
void injectStall(const ApiInfo& api);
// SIMCUDA_SIGNAL: the calling thread is sent a signal in the middle of the call, the model's lock held
// (a real driver holds its own locks across most of a call: a handler that runs then, and never
// returns, leaves them held).
void injectSignal(const ApiInfo& api);

// When a call hands its work to the device. A real driver writes the doorbell at the end of
// cuLaunchKernel, cuMemcpy*Async or cuEventRecord, so the device can start the work no earlier than
// latency after the call returns. Here the op's trace line, written after its times are known, would
// put host time between that stamp and the return that no driver has; so the stamp is the instant the
// call will return: now plus the thread's recent cost of the trace lines still to write, and the
// outermost ApiScope spins until then before returning. The first stamp of a call fixes the instant (a
// graph launch stamps every node with it); a later one is never before now. Without a trace the
// instant is now. (SIMCUDA_TRACE_CALLS lines are written at the thread's next call: traceCall.)
Ns submissionInstant(int traceLinesAfter);
void noteTraceWrite(Ns ns);  // trace.cpp: how long writing one trace line took

// The per-entry-point ApiInfo sits in a constant-initialised atomic, not a function-local static: a static's
// initialisation guard, caught half-done by fork(), would hang the child's first call of that entry point.
ApiInfo& apiInfo(std::atomic<ApiInfo*>& slot, const char* abiName);
#define SIM_API_MANUAL(abiName, manual)                                                  \
    static std::atomic<::simcuda::ApiInfo*> s_api{nullptr};                              \
    ::simcuda::ApiScope scope(::simcuda::apiInfo(s_api, #abiName), manual);              \
    if (scope.injected()) return scope.injectedRc()
#define SIM_API(abiName) SIM_API_MANUAL(abiName, false)

// Defines a plain entry point and its per-thread-default-stream twin (_ptsz/_ptds): same body, `pt` tells them apart.
#define SIM_PAIR(plainName, ptName, params, call) \
    SIM_EXPORT CUresult plainName params          \
    {                                             \
        SIM_API(plainName);                       \
        [[maybe_unused]] constexpr bool pt = false; \
        return scope.ret(call);                   \
    }                                             \
    SIM_EXPORT CUresult ptName params             \
    {                                             \
        SIM_API(ptName);                          \
        [[maybe_unused]] constexpr bool pt = true;  \
        return scope.ret(call);                   \
    }

// ---- locks, the handle registry, fork (handles.cpp)
// One recursive lock for the whole model: calls are short, waits and byte moves happen outside it.
class ModelMutex {
public:
    void lock();
    void unlock();
    bool try_lock();
};
ModelMutex& bigLock();
using Lock = std::unique_lock<ModelMutex>;
// The address ranges (memory.cpp) have their own reader/writer lock, taken after bigLock, never before it.
struct RangesReadLock {
    RangesReadLock();
    ~RangesReadLock();
    RangesReadLock(const RangesReadLock&) = delete;
    RangesReadLock& operator=(const RangesReadLock&) = delete;
};
struct RangesWriteLock {
    RangesWriteLock();
    ~RangesWriteLock();
    RangesWriteLock(const RangesWriteLock&) = delete;
    RangesWriteLock& operator=(const RangesWriteLock&) = delete;
};
// First calls of entry points register their ApiInfo under this lock (not the model lock, which may be busy).
struct RegistrationLock {
    RegistrationLock();
    ~RegistrationLock();
    RegistrationLock(const RegistrationLock&) = delete;
    RegistrationLock& operator=(const RegistrationLock&) = delete;
};
uint64_t rangesVersion();   // changes whenever a RangesWriteLock is taken: validates readers' caches
unsigned forkGeneration();  // changes in a forked child: thread-local caches compare against it
void traceAfterFork();      // trace.cpp

// Every handle given out is registered; lookups take no lock. Objects are never freed.
enum class HandleKind : uint8_t { Context = 1, Stream, Event, Library, Kernel, Graph, GraphExec, GraphNode, Pool, Phys,
                                  Array, Mipmap, GreenCtx, ResourceDesc };
enum class HandleState { Unknown, Live, Destroyed };
void registerHandle(const void* p, HandleKind kind);
void retireHandle(const void* p);  // destroyed: recognised, but no longer usable
HandleState handleState(const void* p, HandleKind kind);
template <class T>
T* liveHandle(const void* p, HandleKind kind)
{
    return handleState(p, kind) == HandleState::Live ? static_cast<T*>(const_cast<void*>(p)) : nullptr;
}

// ---- the object model (device.cpp, timeline.cpp)

struct Graph;
struct Context;
struct Event;
struct Op;

// A cuStreamWaitValue* condition (stream_memops.cpp).
struct ValueWait {
    CUdeviceptr addr = 0;
    unsigned bytes = 4;
    cuuint64_t value = 0;
    unsigned flags = 0;  // CU_STREAM_WAIT_VALUE_GEQ / EQ / AND / NOR
    Event* event = nullptr;  // instead: cuStreamWaitEvent on an event recorded into a held stream
    bool coupled = false;    // instead: a collective's kernel waiting for its peers (collectives.cpp releases it)
};
// Work submitted to a stream held by an unsatisfied wait: placed, in order, when a write releases it.
struct Deferred;

struct Stream {
    Context* ctx = nullptr;
    unsigned flags = 0;
    int priority = 0;
    unsigned long long id = 0;
    bool legacy = false, perThread = false;
    Ns tail = 0;  // completion time of everything submitted so far
    Graph* capture = nullptr;
    CUstreamCaptureMode captureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    bool held = false;  // an unsatisfied cuStreamWaitValue* holds the stream (heldOn); work after it is deferred
    ValueWait heldOn;
    std::vector<Deferred>* deferred = nullptr;
    bool blocking() const { return !(flags & CU_STREAM_NON_BLOCKING); }
};

struct Context {
    int dev = 0;
    unsigned flags = 0;
    unsigned long long id = 0;
    bool primary = false;
    Stream* legacy = nullptr;
    std::map<pid_t, Stream*> perThread;
    std::vector<Stream*> streams;  // every stream ever created in it (destroyed ones may still have work pending)
    std::atomic<bool> destroyed{false};
};

struct Device {
    int ordinal = 0;   // as the process sees it (CUDA_VISIBLE_DEVICES renumbers)
    int physical = 0;  // which SIMCUDA_DEVICES device it is: its UUID, PCI bus, name, NCCL coupling
    Context* primary = nullptr;
    unsigned primaryFlags = 0;
    int primaryRefs = 0;
    bool primaryActive = false;
    CUmemoryPool defaultPool = nullptr;
    CUmemoryPool currentPool = nullptr;
    CUuuid uuid{};
    int pciBus = 0;
};

struct Event {
    unsigned flags = 0;
    Context* ctx = nullptr;
    Ns time = 0;
    bool recorded = false;
    Graph* capturedIn = nullptr;
    Stream* heldBy = nullptr;  // recorded into a held stream: its time is known once the stream is released
};


extern const int kDriverVersion;
bool initialized();
int deviceCount();
Device* device(int ordinal);
int physicalDevice(int ordinal);     // the visible ordinal's physical device (the ordinal itself if out of range)
int visibleOrdinal(int physical);    // the physical device's visible ordinal, -1 if this process does not see it
// CUDA_VISIBLE_DEVICES (visible_devices.cpp): the physical ordinals listed, up to the first invalid entry;
// value NULL (unset): all of them.
std::vector<int> parseVisibleDevices(const char* value, int physicalCount);
CUuuid physicalUuid(int physical);
std::string uuidText(const CUuuid& u);  // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
int deviceAttribute(CUdevice_attribute a, int ordinal);
// The calling thread's current context if it is usable, else nullptr; noContextError() then says why:
// CUDA_ERROR_CONTEXT_IS_DESTROYED if it was destroyed (by any thread), else CUDA_ERROR_INVALID_CONTEXT.
Context* currentContext();
CUresult noContextError();
Context* primaryContext(int ordinal);  // creates it on first use
Context* asContext(CUcontext c);       // a live context, or nullptr
// A green context's own context (green_ctx.cpp); destroyed like cuCtxDestroy, without waiting for its work.
Context* newBackingContext(int dev);
void destroyBackingContext(Context* ctx);
CUresult contextError(CUcontext c);    // why asContext(c) failed: CONTEXT_IS_DESTROYED or INVALID_CONTEXT
pid_t threadId();
pid_t processId();

// NULL means the legacy stream for plain entry points and the per-thread stream for _ptsz/_ptds ones.
// Takes no lock for a registered handle, CU_STREAM_LEGACY, or a per-thread stream this thread already has.
// Errors: INVALID_CONTEXT (no current context for a default stream), CONTEXT_IS_DESTROYED (the stream's or the
// current context is gone), INVALID_HANDLE (not a live stream).
CUresult lookupStream(CUstream h, bool perThreadDefault, Stream** out, Context* ctx = nullptr);
inline Stream* resolveStream(CUstream h, bool perThreadDefault)
{
    Stream* s = nullptr;
    return lookupStream(h, perThreadDefault, &s) == CUDA_SUCCESS ? s : nullptr;
}
inline CUresult streamStatus(CUstream h, bool perThreadDefault)
{
    Stream* s = nullptr;
    return lookupStream(h, perThreadDefault, &s);
}
Stream* newStream(Context* ctx, unsigned flags, int priority);

// ---- device operations on the timeline (timeline.cpp)
// EventRecord/EventWait: a graph's event record or wait node (captured with CU_EVENT_RECORD_EXTERNAL /
// CU_EVENT_WAIT_EXTERNAL, or added by the node API); no device work: it orders the stream and is traced apart.
// MemOp: a stream memory operation's write (stream_memops.cpp).
enum class OpKind { Kernel, Memcpy, Memset, HostFunc, MemOp, EventRecord, EventWait };
enum class WaitReason { CtxSync, StreamSync, EventSync, SyncCopy, PageableCopy, SyncMemset, FreeSync, RegisterSync };

struct Op {
    OpKind kind = OpKind::Kernel;
    Ns duration = 0;
    std::string name;  // kernel
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, smem = 0;
    size_t bytes = 0;
    const char* dir = "";
    const char* hostMem = "";
    bool sync = false;       // the host call blocks until the op completes
    WaitReason reason = WaitReason::SyncCopy;
    std::function<void()> effect;  // moves the bytes; runs at submission (or at graph replay)
    std::function<void()> hostFn;  // host_func: called on the host at the op's start
    const char* memop = "";        // MemOp: "write_value_32" / "write_value_64"
    CUdeviceptr memopAddr = 0;     // MemOp: the address written (held streams waiting on it are released)
    CUevent event = nullptr;       // EventRecord, EventWait: the node's event
    long long peerWait = -1;       // a coupled collective's kernel: its wait for the last rank (trace "peer_wait")
};

struct Deferred {
    enum Kind { Work, Wait, Record } kind = Work;
    Op op;
    const char* api = "";
    Ns submit = 0;
    pid_t tid = 0;  // the thread that submitted it
    bool fromGraph = false;
    ValueWait wait;
    Event* event = nullptr;
};

// The op of an event record or wait node (graph.cpp).
CUresult eventNodeOp(CUevent e, OpKind kind, Op* out);

// The op a launch of f (a CUfunction or CUkernel) would run (launch.cpp), a memcpy or memset graph node
// runs (copies.cpp).
CUresult kernelOp(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned smem, Op* out);
CUresult memcpyNodeOp(const CUDA_MEMCPY3D* c, Op* out);
CUresult memsetNodeOp(const CUDA_MEMSET_NODE_PARAMS* p, Op* out);

// Submits or captures an op; blocks when op.sync. apiName is the ABI name of the submitting call.
CUresult submitOp(Stream* s, Op op, const char* apiName, bool fromGraph = false);
Ns streamReadyTime(Stream* s, Ns submit);  // start time an op submitted now would get
// An NCCL kernel with SIMCUDA_NCCL_RANKS set: placed when every rank's kernel has arrived (collectives.cpp);
// false: not one of those, place it as any op.
bool placeCoupled(Stream* s, const Op& op, const char* apiName, Ns submit, bool fromGraph, Ns start, pid_t tid, Ns* endOut);
// Under bigLock: releases this process's coupled kernels whose every rank (other processes') has arrived.
void pollCoupled();
// Under bigLock: a held stream's coupled kernel given up on at `at` (SIMCUDA's 10 s limit): traced as ending
// then, no longer waited for (its caller releases the stream).
void giveUpCoupled(Stream* s, Ns at);
void hold(Stream* s, const ValueWait& w);
void release(Stream* s, Ns at);
// Under bigLock: puts an op on the stream's timeline (its effect already ran), traces it; returns its end.
// tid: the thread whose call submitted the work (0: this one; deferred work is placed by whichever
// thread's call releases its stream, and the trace names the thread that submitted it).
Ns placeOp(Stream* s, const Op& op, const char* apiName, Ns submit, bool fromGraph, Ns* startOut = nullptr,
           pid_t tid = 0);

// ---- stream memory operations (stream_memops.cpp), under bigLock
// Re-reads what a held stream waits for (the host may have written it): false once it is no longer held.
bool stillHeld(Stream* s);
// Defers work (its effect not yet run) or an event record behind the stream's unsatisfied wait.
void deferWork(Stream* s, Op op, const char* apiName, Ns submit, bool fromGraph);
void deferRecord(Stream* s, Event* e, Ns submit);
// A value written at device time `at` (a write-value op placed): releases the streams it satisfies.
void valueWritten(CUdeviceptr addr, Ns at);
// cuStreamWaitEvent (or a green context's wait) on an event recorded into a held stream: `s` is held too,
// until that record is placed.
void waitForHeldEvent(Stream* s, Event* e);
// Before a host wait on `s` (or every stream of `c`): a held stream is waited for until a write releases
// it (another thread's, or the host's seen by polling), as a real device would hold it; after
// SIMCUDA's limit (10 s) it is released with a log line rather than hanging the program.
void settleHeld(Lock& g, Stream* s, Context* c);
Ns contextTail(Context* c);
void blockUntil(Ns target, const char* apiName, int dev, WaitReason reason, Ns callStart, const ApiInfo* costIfIdle);
void syncContextForFree(Context* c, const char* apiName, WaitReason reason);

// ---- modules and kernels (module.cpp)
struct Kernel {
    std::string name;  // mangled
    Ns duration = -1;  // from SIMCUDA_KERNEL_NS, resolved on first launch
    int ptxVersion = 90, binaryVersion = 90;  // of the module image the driver chose (fatbin.h)
};
Kernel* asKernel(const void* handle);
// The kernels of a module's (or library's) loaded image, in image order (module.cpp, fatbin.h).
CUresult moduleKernels(CUmodule m, std::vector<Kernel*>* out);

// ---- capture (graph.cpp)
struct GraphNode {
    Graph* graph = nullptr;
    size_t index = 0;  // its op in graph->ops (a child graph node: the first of its graph's ops); none: SIZE_MAX
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL;
    GraphNode* original = nullptr;  // a clone's node: the node it copies (cuGraphNodeFindInClone)
};
struct Graph {
    std::vector<Op> ops;
    std::vector<GraphNode*> nodes;
    bool invalidated = false;
    unsigned long long captureId = 0;
    Stream* origin = nullptr;
};
void captureOp(Graph* g, Op op);
void invalidateCapture(Stream* s);

// ---- memory ranges (memory.cpp)
enum class MemKind { Device, Pinned, Registered, Managed };
struct Range {
    size_t size = 0;
    MemKind kind = MemKind::Device;
    int dev = 0;
    Context* ctx = nullptr;
    unsigned flags = 0;
    const void* vmm = nullptr;  // the cuMemCreate allocation mapped here (cuMemMap), for cuMemRetainAllocationHandle
    void* pool = nullptr;       // the stream-ordered pool it came from (memory.cpp)
    bool imported = false;      // an opened IPC handle's mapping (ipc.cpp): cuIpcCloseMemHandle's, not cuMemFree's
};
bool findRange(uintptr_t p, uintptr_t* base, Range* out);
bool rangeCovers(uintptr_t p, size_t n);  // every byte of [p, p + n) lies in known ranges; never for p == 0
constexpr size_t kPageBytes = 4096;
// `align` a power of two; cuMemAlloc's memory comes in whole pages of its own (kPageBytes), so that
// cuIpcGetMemHandle can share it with other processes (ipc.cpp).
CUresult allocDevice(CUdeviceptr* p, size_t bytes, MemKind kind, unsigned flags = 0, bool zero = true, size_t align = 256);
// ---- memory shared with other processes (ipc.cpp): cuIpcGetMemHandle / cuIpcOpenMemHandle
void addSharedRange(uintptr_t base, size_t size, int dev, Context* ctx);  // an opened handle's mapping
bool removeSharedRange(uintptr_t base);
void ipcForgetExport(uintptr_t base, size_t size);  // cuMemFree of an allocation shared by cuIpcGetMemHandle
// Stream, event and context synchronize give back what each pool reserves beyond its release threshold.
void trimPools();

// ---- CUDA arrays (arrays.cpp): host memory of the descriptor's size, rows packed (pitch = width x element)
struct SimArray {
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    size_t rowBytes = 0, height = 1, depth = 1;  // height and depth at least 1 (1D, 2D arrays)
    char* data = nullptr;                        // freed by cuArrayDestroy; the handle stays recognisable
    size_t bytes() const { return rowBytes * height * depth; }
};
SimArray* asArray(CUarray a);  // a live array, or nullptr

// Which side of a copy a pointer lives on, for direction, bandwidth and the trace's host_mem.
enum class PtrKind { Pageable, Pinned, Managed, Device };
PtrKind classifyPtr(const void* p, int* dev = nullptr);
const char* ptrKindName(PtrKind k);

// ---- trace (trace.cpp)
void traceOp(const Op& op, const char* api, int dev, unsigned long long ctxId, unsigned long long streamId, Ns submit,
             Ns start, Ns end, bool graph, pid_t tid);
void traceWait(const char* api, int dev, Ns start, Ns end, WaitReason reason);
// A graph's event record or wait node as a launch ran it: no op (it runs no device work), its own record.
void traceGraphEvent(const Op& op, const char* api, int dev, unsigned long long streamId, Ns at);
// cuProfilerStart/Stop: what was asked, when, and whether it changed the profiler's state (profiler.cpp).
void traceProfiler(const char* what, Ns at, bool changed);
// SIMCUDA_TRACE_CALLS: call records are kept per thread (up to 16) and written by traceFlushCalls, which
// ApiScope calls where the write disturbs no instant a profiler measures (see ApiScope), and thread exit.
// Records lost to _exit or exec are the thread's last calls' only.
void traceCall(const char* api, Ns start, Ns end, CUresult rc);
void traceFlushCalls();
bool tracing();  // SIMCUDA_TRACE is on and its file open
void logOnce(const char* what, const char* name);
void logLine(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace simcuda
