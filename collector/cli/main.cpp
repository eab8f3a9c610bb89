// collector/cli/main.cpp: the gpuspy command: dispatches to the subcommands in cli_*.cpp.
#include "collector/cli/cli.h"
#include "collector/base/say.h"

#include <fmt/format.h>

#include <cstring>
#include <exception>

namespace {

constexpr const char* kUsage =
    "usage: gpuspy COMMAND [OPTIONS] [ARGS]\n"
    "\n"
    "Why is my GPU program slow? gpuspy records the CUDA calls of a program, with their host and GPU\n"
    "times and call stacks, and reports transfer overhead, launch overhead and blocking syncs.\n"
    "\n"
    "commands:\n"
    "  record [-o FILE] [--sim] -- CMD [ARGS...]   run CMD under gpuspy, write a capture, print the report\n"
    "  collect [--socket PATH] [-o FILE] [--ring S] collect from programs started separately\n"
    "  ctl --socket PATH start|stop|status          start or stop recording in a running collector's processes\n"
    "  ctl --socket PATH snapshot -o FILE           a `collect --ring` collector's last seconds, as a capture\n"
    "  top --socket PATH                            live view of a running collector's processes\n"
    "  report FILE [--format text|json|csv]         the report of a capture\n"
    "  dump FILE                                    every record of a capture, one per line\n"
    "  export FILE --format perfetto|folded|pprof|csv|json  the capture for Perfetto, flame graphs, pprof, spreadsheets\n"
    "  view FILE [-o report.html]                   one self-contained HTML page: findings, timeline, tables\n"
    "  diff A B [--fail-if-slower PCT]              two captures side by side: what changed, what it saved\n"
    "  whatif FILE [--fix NAME,...]                 what each fix would save: the capture replayed with it\n"
    "  attach PID [-o FILE] [--duration S]          record a CUDA process that is already running (x86-64)\n"
    "\n"
    "  gpuspy COMMAND --help    that command's options\n"
    "  gpuspy --version         the version\n";

}  // namespace

int main(int argc, char** argv)
{
    using namespace gpuspy::collect::cli;
    if (argc < 2) {
        fmt::print(stderr, "{}", kUsage);
        return kExitUsage;
    }
    const std::string_view command = argv[1];
    if (command == "-h" || command == "--help" || command == "help") {
        fmt::print("{}", kUsage);
        return 0;
    }
    if (command == "--version" || command == "-V") {
        fmt::print("gpuspy {}\n", GPUSPY_VERSION);
        return 0;
    }
    int (*run)(int, char**) = nullptr;
    if (command == "record") run = runRecord;
    else if (command == "collect") run = runCollect;
    else if (command == "ctl") run = runCtl;
    else if (command == "report") run = runReport;
    else if (command == "dump") run = runDump;
    else if (command == "export") run = runExport;
    else if (command == "view") run = runView;
    else if (command == "diff") run = runDiff;
    else if (command == "attach") run = runAttach;
    else if (command == "top") run = runTop;
    else if (command == "whatif") run = runWhatIf;
    if (!run) {
        fmt::print(stderr, "gpuspy: unknown command '{}' (see gpuspy --help)\n", command);
        return kExitUsage;
    }
    try {
        return run(argc - 2, argv + 2);
    } catch (const UsageError& e) {
        gpuspy::collect::say("{} (see gpuspy {} --help)\n", e.what(), command);
        return kExitUsage;
    } catch (const std::exception& e) {
        gpuspy::collect::say("gpuspy {}: {}\n", command, e.what());
        return kExitFailure;
    }
}
