// collector/analyze/internal.h: what the analysis sections share. Records stream past once: each
// process's calls wait in a bounded window (collector/analyze/window.cpp) until their GPU spans and the busy
// intervals around them are known, then go, in time order, through every section's accumulator as one
// CallInfo; the sections turn their accumulators into the Report's rows at the end. Memory grows with
// the distinct call sites, kernels, APIs and devices, and with the window, not with the records.
#pragma once

#include "collector/analyze/analyze.h"
#include "collector/analyze/quantile.h"
#include "collector/timeline/device_timeline.h"
#include "collector/timeline/intervals.h"
#include "collector/timeline/memory_timeline.h"
#include "collector/timeline/pool_reserve.h"

#include <array>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gpuspy::collect::detail {

inline constexpr int32_t kCudaErrorNotReady = 600;
inline constexpr int kNoSite = -1;
inline constexpr uint32_t kNoRawSite = UINT32_MAX;

struct KernelAcc;
struct ApiAcc;
struct SyncAcc;
struct TransferAcc;

// A process's graphs as its calls rebuild them (collector/analyze/graphs.cpp): the launches, copies and memsets
// captured into each CUgraph, and the graph each CUgraphExec runs.
struct GraphBook {
    using Nodes = std::vector<wire::CallBody>;
    std::unordered_map<uint64_t, std::shared_ptr<Nodes>> capturing;    // CUgraph -> nodes, until its capture ends
    std::unordered_map<uint64_t, std::shared_ptr<const Nodes>> graphs; // CUgraph -> nodes, once it ended
    std::unordered_map<uint64_t, std::shared_ptr<const Nodes>> execs;  // CUgraphExec -> nodes
    std::unordered_set<uint64_t> incomplete;  // CUgraphs captured around a graph launch of unknown nodes
};

// A process's definitions, and the questions the sections ask of them (also used by the exports).
struct ProcView {
    const Process* proc = nullptr;
    std::unordered_set<std::string> kernelFunctions;  // demangled kernel names, without parameters (filled on demand)
    mutable std::unordered_map<uint64_t, KernelAcc*> kernelAccs;  // kernel id -> row (host functions have one row: Context::hostFunctions)
    mutable GraphBook graphs;

    std::string apiName(const wire::CallBody& c) const;
    std::string kernelName(uint32_t kernelId, std::string* mangled = nullptr) const;
};

// What an entry point does to memory (collector/analyze/memory.cpp): allocates or releases, in which space,
// and whether it names memory by a handle (arrays, VMM physical memory) rather than an address.
enum class MemRole : uint8_t { None, Alloc, Release };
enum class MemSpace : uint8_t { Device, Managed, PinnedHost };
// Stream-ordered pools: the calls that configure them or name their handles, and the synchronizations
// at which a pool gives back what it keeps beyond its release threshold.
enum class PoolOp : uint8_t { None, Create, Destroy, SetAttribute, TrimTo, GetDefault, GetCurrent, SetCurrent, Synchronize };
struct MemClass {
    MemRole role = MemRole::None;
    MemSpace space = MemSpace::Device;
    bool handle = false;
    PoolOp pool = PoolOp::None;
    bool streamOrdered = false;  // cuMemAllocAsync, cuMemAllocFromPoolAsync (served by a pool), cuMemFreeAsync
    int8_t vmmReserve = 0;       // +1 cuMemAddressReserve, -1 cuMemAddressFree: VMM address space
};
MemClass memClassOf(std::string_view baseName);

// What the sections need to know of an entry point, worked out once per process and API id.
struct ApiClass {
    std::string name;          // the ABI name
    bool explicitWait = false; // context/stream/event synchronize or a query poll
    bool query = false;
    bool hostFunc = false;     // cuLaunchHostFunc
    bool freeLike = false;     // the base name has "Free" in it
    TimelineRole role = TimelineRole::None;  // what the call tells the device timeline
    bool asyncName = false;    // the name has "Async" in it (stream-ordered allocation)
    MemClass mem;              // what it does to memory
    mutable ApiAcc* acc = nullptr;       // its row of the API summary, once looked up
    mutable SyncAcc* syncAcc = nullptr;  // its row of the sync table, once looked up
};

// Call sites as the stream sees them: (process, stack, category); named once the process's symbols are in.
// Setup: a failed setup or query call (wire::Category::Query, recorded only when it fails).
enum class SiteCategory : uint8_t { None, Transfer, Launch, Alloc, Sync, Setup };
// A library call one process invoked again and again (collector/analyze/library_time.h): by its invocation
// key (the library's module and the return address into its caller), the CUDA calls made inside it by
// stack and raw site. library-setup-in-loop reads it.
inline constexpr uint64_t kMinLibraryRepeats = 3;  // steps
struct LibraryRepeat {
    size_t proc = 0;  // ordinal of its process in the report
    uint64_t key = 0;
    uint64_t count = 0, ns = 0, firstNs = 0;  // invocations, their summed spans, the first one's
    std::vector<uint32_t> stacks, rawSites;
};

struct RawSite {
    uint32_t stackId = 0;
    SiteCategory category = SiteCategory::None;
    uint64_t count = 0, ns = 0;
    std::vector<uint16_t> apiIds;  // in order of first use
    int site = kNoSite;            // the named site (index into Context::sites), once resolved
    size_t proc = 0;               // ordinal of its process in the report, once the process ended
};
using SiteTally = std::unordered_map<uint32_t, uint64_t>;  // raw site -> host ns

// One call with everything the sections ask of it, worked out once.
struct CallInfo {
    const wire::CallBody* call = nullptr;
    const ApiClass* api = nullptr;
    bool timed = false;             // a GpuSpan arrived for it
    uint64_t gpuNs = 0;             // summed span lengths
    bool upperBound = false;        // a span of it is only an upper bound (gpuSpanIsUpperBound)
    uint64_t boundGpuNs = 0;        // the length of such spans, part of gpuNs
    uint64_t busyNs = 0;            // host interval during which its device (any device if unknown) was busy (timeline estimate)
    bool foundEmpty = false;        // device work that found its stream empty: the device waited for this call
    uint32_t rawSite = kNoRawSite;
    const std::vector<wire::GpuSpanBody>* spans = nullptr;  // null when untimed
    uint64_t threadOrdinal = 0;     // its place among its thread's calls (1, 2, ...), in host time order
    // Of an allocation or free (AllocTurnover, worked out in host time order): whether it turns memory
    // over as a loop does; Unknown where its address says nothing (none named, or never seen allocated).
    enum class Turnover : uint8_t { Unknown, Stays, Turns } turnover = Turnover::Unknown;
};

// Whether an allocation or release turns memory over as a loop does (CallInfo::turnover): an
// allocation made after one of its site's earlier allocations was freed, a release of memory allocated
// since its site's previous call. Setup's buffers live until teardown frees them: neither. Fed a
// process's allocation-family calls in host time order (collector/analyze/turnover.cpp); the replay's
// hoist-allocs asks it too.
class AllocTurnover {
public:
    // site: any key of the call site; address: what the call allocated or released (0: none named).
    // Unknown: no address, a release of memory not seen allocated, an allocation past the bound.
    CallInfo::Turnover onCall(uint64_t site, uint64_t address, bool release, uint64_t beginNs);

private:
    static constexpr size_t kMaxLive = size_t(1) << 16;  // beyond: addresses nothing matches (a few MiB at most)
    std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> m_live;   // address -> (site, begin)
    std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> m_sites;  // site -> (previous begin, last free of its memory)
};
// A call that gives memory back: a free, a host unregister, a destroy.
bool isRelease(const ApiClass& api);

// A process's memory spaces (collector/analyze/memory.cpp), fed its allocation-family calls in host
// time order; owners are raw call sites.
struct MemoryBook {
    uint32_t pid = 0;
    uint64_t originNs = 0;  // the process's first CUDA call: the report's times count from it
    std::map<std::pair<MemSpace, int>, MemoryTimeline> spaces;  // (space, device: -1 for pinned host)
    std::map<uint16_t, std::string> apiNames;                    // of the failed allocations
    size_t maxSeries = MemoryTimeline::kMaxSeries;               // points kept per space (the exports keep all)
    // `streamReadyNs`: for a stream-ordered allocation or free, when its stream is estimated to reach it
    // (DeviceTimeline::readyAt; 0: at the call). Such changes wait until then, the others apply at once.
    void onCall(const wire::CallBody& c, const ApiClass& api, uint32_t rawSite, uint64_t streamReadyNs = 0);
    // A pool's configuration (Other-category calls) or a synchronize (api.mem.pool says which).
    void onPoolCall(const wire::CallBody& c, const ApiClass& api);
    // Any call, by the one rule the report, the Perfetto export and the replay share: a pool's call (a
    // synchronize only once there are pools) to onPoolCall, an allocation-family call to onCall.
    void feed(const wire::CallBody& c, const ApiClass& api, uint32_t rawSite, uint64_t streamReadyNs = 0);
    void finish();  // applies what still waits for its stream

    // Stream-ordered pools (collector/analyze/memory_pools.cpp), by key: a created pool's handle, or
    // kDefaultPool | device for a device's default pool.
    static constexpr uint64_t kDefaultPool = uint64_t(1) << 62;
    struct Pool {
        PoolReserve reserve;
        int device = 0;
        bool destroyed = false;
        std::map<uint32_t, uint64_t> regrowSites;  // raw site -> its allocations that grew the pool back
    };
    std::map<uint64_t, Pool> pools;
    // VMM address space reserved per device (cuMemAddressReserve .. cuMemAddressFree): now and at most.
    struct Reserved {
        uint64_t now = 0, peak = 0;
    };
    std::map<int, Reserved> vmmReserved;

private:
    struct Change {
        uint64_t atNs = 0, seq = 0;  // applied in time order, ties in call order
        bool alloc = false;
        uint64_t key = 0, bytes = 0;
        uint32_t owner = 0;
        MemSpace space = MemSpace::Device;
        int device = 0;
        uint64_t pooled = 0;  // the bytes of a stream-ordered pool's allocation or free
        bool operator>(const Change& o) const { return atNs != o.atNs ? atNs > o.atNs : seq > o.seq; }
    };
    void apply(const Change& ch);
    // The bytes a stream-ordered allocation or free takes from or gives back to its pool (0: not a pool's),
    // the pool's use updated.
    uint64_t poolChange(const wire::CallBody& c, const MemClass& m, bool alloc, uint32_t rawSite);
    uint64_t poolOf(uint64_t handle, int device);  // a handle's pool (a pool of its own when never named)
    uint64_t defaultPool(int device);              // the device's default pool's key (its entry made)
    // What the device's pools keep unused, to its timeline (`point`: as a point of its own, else with the next change).
    void showPools(int device, uint64_t atNs, bool point = true);
    std::map<uint64_t, uint64_t> m_poolAlias;     // handle -> pool key
    std::map<int, uint64_t> m_currentPool;        // device -> the pool cuMemAllocAsync takes from
    std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> m_poolBlocks;  // address -> (pool, bytes)
    std::map<int, uint64_t> m_pooledInUse;        // device -> pool bytes in use on its timeline
    MemoryTimeline& space(MemSpace s, int device) { return spaces.try_emplace({s, device}, maxSeries).first->second; }
    void applyUntil(uint64_t t);
    std::vector<Change> m_waiting;  // a min-heap on (atNs, seq)
    uint64_t m_seq = 0;
};

// Order statistics and sums of a set of calls (a finding's evidence).
struct Matched {
    uint64_t count = 0, hostNs = 0, bytes = 0;
    uint64_t timed = 0, timedGpuNs = 0, timedBytes = 0, timedHostNs = 0;
    // Of the timed, those whose GPU time is only an upper bound (CallInfo::upperBound), and their part
    // of the timed sums. Copies alike (direction, memory kinds, bytes) do the same device work, so each
    // took at most the shortest of their bounds: boundedGroups keeps it per kind of copy (at most
    // kMaxBoundedGroups kinds; the bounds of copies beyond are summed in boundedLooseNs).
    uint64_t bounded = 0, boundedGpuNs = 0, boundedBytes = 0, boundedHostNs = 0;
    struct BoundedGroup {
        uint64_t count = 0, minGpuNs = UINT64_MAX;
    };
    static constexpr size_t kMaxBoundedGroups = 4096;
    using GroupKey = std::tuple<uint8_t, uint8_t, uint8_t, uint64_t>;
    std::map<GroupKey, BoundedGroup> boundedGroups;
    uint64_t boundedLooseNs = 0;
    // The measured copies alike, the same way: per kind, count x the shortest GPU time
    // (measuredTightNs), the copies' own device time where a late end stamp stretched some spans.
    std::map<GroupKey, BoundedGroup> measuredGroups;
    uint64_t measuredLooseNs = 0;
    uint64_t measuredTightNs() const;
    // The bounded copies' device time, at most: per kind, count x the shortest bound.
    uint64_t boundedTightNs() const;
    uint64_t measured() const { return timed - bounded; }
    uint64_t measuredGpuNs() const { return timedGpuNs - boundedGpuNs; }
    uint64_t measuredBytes() const { return timedBytes - boundedBytes; }
    uint64_t measuredHostNs() const { return timedHostNs - boundedHostNs; }
    uint64_t busyNs = 0;  // GPU busy during the calls
    QuantileSketch host, gpu;  // gpu: the measured GPU times only (bounded ones left out)
    SiteTally sites;
    void add(const CallInfo& ci);
};

// Per device of one process, accumulated as the device timeline's busy intervals become final. Busy
// time and gaps are the timeline's estimate (measured spans and the placed untimed operations);
// busyLoNs/busyHiNs the same with the short and long durations of the untimed ones.
struct DeviceAcc {
    std::string name;
    std::string uuid;  // Process::deviceIds: "GPU-..." where the shim could ask; "" else
    uint64_t busyNs = 0, idleGapNs = 0, largestGapNs = 0, gaps = 0, starvedNs = 0, largestStarvedNs = 0;
    uint64_t waitingNs = 0;  // idle while the program waited for work (wire::kCallIdleBefore): not starved
    // Of starvedNs, the host inside a library call between its CUDA calls (library_time.h), the largest
    // single stretch of the rest, and the libraries (files) by their host time.
    uint64_t starvedInLibraryNs = 0, largestUserStarvedNs = 0;
    std::vector<std::string> starvedLibraries;
    uint64_t idleInLibraryNs = 0;  // idle while the host was in a library invocation, its CUDA calls included
    uint64_t busyLoNs = 0, busyHiNs = 0;
    uint64_t firstBusy = 0, lastBusy = 0;  // first and last instant of work
    bool anyBusy = false;
    uint64_t ops = 0, timedOps = 0, sampledOutOps = 0;
    uint64_t lostOps = 0;     // flagged timed by the shim, but no span came (an end event recorded too late)
    uint64_t unknownOps = 0;  // untimed, and nothing alike was timed: placed without a duration of their own
    uint64_t heldUpOps = 0, heldUpNs = 0;  // lost, the thread held up inside the call (wire::kCallHeldUp)
    uint64_t kernelNs = 0, transferNs = 0, otherNs = 0;
    uint64_t upperBoundOps = 0, upperBoundNs = 0;  // timed ops whose span is only an upper bound, their lengths
    // Cumulative idle time at the ends of final gaps, (time, idle so far) at each gap's begin and end:
    // the idle time between any two instants (sync-in-loop). Thinned when long.
    std::vector<std::pair<uint64_t, uint64_t>> idleLog;
    uint64_t idleBetween(uint64_t from, uint64_t to) const;
};

// Per stream of one process: its work on the device timeline.
struct StreamAcc {
    StreamId id;
    uint64_t ops = 0, estimatedOps = 0;
    Times busy{};  // summed lengths per pass (a stream runs one operation at a time)
};

struct ProcState;  // collector/analyze/window.cpp

struct KernelAcc {
    KernelRow row;
    QuantileSketch gpu, host;
    SiteTally sites;
};
struct TransferAcc {
    TransferRow row;
    QuantileSketch host;
    SiteTally sites;
};
struct SyncAcc {
    SyncRow row;
    QuantileSketch host;
    SiteTally sites;
};
struct ApiAcc {
    std::string category;
    uint64_t errors = 0;
    std::map<int32_t, uint64_t> errorCodes;  // CUresult -> calls that returned it
    QuantileSketch host;
};
// Explicit waits from one call site of one process (sync-in-loop).
struct LoopSyncAcc {
    uint64_t count = 0, blocked = 0, busy = 0, first = UINT64_MAX, last = 0;
    int device = -1;  // of the first wait
    std::map<std::string, uint64_t> apis;
};
// Allocations and frees from one call site (implicit-sync). A burst: calls from the site one after the
// other on their thread, no other call between them (allocating 32 buffers in a row is one).
struct HotAllocAcc {
    uint64_t count = 0, hostNs = 0, busyNs = 0;
    uint64_t bursts = 0;
    uint64_t judged = 0, turnsOver = 0;  // calls whose turnover is known (CallInfo::turnover); of which turned
};

// Durations in 64 buckets a factor sqrt(2) apart, each with its count and sum: the cycles of a poll loop
// (one poll's begin to the next's), whose few long ones are the thread off the CPU (spin-wait).
struct CycleHistogram {
    std::array<std::pair<uint64_t, uint64_t>, 64> buckets{};  // count, summed ns
    void add(uint64_t ns);
    void merge(const CycleHistogram& o);
    // The CPU time the cycles took: their sum, a cycle over 64x the median and 100 us counted as the
    // median (the rest of it the thread was descheduled, not polling).
    uint64_t onCpuNs() const;
};
// A thread's queries in a row (spin-wait): cuEventQuery/cuStreamQuery calls with no other call of the
// thread between them, open until another call comes.
struct PollRun {
    uint64_t lastOrdinal = 0;          // CallInfo::threadOrdinal of its last query
    uint64_t firstNs = 0, lastNs = 0;  // its first query's begin, its last one's end
    uint64_t lastBeginNs = 0, lastPollNs = 0;  // its last query's begin and host time
    uint64_t pollNs = 0, notReady = 0; // host time in the queries; those answered CUDA_ERROR_NOT_READY
    uint64_t gaps = 0, shortGaps = 0;  // between its queries; those the thread did nothing in
    CycleHistogram cycles;             // each query's begin to the next one's (the last: its host time)
    uint32_t rawSite = kNoRawSite;     // of its first query
};
// The runs that were busy-waits, from one call site (collector/findings/spin.cpp says which are).
struct SpinAcc {
    uint64_t runs = 0, notReady = 0, spanNs = 0, pollNs = 0;
    CycleHistogram cycles;
};

// An empty graph's launch: the least host time a graph launch costs (NVIDIA's figure), the floor that
// graph-launch-bound's saving and the replay's cheaper-graph-launches fix bring launches down to.
inline constexpr uint64_t kGraphLaunchFloorNs = 2500;

// Graph launches from one call site (graph-launch-bound, collector/findings/launches.cpp).
struct GraphLaunchAcc {
    uint64_t count = 0, hostNs = 0, nodes = 0;
    uint64_t timed = 0, timedGpuNs = 0, timedHostNs = 0;
    uint64_t foundEmpty = 0, emptyHostNs = 0;  // launches whose stream was empty: the GPU waited for them
};

// Device work on the legacy default stream and on streams the program made blocking, per (pid, device)
// (legacy-stream-serialisation, collector/findings/streams.cpp).
struct LegacyMixAcc {
    Matched legacy, blocking;
};

// The findings' accumulators (collector/findings/findings.cpp reads them at the end).
// A process's failed calls (failed_calls.cpp): every call it made, those that failed (a query's
// not-ready aside) and the first of them in host time.
struct FailAcc {
    uint64_t calls = 0, failed = 0, firstNs = UINT64_MAX;
    std::string firstApi;
    int32_t firstCode = 0;
    uint32_t firstRawSite = UINT32_MAX, firstTid = 0;
    std::map<std::string, std::map<int32_t, uint64_t>> byApi;  // api -> CUresult -> calls
    Matched failedCalls;                                      // their sites and host time
    // The process's last call (by begin time): whether it failed (as counted above), and what it was.
    uint64_t lastNs = 0;
    bool lastFailed = false;
    std::string lastApi;
    int32_t lastCode = 0;
    uint32_t lastRawSite = UINT32_MAX, lastTid = 0;
};
struct FindingAccs {
    Matched pageable[2];     // synchronous pageable copies: HtoD, DtoH
    Matched pinned[2];       // counted pinned transfers: HtoD, DtoH (their bandwidth is the reference)
    Matched syncMemcpy, pageableAsync, pinnedAsync, launches, small, pooled, hotAll;
    std::map<uint32_t, LoopSyncAcc> loopSyncs;  // by raw site
    std::map<uint32_t, HotAllocAcc> hotAllocs;  // by raw site
    std::map<uint32_t, HotAllocAcc> streamOrderedAllocs;  // the same for cudaMallocAsync/FromPoolAsync/FreeAsync
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> hotAllocLast;  // (raw site, tid) -> ordinal of its last call
    std::map<std::pair<uint32_t, uint32_t>, PollRun> pollRuns;       // (pid, tid) -> its open run of queries
    std::map<uint32_t, SpinAcc> spins;                               // by raw site of a run's first query
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> syncMemcpySpan;  // by pid: first begin, last end of syncMemcpy
    std::map<uint32_t, std::set<uint64_t>> blockingStreams;            // by pid: streams made without cudaStreamNonBlocking
    std::map<std::pair<uint32_t, int>, LegacyMixAcc> legacyMix;         // by (pid, device)
    std::map<uint32_t, GraphLaunchAcc> graphLaunches;                   // by raw site
    std::map<uint32_t, FailAcc> failures;                               // by pid
};

// NCCL's operations (collector/analyze/collectives.cpp). A process's NCCL kernel launches are noted as
// they pass (noteCollectiveLaunch); when it ends, each of its Collective records is matched to the launch
// that carried it (endCollectives: its rows, and what matching ranks across processes needs); at the end,
// the ranks of each collective are compared (finishCollectives).
struct CollectiveLaunch {
    uint32_t tid = 0;
    int device = -1;
    uint64_t beginNs = 0, stream = 0;
    bool timed = false;  // a sound span (not an upper bound)
    uint64_t gpuBeginNs = 0, gpuEndNs = 0;
};
struct CollectiveBook {
    std::unordered_map<uint32_t, bool> ncclKernel;  // kernel id -> one of NCCL's
    std::vector<CollectiveLaunch> launches;
};
// One timed collective of one rank, for the comparison across ranks.
struct CollectiveArrival {
    uint64_t commId = 0, seq = 0;
    const std::string* op = nullptr;     // sequence numbers count each operation apart
    int rank = 0, nranks = 0;
    size_t row = 0;                      // Context::collectiveRows
    uint64_t gpuBeginNs = 0, gpuEndNs = 0;
    double share = 1;                    // its part of a fused launch's time
    uint64_t launchHostNs = 0;           // its launch call's begin (host)
    uint64_t launch = 0;                 // the launch's number in its process (fused operations share one)
    uint32_t pid = 0;
    int device = -1;
    size_t proc = 0;  // the process's index in Context::processes (pids of several hosts may be the same)
    bool timed = true;                   // its kernel's span is known (else gpuBeginNs/gpuEndNs are 0)
};
void noteCollectiveLaunch(CollectiveBook& book, const ProcView& pv, const CallInfo& ci);
void endCollectives(Context& cx, const Process& p, const ProcView& pv, CollectiveBook& book);
void finishCollectives(Context& cx, Report& r);
// The site label of a stack (as a call site's), for records that are not calls.
std::string siteLabelOf(const ProcView& pv, uint32_t stackId);

struct Context {
    const ReportOptions* options = nullptr;
    std::vector<CallSite> sites;           // named sites; ids are indices (ranked by host time at the end)
    std::vector<RawSite> rawSites;
    std::map<std::string, int> siteIds;    // category '\n' label -> index in sites
    uint64_t wallNs = 0;                   // the capture's span over the selected processes
    uint64_t lateRecords = 0;              // arrived after the window had moved past their time
    size_t windowCalls = size_t(1) << 17;  // calls held per process (about 12 MiB); SIZE_MAX: no window

    std::map<std::string, ApiAcc> apis;
    // Per API, the call sites that reached it through the runtime (cudart's frames below the caller) and
    // those that called the driver directly: an API only ever called directly is named as the driver's
    // (apiDisplay), not as the runtime call that would reach it.
    std::map<std::string, std::pair<uint64_t, uint64_t>> apiCallers;
    std::map<std::tuple<int, std::string, std::string>, TransferAcc> transfers;  // direction, host memory, mode
    std::unordered_map<uint32_t, TransferAcc*> transferOf;  // direction, memory kinds, async -> row
    std::map<std::string, KernelAcc> kernels;  // by demangled name: one row across processes
    KernelAcc hostFunctions;                   // every process's host functions: never a kernel row
    LaunchSummary launches;
    QuantileSketch launchHost;
    std::map<std::pair<std::string, bool>, SyncAcc> syncs;  // api, implicit
    std::map<std::string, NvtxRow> nvtx;
    CaptureWindows captureWindows;
    FindingAccs findings;
    // Per process, in report order.
    std::vector<ProcessSummary> processes;
    std::vector<std::map<int, DeviceAcc>> devices;
    std::vector<std::vector<StreamAcc>> streams;
    std::vector<uint64_t> starts;  // where each process's wall time starts
    std::vector<MemoryBook> memory;  // per process that allocated anything
    std::vector<CollectiveRow> collectiveRows;
    std::vector<CollectiveArrival> collectiveArrivals;
    std::map<std::pair<uint64_t, int>, uint64_t> collectiveLaunches;  // (communicator, rank) -> launches carrying its collectives
    uint64_t collectivesDropped = 0;
    std::vector<LibraryRepeat> libraryRepeats;  // library calls invoked kMinLibraryRepeats times or more

    std::map<const Process*, std::unique_ptr<ProcState>> open;  // processes still streaming
    const Process* lastProcess = nullptr;  // the process of the last record, and its state
    ProcState* lastState = nullptr;

    Context();
    ~Context();  // in collector/analyze/window.cpp, where ProcState is complete
};

inline uint64_t hostNs(const wire::CallBody& c) { return c.endNs > c.beginNs ? c.endNs - c.beginNs : 0; }
inline bool succeeded(const wire::CallBody& c) { return c.result == 0; }
inline bool hasFlag(const wire::CallBody& c, uint16_t f) { return (c.flags & f) != 0; }
inline bool isDeviceOp(const wire::CallBody& c)
{
    return hasFlag(c, wire::kCallDeviceWork) && !hasFlag(c, wire::kCallCapturing) && succeeded(c);
}

std::string demangle(const std::string& mangled);
// "cuMemcpyHtoD_v2 (cudaMemcpy)", or the ABI name alone for an API the program only called directly.
std::string apiDisplay(const Context& cx, const std::string& abiName);
std::string apiRuntimeName(const Context& cx, const std::string& abiName);  // "" then
std::string formatNs(uint64_t ns);     // "1.23 ms"
std::string formatBytes(uint64_t b);   // "64.0 KiB"

// The `top` sites with the most time, from a site -> ns tally.
std::vector<uint32_t> topSites(const std::map<int, uint64_t>& nsBySite, size_t top);
// A raw-site tally as named sites (after rankSites).
std::map<int, uint64_t> namedSites(const Context& cx, const SiteTally& raw);

ApiClass classifyApi(const std::string& abiName);

// Feeds one call, in host time order, to its process's device timeline by the one rule the analysis
// and the exports share: the role from its entry point (a call that synchronised implicitly without
// device work of its own, a free or a host unregister, waited for the device as a context synchronize
// does), whether it is device work (isDeviceOp), whether it blocked (the shim's implicit-sync flag),
// and whether its spans are only upper bounds (gpuSpanIsUpperBound, worked out by the caller).
DeviceTimeline::Result placeOnTimeline(DeviceTimeline& timeline, const ApiClass& api, const wire::CallBody& c,
                                       const std::vector<wire::GpuSpanBody>* spans, bool upperBound);

// Every call of a process held in memory, in host time order (`calls`), through a device timeline as
// placeOnTimeline feeds it: each placement (measured spans and inferred ones) with its stream
// (collector/analyze/place_process.cpp).
void placeProcess(const Process& p, const std::vector<const wire::CallBody*>& calls,
                  const std::function<void(const Placement&, const StreamId&)>& out);

// The window (collector/analyze/window.cpp): records in, CallInfos out in time order.
ProcState& procState(Context& cx, const Process& p);
// Capture windows (collector/analyze/capture_windows.cpp): calls recorded per window, counted by category.
struct WindowTally {
    uint64_t calls = 0;
    uint64_t byCategory[wire::kWindowCategories] = {};
};
void finishCaptureWindows(Context& cx, const Process& p, const std::map<uint32_t, WindowTally>& tallies);
void captureWindowFindings(Context& cx, Report& r);
void addEvent(Context& cx, ProcState& ps, const wire::RecordView& v);
void addCall(Context& cx, ProcState& ps, const wire::CallBody& c);
void addSpan(Context& cx, ProcState& ps, const wire::GpuSpanBody& s);
void addNvtx(Context& cx, ProcState& ps, const wire::NvtxBody& n);
void endProcess(Context& cx, const Process& p);
void dropProcess(Context& cx, const Process& p);  // a process left out of the report

// The API summary's part of a call (collector/analyze/analyze.cpp).
void addApi(Context& cx, const CallInfo& ci);
// Names the process's raw sites once its symbols are in (collector/analyze/analyze.cpp).
void resolveSites(Context& cx, const ProcView& pv, const std::vector<uint32_t>& rawSites);
uint32_t rawSiteOf(Context& cx, std::unordered_map<uint64_t, uint32_t>& index, std::vector<uint32_t>& owned,
                   const wire::CallBody& c);

// Per-call accumulation, one per section.
void addTransfer(Context&, const ProcView&, const CallInfo&);
void addLaunch(Context&, const ProcView&, const CallInfo&);
void addSync(Context&, const ProcView&, const CallInfo&);
void addFindingCall(Context&, const ProcView&, const CallInfo&);
// Graphs (collector/analyze/graphs.cpp): every call goes by (captures, instantiations); a graph launch counts its
// nodes in the kernel and transfer rows (addLaunch calls addGraphLaunch).
void addGraphCall(Context&, const ProcView&, const CallInfo&);
void addGraphLaunch(Context&, const ProcView&, const CallInfo&);
// The transfer row of a direction x host memory x mode ("sync", "async", "graph"), made on first use.
TransferAcc& transferAccOf(Context&, const wire::TransferArgs& t, const char* mode);
void addToBucket(TransferRow& row, uint64_t bytes);
// The kernel row of a launch call of this process (the host functions' row, Context::hostFunctions, when
// it launched one).
KernelAcc& kernelAccOf(Context&, const ProcView&, const wire::CallBody& c, bool hostFunction);

// The sections' rows, at the end.
void finishApis(Context&, Report&);
void finishTransfers(Context&, Report&);
void finishLaunches(Context&, Report&);
void finishSyncs(Context&, Report&);
void finishNvtx(Context&, Report&);
void finishMemory(Context&, Report&);
void analyzeFindings(Context&, Report&);

// Where a GPU time comes from (collector/README.md, "GPU time sources"). The shim times device work
// with CUDA events on the app's stream. A call that blocked (a synchronous copy or memset, a pageable
// "async" copy) on a stream with nothing queued has a begin event that completes as the call starts,
// while its device work only begins after the driver's host work before submission (staging, for
// pageable memory); and its span ends at the call's return. Events cannot see where such work began:
// its span is only an upper bound on the device time. When earlier work held the begin event back
// (it completed later than the slack after the call's begin), the work started then, and the span
// is measured. The slack covers the driver's submit-to-start latency with room to spare: a span
// wrongly called a bound is still a true bound, one wrongly called measured would not be.
inline constexpr uint64_t kIdleStreamSlackNs = 20000;
bool gpuSpanIsUpperBound(const wire::CallBody& c, const wire::GpuSpanBody& s);

// Transfers: the kind of host memory involved, and whether a call counts as one (moved data).
std::string transferHostMemory(const wire::TransferArgs& t);
bool isCountedTransfer(const wire::CallBody& c);
// A kernel launch that ran (succeeded, not recorded into a capture); a host function is none.
bool isCountedLaunch(const ApiClass& api, const wire::CallBody& c);

// Explicit host waits: context, stream and event synchronization and the query polls.
bool isExplicitSync(std::string_view abiName);
// Calls the shim flagged as synchronising implicitly, less those that cannot wait (a free of null).
bool isImplicitSync(const ProcView& pv, const wire::CallBody& c);
bool isImplicitSync(const ApiClass& api, const wire::CallBody& c);
bool isQuery(std::string_view abiName);

}  // namespace gpuspy::collect::detail
