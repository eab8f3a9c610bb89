// tests/collector/fake_shim.cpp: a stand-in for libgpuspy.so in the collector's CLI tests. Preloaded,
// it connects to $GPUSPY_SOCKET at load time and sends a small valid stream for its process (or
// garbage with FAKE_SHIM_GARBAGE=1; or writes the stream to $FAKE_SHIM_FILE, as the shim does alone), so `gpuspy record` is tested without the real shim or a GPU.
#include "wire/codec.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

uint64_t now()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void writeAll(int fd, const uint8_t* p, size_t n)
{
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= size_t(w);
    }
}

__attribute__((constructor)) void fakeShimStart()
{
    using namespace gpuspy::wire;
    int fd = -1;
    if (const char* file = std::getenv("FAKE_SHIM_FILE")) {
        // A bare stream file, as the real shim writes when there is no collector.
        fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    } else if (const char* path = std::getenv("GPUSPY_SOCKET")) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
        if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) return;

    std::vector<uint8_t> out(1 << 16);
    size_t n = 0;
    const char* garbage = std::getenv("FAKE_SHIM_GARBAGE");
    if (garbage && *garbage == '1') {
        const char junk[] = "GET / HTTP/1.0\r\n\r\nthis is not a gpuspy stream at all";
        writeAll(fd, reinterpret_cast<const uint8_t*>(junk), sizeof junk);
        close(fd);
        return;
    }
    const uint64_t t0 = now();
    const StreamHeader h = makeStreamHeader(uint32_t(getpid()), t0, 0);
    std::memcpy(out.data(), &h, sizeof h);
    n += sizeof h;

    char cmd[512];
    ssize_t len = 0;
    const int cfd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (cfd >= 0) {
        len = read(cfd, cmd, sizeof cmd);
        close(cfd);
    }
    ProcessBody p{uint32_t(getpid()), uint32_t(getppid()), t0, 0, uint32_t(len > 0 ? len : 0), 0};
    n += encodeVar(out.data() + n, out.size() - n, p, cmd, p.length);
    ApiDefBody api{1, Category::Launch, 0, 14};
    n += encodeVar(out.data() + n, out.size() - n, api, "cuLaunchKernel", 14);
    KernelDefBody k{1, 10};
    n += encodeVar(out.data() + n, out.size() - n, k, "_Z6kernelv", 10);
    CallBody c{};
    c.seq = 1;
    c.beginNs = t0 + 100;
    c.endNs = t0 + 900;
    c.tid = uint32_t(getpid());
    c.apiId = 1;
    c.category = Category::Launch;
    c.flags = kCallAsync | kCallDeviceWork | kCallGpuTimed;
    c.args.launch.kernelId = 1;
    c.args.launch.grid[0] = c.args.launch.grid[1] = c.args.launch.grid[2] = 1;
    c.args.launch.block[0] = 32;
    c.args.launch.block[1] = c.args.launch.block[2] = 1;
    n += encode(out.data() + n, out.size() - n, c);
    GpuSpanBody s{1, t0 + 1000, t0 + 6000, 0, 0};
    n += encode(out.data() + n, out.size() - n, s);
    EndBody e{};
    e.endNs = t0 + 7000;
    e.recordsMade = 6;
    n += encode(out.data() + n, out.size() - n, e);
    writeAll(fd, out.data(), n);
    close(fd);
}

}  // namespace
