// collector/cli/cmd_view.cpp: `gpuspy view FILE`: one self-contained HTML page (the viewer's files,
// embedded at build time, and the capture's report and timeline as JSON) that opens from disk.
#include "collector/cli/cli.h"

#include "collector/export/common.h"

#if GPUSPY_HAVE_REPORT
#include "collector/analyze/analyze.h"
#include "collector/export/viewer_json.h"
#endif
#if GPUSPY_HAVE_VIEWER
#include "viewer/assets.h"
#endif

#include <fmt/format.h>

#include <string>
#include <vector>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy view FILE [FILE...] [-o OUT.html] [-f] [--run K]\n"
    "       gpuspy view --diff A.gspy B.gspy [-o OUT.html] [-f]\n"
    "       gpuspy view --diff --before A1.gspy [A2.gspy...] --after B1.gspy [B2.gspy...] [-o OUT.html] [-f]\n"
    "\n"
    "Writes one self-contained HTML page for the capture FILE: the findings and headline numbers, an\n"
    "interactive timeline of host threads and GPU streams, tables of transfers, kernels and syncs, and\n"
    "a flame graph of blocked host time. It needs no server and no network: open it in a browser,\n"
    "mail it, attach it to a ticket. Several FILEs (the ranks or nodes of one job, one capture each) are\n"
    "one run, as `gpuspy report` reads them: one timeline of all their processes, each capture put on\n"
    "the first's clock (the notes say how and within what error), each process labelled with its host\n"
    "and rank. With --diff, the page compares two captures as `gpuspy diff` does\n"
    "(headline, findings resolved / new / changed, each figure's range over repeated runs and whether a\n"
    "change is noise, transfers, syncs, kernels, call sites); default OUT: A's name with -diff.html. The\n"
    "captures of a job's ranks, several per side, go after --before and --after (each side one run).\n"
    "\n"
    "options:\n"
    "  -o OUT       the page to write (default: FILE, the first of several, with .html for its\n"
    "               extension); '-' for stdout\n"
    "  -f, --force  overwrite OUT if it exists\n"
    "  --diff       compare the two captures A and B (before and after a change)\n"
    "  --before FILE... --after FILE...  with --diff: the captures of each side (several: one run)\n"
    "  --run K      only run K (1-based) of a capture of repeated runs (record --repeat); without it the\n"
    "               runs are merged, each process labelled with its run and a note saying so; one\n"
    "               capture only (several are one run)\n"
    "  -h, --help   this text\n";

std::string defaultOutput(const std::string& file, const char* suffix = ".html")
{
    std::string base = file;
    const size_t slash = base.rfind('/');
    const size_t dot = base.rfind('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) base.resize(dot);
    return base + suffix;
}

// Replaces the one occurrence of `marker` in `page`; false if it is missing.
bool fill(std::string& page, std::string_view marker, std::string_view text)
{
    const size_t at = page.find(marker);
    if (at == std::string::npos) return false;
    page.replace(at, marker.size(), text);
    return true;
}

// The data of a page goes inside a <script> element: a '<' may only stand inside JSON strings, where
// \u003c reads the same, so no "</script" can end the element early.
std::string scriptSafe(const std::string& json)
{
    std::string out;
    out.reserve(json.size());
    for (char c : json) {
        if (c == '<') out += "\\u003c";
        else out += c;
    }
    return out;
}

// Writes a finished page (`-`: standard output) and says where; false (said) when it could not.
bool writePage(const std::string& output, const std::string& page, bool force)
{
    try {
        exporting::writeOutputFile(output, page, force);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy view: {}\n", e.what());
        return false;
    }
    if (output != "-") fmt::print(stderr, "gpuspy: wrote {} ({} KiB): open it in a browser\n", output, (page.size() + 1023) / 1024);
    return true;
}

// `gpuspy view --diff A B`: the comparison page.
int writeDiffPage(const DiffSides& sides, const std::string& output, bool force)
{
#if GPUSPY_HAVE_REPORT && GPUSPY_HAVE_VIEWER
    std::string data;
    try {
        data = scriptSafe(diffJsonOfCaptures(sides, 50));
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy view: {}\n", e.what());
        return kExitUsage;
    }
    std::string page(viewer::asset("diff.html"));
    if (!fill(page, "/*@GPUSPY_CSS@*/", viewer::asset("viewer.css")) || !fill(page, "/*@GPUSPY_DIFF_JS@*/", viewer::asset("diff.js")) ||
        !fill(page, "@GPUSPY_DIFF@", data)) {
        fmt::print(stderr, "gpuspy view: the embedded viewer is incomplete (viewer/diff.html lacks a marker)\n");
        return kExitFailure;
    }
    if (!writePage(output, page, force)) return kExitFailure;
    return 0;
#else
    (void)sides, (void)output, (void)force;
    fmt::print(stderr, "gpuspy view: the viewer is not built in this gpuspy (viewer/, collector/analyze, collector/report)\n");
    return kExitFailure;
#endif
}

}  // namespace

int runView(int argc, char** argv)
{
    ArgReader args("view", argc, argv);
    std::string output, value;
    std::vector<std::string> files;
    DiffSides sides;
    bool force = false, diff = false;
    long run = 0;
    while (!args.done()) {
        if (args.value({"--run"}, value)) {
            run = parseNumber("gpuspy view: --run", value, 1, 1000000);
            continue;
        }
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"-o", "--output"}, output)) continue;
        if (args.flag({"-f", "--force"})) {
            force = true;
            continue;
        }
        if (args.flag({"--diff"})) {
            diff = true;
            continue;
        }
        if (readDiffSide("view", args, sides)) continue;
        args.fileOperands(files);
    }
    if (diff && run) throw UsageError("gpuspy view: --run shows one capture's run; not with --diff");
    if (!diff && (!sides.a.empty() || !sides.b.empty()))
        throw UsageError("gpuspy view: --before and --after name the sides of --diff");
    if (diff) {
        settleDiffSides("view --diff", files, sides);
        return writeDiffPage(sides, output.empty() ? defaultOutput(sides.a.front(), "-diff.html") : output, force);
    }
    if (files.empty()) throw UsageError("gpuspy view: which file? (usage: gpuspy view FILE [FILE...] [-o OUT.html])");
    if (files.size() > 1 && run > 0)
        throw UsageError("gpuspy view: --run takes one capture (several captures are shown as one run)");
    const std::string& file = files.front();
    if (output.empty()) output = defaultOutput(file);

#if GPUSPY_HAVE_REPORT && GPUSPY_HAVE_VIEWER
    ReadInfo info;
    Capture capture;
    std::vector<ClockAlignment> clocks;
    try {
        capture = readCapturesAsOne(files, {}, info, &clocks);  // its errors name the file
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy view: {}\n", e.what());
        return kExitFailure;
    }
    try {
        selectRun(capture, run);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gpuspy view: {}: {}\n", file, e.what());
        return kExitFailure;
    }
    Report report = analyzeAndPredict(capture, ReportOptions{});
    noteAlignment(report, clocks);
    if (const std::string merged = mergedRunsNote(capture); !merged.empty()) report.notes.push_back(merged);
    std::string source;
    for (const std::string& f : files) source += (source.empty() ? "" : ", ") + f;
    const std::string data = exportViewerData(capture, report, source);

    std::string page(viewer::asset("index.html"));
    // The viewer's own files contain no "</script" or "</style"; the data has every '<' escaped.
    // The capture's data goes in last, so that no text inside it is taken for a marker.
    if (!fill(page, "/*@GPUSPY_CSS@*/", viewer::asset("viewer.css")) || !fill(page, "/*@GPUSPY_LANES_JS@*/", viewer::asset("lanes.js")) ||
        !fill(page, "/*@GPUSPY_JS@*/", viewer::asset("viewer.js")) || !fill(page, "@GPUSPY_DATA@", data)) {
        fmt::print(stderr, "gpuspy view: the embedded viewer is incomplete (viewer/index.html lacks a marker)\n");
        return kExitFailure;
    }
    if (!writePage(output, page, force)) return kExitFailure;
    if (!info.damage.empty()) {
        // Several captures: the damage names its file.
        fmt::print(stderr, "gpuspy view: {}{}; showing what came before it\n", files.size() == 1 ? file + ": " : "", info.damage);
        return kExitFailure;
    }
    return 0;
#else
    (void)force;
    fmt::print(stderr, "gpuspy view: the viewer is not built in this gpuspy (viewer/, collector/analyze, collector/report)\n");
    return kExitFailure;
#endif
}

}  // namespace gpuspy::collect::cli
