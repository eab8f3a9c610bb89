// collector/analyze/memory.cpp: the GPU memory section: what each allocation-family call does to memory
// (memClassOf), each process's memory spaces fed in host time order (MemoryBook), and the report's rows
// (finishMemory). Stream-ordered allocations and frees count when their stream is estimated to reach them
// (the device timeline's estimate when they were called: the work queued before them); VMM counts
// physical memory while it is mapped (cuMemMap .. cuMemUnmap): its handles are retained and released
// more often than created (cuMemRetainAllocationHandle), its mappings are what a program uses.
#include "collector/analyze/internal.h"
#include "collector/model/cuda_results.h"

#include <algorithm>
#include <functional>

namespace gpuspy::collect::detail {

MemClass memClassOf(std::string_view b)
{
    MemClass m;
    auto is = [&](std::initializer_list<std::string_view> names) {
        return std::find(names.begin(), names.end(), b) != names.end();
    };
    if (is({"cuMemAlloc", "cuMemAllocPitch", "cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemMap"})) m.role = MemRole::Alloc;
    else if (b == "cuMemAllocManaged") m = {MemRole::Alloc, MemSpace::Managed, false};
    else if (is({"cuMemHostAlloc", "cuMemAllocHost", "cuMemHostRegister"})) m = {MemRole::Alloc, MemSpace::PinnedHost, false};
    else if (is({"cuArrayCreate", "cuArray3DCreate", "cuMipmappedArrayCreate"})) m = {MemRole::Alloc, MemSpace::Device, true};
    else if (is({"cuMemFree", "cuMemFreeAsync", "cuMemUnmap"})) m.role = MemRole::Release;
    else if (is({"cuMemFreeHost", "cuMemHostUnregister"})) m = {MemRole::Release, MemSpace::PinnedHost, false};
    else if (is({"cuArrayDestroy", "cuMipmappedArrayDestroy"})) m = {MemRole::Release, MemSpace::Device, true};
    if (is({"cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemFreeAsync"})) m.streamOrdered = true;
    if (b == "cuMemAddressReserve") m.vmmReserve = 1;
    if (b == "cuMemAddressFree") m.vmmReserve = -1;
    if (b == "cuMemPoolCreate") m.pool = PoolOp::Create;
    else if (b == "cuMemPoolDestroy") m.pool = PoolOp::Destroy;
    else if (b == "cuMemPoolSetAttribute") m.pool = PoolOp::SetAttribute;
    else if (b == "cuMemPoolTrimTo") m.pool = PoolOp::TrimTo;
    else if (b == "cuDeviceGetDefaultMemPool") m.pool = PoolOp::GetDefault;
    else if (b == "cuDeviceGetMemPool") m.pool = PoolOp::GetCurrent;
    else if (b == "cuDeviceSetMemPool") m.pool = PoolOp::SetCurrent;
    else if (is({"cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"})) m.pool = PoolOp::Synchronize;
    return m;
}

namespace {

// Handles (arrays, VMM physical memory) are not addresses: their keys live apart.
constexpr uint64_t kHandleKey = uint64_t(1) << 63;

constexpr size_t kTopHolders = 8;  // holders named at a peak or a failure

uint64_t keyOf(const wire::CallBody& c, const MemClass& m) { return c.args.alloc.ptr | (m.handle ? kHandleKey : 0); }

}  // namespace

void MemoryBook::onCall(const wire::CallBody& c, const ApiClass& api, uint32_t rawSite, uint64_t streamReadyNs)
{
    const MemClass& m = api.mem;
    if (m.vmmReserve && succeeded(c) && c.args.alloc.ptr) {
        // Address space, not memory: counted beside the device's rows, never in them.
        Reserved& r = vmmReserved[c.device];
        r.now = m.vmmReserve > 0 ? r.now + c.args.alloc.bytes : r.now - std::min(r.now, c.args.alloc.bytes);
        r.peak = std::max(r.peak, r.now);
        space(MemSpace::Device, c.device);
        return;
    }
    if (m.role == MemRole::None || hasFlag(c, wire::kCallCapturing)) return;
    // cuMemFree of managed memory: the shim names the memory's kind.
    const MemSpace space = m.role == MemRole::Release && !m.handle && c.args.alloc.mem == wire::MemKind::Managed
                               ? MemSpace::Managed
                               : m.space;
    const int device = space == MemSpace::PinnedHost ? -1 : c.device;
    const bool alloc = m.role == MemRole::Alloc;
    // When the call changes memory: an allocation once it returned, a release as it starts; a stream-ordered
    // allocation from its submission (the call's start: the stream does not wait for its return) and,
    // like a stream-ordered release, no sooner than its stream reaches it.
    const uint64_t atCall = alloc && !api.asyncName ? c.endNs : c.beginNs;
    applyUntil(atCall);
    if (alloc && !succeeded(c)) {
        this->space(space, device).failed(c.args.alloc.bytes, c.endNs, rawSite, c.result, c.apiId);
        apiNames.emplace(c.apiId, api.name);
        return;
    }
    if (!succeeded(c) || !c.args.alloc.ptr) return;  // refused, or freeing null: nothing changed
    Change ch;
    ch.pooled = poolChange(c, m, alloc, rawSite);
    ch.atNs = std::max(atCall, streamReadyNs);
    ch.seq = ++m_seq;
    ch.alloc = alloc;
    ch.key = keyOf(c, m);
    ch.bytes = c.args.alloc.bytes;
    ch.owner = rawSite;
    ch.space = space;
    ch.device = device;
    if (ch.atNs <= atCall && m_waiting.empty()) {
        apply(ch);
        return;
    }
    m_waiting.push_back(ch);
    std::push_heap(m_waiting.begin(), m_waiting.end(), std::greater<Change>());
}

void MemoryBook::applyUntil(uint64_t t)
{
    while (!m_waiting.empty() && m_waiting.front().atNs <= t) {
        std::pop_heap(m_waiting.begin(), m_waiting.end(), std::greater<Change>());
        const Change ch = m_waiting.back();
        m_waiting.pop_back();
        apply(ch);
    }
}

void MemoryBook::finish() { applyUntil(UINT64_MAX); }

void MemoryBook::apply(const Change& ch)
{
    if (ch.pooled) {
        uint64_t& n = m_pooledInUse[ch.device];
        n = ch.alloc ? n + ch.pooled : n - std::min(n, ch.pooled);
        showPools(ch.device, ch.atNs, false);  // shown with the change itself, below
    }
    if (ch.alloc) {
        space(ch.space, ch.device).allocate(ch.key, ch.bytes, ch.atNs, ch.owner);
        return;
    }
    // The space it was allocated in (a free names no device; cuMemFree serves managed memory too).
    for (auto& [where, t] : spaces)
        if ((where.first == MemSpace::PinnedHost) == (ch.space == MemSpace::PinnedHost) && t.holds(ch.key)) {
            t.release(ch.key, ch.atNs);
            return;
        }
    // Never seen allocated: counted where it most likely was (allocated before the capture began).
    space(ch.space, ch.device).release(ch.key, ch.atNs);
}

template <class Site>
static std::vector<MemoryPoolRow> poolRows(const MemoryBook& book, int device, const Site& site)
{
    std::vector<MemoryPoolRow> out;
    for (const auto& [key, p] : book.pools) {
        const PoolReserve& q = p.reserve;
        if (p.device != device || !q.allocations()) continue;
        MemoryPoolRow row;
        row.pool = key & MemoryBook::kDefaultPool ? "default" : "created";
        row.releaseThreshold = q.threshold();
        row.thresholdSet = q.thresholdSet();
        row.allocations = q.allocations();
        row.peakUsedBytes = q.peakUsed();
        row.usedEndBytes = q.used();
        row.peakReservedMinBytes = q.peakReservedMin();
        row.reservedMinEndBytes = q.reservedMin();
        row.grows = q.grows();
        row.regrows = q.regrows();
        row.regrowBytes = q.regrowBytes();
        row.releasesAtSync = q.releasesAtSync();
        row.trims = q.trims();
        row.releasedBytes = q.releasedBytes();
        row.growHostNs = q.growHostNs();
        row.servedHostNs = q.servedHostNs();
        row.served = q.served();
        row.destroyed = p.destroyed;
        std::map<uint32_t, uint64_t> bySite;
        for (const auto& [raw, n] : p.regrowSites) bySite[site(raw)] += n, row.regrowRaw.push_back(raw);
        std::vector<std::pair<uint64_t, uint32_t>> order;
        for (const auto& [id, n] : bySite) order.emplace_back(n, id);
        std::sort(order.rbegin(), order.rend());
        for (const auto& [n, id] : order) row.regrowSites.push_back(id);
        out.push_back(std::move(row));
    }
    return out;
}

void finishMemory(Context& cx, Report& r)
{
    auto site = [&](uint32_t raw) -> uint32_t {
        if (raw >= cx.rawSites.size() || cx.rawSites[raw].site == kNoSite) return UINT32_MAX;
        return uint32_t(cx.rawSites[raw].site);
    };
    // Raw sites (a stack each) named alike are one call site: their holdings merge, largest first.
    auto byBytes = [](const MemoryHolding& a, const MemoryHolding& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.callsite < b.callsite;
    };
    auto holdings = [&](const std::vector<MemoryTimeline::Holding>& in) {
        std::vector<MemoryHolding> out;
        for (const auto& h : in) {
            const uint32_t id = site(h.owner);
            auto it = std::find_if(out.begin(), out.end(), [&](const MemoryHolding& x) { return x.callsite == id; });
            if (it == out.end()) out.push_back(MemoryHolding{id, h.bytes, h.allocations});
            else it->bytes += h.bytes, it->allocations += h.allocations;
        }
        std::sort(out.begin(), out.end(), byBytes);
        // The largest few by name; the rest as one holding of no site (the sum stays the whole).
        if (out.size() > kTopHolders) {
            MemoryHolding rest{UINT32_MAX, 0, 0};
            for (size_t i = kTopHolders - 1; i < out.size(); ++i) rest.bytes += out[i].bytes, rest.allocations += out[i].allocations;
            out.resize(kTopHolders - 1);
            out.push_back(rest);
        }
        return out;
    };
    for (const MemoryBook& book : cx.memory) {
        bool attached = false;
        for (const ProcessSummary& p : cx.processes)
            if (p.pid == book.pid)
                for (const std::string& n : p.notices) attached |= n.rfind("attached to a running process", 0) == 0;
        for (const auto& [where, t] : book.spaces) {
            MemoryRow row;
            row.pid = book.pid;
            row.device = where.second;
            row.space = where.first == MemSpace::Device ? "device" : where.first == MemSpace::Managed ? "managed" : "pinned_host";
            row.allocations = t.allocations();
            row.releases = t.releases();
            row.failed = t.failureCount();
            row.allocatedBytes = t.allocatedBytes();
            row.peakBytes = t.peak();
            const uint64_t origin = book.originNs;
            auto rel = [&](uint64_t ns) { return ns > origin ? ns - origin : 0; };
            row.peakNs = t.peak() ? rel(t.peakNs()) : 0;
            row.peakUntilNs = t.peakEndNs() ? rel(t.peakEndNs()) : t.series().empty() ? row.peakNs : rel(t.series().back().first);
            row.inUseEndBytes = t.inUse();
            row.unknownReleases = t.unknownReleases();
            row.untracked = t.untracked();
            row.attached = attached;
            row.atPeak = holdings(t.atPeak());
            // A leak: a site whose allocations still held were made again and again, spread over at
            // least half of the span the space was in use (a setup's buffers come in one burst).
            const uint64_t firstUse = t.series().empty() ? origin : t.series().front().first;
            const uint64_t lastUse = t.series().empty() ? origin : t.series().back().first;
            for (const MemoryTimeline::Live& l : t.live()) {
                const uint32_t id = site(l.owner);
                auto it = std::find_if(row.liveAtEnd.begin(), row.liveAtEnd.end(), [&](const MemoryLive& x) { return x.callsite == id; });
                if (it == row.liveAtEnd.end()) {
                    MemoryLive m;
                    m.callsite = id;
                    m.firstNs = l.firstNs;
                    row.liveAtEnd.push_back(m);
                    it = row.liveAtEnd.end() - 1;
                }
                it->bytes += l.bytes;
                it->allocations += l.allocations;
                it->firstNs = std::min(it->firstNs, l.firstNs);
                it->lastNs = std::max(it->lastNs, l.lastNs);
            }
            std::sort(row.liveAtEnd.begin(), row.liveAtEnd.end(), byBytes);
            for (MemoryLive& m : row.liveAtEnd) {
                m.leak = m.allocations >= 3 && lastUse > firstUse && (m.lastNs - m.firstNs) * 2 >= lastUse - firstUse;
                m.firstNs = rel(m.firstNs);
                m.lastNs = rel(m.lastNs);
            }
            for (const MemoryTimeline::Failure& f : t.failures()) {
                MemoryFailure mf;
                mf.atNs = rel(f.atNs);
                mf.bytes = f.bytes;
                mf.error = cudaResultName(f.result);
                if (auto a = book.apiNames.find(f.api); a != book.apiNames.end()) mf.api = a->second;
                mf.callsite = site(f.owner);
                mf.inUse = f.inUse;
                mf.poolUnusedMin = f.poolUnused;
                mf.holders = holdings(f.holders);
                row.failures.push_back(std::move(mf));
            }
            for (const auto& [ns, bytes] : t.series()) row.series.emplace_back(rel(ns), bytes);
            if (where.first == MemSpace::Device) {
                if (auto v = book.vmmReserved.find(where.second); v != book.vmmReserved.end())
                    row.vmmReservedPeakBytes = v->second.peak, row.vmmReservedEndBytes = v->second.now;
                row.pools = poolRows(book, where.second, site);
                for (MemoryPoolRow& pr : row.pools)
                    for (uint32_t raw : pr.regrowRaw)
                        if (raw < cx.rawSites.size()) pr.regrowStacks.emplace_back(book.pid, cx.rawSites[raw].stackId);
            }
            if (t.pooled()) {
                for (const auto& [ns, bytes] : t.held()) row.heldSeries.emplace_back(rel(ns), bytes);
                row.peakHeldMinBytes = t.peakHeld();
                row.peakHeldNs = rel(t.peakHeldNs());
            }
            r.memory.push_back(std::move(row));
        }
    }
}

}  // namespace gpuspy::collect::detail
