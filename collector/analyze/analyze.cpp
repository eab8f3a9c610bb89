// collector/analyze/analyze.cpp: the entry points of the analysis (StreamAnalyzer for records as they stream
// past, analyze() for a capture in memory, both through the same window and sections), call sites,
// the overview and the API summary.
#include "collector/analyze/internal.h"

#include "collector/model/api_names.h"
#include "collector/model/cuda_results.h"
#include "collector/model/library_code.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
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

std::string findingSeverity(uint64_t savingsNs, uint64_t wallNs)
{
    const double share = wallNs ? double(savingsNs) / double(wallNs) : 0;
    return share >= 0.10 ? "high" : share >= 0.02 ? "medium" : "low";
}

void rankFindings(std::vector<Finding>& findings)
{
    // By wall time saved; among equal ones (none, mostly), by severity (a leak or a failed allocation
    // before a symptom), by host CPU time freed (spin-wait), then by the time involved.
    auto rank = [](const std::string& s) { return s == "high" ? 0 : s == "medium" ? 1 : s == "low" ? 2 : 3; };
    std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& c) {
        if (a.estimatedSavingsNs != c.estimatedSavingsNs) return a.estimatedSavingsNs > c.estimatedSavingsNs;
        if (rank(a.severity) != rank(c.severity)) return rank(a.severity) < rank(c.severity);
        if (a.hostCpuSavingsNs != c.hostCpuSavingsNs) return a.hostCpuSavingsNs > c.hostCpuSavingsNs;
        return a.ns > c.ns;
    });
}

void markOverlappingFindings(std::vector<Finding>& findings)
{
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> stacks;
    for (Finding& f : findings) {
        f.overlaps.clear();
        stacks.push_back(f.stacks);
        std::sort(stacks.back().begin(), stacks.back().end());
    }
    for (size_t i = 0; i < findings.size(); ++i)
        for (size_t k = i + 1; k < findings.size(); ++k) {
            const auto& a = stacks[i];
            const auto& c = stacks[k];
            std::vector<std::pair<uint32_t, uint32_t>> shared;
            std::set_intersection(a.begin(), a.end(), c.begin(), c.end(), std::back_inserter(shared));
            if (shared.empty() || findings[i].rule == findings[k].rule) continue;
            findings[i].overlaps.push_back(findings[k].rule);
            findings[k].overlaps.push_back(findings[i].rule);
        }
}

uint64_t combinedSavingsNs(const std::vector<Finding>& findings)
{
    // Groups: the findings reachable from each other through `overlaps`; each counts once, by its largest.
    std::map<std::string, size_t> byRule;
    for (size_t i = 0; i < findings.size(); ++i) byRule.emplace(findings[i].rule, i);
    std::vector<bool> seen(findings.size());
    uint64_t total = 0;
    for (size_t i = 0; i < findings.size(); ++i) {
        if (seen[i]) continue;
        uint64_t largest = 0;
        std::vector<size_t> todo{i};
        seen[i] = true;
        while (!todo.empty()) {
            const Finding& f = findings[todo.back()];
            todo.pop_back();
            largest = std::max(largest, f.estimatedSavingsNs);
            for (const std::string& rule : f.overlaps) {
                auto it = byRule.find(rule);
                if (it != byRule.end() && !seen[it->second]) seen[it->second] = true, todo.push_back(it->second);
            }
        }
        total += largest;
    }
    return total;
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
    // Ties round up, as the page's toFixed does (printf rounds 6.25 to 6.2, the page to 6.3).
    auto up = [](double v, double scale) { return std::floor(v * scale + 0.5) / scale; };
    char b[32];
    const double v = double(n);
    if (n < 1024) std::snprintf(b, sizeof b, "%llu B", static_cast<unsigned long long>(n));
    else if (n < (1ull << 20)) std::snprintf(b, sizeof b, "%.1f KiB", up(v / 1024, 10));
    else if (n < (1ull << 30)) std::snprintf(b, sizeof b, "%.1f MiB", up(v / (1 << 20), 10));
    else std::snprintf(b, sizeof b, "%.2f GiB", up(v / (1ull << 30), 100));
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

bool startsWith(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// Frames of CUDA's own libraries and of gpuspy: the call site is the first frame outside them, so the
// report names the user's function, not cudart's internals or a <<<>>> launch stub.
bool isLibraryFrame(const ReportFrame& f, const ProcView& pv)
{
    return collect::isLibraryFrame(f.module, f.function, f.file, [&](const std::string& base) { return pv.kernelFunctions.count(base) > 0; });
}

bool isCoreCudaFrame(const ReportFrame& f)
{
    const std::string m = baseNameOf(f.module);
    return startsWith(m, "libcuda") || startsWith(m, "libgpuspy") || startsWith(m, "libsimcuda");
}

SiteCategory siteCategory(const wire::CallBody& c)
{
    switch (c.category) {
    case wire::Category::Transfer: return SiteCategory::Transfer;
    case wire::Category::Launch:
    case wire::Category::Graph: return SiteCategory::Launch;
    case wire::Category::Alloc: return SiteCategory::Alloc;
    case wire::Category::Sync:
    case wire::Category::Module: return SiteCategory::Sync;
    case wire::Category::Other: return hasFlag(c, wire::kCallImplicitSync) ? SiteCategory::Sync : SiteCategory::None;
    case wire::Category::Query: return SiteCategory::Setup;  // recorded only when it failed: where it failed
    }
    return SiteCategory::None;
}

const char* siteCategoryName(SiteCategory c)
{
    switch (c) {
    case SiteCategory::Transfer: return "transfer";
    case SiteCategory::Launch: return "launch";
    case SiteCategory::Alloc: return "alloc";
    case SiteCategory::Sync: return "sync";
    case SiteCategory::Setup: return "setup";
    case SiteCategory::None: break;
    }
    return "";
}

struct ResolvedStack {
    std::vector<ReportFrame> frames;
    size_t siteFrame = 0;
    std::string label;
    std::string libraryCall;  // see CallSite::libraryCall
    std::string libraryOwn;   // see CallSite::libraryOwn
    bool viaRuntime = false;  // cudart's frames between the site and the driver: the program called the runtime
};

// A frame of cudart, shared (libcudart.so) or linked in statically (its entry points without line
// information, its internal functions).
bool isRuntimeFrame(const ReportFrame& f)
{
    if (startsWith(baseNameOf(f.module), "libcudart")) return true;
    return isStaticRuntimeInternal(f.function) || isRuntimeEntryPoint(f.function, f.file);
}

// A stack whose outermost frame is where every thread starts (the program's entry, a thread's start
// routine) was captured whole.
bool startsThread(const ReportFrame& f)
{
    for (std::string_view p : {"_start", "__libc_start", "start_thread", "clone", "__clone"})
        if (startsWith(f.function, p)) return true;
    return false;
}

// The longest stack of the process: the shim's depth budget when some stack reached it.
size_t deepestStack(const Process& p)
{
    size_t deepest = 0;
    for (const auto& [id, st] : p.stacks) deepest = std::max(deepest, st.size());
    return deepest;
}

// deepest: the longest stack of the process, the shim's depth budget when some stack reached it.
ResolvedStack resolveStack(const ProcView& pv, uint32_t stackId, size_t deepest)
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
                r.frames.push_back({fr.function, fr.file, fr.line, fr.module, fr.offset, fr.address ? fr.address : addr, fr.inlined,
                                    true, false, fr.callee});
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
    bool python = false;
    for (ReportFrame& f : r.frames) python |= f.python = wire::isPyFrame(f.address);
    size_t site = r.frames.size();
    for (size_t i = 0; i < r.frames.size(); ++i) {
        // In a Python program the app's own code is its Python code: the interpreter, libffi, ctypes
        // and a framework's native libraries in between are not where the user looks, nor are the
        // frames of installed packages (numba's driver.py) and of the standard library.
        r.frames[i].app = python ? r.frames[i].python && !isInstalledPython(r.frames[i].file) : !isLibraryFrame(r.frames[i], pv);
        if (r.frames[i].app && site == r.frames.size()) site = i;
    }
    // Only package frames (a program run from site-packages, a stack cut short): the first Python frame.
    for (size_t i = 0; python && site == r.frames.size() && i < r.frames.size(); ++i)
        if (r.frames[i].python) site = i;
    // No app frame: a library's own thread or exit handler (NCCL's proxy thread) is named by the
    // library's outermost frame; else (a truncated stack) the first frame outside the driver, runtime
    // and gpuspy, else the innermost.
    for (size_t i = r.frames.size(); site == r.frames.size() && i-- > 0;)
        if (!libraryCallOf(r.frames[i].module, r.frames[i].function).empty()) site = i;
    if (site == r.frames.size())
        for (size_t i = 0; i < r.frames.size() && site == r.frames.size(); ++i)
            if (!isCoreCudaFrame(r.frames[i])) site = i;
    if (site == r.frames.size()) site = 0;
    r.siteFrame = site;
    for (size_t i = 0; i < site && !r.viaRuntime; ++i) r.viaRuntime = isRuntimeFrame(r.frames[i]);
    const ReportFrame& f = r.frames[site];
    char off[32];
    std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
    auto named = [](const ReportFrame& g) {
        std::string s = g.function;
        if (!g.file.empty()) s += " (" + baseNameOf(g.file) + (g.line ? ":" + std::to_string(g.line) : "") + ")";
        return s;
    };
    const std::string libraryCall = f.app ? std::string() : libraryCallOf(f.module, f.function);
    if (!libraryCall.empty()) {
        r.label = libraryCall + " (inside the library)";
        r.libraryCall = libraryCall;
        // A whole stack without a frame of the user's: the library's own thread, or its exit handler
        // (called by exit() after main returned: teardown).
        bool anyApp = false, atExit = false;
        for (const ReportFrame& g : r.frames) {
            anyApp |= g.app;
            atExit |= g.function == "__run_exit_handlers" || g.function == "_dl_fini" || g.function == "exit";
        }
        if (!anyApp && atExit) {
            r.libraryOwn = "exit";
            r.label = libraryCall + " (an exit handler of the library's)";
        } else if (!anyApp) {
            for (std::string_view t : {"start_thread", "clone", "__clone"})
                if (startsWith(r.frames.back().function, t)) r.libraryOwn = "thread";
        }
        // The stack ends inside the library at the depth budget (cuSOLVER -> cuBLAS -> cuBLASLt is deeper
        // than 24 frames): the caller is beyond it, not absent.
        if (st->second.size() >= deepest && deepest >= 8 && !startsThread(r.frames.back()))
            r.label += " [stack cut at " + std::to_string(deepest) + " frames inside the library: a larger "
                       "GPUSPY_STACK_DEPTH (record --stack-depth) or GPUSPY_STACK_DEEPEN, at most 128, reaches "
                       "your code]";
    } else if (!f.function.empty()) {
        r.label = named(f);
        // A Python site names its caller too ("to_device (app.py:8) ← step (app.py:10)"): helpers
        // like to_device are called from many places, and a Python stack has no inlining to show it.
        if (f.python && site + 1 < r.frames.size() && r.frames[site + 1].python)
            r.label += " \u2190 " + named(r.frames[site + 1]);
        // Code of the toolkit's headers or of an installed Python package right below the user's frame:
        // the call the user wrote into it ("main (sort.cu:48) \u2192 cub::DeviceRadixSort::SortKeys (CUB)",
        // "step (app.py:10) \u2192 launch_kernel (numba)"). Else, the CUDA call came from inside one of
        // NVIDIA's libraries: which library call the app made ("main (gemm.cu:41) \u2192 cublasSgemm
        // (libcublas.so.13)"), the frame nearest the site's.
        const ReportFrame* below = f.app && site > 0 ? &r.frames[site - 1] : nullptr;
        std::string intoLibrary = below ? toolkitCallOf(below->file, below->function) : std::string();
        if (below && intoLibrary.empty() && f.python && below->python && !below->function.empty())
            intoLibrary = below->function + " (" + pythonPackageOf(below->file) + ")";
        if (intoLibrary.empty() && f.app)
            for (size_t i = site; i-- > 0;) {
                intoLibrary = libraryCallOf(r.frames[i].module, r.frames[i].function);
                if (intoLibrary.empty()) continue;
                // The library's frame right below the user's, the call instruction's own target: named
                // as the user's binary called it (cufftExecR2C, whose code is cufftXtExec's; the export
                // cusolverDnSsyevd jumps into code no symbol names).
                if (i + 1 == site && !f.callee.empty() && r.frames[i].address != f.address)
                    if (std::string called = libraryCallOf(r.frames[i].module, f.callee); !called.empty()) intoLibrary = called;
                break;
            }
        if (!intoLibrary.empty()) r.label += " \u2192 " + intoLibrary;
        r.libraryCall = intoLibrary;
    } else if (!f.module.empty()) {
        r.label = baseNameOf(f.module) + off;
    } else {
        std::snprintf(off, sizeof off, "0x%llx", static_cast<unsigned long long>(f.address));
        r.label = off;
    }
    return r;
}

}  // namespace

std::string siteLabelOf(const ProcView& pv, uint32_t stackId)
{
    if (!stackId) return "";
    return resolveStack(pv, stackId, deepestStack(*pv.proc)).label;
}

std::map<int, uint64_t> namedSites(const Context& cx, const SiteTally& raw)
{
    std::map<int, uint64_t> out;
    for (const auto& [r, ns] : raw) {
        const int site = r == kNoRawSite ? kNoSite : cx.rawSites[r].site;
        out[site] += ns;
    }
    return out;
}

ApiClass classifyApi(const std::string& abiName)
{
    ApiClass a;
    a.name = abiName;
    const std::string_view base = driverBaseName(abiName);
    a.query = isQuery(abiName);
    a.explicitWait = isExplicitSync(abiName);
    a.hostFunc = base == "cuLaunchHostFunc";
    a.freeLike = base.find("Free") != std::string_view::npos;
    a.asyncName = abiName.find("Async") != std::string::npos;
    a.role = timelineRole(abiName);
    a.mem = memClassOf(base);
    return a;
}

uint32_t rawSiteOf(Context& cx, std::unordered_map<uint64_t, uint32_t>& index, std::vector<uint32_t>& owned,
                   const wire::CallBody& c)
{
    const SiteCategory cat = siteCategory(c);
    if (cat == SiteCategory::None) return kNoRawSite;
    const uint64_t key = uint64_t(c.stackId) << 8 | uint64_t(cat);
    auto [pos, fresh] = index.emplace(key, uint32_t(cx.rawSites.size()));
    if (fresh) {
        RawSite s;
        s.stackId = c.stackId;
        s.category = cat;
        cx.rawSites.push_back(std::move(s));
        owned.push_back(pos->second);
    }
    RawSite& s = cx.rawSites[pos->second];
    ++s.count;
    s.ns += hostNs(c);
    if (std::find(s.apiIds.begin(), s.apiIds.end(), c.apiId) == s.apiIds.end()) s.apiIds.push_back(c.apiId);
    return pos->second;
}

void resolveSites(Context& cx, const ProcView& view, const std::vector<uint32_t>& rawSites)
{
    ProcView pv = view;
    for (const auto& [id, name] : pv.proc->kernels) pv.kernelFunctions.insert(functionBase(demangle(name)));
    std::unordered_map<uint32_t, ResolvedStack> stacks;
    const size_t deepest = deepestStack(*pv.proc);
    for (uint32_t raw : rawSites) {
        RawSite& rs = cx.rawSites[raw];
        auto it = stacks.find(rs.stackId);
        if (it == stacks.end()) it = stacks.emplace(rs.stackId, resolveStack(pv, rs.stackId, deepest)).first;
        const ResolvedStack& st = it->second;
        const std::string cat = siteCategoryName(rs.category);
        auto [pos, fresh] = cx.siteIds.emplace(cat + '\n' + st.label, int(cx.sites.size()));
        if (fresh) {
            CallSite s;
            s.category = cat;
            s.label = st.label;
            s.frames = st.frames;
            s.siteFrame = st.siteFrame;
            s.libraryCall = st.libraryCall;
            s.libraryOwn = st.libraryOwn;
            cx.sites.push_back(std::move(s));
        }
        CallSite& s = cx.sites[size_t(pos->second)];
        s.count += rs.count;
        s.ns += rs.ns;
        for (uint16_t id : rs.apiIds) {
            wire::CallBody c{};
            c.apiId = id;
            const std::string api = pv.apiName(c);
            if (std::find(s.apis.begin(), s.apis.end(), api) == s.apis.end()) s.apis.push_back(api);
            if (!st.frames.empty()) {
                auto& [runtime, direct] = cx.apiCallers[api];
                ++(st.viaRuntime ? runtime : direct);
            }
        }
        rs.site = pos->second;
    }
}

namespace {

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
    for (RawSite& s : cx.rawSites)
        if (s.site != kNoSite) s.site = newId[size_t(s.site)];
}

std::string hex(uint64_t v)
{
    char b[24];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
    return b;
}

void finishOverview(Context& cx, Report& r)
{
    r.processes = cx.processes;
    for (size_t i = 0; i < cx.processes.size(); ++i) {
        const ProcessSummary& p = cx.processes[i];
        for (const auto& [id, d] : cx.devices[i]) {
            DeviceSummary ds;
            ds.pid = p.pid;
            ds.id = id;
            ds.name = d.name;
            ds.uuid = d.uuid;
            ds.host = p.host;
            ds.activeNs = p.activeEndNs - p.activeBeginNs;
            ds.busyNs = d.busyNs;
            ds.busyLoNs = std::min(d.busyLoNs, d.busyNs);
            ds.busyHiNs = std::max(d.busyHiNs, d.busyNs);
            auto pct = [&](uint64_t ns) { return ds.activeNs ? std::min(100.0, 100.0 * double(ns) / double(ds.activeNs)) : 0; };
            ds.busyPct = pct(ds.busyNs);
            ds.busyPctLo = pct(ds.busyLoNs);
            ds.busyPctHi = pct(ds.busyHiNs);
            ds.estimatedOps = d.ops - std::min(d.ops, d.timedOps);
            ds.busyBasis = ds.estimatedOps ? "estimated" : d.upperBoundOps ? "upper_bound" : "measured";
            ds.lostOps = d.lostOps;
            ds.unknownOps = d.unknownOps;
            ds.heldUpOps = d.heldUpOps;
            ds.heldUpNs = d.heldUpNs;
            ds.ops = d.ops;
            ds.timedOps = d.timedOps;
            ds.sampledOutOps = d.sampledOutOps;
            ds.kernelNs = d.kernelNs;
            ds.transferNs = d.transferNs;
            ds.otherNs = d.otherNs;
            ds.upperBoundOps = d.upperBoundOps;
            ds.upperBoundNs = d.upperBoundNs;
            ds.idleGapNs = d.idleGapNs;
            ds.largestGapNs = d.largestGapNs;
            ds.gaps = d.gaps;
            ds.starvedNs = d.starvedNs;
            ds.largestStarvedNs = d.largestStarvedNs;
            ds.starvedInLibraryNs = d.starvedInLibraryNs;
            ds.largestUserStarvedNs = d.largestUserStarvedNs;
            ds.starvedLibraries = d.starvedLibraries;
            ds.idleInLibraryNs = d.idleInLibraryNs;
            ds.waitingNs = d.waitingNs;
            r.devices.push_back(ds);
        }
        for (const StreamAcc& st : cx.streams[i]) {
            if (!st.ops) continue;
            StreamSummary ss;
            ss.pid = p.pid;
            ss.device = st.id.device;
            ss.name = st.id.perThread ? "per-thread stream of tid " + std::to_string(st.id.tid)
                      : st.id.handle ? "stream 0x" + hex(st.id.handle)
                                     : std::string("default stream");
            ss.ops = st.ops;
            ss.estimatedOps = st.estimatedOps;
            ss.busyNs = st.busy[kEst];
            ss.busyLoNs = std::min(st.busy[kLo], ss.busyNs);
            ss.busyHiNs = std::max(st.busy[kHi], ss.busyNs);
            const uint64_t active = p.activeEndNs - p.activeBeginNs;
            ss.busyPct = active ? std::min(100.0, 100.0 * double(ss.busyNs) / double(active)) : 0;
            r.streams.push_back(std::move(ss));
        }
    }
    uint64_t made = 0, dropped = 0, ops = 0, sampled = 0, bounded = 0, estimated = 0, lost = 0, heldUp = 0, unknown = 0;
    for (const ProcessSummary& s : r.processes) {
        made += s.recordsMade;
        dropped += s.droppedRecords;
        ops += s.deviceOps;
        sampled += s.sampledOutOps;
    }
    for (const DeviceSummary& d : r.devices) {
        bounded += d.upperBoundOps;
        estimated += d.estimatedOps;
        lost += d.lostOps;
        heldUp += d.heldUpOps;
        unknown += d.unknownOps;
    }
    if (bounded)
        r.notes.push_back(std::to_string(bounded) +
                          " copies or memsets blocked their call on an idle stream: CUDA events cannot see when "
                          "their device work began, so their GPU times (marked <=) are upper bounds that include "
                          "the driver's host time around the work, and so is the busy time they add to their "
                          "devices and to the waits they overlap (its interval counts each as long as measured "
                          "copies alike, or else as none of it)");
    if (estimated)
        r.notes.push_back(std::to_string(estimated) + " of " + std::to_string(ops) + " device operations were not timed (" +
                          std::to_string(sampled) + " sampled out by the timing budget" +
                          (lost ? ", " + std::to_string(lost) + " timed but set aside as untrustworthy" +
                                      (heldUp ? " (" + std::to_string(heldUp) + " of them: the thread was held up off "
                                                "the CPU inside the call; the others: the end event was recorded too "
                                                "late after the call returned)"
                                              : std::string(": the end event was recorded too late after the call returned")) +
                                      ", as happens on a loaded host"
                                : std::string()) +
                          "): they are placed on their streams from what CUDA guarantees (in-order streams, "
                          "submission times, syncs, queries, events) with the durations of their timed "
                          "siblings, so GPU busy %, idle gaps and the GPU's share of waits are estimates; each "
                          "device's busy % comes with the interval that short and long sibling durations give" +
                          (unknown ? "; " + std::to_string(unknown) + " of them had no timed sibling at all, so only the "
                                     "waits bound their length (a wide interval)"
                                   : std::string()) +
                          "; kernel GPU totals are scaled from the timed launches");
    if (dropped)
        r.notes.push_back(std::to_string(dropped) + (made ? " of " + std::to_string(made) : std::string()) +
                          " records were dropped: counts and times are lower bounds");
    if (cx.lateRecords)
        r.notes.push_back(std::to_string(cx.lateRecords) +
                          " records arrived after the analysis window had moved past their time (more than " +
                          "a window of calls late): they are counted, but their GPU times may be missing from "
                          "their calls and busy time");
}

}  // namespace

void addApi(Context& cx, const CallInfo& ci)
{
    const wire::CallBody& c = *ci.call;
    if (!ci.api->acc) ci.api->acc = &cx.apis[ci.api->name];
    ApiAcc& a = *ci.api->acc;
    a.host.add(hostNs(c));
    a.category = wire::categoryName(c.category);
    // A poll that found the work unfinished is not an error.
    if (!succeeded(c) && !(ci.api->query && c.result == kCudaErrorNotReady)) {
        ++a.errors;
        ++a.errorCodes[c.result];
    }
}

std::string apiRuntimeName(const Context& cx, const std::string& abiName)
{
    // An API of no call site (a stream's destroy, a module load) by the program's other calls: a program
    // none of whose sites went through the runtime calls the driver directly.
    auto it = cx.apiCallers.find(abiName);
    std::pair<uint64_t, uint64_t> callers{0, 0};
    if (it != cx.apiCallers.end()) callers = it->second;
    else
        for (const auto& [api, c] : cx.apiCallers) callers.first += c.first, callers.second += c.second;
    if (!callers.first && callers.second) return {};
    return std::string(runtimeNameOf(abiName));
}

std::string apiDisplay(const Context& cx, const std::string& abiName)
{
    const std::string rt = apiRuntimeName(cx, abiName);
    return rt.empty() ? abiName : abiName + " (" + rt + ")";
}

void finishApis(Context& cx, Report& r)
{
    for (auto& [api, a] : cx.apis) {
        ApiRow row;
        row.api = api;
        row.display = apiDisplay(cx, api);
        row.runtime = apiRuntimeName(cx, api);
        row.category = a.category;
        row.errors = a.errors;
        for (const auto& [code, n] : a.errorCodes) row.errorCodes.push_back({code, cudaResultName(code), n});
        std::stable_sort(row.errorCodes.begin(), row.errorCodes.end(), [](const auto& x, const auto& y) { return x.calls > y.calls; });
        row.host = a.host.stats();
        r.apis.push_back(std::move(row));
    }
    std::stable_sort(r.apis.begin(), r.apis.end(), [](const ApiRow& a, const ApiRow& b) { return a.host.total > b.host.total; });
}

}  // namespace detail

struct SiteNamer::State {
    detail::ProcView pv;
    size_t deepest = 0;
    std::unordered_map<uint32_t, std::string> labels;
};

SiteNamer::SiteNamer(const Process& p) : m_state(std::make_unique<State>())
{
    m_state->pv.proc = &p;
    m_state->deepest = detail::deepestStack(p);
}

SiteNamer::~SiteNamer() = default;

const std::string& SiteNamer::label(uint32_t stackId)
{
    auto it = m_state->labels.find(stackId);
    if (it == m_state->labels.end())
        it = m_state->labels.emplace(stackId, stackId ? detail::resolveStack(m_state->pv, stackId, m_state->deepest).label : "").first;
    return it->second;
}

StreamAnalyzer::StreamAnalyzer(const ReportOptions& options) : m_options(options), m_cx(std::make_unique<detail::Context>())
{
    m_cx->options = &m_options;
}

StreamAnalyzer::~StreamAnalyzer() = default;

bool StreamAnalyzer::selected(const Process& p) const
{
    return m_options.pid < 0 || p.pid == uint32_t(m_options.pid);
}

void StreamAnalyzer::onRecord(const Process& p, const wire::RecordView& v)
{
    if (v.type != wire::RecordType::Call && v.type != wire::RecordType::GpuSpan && v.type != wire::RecordType::Nvtx) return;
    if (!selected(p)) return;
    detail::addEvent(*m_cx, detail::procState(*m_cx, p), v);
}

void StreamAnalyzer::onProcess(const Process& p)
{
    if (selected(p)) detail::endProcess(*m_cx, p);
    else detail::dropProcess(*m_cx, p);
}

Report StreamAnalyzer::finish(uint64_t badStreams)
{
    using namespace detail;
    Context& cx = *m_cx;
    Report r;
    r.options = m_options;
    r.badStreams = badStreams;
    rankSites(cx);
    finishOverview(cx, r);
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < cx.processes.size(); ++i) {
        first = std::min(first, cx.starts[i]);
        last = std::max(last, cx.starts[i] + cx.processes[i].wallNs);
    }
    cx.wallNs = last > first ? last - first : 0;
    if (m_options.pid >= 0 && cx.processes.empty())
        r.notes.push_back("no process " + std::to_string(m_options.pid) + " in the capture");
    if (badStreams) r.notes.push_back(std::to_string(badStreams) + " malformed stream(s): their valid records are included");

    finishApis(cx, r);
    finishTransfers(cx, r);
    finishLaunches(cx, r);
    finishSyncs(cx, r);
    finishNvtx(cx, r);
    finishMemory(cx, r);
    finishCollectives(cx, r);
    r.callsites = cx.sites;
    analyzeFindings(cx, r);
    captureWindowFindings(cx, r);
    return r;
}

Report analyze(const Capture& capture, const ReportOptions& options)
{
    StreamAnalyzer an(options);
    detail::Context& cx = *an.m_cx;
    cx.windowCalls = SIZE_MAX;  // all in RAM already: no window, every span finds its call
    for (const Process& p : capture.processes) {
        if (!an.selected(p)) continue;
        detail::ProcState& ps = detail::procState(cx, p);
        // Calls first, so that every span finds its call waiting; the window sorts them by time.
        for (const wire::CallBody& c : p.calls) detail::addCall(cx, ps, c);
        for (const wire::GpuSpanBody& s : p.spans) detail::addSpan(cx, ps, s);
        for (const wire::NvtxBody& n : p.nvtx) detail::addNvtx(cx, ps, n);
        an.onProcess(p);
    }
    return an.finish(capture.badStreams);
}

}  // namespace gpuspy::collect
