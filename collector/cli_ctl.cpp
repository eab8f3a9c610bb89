// collector/cli_ctl.cpp: `gpuspy ctl --socket PATH VERB`, requests to a running collector.
#include "collector/cli.h"
#include "collector/cli_live.h"
#include "collector/say.h"

#include <fmt/format.h>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy ctl --socket PATH snapshot -o FILE [-f]\n"
    "\n"
    "Requests to a collector running as gpuspy collect --socket PATH.\n"
    "\n"
    "verbs:\n"
    "  snapshot -o FILE [-f]  the collector (started with --ring SECONDS) writes the last seconds it\n"
    "                         holds of every process as a capture FILE that gpuspy report reads\n"
    "                         (-f: overwrite FILE); with nothing in the ring it says so, exit status 1\n"
    "\n"
    "options:\n"
    "  --socket PATH  the collector's socket\n"
    "  -h, --help     this text\n";

}  // namespace

int runCtl(int argc, char** argv)
{
    ArgReader args("ctl", argc, argv);
    std::string socket;
    while (!args.done() && args.isOption()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--socket"}, socket)) continue;
        args.unknown();
    }
    if (socket.empty()) throw UsageError("gpuspy ctl: which collector? (--socket PATH)");
    if (args.done()) throw UsageError("gpuspy ctl: what to do? (snapshot)");
    const std::string verb = args.positional();
    try {
        if (verb == "snapshot") return ctlSnapshot(socket, args);
    } catch (const UsageError&) {
        throw;
    } catch (const std::exception& e) {
        say("gpuspy ctl: {}\n", e.what());
        return kExitFailure;
    }
    throw UsageError(fmt::format("gpuspy ctl: unknown verb '{}'", verb));
}

}  // namespace gpuspy::collect::cli
