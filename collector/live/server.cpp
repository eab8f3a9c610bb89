// collector/live/server.cpp: a private Unix socket, peer checks, and one ingest per connection.
#include "collector/live/server.h"
#include "collector/base/say.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace gpuspy::collect {

namespace {

constexpr size_t kReadSize = 256u << 10;
constexpr uint64_t kFlushIntervalNs = 1000000000ull;  // at most this long is received data only in memory
constexpr uint64_t kMaxUnflushed = 64u << 20;         // nor more than this, all connections together

std::string errnoText()
{
    return std::strerror(errno);
}

void setNonBlocking(int fd)
{
    const int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

bool usableDir(const char* dir)
{
    struct stat st{};
    return dir && *dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0;
}

// What a finished process needs until the end of the run, when it is symbolized and its symbols are
// written: its identity, stacks, module map and Python frames. The rest of its definitions (kernel names can be
// thousands) is in the capture already.
Process keptForSymbols(Process&& p)
{
    Process kept;
    kept.pid = p.pid;
    kept.ppid = p.ppid;
    kept.command = std::move(p.command);
    kept.startNs = p.startNs;
    kept.startRealtimeNs = p.startRealtimeNs;
    kept.lastNs = p.lastNs;
    kept.stacks = std::move(p.stacks);
    kept.modules = std::move(p.modules);
    kept.pyCodes = std::move(p.pyCodes);
    kept.pyFrames = std::move(p.pyFrames);
    kept.ended = p.ended;
    kept.end = p.end;
    kept.streamError = std::move(p.streamError);
    return kept;
}

}  // namespace

uint64_t monotonicNs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

std::string makePrivateDir(const char* prefix)
{
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    const std::string base = usableDir(xdg) ? xdg : "/tmp";
    std::string templ = base + "/" + prefix + "XXXXXX";
    if (!mkdtemp(templ.data()))  // mkdtemp creates the directory with mode 0700
        throw std::runtime_error("cannot create a private directory in " + base + ": " + errnoText());
    return templ;
}

Server::Server(ServerOptions options) : m_opt(std::move(options)), m_buf(kReadSize)
{
    if (pipe2(m_wake, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errnoText());
    try {
        if (m_opt.socketPath.empty()) {
            m_dir = makePrivateDir();
            m_socketPath = m_dir + "/socket";
        } else {
            m_socketPath = m_opt.socketPath;
        }
        listen();
    } catch (...) {
        if (!m_dir.empty()) rmdir(m_dir.c_str());
        close(m_wake[0]);
        close(m_wake[1]);
        throw;
    }
    m_lastChangeNs = m_lastFlushNs = monotonicNs();
}

void Server::listen()
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (m_socketPath.size() >= sizeof addr.sun_path)
        throw std::runtime_error(m_socketPath + ": socket path too long (at most " +
                                 std::to_string(sizeof addr.sun_path - 1) + " bytes)");
    std::memcpy(addr.sun_path, m_socketPath.c_str(), m_socketPath.size() + 1);

    if (m_dir.empty()) {
        // A path the user chose: replace a stale socket, never anything else or a live collector.
        struct stat st{};
        if (lstat(m_socketPath.c_str(), &st) == 0) {
            if (!S_ISSOCK(st.st_mode))
                throw std::runtime_error(m_socketPath + ": exists and is not a socket; not replacing it");
            int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            const bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
            if (probe >= 0) close(probe);
            if (live) throw std::runtime_error(m_socketPath + ": another collector is listening there");
            unlink(m_socketPath.c_str());
        }
    }
    m_listen = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m_listen < 0) throw std::runtime_error("socket: " + errnoText());
    // The socket file itself is 0600 from birth: the peer-credential check is the second line.
    const mode_t old = umask(0177);
    const int rc = bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    const int bindErr = errno;
    umask(old);
    if (rc != 0) {
        close(m_listen);
        m_listen = -1;
        throw std::runtime_error(m_socketPath + ": cannot listen: " + std::strerror(bindErr));
    }
    if (::listen(m_listen, 128) != 0) {
        const std::string e = errnoText();
        close(m_listen);
        m_listen = -1;
        unlink(m_socketPath.c_str());
        throw std::runtime_error(m_socketPath + ": cannot listen: " + e);
    }
}

Server::~Server()
{
    for (auto& c : m_conns)
        if (c->fd >= 0) close(c->fd);
    if (m_listen >= 0) {
        close(m_listen);
        unlink(m_socketPath.c_str());
    }
    if (!m_dir.empty()) rmdir(m_dir.c_str());
    close(m_wake[0]);
    close(m_wake[1]);
}

void Server::wake()
{
    const char b = 1;
    [[maybe_unused]] ssize_t r = write(m_wake[1], &b, 1);
}

void Server::adopt(int fd)
{
    setNonBlocking(fd);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->ingest.setKeepRaw(m_opt.writer != nullptr);
    // With a writer the records live in the capture; with a listener, in the listener.
    c->ingest.setKeepEvents(m_opt.writer == nullptr && m_opt.listener == nullptr);
    if (m_opt.listener) {
        Conn* conn = c.get();
        c->ingest.setObserver([this, conn](const Process&, const wire::RecordView& v) {
            startStream(*conn);  // records can come in the same read as the header
            m_opt.listener->onRecord(uint32_t(conn->stream), v);
        });
    }
    m_conns.push_back(std::move(c));
    ++m_accepted;
    m_lastChangeNs = monotonicNs();
}

void Server::acceptAll()
{
    while (m_listen >= 0) {
        const int fd = accept4(m_listen, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK && !m_opt.quiet)
                say("gpuspy: accept on {}: {}\n", m_socketPath, errnoText());
            return;
        }
        ucred cred{};
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != geteuid()) {
            ++m_refused;
            if (!m_opt.quiet)
                say("gpuspy: refused a connection from pid {} (uid {}): only uid {} may connect to {}\n",
                           cred.pid, cred.uid, geteuid(), m_socketPath);
            close(fd);
            continue;
        }
        if (m_conns.size() >= m_opt.maxConnections) {
            ++m_refused;
            if (!m_opt.quiet)
                say("gpuspy: refused a connection from pid {}: {} connections already open\n", cred.pid,
                           m_conns.size());
            close(fd);
            continue;
        }
        adopt(fd);
        m_conns.back()->peerPid = uint32_t(cred.pid);
    }
}

void Server::flush(Conn& c, bool all)
{
    if (!m_opt.writer || c.stream < 0) return;
    const size_t pending = c.ingest.pendingValidated();
    if (pending == 0 || (!all && pending < m_opt.flushBytes)) return;
    m_out.clear();
    c.ingest.takeValidated(m_out);
    m_opt.writer->writeStream(uint32_t(c.stream), m_out.data(), m_out.size());
}

void Server::flushAll()
{
    for (auto& c : m_conns) flush(*c, true);
    m_lastFlushNs = monotonicNs();
    m_sinceFlushAll = 0;
}

bool Server::readSome(Conn& c)
{
    const ssize_t n = read(c.fd, m_buf.data(), m_buf.size());
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
        finishConn(c, true);  // ECONNRESET and the like: the peer is gone, like EOF
        return false;
    }
    if (n == 0) {
        finishConn(c, true);
        return false;
    }
    return ingest(c, m_buf.data(), size_t(n));
}

void Server::startStream(Conn& c)
{
    if (c.stream >= 0 || !c.ingest.hasHeader()) return;
    // The stream header is valid: from now on this connection is a process of the capture.
    c.stream = int(m_streams++);
    m_processes.emplace_back();
    if (m_opt.writer && m_opt.writer->addStream() != uint32_t(c.stream))
        throw std::logic_error("capture writer shared with another server");
    if (m_opt.listener) m_opt.listener->onHeader(uint32_t(c.stream), c.ingest.header());
}

bool Server::ingest(Conn& c, const uint8_t* data, size_t n)
{
    const bool ok = c.ingest.feed(data, n);
    startStream(c);
    if (!ok) {
        finishConn(c, false);
        return false;
    }
    flush(c, false);
    m_sinceFlushAll += n;
    if (m_sinceFlushAll > kMaxUnflushed) flushAll();
    return true;
}

void Server::finishConn(Conn& c, bool eof)
{
    if (eof && c.ingest.bytesReceived() > 0) c.ingest.finish();
    if (c.ingest.failed()) {
        ++m_bad;
        if (!m_opt.quiet)
            say("gpuspy: closed the connection from pid {}: {} ({} records kept)\n", c.peerPid,
                       c.ingest.error(), c.ingest.records());
    }
    flush(c, true);
    m_closedCalls += c.ingest.calls();
    if (c.stream >= 0) {
        if (m_opt.writer && c.ingest.failed()) m_opt.writer->writeError(uint32_t(c.stream), c.ingest.error());
        Process& p = c.ingest.process();
        if (m_opt.writer) {
            m_processes[size_t(c.stream)] = keptForSymbols(std::move(p));
        } else if (m_opt.listener) {
            // The listener holds what it wants (the flight recorder, a bounded number of processes):
            // a long run with many short processes must not pile up their definitions here.
            m_processes[size_t(c.stream)].pid = p.pid;
            m_processes[size_t(c.stream)].command = std::move(p.command);
        } else {
            m_processes[size_t(c.stream)] = std::move(p);
        }
        if (m_opt.listener) m_opt.listener->onFinished(uint32_t(c.stream));
    }
    close(c.fd);
    c.fd = -1;
    m_lastChangeNs = monotonicNs();
}

void Server::poll(int timeoutMs)
{
    std::vector<pollfd> fds;
    fds.reserve(m_conns.size() + 2);
    fds.push_back({m_wake[0], POLLIN, 0});
    if (m_listen >= 0) fds.push_back({m_listen, POLLIN, 0});
    const size_t first = fds.size();
    for (auto& c : m_conns) fds.push_back({c->fd, POLLIN, 0});

    const int rc = ::poll(fds.data(), fds.size(), timeoutMs);
    if (rc < 0 && errno != EINTR) throw std::runtime_error("poll: " + errnoText());
    if (rc > 0) {
        if (fds[0].revents) {
            char drain[64];
            while (read(m_wake[0], drain, sizeof drain) > 0) {
            }
        }
        for (size_t i = first; i < fds.size(); ++i) {
            if (fds[i].revents) readSome(*m_conns[i - first]);
        }
        if (m_listen >= 0 && fds[1].revents) acceptAll();
    }
    m_conns.erase(std::remove_if(m_conns.begin(), m_conns.end(), [](const std::unique_ptr<Conn>& c) { return c->fd < 0; }),
                  m_conns.end());
    if (monotonicNs() - m_lastFlushNs >= kFlushIntervalNs) flushAll();
}

void Server::closeAll()
{
    if (m_listen >= 0) {
        // Connections still in the backlog were made before the stop: take them too.
        acceptAll();
        close(m_listen);
        m_listen = -1;
        unlink(m_socketPath.c_str());
    }
    // What the peers already sent is in the socket buffers: read it, without waiting for more.
    for (auto& c : m_conns) {
        for (int i = 0; i < 4096 && c->fd >= 0; ++i) {
            const ssize_t n = recv(c->fd, m_buf.data(), m_buf.size(), MSG_DONTWAIT);
            if (n <= 0) {
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                if (n < 0 && errno == EINTR) continue;
                finishConn(*c, true);
                break;
            }
            if (!ingest(*c, m_buf.data(), size_t(n))) break;
        }
        if (c->fd >= 0) {
            // Still open: the process is running. What arrived is kept; a partial record is not.
            finishConn(*c, false);
        }
    }
    m_conns.clear();
}

std::vector<uint32_t> Server::connectedPids() const
{
    std::vector<uint32_t> pids;
    for (const auto& c : m_conns)
        if (c->fd >= 0 && c->stream >= 0) pids.push_back(c->peerPid);
    return pids;
}

size_t Server::sendToClients(const void* data, size_t n)
{
    size_t sent = 0;
    for (const auto& c : m_conns) {
        if (c->fd < 0 || c->stream < 0) continue;
        if (send(c->fd, data, n, MSG_DONTWAIT | MSG_NOSIGNAL) == ssize_t(n)) ++sent;
    }
    return sent;
}

uint64_t Server::callsReceived() const
{
    uint64_t n = m_closedCalls;
    for (const auto& c : m_conns)
        if (c->fd >= 0) n += c->ingest.calls();
    return n;
}

Capture Server::takeCapture()
{
    if (!m_conns.empty()) throw std::logic_error("Server::takeCapture with connections open");
    Capture cap;
    cap.processes = std::move(m_processes);
    cap.badStreams = m_bad;
    m_processes.clear();
    return cap;
}

}  // namespace gpuspy::collect
