// collector/cli_collect.cpp: `gpuspy collect`, a long-running collector for programs started elsewhere.
#include "collector/cli.h"
#include "collector/control.h"
#include "collector/say.h"
#include "collector/server.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <set>
#include <vector>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy collect [--socket PATH] [-o FILE] [-f] [--paused]\n"
    "\n"
    "Collects from programs started separately with the shim preloaded:\n"
    "    GPUSPY_SOCKET=PATH LD_PRELOAD=/path/to/libgpuspy.so ./server\n"
    "until SIGINT (Ctrl-C) or SIGTERM, then symbolizes and writes the capture. Only processes of your\n"
    "own user may connect. A hang-up (SIGHUP) does not stop it. When the capture cannot be written\n"
    "(a full disk), it says so once and goes on reading its clients, counting what it cannot keep;\n"
    "the exit status is then 1.\n"
    "\n"
    "options:\n"
    "  --socket PATH       where to listen (default: a fresh private directory, printed at start)\n"
    "  -o, --output FILE   the capture (default gpuspy-YYYYmmdd-HHMMSS.gspy); created 0600\n"
    "  -f, --force         overwrite FILE if it exists\n"
    "  --paused            connected processes do not record until `gpuspy ctl --socket PATH start`\n"
    "                      (their calls are counted, not recorded; a process records from its start\n"
    "                      until the collector's word arrives: set GPUSPY_PAUSED=1 in its environment\n"
    "                      to have it wait from its first call)\n"
    "\n"
    "With --socket PATH, `gpuspy ctl --socket PATH start|stop|status` controls the collector and its\n"
    "processes at runtime (its control socket is PATH.ctl).\n"
    "  -h, --help          this text\n";

}  // namespace

int runCollect(int argc, char** argv)
{
    ArgReader args("collect", argc, argv);
    std::string socket, output;
    bool force = false, paused = false;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--socket"}, socket) || args.value({"-o", "--output"}, output)) continue;
        if (args.flag({"-f", "--force"})) {
            force = true;
            continue;
        }
        if (args.flag({"--paused"})) {
            paused = true;
            continue;
        }
        args.unknown();
    }
    if (output.empty()) output = defaultCaptureName();

    std::unique_ptr<CaptureWriter> writer;
    std::unique_ptr<Server> server;
    std::unique_ptr<ControlServer> control;
    try {
        writer = std::make_unique<CaptureWriter>(output, force);
        ServerOptions so;
        so.socketPath = socket;
        so.writer = writer.get();
        server = std::make_unique<Server>(so);
        control = std::make_unique<ControlServer>(server->socketPath());
    } catch (const std::exception& e) {
        if (writer) unlink(output.c_str());
        say("gpuspy collect: {}\n", e.what());
        return kExitFailure;
    }

    installSignalHandlers(server->wakeFd());
    say("gpuspy: collecting on {} into {} (Ctrl-C or SIGTERM to finish)\n", server->socketPath(), output);
    if (socket.empty()) fmt::print("GPUSPY_SOCKET={}\n", server->socketPath());
    std::fflush(stdout);
    // Runtime control (gpuspy ctl): the recording state every connected process is told, again
    // whenever a process connects (a shim takes a repeated word as a no-op).
    bool recording = !paused;
    std::set<uint32_t> told;  // processes that were sent the current state
    auto tell = [&] {
        const uint8_t word = recording ? wire::kControlStart : wire::kControlStop;
        const std::vector<uint32_t> pids = server->connectedPids();
        told = std::set<uint32_t>(pids.begin(), pids.end());
        return server->sendToClients(&word, 1);
    };
    auto someoneNew = [&] {
        for (uint32_t pid : server->connectedPids())
            if (!told.count(pid)) return true;
        return false;
    };
    auto state = [&] { return std::string(recording ? "recording" : "paused"); };
    control->on("start", [&](const std::vector<std::string>&) {
        recording = true;
        return fmt::format("ok: recording in {} process(es)", tell());
    });
    control->on("stop", [&](const std::vector<std::string>&) {
        recording = false;
        return fmt::format("ok: paused in {} process(es) (their calls are counted, not recorded)", tell());
    });
    control->on("status", [&](const std::vector<std::string>&) {
        std::string pids;
        for (uint32_t pid : server->connectedPids()) pids += (pids.empty() ? "" : " ") + std::to_string(pid);
        return fmt::format("ok: {}; {} process(es) connected{}{}; {} calls received; writing {}", state(),
                           server->connectedPids().size(), pids.empty() ? "" : ": ", pids, server->callsReceived(), output);
    });
    int rc = 0;
    bool saidWriteFailure = false;
    try {
        // A hang-up (the ssh session that started it went away) does not stop a collector.
        while (signalsReceived() == 0) {
            server->poll(100);
            if (!recording && someoneNew()) tell();
            control->serve();
            hungUp();
            noteWriteFailure(*writer, saidWriteFailure);
        }
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        rc = kExitFailure;
    }
    restoreSignalHandlers();
    control.reset();

    try {
        server->closeAll();
        const uint64_t calls = server->callsReceived();
        Capture capture = server->takeCapture();
        server.reset();
        finishCapture(capture, *writer);
        say("{}\n", captureSummary(*writer, capture.processes.size(), calls, capture.badStreams));
        if (writer->failed()) rc = kExitFailure;
    } catch (const std::exception& e) {
        say("gpuspy collect: {}\n", e.what());
        rc = kExitFailure;
    }
    return rc;
}

}  // namespace gpuspy::collect::cli
