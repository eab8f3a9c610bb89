// collector/cli/cmd_ctl_snapshot.cpp: the client side of a collector's control socket, and
// `gpuspy ctl ... snapshot -o FILE`, which asks a collector started with --ring for its last seconds.
#include "collector/cli/cli.h"
#include "collector/cli/live.h"
#include "collector/live/control.h"
#include "collector/base/say.h"

#include <fmt/format.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace gpuspy::collect::cli {

namespace {

bool sendAll(int fd, const char* p, size_t n)
{
    while (n > 0) {
        const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= size_t(w);
    }
    return true;
}

std::string absolutePath(const std::string& path)
{
    if (!path.empty() && path[0] == '/') return path;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) throw std::runtime_error(std::string("getcwd: ") + std::strerror(errno));
    return std::string(cwd) + "/" + path;
}

}  // namespace

std::string controlRequest(const std::string& socketPath, const std::string& request)
{
    const std::string path = controlPath(socketPath);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw std::runtime_error(path + ": socket path too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        close(fd);
        throw std::runtime_error(fmt::format("no collector at {}: {}", socketPath, std::strerror(e)));
    }
    const std::string message = request + "\n";
    std::string answer;
    if (sendAll(fd, message.data(), message.size())) {
        char buf[4096];
        while (true) {
            const ssize_t n = read(fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            answer.append(buf, size_t(n));
        }
    }
    close(fd);
    if (answer.empty()) throw std::runtime_error(socketPath + ": the collector closed the connection without an answer");
    if (answer.back() == '\n') answer.pop_back();
    return answer;
}

std::string controlError(const std::string& answer)
{
    if (answer.rfind("error: ", 0) == 0) return answer.substr(7);
    if (answer.rfind("error ", 0) == 0) return answer.substr(6);
    return answer;
}

int ctlSnapshot(std::string socketPath, ArgReader& args)
{
    std::string output;
    bool force = false;
    while (!args.done()) {
        if (args.value({"-o", "--output"}, output) || args.value({"--socket"}, socketPath)) continue;
        if (args.flag({"-f", "--force"})) {
            force = true;
            continue;
        }
        args.unknown();
    }
    if (socketPath.empty()) throw UsageError("gpuspy ctl: which collector? (--socket PATH)");
    if (output.empty()) throw UsageError("gpuspy ctl snapshot: which file? (-o FILE)");
    if (output.find('\n') != std::string::npos) throw UsageError("gpuspy ctl snapshot: a file name with a newline");
    const std::string answer =
        controlRequest(socketPath, fmt::format("snapshot {} {}", force ? 1 : 0, absolutePath(output)));
    if (answer.rfind("ok ", 0) == 0) {
        say("gpuspy: {}\n", answer.substr(3));
        return 0;
    }
    say("gpuspy ctl snapshot: {}\n", controlError(answer));
    return kExitFailure;
}

}  // namespace gpuspy::collect::cli
