// collector/model/model.h: a capture as the collector holds it after ingest: per process, the definitions
// it sent and its records, decoded from the wire format. Ingest and the capture reader fill it;
// symbolize adds frames; analyze reads it and nothing else.
#pragma once

#include "wire/format.h"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpuspy::collect {

struct ApiInfo {
    std::string name;  // driver entry point as the shim hooked it, e.g. "cuMemcpyHtoD_v2_ptds"
    wire::Category category = wire::Category::Other;
};

struct ModuleInfo {
    uint64_t start = 0, end = 0, bias = 0;
    std::string path;
};

// One symbolized frame; inlined frames of one address come first, the real function last.
struct Frame {
    uint64_t address = 0;
    std::string function;  // demangled; empty if unknown
    std::string file;      // source file; empty if no debug info
    uint32_t line = 0;
    std::string module;    // path of the ELF object
    uint64_t offset = 0;   // address - module bias (for module+offset when there is no symbol)
    bool inlined = false;
    // The innermost frame of a return address: the function its call instruction calls, by the name
    // the caller's binary used ("cufftExecR2C", though the code it reaches is cufftXtExec's); "" when
    // unknown or indirect.
    std::string callee = {};
};

// A Python code object and a frame in it, as the shim sent them (PyCodeDef, PyFrameDef); a stack
// refers to a frame by wire::kPyFrameTag | id.
struct PyCode {
    std::string function, file;
    uint32_t firstLine = 0;
};
struct PyFrame {
    uint32_t codeId = 0;
    int32_t line = -1;
};

// Collectives kept per process (Process::collectives): a job's NCCL operations number in the thousands
// to millions; past this they are counted, not kept.
inline constexpr size_t kMaxCollectives = 1u << 20;

// Who a process is (its Identity records): the rank its launcher gave it, its host, and the pairs of
// wall-clock and monotonic stamps that put its capture on another's clock.
struct ClockPair {
    uint64_t realtimeNs = 0, monotonicNs = 0;
    uint64_t errorNs = 0;  // the stamps' bracket: monotonicNs is within half of it
    bool known() const { return realtimeNs != 0; }
    // realtime - monotonic: two captures' difference of it is their clocks' offset
    int64_t wallMinusMono() const { return int64_t(realtimeNs - monotonicNs); }
};
struct ProcessIdentity {
    int rank = -1, localRank = -1, worldSize = -1, localWorldSize = -1;  // -1: unknown
    std::string launcher;  // "torchrun", "openmpi", "pmi", "slurm"; empty: no launcher's variables
    std::string host;      // empty: unknown (a capture older than the Identity record)
    ClockPair start, end;  // at the stream's start and end; realtimeNs 0: none
};

struct Process {
    uint32_t pid = 0, ppid = 0;
    ProcessIdentity identity;
    std::string captureName;      // the capture file it was read from, when several make one run; else empty
    std::string command;          // argv joined by spaces
    uint64_t startNs = 0;         // CLOCK_MONOTONIC when the shim started in this process
    uint64_t startRealtimeNs = 0;
    uint64_t lastNs = 0;          // latest timestamp seen in any record

    std::unordered_map<uint16_t, ApiInfo> apis;
    std::unordered_map<uint32_t, std::string> kernels;         // id -> mangled name
    std::unordered_map<uint32_t, std::vector<uint64_t>> stacks; // id -> return addresses, innermost first
    std::vector<ModuleInfo> modules;
    std::unordered_map<uint32_t, std::string> threads;          // tid -> name
    std::unordered_map<uint32_t, std::string> strings;          // NVTX messages and domains
    std::map<int, std::string> devices;                         // ordinal -> name
    struct DeviceIds {
        std::string uuid;      // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi and DCGM print it; empty: unknown
        std::string pciBusId;  // "0000:41:00.0" or "00000000:41:00.0", as the driver gave it; empty: unknown
    };
    std::map<int, DeviceIds> deviceIds;                         // ordinal -> what joins it to other GPU metrics
    std::unordered_map<uint64_t, std::vector<Frame>> symbols;   // address -> frames (after symbolize)
    std::unordered_map<uint32_t, PyCode> pyCodes;               // Python code id -> function, file
    std::unordered_map<uint32_t, PyFrame> pyFrames;             // Python frame id -> code, line

    std::vector<wire::CallBody> calls;    // in arrival order (per thread in time order)
    std::vector<wire::GpuSpanBody> spans; // GPU times, joined to calls by seq
    std::vector<wire::NvtxBody> nvtx;
    std::vector<wire::CollectiveBody> collectives;  // NCCL's operations, in arrival order (always kept, up to kMaxCollectives)
    uint64_t collectivesDropped = 0;                // past kMaxCollectives
    std::vector<wire::ThreadStatsBody> threadStats;
    std::vector<wire::GpuBudgetBody> gpuBudgets;  // what GPU timing cost each thread (at the stream's end)
    std::vector<wire::ClockBody> clocks;
    std::vector<wire::WindowBody> windows;  // capture window edges, in arrival order (few: always kept)
    wire::TallyBody tally{};  // the latest running totals (a live collector's stream); timeNs 0: none
    wire::CpuWaitBody cpuWait{};  // how long its threads waited for a CPU (sent before End)
    bool cpuWaitKnown = false;    // a CpuWait record arrived
    std::vector<std::string> notices;

    bool ended = false;          // an End record arrived: the stream closed cleanly
    // The reader's budget of kept calls ran out (ReadOptions::keepCallsUpTo): calls, spans and NVTX
    // records were not kept, only definitions and totals.
    bool eventsDropped = false;
    // Past the budget with ReadOptions::windowPastBudget: instead of dropping its events the process kept a
    // window, the LAST stretch of its calls (between half and all of what it held when the budget ran out),
    // their spans and NVTX records; `calls` holds the window. callsSeen counts every call of the stream and
    // callsByStack every call by stack id (0: none), so a window's share of any set of stacks is known.
    bool windowed = false;
    uint64_t callsSeen = 0;
    std::unordered_map<uint32_t, uint64_t> callsByStack;
    std::unordered_map<uint32_t, uint64_t> nsByStack;  // and their host time (end - begin), by stack id
    wire::EndBody end{};
    std::string streamError;     // why the stream was cut short, with its offset; empty if it was not

    // An NVTX range's or mark's name as the report and the exports show it: "domain:message", the
    // message alone in the default domain, "(unnamed)" when it has none.
    std::string nvtxName(const wire::NvtxBody& n) const
    {
        auto text = [&](uint32_t id) {
            auto it = strings.find(id);
            return id && it != strings.end() ? it->second : std::string();
        };
        std::string msg = text(n.messageId);
        if (msg.empty()) msg = "(unnamed)";
        const std::string domain = text(n.domainId);
        return domain.empty() ? msg : domain + ":" + msg;
    }
};

// One run of a repeated recording (`gpuspy record --repeat N`): which processes it made.
struct RunInfo {
    uint32_t run = 0;
    int exitStatus = 0;
    uint64_t beginNs = 0, endNs = 0;
    std::vector<size_t> processes;  // indices into Capture::processes
};

// A process of a recorded tree that is not in the capture's streams, or whose stream came from a
// capture it wrote itself (record's process watch saw it; CaptureOutsideBody on disk).
enum class OutsideWhy : uint32_t {
    NoPreload = 1,   // its environment did not preload the shim (LD_PRELOAD dropped or replaced)
    Static = 2,      // a static program: the loader preloads nothing into it
    OwnCapture = 3,  // the shim was preloaded without the collector's socket: it wrote its own capture
    Unseen = 4,      // it exec'd and ended before what it ran could be read (with gpuspy or not: unknown)
};
enum class OutsideCuda : uint32_t {
    Unknown = 0,  // its mappings were never read (it ended first)
    Loaded = 1,   // the CUDA driver (libcuda) was seen mapped in it
    NotSeen = 2,  // its mappings were read while it ran and held no CUDA driver
};
inline const char* outsideWhyName(OutsideWhy w)
{
    return w == OutsideWhy::NoPreload ? "no_preload" : w == OutsideWhy::Static ? "static" : w == OutsideWhy::OwnCapture ? "own_capture" : "unseen";
}
inline const char* outsideCudaName(OutsideCuda c)
{
    return c == OutsideCuda::Loaded ? "loaded" : c == OutsideCuda::NotSeen ? "not_seen" : "unknown";
}
struct OutsideProcess {
    uint32_t pid = 0, ppid = 0;
    OutsideWhy why = OutsideWhy::NoPreload;
    OutsideCuda cuda = OutsideCuda::Unknown;
    bool merged = false;      // its own capture was read into this one (its stream is a process of it)
    std::string command;      // arguments joined by spaces
    std::string capturePath;  // OwnCapture: the file it wrote; empty where none was found
};

struct Capture {
    std::vector<Process> processes;
    std::vector<OutsideProcess> outside;  // record's tree: the processes not recorded through its socket
    std::vector<RunInfo> runs;  // empty: one run (a capture not made with --repeat)
    uint64_t badStreams = 0;  // connections or file sections that were malformed (their valid prefix is kept)

    // Processes, a process whose shim connected again (a second stream of it, not yet joined to the
    // first as the capture reader joins them) counted once.
    size_t distinctProcesses() const
    {
        size_t n = 0;
        for (size_t i = 0; i < processes.size(); ++i) {
            bool again = false;
            for (size_t j = 0; j < i && !again; ++j)
                again = processes[j].pid == processes[i].pid && processes[j].startNs == processes[i].startNs;
            n += !again;
        }
        return n;
    }
};

}  // namespace gpuspy::collect
