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
    "\n"
    "Two captures side by side (A: before, B: after a change): wall, CUDA API time, GPU busy, launches,\n"
    "bytes by transfer kind, blocked time by sync kind, kernels (matched by name), call sites (matched by\n"
    "their frame: function, file and line, else module and offset), and the findings resolved, new or\n"
    "changed. Processes are paired by command; the wall of a capture is its longest process's. A GPU busy\n"
    "figure that is an estimate or an upper bound says so, with its interval. Captures of repeated runs\n"
    "(record --repeat N) are compared by their runs of median wall, and each figure's range over the runs\n"
    "is shown: a change whose ranges overlap is noise, and --fail-if-slower does not trip on noise.\n"
    "\n"
    "options:\n"
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
// The report of one capture, or an InputError: a diff of a capture read only in part would pass off
// the damage as a change.
Report loadReport(const std::string& path, size_t top, RunsSummary& runs)
{
    ReportRequest request;
    request.top = top;
    ReportSource source;
    Report report;
    try {
        report = analyzeCapture(path, request, source);
    } catch (const std::exception& e) {
        throw InputError(fmt::format("gpuspy diff: {}", e.what()));
    }
    if (!source.info.damage.empty())
        throw InputError(fmt::format("gpuspy diff: {}: {}; diff compares whole captures only "
                                     "(gpuspy report {} shows what came before the damage)",
                                     path, source.info.damage, path));
    if (source.capture.processes.empty())
        throw InputError(fmt::format("gpuspy diff: {}: the capture holds no process (did the program make any CUDA "
                                     "call under gpuspy?)",
                                     path));
    runs = source.runs.count() ? std::move(source.runs) : summarizeRuns({runFigures(report)});
    return report;
}
#endif

}  // namespace

#if GPUSPY_HAVE_REPORT
std::string diffJsonOfCaptures(const std::string& pathA, const std::string& pathB, size_t top)
{
    RunsSummary runsA, runsB;
    const Report a = loadReport(pathA, top, runsA);
    const Report b = loadReport(pathB, top, runsB);
    ReportDiff d = diffReports(a, b);
    if (runsA.count() > 1 || runsB.count() > 1) addRunSpreads(d, runsA, runsB);
    return renderDiffJson(d, pathA, pathB);
}
#endif

int runDiff(int argc, char** argv)
{
    ArgReader args("diff", argc, argv);
    std::string format = "text", value;
    std::vector<std::string> files;
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
    if (files.size() != 2)
        throw UsageError(fmt::format("gpuspy diff: two captures, please (usage: gpuspy diff A.gspy B.gspy); got {}",
                                     files.size()));
#if GPUSPY_HAVE_REPORT
    Report a, b;
    RunsSummary runsA, runsB;
    try {
        a = loadReport(files[0], size_t(top), runsA);
        b = loadReport(files[1], size_t(top), runsB);
    } catch (const InputError& e) {
        fmt::print(stderr, "{}\n", e.what());
        return kExitUsage;
    }
    ReportDiff d = diffReports(a, b);
    if (runsA.count() > 1 || runsB.count() > 1) addRunSpreads(d, runsA, runsB);
    const std::string out =
        format == "json" ? renderDiffJson(d, files[0], files[1]) : renderDiffText(d, files[0], files[1], size_t(top));
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    if (failPct >= 0) {
        const double slower = wallSlowdownPct(d);
        const std::string verdict = spreadVerdict(d, "headline", "wall_ns");
        if (slower > failPct && verdict == "noise") {
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
