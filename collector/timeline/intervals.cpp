// collector/timeline/intervals.cpp: the interval union behind busy %, idle gaps and "GPU busy while blocked".
#include "collector/timeline/intervals.h"

#include <algorithm>

namespace gpuspy::collect {

void IntervalSet::add(uint64_t begin, uint64_t end)
{
    if (end <= begin) return;
    m_items.push_back({begin, end});
    m_dirty = true;
}

void IntervalSet::merge() const
{
    if (!m_dirty) return;
    std::sort(m_items.begin(), m_items.end(),
              [](const Interval& a, const Interval& b) { return a.begin < b.begin || (a.begin == b.begin && a.end < b.end); });
    size_t k = 0;  // in place: the merged prefix never overtakes the items still to read
    for (size_t i = 0; i < m_items.size(); ++i) {
        if (k && m_items[i].begin <= m_items[k - 1].end)
            m_items[k - 1].end = std::max(m_items[k - 1].end, m_items[i].end);
        else
            m_items[k++] = m_items[i];
    }
    m_items.resize(k);
    m_prefix.assign(m_items.size() + 1, 0);
    for (size_t k = 0; k < m_items.size(); ++k) m_prefix[k + 1] = m_prefix[k] + m_items[k].length();
    m_dirty = false;
}

const std::vector<Interval>& IntervalSet::merged() const
{
    merge();
    return m_items;
}

uint64_t IntervalSet::total() const
{
    merge();
    return m_prefix.empty() ? 0 : m_prefix.back();
}

uint64_t IntervalSet::overlap(uint64_t begin, uint64_t end) const
{
    merge();
    if (end <= begin || m_items.empty()) return 0;
    // First interval ending after `begin`; last interval starting before `end`.
    auto lo = std::upper_bound(m_items.begin(), m_items.end(), begin,
                               [](uint64_t t, const Interval& i) { return t < i.end; });
    auto hi = std::lower_bound(m_items.begin(), m_items.end(), end,
                               [](const Interval& i, uint64_t t) { return i.begin < t; });
    if (lo >= hi) return 0;
    const size_t a = size_t(lo - m_items.begin()), b = size_t(hi - m_items.begin());
    uint64_t sum = m_prefix[b] - m_prefix[a];
    // Trim the partial ends.
    if (m_items[a].begin < begin) sum -= begin - m_items[a].begin;
    if (m_items[b - 1].end > end) sum -= m_items[b - 1].end - end;
    return sum;
}

uint64_t IntervalSet::first() const
{
    merge();
    return m_items.empty() ? 0 : m_items.front().begin;
}

uint64_t IntervalSet::last() const
{
    merge();
    return m_items.empty() ? 0 : m_items.back().end;
}

std::vector<Interval> IntervalSet::gaps() const
{
    merge();
    std::vector<Interval> out;
    for (size_t k = 1; k < m_items.size(); ++k) out.push_back({m_items[k - 1].end, m_items[k].begin});
    return out;
}

IntervalSet IntervalSet::clipped(uint64_t begin, uint64_t end) const
{
    IntervalSet out;
    for (const Interval& i : merged()) out.add(std::max(i.begin, begin), std::min(i.end, end));
    return out;
}

std::vector<Interval> IntervalSet::takeEndingBy(uint64_t t)
{
    merge();
    size_t n = 0;
    while (n < m_items.size() && m_items[n].end <= t) ++n;
    std::vector<Interval> out(m_items.begin(), m_items.begin() + long(n));
    if (n) {
        m_items.erase(m_items.begin(), m_items.begin() + long(n));
        m_dirty = true;  // recompute the prefix sums
    }
    return out;
}

void IntervalMap::add(uint64_t begin, uint64_t end)
{
    if (end <= begin) return;
    auto it = m_items.upper_bound(begin);
    if (it != m_items.begin() && std::prev(it)->second >= begin) --it;
    while (it != m_items.end() && it->first <= end) {
        begin = std::min(begin, it->first);
        end = std::max(end, it->second);
        it = m_items.erase(it);
    }
    m_items.emplace_hint(it, begin, end);
}

uint64_t IntervalMap::overlap(uint64_t begin, uint64_t end) const
{
    uint64_t total = 0;
    auto it = m_items.upper_bound(begin);
    if (it != m_items.begin()) --it;
    for (; it != m_items.end() && it->first < end; ++it) {
        const uint64_t b = std::max(begin, it->first), e = std::min(end, it->second);
        if (e > b) total += e - b;
    }
    return total;
}

uint64_t IntervalMap::overlap(uint64_t begin, uint64_t end, std::vector<Interval> more) const
{
    if (more.empty()) return overlap(begin, end);
    auto it = m_items.upper_bound(begin);
    if (it != m_items.begin()) --it;
    for (; it != m_items.end() && it->first < end; ++it) more.push_back({it->first, it->second});
    std::sort(more.begin(), more.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    uint64_t total = 0, reached = begin;
    for (const Interval& i : more) {
        const uint64_t b = std::max({i.begin, reached, begin}), e = std::min(i.end, end);
        if (e > b) total += e - b;
        reached = std::max(reached, std::min(i.end, end));
    }
    return total;
}

std::vector<Interval> IntervalMap::takeEndingBy(uint64_t t)
{
    std::vector<Interval> out;
    auto it = m_items.begin();
    for (; it != m_items.end() && it->second <= t; ++it) out.push_back({it->first, it->second});
    m_items.erase(m_items.begin(), it);
    return out;
}

}  // namespace gpuspy::collect
