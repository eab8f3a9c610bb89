// tests/shim/compare_capture.cpp: checks one shim capture against the simulated driver's ground-truth
// trace of the same process: every device operation recorded exactly once, with the right bytes,
// direction, memory kind, kernel, stream, and (when timed) GPU begin/end.
//
//   compare_capture [--gpu-tol-ns N] [--gpu-gross-ns N] [--require-gpu] [--allow-drops] [--min-nvtx N] [--min-cpu-wait-tasks N]
//                   [--min-kernel-timings N] CAPTURE TRACE.jsonl|-
//   --min-kernel-timings N: every kernel has GPU timing on at least N of its launches (all, if fewer)
//   --require-api ABI[=N] (repeatable): at least one call (exactly N calls) of this hooked entry point is in the capture
//   --gpu-budget: each thread that chose for GPU timing over at least 20 ms spent, by the shim's own
//                   accounting (GpuBudget), no more than its budget of its time
// Exit 0: match; 1: mismatch (first problems printed); 2: a file could not be read.
#include "tests/shim/shim_capture_file.h"
#include "wire/codec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace gpuspy;

namespace {

struct Call {
    wire::CallBody body;
    bool hasSpan = false;
    wire::GpuSpanBody span{};
    std::vector<size_t> ops;  // trace ops it submitted
};

struct Capture {
    uint32_t pid = 0;
    std::map<uint16_t, std::string> apis;
    std::map<uint32_t, std::string> kernels;
    std::vector<Call> calls;
    std::map<uint64_t, size_t> bySeq;
    bool hasEnd = false;
    bool hasCpuWait = false;
    wire::CpuWaitBody cpuWait{};
    wire::EndBody end{};
    uint64_t nvtx = 0, clocks = 0, stacks = 0, threadStats = 0;
    std::map<uint32_t, wire::ThreadStatsBody> statsByTid;  // the last ThreadStats of each thread
    std::map<uint32_t, wire::GpuBudgetBody> budgetByTid;   // what GPU timing cost each thread
    uint64_t clockErrorNs = 0;  // the largest calibration uncertainty the shim stated
    bool hasProcess = false;
    uint64_t startNs = 0;      // the Process record's start
    uint64_t firstTimeNs = UINT64_MAX;  // the earliest time any record states
    std::vector<uint64_t> stackTops;  // innermost frame of each stack
    struct Module {
        uint64_t start, end;
        std::string path;
    };
    std::vector<Module> modules;
};

struct Op {
    nlohmann::json j;
    uint32_t tid;
    std::string api, op;
    uint64_t submit, start, end;
    bool graph;
};

int g_errors = 0;
void problem(const std::string& s)
{
    if (++g_errors <= 25) std::fprintf(stderr, "MISMATCH: %s\n", s.c_str());
}

bool readCapture(const char* path, Capture& cap)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot open %s\n", path);
        return false;
    }
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    test::unwrapShimCapture(data);
    wire::StreamDecoder dec;
    bool ok = dec.feed(data.data(), data.size(), [&](const wire::RecordView& r) {
        switch (r.type) {
        case wire::RecordType::ApiDef: cap.apis[r.as<wire::ApiDefBody>().apiId] = std::string(r.tail<wire::ApiDefBody>()); break;
        case wire::RecordType::KernelDef:
            cap.kernels[r.as<wire::KernelDefBody>().kernelId] = std::string(r.tail<wire::KernelDefBody>());
            break;
        case wire::RecordType::Process:
            cap.hasProcess = true;
            cap.startNs = r.as<wire::ProcessBody>().startMonotonicNs;
            break;
        case wire::RecordType::Call: {
            Call c;
            c.body = r.as<wire::CallBody>();
            cap.firstTimeNs = std::min<uint64_t>(cap.firstTimeNs, c.body.beginNs);
            cap.bySeq[c.body.seq] = cap.calls.size();
            cap.calls.push_back(c);
            break;
        }
        case wire::RecordType::GpuSpan: {
            auto s = r.as<wire::GpuSpanBody>();
            auto it = cap.bySeq.find(s.seq);
            if (it == cap.bySeq.end()) {
                problem("GpuSpan for unknown seq " + std::to_string(s.seq));
                break;
            }
            Call& c = cap.calls[it->second];
            if (c.hasSpan) problem("two GpuSpans for seq " + std::to_string(s.seq));
            c.hasSpan = true;
            c.span = s;
            break;
        }
        case wire::RecordType::End: cap.hasEnd = true; cap.end = r.as<wire::EndBody>(); break;
        case wire::RecordType::CpuWait:
            if (cap.hasCpuWait) problem("two CpuWait records");
            if (cap.hasEnd) problem("CpuWait after End");
            cap.hasCpuWait = true;
            cap.cpuWait = r.as<wire::CpuWaitBody>();
            break;
        case wire::RecordType::Nvtx:
            ++cap.nvtx;
            cap.firstTimeNs = std::min<uint64_t>(cap.firstTimeNs, r.as<wire::NvtxBody>().timeNs);
            break;
        case wire::RecordType::Clock:
            ++cap.clocks;
            cap.clockErrorNs = std::max<uint64_t>(cap.clockErrorNs, r.as<wire::ClockBody>().errorNs);
            break;
        case wire::RecordType::StackDef: {
            ++cap.stacks;
            auto sd = r.as<wire::StackDefBody>();
            auto t = r.tail<wire::StackDefBody>();
            if (sd.depth > 0) {
                uint64_t top;
                std::memcpy(&top, t.data(), 8);
                cap.stackTops.push_back(top);
            }
            break;
        }
        case wire::RecordType::ModuleDef: {
            auto m = r.as<wire::ModuleDefBody>();
            cap.modules.push_back({m.start, m.end, std::string(r.tail<wire::ModuleDefBody>())});
            break;
        }
        case wire::RecordType::GpuBudget: {
            const auto b = r.as<wire::GpuBudgetBody>();
            cap.budgetByTid[b.tid] = b;
            break;
        }
        case wire::RecordType::ThreadStats: {
            ++cap.threadStats;
            const auto t = r.as<wire::ThreadStatsBody>();
            cap.statsByTid[t.tid] = t;
            break;
        }
        default: break;
        }
    });
    if (ok) ok = dec.finish();
    if (!ok) {
        std::fprintf(stderr, "%s: %s\n", path, dec.errorMessage().c_str());
        return false;
    }
    cap.pid = dec.header().pid;
    return true;
}

std::string hostSide(const wire::TransferArgs& t)
{
    using wire::Direction;
    using wire::MemKind;
    MemKind k = MemKind::Device;
    if (t.direction == Direction::HtoD) k = t.srcMem;
    else if (t.direction == Direction::DtoH) k = t.dstMem;
    else if (t.direction == Direction::HtoH)
        k = t.srcMem == MemKind::Pageable || t.dstMem == MemKind::Pageable ? MemKind::Pageable : MemKind::Pinned;
    switch (k) {
    case MemKind::Pageable: return "pageable";
    case MemKind::Pinned: return "pinned";
    case MemKind::Managed: return "managed";
    case MemKind::Device: return "device";
    default: return "unknown";
    }
}

std::string dirName(wire::Direction d)
{
    switch (d) {
    case wire::Direction::HtoD: return "HtoD";
    case wire::Direction::DtoH: return "DtoH";
    case wire::Direction::DtoD: return "DtoD";
    case wire::Direction::HtoH: return "HtoH";
    case wire::Direction::PtoP: return "PtoP";
    case wire::Direction::Memset: return "Memset";
    default: return "Unknown";
    }
}

}  // namespace

int main(int argc, char** argv)
{
    int64_t tol = 20000, grossTol = 1000000000;
    bool requireGpu = false, allowDrops = false;
    uint64_t minNvtx = 0, minKernelTimings = 0, minCpuWaitTasks = 0;
    bool checkBudget = false;
    std::vector<std::string> requiredApis;
    std::vector<const char*> files;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--gpu-tol-ns" && i + 1 < argc) tol = std::atoll(argv[++i]);
        else if (a == "--gpu-gross-ns" && i + 1 < argc) grossTol = std::atoll(argv[++i]);
        else if (a == "--require-gpu") requireGpu = true;
        else if (a == "--allow-drops") allowDrops = true;
        else if (a == "--min-nvtx" && i + 1 < argc) minNvtx = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--min-cpu-wait-tasks" && i + 1 < argc) minCpuWaitTasks = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--min-kernel-timings" && i + 1 < argc) minKernelTimings = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--require-api" && i + 1 < argc) requiredApis.push_back(argv[++i]);
        else if (a == "--gpu-budget") checkBudget = true;
        else files.push_back(argv[i]);
    }
    if (files.size() != 2) {
        std::fprintf(stderr, "usage: compare_capture [--gpu-tol-ns N] [--gpu-gross-ns N] [--require-gpu] [--allow-drops] [--min-nvtx N] [--min-kernel-timings N] [--min-cpu-wait-tasks N] [--require-api ABI]... [--gpu-budget] CAPTURE TRACE|-\n");
        return 2;
    }
    Capture cap;
    if (!readCapture(files[0], cap)) return 2;

    std::vector<Op> ops;
    struct Wait {
        uint32_t tid;
        std::string api, reason;
        uint64_t start, end;
    };
    std::vector<Wait> waits;  // where the simulated driver made the host wait for the device
    const bool haveTrace = std::string(files[1]) != "-";  // "-": check the capture alone
    std::ifstream tin(files[1]);
    if (!tin && std::string(files[1]) != "-") {
        std::fprintf(stderr, "cannot open %s\n", files[1]);
        return 2;
    }
    std::string line;
    while (std::getline(tin, line)) {
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) {
            std::fprintf(stderr, "bad trace line: %s\n", line.c_str());
            return 2;
        }
        if (j.value("pid", 0u) != cap.pid) continue;
        if (j.value("type", "") == "wait") {
            waits.push_back({j.value("tid", 0u), j.value("api", ""), j.value("reason", ""), j.value("start", uint64_t(0)),
                             j.value("end", uint64_t(0))});
            continue;
        }
        if (j.value("type", "") != "op") continue;
        Op o;
        o.tid = j.value("tid", 0u);
        o.api = j.value("api", "");
        o.op = j.value("op", "");
        o.submit = j.value("submit", uint64_t(0));
        o.start = j.value("start", uint64_t(0));
        o.end = j.value("end", uint64_t(0));
        o.graph = j.value("graph", false);
        o.j = std::move(j);
        ops.push_back(std::move(o));
    }

    // Calls per thread, by begin time, for the containment search.
    std::map<uint32_t, std::vector<size_t>> byTid;
    for (size_t i = 0; i < cap.calls.size(); ++i) byTid[cap.calls[i].body.tid].push_back(i);
    for (auto& [tid, v] : byTid)
        std::sort(v.begin(), v.end(), [&](size_t a, size_t b) { return cap.calls[a].body.beginNs < cap.calls[b].body.beginNs; });

    for (size_t oi = 0; oi < ops.size(); ++oi) {
        const Op& o = ops[oi];
        auto it = byTid.find(o.tid);
        std::vector<size_t> matches;
        if (it != byTid.end()) {
            for (size_t ci : it->second) {
                const wire::CallBody& b = cap.calls[ci].body;
                if (b.beginNs > o.submit) break;
                if (o.submit <= b.endNs && cap.apis[b.apiId] == o.api) matches.push_back(ci);
            }
        }
        if (matches.empty()) {
            problem("op not recorded: " + o.j.dump());
            continue;
        }
        if (matches.size() > 1) {
            problem("op recorded " + std::to_string(matches.size()) + " times: " + o.j.dump());
            continue;
        }
        cap.calls[matches[0]].ops.push_back(oi);
    }

    // Streams: one shim stream key <-> one simulated stream id.
    std::map<std::string, uint64_t> keyToId;
    std::map<uint64_t, std::string> idToKey;
    size_t timed = 0, untimedCopies = 0, deviceCalls = 0, timedCalls = 0, spanned = 0;
    // A span is placed on the host clock through a calibration whose uncertainty the shim states.
    const int64_t bound = tol + int64_t(cap.clockErrorNs);
    // GPU times from events cannot be exact on an idle stream (an event there completes when recorded,
    // not when the work starts) and a loaded machine delays event records: the typical error must be
    // within --gpu-tol-ns, every error within --gpu-gross-ns (a broken calibration is off by far more).
    std::vector<int64_t> gpuErrors;
    size_t gpuChecked = 0, gpuOutOfBound = 0;
    for (Call& c : cap.calls) {
        const wire::CallBody& b = c.body;
        const std::string api = cap.apis[b.apiId];
        const bool deviceWork = b.flags & wire::kCallDeviceWork;
        if (deviceWork) ++deviceCalls;
        // A call flagged held up (its thread off the CPU inside it) has its span dropped, and the capture
        // says so, unless its stream fixed both ends (its work began after the call returned and ended
        // after its end record: the shim's settledBy); such a span meets the bound below as any other
        // does. The bar on spans is for the calls not held up.
        if ((b.flags & wire::kCallGpuTimed) && !(b.flags & wire::kCallHeldUp)) ++timedCalls, spanned += c.hasSpan;
        if (c.ops.empty()) {
            // Capturing calls and failed calls submit nothing; anything else is a phantom.
            if (haveTrace && deviceWork && b.result == 0 && !(b.flags & wire::kCallCapturing) && api.find("Prefetch") == std::string::npos)
                problem("recorded device work with no device op: seq " + std::to_string(b.seq) + " " + api);
            continue;
        }
        const Op& first = ops[c.ops.front()];
        // Stream identity.
        uint64_t h = b.stream;
        bool pt = b.flags & wire::kCallPerThreadStream;
        if (h == 1) h = 0, pt = false;
        if (h == 2) h = 0, pt = true;
        std::string key = std::to_string(h) + "/" + std::to_string(b.device);
        if (h == 0) key += pt ? "/pt" + std::to_string(b.tid) : "/legacy";
        const uint64_t sid = first.j.value("stream", uint64_t(0));
        if (!first.graph) {
            auto k = keyToId.find(key);
            if (k == keyToId.end()) keyToId[key] = sid;
            else if (k->second != sid) problem("stream " + key + " seen as sim streams " + std::to_string(k->second) + " and " + std::to_string(sid));
            auto s = idToKey.find(sid);
            if (s == idToKey.end()) idToKey[sid] = key;
            else if (s->second != key) problem("sim stream " + std::to_string(sid) + " seen as " + s->second + " and " + key);
        }
        if (b.device != first.j.value("dev", -1)) problem("device " + std::to_string(b.device) + " vs " + first.j.dump());
        if (!first.graph) {
            if (first.op == "kernel") {
                const auto& l = b.args.launch;
                const std::string name = cap.kernels.count(l.kernelId) ? cap.kernels[l.kernelId] : "";
                if (name != first.j.value("name", "")) problem("kernel name '" + name + "' vs " + first.j.dump());
                auto grid = first.j["grid"], block = first.j["block"];
                for (int d = 0; d < 3; ++d)
                    if (l.grid[d] != grid[d].get<uint32_t>() || l.block[d] != block[d].get<uint32_t>())
                        problem("grid/block vs " + first.j.dump());
                if (l.sharedMem != first.j.value("smem", 0u)) problem("smem vs " + first.j.dump());
            } else if (first.op == "memcpy" || first.op == "memset") {
                uint64_t bytes = 0;
                for (size_t oi : c.ops) bytes += ops[oi].j.value("bytes", uint64_t(0));
                const auto& t = b.args.transfer;
                if (t.bytes != bytes) problem("bytes " + std::to_string(t.bytes) + " vs " + std::to_string(bytes) + " " + first.j.dump());
                if (first.op == "memcpy") {
                    if (dirName(t.direction) != first.j.value("dir", "")) problem("direction " + dirName(t.direction) + " vs " + first.j.dump());
                    if (hostSide(t) != first.j.value("host_mem", "")) problem("memory kind " + hostSide(t) + " vs " + first.j.dump());
                } else if (t.direction != wire::Direction::Memset) {
                    problem("memset not recorded as Memset: " + first.j.dump());
                }
            }
        }
        // Implicit synchronisation: the driver blocked the host on this copy or memset exactly when the
        // shim says so.
        if (!first.graph && first.j.contains("sync") && first.j["sync"].is_boolean()) {
            const bool sync = first.j["sync"].get<bool>();
            const bool flagged = b.flags & wire::kCallImplicitSync;
            if (sync != flagged)
                problem(std::string(flagged ? "flagged" : "not flagged") + " as implicitly synchronising: " + api + " " + first.j.dump());
        }
        // GPU time.
        uint64_t start = UINT64_MAX, end = 0;
        for (size_t oi : c.ops) start = std::min(start, ops[oi].start), end = std::max(end, ops[oi].end);
        if (c.hasSpan) {
            ++timed;
            const int64_t db = int64_t(c.span.beginNs) - int64_t(start), de = int64_t(c.span.endNs) - int64_t(end);
            // An event marks when the stream reached it: on an idle stream that is when it was recorded, so the
            // begin can be off by at most the host call's duration, the end by the time from the work's end to
            // the call's return (for work that had finished before the call returned), plus the slack.
            const int64_t callDur = int64_t(b.endNs) - int64_t(b.beginNs);
            const int64_t lateEnd = std::max<int64_t>(0, int64_t(b.endNs) - int64_t(end));
            gpuErrors.push_back(std::max(std::llabs(db), std::llabs(de)));
            ++gpuChecked;
            if (std::llabs(db) > callDur + bound || de > lateEnd + bound || de < -bound) {
                if (++gpuOutOfBound <= 5)
                    std::fprintf(stderr, "note: GPU span outside the bound: begin %+lld ns, end %+lld ns, call %lld..%lld ns from submit: %s %s\n",
                                 (long long)db, (long long)de, (long long)(int64_t(b.beginNs) - int64_t(first.submit)),
                                 (long long)(int64_t(b.endNs) - int64_t(first.submit)), api.c_str(), first.j.dump().c_str());
            }
            if (std::llabs(db) > grossTol || std::llabs(de) > grossTol)
                problem("GPU time off by begin " + std::to_string(db) + " ns, end " + std::to_string(de) + " ns (call " +
                        std::to_string(int64_t(b.beginNs) - int64_t(first.submit)) + ".." +
                        std::to_string(int64_t(b.endNs) - int64_t(first.submit)) + " ns from submit): " + api + " " + first.j.dump());
        } else if (requireGpu && (first.op == "memcpy" || first.op == "memset") && !(b.flags & wire::kCallCapturing)) {
            // The shim drops a span it cannot vouch for (its end event recorded late: a preempted thread).
            if (++untimedCopies <= 3) std::fprintf(stderr, "note: copy without GPU time: %s %s\n", api.c_str(), first.j.dump().c_str());
        }
    }
    // Frees and (un)registrations synchronise the device, when there is something to free: the shim
    // flags a call as implicitly synchronising exactly when the driver made it wait (cudaFree(nullptr)
    // waits for nothing).
    if (haveTrace) {
        for (const Call& c : cap.calls) {
            const wire::CallBody& b = c.body;
            const std::string api = cap.apis[b.apiId];
            if (b.category != wire::Category::Alloc && api != "cuCtxDestroy_v2") continue;
            bool waited = false;
            for (const Wait& w : waits)
                if (w.tid == b.tid && w.api == api && w.start >= b.beginNs && w.end <= b.endNs) waited = true;
            const bool flagged = b.flags & wire::kCallImplicitSync;
            if (waited != flagged)
                problem(api + " seq " + std::to_string(b.seq) + " (ptr " + std::to_string(b.args.alloc.ptr) + ", result " +
                        std::to_string(b.result) + ") " + (flagged ? "flagged as implicitly synchronising but the driver did not wait"
                                                               : "not flagged but the driver waited"));
        }
    }
    int64_t p50 = 0, p90 = 0, worst = 0;
    if (!gpuErrors.empty()) {
        std::sort(gpuErrors.begin(), gpuErrors.end());
        p50 = gpuErrors[gpuErrors.size() / 2];
        p90 = gpuErrors[gpuErrors.size() * 9 / 10];
        worst = gpuErrors.back();
        // Every span the shim sends is one it vouches for (it drops those whose end event it recorded
        // late): none may miss the bound.
        if (gpuOutOfBound > 0)
            problem(std::to_string(gpuOutOfBound) + " of " + std::to_string(gpuChecked) +
                    " GPU spans outside the event placement bound (+" + std::to_string(bound) + " ns)");
    }
    // gpuspy's own frames are skipped: no stack may start inside libgpuspy.so.
    for (uint64_t top : cap.stackTops)
        for (const auto& m : cap.modules)
            if (top >= m.start && top < m.end && m.path.find("libgpuspy") != std::string::npos) {
                problem("a stack starts inside gpuspy's own code (" + m.path + ")");
                break;
            }
    // The process's start comes before everything it recorded (a forked child's too).
    if (!cap.hasProcess) problem("no Process record");
    else if (cap.firstTimeNs != UINT64_MAX && cap.startNs > cap.firstTimeNs)
        problem("the Process record's start is " + std::to_string(cap.startNs - cap.firstTimeNs) + " ns after the first record's time");
    for (const std::string& arg : requiredApis) {
        const size_t eq = arg.find('=');
        const std::string want = arg.substr(0, eq);
        uint64_t seen = 0;
        for (const Call& c : cap.calls) {
            auto it = cap.apis.find(c.body.apiId);
            seen += it != cap.apis.end() && it->second == want;
        }
        if (eq == std::string::npos && !seen) problem("no call of " + want + " in the capture");
        if (eq != std::string::npos && seen != std::strtoull(arg.c_str() + eq + 1, nullptr, 10))
            problem(std::to_string(seen) + " calls of " + want + " in the capture, expected " + arg.substr(eq + 1));
    }
    // The threads' CPU wait: sent before End, counting at least minCpuWaitTasks threads (ended ones
    // included), and no thread can have waited longer than the process ran.
    if (minCpuWaitTasks) {
        const uint64_t wall = cap.hasEnd && cap.end.endNs > cap.startNs ? cap.end.endNs - cap.startNs : 0;
        if (!cap.hasCpuWait) problem("no CpuWait record");
        else if (cap.cpuWait.tasks < minCpuWaitTasks)
            problem("CpuWait counts " + std::to_string(cap.cpuWait.tasks) + " threads, expected at least " + std::to_string(minCpuWaitTasks));
        else if (cap.cpuWait.runDelayNs > uint64_t(cap.cpuWait.tasks) * wall)
            problem("CpuWait of " + std::to_string(cap.cpuWait.runDelayNs) + " ns over " + std::to_string(cap.cpuWait.tasks) +
                    " threads in a run of " + std::to_string(wall) + " ns");
    }
    if (cap.nvtx < minNvtx) problem(std::to_string(cap.nvtx) + " NVTX records, expected at least " + std::to_string(minNvtx));
    if (!cap.hasEnd) problem("no End record (the stream was not closed cleanly)");
    else if (!allowDrops && cap.end.recordsDropped != 0)
        problem("records dropped: " + std::to_string(cap.end.recordsDropped));
    if (requireGpu && timed == 0 && deviceCalls > 0) problem("no GPU spans at all");
    if (minKernelTimings > 0) {
        std::map<uint32_t, std::pair<uint64_t, uint64_t>> perKernel;  // kernel id -> launches, GPU-timed ones
        for (const auto& c : cap.calls) {
            const wire::CallBody& b = c.body;
            if (b.category != wire::Category::Launch || b.args.launch.kernelId == 0 || b.result != 0) continue;
            auto& [launches, timedLaunches] = perKernel[b.args.launch.kernelId];
            ++launches;
            timedLaunches += (b.flags & wire::kCallGpuTimed) != 0;
        }
        if (perKernel.empty()) problem("no kernel launches to check --min-kernel-timings on");
        for (const auto& [id, n] : perKernel)
            if (n.second < std::min<uint64_t>(minKernelTimings, n.first))
                problem("kernel " + (cap.kernels.count(id) ? cap.kernels[id] : std::to_string(id)) + ": GPU timing on " +
                        std::to_string(n.second) + " of its " + std::to_string(n.first) + " launches, expected at least " +
                        std::to_string(std::min<uint64_t>(minKernelTimings, n.first)));
    }
    // Each thread's totals: its calls are the Call records it made (when none was dropped), and its
    // own-time estimate (measured on some calls, scaled to all) is there and plausible per call.
    std::map<uint32_t, uint64_t> callsByTid;
    for (const auto& c : cap.calls) ++callsByTid[c.body.tid];
    for (const auto& [tid, t] : cap.statsByTid) {
        const uint64_t recorded = callsByTid.count(tid) ? callsByTid[tid] : 0;
        // (one record more: a call under way at the end, queued but not yet counted)
        if (cap.hasEnd && cap.end.recordsDropped == 0 && t.calls != recorded && t.calls + 1 != recorded)
            problem("thread " + std::to_string(tid) + ": ThreadStats says " + std::to_string(t.calls) + " calls, " +
                    std::to_string(recorded) + " Call records");
        // Measured and in nanoseconds: at least a ns a call. The upper bound is only against garbage (a
        // second a call): own time is wall time on the app's thread, which a busy machine stretches
        // without limit (858 ms for 475 calls under TSan beside CPU hogs); how small it is belongs to
        // the benchmarks (bench/), not to a test that must pass under load.
        if (t.calls > 0 && (t.overheadNs < t.calls || t.overheadNs / t.calls > 1000000000ull))
            problem("thread " + std::to_string(tid) + ": gpuspy's own time " + std::to_string(t.overheadNs) + " ns for " +
                    std::to_string(t.calls) + " calls");
    }
    // GPU timing's cost by the shim's own accounting (GpuBudget): every thread whose calls were timed
    // has its account, which counts at least the calls flagged timed and charges their records (on the
    // simulated driver a timing record spins 2.5 us: at least 1 us a timed call, on any machine) and
    // bookkeeping; the drain thread's reads are charged to a thread whose spans came back.
    // The spans it says it set aside are among the timed calls without one: a late end among those not
    // flagged held up, a held-up thread's among those flagged.
    std::map<uint32_t, uint64_t> timedByTid, spansByTid, unspannedByTid, heldUpByTid;
    std::map<uint32_t, uint64_t> chosenByTid;  // timed calls that were a timing choice (not a sync's drain mark)
    for (const auto& c : cap.calls) {
        if (c.body.flags & wire::kCallGpuTimed) ++timedByTid[c.body.tid];
        if ((c.body.flags & wire::kCallGpuTimed) && c.body.category != wire::Category::Sync) ++chosenByTid[c.body.tid];
        if (c.hasSpan) ++spansByTid[c.body.tid];
        if ((c.body.flags & wire::kCallGpuTimed) && !c.hasSpan)
            ++((c.body.flags & wire::kCallHeldUp) ? heldUpByTid : unspannedByTid)[c.body.tid];
    }
    for (const auto& [tid, b] : cap.budgetByTid)
        if (cap.hasEnd && cap.end.recordsDropped == 0 &&
            (b.lateEndSpans > unspannedByTid[tid] || b.heldUpSpans > heldUpByTid[tid]))
            problem("thread " + std::to_string(tid) + ": GpuBudget sets aside " + std::to_string(b.lateEndSpans) +
                    " late-end and " + std::to_string(b.heldUpSpans) + " held-up spans, of " +
                    std::to_string(unspannedByTid[tid]) + " and " + std::to_string(heldUpByTid[tid]) +
                    " timed calls without a span");
    for (const auto& [tid, n] : timedByTid) {
        const auto it = cap.budgetByTid.find(tid);
        // (a process of more threads than the shim keeps accounts for may leave some unreported)
        if (cap.hasEnd && it == cap.budgetByTid.end() && callsByTid.size() <= 256) {
            problem("thread " + std::to_string(tid) + " made " + std::to_string(n) + " GPU-timed calls and has no GpuBudget");
            continue;
        }
        if (it == cap.budgetByTid.end()) continue;
        const wire::GpuBudgetBody& b = it->second;
        // A thread whose only timed calls are syncs' drain marks (its earlier work untimed) made no choice.
        if (b.timedOps < n || b.recordNs < 1000 * n || b.bookkeepingNs == 0 || (chosenByTid[tid] > 0 && b.choosingNs == 0) ||
            b.lastNs < b.firstNs ||
            (spansByTid[tid] > 0 && b.drainNs == 0))
            problem("thread " + std::to_string(tid) + ": GpuBudget timed=" + std::to_string(b.timedOps) + " record=" +
                    std::to_string(b.recordNs) + " bookkeeping=" + std::to_string(b.bookkeepingNs) + " choosing=" +
                    std::to_string(b.choosingNs) + " drain=" + std::to_string(b.drainNs) + " for " + std::to_string(n) +
                    " timed calls, " + std::to_string(spansByTid[tid]) + " spans");
    }
    if (checkBudget) {
        // Within the budget: its share of the time between the thread's first and last choice, plus what
        // the budget lets a thread save up and borrow (a burst each: 32 us), the first two launches of
        // each kernel (timed whatever the budget says: their records and bookkeeping, 8 us a piece at
        // most), and the drain thread's reads of the last spans, charged after the thread's last choice.
        std::set<uint32_t> kernelIds;
        for (const auto& c : cap.calls)
            if (c.body.category == wire::Category::Launch && c.body.args.launch.kernelId) kernelIds.insert(c.body.args.launch.kernelId);
        size_t judged = 0;
        for (const auto& [tid, b] : cap.budgetByTid) {
            const uint64_t span = b.lastNs - b.firstNs;
            if (b.lastNs < b.firstNs || span < 20000000) continue;
            ++judged;
            const uint64_t spent = b.recordNs + b.bookkeepingNs + b.choosingNs + b.drainNs;
            const double share = double(span) * b.budgetPpm / 1e6;
            const double allowance = 2 * 32000.0 + double(kernelIds.size()) * 2 * 4 * 8000 + 200000;
            const double pct = 100.0 * double(spent) / double(span);
            std::printf("thread %u: GPU timing %.3f%% of %.1f ms (budget %.2f%%): records %.3f%%, bookkeeping %.3f%%, "
                        "choosing %.3f%%, drain %.3f%%; %llu timed, %llu untimed, spans set aside: %llu late end, %llu held up\n",
                        tid, pct, span / 1e6, b.budgetPpm / 1e4, 100.0 * b.recordNs / span, 100.0 * b.bookkeepingNs / span,
                        100.0 * b.choosingNs / span, 100.0 * b.drainNs / span, (unsigned long long)b.timedOps,
                        (unsigned long long)b.untimedOps, (unsigned long long)b.lateEndSpans,
                        (unsigned long long)b.heldUpSpans);
            if (double(spent) > share + allowance)
                problem("thread " + std::to_string(tid) + ": GPU timing took " + std::to_string(spent) + " ns of " +
                        std::to_string(span) + " ns, over its budget of " + std::to_string(b.budgetPpm) + " ppm");
        }
        if (judged == 0) problem("no thread chose for GPU timing over 20 ms: nothing to judge --gpu-budget on");
    }
    // The End record's count of calls GPU timing left out is the calls flagged so, and at most one
    // more per thread: a call under way when the process ended was counted, its record never made.
    uint64_t flaggedOut = 0;
    std::set<uint32_t> callers;
    for (const auto& c : cap.calls) {
        flaggedOut += (c.body.flags & wire::kCallGpuSampledOut) != 0;
        callers.insert(c.body.tid);
    }
    if (cap.hasEnd && cap.end.recordsDropped == 0 &&
        (cap.end.gpuSpansSampledOut < flaggedOut || cap.end.gpuSpansSampledOut > flaggedOut + callers.size()))
        problem("End says " + std::to_string(cap.end.gpuSpansSampledOut) + " calls left out of GPU timing, " +
                std::to_string(flaggedOut) + " Call records (of " + std::to_string(callers.size()) + " threads) are flagged so");
    for (const auto& [tid, n] : callsByTid)
        if (cap.hasEnd && !cap.statsByTid.count(tid))
            problem("thread " + std::to_string(tid) + " made " + std::to_string(n) + " calls and has no ThreadStats");
    // Dropping is the exception: at least 90% of the calls timed on the GPU have their span (in a
    // capture of a handful of timed calls, one or two preempted threads may still cost more than 10%).
    // The shim drops a span when its thread was held up between the call's return and the end event
    // record; with more app threads working than CPUs, the scheduler does that to every thread all the
    // time (the simulated driver spins for its modelled host costs), so there 80% is the bar.
    std::set<uint32_t> appThreads;
    for (const auto& c : cap.calls) appThreads.insert(c.body.tid);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const size_t pct = cpus > 0 && appThreads.size() > size_t(cpus) ? 8 : 9;
    if (requireGpu && timedCalls - spanned > 2 && spanned * 10 < timedCalls * pct)
        problem("only " + std::to_string(spanned) + " of " + std::to_string(timedCalls) + " GPU-timed calls have a span");

    std::printf("pid %u: %zu calls, %zu device ops, %zu calls GPU-timed (error p50 %lld ns, p90 %lld ns, max %lld ns), "
                "%zu outside the bound, %zu timed calls without a span, %llu left out of GPU timing, %llu nvtx, %llu clocks, %llu stacks, %zu modules: %s\n",
                cap.pid, cap.calls.size(), ops.size(), timed, (long long)p50, (long long)p90, (long long)worst, gpuOutOfBound,
                timedCalls - spanned, (unsigned long long)flaggedOut, (unsigned long long)cap.nvtx, (unsigned long long)cap.clocks, (unsigned long long)cap.stacks, cap.modules.size(),
                g_errors ? "MISMATCH" : "ok");
    return g_errors ? 1 : 0;
}
