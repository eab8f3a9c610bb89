// collector/timeline/memory_timeline.h: what holds memory and when, for one memory space of one process
// (a device's memory, managed memory, pinned host memory): every allocation and release in host time
// order, the bytes in use over time, the peak and who held it then, what was never released, and
// what was held when an allocation failed. Owners are opaque keys (the analysis passes raw call
// sites). Pure: no I/O (collector/README.md, "GPU memory").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuspy::collect {

class MemoryTimeline {
public:
    // What one owner holds at an instant.
    struct Holding {
        uint32_t owner = 0;
        uint64_t bytes = 0, allocations = 0;
    };
    // What one owner still held at the end, and when its live allocations were made.
    struct Live : Holding {
        uint64_t firstNs = 0, lastNs = 0;
    };
    struct Failure {
        uint64_t atNs = 0, bytes = 0;
        int32_t result = 0;
        uint32_t owner = 0;
        uint16_t api = 0;
        uint64_t inUse = 0;
        uint64_t poolUnused = 0;       // reserved by stream-ordered pools and not in use (a floor)
        std::vector<Holding> holders;  // largest first
    };

    static constexpr size_t kMaxSeries = 4096;   // points kept of the in-use series by default (pairs merged beyond)
    explicit MemoryTimeline(size_t maxSeries = kMaxSeries) : m_maxSeries(std::max<size_t>(maxSeries, 4)) {}
    static constexpr size_t kMaxFailures = 16;
    static constexpr size_t kMaxLive = size_t(1) << 20;  // allocations tracked (beyond: counted, not held)

    // `key`: the address or handle allocated; a key already live is released first (its memory was
    // reused without a release the capture saw).
    void allocate(uint64_t key, uint64_t bytes, uint64_t atNs, uint32_t owner);
    // false when the key was never seen allocated (memory allocated before the capture began).
    bool release(uint64_t key, uint64_t atNs);
    bool holds(uint64_t key) const { return m_blocks.count(key) != 0; }
    void failed(uint64_t bytes, uint64_t atNs, uint32_t owner, int32_t result, uint16_t api);
    // What stream-ordered pools keep reserved beyond what is in use (a floor, PoolReserve): from the first
    // call, the space also keeps `held()`, the bytes in use and so kept, over time.
    // `point`: a point of its own; else it shows with the next allocate or release (one change of both).
    void setPoolUnused(uint64_t bytes, uint64_t atNs, bool point = true);

    uint64_t allocations() const { return m_allocations; }
    uint64_t releases() const { return m_releases; }
    uint64_t unknownReleases() const { return m_unknownReleases; }
    uint64_t allocatedBytes() const { return m_allocatedBytes; }
    uint64_t untracked() const { return m_untracked; }  // allocations past kMaxLive
    uint64_t inUse() const { return m_inUse; }
    uint64_t peak() const { return m_peak; }
    uint64_t peakNs() const { return m_peakNs; }
    // When the peak ended: the first release after it (0: still held at the end).
    uint64_t peakEndNs() const { return m_peakStale ? 0 : m_peakEndNs; }
    std::vector<Holding> atPeak() const { return m_peakStale ? holders() : m_atPeak; }
    const std::vector<Failure>& failures() const { return m_failures; }
    uint64_t failureCount() const { return m_failureCount; }
    const std::vector<std::pair<uint64_t, uint64_t>>& series() const { return m_series; }  // (ns, bytes in use)
    bool pooled() const { return m_pooled; }
    uint64_t poolUnused() const { return m_poolUnused; }
    uint64_t peakHeld() const { return m_peakHeld; }
    uint64_t peakHeldNs() const { return m_peakHeldNs; }
    // (ns, bytes in use plus what pools keep unused): empty unless pooled()
    const std::vector<std::pair<uint64_t, uint64_t>>& held() const { return m_held; }
    // What is still held, by owner, largest first.
    std::vector<Live> live() const;

private:
    struct Block {
        uint64_t bytes = 0, atNs = 0;
        uint32_t owner = 0;
    };
    struct Owner {
        uint64_t bytes = 0, allocations = 0;
    };
    std::vector<Holding> holders() const;
    void point(uint64_t atNs);
    void heldPoint(uint64_t atNs);

    std::unordered_map<uint64_t, Block> m_blocks;
    std::unordered_map<uint32_t, Owner> m_owners;  // live bytes per owner
    uint64_t m_allocations = 0, m_releases = 0, m_unknownReleases = 0, m_allocatedBytes = 0, m_untracked = 0;
    uint64_t m_inUse = 0, m_peak = 0, m_peakNs = 0, m_peakEndNs = 0;
    std::vector<Holding> m_atPeak;
    bool m_peakStale = false;  // m_atPeak is to be taken at the next change (the peak still holds)
    std::vector<Failure> m_failures;
    uint64_t m_failureCount = 0;
    std::vector<std::pair<uint64_t, uint64_t>> m_series;
    bool m_pooled = false;
    uint64_t m_poolUnused = 0, m_peakHeld = 0, m_peakHeldNs = 0;
    std::vector<std::pair<uint64_t, uint64_t>> m_held;
    size_t m_maxSeries;
};

}  // namespace gpuspy::collect
