// collector/export/common.h: what the exports (Perfetto trace, folded stacks, the viewer's timeline)
// share: the tracks of a capture (a host thread, or a device stream), each call's GPU work, its stack
// as frames, which calls blocked the host, and JSON string escaping for writers that bypass nlohmann.
#pragma once

#include "collector/model/model.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuspy::collect::detail {
struct ProcView;
}

namespace gpuspy::collect::exporting {

enum class TrackKind : uint8_t { Thread, Stream };

// One row of a timeline. Streams are keyed by (device, CUstream handle); a null handle with the
// per-thread ABI is that thread's own stream, so it gets the thread's tid as its key.
struct Track {
    TrackKind kind = TrackKind::Thread;
    size_t process = 0;    // index in Capture::processes
    uint32_t tid = 0;      // Thread: the thread; Stream: the owning thread of a per-thread default stream, else 0
    int device = -1;       // Stream only
    uint64_t stream = 0;   // Stream only: the CUstream handle as the app passed it (0 = default)
    bool perThread = false;
    std::string name;      // "main (tid 123)", "GPU 0 · stream 0x55d1c0", "GPU 0 · default stream"
};

// What a GPU span was: a kernel, a copy, a memset, a graph, or something else.
enum class WorkKind : uint8_t { Kernel, Copy, Memset, Graph, Other };
const char* workKindName(WorkKind k);

// A piece of GPU work on its stream: measured (the shim timed it), or, for an operation the timing
// budget left untimed, where the device timeline placed it (collector/timeline/device_timeline.h, the `est`
// pass): `estimated`, its body then owned by the Index.
struct Span {
    const wire::GpuSpanBody* body = nullptr;
    const wire::CallBody* call = nullptr;  // null when the span's call was not recorded
    size_t callIndex = SIZE_MAX;           // index in ProcIndex::calls
    size_t track = 0;                      // index in Index::tracks
    WorkKind kind = WorkKind::Other;
    bool estimated = false;                // placed by inference, not measured
};

// An NVTX range (push/pop on its thread, or start/end), or a mark (begin == end).
struct NvtxRange {
    size_t track = 0;   // the thread that pushed (or started) it
    uint64_t begin = 0, end = 0;
    std::string name;   // "domain:message" or the message
    bool pushPop = true;
    bool mark = false;
    uint32_t depth = 0; // push/pop nesting depth on its thread; for the others, a free lane below the pushes
};

struct ProcIndex {
    const Process* proc = nullptr;
    std::vector<const wire::CallBody*> calls;  // by host begin time
    std::vector<size_t> callTrack;             // track of calls[i]
    std::unordered_map<uint64_t, std::vector<size_t>> spansOfSeq;  // seq -> indices in Index::spans
    std::string label;                         // "demo_infer (pid 123)"
};

// The capture arranged by track, built once and read by every export.
struct Index {
    std::vector<ProcIndex> procs;  // one per process, in capture order
    std::vector<Track> tracks;     // per process: its threads (by tid), then its streams (by device, handle)
    std::vector<Span> spans;       // by begin time, measured and estimated
    std::deque<wire::GpuSpanBody> estimatedBodies;  // the bodies of the estimated spans (a deque: they stay put)
    std::vector<NvtxRange> nvtx;   // by begin time
    uint64_t firstNs = 0, lastNs = 0;  // over calls, spans and NVTX events (host clock)
};

Index buildIndex(const Capture& capture);

// Each process's 1-based run where a repeated capture's runs are shown merged (two or more runs in
// capture.runs), by process index; 0 for every process otherwise. The exports label processes with it.
std::vector<uint32_t> mergedRunOfProcesses(const Capture& capture);

// Each process's pid in a trace (Perfetto's tracks are keyed by pid): its own, unless a process of another
// capture read with it as one run (Process::captureName: several hosts) has it too; then the k-th capture
// holding that pid gets pid + k * 2^22 (no Linux pid reaches 2^22), the first its own.
std::vector<uint64_t> tracePids(const Capture& capture);

// Several captures read as one run: each process's root frame in the aggregated exports (folded, pprof's
// label), "rank R" where its launcher gave it one, else "HOST pid N"; "" for every process of one capture.
std::vector<std::string> jobMemberFrames(const Capture& capture);

// The API's name as users know it: "cudaMemcpy" when the runtime call is unambiguous, else the
// driver entry point without ABI suffixes ("cuLaunchKernel").
std::string apiLabel(const Process& p, const wire::CallBody& c);
std::string apiAbiName(const Process& p, const wire::CallBody& c);
// The kernel's demangled name (launches), or "" for other calls.
std::string kernelLabel(const Process& p, const wire::CallBody& c);

// Whether the call blocked the host until the GPU caught up: the rule of the report's syncs table
// (explicit waits, and calls that synchronise implicitly).
bool isBlocking(const Process& p, const wire::CallBody& c);

// The names above and the blocking rule, computed once per API and kernel of a process: the exports
// ask for every call of captures with millions of them.
class ProcNames {
public:
    explicit ProcNames(const Process& p);
    ~ProcNames();
    ProcNames(const ProcNames&) = delete;
    ProcNames& operator=(const ProcNames&) = delete;

    const std::string& abi(const wire::CallBody& c);
    const std::string& label(const wire::CallBody& c);
    const std::string& kernel(const wire::CallBody& c);  // "" for calls that are not launches
    bool blocking(const wire::CallBody& c);

private:
    struct Api {
        std::string abi, label;
        bool explicitWait = false;
    };
    const Api& api(const wire::CallBody& c);
    const Process& m_proc;
    std::unique_ptr<detail::ProcView> m_view;
    std::unordered_map<uint16_t, Api> m_apis;
    std::unordered_map<uint32_t, std::string> m_kernels;
    std::string m_empty;
    bool m_driverNames = false;  // the program calls the driver API itself: labels are the driver's
};

struct OutFrame {
    std::string function;  // demangled, or "module+0x1a2b" when there is no symbol
    std::string file;
    uint32_t line = 0;
    std::string module;
    bool inlined = false;
    bool app = true;       // false for CUDA's libraries, the runtime linked into the app, libc, gpuspy
    bool python = false;   // a Python frame (then only Python frames are the app's)
};
// Strings numbered in order of first use (a format's string table: the viewer's `strings`, pprof's
// string_table).
class Interner {
public:
    int64_t id(const std::string& s)
    {
        auto [it, fresh] = m_ids.emplace(s, int64_t(m_items.size()));
        if (fresh) m_items.push_back(s);
        return it->second;
    }
    const std::vector<std::string>& items() const { return m_items; }

private:
    std::unordered_map<std::string, int64_t> m_ids;
    std::vector<std::string> m_items;
};

// The frames of a stack, OUTERMOST first (the reverse of the wire order), inlined frames expanded.
std::vector<OutFrame> stackFrames(const Process& p, uint32_t stackId);

// Appends `s` as a JSON string literal (quotes included). Invalid UTF-8 becomes U+FFFD; '<' is
// written as \u003c so that the text can sit inside an HTML <script> element.
void appendJsonString(std::string& out, std::string_view s);
// Writes an export to `path` ("-" = stdout). Like captures: never through a symbolic link, never
// over an existing file unless `force` (then a regular file is replaced). Throws std::runtime_error.
void writeOutputFile(const std::string& path, std::string_view data, bool force);
// Makes the directory an export of several files goes into, unless it is one already (never through
// a symbolic link). Throws std::runtime_error.
void makeOutputDirectory(const std::string& path);

// ns as microseconds with exactly three decimals ("1234.567"): exact, so that ts + dur of a child
// never exceeds its parent's after parsing.
void appendMicros(std::string& out, uint64_t ns);

}  // namespace gpuspy::collect::exporting
