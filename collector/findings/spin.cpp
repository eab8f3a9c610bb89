// collector/findings/spin.cpp: spin-wait: a host thread busy-waiting on the GPU, polling cuEventQuery or
// cuStreamQuery that answer CUDA_ERROR_NOT_READY over and over, a core burnt until the work is done.
#include "collector/findings/rules.h"

#include <algorithm>

namespace gpuspy::collect::detail::rules {

namespace {

// Between two polls the thread did nothing when the gap is no longer than a poll itself (or 1 us): the
// loop went straight back to polling.
constexpr uint64_t kIdleGapNs = 1000;

// A run of queries is a busy-wait when kMinSpinPolls or more answered not-ready in a row and at least
// half of the gaps between them were idle: nothing but the polls. A thread doing its own work between
// occasional polls is not spinning; one descheduled now and then still is (its few long gaps). The host
// CPU time it burnt: its poll cycles, those stretched by the thread being off the CPU counted at the
// median cycle (CycleHistogram::onCpuNs): on a loaded host the wall clock overstates it.
bool isSpin(const PollRun& run) { return run.notReady >= kMinSpinPolls && 2 * run.shortGaps >= run.gaps; }

void addRun(SpinAcc& a, const PollRun& run)
{
    ++a.runs;
    a.notReady += run.notReady;
    a.spanNs += run.lastNs - run.firstNs;
    a.pollNs += run.pollNs;
    a.cycles.merge(run.cycles);
    a.cycles.add(run.lastPollNs);  // the last query's own time: no next one to measure its cycle to
}

void closeRun(FindingAccs& F, const PollRun& run)
{
    if (run.lastOrdinal && isSpin(run)) addRun(F.spins[run.rawSite], run);
}

}  // namespace

void addPoll(FindingAccs& F, const ProcView& pv, const CallInfo& ci)
{
    if (!ci.api->query) return;
    const wire::CallBody& c = *ci.call;
    PollRun& run = F.pollRuns[{pv.proc ? pv.proc->pid : 0, c.tid}];
    // Queries are waits: accounted in their thread's order, but other calls may be accounted before
    // them; the ordinal says whether another call came between.
    if (!run.lastOrdinal || ci.threadOrdinal != run.lastOrdinal + 1) {
        closeRun(F, run);
        run = PollRun{};
        run.firstNs = c.beginNs;
        run.rawSite = ci.rawSite;
    } else {
        const uint64_t gap = c.beginNs > run.lastNs ? c.beginNs - run.lastNs : 0;
        ++run.gaps;
        if (gap <= std::max(run.lastPollNs, kIdleGapNs)) ++run.shortGaps;
        run.cycles.add(c.beginNs > run.lastBeginNs ? c.beginNs - run.lastBeginNs : 0);
    }
    run.lastOrdinal = ci.threadOrdinal;
    run.lastBeginNs = c.beginNs;
    run.lastNs = std::max(run.lastNs, c.endNs);
    run.lastPollNs = hostNs(c);
    run.pollNs += hostNs(c);
    if (c.result == kCudaErrorNotReady) {
        ++run.notReady;
        return;
    }
    // Done (or failed): the run ends with this poll.
    closeRun(F, run);
    run = PollRun{};
}

void spinWait(Builder& b)
{
    const Context& cx = b.cx();
    std::map<uint32_t, SpinAcc> spins = cx.findings.spins;
    for (const auto& [key, run] : cx.findings.pollRuns)  // runs still open at the end
        if (run.lastOrdinal && isSpin(run)) addRun(spins[run.rawSite], run);
    Matched m;
    uint64_t runs = 0, pollNs = 0, spanNs = 0;
    for (const auto& [raw, a] : spins) {
        const uint64_t cpu = a.cycles.onCpuNs();
        runs += a.runs;
        m.count += a.notReady;
        m.hostNs += cpu;
        pollNs += a.pollNs;
        spanNs += a.spanNs;
        m.sites[raw] += cpu;
    }
    if (!runs) return;
    const uint64_t cpu = m.hostNs;
    const double share = cx.wallNs ? 100.0 * double(cpu) / double(cx.wallNs) : 0;
    Finding& f = b.add("spin-wait", m, 0,
                       "A host thread busy-waited for the GPU: " + std::to_string(m.count) +
                           " polls (cudaEventQuery/cudaStreamQuery) answered not-ready (CUDA_ERROR_NOT_READY) in " +
                           std::to_string(runs) + " run(s) of at least " + std::to_string(kMinSpinPolls) + " in a row" +
                           siteLabel(cx, topSites(namedSites(cx, m.sites), 1)) + ", the thread doing nothing else: " +
                           formatNs(cpu) + " of host CPU time spent polling (" + fmtPct(share) + " of the wall; " +
                           formatNs(pollNs) + " inside the queries; the runs spanned " + formatNs(spanNs) +
                           ", the rest the thread was off the CPU). Wait instead with "
                           "cudaEventSynchronize on an event created with cudaEventBlockingSync (or cudaStreamSynchronize "
                           "after cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync)): the thread sleeps until the GPU is "
                           "done. It frees about " + formatNs(cpu) + " of host CPU time, a core for other threads or "
                           "processes; it saves no wall time: the wait still ends when the GPU's work does (a blocking "
                           "wait may wake a few microseconds later than a poll would have seen it).");
    f.hostCpuSavingsNs = cpu;
    f.severity = b.severityOf(cpu);  // by the share of the wall a core spent polling
    f.evidence = {{"polls_not_ready", double(m.count)}, {"runs", double(runs)}, {"host_cpu_ns", double(cpu)},
                  {"poll_host_ns", double(pollNs)}, {"runs_span_ns", double(spanNs)},
                  {"min_polls_in_a_row", double(kMinSpinPolls)}};
}

}  // namespace gpuspy::collect::detail::rules
