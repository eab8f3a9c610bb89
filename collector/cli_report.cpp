// collector/cli_report.cpp: `gpuspy report FILE`, the report of a capture in text, JSON or CSV.
#include "collector/cli.h"

#include "collector/capture_file.h"

#if GPUSPY_HAVE_REPORT
#include "collector/analyze.h"
#include "collector/report.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy report FILE [--format text|json|csv] [--top N] [--process PID]\n"
    "\n"
    "The report of a capture: made by `gpuspy record` or `gpuspy collect`, or a file the shim wrote\n"
    "alone (gpuspy-<pid>.gspy). A damaged file is reported up to the damage, which is then named on\n"
    "stderr (exit status 1).\n"
    "\n"
    "options:\n"
    "  --format F      text (default; colour on a terminal unless NO_COLOR is set), json or csv\n"
    "  --top N         rows per table and call sites per finding (default 10)\n"
    "  --process PID   only this process of the capture\n"
    "  -h, --help      this text\n";

}  // namespace

int runReport(int argc, char** argv)
{
    ArgReader args("report", argc, argv);
    std::string file, format = "text", value;
    long top = 10, pid = -1;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--format"}, format)) {
            if (format != "text" && format != "json" && format != "csv")
                throw UsageError("gpuspy report: --format is text, json or csv, not '" + format + "'");
            continue;
        }
        if (args.value({"--top"}, value)) {
            top = parseNumber("gpuspy report: --top", value, 1, 1000000);
            continue;
        }
        if (args.value({"--process"}, value)) {
            pid = parseNumber("gpuspy report: --process", value, 0, 0x7fffffff);
            continue;
        }
        args.fileOperand(file);
    }
    if (file.empty()) throw UsageError("gpuspy report: which file? (usage: gpuspy report FILE)");

#if GPUSPY_HAVE_REPORT
    // The report streams: the events go from the reader to the analysis and are not kept, so memory
    // does not grow with the capture.
    ReportOptions options;
    options.top = size_t(top);
    options.pid = int(pid);
    StreamAnalyzer analyzer(options);
    ReadOptions read;
    read.keepEvents = false;
    read.onRecord = [&](const Process& p, const wire::RecordView& v) { analyzer.onRecord(p, v); };
    read.onProcess = [&](const Process& p) { analyzer.onProcess(p); };
#else
    ReadOptions read;
#endif
    ReadInfo info;
    Capture capture;
    try {
        capture = readCapture(file, read, &info);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy report: {}\n", e.what());
        return kExitFailure;
    }
    if (pid >= 0 && std::none_of(capture.processes.begin(), capture.processes.end(),
                                 [&](const Process& p) { return p.pid == uint32_t(pid); })) {
        std::string have;
        for (const Process& p : capture.processes) have += (have.empty() ? "" : ", ") + std::to_string(p.pid);
        fmt::print(stderr, "gpuspy report: {}: no process {} in this capture (it has: {})\n", file, pid,
                   have.empty() ? "none" : have);
        return kExitFailure;
    }

#if GPUSPY_HAVE_REPORT
    const auto report = analyzer.finish(capture.badStreams);
    std::string out;
    if (format == "json")
        out = renderJson(report);
    else if (format == "csv")
        out = renderCsv(report);
    else
        out = renderText(report, stdoutIsTerminal());
    std::fwrite(out.data(), 1, out.size(), stdout);
    if (!out.empty() && out.back() != '\n') std::fputc('\n', stdout);
#else
    if (format != "text") {
        fmt::print(stderr, "gpuspy report: the report is not built in this gpuspy (collector/analyze, collector/report)\n");
        return kExitFailure;
    }
    fmt::print("{}", textReport(capture, false));
#endif
    std::fflush(stdout);
    if (!info.damage.empty()) {
        fmt::print(stderr, "gpuspy report: {}: {}; reported what came before it\n", file, info.damage);
        return kExitFailure;
    }
    return 0;
}

}  // namespace gpuspy::collect::cli
