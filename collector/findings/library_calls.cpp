// collector/findings/library_calls.cpp: findings whose calls a library made. The copies, waits and
// allocations that cuSOLVER, cuFFT, NCCL, thrust or a Python package make inside a call of theirs are not
// the user's to change: advice to pin a buffer, move a sync after the loop or hoist an allocation is
// for the calls the user's own code makes. A finding whose calls were all (95% of their host time or
// more) made inside library calls keeps its place as information, without a saving, and says what the
// user can change about the library calls instead; one with some of them counts only the user's own,
// and its replay changes only those.
#include "collector/findings/rules.h"

#include <algorithm>
#include <cstdio>

namespace gpuspy::collect::detail::rules {

namespace {

constexpr double kAllInsideShare = 0.95;

// The rules whose advice changes how a call is made, and what to change about a library call instead.
struct LibraryAdvice {
    std::string_view rule, what, advice;
};
constexpr LibraryAdvice kAdvice[] = {
    {"pageable-memcpy", "synchronous copies from pageable memory",
     "call it less often or on more data at once (a batched variant), keep its plans, handles and descriptors "
     "across calls instead of making them in the loop, and pass it device or pinned buffers where its API takes them"},
    {"sync-memcpy", "synchronous copies",
     "call it less often or on more data at once (a batched variant), keep its plans, handles and descriptors "
     "across calls instead of making them in the loop, and use its asynchronous variant where there is one"},
    {"pageable-async-memcpy", "asynchronous copies from pageable memory",
     "pass it pinned buffers where its API takes host memory, or call it less often on more data at once"},
    {"small-transfers", "small copies",
     "call it less often on more data at once (a batched variant), and keep its plans and handles across calls: "
     "making one copies its parameters to the GPU"},
    {"sync-in-loop", "repeated waits for the GPU",
     "call it less often on more work at once (a batched variant), or use its asynchronous variant where there "
     "is one, so that its waits come once per batch"},
    {"implicit-sync", "allocations and frees that synchronize",
     "create its handles, plans and workspaces once, outside the loop, and give it a workspace where its API "
     "takes one (cublasSetWorkspace, cufftSetWorkArea, cuDNN's workspace arguments); made once at start or at "
     "teardown they are setup, not the steady state"},
    {"spin-wait", "busy-waits on CUDA queries",
     "nothing in your code polls; a library that spins while it waits can often be told to block instead "
     "through its own settings"},
};

const LibraryAdvice* adviceFor(const std::string& rule)
{
    for (const LibraryAdvice& a : kAdvice)
        if (a.rule == rule) return &a;
    return nullptr;
}

std::string pct(double share)
{
    char b[16];
    std::snprintf(b, sizeof b, "%.0f%%", 100.0 * share);
    return b;
}

// "cusolverDnSsyevd (libcusolver.so.12): 1.20 ms, thrust::sort (thrust): 40 us" (by time, the top 4).
std::string callsText(const std::map<std::string, uint64_t>& calls)
{
    std::vector<std::pair<std::string, uint64_t>> v(calls.begin(), calls.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string s;
    for (size_t i = 0; i < v.size() && i < 4; ++i) s += (i ? ", " : "") + v[i].first + ": " + formatNs(v[i].second);
    if (v.size() > 4) s += " and " + std::to_string(v.size() - 4) + " more";
    return s;
}

}  // namespace

void Builder::noteLibraryShare(size_t finding, const Matched& m)
{
    LibraryShare share;
    share.finding = finding;
    for (const auto& [raw, ns] : m.sites) {
        if (raw >= m_cx.rawSites.size()) continue;
        const RawSite& rs = m_cx.rawSites[raw];
        share.totalNs += ns;
        const CallSite* site = rs.site >= 0 && size_t(rs.site) < m_cx.sites.size() ? &m_cx.sites[size_t(rs.site)] : nullptr;
        if (site && !site->libraryCall.empty()) {
            share.libraryNs += ns;
            if (site->libraryOwn.empty()) {
                share.calls[site->libraryCall] += ns;
                continue;
            }
            // Not a call of the user's: the library's own thread (ncclProxyService) or exit handler.
            share.ownNs += ns;
            share.calls[site->libraryCall + (site->libraryOwn == "exit" ? " in an exit handler" : " on a thread of the library's own")] += ns;
        } else if (rs.proc < m_cx.processes.size()) {
            share.userStacks.push_back({m_cx.processes[rs.proc].pid, rs.stackId});
        }
    }
    if (share.libraryNs) m_shares.push_back(std::move(share));
}

void Builder::setApartLibraryCalls()
{
    for (LibraryShare& share : m_shares) {
        Finding& f = m_r.findings[share.finding];
        const LibraryAdvice* advice = adviceFor(f.rule);
        if (!advice || !share.totalNs) continue;
        const double inside = double(share.libraryNs) / double(share.totalNs);
        f.evidence.push_back({"inside_library_ns", double(share.libraryNs)});
        std::sort(share.userStacks.begin(), share.userStacks.end());
        share.userStacks.erase(std::unique(share.userStacks.begin(), share.userStacks.end()), share.userStacks.end());
        f.evidence.push_back({"library_own_ns", double(share.ownNs)});
        if (inside >= kAllInsideShare && share.ownNs >= share.libraryNs) {
            // No call of the user's stands behind them: the library's set-up and teardown.
            f.message = "These " + std::string(advice->what) + " (" + std::to_string(f.count) + " calls, " +
                        formatNs(f.ns) + ") were made by the library by itself, not by your code nor inside a call of "
                        "yours: " + callsText(share.calls) + ". A library's own threads and exit handlers set it up and "
                        "tear it down (NCCL's communicators, a library's caches): setup, not your program's steady "
                        "state. No saving is claimed, and nothing in your code makes them.";
            f.estimatedSavingsNs = 0;
            f.hostCpuSavingsNs = 0;
            f.severity = "info";
            f.stacks.clear();
            continue;
        }
        if (inside >= kAllInsideShare) {
            f.message = "These " + std::string(advice->what) + " (" + std::to_string(f.count) + " calls, " +
                        formatNs(f.ns) + ") were made inside library calls, not by your code: " + callsText(share.calls) +
                        ". How a library makes its own calls is not yours to change, so no saving is claimed; what "
                        "you can change is how you call it: " + std::string(advice->advice) + ".";
            f.estimatedSavingsNs = 0;
            f.hostCpuSavingsNs = 0;
            f.severity = "info";
            f.stacks.clear();  // the replay has nothing of the user's to change
            continue;
        }
        // Some of the calls are the user's: the saving counts only theirs (scaled by their share of the
        // host time), and the replay changes only those.
        const double own = 1.0 - inside;
        f.estimatedSavingsNs = uint64_t(double(f.estimatedSavingsNs) * own);
        f.hostCpuSavingsNs = uint64_t(double(f.hostCpuSavingsNs) * own);
        if (f.severity != "info")
            f.severity = severityOf(f.rule == "spin-wait" ? f.hostCpuSavingsNs : f.estimatedSavingsNs);
        f.stacks = share.userStacks;
        f.message += " Of their host time, " + formatNs(share.libraryNs) + " (" + pct(inside) +
                     ") was inside library calls (" + callsText(share.calls) +
                     "): those calls are the library's, and the saving counts only your own (" + pct(own) +
                     " of the estimate above).";
    }
}

}  // namespace gpuspy::collect::detail::rules
