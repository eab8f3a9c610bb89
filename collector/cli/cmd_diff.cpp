// collector/cli/cmd_diff.cpp: `gpuspy diff A B`, two captures side by side, and a regression gate for CI
// (--fail-if-slower PERCENT on the wall time).
#include "collector/cli/cli.h"

#if GPUSPY_HAVE_REPORT
#include "collector/analyze/analyze.h"
#include "collector/compare/diff.h"
#endif

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy diff A.gspy B.gspy [--format text|json] [--top N] [--fail-if-slower PERCENT]\n"
    "       gpuspy diff --before A1.gspy [A2.gspy...] --after B1.gspy [B2.gspy...] [options]\n"
    "\n"
    "Two captures side by side (A: before, B: after a change): wall, CUDA API time, GPU busy, launches,\n"
    "bytes by transfer kind, blocked time by sync kind, kernels (matched by name), call sites (matched by\n"
    "their frame: function, file and line, else module and offset), and the findings resolved, new or\n"
    "changed. Processes are paired by rank and program where their launcher gave ranks, else by command;\n"
    "the wall of a capture is its longest process's. A GPU busy figure that is an estimate or an upper bound\n"
    "says so, with its interval. Captures of repeated runs (record --repeat N) are compared by their runs\n"
    "of median wall, and each figure's range over the runs is shown: a change whose ranges overlap is\n"
    "noise, and --fail-if-slower does not trip on noise.\n"
    "\n"
    "A job of several ranks or nodes, one capture each: --before names the captures of the run before the\n"
    "change, --after those of the run after it (each list up to the next option). Each side is read as one\n"
    "run, as `gpuspy report A1.gspy A2.gspy ...` reads it (its captures put on its first's clock, by the\n"
    "wall-clock pairs, refined by the ends of the collectives they share; the notes say how, per side).\n"
    "\n"
    "options:\n"
    "  --before FILE...          the captures of the run before the change (with --after)\n"
    "  --after FILE...           the captures of the run after the change (with --before)\n"
    "  --format F                text (default) or json (schema gpuspy.diff/1)\n"
    "  --top N                   rows per table (default 10)\n"
    "  --fail-if-slower PERCENT  exit status 1 when B's wall time is more than PERCENT % above A's\n"
    "                            (a regression gate for CI); the comparison is printed first\n"
    "  -h, --help                this text\n"
    "\n"
    "exit status: 0, or 1 when --fail-if-slower trips, 2 for a bad command line or a capture that\n"
    "cannot be compared (missing, not a capture, damaged, or holding no process)\n";

// A capture that cannot be compared: one line, exit status 2 (like a bad command line: the input is
// wrong, not the program it measured).
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

#if GPUSPY_HAVE_REPORT
// The report of one side (one capture, or several read as one run), or an InputError: a diff of a
// capture read only in part would pass off the damage as a change.
Report loadReport(const std::vector<std::string>& paths, size_t top, RunsSummary& runs)
{
    ReportRequest request;
    request.top = top;
    ReportSource source;
    Report report;
    try {
        report = analyzeCaptures(paths, request, source);
    } catch (const std::exception& e) {
        throw InputError(fmt::format("gpuspy diff: {}", e.what()));
    }
    const std::string& path = paths.front();
    if (!source.info.damage.empty() && paths.size() == 1)
        throw InputError(fmt::format("gpuspy diff: {}: {}; diff compares whole captures only "
                                     "(gpuspy report {} shows what came before the damage)",
                                     path, source.info.damage, path));
    if (!source.info.damage.empty())  // several: the damage names its capture
        throw InputError(fmt::format("gpuspy diff: {}; diff compares whole captures only", source.info.damage));
    if (source.capture.processes.empty())
        throw InputError(fmt::format("gpuspy diff: {}: the capture{} no process (did the program make any CUDA "
                                     "call under gpuspy?)",
                                     diffSideName(paths), paths.size() == 1 ? " holds" : "s hold"));
    runs = source.runs.count() ? std::move(source.runs) : summarizeRuns({runFigures(report)});
    return report;
}
#endif

}  // namespace

bool readDiffSide(const char* command, ArgReader& args, DiffSides& sides)
{
    std::vector<std::string>* side = args.flag({"--before"}) ? &sides.a : args.flag({"--after"}) ? &sides.b : nullptr;
    if (!side) return false;
    const size_t before = side->size();
    while (!args.isOption() && !args.done()) side->push_back(args.positional());
    if (side->size() == before)
        throw UsageError(fmt::format("gpuspy {}: --before and --after each name one capture or more (a capture "
                                     "named like an option: ./-x.gspy)",
                                     command));
    return true;
}

void settleDiffSides(const std::string& command, const std::vector<std::string>& positional, DiffSides& sides)
{
    const std::string usage = command == "diff" ? "gpuspy diff A.gspy B.gspy, or gpuspy diff --before A1.gspy "
                                                  "A2.gspy ... --after B1.gspy B2.gspy ..."
                                                : "gpuspy view --diff A.gspy B.gspy, or gpuspy view --diff --before "
                                                  "A1.gspy ... --after B1.gspy ...";
    if (!sides.a.empty() || !sides.b.empty()) {
        if (!positional.empty())
            throw UsageError(fmt::format("gpuspy {}: '{}': with --before and --after every capture goes in one of "
                                         "them (usage: {})",
                                         command, positional.front(), usage));
        if (sides.a.empty() || sides.b.empty())
            throw UsageError(fmt::format("gpuspy {}: {} without {} (usage: {})", command,
                                         sides.a.empty() ? "--after" : "--before", sides.a.empty() ? "--before" : "--after",
                                         usage));
        return;
    }
    if (positional.size() != 2)
        throw UsageError(fmt::format("gpuspy {}: two captures, please (usage: {}); got {}{}", command, usage,
                                     positional.size(),
                                     positional.size() > 2 ? " (the captures of several ranks per side go after "
                                                             "--before and --after)"
                                                           : ""));
    sides.a = {positional[0]};
    sides.b = {positional[1]};
}

std::string diffSideName(const std::vector<std::string>& paths)
{
    std::string name;
    for (const std::string& p : paths) name += (name.empty() ? "" : ", ") + p;
    return name;
}

#if GPUSPY_HAVE_REPORT
std::string diffJsonOfCaptures(const DiffSides& sides, size_t top)
{
    RunsSummary runsA, runsB;
    const Report a = loadReport(sides.a, top, runsA);
    const Report b = loadReport(sides.b, top, runsB);
    ReportDiff d = diffReports(a, b);
    if (runsA.count() > 1 || runsB.count() > 1) addRunSpreads(d, runsA, runsB);
    return renderDiffJson(d, diffSideName(sides.a), diffSideName(sides.b));
}
#endif

int runDiff(int argc, char** argv)
{
    ArgReader args("diff", argc, argv);
    std::string format = "text", value;
    std::vector<std::string> files;
    DiffSides sides;
    long top = 10;
    double failPct = -1;
    bool endOfOptions = false;
    while (!args.done()) {
        if (!endOfOptions) {
            if (args.flag({"-h", "--help"})) {
                fmt::print("{}", kUsage);
                return 0;
            }
            if (args.flag({"--"})) {
                endOfOptions = true;
                continue;
            }
            if (readDiffSide("diff", args, sides)) continue;
            if (args.value({"--format"}, format)) {
                if (format != "text" && format != "json")
                    throw UsageError(fmt::format("gpuspy diff: --format {}: text or json", format));
                continue;
            }
            if (args.value({"--top"}, value)) {
                top = parseNumber("gpuspy diff: --top", value, 1, 1000000);
                continue;
            }
            if (args.value({"--fail-if-slower"}, value)) {
                char* end = nullptr;
                failPct = std::strtod(value.c_str(), &end);
                if (value.empty() || *end != '\0' || !(failPct >= 0) || failPct > 1e9)
                    throw UsageError(fmt::format("gpuspy diff: --fail-if-slower {}: a percentage, 0 or more", value));
                continue;
            }
            if (args.isOption()) args.unknown();
        }
        files.push_back(args.positional());
    }
    settleDiffSides("diff", files, sides);
#if GPUSPY_HAVE_REPORT
    Report a, b;
    RunsSummary runsA, runsB;
    try {
        a = loadReport(sides.a, size_t(top), runsA);
        b = loadReport(sides.b, size_t(top), runsB);
    } catch (const InputError& e) {
        fmt::print(stderr, "{}\n", e.what());
        return kExitUsage;
    }
    ReportDiff d = diffReports(a, b);
    if (runsA.count() > 1 || runsB.count() > 1) addRunSpreads(d, runsA, runsB);
    const std::string nameA = diffSideName(sides.a), nameB = diffSideName(sides.b);
    const std::string out =
        format == "json" ? renderDiffJson(d, nameA, nameB) : renderDiffText(d, nameA, nameB, size_t(top));
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    if (failPct >= 0) {
        const double slower = wallSlowdownPct(d);
        const std::string verdict = spreadVerdict(d, "headline", "wall_ns");
        const SpreadDiff* wallRow = nullptr;
        for (const SpreadDiff& sp : d.spreads)
            if (sp.section == "headline" && sp.name == "wall_ns") wallRow = &sp;
        if (slower > failPct && verdict == "noise" && wallRow && wallRow->why == "host_load") {
            fmt::print(stderr, "gpuspy diff: B's median wall is {:.1f}% above A's, but B's runs waited longer for a CPU "
                               "(the host was busier), as much as the walls differ: not a regression\n", slower);
        } else if (slower > failPct && verdict == "noise") {
            fmt::print(stderr, "gpuspy diff: B's median wall is {:.1f}% above A's, but the runs cannot tell it from noise: "
                               "not a regression\n", slower);
        } else if (slower > failPct && verdict == "too_few") {
            fmt::print(stderr, "gpuspy diff: B's median wall is {:.1f}% above A's, but {} and {} runs are too few to tell it "
                               "from noise (record --repeat 6 or more each): not failing\n",
                       slower, d.runsA, d.runsB);
        } else if (slower > failPct) {
            fmt::print(stderr, "gpuspy diff: B is {:.1f}% slower than A (wall {:.3f} ms -> {:.3f} ms), more than the "
                               "{:g}% allowed\n",
                       slower, double(d.headline.wallNs.a) / 1e6, double(d.headline.wallNs.b) / 1e6, failPct);
            return kExitFailure;
        }
    }
    return 0;
#else
    fmt::print(stderr, "gpuspy diff: the report is not built in this gpuspy (collector/analyze, collector/report)\n");
    return kExitFailure;
#endif
}

}  // namespace gpuspy::collect::cli
