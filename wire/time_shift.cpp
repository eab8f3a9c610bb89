// wire/time_shift.cpp: which fields of each record are host CLOCK_MONOTONIC times, and moving them by a
// constant: one capture's clock put on another's (collector), a test's known offset (shim). No I/O, no
// allocation (the shim's drain thread calls it).
#include "codec.h"

#include <cstddef>

namespace gpuspy::wire {
namespace {

template <class Body>
void shiftAt(uint8_t* body, uint32_t size, size_t offset, int64_t delta, bool keepZero = true)
{
    if (offset + 8 > size || offset + 8 > sizeof(Body)) return;
    uint64_t v;
    std::memcpy(&v, body + offset, 8);
    if (keepZero && v == 0) return;
    v += uint64_t(delta);
    std::memcpy(body + offset, &v, 8);
}

}  // namespace

void shiftRecordTimes(RecordType type, uint8_t* body, uint32_t size, int64_t d)
{
    if (d == 0) return;
    switch (type) {
    case RecordType::Process:
        shiftAt<ProcessBody>(body, size, offsetof(ProcessBody, startMonotonicNs), d);
        break;
    case RecordType::Call:
        shiftAt<CallBody>(body, size, offsetof(CallBody, beginNs), d);
        shiftAt<CallBody>(body, size, offsetof(CallBody, endNs), d);
        break;
    case RecordType::GpuSpan:
        shiftAt<GpuSpanBody>(body, size, offsetof(GpuSpanBody, beginNs), d);
        shiftAt<GpuSpanBody>(body, size, offsetof(GpuSpanBody, endNs), d);
        break;
    case RecordType::Nvtx:
        shiftAt<NvtxBody>(body, size, offsetof(NvtxBody, timeNs), d);
        break;
    case RecordType::Clock:  // host_ns = gpu_event_ns + offsetNs: the host side moves
        shiftAt<ClockBody>(body, size, offsetof(ClockBody, offsetNs), d, false);
        break;
    case RecordType::End:
        shiftAt<EndBody>(body, size, offsetof(EndBody, endNs), d);
        break;
    case RecordType::Window:
        shiftAt<WindowBody>(body, size, offsetof(WindowBody, timeNs), d);
        break;
    case RecordType::Tally:
        shiftAt<TallyBody>(body, size, offsetof(TallyBody, timeNs), d);
        break;
    case RecordType::Collective:
        shiftAt<CollectiveBody>(body, size, offsetof(CollectiveBody, startNs), d);
        shiftAt<CollectiveBody>(body, size, offsetof(CollectiveBody, apiNs), d);
        shiftAt<CollectiveBody>(body, size, offsetof(CollectiveBody, launchNs), d);
        break;
    case RecordType::Identity:
        shiftAt<IdentityBody>(body, size, offsetof(IdentityBody, monotonicNs), d);
        break;
    default:  // definitions, ThreadStats, Notice, Symbol, DeviceInfo: no times
        break;
    }
}

void shiftHeaderTime(StreamHeader& h, int64_t d)
{
    if (h.startMonotonicNs) h.startMonotonicNs += uint64_t(d);
}

bool shiftStreamTimes(uint8_t* buf, size_t n, int64_t d)
{
    size_t at = 0;
    while (at + sizeof(RecordHeader) <= n) {
        RecordHeader h;
        std::memcpy(&h, buf + at, sizeof h);
        if (h.size > n - at - sizeof h) return false;
        shiftRecordTimes(RecordType(h.type), buf + at + sizeof h, h.size, d);
        at += sizeof h + h.size;
    }
    return at == n;
}

}  // namespace gpuspy::wire
