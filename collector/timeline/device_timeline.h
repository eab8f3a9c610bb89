// collector/timeline/device_timeline.h: every device operation of a process placed on its stream, measured
// where the shim timed it and inferred where it did not (collector/README.md, "The device timeline").
// Calls go in, in host time order, with the GPU spans of the timed ones; placements of the untimed
// ones come out through a sink (the timed ones' spans too, as placements that are not estimated) once an anchor (a timed operation, a sync, a query, an event) has
// bounded them. Each placement comes in three passes: `est` with the likely durations, `lo` and `hi`
// with short and long ones (the interval every derived figure reports). Pure: no I/O.
#pragma once

#include "collector/timeline/intervals.h"
#include "wire/format.h"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuspy::collect {

// What a call means to the timeline; from its entry point's name (timelineRole()).
enum class TimelineRole : uint8_t {
    None,
    CtxSync,          // the device's streams drained by the call's return
    StreamSync,       // the call's stream drained by its return
    EventSync,        // the work before the event's record drained by the return
    StreamQuery,      // success: drained by then; not ready: still busy then
    EventQuery,
    EventRecord,      // the event completes when the stream's work so far does
    StreamWaitEvent,  // the stream's next work starts no earlier than the event completes
    WriteValue,       // device work that writes a value (cuStreamWriteValue*; the address is the object)
    WaitValue,        // the stream's next work starts no earlier than a write of the address completes
    GreenStream,      // a green context (the object) made a stream (the record's stream)
    GreenRecord,      // the event completes when the green context's streams' work so far does
    GreenWait,        // the green context's streams' next work starts no earlier than the event completes
    StreamCreate,     // a stream made (the record's stream), blocking or not (wire::kStreamFlagsSlot): the
                      // legacy default stream's rules apply to the blocking ones
};
TimelineRole timelineRole(std::string_view abiName);

enum Pass : uint8_t { kEst = 0, kLo = 1, kHi = 2 };
using Times = std::array<uint64_t, 3>;  // per pass

struct Placement {
    uint64_t seq = 0;
    int device = -1;
    uint32_t stream = 0;   // DeviceTimeline's stream index (streamOf)
    Times begin{}, end{};
    bool estimated = true;  // false: a timed operation's measured span
    bool bounded = false;   // a measured span that is only an upper bound: the passes differ (see add())
};

// The stream a call's work goes to: device, handle, and the thread for a per-thread default stream.
struct StreamId {
    int device = -1;
    uint64_t handle = 0;
    uint32_t tid = 0;        // per-thread default stream: its thread
    bool perThread = false;
    bool operator==(const StreamId& o) const
    {
        return device == o.device && handle == o.handle && tid == o.tid && perThread == o.perThread;
    }
};
StreamId streamIdOf(const wire::CallBody& c);

// Durations of untimed operations learnt from their timed siblings: a kernel from the same kernel (and
// grid where it has been seen), a copy or memset from those of its kind and size class (scaled to its
// bytes), anything else from the same entry point and call site.
class DurationModel {
public:
    void learn(const wire::CallBody& c, uint64_t gpuNs);
    // est, lo, hi; `known` false when nothing alike was ever timed (then all three are 0).
    Times guess(const wire::CallBody& c, bool* known) const;
    // Spans that are only upper bounds (a blocking copy on an idle stream), kept apart: what an untimed
    // blocking sibling took at most, when nothing alike was timed exactly.
    void learnBound(const wire::CallBody& c, uint64_t gpuNs);
    Times guessBound(const wire::CallBody& c, bool* known) const;

private:
    struct Samples {
        uint32_t n = 0;
        std::vector<double> ring;  // per-unit values (ns, or ns per byte for transfers), at most kRing
        mutable std::vector<double> sorted;
        mutable bool dirty = false;
        void add(double v, bool dropFirst);
        Times quantiles(double scale) const;
    };
    static constexpr size_t kRing = 32;
    using Map = std::unordered_map<uint64_t, Samples>;
    static void learnInto(Map& exact, Map& coarse, const wire::CallBody& c, uint64_t gpuNs);
    static Times guessFrom(const Map& exact, const Map& coarse, const wire::CallBody& c, bool* known);
    Map m_exact, m_coarse, m_boundExact, m_boundCoarse;
};

class DeviceTimeline {
public:
    using Sink = std::function<void(const Placement&)>;
    explicit DeviceTimeline(Sink sink) : m_sink(std::move(sink)) {}

    struct Result {
        bool deviceOp = false;
        bool foundEmpty = false;  // the op's stream had nothing queued: the device waited for the host
        bool known = true;        // an untimed op whose duration had no timed sibling to go by
    };
    // One call, in host time order. `spans` the call's GPU spans (null when untimed); `upperBound`
    // whether they are only upper bounds (a blocking copy on an idle stream).
    Result add(const wire::CallBody& c, TimelineRole role, bool deviceOp, bool blocking,
               const std::vector<wire::GpuSpanBody>* spans, bool upperBound);
    // Places what is still pending (the process ended).
    void finish();
    // No placement still to come can begin before this (UINT64_MAX when nothing is pending).
    uint64_t pendingFrom() const;
    // The provisional (estimated) placements still pending on `device` that overlap [begin, end):
    // other streams' work a wait overlapped before their own anchors settle it.
    void pendingWithin(int device, uint64_t begin, uint64_t end, std::vector<Interval>& out) const;
    // Per-stream identity of Placement::stream.
    const StreamId& streamOf(uint32_t index) const { return m_streams[index].id; }
    size_t streams() const { return m_streams.size(); }
    // When the work queued on the stream so far is estimated to end (0: a stream never seen): where a
    // stream-ordered allocation or free made now takes effect.
    uint64_t readyAt(const StreamId& id) const;
    // Ops whose duration no timed sibling told (placed with 0 in lo; in est with 0, or for a blocking call with
    // what upper-bound siblings took, else the whole call).
    uint64_t unknownOps() const { return m_unknown; }

private:
    struct Pending {
        uint64_t seq = 0;
        uint64_t serial = 0;  // the op's number on its stream
        Times start{}, end{};
        std::array<bool, 3> queued{};  // started when the previous op ended (not when submitted)
        bool unknown = false;          // no timed sibling gave it a duration
    };
    // Its part in the legacy default stream's rules: work on the legacy stream starts after the work
    // queued before it on the device's blocking streams (made without CU_STREAM_NON_BLOCKING, and
    // per-thread default streams), and theirs after the legacy stream's. Unknown: its making was not seen.
    enum class Order : uint8_t { Unknown, Legacy, Blocking, NonBlocking };
    struct Stream {
        StreamId id;
        Order order = Order::Unknown;
        Times ready{};      // where the last op ends, per pass
        Times waitUntil{};  // a waited-on event's completion
        // A wait for a value or a green context's event since the last measured op, after `heldAfter` ops: a
        // measured op that began late may have been held by it, not by the work before it (see add()).
        bool held = false;
        uint64_t heldAfter = 0;
        // A wait on an event whose completion is an estimate (its stream's work before the record was not
        // measured) since the last measured op: that op's late begin may be the other stream's doing.
        bool waitedOnEstimate = false;
        bool lastMeasured = false;  // `ready` is a measured op's end
        uint64_t serial = 0;
        std::deque<Pending> pending;
    };
    struct Event {
        uint32_t stream = 0;
        uint64_t serial = 0;  // ops of the stream before the record
        Times done{};
        bool estimated = false;  // done is the placement's estimate, not a measured end
    };
    // A stream waiting for a value no write seen so far wrote: its work from `serial` on waits for the next.
    struct ValueWaiter {
        uint32_t stream = 0;
        uint64_t serial = 0;
    };
    // The stream's work from `serial` on starts no earlier than `done`.
    void holdUntil(Stream& s, uint64_t serial, const Times& done);

    uint32_t streamIndex(const StreamId& id);
    // Where the work `s` must follow under the legacy stream's rules ends, per pass (0: none).
    Times legacyReady(const Stream& s) const;
    // What an anchor says of the time before t: nothing more than that the work ended by then; that the
    // stream was busy until t (Hard: an op held back, a query that found the work unfinished); or that
    // it may have been (Soft: a wait that returned late, which a preempted waiter does too).
    enum class Until : uint8_t { None, Soft, Hard };
    // Bounds the first `count` pending ops of a stream by t: they ended by t, and `until` says whether
    // they ran until then. `close` emits and drops them.
    void anchor(Stream& s, size_t count, uint64_t t, Until until, bool close);
    void anchorPass(Stream& s, size_t count, uint64_t t, bool busyUntil, int pass);
    void emit(const Stream& s, uint32_t index, const Pending& p);
    size_t prefixOf(const Stream& s, uint64_t serial) const;
    int64_t& latency(int device);

    Sink m_sink;
    std::vector<Stream> m_streams;
    std::unordered_map<uint64_t, std::vector<uint32_t>> m_byHandle;  // handle -> stream indices
    std::unordered_map<uint64_t, bool> m_madeNonBlocking;             // stream handle -> CU_STREAM_NON_BLOCKING
    // Devices with work seen on both the legacy stream and a blocking one (bit 0: legacy, bit 1: blocking):
    // only there do the legacy rules cost a look at the other streams.
    std::unordered_map<int, uint8_t> m_legacyKinds;
    std::unordered_map<uint64_t, Event> m_events;
    std::unordered_map<uint64_t, std::vector<uint32_t>> m_greenStreams;  // green context -> its streams
    std::unordered_map<uint64_t, Times> m_values;  // address -> when its last write-value completed
    std::unordered_map<uint64_t, std::vector<ValueWaiter>> m_valueWaiters;
    std::unordered_map<int, int64_t> m_latency;  // per device: call return to device start, least seen
    DurationModel m_model;
    uint64_t m_unknown = 0;
};

}  // namespace gpuspy::collect
