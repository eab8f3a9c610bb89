// collector/live/live_stats.h: what a running collector knows of its processes right now, for `gpuspy top`
// and the Prometheus metrics. The records that arrived since the last tick (about a second) are run
// through the same analysis as `gpuspy report` (StreamAnalyzer, its device timeline and findings), one
// process at a time; each tick's figures are rates over that interval and add to running totals.
// Every record is analyzed once, in the tick it arrived in, so the totals count each call exactly once.
#pragma once

#include "collector/live/flight_recorder.h"
#include "collector/live/server.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpuspy::collect {

struct LiveSymbols;

// One process's figures: the last tick's (rates over intervalNs) and the totals since it connected.
struct LiveProcess {
    uint32_t pid = 0;
    std::string command;
    bool connected = true;
    uint64_t intervalNs = 0;  // the last tick's length
    struct Device {
        int id = 0;
        std::string name;
        uint64_t busyNs = 0;  // in the last tick, from the device timeline
        double busyRatio = 0; // busyNs / intervalNs (at most 1)
        std::string busyBasis;
        std::string uuid, pciBusId;  // as the shim's DeviceInfo gave them; empty: unknown
        uint64_t launches = 0, launchesTotal = 0;  // last tick, total (the calls' device)
        uint64_t pendingLaunches = 0;              // since the last tick
    };
    std::vector<Device> devices;
    uint64_t launches = 0, launchesTotal = 0;
    struct Transfer {  // by direction, host memory kind, sync/async
        std::string direction, hostMemory, mode;
        uint64_t bytes = 0, hostNs = 0, gpuNs = 0;                 // last tick
        uint64_t bytesTotal = 0, hostNsTotal = 0, countTotal = 0;  // totals
    };
    std::map<std::string, Transfer> transfers;  // key "direction/hostMemory/mode"
    struct Sync {
        uint64_t blockedNs = 0, blockedNsTotal = 0, countTotal = 0;
    };
    std::map<std::string, Sync> syncs;  // by sync kind (context, stream, event, query, copy, ...)
    struct Site {
        std::string label, category;
        uint64_t count = 0, ns = 0;
    };
    std::vector<Site> topSites;  // the last tick's, by host time
    struct Finding {
        std::string severity, message;
        uint64_t ticks = 0;  // ticks it was found in
        uint64_t lastTick = 0;
    };
    std::map<std::string, Finding> findings;  // by rule, since the process connected
    uint64_t droppedRecords = 0, overheadNs = 0, calls = 0;  // the shim's own counts, totals
    // From the shim's Tally (about once a second) and its Window records: whether calls are recorded
    // now (a `ctl stop` pauses them) and the calls it did not record, by category: the launches and
    // copies of a paused process are counted here, not in the figures above.
    bool recording = true;
    std::map<std::string, uint64_t> notRecorded;  // category -> calls since the process started
    struct Kernel {
        uint64_t launches = 0, gpuNs = 0;  // totals; GPU time scaled to every launch where some were untimed
    };
    std::map<std::string, Kernel> kernels;  // by name, template arguments folded
};

class LiveStats : public StreamListener {
public:
    // `also`: a listener told of everything too (the flight recorder), or null.
    explicit LiveStats(StreamListener* also = nullptr);
    ~LiveStats() override;

    void onHeader(uint32_t stream, const wire::StreamHeader& header) override;
    void onRecord(uint32_t stream, const wire::RecordView& record) override;
    void onFinished(uint32_t stream) override;

    // While nobody looks (no metrics endpoint, no `top` lately) the events are not kept at all, only
    // the definitions: the collector's memory is then what it was without the live view.
    void setWatched(bool watched) { m_watched = watched; }

    // Analyzes what arrived since the last tick (or, !analyze, only drops it: nobody is looking);
    // `nowNs` is CLOCK_MONOTONIC.
    void tick(uint64_t nowNs, bool analyze = true);
    uint64_t ticks() const { return m_ticks; }
    uint64_t lastTickNs() const { return m_lastTickNs; }
    const std::map<uint32_t, LiveProcess>& processes() const { return m_procs; }  // by stream
    uint64_t evictedRecords() const { return m_pending.evictedEvents(); }

    // What `gpuspy top` shows: one block per process, the busiest first.
    std::string topText(size_t width) const;

private:
    void analyzeStream(const FlightRecorder::StreamBytes& s, LiveProcess& lp);

    StreamListener* m_also;
    std::unique_ptr<LiveSymbols> m_symbols;  // each address looked up once per process
    std::map<uint32_t, bool> m_ended;        // stream -> its last records were analyzed: forget it
    FlightRecorder m_pending;  // the records since the last tick, and every process's definitions
    std::map<uint32_t, LiveProcess> m_procs;
    uint64_t m_ticks = 0, m_lastTickNs = 0;
    bool m_watched = false;
};

}  // namespace gpuspy::collect
