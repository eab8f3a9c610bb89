// The Unix-socket collector: concurrent clients, a bad stream dropping only its own connection,
// the private socket, peer credentials, and streaming into a capture.
#include "collector/ingest/capture_file.h"
#include "collector/live/server.h"
#include "tests/unit/collector/streams.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <thread>

using namespace gpuspy;
using namespace gpuspy::collect;
using gpuspy::test::sampleProcess;

namespace {

int connectTo(const std::string& path)
{
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void sendAll(int fd, const uint8_t* p, size_t n)
{
    while (n > 0) {
        const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        ASSERT_GT(w, 0) << std::strerror(errno);
        p += w;
        n -= size_t(w);
    }
}

void pollUntil(Server& s, const std::function<bool()>& done)
{
    for (int i = 0; i < 400 && !done(); ++i) s.poll(10);
    ASSERT_TRUE(done());
}

// Whether the peer has closed `fd` (reads EOF or an error).
bool closedByPeer(int fd)
{
    char b;
    for (int i = 0; i < 100; ++i) {
        const ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN)) return true;
        usleep(10000);
    }
    return false;
}

}  // namespace

TEST(CollectorServer, SocketIsPrivateAndRemovedAfterwards)
{
    std::string dir, path;
    {
        Server s(ServerOptions{});
        path = s.socketPath();
        dir = path.substr(0, path.rfind('/'));
        struct stat st{};
        ASSERT_EQ(stat(dir.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0700u);
        ASSERT_EQ(lstat(path.c_str(), &st), 0);
        EXPECT_TRUE(S_ISSOCK(st.st_mode));
        EXPECT_EQ(st.st_mode & 0777, 0600u);
    }
    EXPECT_NE(access(path.c_str(), F_OK), 0);
    EXPECT_NE(access(dir.c_str(), F_OK), 0);
}

TEST(CollectorServer, PrivateDirectoryUnderXdgRuntimeDir)
{
    char t[] = "/tmp/gpuspy-xdg-XXXXXX";
    const std::string xdg = mkdtemp(t);
    const char* old = std::getenv("XDG_RUNTIME_DIR");
    const std::string saved = old ? old : "";
    setenv("XDG_RUNTIME_DIR", xdg.c_str(), 1);
    {
        Server s(ServerOptions{});
        EXPECT_EQ(s.socketPath().rfind(xdg + "/gpuspy-", 0), 0u) << s.socketPath();
    }
    if (old) setenv("XDG_RUNTIME_DIR", saved.c_str(), 1); else unsetenv("XDG_RUNTIME_DIR");
    rmdir(xdg.c_str());
}

TEST(CollectorServer, GarbageDropsOnlyItsOwnConnection)
{
    ServerOptions o;
    o.quiet = true;
    Server s(o);
    auto good = sampleProcess(1001);
    const int a = connectTo(s.socketPath());
    const int b = connectTo(s.socketPath());
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    // Interleave: half of the good stream, the garbage, the rest.
    sendAll(a, good.bytes.data(), 100);
    const char junk[] = "GET / HTTP/1.1\r\nHost: gpuspy\r\nUser-Agent: not a gpuspy shim\r\n\r\n";
    sendAll(b, reinterpret_cast<const uint8_t*>(junk), sizeof junk);
    pollUntil(s, [&] { return s.badStreams() == 1; });
    EXPECT_TRUE(closedByPeer(b));
    EXPECT_EQ(s.openConnections(), 1u);
    sendAll(a, good.bytes.data() + 100, good.bytes.size() - 100);
    close(a);
    close(b);
    pollUntil(s, [&] { return s.openConnections() == 0; });
    s.closeAll();
    Capture c = s.takeCapture();
    EXPECT_EQ(c.badStreams, 1u);
    ASSERT_EQ(c.processes.size(), 1u);
    EXPECT_EQ(c.processes[0].pid, 1001u);
    EXPECT_EQ(c.processes[0].calls.size(), 3u);
    EXPECT_TRUE(c.processes[0].ended);
    EXPECT_EQ(c.processes[0].streamError, "");
}

TEST(CollectorServer, BadStreamAfterAValidPrefixKeepsThePrefix)
{
    ServerOptions o;
    o.quiet = true;
    Server s(o);
    gpuspy::test::StreamBuilder good(77);
    good.process(77, 1, "app").api(1, "cuLaunchKernel", wire::Category::Launch);
    auto bytes = good.bytes;
    const uint64_t lie = ~0ull;  // a record header with an impossible size, right after whole records
    bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(&lie), reinterpret_cast<const uint8_t*>(&lie) + 8);
    const int fd = connectTo(s.socketPath());
    sendAll(fd, bytes.data(), bytes.size());
    pollUntil(s, [&] { return s.badStreams() == 1; });
    close(fd);
    s.closeAll();
    Capture c = s.takeCapture();
    ASSERT_EQ(c.processes.size(), 1u);
    EXPECT_EQ(c.processes[0].pid, 77u);
    EXPECT_NE(c.processes[0].streamError.find("at offset"), std::string::npos) << c.processes[0].streamError;
    EXPECT_EQ(c.processes[0].apis.size(), 1u);
    EXPECT_EQ(c.processes[0].command, "app");
}

TEST(CollectorServer, ManyClientsAtOnceByteByByte)
{
    ServerOptions o;
    o.quiet = true;
    Server s(o);
    const int n = 20;
    std::vector<int> fds;
    std::vector<std::vector<uint8_t>> streams;
    for (int i = 0; i < n; ++i) {
        fds.push_back(connectTo(s.socketPath()));
        ASSERT_GE(fds.back(), 0);
        streams.push_back(sampleProcess(uint32_t(5000 + i)).bytes);
    }
    for (size_t at = 0; at < streams[0].size(); at += 13) {
        for (int i = 0; i < n; ++i) sendAll(fds[size_t(i)], streams[size_t(i)].data() + at, std::min<size_t>(13, streams[0].size() - at));
        s.poll(0);
    }
    for (int fd : fds) close(fd);
    pollUntil(s, [&] { return s.openConnections() == 0 && s.acceptedConnections() == uint64_t(n); });
    s.closeAll();
    Capture c = s.takeCapture();
    EXPECT_EQ(c.badStreams, 0u);
    ASSERT_EQ(c.processes.size(), size_t(n));
    for (const Process& p : c.processes) {
        EXPECT_EQ(p.calls.size(), 3u);
        EXPECT_TRUE(p.ended);
    }
}

TEST(CollectorServer, StreamsIntoACaptureAsDataArrives)
{
    char t[] = "/tmp/gpuspy-srv-XXXXXX";
    const std::string dir = mkdtemp(t);
    const std::string path = dir + "/c.gspy";
    {
        CaptureWriter w(path, false);
        ServerOptions o;
        o.quiet = true;
        o.writer = &w;
        o.flushBytes = 64;  // flush often: the capture must hold whole validated records only
        Server s(o);
        const int a = connectTo(s.socketPath());
        const int b = connectTo(s.socketPath());
        auto pa = sampleProcess(1);
        auto pb = sampleProcess(2);
        for (size_t at = 0; at < pa.bytes.size(); at += 50) {
            sendAll(a, pa.bytes.data() + at, std::min<size_t>(50, pa.bytes.size() - at));
            sendAll(b, pb.bytes.data() + at, std::min<size_t>(50, pb.bytes.size() - at));
            s.poll(0);
            s.poll(0);
        }
        const char junk[] = "garbage";
        const int g = connectTo(s.socketPath());
        sendAll(g, reinterpret_cast<const uint8_t*>(junk), sizeof junk);
        close(a);
        close(b);
        close(g);
        pollUntil(s, [&] { return s.openConnections() == 0 && s.acceptedConnections() == 3; });
        s.closeAll();
        Capture c = s.takeCapture();
        w.finish(c.badStreams);
    }
    ReadInfo info;
    Capture r = readCapture(path, {}, &info);
    EXPECT_EQ(info.damage, "");
    EXPECT_EQ(r.badStreams, 1u);
    ASSERT_EQ(r.processes.size(), 2u);
    EXPECT_EQ(r.processes[0].calls.size(), 3u);
    EXPECT_EQ(r.processes[1].calls.size(), 3u);
    EXPECT_TRUE(r.processes[1].ended);
    std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(CollectorServer, StopKeepsWhatOpenConnectionsSent)
{
    ServerOptions o;
    o.quiet = true;
    Server s(o);
    auto p = sampleProcess(9);
    const int fd = connectTo(s.socketPath());
    sendAll(fd, p.bytes.data(), 300);  // mid-record, still connected
    s.poll(50);
    s.closeAll();
    Capture c = s.takeCapture();
    close(fd);
    ASSERT_EQ(c.processes.size(), 1u);
    EXPECT_EQ(c.processes[0].pid, 9u);
    EXPECT_FALSE(c.processes[0].ended);
    EXPECT_EQ(c.badStreams, 0u);
}

TEST(CollectorServer, EmptyConnectionsAreNotBad)
{
    ServerOptions o;
    o.quiet = true;
    Server s(o);
    close(connectTo(s.socketPath()));
    pollUntil(s, [&] { return s.acceptedConnections() == 1 && s.openConnections() == 0; });
    s.closeAll();
    Capture c = s.takeCapture();
    EXPECT_EQ(c.badStreams, 0u);
    EXPECT_TRUE(c.processes.empty());
}

TEST(CollectorServer, SocketPairClientsWork)
{
    ServerOptions o;
    o.quiet = true;
    Server s(o);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    s.adopt(sv[0]);
    auto p = sampleProcess(3);
    sendAll(sv[1], p.bytes.data(), p.bytes.size());
    close(sv[1]);
    pollUntil(s, [&] { return s.openConnections() == 0; });
    s.closeAll();
    EXPECT_EQ(s.takeCapture().processes.size(), 1u);
}

TEST(CollectorServer, RefusesAnotherUser)
{
    if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
    // A socket path the other user can reach, so the peer-credential check is what refuses it.
    char t[] = "/tmp/gpuspy-uid-XXXXXX";
    const std::string dir = mkdtemp(t);
    chmod(dir.c_str(), 0777);
    ServerOptions o;
    o.quiet = true;
    o.socketPath = dir + "/sock";
    Server s(o);
    chmod(o.socketPath.c_str(), 0777);
    const pid_t child = fork();
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        const int fd = connectTo(o.socketPath);
        if (fd < 0) _exit(4);
        auto p = sampleProcess(55);
        (void)!send(fd, p.bytes.data(), p.bytes.size(), MSG_NOSIGNAL);
        char b;
        // Closed on us: EOF, or ECONNRESET when the server closed with our bytes unread.
        _exit(read(fd, &b, 1) <= 0 ? 0 : 5);
    }
    int status = 0;
    for (int i = 0; i < 300 && waitpid(child, &status, WNOHANG) == 0; ++i) s.poll(10);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(s.refusedConnections(), 1u);
    s.closeAll();
    EXPECT_TRUE(s.takeCapture().processes.empty());
    rmdir(dir.c_str());
}

TEST(CollectorServer, UserSocketPathRefusesToReplaceAFileOrALiveCollector)
{
    char t[] = "/tmp/gpuspy-path-XXXXXX";
    const std::string dir = mkdtemp(t);
    const std::string file = dir + "/not-a-socket";
    close(open(file.c_str(), O_CREAT | O_WRONLY, 0600));
    ServerOptions o;
    o.socketPath = file;
    try {
        Server s(o);
        FAIL();
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("not a socket"), std::string::npos) << e.what();
    }
    o.socketPath = dir + "/sock";
    {
        Server live(o);
        try {
            Server second(o);
            FAIL();
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("another collector"), std::string::npos) << e.what();
        }
    }
    std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(CollectorServer, KeepsUpWithAFastClientAndWritesEveryRecord)
{
    char t[] = "/tmp/gpuspy-fast-XXXXXX";
    const std::string dir = mkdtemp(t);
    gpuspy::test::StreamBuilder s(4242);
    s.api(1, "cuLaunchKernel", wire::Category::Launch).kernel(1, "_Z1kv");
    const int n = 100000;
    for (int i = 1; i <= n; ++i) s.launch(uint64_t(i), 1, 1, uint64_t(i) * 1000, uint64_t(i) * 1000 + 300);
    s.end(uint64_t(n + 1) * 1000, s.records + 1);
    {
        CaptureWriter w(dir + "/f.gspy", false);
        ServerOptions o;
        o.quiet = true;
        o.writer = &w;
        Server srv(o);
        const int fd = connectTo(srv.socketPath());
        std::thread client([&] {
            sendAll(fd, s.bytes.data(), s.bytes.size());
            close(fd);
        });
        const uint64_t t0 = monotonicNs();
        pollUntil(srv, [&] { return srv.acceptedConnections() == 1 && srv.openConnections() == 0; });
        client.join();
        const double secs = double(monotonicNs() - t0) / 1e9;
        std::printf("server: %zu bytes in %.3f s (%.0f MB/s)\n", s.bytes.size(), secs, double(s.bytes.size()) / secs / 1e6);
        srv.closeAll();
        Capture c = srv.takeCapture();
        ASSERT_EQ(c.processes.size(), 1u);
        EXPECT_EQ(srv.callsReceived(), uint64_t(n));
        EXPECT_TRUE(c.processes[0].calls.empty());  // written to the capture, not kept
        w.finish(c.badStreams);
    }
    Capture r = readCapture(dir + "/f.gspy");
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].calls.size(), size_t(n));
    EXPECT_TRUE(r.processes[0].ended);
    std::system(("rm -rf '" + dir + "'").c_str());
}
