// collector/export/nccl_launches.cpp: NCCL operations joined to the kernel launches that carried them,
// and NCCL's names as PyTorch's profiler writes them.
#include "collector/export/nccl_launches.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

namespace gpuspy::collect::exporting {

bool isNcclKernelName(const std::string& name)
{
    return name.find("ncclDevKernel") != std::string::npos || name.find("ncclKernel") != std::string::npos;
}

std::vector<const wire::CallBody*> ncclLaunchesOf(const Process& p)
{
    std::vector<const wire::CallBody*> out(p.collectives.size(), nullptr);
    if (p.collectives.empty()) return out;
    std::unordered_map<uint32_t, bool> nccl;  // kernel id -> one of NCCL's
    std::map<uint32_t, std::vector<const wire::CallBody*>> byTid;
    for (const wire::CallBody& c : p.calls) {
        if (c.category != wire::Category::Launch || !(c.flags & wire::kCallDeviceWork) || c.result != 0) continue;
        auto [it, fresh] = nccl.emplace(c.args.launch.kernelId, false);
        if (fresh) {
            auto k = p.kernels.find(c.args.launch.kernelId);
            it->second = k != p.kernels.end() && isNcclKernelName(k->second);
        }
        if (it->second) byTid[c.tid].push_back(&c);
    }
    for (auto& [tid, v] : byTid)
        std::sort(v.begin(), v.end(), [](const wire::CallBody* a, const wire::CallBody* b) { return a->beginNs < b->beginNs; });
    for (size_t i = 0; i < p.collectives.size(); ++i) {
        const wire::CollectiveBody& b = p.collectives[i];
        auto t = byTid.find(b.tid);
        if (t == byTid.end() || !b.launchNs) continue;
        auto it = std::lower_bound(t->second.begin(), t->second.end(), b.launchNs,
                                   [](const wire::CallBody* c, uint64_t ns) { return c->beginNs < ns; });
        if (it != t->second.end() && (*it)->beginNs <= b.startNs) out[i] = *it;
    }
    return out;
}

std::string c10dCollectiveName(const std::string& op)
{
    static const std::pair<const char*, const char*> kNames[] = {
        {"AllReduce", "allreduce"}, {"AllGather", "all_gather"}, {"ReduceScatter", "reduce_scatter"},
        {"Broadcast", "broadcast"}, {"Reduce", "reduce"},        {"AllToAll", "all_to_all"},
        {"Send", "send"},           {"Recv", "recv"},
    };
    for (const auto& [nccl, c10d] : kNames)
        if (op == nccl) return c10d;
    return op;
}

std::string c10DtypeName(const std::string& t)
{
    static const std::pair<const char*, const char*> kNames[] = {
        {"ncclFloat32", "Float"}, {"ncclFloat", "Float"},   {"ncclFloat16", "Half"},  {"ncclHalf", "Half"},
        {"ncclBfloat16", "BFloat16"}, {"ncclFloat64", "Double"}, {"ncclDouble", "Double"}, {"ncclInt32", "Int"},
        {"ncclInt", "Int"},       {"ncclInt64", "Long"},    {"ncclUint8", "Byte"},    {"ncclInt8", "Char"},
        {"ncclChar", "Char"},     {"ncclUint32", "UInt32"}, {"ncclUint64", "UInt64"},
        {"ncclFloat8e4m3", "Float8_e4m3fn"}, {"ncclFloat8e5m2", "Float8_e5m2"},
    };
    for (const auto& [nccl, c10] : kNames)
        if (t == nccl) return c10;
    return t;
}

uint64_t ncclTypeBytes(const std::string& t)
{
    const std::string c10 = c10DtypeName(t);
    if (c10 == "Byte" || c10 == "Char" || c10.rfind("Float8", 0) == 0) return 1;
    if (c10 == "Half" || c10 == "BFloat16") return 2;
    if (c10 == "Float" || c10 == "Int" || c10 == "UInt32") return 4;
    if (c10 == "Double" || c10 == "Long" || c10 == "UInt64") return 8;
    return 0;
}

}  // namespace gpuspy::collect::exporting
