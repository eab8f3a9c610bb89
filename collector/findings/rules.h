// collector/findings/rules.h: what the finding rules share: the thresholds that make a pattern a finding,
// the wording of figures (percentages, bandwidths, bounds), and Builder, which adds a finding to the
// Report with its call sites and severity. One file per rule family beside it (transfers, launches,
// gpu_idle, syncs, dropped); findings.cpp feeds them each call and runs them at the end.
#pragma once

#include "collector/analyze/internal.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpuspy::collect::detail::rules {

// When a pattern is a finding. Repetition is what makes a pattern worth changing: one synchronous
// copy of the results at the end is normal, a hundred in a loop are not.
constexpr uint64_t kMinRepeats = 8;          // sync / pageable copies before they are a finding...
constexpr double kMinWallShare = 0.05;       // ...unless they take this share of the wall time
constexpr uint64_t kSmallCopyBytes = 64u << 10;
constexpr uint64_t kMinSmallCopies = 64;
constexpr uint64_t kMinLaunchBound = 16;     // launches of one launch-bound kernel
constexpr double kBusyThresholdPct = 80;     // gpu-idle below this
constexpr double kStarvedShare = 0.2;        // gpu-starved: idle-while-host-outside-CUDA share of the GPU's span
constexpr uint64_t kMinLoopSyncs = 10;       // explicit waits from one call site
constexpr uint64_t kMinHotAllocs = 10;       // alloc/free bursts from one call site (HotAllocAcc)
constexpr uint64_t kMinSpinPolls = 16;       // not-ready queries in a row before a run of them is a busy-wait

std::string fmtPct(double pct);
std::string fmtGbps(double gbps);
std::string siteLabel(const Context& cx, const std::vector<uint32_t>& sites);
bool isHostCopy(const wire::CallBody& c);
bool isCopy(const wire::CallBody& c);
double pinnedGbps(const Context& cx, wire::Direction dir);
bool pinnedOnlyBounded(const Context& cx, wire::Direction dir);

// The device time of a set of copies and whether it is only an upper bound (wording.cpp says how).
struct CopyTime {
    double ns = 0;
    bool atMost = false;
};
CopyTime copyTime(const Matched& m);
std::string boundedCopiesText(const Matched& m);
std::string busyPctText(const DeviceSummary& d);
bool busyIsUpperBound(const Report& r);
std::string busyShare(const Report& r, uint64_t busyNs, uint64_t hostNs, const std::string& ofWhat);
uint64_t deviceIdleNs(const Report& r);

class Builder {
public:
    Builder(const Context& cx, Report& r) : m_cx(cx), m_r(r) {}

    bool repeated(const Matched& m) const
    {
        return m.count >= kMinRepeats || (m_cx.wallNs && double(m.hostNs) >= kMinWallShare * double(m_cx.wallNs));
    }

    Finding& add(std::string rule, const Matched& m, uint64_t savings, std::string message)
    {
        Finding f;
        f.rule = std::move(rule);
        f.count = m.count;
        f.ns = m.hostNs;
        f.estimatedSavingsNs = savings;
        f.message = std::move(message);
        f.callsites = topSites(namedSites(m_cx, m.sites), m_cx.options->top);
        for (const auto& [raw, ns] : m.sites) {
            if (raw >= m_cx.rawSites.size()) continue;
            const RawSite& s = m_cx.rawSites[raw];
            if (s.proc < m_cx.processes.size()) f.stacks.push_back({m_cx.processes[s.proc].pid, s.stackId});
        }
        std::sort(f.stacks.begin(), f.stacks.end());
        f.stacks.erase(std::unique(f.stacks.begin(), f.stacks.end()), f.stacks.end());
        f.severity = severityOf(savings);
        m_r.findings.push_back(std::move(f));
        noteLibraryShare(m_r.findings.size() - 1, m);
        return m_r.findings.back();
    }

    // After every rule: the findings whose calls a library made (library_calls.cpp).
    void setApartLibraryCalls();

    std::string severityOf(uint64_t savings) const { return findingSeverity(savings, m_cx.wallNs); }

    // A note for the report's reader: what a rule set aside, and why.
    void note(std::string text) { m_r.notes.push_back(std::move(text)); }

    const Context& cx() const { return m_cx; }
    const Report& report() const { return m_r; }

private:
    // How much of a finding's host time its calls made inside library calls, by library call, and the
    // stacks of the user's own (library_calls.cpp).
    struct LibraryShare {
        size_t finding = 0;
        uint64_t libraryNs = 0, totalNs = 0;
        uint64_t ownNs = 0;  // of libraryNs: on the library's own threads or in its exit handlers (CallSite::libraryOwn)
        std::map<std::string, uint64_t> calls;              // library call -> host ns
        std::vector<std::pair<uint32_t, uint32_t>> userStacks;  // (pid, stack id) of the user's own calls
    };
    void noteLibraryShare(size_t finding, const Matched& m);

    const Context& m_cx;
    Report& m_r;
    std::vector<LibraryShare> m_shares;
};

// The rules, one family a file.
void pageableMemcpy(Builder& b);       // transfers.cpp
void syncMemcpy(Builder& b);
void pageableAsyncMemcpy(Builder& b);
void smallTransfers(Builder& b);
void launchBound(Builder& b, const Report& r);        // launches.cpp
void graphLaunchBound(Builder& b);
void addGraphLaunchUse(FindingAccs& F, const ProcView& pv, const CallInfo& ci);

void gpuIdleAndStarved(Builder& b, const Report& r);  // gpu_idle.cpp
void syncInLoop(Builder& b);           // syncs.cpp
void implicitSync(Builder& b);
void allocInLoop(Builder& b);                         // allocs.cpp
// The call sites whose allocations and frees ran in the loop (allocs.cpp): at least kMinHotAllocs bursts,
// turning memory over that often where their addresses say; the others set aside as setup or teardown.
struct LoopSites {
    std::set<int> sites;                 // named sites
    uint64_t setAside = 0, setAsideSites = 0;
    std::string setAsideText() const;
};
LoopSites loopSites(const Context& cx, const std::map<uint32_t, HotAllocAcc>& accs);
void droppedRecords(Builder& b, const Report& r);     // dropped.cpp
void spinWait(Builder& b);                            // spin.cpp
void memoryFindings(Builder& b, const Report& r);     // memory.cpp
void addFailedCall(FailAcc& a, const CallInfo& ci);   // failed_calls.cpp
void callsFailed(Builder& b);
void librarySetupInLoop(Builder& b);                   // library_setup.cpp
// What an error means for the call that got it, where gpuspy can say ("" otherwise): "no context was
// current on the thread ...".
std::string errorHint(int32_t code);
void legacyStream(Builder& b);                        // streams.cpp
void stragglers(Builder& b, const Report& r);         // collectives.cpp
// A call's part in the legacy stream's accumulators (streams.cpp): streams made, work queued.
void addStreamUse(FindingAccs& F, const ProcView& pv, const CallInfo& ci);
// A query's part of the spin-wait accumulators (spin.cpp), fed per call by addFindingCall.
void addPoll(FindingAccs& F, const ProcView& pv, const CallInfo& ci);

}  // namespace gpuspy::collect::detail::rules
