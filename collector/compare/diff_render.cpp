// collector/compare/diff_render.cpp: the renderers of a ReportDiff: text for people (100 columns, the headline
// first, then findings and the tables) and JSON for tools (schema "gpuspy.diff/1", see the README).
#include "collector/analyze/internal.h"
#include "collector/compare/diff.h"
#include "collector/compare/significance.h"
#include "collector/report/report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace gpuspy::collect {

namespace {

using Json = nlohmann::ordered_json;
using detail::formatBytes;
using detail::formatNs;

// The end of a long command (its arguments tell runs apart, its directory seldom).
std::string clipLeft(const std::string& s, size_t n)
{
    return s.size() <= n ? s : "..." + s.substr(s.size() - (n - 3));
}

// A call-site label keeps its function and its file:line, and loses the middle.
std::string clipMiddle(const std::string& s, size_t n)
{
    if (s.size() <= n) return s;
    const size_t tail = (n - 3) / 2 + (n - 3) % 2, head = n - 3 - tail;
    return s.substr(0, head) + "..." + s.substr(s.size() - tail);
}

std::string clip(const std::string& s, size_t n)
{
    return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

// Words filled into lines of at most 100 columns, the later ones indented.
std::string wrapped(const std::string& text, const std::string& indent)
{
    std::string out, line;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(start, end - start);
        if (!line.empty() && line.size() + 1 + word.size() > 100) {
            out += line + "\n";
            line = indent;
        } else if (!line.empty() && line != indent) {
            line += ' ';
        }
        line += word;
        start = end + 1;
    }
    return out + line + "\n";
}

std::string signedWith(int64_t v, std::string (*format)(uint64_t))
{
    if (v == 0) return "0";
    return (v > 0 ? "+" : "-") + format(uint64_t(v > 0 ? v : -v));
}

std::string plain(uint64_t v) { return std::to_string(v); }

std::string change(const DiffPair& p)
{
    if (!p.changed()) return "";
    const double pct = p.pct();
    if (std::isinf(pct)) return "new";
    if (p.b == 0) return "gone";
    return fmt::format("{:+.1f}%", pct);
}

std::string busyText(const BusyFigure& f)
{
    std::string s = fmt::format("{:.1f}%", f.pct);
    if (f.basis == "estimated") s += fmt::format(" (estimate, {:.1f}-{:.1f}%)", f.pctLo, f.pctHi);
    else if (f.basis == "upper_bound") s += fmt::format(" (at most; {:.1f}-{:.1f}%)", f.pctLo, f.pctHi);
    return s;
}

// One figure as a line: name, A, B, delta and change.
std::string figureLine(const std::string& name, const DiffPair& p, std::string (*format)(uint64_t))
{
    return fmt::format("  {:<22} {:>14} {:>14} {:>14} {:>10}\n", name, format(p.a), format(p.b),
                       signedWith(p.delta(), format), change(p));
}

std::string side(bool present, uint64_t v, std::string (*format)(uint64_t))
{
    return present ? format(v) : "-";
}

void pairJson(const DiffPair& p, Json& out, const char* name)
{
    Json j{{"a", p.a}, {"b", p.b}, {"delta", p.delta()}};
    const double pct = p.pct();
    if (std::isinf(pct)) j["change_pct"] = nullptr;
    else j["change_pct"] = pct;
    out[name] = std::move(j);
}

Json busyJson(const BusyFigure& f)
{
    return Json{{"busy_ns", f.ns},         {"busy_ns_min", f.loNs},   {"busy_ns_max", f.hiNs},
                {"active_ns", f.activeNs}, {"busy_pct", f.pct},       {"busy_pct_min", f.pctLo},
                {"busy_pct_max", f.pctHi}, {"busy_basis", f.basis}};
}

}  // namespace

std::string renderDiffText(const ReportDiff& d, const std::string& nameA, const std::string& nameB, size_t top)
{
    std::string out = fmt::format("gpuspy diff\n  A: {}\n  B: {}\n\n", nameA, nameB);
    const HeadlineDiff& h = d.headline;
    out += fmt::format("  {:<22} {:>14} {:>14} {:>14} {:>10}\n", "", "A", "B", "delta", "change");
    out += figureLine("wall", h.wallNs, formatNs);
    out += figureLine("CUDA API time", h.cudaApiNs, formatNs);
    out += figureLine("CUDA calls", h.calls, plain);
    out += figureLine("kernel launches", h.launches, plain);
    if (h.graphLaunches.a || h.graphLaunches.b) out += figureLine("graph launches", h.graphLaunches, plain);
    if (h.hostFunctions.a || h.hostFunctions.b) out += figureLine("host functions", h.hostFunctions, plain);
    out += figureLine("bytes transferred", h.transferBytes, formatBytes);
    out += figureLine("blocked in syncs", h.syncBlockedNs, formatNs);
    if (h.memoryPeakBytes.a || h.memoryPeakBytes.b) out += figureLine("GPU memory peak", h.memoryPeakBytes, formatBytes);
    if (h.leakedBytes.a || h.leakedBytes.b) out += figureLine("GPU memory leaked", h.leakedBytes, formatBytes);
    out += fmt::format("  {:<22} A {}\n  {:<22} B {}\n", "GPU busy", busyText(h.busyA), "", busyText(h.busyB));
    if (!d.changed()) {
        out += "\nno change: the two captures have the same figures\n";
        return out;
    }
    const std::string wallVerdict = spreadVerdict(d, "headline", "wall_ns");
    const SpreadDiff* wallRow = nullptr;
    for (const SpreadDiff& sp : d.spreads)
        if (sp.section == "headline" && sp.name == "wall_ns") wallRow = &sp;
    std::string loadNote;
    if (wallRow && wallRow->why == "host_load") {
        const bool bWaited = wallRow->cpuWaitB.median > wallRow->cpuWaitA.median;
        const uint64_t more = bWaited ? wallRow->cpuWaitB.median - wallRow->cpuWaitA.median
                                      : wallRow->cpuWaitA.median - wallRow->cpuWaitB.median;
        loadNote = fmt::format(": noise, the host's load: {}'s runs waited {} more for a CPU (median), as much as "
                               "the walls differ",
                               bWaited ? "B" : "A", formatNs(more));
    }
    if (h.wallNs.a && h.wallNs.b)
        out += fmt::format("\nB is {:.1f}% {} than A (wall){}\n", std::fabs(h.wallNs.pct()),
                           h.wallNs.b > h.wallNs.a ? "slower" : h.wallNs.b < h.wallNs.a ? "faster" : "as fast",
                           !loadNote.empty()          ? loadNote
                           : wallVerdict == "noise"   ? ": noise, the runs cannot tell the two apart"
                           : wallVerdict == "too_few" ? ": too few runs to tell (6 or more of each would)"
                           : wallVerdict.empty()      ? ""
                                                      : ": beyond the runs' noise");
    if (!d.spreads.empty()) {
        out += fmt::format("\nover the runs (A {} runs, B {} runs): median [min - max]; a change is beyond noise where a "
                           "rank test or Welch's t-test over the runs says so (p < {:g}) and the medians differ by {:g}% "
                           "or more\n", d.runsA, d.runsB, kAlpha, kMinChangePct);
        size_t n = 0;
        for (const SpreadDiff& sp : d.spreads) {
            if (sp.section != "headline" && n++ >= top) continue;
            const bool bytes = sp.name == "transfer_bytes", count = sp.name == "launches";
            auto f = [&](uint64_t v) { return bytes ? formatBytes(v) : count ? std::to_string(v) : formatNs(v); };
            auto range = [&](const Spread& x) { return fmt::format("{} [{} - {}]", f(x.median), f(x.min), f(x.max)); };
            static const std::map<std::string, std::string> kLabels = {
                {"wall_ns", "wall"},          {"cuda_api_ns", "CUDA API time"},       {"gpu_busy_ns", "GPU busy"},
                {"launches", "kernel launches"}, {"sync_blocked_ns", "blocked in syncs"}, {"transfer_bytes", "bytes transferred"}};
            const auto label = kLabels.find(sp.name);
            const std::string name = sp.section != "headline" ? sp.section.substr(0, sp.section.size() - 1) + " " + sp.name
                                     : label != kLabels.end()  ? label->second
                                                               : sp.name;
            out += fmt::format("  {:<28} {:>30} {:>30}  {}\n", clipMiddle(name, 28), range(sp.a), range(sp.b),
                               sp.why == "host_load"     ? "noise (the host's load)"
                               : sp.verdict == "noise"   ? "noise"
                               : sp.verdict == "too_few" ? "too few runs to tell"
                               : sp.verdict == "lower"   ? "lower (beyond noise)"
                                                         : "higher (beyond noise)");
            if (sp.cpuWaitKnown)
                out += fmt::format("  {:<28} {:>30} {:>30}\n", "  waiting for a CPU", range(sp.cpuWaitA), range(sp.cpuWaitB));
        }
    }

    if (!d.findings.empty()) {
        out += "\nfindings (estimated savings A -> B)\n";
        for (const FindingDiff& f : d.findings) {
            const char* boundA = f.boundA == "at_most" ? "at most " : f.boundA == "at_least" ? "at least " : "";
            const char* boundB = f.boundB == "at_most" ? "at most " : f.boundB == "at_least" ? "at least " : "";
            std::string a = f.status == "new" ? "-" : boundA + formatNs(f.savingsNs.a);
            std::string b = f.status == "resolved" ? "-" : boundB + formatNs(f.savingsNs.b);
            out += fmt::format("  {:<9} {:<24} {:>16} -> {:<16} {}\n", f.status, clip(f.rule, 24), a, b,
                               f.status == "changed" && f.count.changed() ? fmt::format("calls {} -> {}", f.count.a, f.count.b) : "");
        }
    }

    const bool severalProcesses =
        d.processes.size() > 1 || std::any_of(d.processes.begin(), d.processes.end(), [](const ProcessDiff& p) {
            return !p.inA || !p.inB || !p.commandB.empty();
        });
    if (severalProcesses) {
        const bool ranks = std::any_of(d.processes.begin(), d.processes.end(), [](const ProcessDiff& p) { return p.rank >= 0; });
        out += ranks ? "\nprocesses (paired by rank)           wall A         wall B          delta   API time delta\n"
                     : "\nprocesses (paired by command)        wall A         wall B          delta   API time delta\n";
        for (const ProcessDiff& p : d.processes)
            out += fmt::format("  {:<30} {:>14} {:>14} {:>14} {:>16}\n",
                               p.rank >= 0 ? fmt::format("r{} ", p.rank) + clipLeft(p.command, 26 - std::to_string(p.rank).size())
                                           : clipLeft(p.command, 30),
                               side(p.inA, p.wallNs.a, formatNs), side(p.inB, p.wallNs.b, formatNs),
                               signedWith(p.wallNs.delta(), formatNs), signedWith(p.cudaApiNs.delta(), formatNs))
                   + (p.commandB.empty() ? "" : fmt::format("    B ran {}\n", clipLeft(p.commandB, 90)));
    }

    if (!d.transfers.empty()) {
        out += "\ntransfers by kind         count A count B    bytes A    bytes B  host time A -> B\n";
        size_t n = 0;
        const size_t total = d.transfers.size();
        for (const TransferDiff& t : d.transfers) {
            if (n++ == top) {
                out += fmt::format("  ... {} more (--top)\n", total - top);
                break;
            }
            out += fmt::format("  {:<22} {:>7} {:>7} {:>10} {:>10} {:>9} -> {:<9} {}\n",
                               clip(t.direction + " " + t.hostMemory + " " + t.mode, 22), side(t.inA, t.count.a, plain),
                               side(t.inB, t.count.b, plain), side(t.inA, t.bytes.a, formatBytes),
                               side(t.inB, t.bytes.b, formatBytes), side(t.inA, t.hostNs.a, formatNs),
                               side(t.inB, t.hostNs.b, formatNs), change(t.hostNs));
        }
    }

    if (!d.syncs.empty()) {
        out += "\nblocked time by sync kind   calls A  calls B       blocked A -> B\n";
        for (const SyncKindDiff& s : d.syncs)
            out += fmt::format("  {:<24} {:>8} {:>8} {:>14} -> {:<14} {}\n", s.kind, side(s.inA, s.count.a, plain),
                               side(s.inB, s.count.b, plain), side(s.inA, s.blockedNs.a, formatNs),
                               side(s.inB, s.blockedNs.b, formatNs), change(s.blockedNs));
    }

    if (!d.kernels.empty()) {
        out += "\nkernels                            launches A -> B          GPU time A -> B\n";
        size_t n = 0;
        const size_t total = d.kernels.size();
        for (const KernelDiff& k : d.kernels) {
            if (n++ == top) {
                out += fmt::format("  ... {} more (--top)\n", total - top);
                break;
            }
            const std::string ga = (k.estimatedA ? "~" : "") + side(k.inA, k.gpuNs.a, formatNs);
            const std::string gb = (k.estimatedB ? "~" : "") + side(k.inB, k.gpuNs.b, formatNs);
            out += fmt::format("  {:<30} {:>9} -> {:<9} {:>11} -> {:<11} {}\n", clip(k.name, 30),
                               side(k.inA, k.launches.a, plain), side(k.inB, k.launches.b, plain), ga, gb,
                               change(k.gpuNs));
        }
    }

    if (!d.callsites.empty()) {
        out += "\ncall sites                                            calls A -> B    host time A -> B\n";
        size_t n = 0;
        const size_t total = d.callsites.size();
        for (const CallSiteDiff& c : d.callsites) {
            if (n++ == top) {
                out += fmt::format("  ... {} more (--top)\n", total - top);
                break;
            }
            out += fmt::format("  {:<8} {:<40} {:>6} -> {:<6} {:>9} -> {:<9} {}\n", c.category, clipMiddle(c.label, 40),
                               side(c.inA, c.count.a, plain), side(c.inB, c.count.b, plain),
                               side(c.inA, c.ns.a, formatNs), side(c.inB, c.ns.b, formatNs), change(c.ns));
        }
    }

    if (!d.notes.empty()) out += "\n";
    for (const std::string& note : d.notes) out += wrapped("note: " + note, "      ");
    return out;
}

Json diffJson(const ReportDiff& d, const std::string& nameA, const std::string& nameB)
{
    Json j;
    j["schema"] = d.schema;
    j["a"] = nameA;
    j["b"] = nameB;
    j["changed"] = d.changed();
    if (!d.clocksA.empty() || !d.clocksB.empty()) {
        // A side of several captures read as one run: each capture's place on its side's clock.
        Json clocks = Json::object();
        for (const auto& [side, list] : {std::pair{"a", &d.clocksA}, std::pair{"b", &d.clocksB}}) {
            Json& entries = clocks[side] = Json::array();
            for (const ClockAlignment& c : *list) entries.push_back(clockAlignmentJson(c));
        }
        j["clock_alignment"] = std::move(clocks);
    }
    const HeadlineDiff& h = d.headline;
    Json head = Json::object();
    pairJson(h.wallNs, head, "wall_ns");
    pairJson(h.cudaApiNs, head, "cuda_api_ns");
    pairJson(h.calls, head, "calls");
    pairJson(h.launches, head, "launches");
    pairJson(h.graphLaunches, head, "graph_launches");
    pairJson(h.hostFunctions, head, "host_functions");
    pairJson(h.transferBytes, head, "transfer_bytes");
    pairJson(h.syncBlockedNs, head, "sync_blocked_ns");
    pairJson(h.memoryPeakBytes, head, "memory_peak_bytes");
    pairJson(h.leakedBytes, head, "leaked_bytes");
    head["gpu_busy"] = Json{{"a", busyJson(h.busyA)}, {"b", busyJson(h.busyB)}};
    j["headline"] = std::move(head);

    Json procs = Json::array();
    for (const ProcessDiff& p : d.processes) {
        Json x{{"command", p.command}, {"command_b", p.commandB}, {"in_a", p.inA}, {"in_b", p.inB}, {"pid_a", p.pidA}, {"pid_b", p.pidB}};
        if (p.rank >= 0) x["rank"] = p.rank;
        pairJson(p.wallNs, x, "wall_ns");
        pairJson(p.cudaApiNs, x, "cuda_api_ns");
        pairJson(p.calls, x, "calls");
        x["gpu_busy"] = Json{{"a", busyJson(p.busyA)}, {"b", busyJson(p.busyB)}};
        procs.push_back(std::move(x));
    }
    j["processes"] = std::move(procs);

    Json transfers = Json::array();
    for (const TransferDiff& t : d.transfers) {
        Json x{{"direction", t.direction}, {"host_memory", t.hostMemory}, {"mode", t.mode}, {"in_a", t.inA}, {"in_b", t.inB}};
        pairJson(t.count, x, "count");
        pairJson(t.bytes, x, "bytes");
        pairJson(t.hostNs, x, "host_ns");
        pairJson(t.gpuNs, x, "gpu_ns");
        transfers.push_back(std::move(x));
    }
    j["transfers"] = std::move(transfers);

    Json syncs = Json::array();
    for (const SyncKindDiff& s : d.syncs) {
        Json x{{"kind", s.kind}, {"in_a", s.inA}, {"in_b", s.inB}};
        pairJson(s.count, x, "count");
        pairJson(s.blockedNs, x, "blocked_ns");
        syncs.push_back(std::move(x));
    }
    j["syncs"] = std::move(syncs);

    Json kernels = Json::array();
    for (const KernelDiff& k : d.kernels) {
        Json x{{"name", k.name}, {"in_a", k.inA}, {"in_b", k.inB}, {"gpu_ns_estimated_a", k.estimatedA},
               {"gpu_ns_estimated_b", k.estimatedB}};
        pairJson(k.launches, x, "launches");
        pairJson(k.gpuNs, x, "gpu_ns");
        pairJson(k.medianGpuNs, x, "median_gpu_ns");
        pairJson(k.launchHostNs, x, "launch_host_ns");
        kernels.push_back(std::move(x));
    }
    j["kernels"] = std::move(kernels);

    Json sites = Json::array();
    for (const CallSiteDiff& c : d.callsites) {
        Json x{{"category", c.category}, {"label", c.label}, {"in_a", c.inA}, {"in_b", c.inB}};
        pairJson(c.count, x, "count");
        pairJson(c.ns, x, "host_ns");
        sites.push_back(std::move(x));
    }
    j["callsites"] = std::move(sites);

    Json findings = Json::array();
    for (const FindingDiff& f : d.findings) {
        Json x{{"rule", f.rule},           {"status", f.status},   {"severity_a", f.severityA},
               {"severity_b", f.severityB}, {"savings_bound_a", f.boundA}, {"savings_bound_b", f.boundB}};
        pairJson(f.savingsNs, x, "estimated_savings_ns");
        pairJson(f.count, x, "count");
        pairJson(f.ns, x, "ns");
        findings.push_back(std::move(x));
    }
    j["findings"] = std::move(findings);
    j["notes"] = d.notes;
    j["runs"] = {{"a", d.runsA}, {"b", d.runsB}};
    Json spreads = Json::array();
    auto range = [](const Spread& x) {
        return Json{{"median", x.median}, {"min", x.min}, {"max", x.max}, {"runs", x.runs}};
    };
    for (const SpreadDiff& sp : d.spreads) {
        Json row = {{"section", sp.section}, {"name", sp.name}, {"a", range(sp.a)}, {"b", range(sp.b)},
                    {"verdict", sp.verdict}};
        if (sp.cpuWaitKnown) row["cpu_wait"] = {{"a", range(sp.cpuWaitA)}, {"b", range(sp.cpuWaitB)}};
        if (!sp.why.empty()) row["why"] = sp.why;
        spreads.push_back(std::move(row));
    }
    j["spread"] = std::move(spreads);
    return j;
}

std::string renderDiffJson(const ReportDiff& d, const std::string& nameA, const std::string& nameB)
{
    return diffJson(d, nameA, nameB).dump(2) + "\n";
}

}  // namespace gpuspy::collect
