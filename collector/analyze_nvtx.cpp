// collector/analyze_nvtx.cpp: the host and GPU totals per NVTX range name. Push/pop ranges belong to
// their thread; start/end ranges to the whole process. A call counts toward every range that encloses
// it (inclusive totals), once per name even when ranges of one name nest.
#include "collector/analyze_internal.h"

#include <algorithm>
#include <unordered_set>

namespace gpuspy::collect::detail {

namespace {

struct Range {
    std::string name;
    bool threadBound = true;
    uint32_t tid = 0;
    uint64_t begin = 0, end = 0;
};

std::string rangeName(const Process& p, const wire::NvtxBody& n)
{
    auto text = [&](uint32_t id) {
        auto it = p.strings.find(id);
        return id && it != p.strings.end() ? it->second : std::string();
    };
    std::string msg = text(n.messageId);
    if (msg.empty()) msg = "(unnamed)";
    const std::string domain = text(n.domainId);
    return domain.empty() ? msg : domain + ":" + msg;
}

std::vector<Range> collectRanges(const ProcView& pv)
{
    const Process& p = *pv.proc;
    std::vector<const wire::NvtxBody*> events;
    for (const wire::NvtxBody& n : p.nvtx) events.push_back(&n);
    std::stable_sort(events.begin(), events.end(), [](auto* a, auto* b) { return a->timeNs < b->timeNs; });
    std::vector<Range> out;
    std::map<std::pair<uint32_t, uint32_t>, std::vector<Range>> stacks;  // (domain, tid) -> open pushes
    std::map<uint64_t, Range> open;                                      // rangeId -> started range
    for (const wire::NvtxBody* n : events) {
        switch (n->kind) {
        case wire::NvtxKind::Push: stacks[{n->domainId, n->tid}].push_back({rangeName(p, *n), true, n->tid, n->timeNs, 0}); break;
        case wire::NvtxKind::Pop: {
            auto& st = stacks[{n->domainId, n->tid}];
            if (st.empty()) break;  // a pop without a push (the push predates the shim): nothing to close
            st.back().end = n->timeNs;
            out.push_back(std::move(st.back()));
            st.pop_back();
            break;
        }
        case wire::NvtxKind::Start: open[n->rangeId] = {rangeName(p, *n), false, n->tid, n->timeNs, 0}; break;
        case wire::NvtxKind::End: {
            auto it = open.find(n->rangeId);
            if (it == open.end()) break;
            it->second.end = n->timeNs;
            out.push_back(std::move(it->second));
            open.erase(it);
            break;
        }
        case wire::NvtxKind::Mark: break;
        }
    }
    // Ranges still open when the process ended run to its last record.
    const uint64_t last = std::max(p.lastNs, pv.activeEnd);
    for (auto& [key, st] : stacks)
        for (Range& r : st) {
            r.end = std::max(last, r.begin);
            out.push_back(std::move(r));
        }
    for (auto& [id, r] : open) {
        r.end = std::max(last, r.begin);
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

void analyzeNvtx(Context& cx, Report& r)
{
    std::map<std::string, NvtxRow> rows;
    for (const ProcView& pv : cx.procs) {
        std::map<std::string, std::unordered_set<size_t>> callsOf;  // name -> indices into pv.calls
        for (const Range& range : collectRanges(pv)) {
            NvtxRow& row = rows[range.name];
            row.name = range.name;
            ++row.ranges;
            row.rangeNs += range.end - range.begin;
            auto& set = callsOf[range.name];
            auto it = std::lower_bound(pv.calls.begin(), pv.calls.end(), range.begin,
                                       [](const wire::CallBody* c, uint64_t t) { return c->beginNs < t; });
            for (; it != pv.calls.end() && (*it)->beginNs < range.end; ++it)
                if (!range.threadBound || (*it)->tid == range.tid) set.insert(size_t(it - pv.calls.begin()));
        }
        for (const auto& [name, set] : callsOf) {
            NvtxRow& row = rows[name];
            for (size_t i : set) {
                const wire::CallBody& c = *pv.calls[i];
                ++row.calls;
                row.cudaApiNs += hostNs(c);
                row.gpuNs += pv.gpuNs(c);
                if (isCountedTransfer(c)) {
                    ++row.transfers;
                    row.transferBytes += c.args.transfer.bytes;
                    row.transferHostNs += hostNs(c);
                }
                if (isCountedLaunch(c)) {
                    ++row.launches;
                    row.launchHostNs += hostNs(c);
                }
                if (isExplicitSync(pv.apiName(c)) || isImplicitSync(pv, c)) {
                    ++row.syncs;
                    row.syncBlockedNs += hostNs(c);
                }
            }
        }
    }
    for (auto& [name, row] : rows) r.nvtx.push_back(std::move(row));
    std::stable_sort(r.nvtx.begin(), r.nvtx.end(), [](const NvtxRow& a, const NvtxRow& b) { return a.rangeNs > b.rangeNs; });
}

}  // namespace gpuspy::collect::detail
