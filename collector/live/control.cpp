// collector/live/control.cpp: the collector's control socket (see collector/live/control.h).
#include "collector/live/control.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace gpuspy::collect {

std::string controlPath(const std::string& socketPath) { return socketPath + ".ctl"; }

ControlServer::ControlServer(const std::string& socketPath) : m_path(controlPath(socketPath))
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (m_path.size() >= sizeof addr.sun_path) throw std::runtime_error(m_path + ": control socket path too long");
    std::memcpy(addr.sun_path, m_path.c_str(), m_path.size() + 1);
    // The collector's own socket is already ours (it refuses a live one): a control socket left there
    // by a collector that died goes too, but never something that is not a socket.
    struct stat st{};
    if (lstat(m_path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) throw std::runtime_error(m_path + ": exists and is not a socket; not replacing it");
        unlink(m_path.c_str());
    }
    m_listen = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m_listen < 0) throw std::runtime_error(std::string("control socket: ") + strerror(errno));
    const mode_t old = umask(0077);  // only our own user may control the collector
    const int rc = bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    umask(old);
    if (rc != 0 || ::listen(m_listen, 16) != 0) {
        const int err = errno;
        close(m_listen);
        m_listen = -1;
        throw std::runtime_error(m_path + ": " + strerror(err));
    }
}

ControlServer::~ControlServer()
{
    if (m_listen >= 0) {
        close(m_listen);
        unlink(m_path.c_str());
    }
}

void ControlServer::on(const std::string& command, Handler handler) { m_handlers[command] = std::move(handler); }

void ControlServer::onLine(const std::string& command, LineHandler handler)
{
    m_lineHandlers[command] = std::move(handler);
}

std::string ControlServer::reply(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty()) return "error: empty request";
    auto it = m_handlers.find(words[0]);
    auto lineIt = m_lineHandlers.find(words[0]);
    if (it == m_handlers.end() && lineIt == m_lineHandlers.end()) return "error: unknown request '" + words[0] + "'";
    try {
        if (lineIt != m_lineHandlers.end()) {
            // Only blanks stand before the command, so its first occurrence is the command itself.
            const size_t end = line.find(words[0]) + words[0].size();
            return lineIt->second(end < line.size() ? line.substr(end + 1) : std::string());
        }
        return it->second(std::vector<std::string>(words.begin() + 1, words.end()));
    } catch (const std::exception& e) {
        return std::string("error: ") + e.what();
    }
}

void ControlServer::serve()
{
    for (;;) {
        const int c = accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;  // none waiting (EAGAIN), or a transient error: the next pass tries again
        // Only our own user (the socket's mode says so; a peer check says it again).
        ucred cred{};
        socklen_t len = sizeof cred;
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != geteuid()) {
            close(c);
            continue;
        }
        std::string line;
        char buf[512];
        while (line.find('\n') == std::string::npos && line.size() < 4096) {
            pollfd p{c, POLLIN, 0};
            if (::poll(&p, 1, 1000) <= 0) break;
            const ssize_t n = recv(c, buf, sizeof buf, 0);
            if (n <= 0) break;
            line.append(buf, size_t(n));
        }
        if (const size_t nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
        const std::string answer = reply(line) + "\n";
        (void)!send(c, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        close(c);
    }
}

}  // namespace gpuspy::collect
