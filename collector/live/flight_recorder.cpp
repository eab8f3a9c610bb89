// collector/live/flight_recorder.cpp: the per-process ring of recent events and the definitions kept beside it.
#include "collector/live/flight_recorder.h"

#include <cstddef>
#include <cstring>

namespace gpuspy::collect {

using namespace wire;

static_assert(sizeof(CallBody) % 8 == 0 && sizeof(GpuSpanBody) % 8 == 0 && sizeof(NvtxBody) % 8 == 0,
              "the ring stores event bodies as 8-byte words");

FlightRecorder::FlightRecorder(uint64_t windowNs, uint64_t maxBytes) : m_windowNs(windowNs), m_maxBytes(maxBytes) {}

void FlightRecorder::append(std::vector<uint8_t>& out, const RecordView& v)
{
    RecordHeader h{};
    h.type = uint16_t(v.type);
    h.size = v.size;
    const size_t at = out.size();
    out.resize(at + sizeof h + v.size);
    std::memcpy(out.data() + at, &h, sizeof h);
    std::memcpy(out.data() + at + sizeof h, v.body, v.size);
}

void FlightRecorder::onHeader(uint32_t stream, const StreamHeader& header)
{
    Proc& p = m_procs[stream];
    p.header = header;
    p.header.headerSize = sizeof(StreamHeader);
}

void FlightRecorder::onRecord(uint32_t stream, const RecordView& v)
{
    auto it = m_procs.find(stream);
    if (it == m_procs.end()) return;
    Proc& p = it->second;
    uint64_t t = 0;
    switch (v.type) {
    case RecordType::Call:
        t = v.as<CallBody>().endNs;
        break;
    case RecordType::GpuSpan:
        t = v.as<GpuSpanBody>().endNs;
        break;
    case RecordType::Nvtx:
        t = v.as<NvtxBody>().timeNs;
        break;
    case RecordType::Clock:
        p.clocks[v.as<ClockBody>().device].clear();
        append(p.clocks[v.as<ClockBody>().device], v);
        return;
    case RecordType::ThreadStats:
        p.stats[v.as<ThreadStatsBody>().tid].clear();
        append(p.stats[v.as<ThreadStatsBody>().tid], v);
        return;
    case RecordType::End:
        p.end.clear();
        append(p.end, v);
        return;
    case RecordType::Tally:
        p.tally.clear();  // each supersedes the last: one a second would otherwise pile up in defs
        append(p.tally, v);
        return;
    case RecordType::Notice:
        if (p.notices++ < kMaxNotices) append(p.defs, v);
        return;
    default:
        append(p.defs, v);  // a definition: kept for as long as the process is
        return;
    }
    if (v.size % 8) return;  // the decoder guarantees it; the packing below relies on it
    p.words.push_back(t);
    p.words.push_back(uint64_t(v.type) << 32 | v.size);
    for (uint32_t off = 0; off < v.size; off += 8) {
        uint64_t w;
        std::memcpy(&w, v.body + off, 8);
        p.words.push_back(w);
    }
    ++p.events;
    p.bytes += 16 + v.size;
    m_held += 16 + v.size;
    if (t > p.newestNs) p.newestNs = t;
    trimAge(p);
    if (m_held > m_maxBytes) trimBytes();
}

void FlightRecorder::trimAge(Proc& p)
{
    // Arrival order is nearly time order (per thread exactly; GPU spans come a little later), so the
    // front is the oldest but for a few records, which leave a little later.
    while (!p.words.empty() && p.words.front() + m_windowNs < p.newestNs) popFront(p, m_trimmed);
}

void FlightRecorder::popFront(Proc& p, uint64_t& counter)
{
    const uint64_t size = p.words[1] & 0xffffffffu;
    p.words.erase(p.words.begin(), p.words.begin() + std::ptrdiff_t(2 + size / 8));
    --p.events;
    p.bytes -= 16 + size;
    m_held -= 16 + size;
    ++counter;
}

void FlightRecorder::trimBytes()
{
    while (m_held > m_maxBytes) {
        Proc* fullest = nullptr;
        for (auto& [stream, p] : m_procs)
            if (!fullest || p.bytes > fullest->bytes) fullest = &p;
        if (!fullest || fullest->words.empty()) return;
        // Drop a batch, not one record per scan of the processes.
        for (int i = 0; i < 1024 && !fullest->words.empty() && m_held > m_maxBytes; ++i) popFront(*fullest, m_evicted);
    }
}

void FlightRecorder::onFinished(uint32_t stream)
{
    auto it = m_procs.find(stream);
    if (it == m_procs.end()) return;
    it->second.finished = true;
    it->second.finishedOrder = ++m_finishedCount;
    dropOldFinished();
}

void FlightRecorder::dropOldFinished()
{
    size_t finished = 0;
    for (auto& [stream, p] : m_procs) finished += p.finished;
    while (finished > kMaxFinished) {
        auto oldest = m_procs.end();
        for (auto it = m_procs.begin(); it != m_procs.end(); ++it)
            if (it->second.finished && (oldest == m_procs.end() || it->second.finishedOrder < oldest->second.finishedOrder))
                oldest = it;
        m_held -= oldest->second.bytes;
        m_procs.erase(oldest);
        --finished;
    }
}

void FlightRecorder::clearEvents()
{
    for (auto& [stream, p] : m_procs) {
        std::deque<uint64_t>().swap(p.words);
        p.events = 0;
        p.bytes = 0;
    }
    m_held = 0;
}

uint64_t FlightRecorder::heldEvents() const
{
    uint64_t n = 0;
    for (const auto& [stream, p] : m_procs) n += p.events;
    return n;
}

std::vector<FlightRecorder::StreamBytes> FlightRecorder::snapshot() const
{
    std::vector<StreamBytes> out;
    for (const auto& [stream, p] : m_procs) {
        if (p.words.empty()) continue;
        StreamBytes s;
        s.stream = stream;
        std::vector<uint8_t>& b = s.bytes;
        b.resize(sizeof(StreamHeader));
        std::memcpy(b.data(), &p.header, sizeof(StreamHeader));
        b.insert(b.end(), p.defs.begin(), p.defs.end());
        for (const auto& [device, rec] : p.clocks) b.insert(b.end(), rec.begin(), rec.end());
        for (size_t i = 0; i < p.words.size();) {
            RecordHeader h{};
            h.type = uint16_t(p.words[i + 1] >> 32);
            h.size = uint32_t(p.words[i + 1]);
            i += 2;
            const size_t at = b.size();
            b.resize(at + sizeof h + h.size);
            std::memcpy(b.data() + at, &h, sizeof h);
            for (uint32_t off = 0; off < h.size; off += 8, ++i) std::memcpy(b.data() + at + sizeof h + off, &p.words[i], 8);
            s.calls += h.type == uint16_t(RecordType::Call);
        }
        for (const auto& [tid, rec] : p.stats) b.insert(b.end(), rec.begin(), rec.end());
        b.insert(b.end(), p.tally.begin(), p.tally.end());
        b.insert(b.end(), p.end.begin(), p.end.end());
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace gpuspy::collect
