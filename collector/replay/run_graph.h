// collector/replay/run_graph.h: one process's run as a graph of what depends on what, built once from its
// calls and the device timeline (collector/analyze/place_process.cpp): each thread's calls in program order with
// the host time between them, each device operation on its stream in order, the call that queued it, the
// events between streams, and what every blocking call waited for. The replay (replay.h) runs it, as
// measured or with fixes applied (fixes.h). Pure: no I/O.
#pragma once

#include "collector/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspy::collect::replay {

inline constexpr uint32_t kNone = UINT32_MAX;

// a - b, or 0 where b is later.
inline uint64_t sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// What a call waits for before it returns.
enum class WaitKind : uint8_t {
    None,
    OwnOp,    // its own device work (a synchronous copy or memset, a pageable "async" copy)
    Stream,   // every op queued on a stream before it (stream synchronize, a query that found it done)
    Device,   // every op queued on a device's streams before it (context synchronize, implicit syncs)
    Event,    // the ops before an event's record
};

enum class CallKind : uint8_t { Other, Launch, HostFunc, GraphLaunch, Copy, Memset, Alloc, Free, Sync, Query, EventRecord, WaitEvent };

struct Call {
    uint64_t seq = 0;
    uint32_t thread = 0;      // index in RunGraph::threads
    uint64_t begin = 0, end = 0;  // as measured
    uint64_t gap = 0;         // host time between the thread's previous call's return (or the thread's first
                              // sight) and this call
    CallKind kind = CallKind::Other;
    uint16_t apiId = 0;
    uint32_t stackId = 0;
    uint32_t op = kNone;      // its device operation (index in ops)
    // The wait: for Stream / Device / Event, the waited ops are those queued before the call (in
    // submission order): `waitUpTo` is how many ops of the stream (per stream serial) or, for Device,
    // the op count of the whole run at the call.
    WaitKind wait = WaitKind::None;
    uint32_t waitStream = kNone;  // Stream, Event: the stream; Device: unused
    int device = -1;
    uint32_t waitUpTo = 0;        // Stream/Event: ops of waitStream before it; Device: ops of the run before it
    // Calibrated costs: the call's host time had it not had to wait, and from the waited work's end to its
    // return (both from this call as measured; see run_graph.cpp).
    uint64_t ownNs = 0, postNs = 0;
    bool waited = false;      // it did wait (its waited work ended after its begin)
    // A poll: a query that answered not-ready, then one that answered done. A run of them on one object
    // is replayed as one wait by its last poll (`pollFirst` its first call): the host spins meanwhile.
    bool notReady = false;
    uint32_t pollFirst = kNone;
    // Transfers and allocations.
    wire::Direction direction = wire::Direction::Unknown;
    wire::MemKind hostMem = wire::MemKind::Unknown;  // the host side of a copy
    bool async = false;       // the *Async form
    uint64_t bytes = 0;
    uint64_t address = 0;     // what an allocation made or a release gave back (0: none named)
    bool release = false;     // a free, unregister or destroy (detail::isRelease)
    uint32_t kernelId = 0;
    bool removed = false;     // a fix took the call out (its cost and its wait)
    // A fix that queues this call's op from another call (a graph launch submits its nodes in order while
    // it runs): the op is submitted at `submitVia`'s begin + `submitAtNs` (kNone: at this call's return).
    uint32_t submitVia = kNone;
    uint64_t submitAtNs = 0;
    bool blockingPoll = false; // a fix made the poll a blocking wait: the host sleeps, not spins
    // A stream-ordered allocation: served from what its pool kept, or it grew the pool (back into memory
    // the pool had given back: Regrew), by the report's pool model (collector/analyze/memory_pools.cpp).
    enum class Pool : uint8_t { None, Served, Grew, Regrew } pool = Pool::None;
    // A join: other threads ended (their last call returned) inside the host time before this call, the
    // latest of them shortly before it: the thread waited for them (pthread_join, a future, a barrier),
    // not for the GPU. Indices in RunGraph::joins; replayed, the call begins after each joined thread's
    // end plus the time it came after it as measured, or after its own thread's previous call plus the
    // shortest of those (its own work after the join), whichever is later.
    uint32_t joinFirst = 0, joinCount = 0;
};

// A thread a call waited for: its last call, and from that call's return to the waiting call's begin.
struct Join {
    uint32_t call = kNone;
    uint64_t afterNs = 0;
};
// A thread's wait for another one is taken as a join when the call after it comes at most this long after
// the other thread's end (a woken thread is back on a CPU within this on a loaded host).
inline constexpr uint64_t kJoinSlackNs = 2'000'000;

struct Op {
    uint32_t call = kNone;
    uint32_t stream = 0;      // index in RunGraph::streams
    int device = -1;
    uint64_t begin = 0, end = 0;  // as placed (the timeline's estimate; measured where timed)
    bool measured = false;
    bool bounded = false;     // measured, but only as an upper bound (a blocking copy on an idle stream)
    bool trimmed = false;     // a blocking call's span longer than its work (recorded late, or only an upper
                              // bound): its length taken from its kind's spans (run_graph.cpp, trimLateEnds
                              // and tightenBoundedSpans)
    // Calibrated: from its submission (its call's return; its begin for a call that blocks on it) to its
    // start when nothing held it, as measured where it found its stream free.
    int64_t latency = 0;
    // Events it waits on (cuStreamWaitEvent before it on its stream): indices in RunGraph::eventWaits.
    uint32_t waitsFirst = 0, waitsCount = 0;
};

// A cuStreamWaitEvent: the next op of `stream` waits for the first `upTo` ops of `source`. A legacy one is
// the legacy default stream's rule, not the program's: an op on the legacy stream waits for the work
// queued before it on the device's blocking streams, an op on a blocking stream for the legacy
// stream's (non-blocking streams: cudaStreamNonBlocking, neither).
struct EventWait {
    uint32_t source = kNone;
    uint32_t upTo = 0;
    bool legacy = false;
};

struct Thread {
    uint32_t tid = 0;
    std::string name;
    std::vector<uint32_t> calls;  // in program order
};

struct Stream {
    int device = -1;
    uint64_t handle = 0;
    uint32_t tid = 0;
    bool perThread = false;
    // Its part in the legacy default stream's rules: the legacy stream itself; a blocking stream (made
    // by cuStreamCreate without CU_STREAM_NON_BLOCKING, or a per-thread default stream); a non-blocking
    // one; or one whose making the capture did not see (no rule applied).
    enum class Order : uint8_t { Unknown, Legacy, Blocking, NonBlocking } order = Order::Unknown;
    std::vector<uint32_t> ops;  // in submission order
};

struct RunGraph {
    uint32_t pid = 0;
    std::string command;
    uint64_t startNs = 0, endNs = 0;  // the process's wall: the shim's start to its last record
    std::vector<Call> calls;          // in host time order (begin)
    std::vector<Op> ops;
    std::vector<EventWait> eventWaits;
    std::vector<Join> joins;
    std::vector<Thread> threads;
    std::vector<Stream> streams;
    uint64_t tailNs = 0;  // from the last call's return to the process's end (host work after CUDA)
    uint64_t wallNs() const { return endNs > startNs ? endNs - startNs : 0; }
};

// The graph of a process held in memory (every call and span). Calls that failed or were captured into a
// graph queue no work; calls of no device are kept with their host time.
RunGraph buildRunGraph(const Process& p);
// The graph of a stretch of its calls (a window of a process past the reader's budget, or a part of one):
// `calls` in host time order, the run's wall taken from startNs to endNs. State from before the stretch
// (events recorded, streams made, work queued) is not in it: a wait on such an event waits for nothing.
RunGraph buildRunGraph(const Process& p, const std::vector<const wire::CallBody*>& calls, uint64_t startNs,
                       uint64_t endNs);

std::string streamName(const Stream& s);
std::string threadName(const Thread& t);  // "tid 12 (main)"

}  // namespace gpuspy::collect::replay
