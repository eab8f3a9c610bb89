// collector/analyze_transfers.cpp: copies and memsets grouped by direction x host memory x sync/async:
// counts, bytes, GPU and host time, achieved bandwidth, size buckets and call sites.
#include "collector/analyze_internal.h"

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

void analyzeTransfers(Context& cx, Report& r)
{
    using Key = std::tuple<int, std::string, std::string>;  // direction, host memory, mode
    struct Acc {
        TransferRow row;
        std::vector<uint64_t> host;
        std::map<int, uint64_t> sites;
    };
    std::map<Key, Acc> groups;
    for (const ProcView& pv : cx.procs)
        for (size_t i = 0; i < pv.calls.size(); ++i) {
            const wire::CallBody& c = *pv.calls[i];
            if (!isCountedTransfer(c)) continue;
            const wire::TransferArgs& t = c.args.transfer;
            const std::string mode = hasFlag(c, wire::kCallAsync) ? "async" : "sync";
            Acc& a = groups[Key{int(t.direction), transferHostMemory(t), mode}];
            TransferRow& row = a.row;
            if (row.buckets.empty()) {
                row.direction = wire::directionName(t.direction);
                row.hostMemory = transferHostMemory(t);
                row.mode = mode;
                row.buckets = {{"<=64KiB", 64u << 10, 0, 0}, {"<=1MiB", 1u << 20, 0, 0}, {">1MiB", 0, 0, 0}};
            }
            ++row.count;
            row.bytes += t.bytes;
            row.hostNs += hostNs(c);
            a.host.push_back(hostNs(c));
            if (pv.timed(c)) {
                ++row.timedCount;
                row.timedBytes += t.bytes;
                row.gpuNs += pv.gpuNs(c);
            }
            SizeBucket& b = t.bytes <= row.buckets[0].maxBytes ? row.buckets[0]
                            : t.bytes <= row.buckets[1].maxBytes ? row.buckets[1] : row.buckets[2];
            ++b.count;
            b.bytes += t.bytes;
            const std::string api = pv.apiName(c);
            if (std::find(row.apis.begin(), row.apis.end(), api) == row.apis.end()) row.apis.push_back(api);
            a.sites[pv.site[i]] += hostNs(c);
        }
    for (auto& [key, a] : groups) {
        TransferRow& row = a.row;
        // Bytes per ns is GB/s. GPU time measures the copy itself; host time also counts the waiting.
        if (row.gpuNs) {
            row.gbps = double(row.timedBytes) / double(row.gpuNs);
            row.gbpsBasis = "gpu";
        } else if (row.hostNs) {
            row.gbps = double(row.bytes) / double(row.hostNs);
            row.gbpsBasis = "host";
        }
        row.host = durationStats(std::move(a.host));
        row.callsites = topSites(a.sites, cx.options->top);
        r.transfers.push_back(std::move(row));
    }
    std::stable_sort(r.transfers.begin(), r.transfers.end(),
                     [](const TransferRow& a, const TransferRow& b) { return a.hostNs > b.hostNs; });
}

}  // namespace gpuspy::collect::detail
