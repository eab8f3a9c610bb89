// collector/analyze.cpp: the entry point of the analysis: indexes each process once (calls in time
// order, GPU spans by call, busy intervals, call sites), then runs the sections, overview first.
#include "collector/analyze_internal.h"

#include "collector/api_names.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace gpuspy::collect {

DurationStats durationStats(std::vector<uint64_t> v)
{
    DurationStats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.count = v.size();
    for (uint64_t x : v) s.total += x;
    s.min = v.front();
    s.max = v.back();
    const size_t n = v.size();
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    const size_t rank = size_t(std::ceil(0.99 * double(n)));  // nearest rank, 1-based
    s.p99 = v[std::min(n, std::max<size_t>(rank, 1)) - 1];
    s.avg = double(s.total) / double(n);
    return s;
}

namespace detail {

std::string demangle(const std::string& mangled)
{
    if (mangled.rfind("_Z", 0) != 0) return mangled;
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : mangled;
}

std::string formatNs(uint64_t ns)
{
    char b[32];
    const double v = double(ns);
    if (ns < 1000) std::snprintf(b, sizeof b, "%llu ns", static_cast<unsigned long long>(ns));
    else if (ns < 1000000) std::snprintf(b, sizeof b, "%.*f us", v < 1e4 ? 2 : v < 1e5 ? 1 : 0, v / 1e3);
    else if (ns < 1000000000) std::snprintf(b, sizeof b, "%.*f ms", v < 1e7 ? 2 : v < 1e8 ? 1 : 0, v / 1e6);
    else std::snprintf(b, sizeof b, "%.*f s", v < 1e10 ? 2 : v < 1e11 ? 1 : 0, v / 1e9);
    return b;
}

std::string formatBytes(uint64_t n)
{
    char b[32];
    const double v = double(n);
    if (n < 1024) std::snprintf(b, sizeof b, "%llu B", static_cast<unsigned long long>(n));
    else if (n < (1ull << 20)) std::snprintf(b, sizeof b, "%.1f KiB", v / 1024);
    else if (n < (1ull << 30)) std::snprintf(b, sizeof b, "%.1f MiB", v / (1 << 20));
    else std::snprintf(b, sizeof b, "%.2f GiB", v / (1ull << 30));
    return b;
}

std::vector<uint32_t> topSites(const std::map<int, uint64_t>& nsBySite, size_t top)
{
    std::vector<std::pair<int, uint64_t>> v;
    for (const auto& [site, ns] : nsBySite)
        if (site != kNoSite) v.push_back({site, ns});
    // Site ids are already ranked by total host time: break ties by id for a stable order.
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
    std::vector<uint32_t> out;
    for (size_t i = 0; i < v.size() && i < top; ++i) out.push_back(uint32_t(v[i].first));
    return out;
}

std::string ProcView::apiName(const wire::CallBody& c) const
{
    auto it = proc->apis.find(c.apiId);
    return it != proc->apis.end() ? it->second.name : "api#" + std::to_string(c.apiId);
}

uint64_t ProcView::gpuNs(const wire::CallBody& c) const
{
    auto it = spans.find(c.seq);
    if (it == spans.end()) return 0;
    uint64_t sum = 0;
    for (const wire::GpuSpanBody* s : it->second) sum += s->endNs > s->beginNs ? s->endNs - s->beginNs : 0;
    return sum;
}

uint64_t ProcView::busyDuring(const wire::CallBody& c) const
{
    if (c.device >= 0) {
        auto it = busy.find(c.device);
        return it == busy.end() ? 0 : it->second.overlap(c.beginNs, c.endNs);
    }
    return busyAll.overlap(c.beginNs, c.endNs);
}

std::string ProcView::kernelName(uint32_t kernelId, std::string* mangled) const
{
    auto it = proc->kernels.find(kernelId);
    if (it == proc->kernels.end()) {
        if (mangled) mangled->clear();
        return kernelId == 0 ? "[unknown kernel]" : "[kernel #" + std::to_string(kernelId) + "]";
    }
    if (mangled) *mangled = it->second;
    return demangle(it->second);
}

bool ProcView::gapKnownIdle(int device, const Interval& gap) const
{
    auto u = untimedSubmits.find(device);
    if (u == untimedSubmits.end() || u->second.empty()) return true;
    uint64_t since = 0;
    if (auto e = submitOfEnd.find(device); e != submitOfEnd.end())
        if (auto it = e->second.find(gap.begin); it != e->second.end()) since = it->second;
    auto first = std::upper_bound(u->second.begin(), u->second.end(), since);
    return first == u->second.end() || *first >= gap.end;
}

bool isQuery(std::string_view abiName)
{
    const std::string_view b = driverBaseName(abiName);
    return b == "cuStreamQuery" || b == "cuEventQuery";
}

bool isExplicitSync(std::string_view abiName)
{
    const std::string_view b = driverBaseName(abiName);
    return b == "cuCtxSynchronize" || b == "cuStreamSynchronize" || b == "cuEventSynchronize" || isQuery(abiName);
}

namespace {

std::string baseNameOf(const std::string& path)
{
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string functionBase(const std::string& f)
{
    const size_t paren = f.find('(');
    std::string s = paren == std::string::npos ? f : f.substr(0, paren);
    // "void foo<int>" -> "foo<int>": a demangled template function carries its return type.
    const size_t space = s.rfind(' ');
    return space == std::string::npos ? s : s.substr(space + 1);
}

bool startsWith(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// Frames of CUDA's own libraries and of gpuspy: the call site is the first frame outside them, so the
// report names the user's function, not cudart's internals or a <<<>>> launch stub.
bool isLibraryFrame(const ReportFrame& f, const ProcView& pv)
{
    if (!f.module.empty()) {
        const std::string m = baseNameOf(f.module);
        for (std::string_view p : {"libcuda", "libgpuspy", "libsimcuda", "libcublas", "libcudnn", "libcufft", "libcurand",
                                   "libcusparse", "libcusolver", "libnccl", "libnvrtc", "libnvJitLink", "libnvToolsExt",
                                   "libnvtx"})
            if (startsWith(m, p)) return true;
    }
    const std::string& fn = f.function;
    if (!fn.empty()) {
        // libcudart_static_<hash>: the static runtime's internal functions, as its symbol table names them.
        for (std::string_view p : {"cudart::", "__cudart", "__device_stub_", "__cuda", "gpuspy::", "libcudart_static_"})
            if (startsWith(fn, p)) return true;
        std::string base = functionBase(fn);
        // A statically linked runtime's entry points (cudaMemcpy, cudaLaunchKernel<char>) have no line
        // info; a user's own cudaCheck() compiled with -g does.
        if (base.size() > 4 && startsWith(base, "cuda") && std::isupper(static_cast<unsigned char>(base[4])) &&
            (f.file.empty() || f.file.find("/cuda_runtime") != std::string::npos))
            return true;
        if (pv.kernelFunctions.count(base)) return true;  // the host stub nvcc names after the kernel
    }
    for (std::string_view p : {".cudafe1.stub.c", "/cuda_runtime.h", "/cuda_runtime_api.h", "/crt/host_runtime.h"})
        if (f.file.find(p) != std::string::npos) return true;
    return false;
}

bool isCoreCudaFrame(const ReportFrame& f)
{
    const std::string m = baseNameOf(f.module);
    return startsWith(m, "libcuda") || startsWith(m, "libgpuspy") || startsWith(m, "libsimcuda");
}

std::string siteCategory(const wire::CallBody& c)
{
    switch (c.category) {
    case wire::Category::Transfer: return "transfer";
    case wire::Category::Launch:
    case wire::Category::Graph: return "launch";
    case wire::Category::Alloc: return "alloc";
    case wire::Category::Sync:
    case wire::Category::Module: return "sync";
    case wire::Category::Other: return hasFlag(c, wire::kCallImplicitSync) ? "sync" : "";
    }
    return "";
}

struct ResolvedStack {
    std::vector<ReportFrame> frames;
    size_t siteFrame = 0;
    std::string label;
};

ResolvedStack resolveStack(const ProcView& pv, uint32_t stackId)
{
    ResolvedStack r;
    const Process& p = *pv.proc;
    auto st = p.stacks.find(stackId);
    if (stackId == 0 || st == p.stacks.end() || st->second.empty()) {
        r.label = "(no stack)";
        return r;
    }
    for (uint64_t addr : st->second) {
        auto sym = p.symbols.find(addr);
        if (sym != p.symbols.end() && !sym->second.empty()) {
            for (const Frame& fr : sym->second)
                r.frames.push_back({fr.function, fr.file, fr.line, fr.module, fr.offset, fr.address ? fr.address : addr, fr.inlined, true});
            continue;
        }
        ReportFrame f;
        f.address = addr;
        f.offset = addr;
        for (const ModuleInfo& m : p.modules)
            if (addr >= m.start && addr < m.end) {
                f.module = m.path;
                f.offset = addr - m.bias;
                break;
            }
        r.frames.push_back(f);
    }
    size_t site = r.frames.size();
    for (size_t i = 0; i < r.frames.size(); ++i) {
        r.frames[i].app = !isLibraryFrame(r.frames[i], pv);
        if (r.frames[i].app && site == r.frames.size()) site = i;
    }
    // No app frame (a truncated stack, or everything inside a library): the first frame outside the
    // driver, runtime and gpuspy, else the innermost.
    if (site == r.frames.size())
        for (size_t i = 0; i < r.frames.size() && site == r.frames.size(); ++i)
            if (!isCoreCudaFrame(r.frames[i])) site = i;
    if (site == r.frames.size()) site = 0;
    r.siteFrame = site;
    const ReportFrame& f = r.frames[site];
    char off[32];
    std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
    if (!f.function.empty()) {
        r.label = f.function;
        if (!f.file.empty()) r.label += " (" + baseNameOf(f.file) + (f.line ? ":" + std::to_string(f.line) : "") + ")";
    } else if (!f.module.empty()) {
        r.label = baseNameOf(f.module) + off;
    } else {
        std::snprintf(off, sizeof off, "0x%llx", static_cast<unsigned long long>(f.address));
        r.label = off;
    }
    return r;
}

void indexProcess(Context& cx, ProcView& pv, std::map<std::string, int>& siteIds)
{
    const Process& p = *pv.proc;
    pv.calls.reserve(p.calls.size());
    for (const wire::CallBody& c : p.calls) pv.calls.push_back(&c);
    std::stable_sort(pv.calls.begin(), pv.calls.end(), [](auto* a, auto* b) { return a->beginNs < b->beginNs; });
    for (const wire::GpuSpanBody& s : p.spans) {
        if (s.endNs < s.beginNs) continue;
        pv.spans[s.seq].push_back(&s);  // a zero-length span still says the call was timed
        if (s.endNs == s.beginNs) continue;
        pv.busy[s.device].add(s.beginNs, s.endNs);
        pv.busyAll.add(s.beginNs, s.endNs);
    }
    for (const auto& [id, name] : p.kernels) pv.kernelFunctions.insert(functionBase(demangle(name)));
    for (const wire::CallBody* c : pv.calls) {
        if (!hasFlag(*c, wire::kCallDeviceWork) || hasFlag(*c, wire::kCallCapturing) || !succeeded(*c)) continue;
        auto it = pv.spans.find(c->seq);
        if (it == pv.spans.end()) {
            pv.untimedSubmits[c->device].push_back(c->beginNs);  // calls are in time order: stays sorted
            continue;
        }
        for (const wire::GpuSpanBody* s : it->second) {
            auto [pos, fresh] = pv.submitOfEnd[s->device].emplace(s->endNs, c->beginNs);
            if (!fresh) pos->second = std::min(pos->second, c->beginNs);
        }
    }
    bool any = false;
    for (const wire::CallBody* c : pv.calls) {
        pv.hostInCuda.add(c->beginNs, c->endNs);
        if (!any) pv.activeBegin = c->beginNs;
        pv.activeBegin = std::min(pv.activeBegin, c->beginNs);
        pv.activeEnd = std::max(pv.activeEnd, c->endNs);
        any = true;
    }
    std::unordered_map<uint32_t, ResolvedStack> stacks;
    pv.site.assign(pv.calls.size(), kNoSite);
    for (size_t i = 0; i < pv.calls.size(); ++i) {
        const wire::CallBody& c = *pv.calls[i];
        const std::string cat = siteCategory(c);
        if (cat.empty()) continue;
        auto it = stacks.find(c.stackId);
        if (it == stacks.end()) it = stacks.emplace(c.stackId, resolveStack(pv, c.stackId)).first;
        const ResolvedStack& rs = it->second;
        const std::string key = cat + '\n' + rs.label;
        auto [pos, fresh] = siteIds.emplace(key, int(cx.sites.size()));
        if (fresh) {
            CallSite s;
            s.category = cat;
            s.label = rs.label;
            s.frames = rs.frames;
            s.siteFrame = rs.siteFrame;
            cx.sites.push_back(std::move(s));
        }
        CallSite& s = cx.sites[size_t(pos->second)];
        s.count += 1;
        s.ns += hostNs(c);
        const std::string api = pv.apiName(c);
        if (std::find(s.apis.begin(), s.apis.end(), api) == s.apis.end()) s.apis.push_back(api);
        pv.site[i] = pos->second;
    }
}

// Ranks sites by host time so that ids read as a ranking, and rewrites every reference.
void rankSites(Context& cx)
{
    std::vector<int> order(cx.sites.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cx.sites[size_t(a)].ns > cx.sites[size_t(b)].ns; });
    std::vector<int> newId(cx.sites.size());
    std::vector<CallSite> ranked;
    for (size_t r = 0; r < order.size(); ++r) {
        newId[size_t(order[r])] = int(r);
        ranked.push_back(std::move(cx.sites[size_t(order[r])]));
        ranked.back().id = uint32_t(r);
    }
    cx.sites = std::move(ranked);
    for (ProcView& pv : cx.procs)
        for (int& s : pv.site)
            if (s != kNoSite) s = newId[size_t(s)];
}

}  // namespace

void analyzeOverview(Context& cx, Report& r)
{
    for (const ProcView& pv : cx.procs) {
        const Process& p = *pv.proc;
        ProcessSummary s;
        s.pid = p.pid;
        s.ppid = p.ppid;
        s.command = p.command;
        s.ended = p.ended;
        s.streamError = p.streamError;
        s.calls = p.calls.size();
        s.threads = p.threads.size();
        s.activeBeginNs = pv.activeBegin;
        s.activeEndNs = pv.activeEnd;
        // The shim starts inside the first call it sees, so that call may begin before startNs.
        uint64_t start = p.startNs && !pv.calls.empty() ? std::min(p.startNs, pv.activeBegin) : p.startNs ? p.startNs : pv.activeBegin;
        uint64_t end = std::max({p.lastNs, pv.activeEnd, p.ended ? p.end.endNs : 0});
        for (const wire::GpuSpanBody& sp : p.spans) end = std::max(end, sp.endNs);
        s.wallNs = end > start ? end - start : 0;
        for (const wire::CallBody* c : pv.calls) {
            s.cudaApiNs += hostNs(*c);
            if (hasFlag(*c, wire::kCallDeviceWork) && !hasFlag(*c, wire::kCallCapturing) && succeeded(*c)) {
                ++s.deviceOps;
                if (pv.timed(*c)) ++s.timedOps;
                else if (hasFlag(*c, wire::kCallGpuSampledOut)) ++s.sampledOutOps;
            }
        }
        s.cudaApiPct = s.wallNs ? 100.0 * double(s.cudaApiNs) / double(s.wallNs) : 0;
        uint64_t threadDropped = 0;
        std::unordered_set<uint32_t> tids;
        for (const wire::ThreadStatsBody& t : p.threadStats) {
            s.gpuspyOverheadNs += t.overheadNs;
            threadDropped += t.dropped;
            tids.insert(t.tid);
        }
        for (const wire::CallBody* c : pv.calls) tids.insert(c->tid);
        s.threads = std::max<uint64_t>(s.threads, tids.size());
        s.droppedRecords = std::max(p.ended ? p.end.recordsDropped : 0, threadDropped);
        s.recordsMade = p.ended ? p.end.recordsMade : 0;
        r.processes.push_back(s);

        // Devices: every device the process named or ran work on.
        std::map<int, std::string> devs = p.devices;
        for (const auto& [d, set] : pv.busy) devs.emplace(d, "");
        for (const wire::CallBody* c : pv.calls)
            if (c->device >= 0 && hasFlag(*c, wire::kCallDeviceWork)) devs.emplace(c->device, "");
        for (const auto& [d, name] : devs) {
            DeviceSummary ds;
            ds.pid = p.pid;
            ds.id = d;
            ds.name = name;
            ds.activeNs = pv.activeEnd - pv.activeBegin;
            auto it = pv.busy.find(d);
            if (it != pv.busy.end()) {
                const IntervalSet& busy = it->second;
                ds.busyNs = busy.overlap(pv.activeBegin, pv.activeEnd);
                for (const Interval& g : busy.gaps()) {
                    ds.idleGapNs += g.length();
                    ds.largestGapNs = std::max(ds.largestGapNs, g.length());
                    ++ds.gaps;
                    // Only where the GPU is known to be idle: sampled-out work may have run in the gap.
                    if (!pv.gapKnownIdle(d, g)) continue;
                    const uint64_t starved = g.length() - pv.hostInCuda.overlap(g.begin, g.end);
                    ds.starvedNs += starved;
                    ds.largestStarvedNs = std::max(ds.largestStarvedNs, starved);
                }
            }
            ds.busyPct = ds.activeNs ? 100.0 * double(ds.busyNs) / double(ds.activeNs) : 0;
            for (const wire::CallBody* c : pv.calls) {
                if (c->device != d || !hasFlag(*c, wire::kCallDeviceWork) || hasFlag(*c, wire::kCallCapturing) || !succeeded(*c))
                    continue;
                ++ds.ops;
                if (pv.timed(*c)) ++ds.timedOps;
                else if (hasFlag(*c, wire::kCallGpuSampledOut)) ++ds.sampledOutOps;
            }
            r.devices.push_back(ds);
        }
    }
    // Span lengths by kind: needs the call of each span.
    for (DeviceSummary& ds : r.devices)
        for (const ProcView& pv : cx.procs) {
            if (pv.proc->pid != ds.pid) continue;
            for (const wire::CallBody* c : pv.calls) {
                auto it = pv.spans.find(c->seq);
                if (it == pv.spans.end()) continue;
                for (const wire::GpuSpanBody* sp : it->second) {
                    if (sp->device != ds.id) continue;
                    const uint64_t len = sp->endNs - sp->beginNs;
                    if (c->category == wire::Category::Launch) ds.kernelNs += len;
                    else if (c->category == wire::Category::Transfer) ds.transferNs += len;
                    else ds.otherNs += len;
                }
            }
        }
    uint64_t made = 0, dropped = 0, ops = 0, sampled = 0;
    for (const ProcessSummary& s : r.processes) {
        made += s.recordsMade;
        dropped += s.droppedRecords;
        ops += s.deviceOps;
        sampled += s.sampledOutOps;
    }
    if (sampled)
        r.notes.push_back(std::to_string(sampled) + " of " + std::to_string(ops) +
                          " device operations were not timed (adaptive sampling): GPU busy time and idle gaps are "
                          "measured on the timed ones only, so busy % is a lower bound; kernel GPU totals are "
                          "scaled from the timed launches");
    if (dropped)
        r.notes.push_back(std::to_string(dropped) + (made ? " of " + std::to_string(made) : std::string()) +
                          " records were dropped: counts and times are lower bounds");
}

void analyzeApis(Context& cx, Report& r)
{
    std::map<std::string, std::vector<uint64_t>> durations;
    std::map<std::string, std::pair<std::string, uint64_t>> info;  // api -> category, errors
    for (const ProcView& pv : cx.procs)
        for (const wire::CallBody* c : pv.calls) {
            const std::string api = pv.apiName(*c);
            durations[api].push_back(hostNs(*c));
            auto& [cat, errors] = info[api];
            cat = wire::categoryName(c->category);
            // A poll that found the work unfinished is not an error.
            if (!succeeded(*c) && !(isQuery(api) && c->result == kCudaErrorNotReady)) ++errors;
        }
    for (auto& [api, v] : durations) {
        ApiRow row;
        row.api = api;
        row.display = displayName(api);
        row.category = info[api].first;
        row.errors = info[api].second;
        row.host = durationStats(std::move(v));
        r.apis.push_back(std::move(row));
    }
    std::stable_sort(r.apis.begin(), r.apis.end(), [](const ApiRow& a, const ApiRow& b) { return a.host.total > b.host.total; });
}

}  // namespace detail

Report analyze(const Capture& capture, const ReportOptions& options)
{
    using namespace detail;
    Report r;
    r.options = options;
    r.badStreams = capture.badStreams;
    Context cx;
    cx.options = &options;
    for (const Process& p : capture.processes)
        if (options.pid < 0 || p.pid == uint32_t(options.pid)) {
            ProcView pv;
            pv.proc = &p;
            cx.procs.push_back(std::move(pv));
        }
    std::map<std::string, int> siteIds;
    for (ProcView& pv : cx.procs) indexProcess(cx, pv, siteIds);
    rankSites(cx);

    analyzeOverview(cx, r);
    uint64_t first = UINT64_MAX, last = 0;
    for (const ProcessSummary& s : r.processes) {
        const Process* p = nullptr;
        for (const ProcView& pv : cx.procs)
            if (pv.proc->pid == s.pid) p = pv.proc;
        const uint64_t start = p && p->startNs ? std::min(p->startNs, s.activeBeginNs ? s.activeBeginNs : p->startNs) : s.activeBeginNs;
        first = std::min(first, start);
        last = std::max(last, start + s.wallNs);
    }
    cx.wallNs = last > first ? last - first : 0;
    if (options.pid >= 0 && cx.procs.empty())
        r.notes.push_back("no process " + std::to_string(options.pid) + " in the capture");
    if (capture.badStreams)
        r.notes.push_back(std::to_string(capture.badStreams) + " malformed stream(s): their valid records are included");

    analyzeApis(cx, r);
    analyzeTransfers(cx, r);
    analyzeLaunches(cx, r);
    analyzeSyncs(cx, r);
    analyzeNvtx(cx, r);
    r.callsites = cx.sites;
    analyzeFindings(cx, r);
    return r;
}

}  // namespace gpuspy::collect
