// wire/format.h: the gpuspy record format, defined once and shared by the shim (writer) and the
// collector (reader). Plain structs, fixed widths, little-endian x86-64; no I/O here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuspy::wire {

// A stream (socket connection or file written by the shim) starts with a StreamHeader, then records.
inline constexpr char kStreamMagic[8] = {'G', 'P', 'U', 'S', 'P', 'Y', 'S', '1'};
// A capture written by the collector starts with a CaptureHeader, then chunks (see capture.h).
inline constexpr char kCaptureMagic[8] = {'G', 'P', 'U', 'S', 'P', 'Y', 'C', '1'};
inline constexpr uint32_t kVersionMajor = 1;  // a reader refuses another major
// A reader accepts any minor: record types it does not know are skipped. 1: DeviceInfo and Tally;
// 2: Collective; 3: Identity; 4: Category::Query (a reader that does not know it reads "other"); 5: CpuWait;
// 6: GpuBudget.
inline constexpr uint32_t kVersionMinor = 6;
inline constexpr uint32_t kMaxBody = 1u << 16;  // no record body is larger: bounds every allocation
inline constexpr uint32_t kMaxStackDepth = 128;

struct StreamHeader {
    char magic[8];
    uint32_t versionMajor;
    uint32_t versionMinor;
    uint32_t headerSize;  // sizeof(StreamHeader) when written; a reader skips what it does not know
    uint32_t pid;
    uint64_t startMonotonicNs;  // CLOCK_MONOTONIC when the shim started
    uint64_t startRealtimeNs;   // CLOCK_REALTIME at the same moment, to print wall-clock dates
};
static_assert(sizeof(StreamHeader) == 40);

struct RecordHeader {
    uint16_t type;      // RecordType
    uint16_t reserved;  // 0
    uint32_t size;      // body bytes that follow, <= kMaxBody, a multiple of 8
};
static_assert(sizeof(RecordHeader) == 8);

enum class RecordType : uint16_t {
#define GS_RECORD(id, name, body, fixed) name = id,
#include "records.def"
#undef GS_RECORD
};

// What a hooked call is about; the analysis groups by it. Query: a setup or query entry point (cuInit,
// cuDeviceGet, cuCtxGetDevice, cuModuleGetGlobal, ...) hooked for its failures only: only calls that
// failed are recorded, each with beginNs == endNs (when it returned: its duration is not measured).
enum class Category : uint8_t { Other = 0, Transfer = 1, Launch = 2, Alloc = 3, Sync = 4, Module = 5, Graph = 6, Query = 7 };

enum class Direction : uint8_t { Unknown = 0, HtoD = 1, DtoH = 2, DtoD = 3, HtoH = 4, PtoP = 5, Memset = 6, Prefetch = 7 };

// Kind of host memory involved in a transfer (for DtoD and memsets on device memory: Device).
enum class MemKind : uint8_t { Unknown = 0, Pageable = 1, Pinned = 2, Managed = 3, Device = 4, Array = 5 };

// CallBody::flags
enum CallFlags : uint16_t {
    kCallAsync = 1u << 0,          // the API is an *Async form (may still block: see kCallImplicitSync)
    kCallPerThreadStream = 1u << 1, // the _ptsz/_ptds ABI: a null stream is the thread's per-thread stream
    kCallGpuTimed = 1u << 2,       // a GpuSpan for this call follows (unless its events failed)
    kCallGpuSampledOut = 1u << 3,  // device work, deliberately not timed (adaptive sampling)
    kCallCapturing = 1u << 4,      // issued into a stream capture: no device work ran
    kCallImplicitSync = 1u << 5,   // the call blocked the host: a sync copy or memset, an *Async copy
                                   // from/to pageable memory (staged), a free, a register, ...
    kCallDeviceWork = 1u << 6,     // the call submits device work (kernel, copy, memset, graph)
    kCallHeldUp = 1u << 7,         // a timed, non-blocking call whose thread was off the CPU for over 10 us
                                   // inside it: when it submitted its work is unknown within the call
                                   // (its span is dropped: the work may have run long before the return)
    kCallIdleBefore = 1u << 8,     // the thread made no CUDA call for over 1 ms before this one, and the whole
                                   // process used under a tenth of a CPU meanwhile (blocked in poll, accept,
                                   // a condition variable, sleep): waiting for work, not preparing it
};

struct TransferArgs {
    uint64_t bytes;
    uint64_t dst;
    uint64_t src;
    Direction direction;
    MemKind srcMem;
    MemKind dstMem;
    uint8_t pad0;
    uint32_t peerDevice;  // PtoP: the other device; else 0
};
struct LaunchArgs {
    uint32_t kernelId;  // KernelDef id; 0 = unknown
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t sharedMem;
};
struct AllocArgs {
    uint64_t ptr;
    uint64_t bytes;
    MemKind mem;
    uint8_t pad0[7];
    uint64_t pool;  // cuMemAllocFromPoolAsync: the CUmemoryPool; 0 for the others (cuMemAllocAsync: the
                    // device's current pool)
};
// Stream-ordered memory pools (an Other-category call): cuMemPoolCreate (pool made, device its
// location), cuMemPoolDestroy, cuMemPoolSetAttribute (attribute, value: a cuuint64_t attribute's value,
// an int one's as is), cuMemPoolTrimTo (value: the bytes to keep), cuDeviceGetDefaultMemPool and
// cuDeviceGetMemPool (the pool answered, device), cuDeviceSetMemPool (pool, device). 0 when refused.
struct PoolArgs {
    uint64_t pool;
    uint64_t attribute;
    uint64_t value;
    int32_t device;
    uint32_t pad0;
};
struct SyncArgs {
    uint64_t object;  // the stream, event or context waited on
};
union CallArgs {
    TransferArgs transfer;
    LaunchArgs launch;
    AllocArgs alloc;
    PoolArgs pool;
    SyncArgs sync;
    uint64_t raw[5];
};
static_assert(sizeof(CallArgs) == 40);
// Graph work. A call flagged kCallCapturing (a launch, copy or memset) holds in raw[kCaptureGraphSlot]
// the CUgraph it was captured into (0: unknown); transfer and launch args end before it.
// A Graph-category call's args.raw: cuStreamEndCapture: [0] the CUgraph made; cuGraphInstantiate*:
// [0] the CUgraphExec made, [1] its CUgraph; cuGraphExecUpdate: [0] the exec, [1] its new CUgraph;
// cuGraphLaunch: [0] the exec (args.sync.object). Graphs built node by node: cuGraphAddKernelNode and
// cuGraphAddHostNode (Launch), cuGraphAddMemcpyNode/MemsetNode (Transfer) and cuGraphAddChildGraphNode
// (Graph, [0] the child CUgraph) are flagged kCallCapturing with their CUgraph in
// raw[kCaptureGraphSlot], like captured work; cuGraph(Exec)KernelNodeSetParams: [0] the exec (0: the
// graph's node), [1] the seq of the call that added the node (0: unknown), [2] its new kernel id;
// cuGraphCreate: [0] the CUgraph made; cuGraphClone: [0] the clone, [1] the original. cuGraphAddNode
// (the generic node API) is recorded as the entry point of the node's kind: a kernel or host node (host:
// kernel id 0, grid 0) as a Launch, a copy or memset node as a Transfer, a child graph node as a Graph
// call with the child in [0], each flagged kCallCapturing with its CUgraph like the others.
// A node made by stream capture is named by the seq of the call captured into it.
// cuGraph(Exec)MemcpyNodeSetParams, cuGraph(Exec)MemsetNodeSetParams: the node's new transfer in
// args.transfer, except dst: the exec (0: the graph's node) and src: the seq of the call that made it.
// cuGraphNodeSetParams / cuGraphExecNodeSetParams (the generic node API): raw[4] says which of the two
// layouts above the record has (a kernel node's or a copy or memset node's); other kinds are not edits
// the report follows (0).
// An event record or wait node (cuEventRecordWithFlags with CU_EVENT_RECORD_EXTERNAL or cuStreamWaitEvent
// with CU_EVENT_WAIT_EXTERNAL into a capture, cuGraphAddEventRecordNode/WaitNode, cuGraphAddNode of those
// kinds): flagged kCallCapturing with its CUgraph in raw[kCaptureGraphSlot], raw[kEventNodeSlot] saying
// which (kEventNodeRecord, kEventNodeWait), args.sync.object the event. It runs no device work.
// cuStreamCreate, cuStreamCreateWithPriority (Other): the stream made is the call's stream, args.raw
// [kStreamFlagsSlot] its flags (kStreamNonBlocking: CU_STREAM_NON_BLOCKING) and raw[kStreamPrioritySlot]
// its priority (0 for cuStreamCreate).
inline constexpr size_t kStreamFlagsSlot = 1;
inline constexpr size_t kStreamPrioritySlot = 2;
inline constexpr uint64_t kStreamNonBlocking = 0x1;
inline constexpr size_t kEventNodeSlot = 3;
inline constexpr uint64_t kEventNodeRecord = 1;
inline constexpr uint64_t kEventNodeWait = 2;
inline constexpr uint64_t kNodeEditKernel = 1;
inline constexpr uint64_t kNodeEditTransfer = 2;
inline constexpr size_t kCaptureGraphSlot = 4;
static_assert(sizeof(TransferArgs) <= kCaptureGraphSlot * 8 && sizeof(LaunchArgs) <= kCaptureGraphSlot * 8 &&
              sizeof(AllocArgs) <= kCaptureGraphSlot * 8);

struct CallBody {
    uint64_t seq;       // per-process call number, from 1: GpuSpan refers to it
    uint64_t beginNs;   // host CLOCK_MONOTONIC at entry
    uint64_t endNs;     // host CLOCK_MONOTONIC at return
    uint64_t stream;    // CUstream as passed (0 = default stream of the ABI used)
    uint32_t tid;
    uint32_t stackId;   // StackDef id; 0 = none
    uint16_t apiId;     // ApiDef id
    Category category;
    uint8_t pad0;
    uint16_t flags;     // CallFlags
    int16_t device;     // device ordinal, -1 if unknown
    int32_t result;     // CUresult the app saw
    uint32_t window;    // the capture window it was recorded in (WindowBody::index); 0: no windows
    CallArgs args;
};
static_assert(sizeof(CallBody) == 96);

struct GpuSpanBody {
    uint64_t seq;      // the Call this work belongs to
    uint64_t beginNs;  // on the host CLOCK_MONOTONIC, via the device's calibration
    uint64_t endNs;
    int32_t device;
    uint32_t pad0;
};
static_assert(sizeof(GpuSpanBody) == 32);

enum class NvtxKind : uint8_t { Push = 1, Pop = 2, Start = 3, End = 4, Mark = 5 };
struct NvtxBody {
    uint64_t timeNs;
    uint64_t rangeId;   // Start/End pairing id; 0 for push/pop/mark
    uint32_t tid;
    uint32_t messageId; // StringDef id (0 = none)
    uint32_t domainId;  // StringDef id (0 = default domain)
    NvtxKind kind;
    uint8_t pad0[3];
};
static_assert(sizeof(NvtxBody) == 32);

struct ThreadStatsBody {
    uint32_t tid;
    uint32_t pad0;
    uint64_t calls;       // hooked calls this thread made
    uint64_t dropped;     // records it could not queue
    uint64_t overheadNs;  // time spent in gpuspy's own code on this thread (CUDA calls: measured on one in 7, scaled)
};
static_assert(sizeof(ThreadStatsBody) == 32);

// What GPU timing cost one thread, by the shim's own accounting (shim/gpu_budget.h), against its budget:
// every part of timing's work on the thread, measured there, and the drain thread's resolving of its
// spans, charged to it. Sent at the stream's end, one per thread that made a GPU-timing choice.
struct GpuBudgetBody {
    uint32_t tid;
    uint32_t budgetPpm;      // the share of the thread's time timing may take (GPUSPY_GPU_BUDGET)
    uint64_t firstNs;        // the thread's first and last choice: the time the budget was earned over
    uint64_t lastNs;
    uint64_t recordNs;       // event records (cuEventRecord) on the app's streams
    uint64_t bookkeepingNs;  // the rest of a timed call's work: events taken and made, the stream's slot,
                             // the clocks read to see whether the thread was held up
    uint64_t choosingNs;     // deciding, on every call, whether to time it (sampled, scaled)
    uint64_t drainNs;        // the drain thread's queries and reads of the thread's events
    uint64_t timedOps;       // operations timed (each a span in the stream, unless set aside)
    uint64_t untimedOps;     // operations the budget left untimed
    // Timed operations whose span was set aside (no GpuSpan sent): the end event recorded too late after
    // the call returned to carry the work's end, or the thread held up inside the call (kCallHeldUp).
    uint64_t lateEndSpans;
    uint64_t heldUpSpans;
};
static_assert(sizeof(GpuBudgetBody) == 88);

struct ClockBody {
    int32_t device;
    uint32_t pad0;
    int64_t offsetNs;   // host_ns = gpu_event_ns + offsetNs
    uint64_t errorNs;   // calibration uncertainty
};
static_assert(sizeof(ClockBody) == 24);

struct EndBody {
    uint64_t endNs;
    uint64_t recordsMade;     // every record the shim produced
    uint64_t recordsDropped;  // of which were dropped (queue full, write failure)
    uint64_t gpuSpansSampledOut;
    int32_t exitReason;       // 0 normal exit, 1 signal, 2 fork child ended, 3 writer failure
    uint32_t pad0;
};
static_assert(sizeof(EndBody) == 40);

// The control channel: single bytes the collector sends a shim over its stream's socket (the shim's
// drain thread reads them between passes, never blocking the app): start or stop recording.
inline constexpr uint8_t kControlStart = 'S';
inline constexpr uint8_t kControlStop = 'P';

// Capture windows (gpuspy record --capture-range, collect --paused, ctl start/stop): only calls made
// while a window is open are recorded; the others are counted, by category, in every Window record.
enum class WindowEdge : uint8_t {
    Begin = 1,
    End = 2,
    Tally = 3,  // the stream's last word on windows (sent before End): the final left-out counts
};
enum class WindowTrigger : uint8_t { None = 0, ProfilerApi = 1, Nvtx = 2, Time = 3, Control = 4 };
inline constexpr size_t kWindowCategories = 8;  // leftOut[] by Category value (all 8 used)

struct WindowBody {
    uint64_t timeNs;
    uint32_t index;     // the window's number in this process, from 1 (Tally: windows opened)
    uint32_t tid;       // the thread whose call opened or closed it (0: gpuspy's own thread)
    WindowEdge edge;
    WindowTrigger trigger;
    uint8_t pad0[6];
    uint64_t leftOut[kWindowCategories];  // hooked calls not recorded since the process started, by Category
};
static_assert(sizeof(WindowBody) == 88);

// The process's running totals while it runs, for a live collector's counters (`collect --metrics`,
// `top`): the per-thread ThreadStats come only when a thread or the stream ends, and calls left out of
// a capture window only in Window records at its edges. Each Tally supersedes the last; the stream's
// final figures are still its ThreadStats, Window Tally and End.
struct TallyBody {
    uint64_t timeNs;
    uint64_t calls;       // hooked calls recorded so far, every thread's, ended threads' included
    uint64_t dropped;     // records that could not be queued
    uint64_t overheadNs;  // gpuspy's own time on the app's threads (as ThreadStatsBody::overheadNs)
    uint32_t window;      // the window open now (WindowBody::index); 0: none (recording paused); ~0u: no windows asked for
    uint32_t pad0;
    uint64_t leftOut[kWindowCategories];  // hooked calls not recorded since the process started, by Category
};
static_assert(sizeof(TallyBody) == 104);

// One operation of an NCCL communicator as NCCL's profiler plugin told it (shim/hooks/nccl_profiler.cpp):
// a collective (ncclAllReduce, ...) or one side of a point-to-point (ncclSend, ncclRecv), when NCCL
// scheduled it (at the end of its group), with what the user's call asked and how NCCL runs it. The
// device work is the kernel NCCL launched for it: several operations of one group on one communicator
// share one launch (a fused kernel). Strings are StringDef ids.
enum class CollectiveKind : uint8_t { Collective = 1, PointToPoint = 2 };
struct CollectiveBody {
    uint64_t startNs;   // NCCL scheduled it (its Coll/P2p event started, at the group's end)
    uint64_t apiNs;     // the user's call (ncclAllReduce, ncclSend, ...) began; 0: unknown
    uint64_t launchNs;  // the kernel launch that carries it began (NCCL's KernelLaunch event); 0: unknown
    uint64_t commId;    // the communicator's id, the same in every rank
    uint64_t seq;       // collectives: its sequence number in the communicator; point-to-point: ~0
    uint64_t count;     // elements, of datatypeId's type
    uint64_t stream;    // the stream of the launch that carries it (CUstream, as a Call records it)
    uint32_t tid;       // the thread that scheduled and launched it
    uint32_t stackId;   // the user's call's stack (StackDef id); 0: none
    uint32_t funcId;    // "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send", "Recv", ...
    uint32_t datatypeId;// "ncclFloat32", ...
    uint32_t algoId;    // "RING", "TREE", ...; 0 for point-to-point
    uint32_t protoId;   // "SIMPLE", "LL", "LL128"; 0 for point-to-point
    int32_t nranks;     // ranks in the communicator
    int32_t rank;       // this operation's rank in it
    int32_t peer;       // collectives: the root (rooted ones; else as NCCL gave it); point-to-point: the peer rank
    uint16_t nNodes;    // nodes the communicator spans
    uint8_t nChannels;
    CollectiveKind kind;
};
static_assert(sizeof(CollectiveBody) == 96);

// Who a process is, once when its stream starts (edge Start) and again at its end (End): the rank its
// launcher gave it (the first family of variables present: torchrun's RANK/LOCAL_RANK/WORLD_SIZE/
// LOCAL_WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_*, PMI_RANK/PMI_SIZE, Slurm's SLURM_PROCID/NTASKS/LOCALID;
// -1 where unknown), its host name (the tail), and a pair of stamps of CLOCK_REALTIME and CLOCK_MONOTONIC
// taken together, which puts the captures of several hosts on one clock (gpuspy report A B ...).
enum class IdentityEdge : uint8_t { Start = 1, End = 2 };
enum class Launcher : uint8_t { None = 0, Torch = 1, OpenMpi = 2, Pmi = 3, Slurm = 4 };
struct IdentityBody {
    uint64_t realtimeNs;   // CLOCK_REALTIME
    uint64_t monotonicNs;  // CLOCK_MONOTONIC, midway between two readings bracketing realtimeNs
    uint64_t errorNs;      // the bracket's width (the tightest of a few tries): monotonicNs is within half of it
    int32_t rank;          // -1: unknown
    int32_t localRank;
    int32_t worldSize;
    int32_t localWorldSize;
    IdentityEdge edge;
    Launcher launcher;     // whose variables gave the ranks
    uint16_t pad0;
    uint32_t length;       // host name bytes (uname's nodename)
};
static_assert(sizeof(IdentityBody) == 48);

// How long the process's threads were ready to run but waited for a CPU (the kernel's schedstat
// run_delay, summed), sent once before End: the host's load on this process, which `gpuspy diff` weighs
// against a change of wall time. A lower bound: threads that ended without ever making a hooked call
// are not counted; gpuspy's own threads are left out.
struct CpuWaitBody {
    uint64_t runDelayNs;  // the threads alive at the end and the ended threads the shim followed
    uint32_t tasks;       // threads counted
    uint32_t pad0;
};
static_assert(sizeof(CpuWaitBody) == 16);

// Variable records: a fixed head, then `length` bytes of tail (padded to 8 in the stream).
struct ProcessBody {
    uint32_t pid;
    uint32_t ppid;
    uint64_t startMonotonicNs;
    uint64_t startRealtimeNs;
    uint32_t length;  // command line bytes, arguments separated by '\0'
    uint32_t pad0;
};
struct ApiDefBody {
    uint16_t apiId;
    Category category;
    uint8_t pad0;
    uint32_t length;
};
struct KernelDefBody {
    uint32_t kernelId;
    uint32_t length;
};
struct StackDefBody {
    uint32_t stackId;
    uint32_t depth;  // tail holds depth uint64_t return addresses, innermost first
};
// A Python frame in a StackDef's tail: kPyFrameTag | its PyFrameDef id. No user-space return address
// has these top bits (x86-64 user addresses stay below 2^47), so a reader that does not know Python
// frames shows an unknown address, and nothing else changes.
inline constexpr uint64_t kPyFrameTag = 0xfff0000000000000ull;
inline constexpr bool isPyFrame(uint64_t address) { return (address & 0xfff0000000000000ull) == kPyFrameTag; }
inline constexpr uint32_t pyFrameId(uint64_t address) { return uint32_t(address); }
struct PyCodeDefBody {
    uint32_t codeId;
    uint32_t firstLine;  // co_firstlineno
    uint32_t length;     // tail: function name (co_qualname), '\0', file name (co_filename)
    uint32_t pad0;
};
struct PyFrameDefBody {
    uint32_t frameId;
    uint32_t codeId;     // a PyCodeDef
    int32_t line;        // source line of the instruction; -1 when the code has none there
    int32_t lasti;       // instruction offset in code units; -1 before the first
};
static_assert(sizeof(PyFrameDefBody) == 16);
// What joins a device to the fleet's other GPU metrics (DCGM exporter labels by UUID and PCI bus id).
struct DeviceInfoBody {
    int32_t device;      // ordinal, as in DeviceDefBody
    uint32_t pad0;
    uint8_t uuid[16];    // cuDeviceGetUuid; all zero: unknown
    char pciBusId[24];   // cuDeviceGetPCIBusId ("0000:41:00.0", newer drivers "00000000:41:00.0"), NUL-terminated; empty: unknown
};
static_assert(sizeof(DeviceInfoBody) == 48);
struct ModuleDefBody {
    uint64_t start;   // lowest mapped address
    uint64_t end;
    uint64_t bias;    // load bias (dlpi_addr)
    uint32_t length;  // path bytes
    uint32_t pad0;
};
struct ThreadDefBody {
    uint32_t tid;
    uint32_t length;
};
struct DeviceDefBody {
    int32_t device;
    uint32_t length;
};
struct StringDefBody {
    uint32_t stringId;
    uint32_t length;
};
// NoticeBody::code values (the collector shows each notice's text; the code says who wrote it).
inline constexpr uint32_t kNoticePythonFrames = 1;  // the shim's Python frame counts (shim/python.h)
struct NoticeBody {
    uint32_t code;
    uint32_t length;
};
// NoticeBody::code: the process was attached to while running (gpuspy attach); the text says what
// the capture cannot know of the time before. (Captures before this one wrote 1 here too; the report
// knows an attach by the notice's text, "attached to a running process...", so both read alike.)
inline constexpr uint32_t kNoticeAttached = 2;
static_assert(kNoticeAttached != kNoticePythonFrames);
struct SymbolBody {
    uint64_t address;     // as in a StackDef
    uint32_t line;
    uint16_t inlineDepth; // 0 = the outermost (real) frame at this address
    uint16_t pad0;
    uint32_t moduleIndex; // index of the ModuleDef, in arrival order, or UINT32_MAX
    uint32_t length;      // function name, '\0', file name
};

// The length field of a variable record's head, for the decoder.
inline uint64_t tailLength(const ProcessBody& b) { return b.length; }
inline uint64_t tailLength(const ApiDefBody& b) { return b.length; }
inline uint64_t tailLength(const KernelDefBody& b) { return b.length; }
inline uint64_t tailLength(const StackDefBody& b) { return uint64_t(b.depth) * 8u; }  // 64-bit: a hostile depth must not wrap
inline uint64_t tailLength(const ModuleDefBody& b) { return b.length; }
inline uint64_t tailLength(const PyCodeDefBody& b) { return b.length; }
inline uint64_t tailLength(const ThreadDefBody& b) { return b.length; }
inline uint64_t tailLength(const DeviceDefBody& b) { return b.length; }
inline uint64_t tailLength(const StringDefBody& b) { return b.length; }
inline uint64_t tailLength(const NoticeBody& b) { return b.length; }
inline uint64_t tailLength(const SymbolBody& b) { return b.length; }
inline uint64_t tailLength(const IdentityBody& b) { return b.length; }

const char* recordName(RecordType t);
const char* directionName(Direction d);
const char* memKindName(MemKind m);
const char* categoryName(Category c);
const char* launcherName(Launcher l);  // "torchrun", "openmpi", "pmi", "slurm", "" for None

// Adds deltaNs to every host CLOCK_MONOTONIC time of a record's body (and the offsets that map GPU time
// onto it): a time of 0 (unknown) stays 0. The shim's test-only clock offset
// (GPUSPY_TEST_CLOCK_OFFSET_NS) and the collector's merge of several captures onto one clock use it, so
// that which fields are times is said once. Realtime stamps are not touched.
void shiftRecordTimes(RecordType type, uint8_t* body, uint32_t size, int64_t deltaNs);
void shiftHeaderTime(StreamHeader& header, int64_t deltaNs);
// Every record of buf[0..n) (whole records, as encoded); returns false on a malformed one (left as is).
bool shiftStreamTimes(uint8_t* buf, size_t n, int64_t deltaNs);

}  // namespace gpuspy::wire
