// collector/cli/cmd_whatif.cpp: `gpuspy whatif CAPTURE [--fix NAME[,NAME...]]`, what each fix would save, predicted
// by replaying the capture's dependency graph (collector/replay/).
#include "collector/cli/cli.h"
#include "collector/report/whatif.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace gpuspy::collect::cli {

namespace {

std::string usage()
{
    std::string fixes;
    for (const replay::FixInfo& f : replay::allFixes()) fixes += fmt::format("  {:<14} {}\n", f.name, f.what);
    return "usage: gpuspy whatif FILE [--fix NAME[,NAME...]] [--format text|json] [--process PID]\n"
           "\n"
           "What the run would take after a fix: the capture's calls and device work as a dependency graph\n"
           "(each thread's calls in order, each stream's work in order, what every wait waited for), replayed\n"
           "with its costs as measured, then with the fix applied. Prints the replay's error against the\n"
           "measured wall time, the critical path (which thread or stream sets the end of the run), and the\n"
           "predicted wall time, GPU busy and host busy time after each fix that applies; --fix A,B adds the\n"
           "prediction with A and B together (savings of several fixes do not add).\n"
           "\n"
           "fixes:\n" +
           fixes +
           "\n"
           "options:\n"
           "  --fix LIST      predict these fixes together (and each alone), comma-separated\n"
           "  --format F      text (default) or json (schema gpuspy.whatif/1)\n"
           "  --process PID   only this process\n"
           "  -h, --help      this text\n";
}

}  // namespace

int runWhatIf(int argc, char** argv)
{
    ArgReader args("whatif", argc, argv);
    std::string file, format = "text", fixList, pidText;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", usage());
            return 0;
        }
        if (args.value({"--fix"}, fixList) || args.value({"--format"}, format) || args.value({"--process"}, pidText)) continue;
        args.fileOperand(file);
    }
    if (file.empty()) throw UsageError("gpuspy whatif: which capture? (usage: gpuspy whatif FILE)");
    if (format != "text" && format != "json") throw UsageError("gpuspy whatif: --format is text or json, not '" + format + "'");
    const long pid = pidText.empty() ? -1 : parseNumber("--process", pidText, 1, 0x7fffffff);
    std::vector<replay::FixKind> chosen;
    for (size_t at = 0; !fixList.empty() && at <= fixList.size();) {
        const size_t comma = std::min(fixList.find(',', at), fixList.size());
        const std::string name = fixList.substr(at, comma - at);
        const auto k = replay::fixByName(name);
        if (!k) {
            std::string names;
            for (const replay::FixInfo& f : replay::allFixes()) names += std::string(names.empty() ? "" : ", ") + f.name;
            throw UsageError("gpuspy whatif: no fix named '" + name + "' (the fixes: " + names + ")");
        }
        chosen.push_back(*k);
        at = comma + 1;
    }

    ReadInfo info;
    Capture capture = readCapture(file, ReadOptions{}, &info);
    std::vector<replay::WhatIf> all;
    for (const Process& p : capture.processes) {
        if (pid >= 0 && p.pid != uint32_t(pid)) continue;
        if (p.calls.empty()) continue;
        all.push_back(replay::whatIf(p, {chosen}, chosen));
    }
    if (pid >= 0 && all.empty()) {
        fmt::print(stderr, "gpuspy whatif: {}: no process {} with CUDA calls in the capture\n", file, pid);
        return kExitFailure;
    }
    if (format == "json") fmt::print("{}\n", whatIfJson(all).dump(2));
    else if (all.empty()) fmt::print("{}: no process made a CUDA call: nothing to replay\n", file);
    else fmt::print("{}", renderWhatIfText(all));
    std::fflush(stdout);
    if (!info.damage.empty()) {
        fmt::print(stderr, "gpuspy whatif: {}: {}\n", file, info.damage);
        return kExitFailure;
    }
    return 0;
}

}  // namespace gpuspy::collect::cli
