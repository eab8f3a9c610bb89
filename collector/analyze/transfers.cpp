// collector/analyze/transfers.cpp: copies and memsets grouped by direction x host memory x sync/async:
// counts, bytes, GPU and host time, achieved bandwidth, size buckets and call sites.
#include "collector/analyze/internal.h"

#include <algorithm>
#include <tuple>

namespace gpuspy::collect::detail {

namespace {

const char* hostMemoryName(wire::MemKind m)
{
    switch (m) {
    case wire::MemKind::Pageable: return "pageable";
    case wire::MemKind::Pinned: return "pinned";
    case wire::MemKind::Managed: return "managed";
    case wire::MemKind::Device:
    case wire::MemKind::Array: return "device";
    case wire::MemKind::Unknown: break;
    }
    return "unknown";
}

}  // namespace

// The host side of a transfer decides how it moves: HtoD reads host memory, DtoH writes it; device to
// device and peer copies involve no host memory; a memset's is its destination's.
std::string transferHostMemory(const wire::TransferArgs& t)
{
    switch (t.direction) {
    case wire::Direction::HtoD: return hostMemoryName(t.srcMem);
    case wire::Direction::DtoH: return hostMemoryName(t.dstMem);
    case wire::Direction::DtoD:
    case wire::Direction::PtoP: return "device";
    case wire::Direction::Memset: return hostMemoryName(t.dstMem);
    case wire::Direction::HtoH: return hostMemoryName(t.srcMem);
    case wire::Direction::Prefetch: return "managed";
    case wire::Direction::Unknown: break;
    }
    return t.srcMem == wire::MemKind::Pageable || t.dstMem == wire::MemKind::Pageable ? "pageable" : "unknown";
}

// A transfer that moved data: a successful copy or memset, not recorded into a graph capture.
bool isCountedTransfer(const wire::CallBody& c)
{
    return c.category == wire::Category::Transfer && succeeded(c) && !hasFlag(c, wire::kCallCapturing);
}

// The one place that decides how far a GPU span can be trusted (see kIdleStreamSlackNs). A call that
// blocked submitted its work some time after it began; its begin event, on a stream with nothing
// queued, completed at once (no later than the slack after the call's begin, which comes after the
// event's record), so the span counts the driver's host time before the submission as device time,
// and it ends at the call's return. Only when queued work held the begin event back past the slack
// did the work start with it.
bool gpuSpanIsUpperBound(const wire::CallBody& c, const wire::GpuSpanBody& s)
{
    const bool blocked = hasFlag(c, wire::kCallImplicitSync) && hasFlag(c, wire::kCallDeviceWork);
    return blocked && s.beginNs <= c.beginNs + kIdleStreamSlackNs;
}

TransferAcc& transferAccOf(Context& cx, const wire::TransferArgs& t, const char* mode)
{
    std::string memory = transferHostMemory(t);
    TransferAcc& a = cx.transfers[{int(t.direction), memory, mode}];
    TransferRow& row = a.row;
    if (row.buckets.empty()) {
        row.direction = wire::directionName(t.direction);
        row.hostMemory = std::move(memory);
        row.mode = mode;
        row.buckets = {{"<=64KiB", 64u << 10, 0, 0}, {"<=1MiB", 1u << 20, 0, 0}, {">1MiB", 0, 0, 0}};
    }
    return a;
}

void addToBucket(TransferRow& row, uint64_t bytes)
{
    SizeBucket& b = bytes <= row.buckets[0].maxBytes ? row.buckets[0] : bytes <= row.buckets[1].maxBytes ? row.buckets[1] : row.buckets[2];
    ++b.count;
    b.bytes += bytes;
}

void addTransfer(Context& cx, const ProcView&, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    if (!isCountedTransfer(c)) return;
    const wire::TransferArgs& t = c.args.transfer;
    const bool async = hasFlag(c, wire::kCallAsync);
    const uint32_t code = uint32_t(t.direction) | uint32_t(t.srcMem) << 8 | uint32_t(t.dstMem) << 16 | uint32_t(async) << 24;
    TransferAcc*& slot = cx.transferOf[code];
    if (!slot) slot = &transferAccOf(cx, t, async ? "async" : "sync");
    TransferAcc& a = *slot;
    TransferRow& row = a.row;
    ++row.count;
    row.bytes += t.bytes;
    row.hostNs += hostNs(c);
    a.host.add(hostNs(c));
    if (ci.timed) {
        ++row.timedCount;
        row.timedBytes += t.bytes;
        row.gpuNs += ci.gpuNs;
        if (ci.upperBound) {
            ++row.upperBoundCount;
            row.upperBoundGpuNs += ci.boundGpuNs;
        }
    }
    addToBucket(row, t.bytes);
    if (std::find(row.apis.begin(), row.apis.end(), ci.api->name) == row.apis.end()) row.apis.push_back(ci.api->name);
    a.sites[ci.rawSite] += hostNs(c);
}

void finishTransfers(Context& cx, Report& r)
{
    for (auto& [key, a] : cx.transfers) {
        TransferRow& row = a.row;
        // Bytes per ns is GB/s. GPU time measures the copy itself (or bounds it from above: then this is
        // a lower bound); host time also counts the waiting.
        if (row.gpuNs) {
            row.gbps = double(row.timedBytes) / double(row.gpuNs);
            row.gbpsBasis = "gpu";
        } else if (row.hostNs) {
            row.gbps = double(row.bytes) / double(row.hostNs);
            row.gbpsBasis = "host";
        } else if (row.graphGpuNs) {
            row.gbps = double(row.bytes) / double(row.graphGpuNs);  // graph nodes: their estimated share
            row.gbpsBasis = "graph_estimate";
        }
        row.host = a.host.stats();
        row.callsites = topSites(namedSites(cx, a.sites), cx.options->top);
        r.transfers.push_back(std::move(row));
    }
    std::stable_sort(r.transfers.begin(), r.transfers.end(),
                     [](const TransferRow& a, const TransferRow& b) { return a.hostNs > b.hostNs; });
}

}  // namespace gpuspy::collect::detail
