// collector/flight_recorder.cpp: the per-process ring of recent events and the definitions kept beside it.
#include "collector/flight_recorder.h"

#include <cstring>

namespace gpuspy::collect {

using namespace wire;

static_assert(sizeof(CallBody) <= 128 && sizeof(GpuSpanBody) <= 128 && sizeof(NvtxBody) <= 128,
              "an event body must fit FlightRecorder::Event");

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
    case RecordType::Notice:
        if (p.notices++ < kMaxNotices) append(p.defs, v);
        return;
    default:
        append(p.defs, v);  // a definition: kept for as long as the process is
        return;
    }
    if (v.size > kMaxFixedBody) return;  // not a fixed event body of this format version
    Event e;
    e.timeNs = t;
    e.type = uint16_t(v.type);
    e.size = uint16_t(v.size);
    std::memcpy(e.body, v.body, v.size);
    p.events.push_back(e);
    p.bytes += sizeof(Event);
    m_held += sizeof(Event);
    if (t > p.newestNs) p.newestNs = t;
    trimAge(p);
    if (m_held > m_maxBytes) trimBytes();
}

void FlightRecorder::trimAge(Proc& p)
{
    // Arrival order is nearly time order (per thread exactly; GPU spans come a little later), so the
    // front is the oldest but for a few records, which leave a little later.
    while (!p.events.empty() && p.events.front().timeNs + m_windowNs < p.newestNs) {
        p.events.pop_front();
        p.bytes -= sizeof(Event);
        m_held -= sizeof(Event);
        ++m_trimmed;
    }
}

void FlightRecorder::trimBytes()
{
    while (m_held > m_maxBytes) {
        Proc* fullest = nullptr;
        for (auto& [stream, p] : m_procs)
            if (!fullest || p.bytes > fullest->bytes) fullest = &p;
        if (!fullest || fullest->events.empty()) return;
        // A deque frees its blocks as they empty: drop a batch, not one record per scan.
        for (int i = 0; i < 1024 && !fullest->events.empty() && m_held > m_maxBytes; ++i) {
            fullest->events.pop_front();
            fullest->bytes -= sizeof(Event);
            m_held -= sizeof(Event);
            ++m_evicted;
        }
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
        std::deque<Event>().swap(p.events);
        p.bytes = 0;
    }
    m_held = 0;
}

uint64_t FlightRecorder::heldEvents() const
{
    uint64_t n = 0;
    for (const auto& [stream, p] : m_procs) n += p.events.size();
    return n;
}

std::vector<FlightRecorder::StreamBytes> FlightRecorder::snapshot() const
{
    std::vector<StreamBytes> out;
    for (const auto& [stream, p] : m_procs) {
        if (p.events.empty()) continue;
        StreamBytes s;
        s.stream = stream;
        std::vector<uint8_t>& b = s.bytes;
        b.resize(sizeof(StreamHeader));
        std::memcpy(b.data(), &p.header, sizeof(StreamHeader));
        b.insert(b.end(), p.defs.begin(), p.defs.end());
        for (const auto& [device, rec] : p.clocks) b.insert(b.end(), rec.begin(), rec.end());
        for (const Event& e : p.events) {
            RecordHeader h{};
            h.type = e.type;
            h.size = e.size;
            const size_t at = b.size();
            b.resize(at + sizeof h + e.size);
            std::memcpy(b.data() + at, &h, sizeof h);
            std::memcpy(b.data() + at + sizeof h, e.body, e.size);
            s.calls += e.type == uint16_t(RecordType::Call);
        }
        for (const auto& [tid, rec] : p.stats) b.insert(b.end(), rec.begin(), rec.end());
        b.insert(b.end(), p.end.begin(), p.end.end());
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace gpuspy::collect
