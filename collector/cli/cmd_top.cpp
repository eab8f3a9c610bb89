// collector/cli/cmd_top.cpp: `gpuspy top --socket PATH`, the live view of a running collector: once a second
// it asks the collector for the text of its live figures (LiveStats::topText) and shows it, redrawn in
// place on a terminal, as successive plain-text frames otherwise.
#include "collector/cli/cli.h"
#include "collector/cli/live.h"
#include "collector/base/say.h"

#include <fmt/format.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy top --socket PATH [-n COUNT]\n"
    "\n"
    "Shows, refreshed every second, what the collector running as gpuspy collect --socket PATH sees of\n"
    "each process and device: GPU busy % (from the device timeline, as in gpuspy report), launches/s,\n"
    "copy GB/s by direction, host memory kind and sync/async form, time blocked in syncs, the top call\n"
    "sites and the findings so far. On a terminal the screen is redrawn; otherwise each frame is\n"
    "printed as plain text after the last. Ctrl-C to stop.\n"
    "\n"
    "options:\n"
    "  --socket PATH   the collector's socket\n"
    "  -n COUNT        stop after COUNT frames (default: until interrupted)\n"
    "  -h, --help      this text\n";

}  // namespace

int runTop(int argc, char** argv)
{
    ArgReader args("top", argc, argv);
    std::string socket, countText;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--socket"}, socket) || args.value({"-n"}, countText)) continue;
        args.unknown();
    }
    if (socket.empty()) throw UsageError("gpuspy top: which collector? (--socket PATH)");
    const long count = countText.empty() ? 0 : parseNumber("-n", countText, 1, 1000000000);
    const bool terminal = stdoutIsTerminal();
    for (long frame = 0; count == 0 || frame < count; ++frame) {
        if (frame > 0) {
            timespec second{1, 0};
            while (nanosleep(&second, &second) != 0) {
            }
        }
        std::string answer;
        try {
            answer = controlRequest(socket, fmt::format("top {}", terminal && terminalWidth() ? terminalWidth() : 120));
        } catch (const std::exception& e) {
            say("gpuspy top: {}\n", e.what());
            return kExitFailure;
        }
        if (answer.rfind("ok\n", 0) != 0) {
            say("gpuspy top: {}\n", controlError(answer));
            return kExitFailure;
        }
        const std::string text = answer.substr(3);
        if (terminal) fmt::print("\x1b[H\x1b[2J{}\n", text);
        else fmt::print("{}\n\n", text);
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace gpuspy::collect::cli
