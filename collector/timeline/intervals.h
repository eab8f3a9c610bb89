// collector/timeline/intervals.h: sets of time intervals (unions, gaps, overlaps) for the busy, idle and blocked
// arithmetic of the analysis. Half-open [begin, end) in nanoseconds on the host clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace gpuspy::collect {

struct Interval {
    uint64_t begin = 0, end = 0;
    uint64_t length() const { return end > begin ? end - begin : 0; }
};

// A union of intervals: add any number, then query. Queries merge lazily, so adding after a query
// is allowed (it costs another merge).
class IntervalSet {
public:
    void add(uint64_t begin, uint64_t end);
    void add(const Interval& i) { add(i.begin, i.end); }

    // The disjoint, sorted intervals of the union.
    const std::vector<Interval>& merged() const;
    bool empty() const { return merged().empty(); }
    uint64_t total() const;                                 // length of the union
    uint64_t overlap(uint64_t begin, uint64_t end) const;   // length of the union inside [begin, end)
    uint64_t first() const;                                 // begin of the earliest interval (0 if empty)
    uint64_t last() const;                                  // end of the latest interval (0 if empty)

    // The holes between consecutive merged intervals (not before the first or after the last).
    std::vector<Interval> gaps() const;
    // The union clipped to [begin, end).
    IntervalSet clipped(uint64_t begin, uint64_t end) const;
    // Removes the merged intervals that end at or before t and returns them in order (a streaming
    // reader keeps only the intervals that later ones may still join).
    std::vector<Interval> takeEndingBy(uint64_t t);
    size_t size() const { return merged().size(); }  // disjoint intervals held

private:
    void merge() const;
    mutable std::vector<Interval> m_items;
    mutable std::vector<uint64_t> m_prefix;  // m_prefix[i] = total length of merged items before i
    mutable bool m_dirty = false;
};

// A union of intervals kept merged as they are added (a balanced tree of disjoint intervals), for a
// set that is queried between every few additions: adding and asking for the overlap with a range
// cost O(log n) plus the intervals touched, where IntervalSet would sort everything again.
class IntervalMap {
public:
    void add(uint64_t begin, uint64_t end);
    uint64_t overlap(uint64_t begin, uint64_t end) const;
    // The same, of the union with `more` (intervals in any order, overlapping or not).
    uint64_t overlap(uint64_t begin, uint64_t end, std::vector<Interval> more) const;
    // Removes the intervals that end at or before t and returns them in order.
    std::vector<Interval> takeEndingBy(uint64_t t);
    size_t size() const { return m_items.size(); }

private:
    std::map<uint64_t, uint64_t> m_items;  // begin -> end, disjoint and not touching
};

}  // namespace gpuspy::collect
