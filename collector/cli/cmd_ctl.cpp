// collector/cli/cmd_ctl.cpp: `gpuspy ctl --socket PATH REQUEST`, the client of a running collector's
// control socket (collector/live/control.h): sends one request line, prints the reply, exits 0 on "ok".
// `snapshot` has options of its own (collector/cli/cmd_ctl_snapshot.cpp).
#include "collector/cli/cli.h"
#include "collector/cli/live.h"
#include "collector/live/control.h"
#include "collector/base/say.h"

#include <fmt/format.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy ctl --socket PATH start|stop|status|ring\n"
    "       gpuspy ctl --socket PATH snapshot -o FILE [-f]\n"
    "\n"
    "Controls a running `gpuspy collect --socket PATH` and, through it, every process connected to it:\n"
    "  start    start recording in every connected process (and those that connect later)\n"
    "  stop     stop recording: calls are counted, not recorded (the dormant shim), until start\n"
    "  status   whether recording is on, which processes are connected, what was received\n"
    "  snapshot -o FILE [-f]\n"
    "           the collector (started with --ring SECONDS) writes the last seconds it holds of every\n"
    "           process as a capture FILE that gpuspy report reads (-f: overwrite FILE); with nothing\n"
    "           in the ring it says so, exit status 1\n"
    "  ring     the flight recorder's figures: its window and bound, what it holds, trimmed, evicted\n"
    "The exit status is 0 when the collector answered ok, 1 otherwise.\n";

// The requests ctl knows, and how many words each takes after it.
const std::set<std::string> kRequests = {"start", "stop", "status", "ring"};

}  // namespace

int runCtl(int argc, char** argv)
{
    ArgReader args("ctl", argc, argv);
    std::string socket;
    std::vector<std::string> request;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (args.value({"--socket"}, socket)) continue;
        if (args.isOption()) args.unknown();
        request.push_back(args.positional());
        if (request.size() == 1 && request[0] == "snapshot") {
            try {
                return ctlSnapshot(socket, args);  // its options follow it
            } catch (const UsageError&) {
                throw;
            } catch (const std::exception& e) {
                say("gpuspy ctl: {}\n", e.what());
                return kExitFailure;
            }
        }
    }
    if (socket.empty()) throw UsageError("gpuspy ctl: --socket PATH is required (the collector's socket)");
    if (request.empty()) throw UsageError("gpuspy ctl: no request (start, stop, status or snapshot)");
    if (!kRequests.count(request[0]))
        throw UsageError("gpuspy ctl: unknown request '" + request[0] + "' (start, stop, status or snapshot)");
    if (request.size() != 1) throw UsageError("gpuspy ctl: " + request[0] + " takes no arguments");

    const std::string path = controlPath(socket);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        say("gpuspy ctl: {}: socket path too long\n", path);
        return kExitFailure;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        say("gpuspy ctl: no collector at {} ({}): is `gpuspy collect --socket {}` running?\n", socket, strerror(errno), socket);
        if (fd >= 0) close(fd);
        return kExitFailure;
    }
    std::string line;
    for (const std::string& w : request) line += (line.empty() ? "" : " ") + w;
    line += "\n";
    std::string answer;
    if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) == ssize_t(line.size())) {
        char buf[4096];
        for (;;) {
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, 10000) <= 0) break;
            const ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            answer.append(buf, size_t(n));
        }
    }
    close(fd);
    if (answer.empty()) {
        say("gpuspy ctl: the collector at {} did not answer\n", socket);
        return kExitFailure;
    }
    const bool ok = answer.rfind("ok", 0) == 0;
    if (ok) fmt::print("{}", answer);
    else say("gpuspy ctl: {}", answer);
    return ok ? 0 : kExitFailure;
}

}  // namespace gpuspy::collect::cli
