// collector/cli/cmd_report.cpp: `gpuspy report FILE`, the report of a capture in text, JSON or CSV.
#include "collector/cli/cli.h"

#include "collector/ingest/capture_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy report FILE [FILE...] [--format text|json|csv] [--top N] [--process PID] [--run K]\n"
    "                     [--by-launch-config] [--width N] [--verbose]\n"
    "\n"
    "The report of a capture: made by `gpuspy record` or `gpuspy collect`, or a file the shim wrote\n"
    "alone (gpuspy-<pid>.gspy). A damaged file is reported up to the damage, which is then named on\n"
    "stderr (exit status 1). Several FILEs (the ranks or nodes of one job, one capture each) are read as\n"
    "one run: each put on the first's clock by its wall-clock pair, refined by the ends of the\n"
    "collectives they share; the notes say how and within what error.\n"
    "\n"
    "options:\n"
    "  --format F      text (default; colour on a terminal unless NO_COLOR is set), json or csv\n"
    "  --top N         rows per table and call sites per finding (default 10)\n"
    "  --process PID   only this process of the capture\n"
    "  --run K         only run K (1-based) of a capture of repeated runs (record --repeat); without it\n"
    "                  such a capture is reported as its run of median wall time with every figure's\n"
    "                  spread over the runs (csv: a first line says which run)\n"
    "  --by-launch-config  a Kernels row per kernel and launch configuration (grid and block): which size\n"
    "                  of an operator is slow\n"
    "  --width N       text: lay out for N columns (default: COLUMNS, else the terminal's width, else 100)\n"
    "  --verbose       text: every finding's raw evidence and the kernels' full names (template arguments)\n"
    "  -h, --help      this text\n";

}  // namespace

int runReport(int argc, char** argv)
{
    ArgReader args("report", argc, argv);
    std::string file, format = "text", value;
    std::vector<std::string> files;
    long top = 10, pid = -1, run = 0, columns = 0;
    bool byConfig = false, verbose = false;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--format"}, format)) {
            checkReportFormat("report", format);
            continue;
        }
        if (args.value({"--top"}, value)) {
            top = parseNumber("gpuspy report: --top", value, 1, 1000000);
            continue;
        }
        if (args.value({"--run"}, value)) {
            run = parseNumber("gpuspy report: --run", value, 1, 1000000);
            continue;
        }
        if (args.value({"--width"}, value)) {
            columns = parseNumber("gpuspy report: --width", value, 60, 400);
            continue;
        }
        if (args.flag({"--verbose", "-v"})) {
            verbose = true;
            continue;
        }
        if (args.flag({"--by-launch-config"})) {
            byConfig = true;
            continue;
        }
        if (args.value({"--process"}, value)) {
            pid = parseNumber("gpuspy report: --process", value, 0, 0x7fffffff);
            continue;
        }
        args.fileOperands(files);
    }
    if (files.empty()) throw UsageError("gpuspy report: which file? (usage: gpuspy report FILE)");
    if (files.size() > 1 && run > 0)
        throw UsageError("gpuspy report: --run takes one capture (several captures are read as one run)");
    file = files.front();

    if (format != "text" && !reportBuilt()) {
        fmt::print(stderr, "gpuspy report: the report is not built in this gpuspy (collector/analyze, collector/report)\n");
        return kExitFailure;
    }
    ReportRequest request;
    request.format = format;
    request.top = size_t(top);
    request.pid = int(pid);
    request.run = run;
    request.byLaunchConfig = byConfig;
    request.color = stdoutIsTerminal();
    request.width = columns ? size_t(columns) : terminalWidth();
    request.verbose = verbose;
    ReportSource source;
    std::string out;
    try {
        out = reportOfCaptures(files, request, source);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy report: {}\n", e.what());
        return kExitFailure;
    }
    const Capture& capture = source.capture;
    const ReadInfo& info = source.info;
    if (pid >= 0 && std::none_of(capture.processes.begin(), capture.processes.end(),
                                 [&](const Process& p) { return p.pid == uint32_t(pid); })) {
        std::string have;
        for (const Process& p : capture.processes) have += (have.empty() ? "" : ", ") + std::to_string(p.pid);
        fmt::print(stderr, "gpuspy report: {}: no process {} in this capture (it has: {})\n", file, pid,
                   have.empty() ? "none" : have);
        return kExitFailure;
    }
    if (capture.processes.empty() && info.damage.empty()) {
        // Not "No findings", as if the program were healthy: there is nothing to judge.
        fmt::print(stderr, "gpuspy report: {}: the capture holds no process: no process made a CUDA call gpuspy saw{}\n",
                   file, run > 0 ? fmt::format(" in run {}", run) : std::string());
        return kExitFailure;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    if (!info.damage.empty()) {
        fmt::print(stderr, "gpuspy report: {}: {}; reported what came before it\n", file, info.damage);
        return kExitFailure;
    }
    return 0;
}

}  // namespace gpuspy::collect::cli
