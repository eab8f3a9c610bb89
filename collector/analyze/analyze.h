// collector/analyze/analyze.h: the diagnosis of a capture: where host time goes (transfers, launches, blocking
// syncs), per call site, and findings that say what to change. analyze() is pure (no I/O); the Report
// is plain data that mirrors the JSON schema "gpuspy.report/1" (see collector/report/report.h for the renderers).
#pragma once

#include "collector/model/model.h"
#include "wire/codec.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpuspy::collect {

struct ReportOptions {
    size_t top = 10;  // call sites listed per row and per finding; rows shown in the text tables
    int pid = -1;     // only this process; -1 for all
    bool byLaunchConfig = false;  // kernels split by grid and block (a row per kernel and launch configuration)
};

// Order statistics of a set of durations (ns). median: mean of the two middle values for an even count;
// p99: nearest rank. (The report's rows use QuantileSketch, collector/analyze/quantile.h, which calls this while
// it holds every value.)
struct DurationStats {
    uint64_t count = 0, total = 0, min = 0, max = 0, median = 0, p99 = 0;
    double avg = 0;
};
DurationStats durationStats(std::vector<uint64_t> values);

struct ReportFrame {
    std::string function;  // demangled; empty if unknown
    std::string file;
    uint32_t line = 0;
    std::string module;    // path of the ELF object; empty if unknown
    uint64_t offset = 0;   // address - load bias
    uint64_t address = 0;
    bool inlined = false;
    bool app = true;       // false for CUDA runtime/driver/library and gpuspy frames
    bool python = false;   // a Python frame: function, file and line of the interpreted code
    std::string callee;    // Frame::callee: what the call instruction at this return address calls
};

// Where calls come from: the first frame of the application's own code (function + file:line), or
// module+offset when there are no symbols.
struct CallSite {
    uint32_t id = 0;
    std::string category;  // transfer, launch, sync, alloc
    std::string label;     // "main (app.cu:42)", "app+0x1234", "(no stack)"
    std::vector<ReportFrame> frames;  // the whole stack of the first call seen here, innermost first
    size_t siteFrame = 0;             // index in frames of the frame the site is named after
    uint64_t count = 0, ns = 0;       // calls and their host time
    std::vector<std::string> apis;    // entry points called from here
    // The library call the CUDA calls were made inside ("cusolverDnSsyevd (libcusolver.so.12)",
    // "thrust::sort (thrust)", "Buffer.upload (gpukit)"), or on a library's own thread; "" when the
    // user's code made them: advice on how to make them is for the user's calls only.
    std::string libraryCall;
    // Calls no code of the user's stands behind (no app frame, a whole stack): "thread" on a thread the
    // library started itself (NCCL's proxy and async-init threads), "exit" in an exit handler (a library's
    // teardown after main returned); "" otherwise. Both are setup and teardown, never the user's loop.
    std::string libraryOwn;
};

// The end of one rank's part of a collective (its launch's GPU end), on its process's clock: the ranks
// of a collective end together, which refines the alignment of several captures' clocks.
struct CollectiveEnd {
    uint64_t commId = 0;
    std::string op;     // sequence numbers count each operation apart
    uint64_t seq = 0;
    int rank = 0;
    uint64_t endNs = 0;
};
inline constexpr size_t kMaxCollectiveEnds = 1u << 18;

// How one capture of several read as one run was put on the first's clock (collector/analyze/clock_align.h).
struct ClockAlignment {
    std::string name;
    bool sameHost = false;  // on the first capture's host (its wall-clock shift is then exact to the pairs)
    // Added to every time of this capture to put it on the first capture's clock.
    int64_t shiftNs = 0;
    int64_t wallShiftNs = 0;  // what the wall-clock pairs alone gave (0 when either has none)
    // "reference" (the first capture), "collectives" (refined by matched collective ends), "wall_clock"
    // (no collective in common with the captures aligned before it), "none" (neither: left as recorded).
    std::string basis;
    uint64_t pairErrorNs = 0;      // the two pairs' half-brackets summed: the wall-clock shift's error on one host
    size_t matched = 0;            // collective ends matched with those of captures aligned before it
    uint64_t residualSpreadNs = 0; // after the refinement: the median of |residual - correction|
    uint64_t residualMaxNs = 0;    // and its largest
};


struct ProcessSummary {
    uint32_t pid = 0, ppid = 0;
    std::string command;
    // Who it is (Process::identity): its launcher's rank and world size (-1: unknown) and its host; the
    // capture it came from when several were read as one run (`gpuspy report A B`), else empty.
    int rank = -1, localRank = -1, worldSize = -1;
    std::string launcher, host, capture;
    uint64_t wallNs = 0;           // from the shim's start to the end of the stream (or the last record)
    uint64_t cudaApiNs = 0;        // host time inside hooked CUDA calls
    double cudaApiPct = 0;         // of wall
    uint64_t gpuspyOverheadNs = 0; // gpuspy's own time on the app's threads
    // How long its threads were ready to run but waited for a CPU (at least: wire::CpuWaitBody); the
    // host's load on it, which `gpuspy diff` weighs against a change of wall time. Unknown for a stream
    // that did not end cleanly.
    uint64_t cpuWaitNs = 0;
    bool cpuWaitKnown = false;
    // What GPU timing cost the process's threads, from their GpuBudget records (known: any came): every
    // part of its work charged to the thread's budget (event records, bookkeeping, the choice made on
    // every call, the drain's reads of its events), the time that budget was earned over (each thread's
    // first to last choice, summed) and the spans it timed but set aside (untrustworthy on a loaded host).
    struct GpuTimingCost {
        bool known = false;
        uint32_t budgetPpm = 0;
        uint64_t recordNs = 0, bookkeepingNs = 0, choosingNs = 0, drainNs = 0;
        uint64_t overNs = 0;
        uint64_t timedOps = 0, untimedOps = 0, lateEndSpans = 0, heldUpSpans = 0;
        uint64_t spentNs() const { return recordNs + bookkeepingNs + choosingNs + drainNs; }
    } gpuTiming;
    uint64_t droppedRecords = 0, recordsMade = 0;
    uint64_t calls = 0, threads = 0;
    uint64_t activeBeginNs = 0, activeEndNs = 0;  // first to last CUDA call
    uint64_t deviceOps = 0, timedOps = 0, sampledOutOps = 0;
    bool ended = false;
    std::string streamError;
    std::vector<std::string> notices;  // what the shim said the capture cannot show (an attach at its start)
};

// Device figures come from the device timeline (collector/timeline/device_timeline.h): every device operation
// placed on its stream, measured where it was timed, inferred where not. busyNs is the estimate;
// busyLoNs..busyHiNs the interval it may lie in (equal to it when every operation was timed).
struct DeviceSummary {
    uint32_t pid = 0;
    int id = 0;
    std::string name;
    std::string uuid;  // "GPU-xxxxxxxx-...", as nvidia-smi prints it; "" when unknown
    std::string host;  // its process's host (several captures read as one run: GPU 0 of each node)
    uint64_t activeNs = 0;  // the process's active span
    uint64_t busyNs = 0;    // union of the device's work inside it (measured and placed)
    double busyPct = 0;
    uint64_t busyLoNs = 0, busyHiNs = 0;
    double busyPctLo = 0, busyPctHi = 0;
    // "measured": every operation timed; "upper_bound": every one timed, some only as an upper bound (a
    // blocking copy on an idle stream: busyNs holds all of its span, busyLoNs none of it); "estimated":
    // some placed by inference.
    std::string busyBasis = "measured";
    uint64_t estimatedOps = 0;           // operations placed by inference (untimed, or their timing lost)
    uint64_t lostOps = 0;                // of which the shim meant to time but whose end event came too late
    uint64_t unknownOps = 0;             // of which had no timed sibling to give them a duration
    // Of the lost ones, those whose thread was held up (off the CPU) inside the call: when their work
    // was sent is unknown within the call, so each may sit anywhere in its call's host time (heldUpNs,
    // summed): idle gaps can be off by up to that much.
    uint64_t heldUpOps = 0, heldUpNs = 0;
    uint64_t ops = 0, timedOps = 0, sampledOutOps = 0;
    uint64_t kernelNs = 0, transferNs = 0, otherNs = 0;  // sums of span lengths by kind
    // Timed ops whose span is only an upper bound (a blocking copy or memset on an idle stream, see
    // TransferRow::gpuTime) and their summed lengths: busyNs includes them, so with any it is an upper
    // bound too.
    uint64_t upperBoundOps = 0, upperBoundNs = 0;
    uint64_t idleGapNs = 0, largestGapNs = 0, gaps = 0;  // between device operations (estimated timeline)
    uint64_t starvedNs = 0;  // idle gaps while no host thread of the process was inside CUDA
    uint64_t largestStarvedNs = 0;  // the longest single such stretch (often start-up)
    // Of starvedNs, the host time inside library calls between their CUDA calls (cuBLAS building its
    // handle, cuFFT a plan): the library's own work, not the user's; the largest single stretch of the
    // rest; and the libraries ("libcublas.so.13"), by their host time.
    uint64_t starvedInLibraryNs = 0, largestUserStarvedNs = 0;
    std::vector<std::string> starvedLibraries;
    // Idle while the host was inside a library invocation, the CUDA calls it made included (its one-time
    // setup: cuBLAS loading its modules inside cublasCreate): not in the base gpu-starved's share is of.
    uint64_t idleInLibraryNs = 0;
    // Idle gaps while the process waited for work: a thread paused over 1 ms before its next CUDA call with
    // the process using under a tenth of a CPU (blocked in poll, accept, sleep; wire::kCallIdleBefore).
    // Not in starvedNs: a server between requests is not starved.
    uint64_t waitingNs = 0;
};

// One stream's work on the device timeline.
struct StreamSummary {
    uint32_t pid = 0;
    int device = 0;
    std::string name;  // "stream 0x55d1c0", "default stream", "per-thread stream of tid 123"
    uint64_t ops = 0, estimatedOps = 0;
    uint64_t busyNs = 0, busyLoNs = 0, busyHiNs = 0;
    double busyPct = 0;  // of the process's active span
};

// One row of the CUDA API summary (like nsys cuda_api_sum).
struct ApiRow {
    std::string api, display, category;
    std::string runtime;  // the runtime call that reaches it, "" when the program called the driver directly
    DurationStats host;
    uint64_t errors = 0;  // calls that returned something other than CUDA_SUCCESS
    struct ErrorCode {
        int32_t code = 0;
        std::string name;  // CUDA_ERROR_...
        uint64_t calls = 0;
    };
    std::vector<ErrorCode> errorCodes;  // most frequent first
};

struct SizeBucket {
    std::string label;      // "<=64KiB", "<=1MiB", ">1MiB"
    uint64_t maxBytes = 0;  // 0 = no limit
    uint64_t count = 0, bytes = 0;
};

struct TransferRow {
    std::string direction;   // HtoD, DtoH, DtoD, PtoP, Memset (HtoH, Prefetch, Unknown if seen)
    std::string hostMemory;  // pageable, pinned, managed, device (unknown if not known)
    std::string mode;        // sync or async (the API form)
    uint64_t count = 0, bytes = 0;
    uint64_t gpuNs = 0, hostNs = 0;
    uint64_t timedCount = 0, timedBytes = 0;
    // Of the timed ones, those whose span is only an upper bound on the device time (a copy or memset
    // that blocked the call on an idle stream: CUDA events cannot see when its device work began), and
    // their part of gpuNs. With any, gpuNs is an upper bound and gbps a lower bound.
    uint64_t upperBoundCount = 0, upperBoundGpuNs = 0;
    const char* gpuTime() const { return !timedCount ? "none" : upperBoundCount ? "upper_bound" : "measured"; }
    double gbps = 0;         // timedBytes / gpuNs when timed, else bytes / hostNs (graph rows: bytes / graphGpuNs)
    std::string gbpsBasis;   // "gpu", "host" or "graph_estimate"
    DurationStats host;
    std::vector<SizeBucket> buckets;
    std::vector<std::string> apis;
    std::vector<uint32_t> callsites;  // top sites by host time
    // Graph work (mode "graph"): copies and memsets run as nodes of graph launches, counted in count and
    // bytes at the graph launch's call site; their GPU time is the launches' measured time split over
    // the nodes (graphGpuNs, an estimate, not in gpuNs).
    uint64_t graphCount = 0, graphGpuNs = 0;
};

struct KernelRow {
    std::string name, mangled;
    std::string launchConfig;  // "grid 64x1x1 block 128x1x1" when split by launch configuration (--by-launch-config)
    uint64_t count = 0, timedCount = 0;
    uint64_t gpuNs = 0;         // sum over timed launches
    uint64_t estimatedGpuNs = 0; // gpuNs scaled to every launch (= gpuNs when all were timed)
    DurationStats gpu;          // over timed launches
    uint64_t launchHostNs = 0, medianLaunchHostNs = 0;
    bool launchBound = false;   // median GPU time below the median host cost of launching it
    uint64_t emptyStreamLaunches = 0;  // launches that found their stream empty: the GPU waited for them
    std::vector<uint32_t> callsites;
    // Of count, the runs as a node of a graph launch (at the launch's call site), and their GPU time:
    // the launches' measured time split over their nodes, by this kernel's standalone timings where it
    // has any, else an even share of the rest (an estimate; in estimatedGpuNs, not in gpuNs or gpu).
    uint64_t graphCount = 0, graphGpuNs = 0;
};

struct LaunchSummary {
    uint64_t count = 0;         // kernel launches that succeeded and were not captured (host functions are not)
    double perSecond = 0;       // over the active span(s)
    DurationStats host;         // host time in launch calls
    uint64_t hostNs = 0, medianHostNs = 0, p99HostNs = 0;
    uint64_t timed = 0, sampledOut = 0;
    uint64_t captured = 0;      // launches recorded into a stream capture (no device work then)
    uint64_t failed = 0;
    uint64_t graphLaunches = 0, graphHostNs = 0, graphGpuNs = 0;
    uint64_t graphNodes = 0;        // kernels, copies and memsets the graph launches ran (counted in their rows)
    uint64_t graphsUnknown = 0;     // graph launches whose graph's nodes were not seen (built without capture)
    uint64_t graphEventNodes = 0;   // event record and wait nodes the graph launches ran (no device work: untimed)
    uint64_t launchBoundKernels = 0;
    std::vector<std::string> launchBoundNames;
    uint64_t idleGapNs = 0, largestGapNs = 0;  // over all devices
    std::string samplingNote;   // says how GPU totals were scaled when launches were sampled out
};

struct SyncRow {
    std::string api, display;
    bool implicit = false;     // the API synchronises as a side effect (sync copy, free, ...)
    std::string kind;          // context, stream, event, query, copy, memset, free, register, module, other
    uint64_t count = 0;
    uint64_t blockedNs = 0;    // host time in these calls
    uint64_t gpuBusyNs = 0;    // of which the GPU (the call's device) was busy
    uint64_t upperBoundCount = 0;  // calls whose own GPU span, counted in gpuBusyNs, is only an upper bound
    uint64_t notReady = 0;     // queries that returned CUDA_ERROR_NOT_READY
    DurationStats host;
    std::vector<uint32_t> callsites;
};

// NCCL's operations (collector/analyze/collectives.cpp), one row per process, communicator, rank and
// operation: what the user's calls asked, and the device time of the kernels that carried them.
struct CollectiveRow {
    uint32_t pid = 0;
    uint64_t commId = 0;
    int rank = 0, nranks = 0, nNodes = 0;
    std::string op;          // "AllReduce", "Send", ...
    bool pointToPoint = false;
    std::string datatype;    // as NCCL names it ("ncclFloat32"); "mixed" when the calls differ
    std::string algorithm;   // "RING/SIMPLE"; "mixed" when the calls differ; empty for point-to-point
    uint64_t calls = 0;
    uint64_t bytes = 0;      // summed message sizes (see collectiveBytes)
    uint64_t maxBytes = 0;   // the largest call's
    // The kernels that carried them: calls matched to their launch, of which timed; their device time,
    // a fused launch's (several operations of a group on one communicator) split by bytes.
    uint64_t launched = 0, timed = 0, fused = 0;
    uint64_t gpuNs = 0;           // over the timed calls
    uint64_t timedBytes = 0;      // their bytes
    uint64_t estimatedGpuNs = 0;  // scaled to every launched call (= gpuNs when all were timed)
    double algBwGBps = 0, busBwGBps = 0;  // bytes / gpu time of the timed calls; busbw by nccl-tests' factors
    // Of the timed calls whose every rank is in the capture (`withPeers`): how long this rank's kernel
    // started before the last rank's (waiting for peers, as an early rank's kernel does), and the rest.
    uint64_t withPeers = 0, waitNs = 0, moveNs = 0;
    std::string site;        // the user's call (its stack's site label)
};

// A rank that arrived last at its communicator's collectives (collector/analyze/collectives.cpp): of the
// collectives whose every rank is in the capture and timed, those it reached last, and by how much.
struct StragglerRow {
    uint32_t pid = 0;
    uint64_t commId = 0;
    int rank = 0, nranks = 0, device = -1;
    uint64_t collectives = 0;   // its communicator's collectives in the capture (this rank's calls, fused ones once)
    uint64_t compared = 0;      // of which every rank's kernel was timed
    uint64_t medianIntervalNs = 0;  // between the communicator's compared collectives (a step's length)
    uint64_t last = 0;          // of which it arrived last, after the rank before it by over kLateNs
    uint64_t lateNs = 0;        // summed: its arrival less the rank before it (what each such collective would end sooner)
    uint64_t medianLateNs = 0;
    uint64_t othersWaitNs = 0;  // summed over those collectives and the other ranks: their kernels' time waiting for it
    // Why it was late, collective by collective: its kernel launch came late on the host (later than the
    // others' launches by at least half its lateness), or its stream was still busy with earlier work.
    uint64_t hostLate = 0, gpuLate = 0;
    uint64_t medianHostLagNs = 0;  // of the host-late ones: its launch less the last other rank's launch
    // Collectives whose last rank is known though its kernel was not timed (its span lost: the launch's
    // thread held up with its work on an idle stream): its launch call began after every other rank's
    // kernel had started, so it arrived last, later than them by at least that (lateLowNs). Counted apart:
    // their lateness and waits are bounds, not measured.
    uint64_t ordered = 0;       // the communicator's such collectives
    uint64_t lastOrdered = 0;   // of which this rank was the one
    uint64_t lateLowNs = 0;     // summed: its launch's begin less the last other rank's kernel start (a lower bound)
};

struct NvtxRow {
    std::string name;
    uint64_t ranges = 0, rangeNs = 0;  // range instances and their summed duration
    uint64_t calls = 0, cudaApiNs = 0;
    uint64_t transfers = 0, transferBytes = 0, transferHostNs = 0;
    uint64_t launches = 0, launchHostNs = 0;
    uint64_t syncs = 0, syncBlockedNs = 0;
    uint64_t gpuNs = 0;  // GPU time of the work submitted inside
    // Calls inside whose GPU time is only an upper bound (see TransferRow), and their part of gpuNs:
    // with any, gpuNs is an upper bound.
    uint64_t upperBoundCount = 0, upperBoundGpuNs = 0;
};

// What the replay (collector/replay/predict.h) made of a finding's fix: the run's dependency graph replayed
// with the fix applied to the finding's own calls, against the graph replayed unchanged.
struct FindingPrediction {
    std::string fix;              // the fix as `gpuspy whatif --fix` names it; empty: no prediction made
    uint64_t formulaNs = 0;       // the rule's own estimate, which the prediction replaces
    std::string formulaBound;     // and how to read it (estimate, at_most, at_least)
    uint64_t savingNs = 0;        // replay(unchanged) - replay(fixed), summed over the processes
    // Where a cost the fix needs is assumed (no sample in the capture): the saving at either end of the
    // assumed cost's range; both equal savingNs otherwise.
    uint64_t lowNs = 0, highNs = 0;
    uint64_t wallNs = 0, fixedWallNs = 0;  // the replay's wall unchanged and with the fix (the longest process)
    uint64_t changed = 0, kept = 0;        // calls the fix changed, and calls it had to keep
    std::string keptWhy;
    double replayErrorPct = 0;             // the unchanged replay against the measured wall (the worst process)
    std::vector<std::string> costs;        // the calibrated costs the fix rests on, with their sources
    uint32_t processes = 0;                // processes replayed
    // A process past the reader's budget is replayed on a window of its latest calls and its saving
    // extrapolated to the whole run (collector/replay/extrapolate.h): windowCalls of processCalls calls
    // (summed over such processes; 0: none was), the finding's calls in the window and in the run; lowNs and
    // highNs then also span the window's halves' extrapolations and the window replay's error.
    uint64_t windowCalls = 0, processCalls = 0, findingWindowCalls = 0, findingCalls = 0;
    uint64_t findingWindowNs = 0, findingNs = 0;  // the finding's calls' host time in the window, in the run
};

struct Finding {
    std::string rule;      // pageable-memcpy, sync-memcpy, ...
    std::string severity;  // high, medium, low (by savings as a share of wall time); info: no saving
    std::string message;   // what happened, what to change, and the assumption behind the estimate
    uint64_t count = 0;    // calls (or launches, gaps, records) involved
    uint64_t ns = 0;       // host or GPU time involved
    uint64_t estimatedSavingsNs = 0;
    // Host CPU time the fix frees, apart from wall time (spin-wait: a thread polling instead of sleeping).
    uint64_t hostCpuSavingsNs = 0;
    // How to read estimatedSavingsNs: "estimate"; "at_most" or "at_least" where it rests on GPU times
    // that are only upper bounds (the message says why).
    std::string savingsBound = "estimate";
    std::vector<std::pair<std::string, double>> evidence;  // named numbers, in order
    std::vector<uint32_t> callsites;
    // Every (pid, stack id) its calls came from: the calls its fix changes in the replay.
    std::vector<std::pair<uint32_t, uint32_t>> stacks;
    // library-setup-in-loop: the library invocation (its key, collector/analyze/library_time.h) each of those
    // stacks' calls were made inside; the replay's keep-library-setup fix groups the calls by it.
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> invocationKeys;
    // The rules of the other findings that cover some of the same calls (a shared call site, pid and
    // stack: sync-memcpy and pageable-memcpy on the same copies): their savings do not add.
    std::vector<std::string> overlaps;
    FindingPrediction prediction;
};

// A finding's severity by its saving as a share of the wall time: high from 10%, medium from 2%, else
// low. The findings' order: by saving, then by host CPU freed, then by the time involved (the rules' and
// the replay's alike).
std::string findingSeverity(uint64_t savingsNs, uint64_t wallNs);
void rankFindings(std::vector<Finding>& findings);
// Sets each finding's `overlaps` from the calls they share (after the rules; the stacks are final).
void markOverlappingFindings(std::vector<Finding>& findings);
// What the findings would save together without counting a call twice: each group of findings linked by
// overlaps counts once, by its largest saving (a lower bound of fixing them all: the fixes of one set of
// calls do not add up).
uint64_t combinedSavingsNs(const std::vector<Finding>& findings);

// A capture window (record --capture-range, --delay/--duration, ctl start/stop): when it was open and
// what it recorded; the calls left out (not recorded) in the gap before it and, for the last, after it.
struct CaptureWindowRow {
    uint32_t pid = 0;
    uint32_t index = 0;             // from 1 in its process
    std::string trigger;            // cudaProfilerApi, nvtx, time, control, start (recording from the start)
    std::string endedBy;            // the same kinds, or "exit" when the process ended inside it
    uint64_t beginNs = 0, endNs = 0;  // from the process's start
    uint64_t calls = 0, launches = 0, transfers = 0, syncs = 0, allocs = 0;
    uint64_t leftOutBefore = 0;     // calls not recorded between the previous window (or the start) and this one
    uint64_t leftOutLaunchesBefore = 0;
    bool empty() const { return calls == 0; }
};
struct CaptureWindows {
    bool used = false;                  // some process recorded in windows
    std::vector<CaptureWindowRow> rows; // by process, then window
    uint64_t leftOut = 0, leftOutLaunches = 0;  // every call not recorded, all processes
    uint64_t leftOutAfter = 0;          // of which after the last window
    uint64_t emptyWindows = 0;
};

// GPU memory (collector/analyze/memory.cpp): one memory space of one process, from every allocation and
// release the shim recorded, in host time order. Times are ns since the process's first CUDA call.
struct MemoryHolding {
    uint32_t callsite = 0;
    uint64_t bytes = 0, allocations = 0;
};
struct MemoryLive : MemoryHolding {
    uint64_t firstNs = 0, lastNs = 0;  // when the allocations still held were made
    // A leak: the site's allocations still held were made again and again through the run (not a
    // setup's buffers kept until exit: "kept").
    bool leak = false;
};
struct MemoryFailure {
    uint64_t atNs = 0, bytes = 0;  // the size asked
    std::string api, error;
    uint32_t callsite = 0;
    uint64_t inUse = 0;  // in the space when it failed
    uint64_t poolUnusedMin = 0;  // kept reserved but unused by stream-ordered pools then (a floor)
    std::vector<MemoryHolding> holders;
};
// A stream-ordered pool (cudaMallocAsync's): what it served and, by CUDA's documented rule (it gives
// back what it reserves beyond its release threshold only at a synchronize or a trim), a floor on what it
// kept reserved; the driver may keep more (collector/timeline/pool_reserve.h).
struct MemoryPoolRow {
    std::string pool;              // "default" (the device's), or "created" (cudaMemPoolCreate)
    uint64_t releaseThreshold = 0; // bytes; the default is 0
    bool thresholdSet = false;     // the program set it
    uint64_t allocations = 0, peakUsedBytes = 0, usedEndBytes = 0;
    uint64_t peakReservedMinBytes = 0, reservedMinEndBytes = 0;
    uint64_t grows = 0, regrows = 0, regrowBytes = 0;  // times it reserved more; of them, memory it had given back
    uint64_t releasesAtSync = 0, trims = 0, releasedBytes = 0;
    uint64_t growHostNs = 0, servedHostNs = 0, served = 0;  // host time of the allocations that grew it, and the rest
    bool destroyed = false;
    std::vector<uint32_t> regrowSites;  // the call sites whose allocations grew it back, most first
    // Their raw sites and (pid, stack id)s: the replay's scope (not in the JSON).
    std::vector<uint32_t> regrowRaw;
    std::vector<std::pair<uint32_t, uint32_t>> regrowStacks;
    uint64_t unusedMinEndBytes() const { return reservedMinEndBytes > usedEndBytes ? reservedMinEndBytes - usedEndBytes : 0; }
};
struct MemoryRow {
    uint32_t pid = 0;
    int device = -1;     // -1: pinned host memory
    std::string space;   // device, managed, pinned_host
    uint64_t allocations = 0, releases = 0, failed = 0, allocatedBytes = 0;
    uint64_t peakBytes = 0, peakNs = 0, inUseEndBytes = 0;
    uint64_t peakUntilNs = 0;  // when the peak ended (the first release after it); the last change when held to the end
    // Releases of memory never seen allocated (allocated before the capture began: an attach).
    uint64_t unknownReleases = 0;
    uint64_t untracked = 0;  // allocations past the bound kept (not in the figures)
    // Attached to a running process: what was allocated before the attach is unknown (not in the figures).
    bool attached = false;
    std::vector<MemoryHolding> atPeak;   // largest first
    std::vector<MemoryLive> liveAtEnd;   // largest first
    std::vector<MemoryFailure> failures;
    std::vector<std::pair<uint64_t, uint64_t>> series;  // (ns, bytes in use)
    // A device's stream-ordered pools (none for the other spaces), and with any, the bytes in use plus what
    // they kept reserved but unused (a floor) over time and at most.
    std::vector<MemoryPoolRow> pools;
    // VMM address space reserved (cuMemAddressReserve .. cuMemAddressFree), at most and at the end: not memory
    // (what is mapped into it counts in use), the room a VMM allocator set aside.
    uint64_t vmmReservedPeakBytes = 0, vmmReservedEndBytes = 0;
    std::vector<std::pair<uint64_t, uint64_t>> heldSeries;
    uint64_t peakHeldMinBytes = 0, peakHeldNs = 0;
    uint64_t leakedBytes() const  // still held at the end by the sites that leak
    {
        uint64_t n = 0;
        for (const MemoryLive& l : liveAtEnd) n += l.leak ? l.bytes : 0;
        return n;
    }
};

// What set the end of a process's run, as the replay of its dependency graph finds it (collector/replay):
// the critical path's stretches summed per thread (host work and calls' host cost), per stream (device
// work) and per submission latency, largest first; and the threads none of whose time is on it (their
// work ends before the run does, or something else always waits longer): shortening their calls would
// not shorten the run.
struct CriticalPathPart {
    std::string kind;  // "host", "device", "latency"
    std::string what;  // "tid 12 (main)", "GPU 0 stream 0x5" ...
    uint64_t ns = 0;
    // Which lane: a host part's thread; a device or latency part's device and stream (handle, per-thread
    // default stream of `tid`).
    uint32_t tid = 0;
    int device = -1;
    uint64_t stream = 0;
    bool perThread = false;
};
struct OffPathThread {
    uint32_t tid = 0;
    std::string thread;
    uint64_t endNs = 0;     // its last call's return, from the process's start (replayed)
    uint64_t cudaNs = 0;    // its host time inside CUDA calls
};
struct CriticalPath {
    uint32_t pid = 0;
    uint64_t wallNs = 0;          // the unchanged replay's wall
    double replayErrorPct = 0;    // against the measured wall
    std::vector<CriticalPathPart> parts;
    std::vector<OffPathThread> offPath;
};

struct Report {
    std::string schema = "gpuspy.report/1";
    ReportOptions options;
    uint64_t badStreams = 0;
    std::vector<ProcessSummary> processes;
    std::vector<OutsideProcess> outside;  // the recorded tree's processes not in the streams (Capture::outside)
    std::vector<DeviceSummary> devices;
    std::vector<StreamSummary> streams;
    std::vector<ApiRow> apis;           // by total host time
    std::vector<TransferRow> transfers; // by host time
    std::vector<KernelRow> kernels;     // by GPU time
    std::vector<MemoryRow> memory;      // per process and memory space
    // Host functions (cudaLaunchHostFunc, graph host nodes): host code a stream runs in its order, holding
    // the stream while it runs. Not kernels: never in `kernels`, the launch counts or launch-bound
    // findings. Named "[host function]"; gpuNs, gpu and estimatedGpuNs are the time they held their
    // stream (launchBound and emptyStreamLaunches unused).
    KernelRow hostFunctions;
    LaunchSummary launches;
    std::vector<SyncRow> syncs;         // by blocked time
    std::vector<NvtxRow> nvtx;          // by range time
    std::vector<CollectiveRow> collectives;  // by GPU time
    std::vector<StragglerRow> stragglers;    // by othersWaitNs
    uint64_t collectivesDropped = 0;         // operations past the reader's bound (model.h kMaxCollectives)
    // Not rendered: each timed collective's end on its rank's clock, for putting several captures on one
    // clock (collector/analyze/clock_align.h); at most kMaxCollectiveEnds.
    std::vector<CollectiveEnd> collectiveEnds;
    // Several captures read as one run (`gpuspy report A B ...`): how each was put on the first's clock.
    std::vector<ClockAlignment> clockAlignment;
    CaptureWindows captureWindows;
    std::vector<CallSite> callsites;    // by host time; id = index
    std::vector<Finding> findings;      // by estimated savings
    std::vector<std::string> notes;     // what the reader must know to trust the numbers
    std::vector<CriticalPath> criticalPaths;  // per replayed process (collector/replay/predict.h)
};

namespace detail {
struct Context;
}

// The report built from records as they stream past (`gpuspy report` reads a capture this way, see
// ReadOptions): memory grows with the distinct call sites, kernels, APIs and devices, and a bounded
// window of calls per process, not with the records. Feed it every record of each process (onRecord,
// after the record was applied to its Process), then onProcess once that process's stream is complete
// (its symbols in), then finish(). Medians and p99 are exact up to QuantileSketch::kExactValues values
// per row, within 1% beyond.
class StreamAnalyzer {
public:
    explicit StreamAnalyzer(const ReportOptions& options);
    ~StreamAnalyzer();
    StreamAnalyzer(const StreamAnalyzer&) = delete;
    StreamAnalyzer& operator=(const StreamAnalyzer&) = delete;

    void onRecord(const Process& process, const wire::RecordView& record);
    void onProcess(const Process& process);
    Report finish(uint64_t badStreams);

private:
    friend Report analyze(const Capture&, const ReportOptions&);
    bool selected(const Process& p) const;

    ReportOptions m_options;
    std::unique_ptr<detail::Context> m_cx;
};

// The report of a capture held in memory (its processes keep their records): the same analysis,
// without a window.
Report analyze(const Capture&, const ReportOptions&);

// A process's call sites named as the report names them (CallSite::label: the user's frame and the
// library call it made, an export that tail-jumps named by the call instruction's callee, a library's own
// thread or exit handler, a stack cut inside a library), for the exports. Labels are kept per stack id.
class SiteNamer {
public:
    explicit SiteNamer(const Process& p);
    ~SiteNamer();
    SiteNamer(const SiteNamer&) = delete;
    SiteNamer& operator=(const SiteNamer&) = delete;
    const std::string& label(uint32_t stackId);

private:
    struct State;
    std::unique_ptr<State> m_state;
};

}  // namespace gpuspy::collect
