// shim/hooks/nccl_profiler.cpp: NCCL's collectives and point-to-point operations through NCCL's own
// profiler plugin interface (version 5, NCCL 2.26 and later). NCCL looks for its plugin when a
// communicator is made: settings.cpp points NCCL_PROFILER_PLUGIN at this library (never over a plugin
// the user chose), and NCCL finds `ncclProfiler_v5` here.
//
// What NCCL tells a v5 plugin, in order, on the thread that calls it (seen on NCCL 2.28):
//   the user's ncclAllReduce/ncclSend/...: a CollApi/P2pApi event (its stream; started and stopped
//     inside the call);
//   at the group's end, per communicator: a KernelLaunch event around the kernel launch (its stream),
//     then a Coll/P2p event per operation that launch carries, whose parent is the operation's
//     CollApi/P2pApi event: sequence number, count, datatype, algorithm, protocol, channels.
// One Collective record is written per Coll/P2p event, when it starts (its stop only says NCCL has
// enqueued it). Its device work is the kernel launch the shim records anyway: the collector matches the
// two by thread and time (launchNs). Kernel-channel events (the GPU's own timer, read by NCCL's proxy
// thread) and the proxy's events are not asked for: the shim times the kernel with CUDA events.
//
// The plugin records only where the shim records (preloaded, or started by gpuspy attach); loaded by a
// process that inherited NCCL_PROFILER_PLUGIN without the preload, it asks NCCL for no events.
#include "shim/shim.h"
#ifdef GPUSPY_HAVE_STACK
#include "shim/stack.h"
#endif

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {
namespace {

// NCCL's plugin ABI, version 5, as NCCL's headers define it (ext-profiler/ in NCCL's sources): the
// layouts below must match them field for field.
using NcclResult = int;  // ncclResult_t; 0: ncclSuccess
constexpr NcclResult kNcclSuccess = 0;
using NcclLogger = void (*)(int, unsigned long, const char*, int, const char*, ...);

enum : uint64_t {
    kProfileColl = 1u << 1,
    kProfileP2p = 1u << 2,
    kProfileCollApi = 1u << 9,
    kProfileP2pApi = 1u << 10,
    kProfileKernelLaunch = 1u << 11,
};

struct EventDescrV5 {
    uint64_t type;
    void* parentObj;
    int rank;
    union {
        struct { bool graphCaptured; int groupDepth; } groupApi;
        struct { const char* func; size_t count; const char* datatype; int root; void* stream; bool graphCaptured; } collApi;
        struct { const char* func; size_t count; const char* datatype; void* stream; bool graphCaptured; } p2pApi;
        struct { void* stream; } kernelLaunch;
        struct {
            uint64_t seqNumber;
            const char* func;
            const void* sendBuff;
            void* recvBuff;
            size_t count;
            int root;
            const char* datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char* algo;
            const char* proto;
            void* parentGroup;
        } coll;
        struct {
            const char* func;
            void* buff;
            const char* datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void* parentGroup;
        } p2p;
    };
};

struct ProfilerV5 {
    const char* name;
    NcclResult (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks,
                       int rank, NcclLogger logfn);
    NcclResult (*startEvent)(void* context, void** eHandle, EventDescrV5* eDescr);
    NcclResult (*stopEvent)(void* eHandle);
    NcclResult (*recordEventState)(void* eHandle, int eState, void* eStateArgs);
    NcclResult (*finalize)(void* context);
};

// One communicator as this process sees it (init's context).
struct Comm {
    uint64_t id;
    int nranks, rank, nNodes;
};

// The user's call (a CollApi/P2pApi event), kept where the Coll/P2p event that follows finds it through
// its parentObj. Slots are reused round the ring, never freed: a parent pointer NCCL still holds always
// points at memory of ours (if 4,096 API calls came between an operation's call and its scheduling, it
// reads a later call's slot: a wrong call time, never a fault). `owner` tells our slots from others.
struct ApiSlot {
    const void* owner;
    uint64_t beginNs;
    uint32_t tid;
    uint32_t stackId;
};
constexpr size_t kApiSlots = 4096;
ApiSlot g_apiSlots[kApiSlots];
std::atomic<uint64_t> g_apiNext{0};

// The handles of events that need no memory of their own (Coll, P2p; KernelLaunch): never dereferenced.
char g_plainEvent;
char g_launchEvent;

// The KernelLaunch event this thread saw last: the Coll/P2p events that follow it carry its launch.
thread_local uint64_t t_launchNs GS_TLS = 0;
thread_local uint64_t t_launchStream GS_TLS = 0;
thread_local bool t_launching GS_TLS = false;  // between a KernelLaunch event's start and stop

bool sameScopeAsProgram()
{
    // Preloaded (the program's global scope finds our exports) or started by an attach: the shim's
    // hooks see this process's CUDA calls, and its collectives belong with them.
    static const int here = [] {
        DlsymFn dl = realDlsym();
        void* program = dlopen(nullptr, RTLD_LAZY);
        const bool global = dl && program && dl(program, "ncclProfiler_v5") != nullptr;
        return global ? 1 : 0;
    }();
    return here == 1 || attachedAt(nullptr);
}

uint32_t text(const char* s) { return s ? internString(s, strnlen(s, 256)) : 0; }

// Whether a record may be made now, on this thread: recording, a capture window open, not nested in
// one of our own calls. Returns the thread's state, or null.
ThreadState* recordingThread()
{
    if (g_window.load(std::memory_order_relaxed) == 0) return nullptr;
    if (g_state.load(std::memory_order_acquire) != int(State::On) && !ensureStarted()) return nullptr;
    return threadState();
}

NcclResult init(void** context, uint64_t commId, int* mask, const char*, int nNodes, int nranks, int rank, NcclLogger)
{
    *context = nullptr;
    *mask = 0;
    if (disabledSetting() || !sameScopeAsProgram()) return kNcclSuccess;
    Comm* c = static_cast<Comm*>(malloc(sizeof(Comm)));
    if (!c) return kNcclSuccess;
    *c = Comm{commId, nranks, rank, nNodes};
    *context = c;
    *mask = int(kProfileColl | kProfileP2p | kProfileCollApi | kProfileP2pApi | kProfileKernelLaunch);
    return kNcclSuccess;
}

void emitOperation(const Comm& comm, const EventDescrV5& d)
{
    ThreadState* ts = recordingThread();
    if (!ts) return;
    const uint64_t t0 = nowNs();
    Item item{};
    item.kind = Item::Collective;
    wire::CollectiveBody& b = item.collective;
    b.startNs = t0;
    b.launchNs = t_launchNs;
    b.stream = t_launchStream;
    b.commId = comm.id;
    b.tid = currentTid();
    b.nranks = comm.nranks;
    b.rank = d.rank;
    b.nNodes = uint16_t(comm.nNodes > 0xffff ? 0xffff : comm.nNodes);
    const char* datatype;
    if (d.type == kProfileColl) {
        b.kind = wire::CollectiveKind::Collective;
        b.seq = d.coll.seqNumber;
        b.count = d.coll.count;
        b.peer = d.coll.root;
        b.nChannels = d.coll.nChannels;
        b.funcId = text(d.coll.func);
        b.algoId = text(d.coll.algo);
        b.protoId = text(d.coll.proto);
        datatype = d.coll.datatype;
    } else {
        b.kind = wire::CollectiveKind::PointToPoint;
        b.seq = ~0ull;
        b.count = d.p2p.count;
        b.peer = d.p2p.peer;
        b.nChannels = d.p2p.nChannels;
        b.funcId = text(d.p2p.func);
        datatype = d.p2p.datatype;
    }
    b.datatypeId = text(datatype);
    const auto* slot = static_cast<const ApiSlot*>(d.parentObj);
    if (slot >= g_apiSlots && slot < g_apiSlots + kApiSlots && slot->owner == g_apiSlots) {
        b.apiNs = slot->beginNs;
        b.stackId = slot->stackId;
    }
    enqueue(ts, item);
    addOwnTime(ts, nowNs() - t0);
}

NcclResult startEvent(void* context, void** handle, EventDescrV5* d)
{
    *handle = nullptr;
    if (!context || !d) return kNcclSuccess;
    if (t_depth++ != 0) {
        --t_depth;
        return kNcclSuccess;
    }
    const int saved = errno;
    const Comm& comm = *static_cast<const Comm*>(context);
    if (d->type == kProfileCollApi || d->type == kProfileP2pApi) {
        ApiSlot* slot = &g_apiSlots[g_apiNext.fetch_add(1, std::memory_order_relaxed) % kApiSlots];
        slot->owner = g_apiSlots;
        slot->beginNs = nowNs();
        slot->tid = currentTid();
        slot->stackId = 0;
#ifdef GPUSPY_HAVE_STACK
        if (g_window.load(std::memory_order_relaxed) != 0 && g_state.load(std::memory_order_acquire) == int(State::On))
            slot->stackId = stackCapture(0);
#endif
        *handle = slot;
    } else if (d->type == kProfileKernelLaunch) {
        t_launchNs = nowNs();
        t_launchStream = uint64_t(uintptr_t(d->kernelLaunch.stream));
        t_launching = true;
        *handle = &g_launchEvent;
    } else if (d->type == kProfileColl || d->type == kProfileP2p) {
        emitOperation(comm, *d);
        *handle = &g_plainEvent;
    }
    errno = saved;
    --t_depth;
    return kNcclSuccess;
}

NcclResult stopEvent(void* handle)
{
    if (handle == &g_launchEvent) t_launching = false;
    return kNcclSuccess;
}
NcclResult recordEventState(void*, int, void*) { return kNcclSuccess; }
NcclResult finalize(void* context)
{
    free(context);
    return kNcclSuccess;
}

}  // namespace

bool ncclLaunchUnderWay() { return t_launching; }

}  // namespace gpuspy::shim

extern "C" {
__attribute__((visibility("default"))) gpuspy::shim::ProfilerV5 ncclProfiler_v5 = {
    "gpuspy", gpuspy::shim::init, gpuspy::shim::startEvent, gpuspy::shim::stopEvent, gpuspy::shim::recordEventState,
    gpuspy::shim::finalize};
}
