// collector/cli/cmd_export.cpp: `gpuspy export FILE --format F`: the capture in the formats other tools
// open (a Perfetto / chrome://tracing trace, folded stacks) or the report's tables (CSV, JSON).
#include "collector/cli/cli.h"

#include "collector/export/common.h"
#include "collector/export/folded.h"
#include "collector/export/kineto.h"
#include "collector/export/pprof.h"
#include "collector/export/perfetto.h"

#if GPUSPY_HAVE_REPORT
#include "collector/analyze/analyze.h"
#include "collector/report/report.h"
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy export FILE [FILE...] --format perfetto|kineto|folded|pprof|csv|json [-o OUT] [-f] [--metric M]\n"
    "                     [--run K]\n"
    "\n"
    "The capture FILE in a format other tools open. Several FILEs (the ranks or nodes of one job, one\n"
    "capture each) are exported as one run, as `gpuspy report` reads them: each put on the first's clock\n"
    "(its wall-clock pair, refined by the collectives they share; stderr says how and within what error),\n"
    "every process its own track labelled with its host and rank; kineto: one directory holding a file\n"
    "per rank of every capture.\n"
    "\n"
    "formats:\n"
    "  perfetto   Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing: a track per host\n"
    "             thread (CUDA calls inside their NVTX ranges), a track per GPU stream (kernels, copies,\n"
    "             memsets on the host clock), arrows from each call to its GPU work, counters; every\n"
    "             process of the capture in one trace, each labelled with its NCCL rank where known\n"
    "  kineto     a directory of Chrome-trace JSON files in the form PyTorch's Kineto profiler writes,\n"
    "             one per rank (rank-R.pt.trace.json: its NCCL rank, or its order where it had no\n"
    "             communicator; one per device where one process drove several ranks), which Holistic\n"
    "             Trace Analysis loads as it is: TraceAnalysis(trace_dir=OUT)\n"
    "  folded     folded stacks for flamegraph.pl, inferno and speedscope (see --metric)\n"
    "  pprof      a gzipped profile.proto for go tool pprof, Pyroscope, Parca, Grafana: the host stacks\n"
    "             of the CUDA calls weighted by calls, cuda_host (default), blocked and gpu (ns)\n"
    "  csv, json  the report's tables, as `gpuspy report --format csv|json` prints them\n"
    "\n"
    "options:\n"
    "  --format F   perfetto, kineto, folded, pprof, csv or json (required)\n"
    "  -o OUT       write to OUT (default: FILE with the format's extension: .trace.json, .folded,\n"
    "               .pb.gz, .csv, .json; kineto: the directory FILE.kineto; several FILEs: the first's\n"
    "               name); '-' for standard output\n"
    "  -f, --force  overwrite OUT if it exists (kineto: the rank files in it)\n"
    "  --metric M   folded only: the weight of each stack:\n"
    "                 blocked   ns the host waited for the GPU (syncs, synchronous copies; default)\n"
    "                 transfer  bytes moved by copies and memsets\n"
    "                 launch    ns of host time spent launching kernels and graphs\n"
    "                 calls     number of CUDA calls\n"
    "  --run K      only run K (1-based) of a capture of repeated runs (record --repeat); without it the\n"
    "               runs are merged: each process is labelled with its run (perfetto: 'app (pid 12, run 2)';\n"
    "               folded: a root frame 'run 2'; csv: a first line; json: a note); one capture only\n"
    "               (several are one run)\n"
    "  -h, --help   this text\n";

std::string defaultOutput(const std::string& file, const std::string& format)
{
    std::string base = file;
    const size_t slash = base.rfind('/');
    const size_t dot = base.rfind('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) base.resize(dot);
    if (format == "perfetto") return base + ".trace.json";
    if (format == "folded") return base + ".folded";
    if (format == "pprof") return base + ".pb.gz";
    if (format == "kineto") return base + ".kineto";
    return base + "." + format;
}

// The Kineto-form files, one per rank, into the directory `dir` (made if it is not there), each written
// as soon as it is made.
int writeKinetoDirectory(const Capture& capture, const std::string& dir, bool force, const std::string& what, const ReadInfo& info)
{
    size_t made = 0;
    try {
        exporting::makeOutputDirectory(dir);
        made = exportKineto(capture, [&](KinetoFile&& f) {
            exporting::writeOutputFile(dir + "/" + f.name, f.json, force);
            fmt::print(stderr, "gpuspy: wrote {}/{} (rank {} of {}, pid {}{}: {} kernels, {} copies, {} memsets{}, {} calls)\n", dir,
                       f.name, f.rank.rank, f.rank.worldSize, capture.processes[f.rank.process].pid,
                       f.rank.devices.empty() ? std::string() : fmt::format(", device {}", fmt::join(f.rank.devices, ",")), f.kernels,
                       f.memcpys, f.memsets, f.estimated ? fmt::format(" ({} placed by estimate)", f.estimated) : std::string(), f.calls);
        });
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy export: {}\n", e.what());
        return kExitFailure;
    }
    if (made == 0) {
        fmt::print(stderr, "gpuspy export: {}no process did GPU work; no Kineto trace written\n", what);
        return kExitFailure;
    }
    if (!info.damage.empty()) {
        fmt::print(stderr, "gpuspy export: {}{}; exported what came before it\n", what, info.damage);
        return kExitFailure;
    }
    return 0;
}

}  // namespace

int runExport(int argc, char** argv)
{
    ArgReader args("export", argc, argv);
    std::string format, output, value, metricName = "blocked";
    std::vector<std::string> files;
    bool force = false, metricGiven = false;
    long run = 0;
    while (!args.done()) {
        if (args.value({"--run"}, value)) {
            run = parseNumber("gpuspy export: --run", value, 1, 1000000);
            continue;
        }
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--format"}, format)) {
            if (format != "perfetto" && format != "kineto" && format != "folded" && format != "pprof" && format != "csv" &&
                format != "json")
                throw UsageError("gpuspy export: --format is perfetto, kineto, folded, pprof, csv or json, not '" + format + "'");
            continue;
        }
        if (args.value({"-o", "--output"}, output)) continue;
        if (args.flag({"-f", "--force"})) {
            force = true;
            continue;
        }
        if (args.value({"--metric"}, metricName)) {
            metricGiven = true;
            continue;
        }
        args.fileOperands(files);
    }
    if (files.empty()) throw UsageError("gpuspy export: which file? (usage: gpuspy export FILE [FILE...] --format F)");
    if (files.size() > 1 && run > 0)
        throw UsageError("gpuspy export: --run takes one capture (several captures are exported as one run)");
    const std::string& file = files.front();
    if (format.empty()) throw UsageError("gpuspy export: which format? (--format perfetto, kineto, folded, pprof, csv or json)");
    FoldedMetric metric{};
    if (!parseFoldedMetric(metricName, metric))
        throw UsageError("gpuspy export: --metric is blocked, transfer, launch or calls, not '" + metricName + "'");
    if (metricGiven && format != "folded") throw UsageError("gpuspy export: --metric applies to --format folded only");
    if (output.empty()) output = defaultOutput(file, format);
    if (format == "kineto" && output == "-") throw UsageError("gpuspy export: --format kineto writes a directory, not standard output");

    ReadInfo info;
    Capture capture;
#if GPUSPY_HAVE_REPORT
    std::vector<ClockAlignment> clocks;
    std::vector<ClockAlignment>* clocksOut = &clocks;
#else
    std::vector<ClockAlignment>* clocksOut = nullptr;  // several captures are refused without the report code
#endif
    // What names the capture in a message: its file; several captures' messages name their file themselves.
    const std::string what = files.size() == 1 ? file + ": " : "";
    try {
        capture = readCapturesAsOne(files, {}, info, clocksOut);
    } catch (const std::exception& e) {
        // readCapture's errors name the file.
        fmt::print(stderr, "gpuspy export: {}\n", e.what());
        return kExitFailure;
    }
    try {
        selectRun(capture, run);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy export: {}: {}\n", file, e.what());
        return kExitFailure;
    }
#if GPUSPY_HAVE_REPORT
    // How the captures were put on one clock (the json carries it in its report; csv has no notes).
    if (format != "json")
        for (const std::string& note : alignmentNotes(clocks)) fmt::print(stderr, "gpuspy export: {}\n", note);
#endif

    if (format == "kineto") {
        if (run == 0 && capture.runs.size() > 1) {
            fmt::print(stderr, "gpuspy export: {}: a capture of {} runs; a Kineto trace is one run's ranks: choose one with --run K\n",
                       file, capture.runs.size());
            return kExitFailure;
        }
        return writeKinetoDirectory(capture, output, force, what, info);
    }
    std::string out;
    if (format == "perfetto") {
        PerfettoStats stats;
        out = exportPerfetto(capture, &stats);
        if (stats.clamped)
            fmt::print(stderr,
                       "gpuspy export: {} slices overlapped an earlier slice on their track without nesting in it; they "
                       "were cut at its end (Perfetto requires nested slices)\n",
                       stats.clamped);
    } else if (format == "folded") {
        out = exportFolded(capture, metric);
    } else if (format == "pprof") {
        out = exportPprof(capture);
    } else {
#if GPUSPY_HAVE_REPORT
        Report report = analyzeAndPredict(capture, ReportOptions{});
        noteAlignment(report, clocks);
        const std::string merged = mergedRunsNote(capture);
        if (!merged.empty()) report.notes.push_back(merged);
        out = format == "csv" ? (merged.empty() ? "" : "# " + merged + "\n") + renderCsv(report) : renderJson(report);
#else
        fmt::print(stderr, "gpuspy export: the report is not built in this gpuspy (collector/analyze, collector/report)\n");
        return kExitFailure;
#endif
    }
    try {
        exporting::writeOutputFile(output, out, force);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy export: {}\n", e.what());
        return kExitFailure;
    }
    if (output != "-") fmt::print(stderr, "gpuspy: wrote {} ({} bytes, {})\n", output, out.size(), format);
    if (!info.damage.empty()) {
        fmt::print(stderr, "gpuspy export: {}{}; exported what came before it\n", what, info.damage);
        return kExitFailure;
    }
    return 0;
}

}  // namespace gpuspy::collect::cli
