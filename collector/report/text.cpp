// collector/report/text.cpp: the report for people: headline, findings first (ranked, with evidence and
// call sites), then nsys-stats-like tables. Every line fits 100 columns; colour only when asked.
#include "collector/report/report.h"
#include "collector/report/text_collectives.h"
#include "collector/report/text_memory.h"
#include "collector/report/text_parts.h"

#include "collector/analyze/internal.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace gpuspy::collect {

namespace {

using detail::formatBytes;
using detail::formatNs;
using namespace textparts;

std::string gbps(double v)
{
    char b[16];
    std::snprintf(b, sizeof b, "%.2f", v);
    return b;
}

// A value that is only a bound reads "<=" before it (">=" for a lower bound); a note under its table
// says why.
constexpr const char* kAtMost = "<=";
constexpr const char* kAtLeast = ">=";
std::string markBound(const std::string& value, bool bound, const char* mark = kAtMost)
{
    return bound ? mark + value : value;
}

// A device's busy time is an estimate ("~") where untimed work was placed by inference (the device
// timeline), else measured, and an upper bound ("<=") where it holds spans that are.
std::string markBusy(const std::string& value, const DeviceSummary& d)
{
    if (d.busyBasis == "estimated") return "~" + value;
    return d.busyBasis == "upper_bound" ? kAtMost + value : value;
}

// The interval of an estimated busy %, "55-70", or "" when measured or narrower than a point.
std::string busyRange(const DeviceSummary& d)
{
    if (d.busyPctHi - d.busyPctLo < 1) return "";
    return pct(d.busyPctLo) + "-" + pct(d.busyPctHi);
}

std::string severityText(const Style& st, const std::string& sev)
{
    std::string up = sev;
    for (char& c : up) c = char(std::toupper(static_cast<unsigned char>(c)));
    up.resize(std::max<size_t>(up.size(), 6), ' ');
    const std::string color = sev == "high" ? st.red() : sev == "medium" ? st.yellow() : st.cyan();
    return color + up + st.reset();
}

// "sync-memcpy", "sync-memcpy and pageable-memcpy", "a, b and c".
std::string joinRules(const std::vector<std::string>& rules)
{
    std::string s;
    for (size_t i = 0; i < rules.size(); ++i)
        s += (i == 0 ? "" : i + 1 == rules.size() ? " and " : ", ") + rules[i];
    return s;
}

// "f(Model&, Batch const&) (train.cu:128)" -> "f(...) (train.cu:128)": the file and line matter more than
// the parameter types.
std::string foldParameters(const std::string& label)
{
    const size_t file = label.rfind(" (");
    const size_t paren = label.find('(');
    if (file != std::string::npos && paren != std::string::npos && paren < file && label.compare(paren, 2, "()") != 0)
        return label.substr(0, paren) + "(...)" + label.substr(file);
    return label;
}


void findings(std::string& out, const Report& r, const Style& st, bool verbose)
{
    out += heading(st, "Findings (ranked by estimated time saved)");
    if (r.findings.empty()) {
        out += " No findings: no transfer, launch or sync pattern worth changing was found.\n";
        return;
    }
    size_t rank = 0;
    for (const Finding& f : r.findings) {
        const std::string head = std::to_string(++rank) + ". ";
        std::string line = head + severityText(st, f.severity) + " " + st.bold() + f.rule + st.reset();
        if (f.estimatedSavingsNs)
            line += std::string(f.savingsBound == "at_most" ? "  at most " : f.savingsBound == "at_least" ? "  at least " : "  ~") +
                    formatNs(f.estimatedSavingsNs) + " to save" +
                    (f.prediction.fix.empty()       ? ""
                     : f.prediction.windowCalls ? " (estimated: " + formatNs(f.prediction.lowNs) + " to " +
                                                      formatNs(f.prediction.highNs) + ", extrapolated from a window)"
                                                : " (predicted)");
        if (f.hostCpuSavingsNs) line += "  ~" + formatNs(f.hostCpuSavingsNs) + " of host CPU to free (not wall time)";
        out += wrap(line, " ", "     ");
        out += wrap(f.message, "     ");
        if (!f.overlaps.empty())
            out += wrap("Some of the same calls as " + joinRules(f.overlaps) +
                            ": the savings do not add (fixing one changes what the other would save).",
                        "     ");
        if (verbose && !f.evidence.empty()) {
            std::string ev = "evidence:";
            for (const auto& [k, v] : f.evidence) {
                char b[48];
                if (v == double(uint64_t(v))) std::snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(v));
                else std::snprintf(b, sizeof b, "%.3g", v);
                ev += " " + k + "=" + b;
            }
            out += st.dim() + wrap(ev, "     ") + st.reset();
        }
        for (size_t i = 0; i < f.callsites.size() && i < r.options.top; ++i) {
            const uint32_t id = f.callsites[i];
            std::string tail;
            if (id < r.callsites.size())
                tail = "  " + num(r.callsites[id].count) + " calls, " + formatNs(r.callsites[id].ns);
            const std::string prefix = std::string("     ") + (i ? "   " : "at ");
            const std::string site = siteText(r, id);
            // Parameter types folded where the line would not fit; then wrapped, never clipped.
            const std::string shown = prefix.size() + site.size() + tail.size() <= width() ? site : foldParameters(site);
            // The prefix as the first line's indent: wrap() drops the spaces that open its text.
            out += wrap(shown + tail, prefix, "          ");
        }
    }
}

// Processes whose stream has no End record: killed (SIGKILL, a fatal signal gpuspy could not see
// coming), its connection or descriptor lost, or still running when the capture ended. The End record
// holds the process's drop count and its last calls, so what the report shows of it is a lower bound.
void cutShort(std::string& out, const Report& r, const Style& st)
{
    std::string list;
    size_t n = 0;
    for (const ProcessSummary& p : r.processes) {
        if (p.ended) continue;
        list += std::string(n++ ? "; " : " ") + "pid " + std::to_string(p.pid) +
                (p.streamError.empty() ? "" : " (" + p.streamError + ")");
    }
    if (!n) return;
    out += st.yellow() +
           wrap(std::string(n == 1 ? "1 process's stream was" : std::to_string(n) + " processes' streams were") +
                    " cut short (no End record: the process was killed or its stream was lost, or it was still running "
                    "when the capture ended):" + list + ". Their figures stop at the last record that arrived: calls, "
                    "GPU work and drops after it are missing, so their counts and times are lower bounds, and their "
                    "Dropped count (marked ?) is only what was reported before the cut.",
                " ") +
           st.reset();
}

// The processes of the recorded tree that are not in its streams: what ran without gpuspy (and whether it
// used the GPU, where its mappings showed it), and the captures processes wrote of their own.
void outside(std::string& out, const Report& r, const Style& st)
{
    if (r.outside.empty()) return;
    size_t missing = 0;
    for (const OutsideProcess& p : r.outside) missing += !p.merged;
    std::string head = num(r.outside.size()) + (r.outside.size() == 1 ? " process" : " processes") +
                       " of the recorded tree did not send to gpuspy's collector";
    if (missing) head += std::string(": ") + (missing == r.outside.size() ? "what they" : "what those not merged") +
                         " did on the GPU is not in these figures";
    out += st.yellow() + wrap(head + ":", " ") + st.reset();
    for (const OutsideProcess& p : r.outside) {
        std::string line = "pid " + std::to_string(p.pid) + " ";
        if (p.why == OutsideWhy::Unseen)
            line += "exec'd and ended before gpuspy could read what it ran: whether it ran with gpuspy is unknown";
        else if (p.why == OutsideWhy::OwnCapture)
            line += "wrote a capture of its own (GPUSPY_SOCKET not kept): " + p.command + "; " +
                    (p.capturePath.empty() ? "its capture was not found"
                                           : p.capturePath + (p.merged ? ", merged: its figures are above" : ", not merged: see it with gpuspy report"));
        else
            line += std::string("ran without gpuspy (") + (p.why == OutsideWhy::Static ? "a static program" : "LD_PRELOAD not kept") +
                    "): " + p.command + "; " +
                    (p.cuda == OutsideCuda::Loaded    ? "it loaded the CUDA driver: its CUDA calls are missing"
                     : p.cuda == OutsideCuda::NotSeen ? "the CUDA driver was not seen loaded in it"
                                                      : "whether it loaded the CUDA driver is unknown (it ended before gpuspy looked)");
        out += wrap(line, "   ", "     ");
    }
}

void overview(std::string& out, const Report& r, const Style& st)
{
    out += heading(st, "Processes");
    // Rank and host where they tell processes apart: a launcher gave ranks, or the processes ran on
    // several hosts (captures read as one run).
    std::set<std::string> hosts;
    bool ranks = false;
    for (const ProcessSummary& p : r.processes) {
        hosts.insert(p.host);
        ranks = ranks || p.rank >= 0;
    }
    if (ranks || hosts.size() > 1) {
        TextTable t({"Rank", "Host", "PID", "Wall", "CUDA API", "% wall", "gpuspy", "Calls", "Dropped", "Command"}, 9);
        for (size_t c : {8, 6}) t.optional(c);
        for (const ProcessSummary& p : r.processes)
            t.row({p.rank < 0 ? "-" : std::to_string(p.rank) + (p.worldSize > 0 ? "/" + std::to_string(p.worldSize) : ""),
                   p.host.empty() ? "?" : p.host, std::to_string(p.pid), formatNs(p.wallNs), formatNs(p.cudaApiNs),
                   pct(p.cudaApiPct), formatNs(p.gpuspyOverheadNs), num(p.calls),
                   p.ended ? num(p.droppedRecords) : num(p.droppedRecords) + "?", p.command});
        out += t.render(st);
    } else {
        TextTable t({"PID", "Wall", "CUDA API", "% wall", "gpuspy", "Calls", "Dropped", "Command"}, 7);
        for (size_t c : {6, 4}) t.optional(c);
        for (const ProcessSummary& p : r.processes)
            t.row({std::to_string(p.pid), formatNs(p.wallNs), formatNs(p.cudaApiNs), pct(p.cudaApiPct),
                   formatNs(p.gpuspyOverheadNs), num(p.calls), p.ended ? num(p.droppedRecords) : num(p.droppedRecords) + "?",
                   p.command});
        out += t.render(st);
    }
    cutShort(out, r, st);
    outside(out, r, st);
    for (const ProcessSummary& p : r.processes)
        for (const std::string& n : p.notices) out += wrap("pid " + std::to_string(p.pid) + ": " + n + ".", " ");
    if (r.devices.empty()) return;
    out += heading(st, "Devices (busy % over each process's first to last CUDA call)");
    TextTable d({"PID", "Dev", "Busy %", "Range %", "Busy", "Active", "Idle gaps", "Largest", "Starved", "Waiting", "Ops", "Timed",
                 "Name"}, 12);
    for (size_t c : {3, 0, 10, 11, 7, 5}) d.optional(c);  // narrow: Active, then Largest, Timed, Ops, PID, Range % go
    uint64_t boundOps = 0, estimated = 0, waiting = 0;
    for (const DeviceSummary& x : r.devices) {
        boundOps += x.upperBoundOps;
        estimated += x.estimatedOps;
        d.row({std::to_string(x.pid), std::to_string(x.id), markBusy(pct(x.busyPct), x), busyRange(x),
               markBusy(formatNs(x.busyNs), x), formatNs(x.activeNs), formatNs(x.idleGapNs), formatNs(x.largestGapNs),
               formatNs(x.starvedNs), x.waitingNs ? formatNs(x.waitingNs) : "-", num(x.ops), num(x.timedOps), x.name});
        waiting += x.waitingNs;
    }
    out += d.render(st);
    if (waiting)
        out += wrap("Waiting: idle while the program waited for work (a thread paused over 1 ms before its next CUDA "
                    "call while the process used under a tenth of a CPU: blocked in poll, accept, a lock or sleep, as a "
                    "server between requests); not counted as Starved.",
                    " ");
    if (estimated)
        out += wrap("~ estimated: " + num(estimated) + " untimed operations are placed on their streams by inference "
                    "(busy time, gaps and starvation are read off that timeline); Range is the busy % with short and "
                    "long durations for them.",
                    " ");
    if (boundOps)
        out += wrap("<= upper bound: the busy time holds the spans of " + num(boundOps) +
                        " blocking copies or memsets, which are upper bounds (see Transfers).",
                    " ");
    if (r.streams.size() > 1) {
        out += heading(st, "Streams (busy % of the process's active span)");
        TextTable t({"PID", "Dev", "Busy %", "Range %", "Busy", "Ops", "Estimated", "Stream"}, 7);
        for (size_t c : {6, 3}) t.optional(c);
        size_t shown = 0;
        for (const StreamSummary& x : r.streams) {
            if (shown++ == r.options.top) break;
            const bool est = x.estimatedOps > 0;
            const uint64_t active = x.busyPct > 0 ? uint64_t(double(x.busyNs) * 100.0 / x.busyPct) : 0;
            auto p = [&](uint64_t ns) { return active ? pct(std::min(100.0, 100.0 * double(ns) / double(active))) : pct(0); };
            t.row({std::to_string(x.pid), std::to_string(x.device), (est ? "~" : "") + pct(x.busyPct),
                   est && x.busyHiNs > x.busyLoNs ? p(x.busyLoNs) + "-" + p(x.busyHiNs) : "", formatNs(x.busyNs),
                   num(x.ops), num(x.estimatedOps), x.name});
        }
        out += t.render(st);
    }
}

// " [4 errors: CUDA_ERROR_NO_BINARY_FOR_GPU]", the two most frequent codes by name.
std::string errorsText(const ApiRow& a)
{
    if (!a.errors) return {};
    std::string s = " [" + num(a.errors) + (a.errors == 1 ? " error" : " errors");
    for (size_t i = 0; i < a.errorCodes.size() && i < 2; ++i)
        s += (i ? ", " : ": ") + a.errorCodes[i].name + (a.errorCodes.size() > 1 ? " x" + num(a.errorCodes[i].calls) : "");
    if (a.errorCodes.size() > 2) s += ", ...";
    return s + "]";
}

void apis(std::string& out, const Report& r, const Style& st)
{
    if (r.apis.empty()) return;
    out += heading(st, "CUDA API summary (host time)");
    uint64_t total = 0;
    for (const ApiRow& a : r.apis) total += a.host.total;
    TextTable t({"Time %", "Total", "Calls", "Avg", "Med", "Min", "Max", "Name"}, 7);
    for (size_t c : {0, 6, 5, 3}) t.optional(c);
    for (size_t i = 0; i < r.apis.size() && i < r.options.top; ++i) {
        const ApiRow& a = r.apis[i];
        t.row({pct(total ? 100.0 * double(a.host.total) / double(total) : 0), formatNs(a.host.total), num(a.host.count),
               formatNs(uint64_t(a.host.avg + 0.5)), formatNs(a.host.median), formatNs(a.host.min), formatNs(a.host.max),
               a.display + errorsText(a)});
    }
    out += t.render(st);
    if (r.apis.size() <= r.options.top) return;
    out += " (" + num(r.apis.size() - r.options.top) + " more in --format json/csv)\n";
    // Failed calls are never left out of sight: a failed setup call is recorded with no duration (a
    // failure-only hook) and sorts last.
    std::string failed;
    for (size_t i = r.options.top; i < r.apis.size(); ++i)
        if (r.apis[i].errors) failed += (failed.empty() ? "" : ", ") + r.apis[i].display + errorsText(r.apis[i]);
    if (!failed.empty()) out += wrap("Failed calls among them: " + failed + ".", " ");
}

void transfers(std::string& out, const Report& r, const Style& st)
{
    if (r.transfers.empty()) return;
    out += heading(st, "Transfers (direction x host memory x mode)");
    TextTable t({"Dir", "Memory", "Mode", "Count", "Bytes", "GPU time", "Host time", "GB/s", "<=64K", "<=1M", ">1M"}, 1);
    t.optional({8, 9, 10});  // the size histogram, whole or not at all
    t.leftAlign(0);
    t.leftAlign(1);
    t.leftAlign(2);
    bool hostBasis = false;
    uint64_t boundOps = 0;
    for (const TransferRow& x : r.transfers) {
        hostBasis |= x.gbpsBasis == "host";
        const bool bound = x.upperBoundCount > 0;
        boundOps += x.upperBoundCount;
        t.row({x.direction, x.hostMemory, x.mode, num(x.count), formatBytes(x.bytes),
               x.gpuNs ? markBound(formatNs(x.gpuNs), bound) : x.graphGpuNs ? "~" + formatNs(x.graphGpuNs) : "-",
               formatNs(x.hostNs),
               (x.gbpsBasis == "graph_estimate" ? "~" : "") + markBound(gbps(x.gbps), bound && x.gbpsBasis == "gpu", kAtLeast) +
                   (x.gbpsBasis == "host" ? "*" : ""),
               num(x.buckets.size() > 0 ? x.buckets[0].count : 0), num(x.buckets.size() > 1 ? x.buckets[1].count : 0),
               num(x.buckets.size() > 2 ? x.buckets[2].count : 0)});
    }
    out += t.render(st);
    out += wrap(std::string("GB/s: bytes of the timed transfers / their GPU time") +
                    (hostBasis ? "; * no GPU time recorded: bytes / host time" : ""),
                " ");
    if (std::any_of(r.transfers.begin(), r.transfers.end(), [](const TransferRow& x) { return x.graphCount > 0; }))
        out += wrap("Mode graph: copies and memsets run as graph nodes, at their graph launch's call site; ~ their "
                    "share of the launches' measured GPU time (an estimate).", " ");
    if (boundOps)
        out += wrap("<= upper bound (so GB/s >= a lower bound): " + num(boundOps) +
                        " of these copies and memsets blocked the call on an idle stream. CUDA events cannot see "
                        "when such work began, so its GPU time includes the driver's host time before it (and "
                        "runs to the call's return). Other GPU times are measured.", " ");
    for (const TransferRow& x : r.transfers) {
        if (x.callsites.empty()) continue;
        std::string s = x.direction + " " + x.hostMemory + " " + x.mode + " from " + siteText(r, x.callsites[0]);
        if (x.callsites.size() > 1) s += " (+" + num(x.callsites.size() - 1) + " more)";
        out += wrap(s, " ");
    }
}

void kernels(std::string& out, const Report& r, const Style& st, bool verbose)
{
    const LaunchSummary& L = r.launches;
    if (r.kernels.empty() && !L.graphLaunches) return;
    out += heading(st, "Kernels (GPU time)");
    uint64_t total = 0;
    for (const KernelRow& k : r.kernels) total += k.estimatedGpuNs;
    TextTable t({"Time %", "Total", "Count", "Timed", "Avg", "Med", "Min", "Max", "Launch med", "Name"}, 9);
    for (size_t c : {0, 6, 7, 4}) t.optional(c);  // on a narrow terminal: Avg, then Max, Min, Time % go
    bool few = false;
    for (size_t i = 0; i < r.kernels.size() && i < r.options.top; ++i) {
        const KernelRow& k = r.kernels[i];
        const bool timed = k.timedCount > 0;
        // A kernel's times from one or two timed launches are marked: its spread is unknown.
        const std::string mark = timed && k.timedCount <= 2 ? "*" : "";
        few |= !mark.empty();
        const std::string totalText = timed ? formatNs(k.estimatedGpuNs) : k.graphGpuNs ? "~" + formatNs(k.estimatedGpuNs) : "-";
        t.row({pct(total ? 100.0 * double(k.estimatedGpuNs) / double(total) : 0), totalText,
               num(k.count), num(k.timedCount), timed ? formatNs(uint64_t(k.gpu.avg + 0.5)) + mark : "-",
               timed ? formatNs(k.gpu.median) + mark : "-", timed ? formatNs(k.gpu.min) + mark : "-",
               timed ? formatNs(k.gpu.max) + mark : "-", k.count > k.graphCount ? formatNs(k.medianLaunchHostNs) : "graph",
               (k.launchBound ? "! " : "") + (verbose ? k.name : foldTemplates(k.name)) +
                   (k.launchConfig.empty() ? "" : " [" + k.launchConfig + "]")});
    }
    out += t.render(st);
    if (few) out += wrap("* from one or two timed launches: the kernel's spread is unknown.", " ");
    if (r.kernels.size() > r.options.top) out += " (" + num(r.kernels.size() - r.options.top) + " more kernels in --format json/csv)\n";
    std::string s = "Launches: " + num(L.count) + " (" + num(uint64_t(L.perSecond + 0.5)) + "/s over the active span), host time " + formatNs(L.hostNs) +
                    " (median " + formatNs(L.medianHostNs) + ", p99 " + formatNs(L.p99HostNs) + "). Launch-bound kernels " +
                    "(marked !, median GPU time below the median launch cost): " + num(L.launchBoundKernels) +
                    ". GPU idle gaps between operations: " + formatNs(L.idleGapNs) + " in all, largest " +
                    formatNs(L.largestGapNs) + ".";
    if (L.graphLaunches)
        s += " Graph launches: " + num(L.graphLaunches) + ", host " + formatNs(L.graphHostNs) + ", GPU " + formatNs(L.graphGpuNs) +
             "; their " + num(L.graphNodes) + " kernel, copy, memset and host nodes are counted in the tables (transfers of mode "
             "graph), each graph's GPU time split over its nodes by their standalone timings, else evenly (~ estimated)" +
             (L.graphEventNodes ? "; " + num(L.graphEventNodes) + " event record and wait nodes ran (no device work, untimed)"
                                : std::string()) +
             (L.graphsUnknown ? "; " + num(L.graphsUnknown) + " launches ran graphs whose nodes are not known" : std::string()) + ".";
    if (L.captured) s += " " + num(L.captured) + " launches were captured into graphs (not counted above).";
    if (!L.samplingNote.empty()) s += " " + L.samplingNote + ".";
    out += wrap(s, " ");
}

// Host functions (cudaLaunchHostFunc, graph host nodes) apart from the kernels: host code the stream ran
// in its order, holding it meanwhile.
void hostFunctions(std::string& out, const Report& r, const Style& st)
{
    const KernelRow& h = r.hostFunctions;
    if (!h.count) return;
    out += heading(st, "Host functions (cudaLaunchHostFunc: host code run in stream order, not kernels)");
    TextTable t({"Count", "Graph", "Held stream", "Med", "Max", "Launch med", "Call site"}, 6);
    const bool timed = h.timedCount > 0;
    const std::string held = timed ? formatNs(h.estimatedGpuNs) : h.graphGpuNs ? "~" + formatNs(h.estimatedGpuNs) : "-";
    t.row({num(h.count), num(h.graphCount), held, timed ? formatNs(h.gpu.median) : "-", timed ? formatNs(h.gpu.max) : "-",
           h.count > h.graphCount ? formatNs(h.medianLaunchHostNs) : "graph",
           h.callsites.empty() ? "-" : foldParameters(siteText(r, h.callsites[0]))});
    out += t.render(st);
    std::string s = "Held stream: the time they held their stream (work queued behind them waited)";
    if (h.timedCount < h.count - h.graphCount) s += ", " + num(h.timedCount) + " timed, the rest at their mean";
    if (h.graphCount) s += "; graph host nodes at their graph launches' split (~ estimated)";
    s += ". Not counted as kernel launches.";
    for (size_t i = 1; i < h.callsites.size(); ++i) s += i == 1 ? " Also from " + siteText(r, h.callsites[i]) : ", " + siteText(r, h.callsites[i]);
    out += wrap(s, " ");
}

void syncs(std::string& out, const Report& r, const Style& st)
{
    if (r.syncs.empty()) return;
    out += heading(st, "Blocking syncs (host waits for the GPU)");
    TextTable t({"Kind", "Count", "Blocked", "Busy %", "Med", "Max", "API"}, 6);
    t.leftAlign(0);
    bool anyBound = false;
    for (const SyncRow& s : r.syncs) {
        anyBound |= s.upperBoundCount > 0;
        t.row({(s.implicit ? "implicit " : "") + s.kind, num(s.count), formatNs(s.blockedNs),
               markBound(pct(s.blockedNs ? 100.0 * double(s.gpuBusyNs) / double(s.blockedNs) : 0), s.upperBoundCount > 0),
               formatNs(s.host.median), formatNs(s.host.max), s.display});
    }
    out += t.render(st);
    out += wrap(std::string("Busy %: share of the blocked time the call's device was running work (a wait on an "
                            "idle GPU is waste).") +
                    (anyBound ? " <= upper bound: the calls' own GPU spans are upper bounds (see Transfers)." : ""),
                " ");
    for (const SyncRow& s : r.syncs)
        if (s.kind == "query")
            out += wrap(s.api + ": " + num(s.notReady) + " of " + num(s.count) +
                        " polls found the work unfinished (CUDA_ERROR_NOT_READY).", " ");
}

void nvtx(std::string& out, const Report& r, const Style& st)
{
    if (r.nvtx.empty()) return;
    out += heading(st, "NVTX ranges (inclusive)");
    TextTable t({"Range time", "Ranges", "Calls", "CUDA API", "Copies", "Bytes", "Launches", "Sync blocked", "GPU", "Name"}, 9);
    for (size_t c : {2, 5, 4, 6}) t.optional(c);
    bool anyBound = false;
    for (size_t i = 0; i < r.nvtx.size() && i < r.options.top; ++i) {
        const NvtxRow& n = r.nvtx[i];
        anyBound |= n.upperBoundCount > 0;
        t.row({formatNs(n.rangeNs), num(n.ranges), num(n.calls), formatNs(n.cudaApiNs), num(n.transfers),
               formatBytes(n.transferBytes), num(n.launches), formatNs(n.syncBlockedNs),
               markBound(formatNs(n.gpuNs), n.upperBoundCount > 0), n.name});
    }
    out += t.render(st);
    if (anyBound) out += wrap("<= upper bound: the GPU time holds blocking copies or memsets (see Transfers).", " ");
}

void captureWindows(std::string& out, const Report& r, const Style& st)
{
    const CaptureWindows& cw = r.captureWindows;
    if (!cw.used) return;
    out += heading(st, "Capture windows");
    if (cw.rows.empty()) {
        out += st.red() + wrap("NO WINDOW OPENED: nothing was recorded; " + num(cw.leftOut) + " calls were left out.", " ") + st.reset();
        return;
    }
    TextTable t({"Pid", "#", "Opened by", "Closed by", "Begin", "Length", "Calls", "Launches", "Copies", "Syncs", "Left out"}, 10);
    for (size_t c : {9, 8, 7}) t.optional(c);
    for (const CaptureWindowRow& w : cw.rows)
        t.row({std::to_string(w.pid), std::to_string(w.index), w.trigger, w.endedBy, formatNs(w.beginNs),
               formatNs(w.endNs > w.beginNs ? w.endNs - w.beginNs : 0), w.empty() ? "0 EMPTY" : num(w.calls), num(w.launches),
               num(w.transfers), num(w.syncs), num(w.leftOutBefore)});
    out += t.render(st);
    out += wrap(num(cw.leftOut) + " calls outside the windows were counted, not recorded (" + num(cw.leftOutLaunches) +
                    " launches; " + num(cw.leftOutAfter) + " after the last window).",
                " ");
    if (cw.emptyWindows)
        out += st.red() + wrap(num(cw.emptyWindows) + " EMPTY WINDOW(S): opened and closed with no CUDA call inside.", " ") + st.reset();
}

void sites(std::string& out, const Report& r, const Style& st)
{
    if (r.callsites.empty()) return;
    out += heading(st, "Call sites (host time)");
    TextTable t({"#", "Category", "Calls", "Host time", "Site"}, 4);
    t.leftAlign(1);
    for (size_t i = 0; i < r.callsites.size() && i < r.options.top; ++i) {
        const CallSite& s = r.callsites[i];
        t.row({std::to_string(s.id), s.category, num(s.count), formatNs(s.ns), s.label});
    }
    out += t.render(st);
}

}  // namespace

// One line of what to change per rule: the verdict's (the finding's message says it in full).
std::string adviceOf(const std::string& rule)
{
    static const std::map<std::string, std::string> kAdvice = {
        {"pageable-memcpy", "copy from pinned host memory (cudaMallocHost / cudaHostRegister)"},
        {"pageable-async-memcpy", "pin the host memory of the async copies"},
        {"sync-memcpy", "cudaMemcpyAsync on a stream, one wait where the data is needed"},
        {"small-transfers", "pack the small copies into one buffer and copy it once"},
        {"launch-bound-kernels", "fuse the kernels, or launch the sequence as one CUDA graph"},
        {"gpu-starved", "prepare the next work while the GPU runs, so that its queue never empties"},
        {"sync-in-loop", "synchronize once after the loop"},
        {"implicit-sync", "allocate once outside the loop (cudaMalloc/cudaFree wait for the GPU)"},
        {"spin-wait", "a blocking wait instead of polling"},
        {"dropped-records", "record a shorter window (the capture lost records)"},
        {"memory-leak", "free each allocation once done with it"},
        {"memory-peak", "compute the intermediate in pieces, or reuse a buffer"},
        {"allocation-failed", "free memory before the allocation, or ask for less (out of memory; else fix the error it names)"},
        {"calls-failed", "fix the failing call's error: the process ran no GPU work past it"},
        {"pool-keeps-memory", "lower the pool's release threshold, or trim it after the burst"},
        {"pool-regrowth", "set the pool's release threshold to its working size"},
        {"legacy-stream-serialisation", "make the streams with cudaStreamNonBlocking"},
        {"alloc-in-loop", "allocate once before the loop and reuse the buffer"},
        {"graph-launch-bound", "fewer, larger graphs (fuse their small kernels), or launch from the device"},
    };
    auto it = kAdvice.find(rule);
    return it != kAdvice.end() ? it->second : std::string();
}

// What sets the end of each process's run (the replay's critical path), and the threads with CUDA work that
// do not: advice about those would not shorten the run.
void criticalPath(std::string& out, const Report& r)
{
    for (const CriticalPath& cp : r.criticalPaths) {
        if (!cp.wallNs || cp.parts.empty()) continue;
        const std::string who = r.criticalPaths.size() > 1 ? "pid " + std::to_string(cp.pid) + ": " : "";
        std::string line = who + "Critical path (what sets the end of the run, by replay):";
        size_t shown = 0;
        for (const CriticalPathPart& p : cp.parts) {
            if (shown == 3 || p.ns * 100 < cp.wallNs) break;
            line += std::string(shown++ ? ", " : " ") + p.what + " " + pct(100.0 * double(p.ns) / double(cp.wallNs)) + "%";
        }
        out += wrap(line + ".", " ", "   ");
        size_t named = 0, more = 0;
        for (const OffPathThread& t : cp.offPath) {
            if (t.cudaNs * 100 < cp.wallNs) continue;  // a thread that barely used CUDA
            if (named++ == 3) {
                ++more;
                continue;
            }
            out += wrap(who + t.thread + " is off the critical path (" + formatNs(t.cudaNs) + " in CUDA calls, done at " +
                            formatNs(t.endNs) + " of " + formatNs(cp.wallNs) + "): shortening its calls alone would not shorten the run.",
                        " ", "   ");
        }
        if (more) out += wrap(who + std::to_string(more) + " more thread(s) off the critical path (the JSON's critical_path lists them).", " ", "   ");
    }
}

// The answer first: what bounds the run, and the findings to act on first, one line each.
void verdict(std::string& out, const Report& r, const Style& st, uint64_t wall)
{
    out += heading(st, "Verdict");
    const DeviceSummary* busiest = nullptr;
    for (const DeviceSummary& d : r.devices)
        if (!busiest || d.busyPct > busiest->busyPct) busiest = &d;
    std::string bound;
    if (!busiest) bound = "No GPU work was recorded: the run's time is the host's.";
    else {
        const std::string gpu = "GPU " + std::to_string(busiest->id) +
                                (r.processes.size() > 1 ? " (pid " + std::to_string(busiest->pid) + ")" : "") + " is busy " +
                                markBusy(pct(busiest->busyPct), *busiest) + "%" +
                                (busyRange(*busiest).empty() ? "" : " (" + busyRange(*busiest) + "%)") + " of the " +
                                formatNs(wall) + " wall";
        const uint64_t idle = busiest->activeNs > busiest->busyNs ? busiest->activeNs - busiest->busyNs : 0;
        const bool waiting = idle && busiest->waitingNs * 2 >= idle;
        bound = busiest->busyPct >= 90 ? "GPU-bound: " + gpu + ": its own work sets the pace (the Kernels table says which)."
                : waiting ? "Waiting for work: " + gpu + "; for " + formatNs(busiest->waitingNs) +
                                " of the rest the program itself was idle (blocked between requests), which no change to "
                                "its GPU use would shorten."
                          : "Host-bound: " + gpu + "; the rest of the time it waits for the host.";
    }
    out += wrap(bound, " ");
    criticalPath(out, r);
    std::vector<const Finding*> act;
    for (const Finding& f : r.findings)
        if (f.estimatedSavingsNs && act.size() < 3) act.push_back(&f);
    size_t memory = 0;
    for (const Finding& f : r.findings)
        if (!f.estimatedSavingsNs && f.severity == "high" && memory < 2) act.push_back(&f), ++memory;
    if (act.empty()) {
        out += wrap(r.findings.empty() ? "Nothing to change: no finding." : "No finding claims a saving; see the findings below.", " ");
        return;
    }
    out += wrap("What to change first (each fix's saving alone: savings of several fixes do not add):", " ");
    size_t rank = 0;
    for (const Finding* f : act) {
        std::string line = std::to_string(++rank) + ". " + severityText(st, f->severity) + " " + st.bold() + f->rule + st.reset();
        if (f->estimatedSavingsNs) {
            line += std::string(f->savingsBound == "at_most" ? "  at most " : f->savingsBound == "at_least" ? "  at least " : "  ~") +
                    formatNs(f->estimatedSavingsNs);
            if (wall) line += " (" + pct(100.0 * double(f->estimatedSavingsNs) / double(wall)) + "% of the wall)";
        }
        const std::string advice = adviceOf(f->rule);
        if (!advice.empty()) line += ": " + advice;
        if (!f->callsites.empty()) line += ", at " + siteText(r, f->callsites.front());
        if (!f->overlaps.empty()) line += " (the same calls as " + joinRules(f->overlaps) + ")";
        out += wrap(line, "  ", "     ");
    }
}

void notes(std::string& out, const Report& r, const Style& st)
{
    if (r.notes.empty()) return;
    out += heading(st, "Notes (how to read these figures)");
    for (const std::string& n : r.notes) out += st.yellow() + wrap("note: " + n, " ") + st.reset();
}

std::string renderText(const Report& r, const TextOptions& options)
{
    const WidthScope columns(options.width);
    const Style st{options.color};
    std::string out;
    uint64_t wall = 0, api = 0;
    for (const ProcessSummary& p : r.processes) {
        wall = std::max(wall, p.wallNs);
        api += p.cudaApiNs;
    }
    std::string head = "gpuspy report: " + num(r.processes.size()) + (r.processes.size() == 1 ? " process" : " processes") +
                       ", wall " + formatNs(wall) + ", " + formatNs(api) + " in CUDA calls";
    for (const DeviceSummary& d : r.devices)
        head += ", GPU " + std::to_string(d.id) + (r.processes.size() > 1 ? " (pid " + std::to_string(d.pid) + ")" : "") +
                " busy " + markBusy(pct(d.busyPct), d) + "%" + (busyRange(d).empty() ? "" : " (" + busyRange(d) + "%)");
    out += st.bold() + wrap(head, "") + st.reset();
    if (!r.notes.empty())
        out += wrap(std::to_string(r.notes.size()) + (r.notes.size() == 1 ? " note" : " notes") +
                        " on how to read the figures: at the end.",
                    " ");
    verdict(out, r, st, wall);
    findings(out, r, st, options.verbose);
    overview(out, r, st);
    apis(out, r, st);
    transfers(out, r, st);
    kernels(out, r, st, options.verbose);
    hostFunctions(out, r, st);
    syncs(out, r, st);
    nvtx(out, r, st);
    collectivesSection(out, r, st);
    memorySection(out, r, st);
    captureWindows(out, r, st);
    sites(out, r, st);
    notes(out, r, st);
    return out;
}

}  // namespace gpuspy::collect
