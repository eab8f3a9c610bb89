// collector/analyze/syncs.cpp: calls that block the host until the GPU catches up: explicit waits
// (context, stream, event, query polls) and implicit ones (synchronous copies and memsets, pageable
// "async" copies, frees, host registration, module loads), with how busy the GPU was meanwhile.
#include "collector/analyze/internal.h"

#include "collector/model/api_names.h"

#include <algorithm>

namespace gpuspy::collect::detail {

namespace {

std::string syncKind(const wire::CallBody& c, std::string_view api)
{
    const std::string_view b = driverBaseName(api);
    if (b == "cuCtxSynchronize" || b == "cuCtxDestroy") return "context";  // a destroy waits for the context's work
    if (b == "cuStreamSynchronize") return "stream";
    if (b == "cuEventSynchronize") return "event";
    if (isQuery(api)) return "query";
    switch (c.category) {
    case wire::Category::Transfer: return c.args.transfer.direction == wire::Direction::Memset ? "memset" : "copy";
    case wire::Category::Alloc:
        if (b.find("Free") != std::string_view::npos) return "free";
        // cuMemHostRegister and cuMemHostUnregister (NCCL unregisters its staging buffers at teardown).
        if (b.find("Register") != std::string_view::npos || b.find("Unregister") != std::string_view::npos)
            return "register";
        return "alloc";
    case wire::Category::Module: return "module";
    default: return "other";
    }
}

}  // namespace

bool isImplicitSync(const ApiClass& api, const wire::CallBody& c)
{
    if (!hasFlag(c, wire::kCallImplicitSync)) {
        // The synchronous forms of host copies and memsets return only when done, flagged or not.
        if (c.category != wire::Category::Transfer || hasFlag(c, wire::kCallAsync) || hasFlag(c, wire::kCallCapturing))
            return false;
        const wire::Direction d = c.args.transfer.direction;
        return d == wire::Direction::HtoD || d == wire::Direction::DtoH || d == wire::Direction::HtoH ||
               d == wire::Direction::Memset;
    }
    // cudaFree(nullptr), the idiom that creates the context, frees nothing and waits for nothing.
    if (c.category == wire::Category::Alloc && c.args.alloc.ptr == 0 && api.freeLike) return false;
    return true;
}

bool isImplicitSync(const ProcView& pv, const wire::CallBody& c)
{
    return isImplicitSync(classifyApi(pv.apiName(c)), c);
}

void addSync(Context& cx, const ProcView&, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    const ApiClass& api = *ci.api;
    if (!api.explicitWait && !isImplicitSync(api, c)) return;
    if (!api.syncAcc) api.syncAcc = &cx.syncs[{api.name, !api.explicitWait}];
    SyncAcc& a = *api.syncAcc;
    SyncRow& row = a.row;
    if (row.api.empty()) {
        row.api = api.name;
        row.display = displayName(api.name);
        row.implicit = !api.explicitWait;
        row.kind = syncKind(c, api.name);
    }
    ++row.count;
    row.blockedNs += hostNs(c);
    row.gpuBusyNs += ci.busyNs;
    if (ci.upperBound) ++row.upperBoundCount;  // its own span is in the busy time: an upper bound there too
    if (api.query && c.result == kCudaErrorNotReady) ++row.notReady;
    a.host.add(hostNs(c));
    a.sites[ci.rawSite] += hostNs(c);
}

void finishSyncs(Context& cx, Report& r)
{
    for (auto& [key, a] : cx.syncs) {
        a.row.display = apiDisplay(cx, a.row.api);  // the callers are known once the sites are
        a.row.host = a.host.stats();
        a.row.callsites = topSites(namedSites(cx, a.sites), cx.options->top);
        r.syncs.push_back(std::move(a.row));
    }
    std::stable_sort(r.syncs.begin(), r.syncs.end(), [](const SyncRow& a, const SyncRow& b) { return a.blockedNs > b.blockedNs; });
}

}  // namespace gpuspy::collect::detail
