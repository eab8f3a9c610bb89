// collector/live/flight_recorder.h: `gpuspy collect --ring SECONDS`: the last SECONDS of each process's
// records kept in memory (and nothing written to disk), plus the definitions a capture of them needs,
// so that a snapshot can be written as a normal capture at any time.
//
// What is kept, per process: the stream header and every definition record (Process, ApiDef, KernelDef,
// StackDef, ModuleDef, ThreadDef, DeviceDef, StringDef; the latest Clock per device, the latest
// ThreadStats per thread, the latest Tally, the End record and at most kMaxNotices notices), outside the ring; and in the
// ring the event records (Call, GpuSpan, Nvtx) whose time lies within SECONDS of the process's newest
// event. The window counts back from each process's own newest event, not from the collector's clock:
// a process that went quiet (or crashed) keeps the last seconds before it did. Bounds: the ring's
// records of all processes together take at most maxBytes (the oldest of the fullest process go first);
// of the processes that have finished, the latest kMaxFinished are kept.
#pragma once

#include "collector/live/server.h"
#include "wire/codec.h"

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace gpuspy::collect {

class FlightRecorder : public StreamListener {
public:
    static constexpr size_t kMaxNotices = 64;
    static constexpr size_t kMaxFinished = 64;

    FlightRecorder(uint64_t windowNs, uint64_t maxBytes);

    // A new stream (its header is valid); `stream` is the server's stream index.
    void onHeader(uint32_t stream, const wire::StreamHeader& header) override;
    // One validated record of that stream.
    void onRecord(uint32_t stream, const wire::RecordView& record) override;
    // The stream ended (the connection closed).
    void onFinished(uint32_t stream) override;

    // One stream's bytes as a capture stores them (the header, the definitions, then the ring's events
    // in arrival order), for each process that has events in the ring, by stream index.
    struct StreamBytes {
        uint32_t stream = 0;
        std::vector<uint8_t> bytes;
        uint64_t calls = 0;
    };
    std::vector<StreamBytes> snapshot() const;
    // Forgets the events (not the definitions): the live view takes them a tick at a time.
    void clearEvents();

    uint64_t windowNs() const { return m_windowNs; }
    uint64_t maxBytes() const { return m_maxBytes; }
    uint64_t heldBytes() const { return m_held; }        // the ring's records, all processes
    uint64_t heldEvents() const;
    uint64_t trimmedEvents() const { return m_trimmed; }  // left the ring for their age
    uint64_t evictedEvents() const { return m_evicted; }  // left it for the byte bound
    size_t processes() const { return m_procs.size(); }

private:
    struct Proc {
        wire::StreamHeader header{};
        std::vector<uint8_t> defs;                         // definition records, encoded, in arrival order
        std::map<int32_t, std::vector<uint8_t>> clocks;    // device -> latest Clock record
        std::map<uint32_t, std::vector<uint8_t>> stats;    // tid -> latest ThreadStats record
        std::vector<uint8_t> tally;  // the latest Tally record
        std::vector<uint8_t> end;
        size_t notices = 0;
        // The ring, packed: per event its time, (type << 32 | body size), then the body's 8-byte words
        // (record bodies are a multiple of 8 long); 16 bytes over the record's own size.
        std::deque<uint64_t> words;
        uint64_t events = 0;
        uint64_t newestNs = 0;
        uint64_t bytes = 0;
        bool finished = false;
        uint64_t finishedOrder = 0;
    };

    static void append(std::vector<uint8_t>& out, const wire::RecordView& v);
    void popFront(Proc& p, uint64_t& counter);
    void trimAge(Proc& p);
    void trimBytes();
    void dropOldFinished();

    uint64_t m_windowNs, m_maxBytes;
    std::map<uint32_t, Proc> m_procs;
    uint64_t m_held = 0, m_trimmed = 0, m_evicted = 0, m_finishedCount = 0;
};

}  // namespace gpuspy::collect
