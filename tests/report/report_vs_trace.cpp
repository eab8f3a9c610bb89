// report_vs_trace: checks `gpuspy report --format json` against the simulated driver's ground truth
// (SIMCUDA_TRACE, with SIMCUDA_TRACE_CALLS=1) of the same run, and the report's findings against a
// per-app expectation list. Exit status: 0 all checks hold, 1 a check failed, 2 bad usage or input.
//
// Usage: report_vs_trace --report JSON --dump DUMP [--expect FILE] [--app-src DIR] [--rel-tol F] TRACE...
//   TRACE     a trace file or a directory of them (one per process with SIMCUDA_TRACE=dir/trace.%p.jsonl)
//   --dump    `gpuspy dump` of the capture: its Call lines give the (pid, tid) of every app thread the
//             shim recorded, each call's own begin/end and flags; its GpuSpan lines which calls were timed;
//             its Clock lines the anchors' error. Trace records of any other thread are the profiler's own (the shim's drain
//             thread creates a stream and events, records and queries them) and are left out.
//   --expect  findings: lines `present RULE FUNC[|FUNC...]` (the finding must be there, and every one
//             of its call sites must be named after one of the functions, in a source file under
//             --app-src), `absent RULE...` and `library-call NAME...` (a call site in the app's own code,
//             with a source line, names that library call below it), `library-call-lines NAME N` (at
//             least N lines of the app's source name it, each its own site), `library-made RULE...`
//             (its calls were made inside library calls: information without a saving; -if-present: when
//             it fired), `library-own-if-present RULE...` (when it fired, its calls were all made on the
//             library's own threads or exit handlers: setup, no saving), `driver-api-names` (every API named as the driver's),
//             `uncut` (no call site's stack ends inside a library at the depth budget); '#' starts a comment.
//   --app-src the directory of the apps' sources (tests/apps)
//   --rel-tol relative allowance on GPU times and busy time on top of the computed bound (default 0.02)
//
// What is compared, and how the trace's vocabulary maps to the report's:
//  * transfers: trace memcpy ops -> (direction = dir, host_memory = host_mem, mode); memset ops ->
//    direction "Memset", compared per mode summed over host_memory (the trace does not say what a
//    memset's destination is). mode is the API form the report uses: "async" when the driver entry point
//    is an Async one, else "sync" -- not the trace's "sync" field, which says whether the call blocked
//    (a pageable cudaMemcpyAsync blocks but is still the async form). count and bytes must be equal.
//  * graph-replayed ops (trace "graph":true): the report counts each cuGraphLaunch as a graph launch
//    (launches.graph_launches) and the copies, memsets and kernels its nodes run in their rows (the
//    copies/kernels recorded into the capture are flagged as captured, not run). Graph copies and
//    memsets are the report's mode "graph" (count and bytes exact, as above); graph kernels count in
//    their kernel's row (count exact by name, graph_count exact). Their GPU time is an estimate (the
//    launch's measured time split over its nodes), so the GPU-time checks cover the ops run by API
//    calls only. Each replay (one cuGraphLaunch call: same pid, tid and submit time) must be one graph
//    launch, and its nodes count in busy time. A graph's event record and wait nodes (trace "graph_event"
//    records, no op: they run no device work) are launches.graph_event_nodes, by count.
//  * kernels: count by name exactly; the trace's mangled names are demangled (__cxa_demangle) and
//    compared with the report's demangled name (and its "mangled" field with the trace name). Trace
//    host_func ops (cuLaunchHostFunc, graph host nodes) are the report's host_functions, by count (graph
//    nodes apart), never a kernel row; launches.count is the kernels run by launch calls.
//  * spin-wait: runs of queries on an app thread with no other call between, 16 or more answered
//    CUDA_ERROR_NOT_READY (trace "call" records' rc), are busy-waits: the finding counts 80-100% of their
//    not-ready polls, its host CPU time is at most what they spanned, and it is absent without one.
//  * syncs: trace "wait" records by api. cuCtxSynchronize/cuStreamSynchronize/cuEventSynchronize are
//    the explicit rows (implicit == false); every other api that waited is an implicit row whose kind
//    must fit the reason (copy: sync_copy|pageable_copy, memset: sync_memset, free: free_sync,
//    register: register_sync, context: ctx_sync). Report rows the trace has no wait for must have the
//    kind query/module/alloc/other (those do not block in the simulated driver), else it is a mismatch.
//  * GPU times and busy: see the comment above opBounds() for the bound. A copy or memset that blocked
//    its call is checked as the upper bound it is (events cannot see when its device work began): its
//    span lies within the call, so truth - Ea <= GPU time <= the call's host time from the later of its
//    begin and the previous op's end on its stream (+ Ea).
//  * how GPU times were obtained (collector/README.md, "GPU time sources"): per transfer row,
//    upper_bound_count lies between the number of timed blocking ops of the row whose device was idle
//    when the call began (their begin event completed at once: the span must be called a bound) and the
//    number of its timed blocking ops; gpu_time says "upper_bound" exactly when the count is non-zero
//    ("none" when nothing was timed), upper_bound_gpu_ns <= gpu_ns; the devices' upper_bound_ops add up
//    to the rows' counts.
#include "timeline_checks.h"

#include <nlohmann/json.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

int g_failures = 0;
int g_checks = 0;

void fail(const std::string& what)
{
    ++g_failures;
    std::cout << "FAIL " << what << "\n";
}
void ok(const std::string& what)
{
    std::cout << "ok   " << what << "\n";
}
bool check(bool cond, const std::string& what)
{
    ++g_checks;
    if (cond) ok(what);
    else fail(what);
    return cond;
}

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "report_vs_trace: " << why << "\n"
              << "usage: report_vs_trace --report JSON --dump DUMP [--expect FILE] [--app-src DIR] [--rel-tol F] TRACE...\n";
    std::exit(2);
}

std::string demangle(const std::string& m)
{
    if (m.rfind("_Z", 0) != 0) return m;
    int st = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(m.c_str(), nullptr, nullptr, &st), std::free);
    return st == 0 && out ? std::string(out.get()) : m;
}

// Driver ABI name without version/stream suffixes: cuStreamSynchronize_ptsz -> cuStreamSynchronize.
std::string baseName(std::string s)
{
    for (const char* suf : {"_ptsz", "_ptds"})
        if (s.size() > 5 && s.compare(s.size() - 5, 5, suf) == 0) s.resize(s.size() - 5);
    static const std::regex ver("_v[0-9]+$");
    return std::regex_replace(s, ver, "");
}

bool isExplicitApi(const std::string& api)
{
    const std::string b = baseName(api);
    return b == "cuCtxSynchronize" || b == "cuStreamSynchronize" || b == "cuEventSynchronize";
}

// `gpuspy dump` lines: "pid P @OFF Call #SEQ API CATEGORY tid=T t=B..E ... flags=F ..." and
// "pid P @OFF GpuSpan #SEQ dev=D t=B..E ...". The Call lines give the app threads and, for each call, the
// shim's own begin/end (the clamp limits of its GPU spans) and whether it blocked; a GpuSpan says the
// call was timed, i.e. counts in the report's GPU sums.
struct ShimCall {
    long long pid = 0, seq = 0, tid = 0, begin = 0, end = 0, dev = 0;
    std::string api;
    bool blocking = false, timed = false;
};
struct Dump {
    std::set<std::pair<long long, long long>> threads;
    std::map<std::pair<long long, long long>, std::vector<ShimCall>> callsByThread;  // sorted by begin
    std::map<long long, long long> anchorErrorNs;  // per pid: the largest error of its clock anchors
};

Dump readDump(const std::string& path)
{
    std::ifstream in(path);
    if (!in) usage("cannot read dump " + path);
    static const std::regex call(R"(^pid ([0-9]+) @[0-9]+ Call #([0-9]+) (\S+) \S+ tid=([0-9]+) t=([0-9]+)\.\.([0-9]+) .* dev=(-?[0-9]+) .* flags=(\S+))");
    static const std::regex span(R"(^pid ([0-9]+) @[0-9]+ GpuSpan #([0-9]+) )");
    static const std::regex clock(R"(^pid ([0-9]+) @[0-9]+ Clock .* error=([0-9]+)ns)");
    Dump d;
    std::vector<ShimCall> calls;
    std::set<std::pair<long long, long long>> spans;
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, call)) {
            ShimCall c;
            c.pid = std::stoll(m[1]);
            c.seq = std::stoll(m[2]);
            c.api = m[3];
            c.tid = std::stoll(m[4]);
            c.begin = std::stoll(m[5]);
            c.end = std::stoll(m[6]);
            c.dev = std::stoll(m[7]);
            c.blocking = std::string(m[8]).find("implicit-sync") != std::string::npos;
            calls.push_back(c);
            d.threads.insert({c.pid, c.tid});
        } else if (std::regex_search(line, m, clock)) {
            long long& e = d.anchorErrorNs[std::stoll(m[1])];
            e = std::max(e, std::stoll(m[2]));
        } else if (std::regex_search(line, m, span)) {
            spans.insert({std::stoll(m[1]), std::stoll(m[2])});
        }
    }
    for (ShimCall& c : calls) {
        c.timed = spans.count({c.pid, c.seq}) != 0;
        d.callsByThread[{c.pid, c.tid}].push_back(c);
    }
    for (auto& [k, v] : d.callsByThread)
        std::sort(v.begin(), v.end(), [](const ShimCall& a, const ShimCall& b) { return a.begin < b.begin; });
    return d;
}

struct Op {
    std::string op, api, name, dir, hostMem;
    long long pid = 0, tid = 0, dev = 0, stream = 0;
    long long submit = 0, start = 0, end = 0, bytes = 0;
    bool graph = false;
    long long callStart = -1, callEnd = -1;  // the driver call that submitted it (trace "call" record)
    const ShimCall* shim = nullptr;          // the shim's record of that call (dump)
    bool timed() const { return shim && shim->timed; }
};
struct Wait {
    std::string api, reason;
    long long pid = 0, tid = 0, dev = 0, start = 0, end = 0;
};
struct Call {
    std::string api;
    long long pid = 0, tid = 0, start = 0, end = 0;
    int rc = 0;        // the CUresult it returned
    bool app = false;  // on a thread of the app (not the profiler's own)
};

struct Trace {
    std::vector<Op> ops;
    std::vector<Wait> waits;
    std::vector<Call> calls;
    size_t foreignOps = 0, foreignWaits = 0;  // on the profiler's own threads
    uint64_t graphEvents = 0;                  // event record and wait nodes graph launches ran
};

std::vector<std::string> traceFiles(const std::vector<std::string>& args)
{
    std::vector<std::string> files;
    for (const std::string& a : args) {
        if (fs::is_directory(a)) {
            std::vector<std::string> v;
            for (const auto& e : fs::directory_iterator(a))
                if (e.is_regular_file()) v.push_back(e.path().string());
            std::sort(v.begin(), v.end());
            files.insert(files.end(), v.begin(), v.end());
        } else {
            files.push_back(a);
        }
    }
    return files;
}

Trace readTrace(const std::vector<std::string>& files, const std::set<std::pair<long long, long long>>& appThreads)
{
    Trace t;
    for (const std::string& f : files) {
        std::ifstream in(f);
        if (!in) usage("cannot read trace " + f);
        std::string line;
        size_t n = 0;
        while (std::getline(in, line)) {
            ++n;
            if (line.empty()) continue;
            Json j;
            try {
                j = Json::parse(line);
            } catch (const std::exception& e) {
                usage(f + ":" + std::to_string(n) + ": not JSON: " + e.what());
            }
            const std::string type = j.value("type", "");
            const long long pid = j.value("pid", 0LL), tid = j.value("tid", 0LL);
            const bool app = appThreads.count({pid, tid}) != 0;
            if (type == "op") {
                if (!app) {
                    ++t.foreignOps;
                    continue;
                }
                Op o;
                o.op = j.value("op", "");
                o.api = j.value("api", "");
                o.name = j.value("name", "");
                o.dir = j.value("dir", "");
                o.hostMem = j.value("host_mem", "");
                o.pid = pid;
                o.tid = tid;
                o.dev = j.value("dev", 0LL);
                o.stream = j.value("stream", 0LL);
                o.submit = j.value("submit", 0LL);
                o.start = j.value("start", 0LL);
                o.end = j.value("end", 0LL);
                o.bytes = j.value("bytes", 0LL);
                o.graph = j.value("graph", false);
                t.ops.push_back(o);
            } else if (type == "wait") {
                if (!app) {
                    ++t.foreignWaits;
                    continue;
                }
                t.waits.push_back(Wait{j.value("api", ""), j.value("reason", ""), pid, tid, j.value("dev", 0LL),
                                       j.value("start", 0LL), j.value("end", 0LL)});
            } else if (type == "graph_event") {
                if (app) ++t.graphEvents;
            } else if (type == "call") {
                t.calls.push_back(Call{j.value("api", ""), pid, tid, j.value("start", 0LL), j.value("end", 0LL),
                                       j.value("rc", 0), app});
            }
        }
    }
    return t;
}

std::string modeOf(const std::string& api) { return api.find("Async") != std::string::npos ? "async" : "sync"; }

std::string fmtNs(double ns)
{
    char b[64];
    std::snprintf(b, sizeof b, "%.0f", ns);
    return b;
}

// ---------------------------------------------------------------------------------------------------
// The bound on GPU time placement. The shim times device work with events on the app's stream: a begin
// event (the previous timed op's end event on that stream, or one it records just before the call),
// and an end event recorded just after the call returns; the drain thread converts them to the host
// clock through an anchor event (recorded on its own idle stream and polled), which also measures the
// latency L from a cuEventRecord's return to its completion. A span's begin is the later of the begin
// event, the call's begin (as the shim recorded it, the dump's t=B..E) and, for a call that did not
// block (no implicit-sync flag), the call's end E + L: such a call submits its work as it returns (the
// simulated driver stamps the op's submit at the call's return, as a real driver writes the doorbell
// last), and on an idle stream the work starts the latency after that. A call that blocked also has
// its end clamped to <= E. In the simulated driver an event stamps the stream's tail if work is pending,
// else its own submission + latency. Therefore, for a timed op with true interval [s, e] (trace):
//   begin b, too early: s - b <= Eb. b >= the begin event, which is >= the end of the previous op on
//     the same stream (a stamp is never before the tail), and b >= B: Eb <= s - max(B, previous end).
//     On a busy stream (the op queued behind the previous one, s == its end) that is 0. For a call that
//     did not block, b >= E + L also, and L is the driver's latency less the anchor record's own return
//     delay after its stamp (the shim's clock read: tens of ns): Eb <= s - (E + latency) + that delay,
//     which is ~0 on an idle stream (s = submit + latency, submit ~ E). For a call that blocked, Eb
//     stays the call's host time before the op was submitted: the begin event is all there is.
//   begin b, too late: b - s <= Es = max(0, E - submit) for a call that did not block (s >= submit +
//     latency, b = E + L when that is what placed it): the call returned late after its submission, e.g.
//     the thread was preempted between the simulated driver's stamp and the return. 0 for blocking calls.
//   end f: f >= e (the end event is queued behind the op); f <= max(e, R + latency) where R is the end
//     of the first cuEventRecord call (trace call record) on that thread after the op's call returned,
//     the shim's end record (its stamp is the tail if the op is still pending, else its submission +
//     latency, and its submission is at most its return); a blocking call also clamps f <= E. So
//     0 <= f - e <= Ef: on an idle stream an op shorter than an event record's host cost ends before
//     the end event arrives, and only this bound is known of its end.
//   The anchor itself is placed within the width Ea of its query bracket (the dump's Clock error): it
//     shifts every converted time of the process alike, the begin placed at E + L too (L is measured
//     against the same anchor), so a span's length carries it only where a host time placed one end
//     (the call's begin or, for a blocking call, its end): at most Ea once, longer for any call, shorter
//     only for a blocking one. Ea also covers the anchor record's own return delay. A busy union of spans
//     that all shift alike keeps its length but for the active span's edges: its intervals widen by Ea.
//   Both ends also carry the float-ms rounding of cuEventElapsedTime against the anchor: |elapsed| <
//     2 s gives under 2^-24 * 2048 ms / 2 = 61 ns per end; kFloatNs = 128 per end covers it.
// A span thus lies within [s - Eb - Ea, e + Ef + Ea] and its length within [e - s - Es (- Ea if it
// blocked), e - s + Eb + Ef + Ea]: the GPU time of a row lies in the sums of those over its timed ops,
// widened by 2 kFloatNs n, and the busy union of the timed ops between the union of their intervals
// shortened by Es and the union of the widened ones. Which ops were timed is exact: the dump's GpuSpan records
// name the calls. On top of this, --rel-tol (2%) of the truth allows for what the model leaves out
// (another thread queueing on the same stream between the op and its end record, CPU clock reads).
constexpr double kFloatNs = 128;

long long g_latencyNs = 2000;

struct OpBound {
    long long eb = 0, ef = 0, es = 0;
    long long err = 0;  // the anchor's error (see the comment above)
    bool blocking = false;
    long long window = 0;    // blocking: the call's host time from the later of its begin and the previous op's end
    bool idleAtCall = false; // blocking: no op of its process ran on its device when the call began
};

// Matches each op to its driver call (trace call record, SIMCUDA_TRACE_CALLS=1) and to the shim's record
// of that call (dump), then computes Eb and Ef as above.
std::vector<OpBound> opBounds(Trace& t, const Dump& dump)
{
    std::map<std::pair<long long, long long>, std::vector<const Call*>> callsByThread;
    for (const Call& c : t.calls) callsByThread[{c.pid, c.tid}].push_back(&c);
    for (auto& [k, v] : callsByThread)
        std::sort(v.begin(), v.end(), [](const Call* a, const Call* b) { return a->start < b->start; });
    for (Op& o : t.ops) {
        if (auto it = callsByThread.find({o.pid, o.tid}); it != callsByThread.end())
            for (const Call* c : it->second)
                if (c->api == o.api && c->start <= o.submit && o.submit <= c->end) {
                    o.callStart = c->start;
                    o.callEnd = c->end;
                }
        if (auto it = dump.callsByThread.find({o.pid, o.tid}); it != dump.callsByThread.end())
            for (const ShimCall& c : it->second)
                if (c.api == o.api && c.begin <= o.submit && o.submit <= c.end) o.shim = &c;
    }
    std::vector<size_t> order(t.ops.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.ops[a].submit < t.ops[b].submit; });
    std::map<std::tuple<long long, long long, long long>, long long> streamEnd;  // (pid, dev, stream) -> max end so far
    std::vector<OpBound> out(t.ops.size());
    for (size_t idx : order) {
        const Op& o = t.ops[idx];
        OpBound& b = out[idx];
        const auto key = std::make_tuple(o.pid, o.dev, o.stream);
        long long lower = o.shim ? o.shim->begin : (o.callStart >= 0 ? o.callStart : o.submit);
        if (auto s = streamEnd.find(key); s != streamEnd.end()) lower = std::max(lower, s->second);
        b.eb = std::max(0LL, o.start - lower);
        if (o.shim && !o.shim->blocking) {
            // Submitted as the call returned: the span starts no earlier than that plus the latency.
            b.eb = std::min(b.eb, std::max(0LL, o.start - (o.shim->end + g_latencyNs)));
            b.es = std::max(0LL, o.shim->end - o.submit);
        }
        long long fmax = LLONG_MAX;  // no end record found: unbounded
        if (auto ct = callsByThread.find({o.pid, o.tid}); ct != callsByThread.end()) {
            const long long after = o.callEnd >= 0 ? o.callEnd : o.end;
            for (const Call* c : ct->second)
                if (c->start >= after && c->api.rfind("cuEventRecord", 0) == 0) {
                    fmax = c->end + g_latencyNs;
                    break;
                }
        }
        if (o.shim && o.shim->blocking) fmax = std::min(fmax, o.shim->end);
        b.ef = fmax == LLONG_MAX ? LLONG_MAX / 4 : std::max(0LL, fmax - o.end);
        if (auto a = dump.anchorErrorNs.find(o.pid); a != dump.anchorErrorNs.end()) b.err = a->second;
        b.blocking = o.shim && o.shim->blocking;
        if (b.blocking) b.window = std::max(0LL, o.shim->end - lower);
        long long& se = streamEnd[key];
        se = std::max(se, o.end);
    }
    // A blocking call on a device with nothing running when it began: the begin event recorded just
    // before the call's begin B (or the end of earlier work, done by B) completed by B + latency.
    std::map<std::pair<long long, long long>, std::vector<const Op*>> opsOfDevice;
    for (const Op& o : t.ops) opsOfDevice[{o.pid, o.dev}].push_back(&o);
    for (size_t i = 0; i < t.ops.size(); ++i) {
        const Op& o = t.ops[i];
        if (!out[i].blocking) continue;
        const long long callBegin = o.shim->begin;
        out[i].idleAtCall = true;
        for (const Op* other : opsOfDevice[{o.pid, o.dev}])
            if (other != &o && other->start < callBegin && other->end > callBegin) out[i].idleAtCall = false;
    }
    return out;
}

struct Interval {
    long long b, e;
};

long long unionWithin(std::vector<Interval> v, long long lo, long long hi)
{
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.b < b.b; });
    long long total = 0, cb = 0, ce = 0;
    bool open = false;
    for (Interval x : v) {
        x.b = std::max(x.b, lo);
        x.e = std::min(x.e, hi);
        if (x.e <= x.b) continue;
        if (!open || x.b > ce) {
            if (open) total += ce - cb;
            cb = x.b;
            ce = x.e;
            open = true;
        } else {
            ce = std::max(ce, x.e);
        }
    }
    if (open) total += ce - cb;
    return total;
}

// A row's GPU time against its timed ops: [sum (e - s) - rounding - rel, sum (e - s + Eb + Ef) + rounding + rel],
// and its timed count against the number of ops the dump shows timed.
void checkGpuTime(const std::string& what, double reported, uint64_t timedReported, const std::vector<size_t>& idx,
                  const Trace& t, const std::vector<OpBound>& bounds, double relTol)
{
    double truth = 0, all = 0, upper = 0, lower = 0;
    uint64_t timed = 0;
    for (size_t i : idx) {
        const Op& o = t.ops[i];
        all += double(o.end - o.start);
        if (!o.timed()) continue;
        ++timed;
        truth += double(o.end - o.start);
        const OpBound& b = bounds[i];
        if (b.blocking) {
            // An upper bound: the span covers the work and lies within the call.
            upper += double(std::max(b.window, o.end - o.start)) + double(b.err);
            lower += double(std::max(0LL, o.end - o.start - b.err));
            continue;
        }
        upper += double(o.end - o.start) + double(b.eb) + double(b.ef) + double(b.err);
        lower += double(std::max(0LL, o.end - o.start - b.es));
    }
    check(timedReported == timed, what + ": report timed_count " + std::to_string(timedReported) + ", the capture timed " +
                                      std::to_string(timed) + " of " + std::to_string(idx.size()) + " ops");
    const double lo = lower - relTol * truth - 2 * kFloatNs * double(timed);
    const double hi = upper + relTol * truth + 2 * kFloatNs * double(timed);
    std::ostringstream s;
    s << what << " GPU time " << fmtNs(reported) << " ns within [" << fmtNs(lo) << ", " << fmtNs(hi) << "] (trace "
      << fmtNs(truth) << " ns over the " << timed << " timed ops, " << fmtNs(all) << " over all " << idx.size() << ")";
    check(reported >= lo && reported <= hi, s.str());
}

using GroupKey = std::tuple<std::string, std::string, std::string>;  // direction, host memory ("*": memset), mode

GroupKey groupOf(const Json& row)
{
    const std::string dir = row.value("direction", "");
    return {dir, dir == "Memset" ? "*" : row.value("host_memory", ""), row.value("mode", "")};
}

// How each transfer row says its GPU time was obtained, against what the trace says of its ops (see the
// header): the report must call a bound every span that can only be one, and only blocking ops' spans.
void checkGpuTimeSources(const Json& report, const Trace& t, const std::vector<OpBound>& bounds,
                         const std::map<GroupKey, std::vector<size_t>>& opsOfGroup)
{
    struct Counts {
        uint64_t reported = 0, timed = 0, gpuNs = 0, boundNs = 0;
        bool labelsAgree = true;
    };
    std::map<GroupKey, Counts> rows;
    uint64_t rowBounds = 0, deviceBounds = 0;
    bool fields = true;
    for (const Json& r : report["transfers"]) {
        fields = fields && r.contains("gpu_time") && r.contains("upper_bound_count") && r.contains("upper_bound_gpu_ns");
        Counts& c = rows[groupOf(r)];
        const uint64_t n = r.value("upper_bound_count", 0ULL), timed = r.value("timed_count", 0ULL);
        const std::string label = r.value("gpu_time", "");
        c.labelsAgree = c.labelsAgree && label == (!timed ? "none" : n ? "upper_bound" : "measured");
        c.reported += n;
        c.timed += timed;
        c.gpuNs += r.value("gpu_ns", 0ULL);
        c.boundNs += r.value("upper_bound_gpu_ns", 0ULL);
        rowBounds += n;
    }
    for (const Json& d : report["devices"]) {
        fields = fields && d.contains("upper_bound_ops");
        deviceBounds += d.value("upper_bound_ops", 0ULL);
    }
    check(fields, "transfer rows have gpu_time, upper_bound_count, upper_bound_gpu_ns; devices upper_bound_ops");
    for (const auto& [k, c] : rows) {
        uint64_t blocking = 0, mustBound = 0;
        if (auto it = opsOfGroup.find(k); it != opsOfGroup.end())
            for (size_t i : it->second) {
                if (!t.ops[i].timed() || !bounds[i].blocking) continue;
                ++blocking;
                mustBound += bounds[i].idleAtCall;
            }
        const std::string name = "transfers " + std::get<0>(k) + "/" + std::get<1>(k) + "/" + std::get<2>(k);
        check(c.reported >= mustBound && c.reported <= blocking,
              name + ": upper_bound_count " + std::to_string(c.reported) + " between the " + std::to_string(mustBound) +
                  " timed blocking ops on an idle device and all " + std::to_string(blocking) + " timed blocking ops");
        check(c.labelsAgree, name + ": gpu_time is upper_bound exactly when upper_bound_count > 0 (none: nothing timed)");
        check(c.boundNs <= c.gpuNs, name + ": upper_bound_gpu_ns " + std::to_string(c.boundNs) + " <= gpu_ns " +
                                        std::to_string(c.gpuNs));
    }
    check(deviceBounds == rowBounds, "devices' upper_bound_ops " + std::to_string(deviceBounds) +
                                         " = the transfer rows' upper_bound_count " + std::to_string(rowBounds));
}

}  // namespace

int main(int argc, char** argv)
{
    std::string reportPath, dumpPath, expectPath, appSrc;
    double relTol = 0.02;
    std::vector<std::string> traces;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--report") reportPath = next();
        else if (a == "--dump") dumpPath = next();
        else if (a == "--expect") expectPath = next();
        else if (a == "--app-src") appSrc = next();
        else if (a == "--rel-tol") relTol = std::stod(next());
        else if (a.rfind("--", 0) == 0) usage("unknown option " + a);
        else traces.push_back(a);
    }
    if (reportPath.empty() || dumpPath.empty() || traces.empty()) usage("--report, --dump and a trace are required");
    if (const char* l = std::getenv("SIMCUDA_LAUNCH_LATENCY_NS")) g_latencyNs = std::atoll(l);

    Json report;
    {
        std::ifstream in(reportPath);
        if (!in) usage("cannot read report " + reportPath);
        try {
            in >> report;
        } catch (const std::exception& e) {
            usage(reportPath + ": not JSON: " + e.what());
        }
    }
    check(report.value("schema", "") == "gpuspy.report/1", "report schema is gpuspy.report/1");
    const Dump dump = readDump(dumpPath);
    const auto& appThreads = dump.threads;
    Trace t = readTrace(traceFiles(traces), appThreads);
    if (t.calls.empty()) usage("the trace has no call records: run with SIMCUDA_TRACE_CALLS=1");
    std::cout << "trace: " << t.ops.size() << " ops, " << t.waits.size() << " waits on " << appThreads.size()
              << " app thread(s); left out " << t.foreignOps << " ops and " << t.foreignWaits
              << " waits of the profiler's own threads\n";

    // ---- processes: the same set of pids.
    std::set<long long> tracePids, reportPids;
    for (const Op& o : t.ops) tracePids.insert(o.pid);
    for (const Wait& w : t.waits) tracePids.insert(w.pid);
    for (const Json& p : report["processes"]) reportPids.insert(p.value("pid", 0LL));
    for (long long pid : tracePids)
        check(reportPids.count(pid) != 0, "process " + std::to_string(pid) + " of the trace is in the report");
    for (const Json& p : report["processes"])
        check(p.value("dropped_records", 0) == 0,
              "process " + std::to_string(p.value("pid", 0LL)) + " dropped no records");

    // ---- transfers
    std::map<std::tuple<std::string, std::string, std::string>, std::pair<long long, long long>> want, got;
    std::map<GroupKey, std::vector<size_t>> opsOfGroup;
    for (size_t i = 0; i < t.ops.size(); ++i) {
        const Op& o = t.ops[i];
        if (o.op != "memcpy" && o.op != "memset") continue;
        const std::string mode = o.graph ? "graph" : modeOf(o.api);
        const auto key = o.op == "memset" ? std::make_tuple(std::string("Memset"), std::string("*"), mode)
                                          : std::make_tuple(o.dir, o.hostMem, mode);
        want[key].first += 1;
        want[key].second += o.bytes;
        if (!o.graph) opsOfGroup[key].push_back(i);
    }
    std::map<std::tuple<std::string, std::string, std::string>, std::pair<double, uint64_t>> gpuOfGroup;
    for (const Json& r : report["transfers"]) {
        std::string dir = r.value("direction", ""), mem = r.value("host_memory", ""), mode = r.value("mode", "");
        // The simulated driver queues no op for a prefetch (its trace has none to count): api_rows.py
        // checks those calls in the API summary.
        if (dir == "Prefetch") continue;
        if (dir == "Memset") mem = "*";
        const auto key = std::make_tuple(dir, mem, mode);
        got[key].first += r.value("count", 0LL);
        got[key].second += r.value("bytes", 0LL);
        gpuOfGroup[key].first += r.value("gpu_ns", 0.0);
        gpuOfGroup[key].second += r.value("timed_count", 0ULL);
    }
    std::set<std::tuple<std::string, std::string, std::string>> keys;
    for (const auto& [k, v] : want) keys.insert(k);
    for (const auto& [k, v] : got) keys.insert(k);
    for (const auto& k : keys) {
        const auto w = want.count(k) ? want[k] : std::make_pair(0LL, 0LL);
        const auto g = got.count(k) ? got[k] : std::make_pair(0LL, 0LL);
        const std::string name = "transfers " + std::get<0>(k) + "/" + std::get<1>(k) + "/" + std::get<2>(k);
        check(w.first == g.first && w.second == g.second,
              name + ": report count " + std::to_string(g.first) + " bytes " + std::to_string(g.second) + ", trace count " +
                  std::to_string(w.first) + " bytes " + std::to_string(w.second));
    }

    const std::vector<OpBound> bounds = opBounds(t, dump);
    for (const auto& [k, idx] : opsOfGroup) {
        if (!gpuOfGroup.count(k)) continue;
        checkGpuTime("transfers " + std::get<0>(k) + "/" + std::get<1>(k) + "/" + std::get<2>(k), gpuOfGroup[k].first,
                     gpuOfGroup[k].second, idx, t, bounds, relTol);
    }
    checkGpuTimeSources(report, t, bounds, opsOfGroup);

    // ---- kernels
    std::map<std::string, std::vector<size_t>> kernelOps;  // run by launch calls: their GPU times are measured
    std::map<std::string, long long> kernelCount, graphKernelCount;
    std::map<std::string, std::set<std::string>> mangledOf;
    uint64_t hostFuncs = 0, graphHostFuncs = 0;
    for (size_t i = 0; i < t.ops.size(); ++i) {
        const Op& o = t.ops[i];
        // Host functions (cuLaunchHostFunc, graph host nodes) are the report's host_functions, never a
        // kernel row: their counts are checked, not their times.
        if (o.op == "host_func") {
            ++hostFuncs;
            graphHostFuncs += o.graph;
            continue;
        }
        if (o.op != "kernel") continue;
        const std::string name = demangle(o.name);
        ++kernelCount[name];
        if (o.graph) ++graphKernelCount[name];
        else kernelOps[name].push_back(i);
        mangledOf[name].insert(o.name);
    }
    std::set<std::string> reportKernels;
    for (const Json& k : report["kernels"]) {
        const std::string name = k.value("name", "");
        reportKernels.insert(name);
        const long long want = kernelCount.count(name) ? kernelCount[name] : 0;
        const long long wantGraph = graphKernelCount.count(name) ? graphKernelCount[name] : 0;
        check(k.value("count", 0ULL) == uint64_t(want), "kernel " + name + ": report count " + std::to_string(k.value("count", 0LL)) +
                                                 ", trace " + std::to_string(want));
        check(k.value("graph_count", 0ULL) == uint64_t(wantGraph), "kernel " + name + ": report graph_count " +
                                                                   std::to_string(k.value("graph_count", 0LL)) + ", trace " +
                                                                   std::to_string(wantGraph) + " run as graph nodes");
        if (!want) continue;
        if (!k.value("mangled", "").empty())
            check(mangledOf[name].count(k.value("mangled", "")) != 0, "kernel " + name + ": mangled name " +
                                                                         k.value("mangled", "") + " is the trace's");
        const auto it = kernelOps.find(name);
        if (it != kernelOps.end())
            checkGpuTime("kernel " + name, k.value("gpu_ns", 0.0), k.value("timed_count", 0ULL), it->second, t, bounds, relTol);
    }
    for (const auto& [name, n] : kernelCount)
        if (!reportKernels.count(name))
            fail("kernel " + name + ": " + std::to_string(n) + " launches in the trace, none in the report");
    {
        const Json h = report.value("host_functions", Json::object());
        check(h.value("count", 0ULL) == hostFuncs && h.value("graph_count", 0ULL) == graphHostFuncs,
              "host functions: report count " + std::to_string(h.value("count", 0ULL)) + " (graph " +
                  std::to_string(h.value("graph_count", 0ULL)) + "), trace " + std::to_string(hostFuncs) + " (graph " +
                  std::to_string(graphHostFuncs) + ")");
        // Host functions are no kernel launches: beside them, the launch count is the trace's kernels run
        // by launch calls.
        uint64_t launched = 0;
        for (const auto& [name, idx] : kernelOps) launched += idx.size();
        if (hostFuncs > graphHostFuncs)
            check(report["launches"].value("count", 0ULL) == launched,
              "launches: report count " + std::to_string(report["launches"].value("count", 0ULL)) + ", trace " +
                  std::to_string(launched) + " kernels run by launch calls (host functions not counted)");
    }

    // ---- graph launches: one per cuGraphLaunch call that replayed nodes.
    std::set<std::tuple<long long, long long, long long>> replays;
    for (const Op& o : t.ops)
        if (o.graph) replays.insert({o.pid, o.tid, o.callStart >= 0 ? o.callStart : o.submit});
    check(report["launches"].value("graph_launches", 0ULL) == replays.size(),
          "graph launches: report " + std::to_string(report["launches"].value("graph_launches", 0ULL)) + ", trace " +
              std::to_string(replays.size()) + " replays");

    check(report["launches"].value("graph_event_nodes", 0ULL) == t.graphEvents,
          "graph event nodes: report " + std::to_string(report["launches"].value("graph_event_nodes", 0ULL)) +
              ", trace " + std::to_string(t.graphEvents) + " event record and wait nodes run");

    // The graph launches' measured GPU time is split over their nodes, all of it (rounding aside: under
    // 1 ns a node), and no more.
    {
        uint64_t split = 0;
        for (const Json& k : report["kernels"]) split += k.value("graph_gpu_ns", 0ULL);
        for (const Json& r : report["transfers"]) split += r.value("graph_gpu_ns", 0ULL);
        split += report.value("host_functions", Json::object()).value("graph_stream_ns", 0ULL);
        const Json& L = report["launches"];
        const uint64_t whole = L.value("graph_gpu_ns", 0ULL), nodes = L.value("graph_nodes", 0ULL);
        const bool allKnown = L.value("graphs_unknown", 0ULL) == 0;
        check(split <= whole + nodes && (!allKnown || split + nodes >= whole),
              "graph nodes' GPU time " + std::to_string(split) + " ns is the graph launches' " + std::to_string(whole) +
                  " ns split over their " + std::to_string(nodes) + " nodes");
    }

    // ---- syncs
    std::map<std::string, std::map<std::string, long long>> waitsByApi;  // api -> reason -> count
    for (const Wait& w : t.waits) waitsByApi[w.api][w.reason] += 1;
    std::map<std::pair<std::string, bool>, std::pair<long long, std::string>> reportSyncs;  // (api, implicit) -> count, kind
    for (const Json& s : report["syncs"])
        reportSyncs[{s.value("api", ""), s.value("implicit", false)}] = {s.value("count", 0LL), s.value("kind", "")};
    static const std::map<std::string, std::string> kindOfReason = {
        {"sync_copy", "copy"}, {"pageable_copy", "copy"}, {"sync_memset", "memset"}, {"free_sync", "free"},
        {"register_sync", "register"}, {"ctx_sync", "context"}, {"stream_sync", "stream"}, {"event_sync", "event"}};
    for (const auto& [api, reasons] : waitsByApi) {
        long long n = 0;
        std::string why;
        for (const auto& [r, c] : reasons) {
            n += c;
            why += (why.empty() ? "" : ",") + r + "=" + std::to_string(c);
        }
        const bool implicit = !isExplicitApi(api);
        auto it = reportSyncs.find({api, implicit});
        const long long g = it == reportSyncs.end() ? 0 : it->second.first;
        check(g == n, std::string("syncs ") + api + (implicit ? " (implicit)" : " (explicit)") + ": report " +
                          std::to_string(g) + ", trace " + std::to_string(n) + " waits (" + why + ")");
        if (it != reportSyncs.end())
            for (const auto& [r, c] : reasons) {
                const auto k = kindOfReason.find(r);
                check(k != kindOfReason.end() && k->second == it->second.second,
                      "syncs " + api + ": report kind " + it->second.second + " fits trace reason " + r);
            }
    }
    for (const auto& [key, v] : reportSyncs) {
        if (waitsByApi.count(key.first)) continue;
        const std::string& kind = v.second;
        check(kind == "query" || kind == "module" || kind == "alloc" || kind == "other",
              "syncs " + key.first + ": " + std::to_string(v.first) + " in the report (kind " + kind +
                  "), no wait in the trace" + (kind == "query" || kind == "module" || kind == "alloc" || kind == "other"
                                                   ? " (this kind does not block in the simulated driver)"
                                                   : ""));
    }

    // ---- busy per (pid, device)
    for (const Json& d : report["devices"]) {
        const long long pid = d.value("pid", 0LL), dev = d.value("id", 0LL);
        long long lo = 0, hi = 0;
        for (const Json& p : report["processes"])
            if (p.value("pid", 0LL) == pid) {
                lo = p.value("active_begin_ns", 0LL);
                hi = p.value("active_end_ns", 0LL);
            }
        // The report's union holds the timed ops only (a graph launch is one timed span around its nodes:
        // each node is matched to the launch call, and the widened nodes cover that span).
        std::vector<Interval> all, truth, upper, shortened;
        size_t ops = 0, untimed = 0;
        for (size_t i = 0; i < t.ops.size(); ++i) {
            const Op& o = t.ops[i];
            if (o.pid != pid || o.dev != dev) continue;
            ++ops;
            all.push_back({o.start, o.end});
            if (!o.timed()) {
                ++untimed;
                continue;
            }
            truth.push_back({o.start, o.end});
            shortened.push_back({o.start + bounds[i].es, o.end});
            upper.push_back({o.start - bounds[i].eb - bounds[i].err, o.end + std::min(bounds[i].ef, LLONG_MAX / 8) + bounds[i].err});
        }
        const double busyAll = double(unionWithin(all, lo, hi));
        const double busyTrue = double(unionWithin(truth, lo, hi));
        const double busyUpper = double(unionWithin(upper, lo, hi));
        const double busyShort = double(unionWithin(shortened, lo, hi));
        const double lower = busyShort - relTol * busyTrue - 2 * kFloatNs * double(ops);
        const double upperB = busyUpper + relTol * busyTrue + 2 * kFloatNs * double(ops);
        const double reported = d.value("busy_ns", 0.0);
        const double active = double(hi - lo);
        std::ostringstream s;
        s.precision(2);
        s << std::fixed << "device " << dev << " pid " << pid << ": busy " << fmtNs(reported) << " ns ("
          << d.value("busy_pct", 0.0) << "%) within [" << fmtNs(lower) << ", " << fmtNs(upperB) << "] (trace "
          << fmtNs(busyTrue) << " ns of the timed ops; all ops " << fmtNs(busyAll) << " ns = "
          << (active > 0 ? 100 * busyAll / active : 0) << "% of the active span; " << untimed << " of " << ops
          << " ops untimed)";
        // An estimated busy time holds placed untimed work: checked against every op's truth below.
        if (d.value("busy_basis", "measured") == "measured") check(reported >= lower && reported <= upperB, s.str());
        if (active > 0)
            check(std::fabs(d.value("busy_pct", 0.0) - 100 * reported / active) < 0.01,
                  "device " + std::to_string(dev) + " pid " + std::to_string(pid) + ": busy_pct = busy_ns / active span");
    }

    // ---- the device timeline against the truth of every op (timeline_checks.h)
    {
        timeline_checks::Truth truth;
        for (const Op& o : t.ops) {
            truth.ops[{o.pid, o.dev}].push_back({o.start, o.end});
            truth.streams[{o.pid, o.dev}][o.stream].push_back({o.start, o.end});
        }
        for (const Wait& w : t.waits)
            truth.waits.push_back({w.api, w.pid, w.dev, w.start, w.end, isExplicitApi(w.api)});
        for (const auto& [thread, calls] : dump.callsByThread)
            for (const ShimCall& c : calls) truth.calls.push_back({c.api, c.pid, c.dev, c.begin, c.end, false});
        timeline_checks::check(report, truth, [](bool cond, const std::string& what) { return check(cond, what); });
    }

    // ---- failed calls: each API row's errors by CUresult against the calls of the app's threads that
    // returned it (a query's CUDA_ERROR_NOT_READY is no error), the codes named (issue 28).
    {
        std::map<std::string, std::map<long long, long long>> failed;  // api -> rc -> calls
        for (const Call& c : t.calls)
            if (c.app && c.rc != 0 && !(c.rc == 600 && c.api.find("Query") != std::string::npos)) ++failed[c.api][c.rc];
        for (const Json& a : report["apis"]) {
            const std::string api = a.value("api", "");
            std::map<long long, long long> reported;
            for (const Json& e : a.value("errors_by_code", Json::array())) {
                reported[e.value("code", 0LL)] += e.value("calls", 0LL);
                check(e.value("name", "").rfind("CUDA_", 0) == 0, "api " + api + ": error code " + std::to_string(e.value("code", 0LL)) +
                                                                      " is named (" + e.value("name", "") + ")");
            }
            long long total = 0;
            for (const auto& [rc, n] : reported) total += n;
            const auto& truth = failed[api];
            if (!total && truth.empty()) continue;
            check(reported == truth && total == a.value("errors", 0LL),
                  "api " + api + ": " + std::to_string(a.value("errors", 0LL)) + " errors by code as the trace's failed calls (" +
                      std::to_string(truth.size()) + " codes)");
        }
    }

    // ---- spin-wait against the driver's calls: on each app thread, runs of queries (cuEventQuery,
    // cuStreamQuery) with no other call between, 16 or more answered CUDA_ERROR_NOT_READY: busy-waits.
    // The finding counts their not-ready polls (at least 80%: a run the thread was often descheduled in
    // may not read as polling back to back), and the host CPU time it says they burnt is no more than
    // the runs spanned (the shim sees each call a little wider: 2% and 20 us a run); no such run, no finding.
    {
        std::map<std::pair<long long, long long>, std::vector<const Call*>> byThread;
        for (const Call& c : t.calls)
            if (c.app) byThread[{c.pid, c.tid}].push_back(&c);
        uint64_t runs = 0, notReady = 0, spanNs = 0;
        for (auto& [key, calls] : byThread) {
            std::sort(calls.begin(), calls.end(), [](const Call* a, const Call* b) { return a->start < b->start; });
            uint64_t n = 0;
            long long first = -1, last = 0;
            auto close = [&] {
                if (first >= 0 && n >= 16) {
                    ++runs;
                    notReady += n;
                    spanNs += uint64_t(last - first);
                }
                n = 0;
                first = -1;
            };
            for (const Call* c : calls) {
                if (c->api.find("Query") == std::string::npos) {
                    close();
                    continue;
                }
                if (first < 0) first = c->start;
                last = c->end;
                if (c->rc == 600) ++n;
                else close();
            }
            close();
        }
        const Json* spin = nullptr;
        for (const Json& f : report["findings"])
            if (f.value("rule", "") == "spin-wait") spin = &f;
        if (!runs) {
            check(!spin, "spin-wait: the trace has no run of 16 not-ready queries in a row, and no finding");
        } else if (spin) {
            const Json& ev = (*spin)["evidence"];
            const double polls = ev.value("polls_not_ready", 0.0), cpu = ev.value("host_cpu_ns", 0.0);
            check(polls <= double(notReady) && polls >= 0.8 * double(notReady),
                  "spin-wait: " + std::to_string(uint64_t(polls)) + " not-ready polls, the trace's busy-waits " +
                      std::to_string(notReady) + " in " + std::to_string(runs) + " runs");
            check(cpu > 0 && cpu <= 1.02 * double(spanNs) + 20000.0 * double(runs) &&
                      double(spin->value("host_cpu_savings_ns", 0ULL)) == cpu,
                  "spin-wait: host CPU " + fmtNs(cpu) + " no more than the trace's busy-waits spanned (" +
                      fmtNs(double(spanNs)) + "), and its saving");
        }
    }

    // ---- the replay (issue 27): replayed unchanged, each process's dependency graph gives back its measured
    // wall within 5% (the predictions rest on it), and its critical path covers the replayed wall.
    if (report.contains("critical_path") && report["critical_path"].is_array())
        for (const Json& cp : report["critical_path"]) {
            if (!cp.is_object() || !cp.contains("parts") || !cp["parts"].is_array()) continue;
            const double err = cp.value("replay_error_pct", 0.0);
            check(std::fabs(err) <= 5.0, "replay of pid " + std::to_string(cp.value("pid", 0)) + ": unchanged within 5% of the wall (" +
                                              std::to_string(err) + "%)");
            uint64_t onPath = 0;
            for (const Json& p : cp["parts"])
                if (p.is_object()) onPath += p.value("ns", uint64_t(0));
            const uint64_t wall = cp.value("wall_ns", uint64_t(0));
            check(!wall || (onPath <= wall + wall / 100 + 1000),
                  "critical path of pid " + std::to_string(cp.value("pid", 0)) + ": its parts (" + std::to_string(onPath) +
                      " ns) within the replayed wall (" + std::to_string(wall) + " ns)");
        }

    // ---- findings
    // A saving that rests on GPU times that are only upper bounds says so: pageable-memcpy's is then at
    // most (the copies' own duration is a bound) against a measured pinned bandwidth, sync-memcpy's at
    // least (the wait beyond the bound).
    for (const Json& f : report["findings"]) {
        const std::string rule = f.value("rule", ""), bound = f.value("estimated_savings_bound", "");
        const bool bounded = f.contains("evidence") && f["evidence"].value("upper_bound_copies", 0.0) > 0;
        // implicit-sync's is always at most: the calls' own host time is all that removing them can save.
        // sync-memcpy's wait on a busy GPU capped by the host's work between the copies (an upper bound on
        // that part) is no lower bound any more: an estimate.
        const bool capped = f.contains("evidence") && f["evidence"].value("busy_wait_capped", 0.0) > 0;
        // pageable-memcpy's rests on an assumed pinned bandwidth where no pinned copy was measured: an
        // estimate (the true ratio may be larger than the assumed one).
        const bool assumed = f.contains("evidence") && f["evidence"].value("pinned_bandwidth_assumed", 0.0) > 0;
        // alloc-in-loop's (the calls' host time) is at most by construction too.
        const bool atMost = rule == "implicit-sync" || rule == "alloc-in-loop";
        const std::string want = atMost ? "at_most"
                                 : !bounded              ? "estimate"
                                 : rule == "pageable-memcpy" ? (assumed ? "estimate" : "at_most")
                                 : rule == "sync-memcpy"     ? (capped ? "estimate" : "at_least")
                                                             : "estimate";
        check(bound == want, "finding " + rule + ": estimated_savings_bound is " + bound + ", expected " + want);
    }
    if (!expectPath.empty()) {
        std::ifstream in(expectPath);
        if (!in) usage("cannot read " + expectPath);
        std::map<std::string, const Json*> findings;
        for (const Json& f : report["findings"]) findings[f.value("rule", "")] = &f;
        std::map<long long, const Json*> sites;
        for (const Json& c : report["callsites"]) sites[c.value("id", -1LL)] = &c;
        const std::string srcDir = appSrc.empty() ? "" : fs::weakly_canonical(appSrc).string() + "/";
        std::string line;
        while (std::getline(in, line)) {
            if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
            std::istringstream ls(line);
            std::string verb;
            if (!(ls >> verb)) continue;
            if (verb == "absent") {
                std::string rule;
                while (ls >> rule)
                    check(!findings.count(rule), "finding " + rule + " is absent" +
                                                     (findings.count(rule) ? ": " + findings[rule]->value("message", "") : ""));
            } else if (verb == "driver-api-names") {
                // A program that calls the driver API itself: its calls are named as the driver's, never as
                // the runtime calls that would reach them (issue 28: cuMemAlloc read "cudaMalloc").
                for (const Json& a : report["apis"])
                    check(a.value("runtime", "x").empty() && a.value("display", "") == a.value("api", ""),
                          "api " + a.value("api", "") + " is named as the driver's (display '" + a.value("display", "") +
                              "', runtime '" + a.value("runtime", "") + "')");
            } else if (verb == "library-made" || verb == "library-made-if-present") {
                // The finding's calls were made inside library calls (issue 28): it is information with no
                // saving, every call site names the library call, and the text says the calls are the
                // library's. -if-present: only when the rule fired (its threshold may not be reached).
                std::string rule;
                while (ls >> rule) {
                    if (!findings.count(rule)) {
                        check(verb != "library-made", "finding " + rule + " is present");
                        continue;
                    }
                    const Json& f = *findings[rule];
                    check(f.value("severity", "") == "info" && f.value("estimated_savings_ns", 1.0) == 0,
                          "finding " + rule + " on calls a library made is information without a saving (" +
                              f.value("severity", "") + ", " + std::to_string(f.value("estimated_savings_ns", 0.0)) + " ns)");
                    check(f.value("message", "").find("not by your code") != std::string::npos,
                          "finding " + rule + " says the calls are the library's: " + f.value("message", ""));
                    for (const Json& id : f["callsites"]) {
                        auto it = sites.find(id.get<long long>());
                        check(it != sites.end() && !it->second->value("library_call", "").empty(),
                              "finding " + rule + ": call site " + id.dump() + " names the library call it was made in");
                    }
                }
            } else if (verb == "library-own-if-present") {
                // The finding's calls were all made by the library by itself, on its own threads or in its
                // exit handlers (issue 28: NCCL's init and teardown read as the user's hot path): when it
                // fired, it says so, claims nothing, and every call site is marked library_own.
                std::string rule;
                while (ls >> rule) {
                    if (!findings.count(rule)) continue;
                    const Json& f = *findings[rule];
                    check(f.value("severity", "") == "info" && f.value("estimated_savings_ns", 1.0) == 0 &&
                              f.value("message", "").find("by the library by itself") != std::string::npos,
                          "finding " + rule + " says its calls are the library's own setup: " + f.value("message", ""));
                    for (const Json& id : f["callsites"]) {
                        auto it = sites.find(id.get<long long>());
                        check(it != sites.end() && !it->second->value("library_own", "").empty(),
                              "finding " + rule + ": call site " + id.dump() + " is marked as the library's own thread or exit handler");
                    }
                }
            } else if (verb == "present") {
                std::string rule, funcs;
                ls >> rule >> funcs;
                std::set<std::string> allowed;
                for (size_t p = 0, q; p <= funcs.size(); p = q + 1) {
                    q = funcs.find('|', p);
                    if (q == std::string::npos) q = funcs.size();
                    if (q > p) allowed.insert(funcs.substr(p, q - p));
                }
                if (!check(findings.count(rule) != 0, "finding " + rule + " is present")) continue;
                const Json& f = *findings[rule];
                check(!f["callsites"].empty(), "finding " + rule + " has call sites");
                for (const Json& id : f["callsites"]) {
                    auto it = sites.find(id.get<long long>());
                    if (it == sites.end()) {
                        fail("finding " + rule + ": call site " + id.dump() + " is not in callsites");
                        continue;
                    }
                    const Json& c = *it->second;
                    const size_t sf = c.value("site_frame", size_t(0));
                    std::string fn, file;
                    long long lineNo = 0;
                    if (sf < c["frames"].size()) {
                        fn = c["frames"][sf].value("function", "");
                        file = c["frames"][sf].value("file", "");
                        lineNo = c["frames"][sf].value("line", 0LL);
                    }
                    std::string base = fn.substr(0, fn.find('('));
                    if (auto sp = base.rfind(' '); sp != std::string::npos) base = base.substr(sp + 1);
                    const bool fileOk = !file.empty() && (srcDir.empty() || fs::weakly_canonical(file).string().rfind(srcDir, 0) == 0);
                    check(allowed.count(base) && fileOk && lineNo > 0,
                          "finding " + rule + ": call site " + id.dump() + " \"" + c.value("label", "") + "\" is " + funcs +
                              " in the app's source (site frame: function '" + fn + "' file '" + file + "' line " +
                              std::to_string(lineNo) + ")");
                }
            } else if (verb == "library-call") {
                // A call site in the app's source names this library call below it (issue 16):
                // "main (gemm.cu:41) -> cublasSgemm (libcublas.so.13)".
                std::string name;
                while (ls >> name) {
                    bool found = false;
                    for (const auto& [id, c] : sites) {
                        const std::string label = c->value("label", "");
                        const size_t sf = c->value("site_frame", size_t(0));
                        if (sf >= (*c)["frames"].size()) continue;
                        const Json& f = (*c)["frames"][sf];
                        const bool inApp = f.value("app", false) && !f.value("file", "").empty() && f.value("line", 0) > 0;
                        found |= inApp && label.find("\u2192 " + name + " (") != std::string::npos;
                    }
                    check(found, "a call site in the app's source names the library call " + name);
                }
            } else if (verb == "library-call-lines") {
                // At least N lines of the app's source call this library call, each its own site (issue 28:
                // four CUB sorts shared one label, the header code inlined into main counted as main's).
                std::string name;
                size_t want = 0;
                ls >> name >> want;
                std::set<std::pair<std::string, long long>> lines;
                for (const auto& [id, c] : sites) {
                    const size_t sf = c->value("site_frame", size_t(0));
                    if (sf >= (*c)["frames"].size()) continue;
                    const Json& f = (*c)["frames"][sf];
                    if (f.value("app", false) && f.value("line", 0LL) > 0 &&
                        c->value("label", "").find("\u2192 " + name + " (") != std::string::npos)
                        lines.insert({f.value("file", ""), f.value("line", 0LL)});
                }
                check(lines.size() >= want, "call sites on " + std::to_string(lines.size()) + " lines of the app's source name " +
                                                name + " (expected at least " + std::to_string(want) + ")");
            } else if (verb == "uncut") {
                // No call site's stack ends inside a library at the depth budget (issue 28: cuSOLVER ->
                // cuBLAS -> cuBLASLt is deeper than 24 frames; the shim retakes such a stack deeper).
                for (const auto& [id, c] : sites) {
                    const std::string label = c->value("label", "");
                    check(label.find("[stack cut at ") == std::string::npos,
                          "call site " + std::to_string(id) + " reaches the app's frames: \"" + label + "\"");
                }
            } else {
                usage(expectPath + ": unknown line '" + line + "'");
            }
        }
    }

    std::cout << (g_failures ? "FAILED: " : "PASSED: ") << g_failures << " of " << g_checks << " checks failed\n";
    return g_failures ? 1 : 0;
}
