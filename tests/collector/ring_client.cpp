// tests/collector/ring_client.cpp: a traced process with known launches at known times, for the flight
// recorder's tests. It connects to SOCKET and sends one process's stream: for each PHASE
// "NAME=COUNT@START_S/STEP_US", COUNT cuLaunchKernel calls of kernel NAME, the first at START_S seconds
// (the stream's own CLOCK_MONOTONIC), one every STEP_US microseconds, each with a GPU span; a phase named
// "copy" makes 1 MiB synchronous pageable cuMemcpyHtoD_v2 calls instead (100 us each, timed), one named
// "sync" cuStreamSynchronize calls (50 us each). Then, with --hold, it stays connected (a running server)
// until its standard input closes; with --loop it also sends the phases again every 200 ms (real time),
// 100 s later each time on its own clock, until then.
//
//   ring_client SOCKET [--hold|--loop] PHASE...
#include "wire/codec.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace gpuspy::wire;

constexpr uint32_t kPid = 5151;
constexpr uint16_t kLaunchApi = 1, kCopyApi = 2, kSyncApi = 3;

bool sendAll(int fd, const uint8_t* p, size_t n)
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

template <class Body>
void put(std::vector<uint8_t>& out, const Body& body)
{
    const size_t at = out.size();
    out.resize(at + encodedSize<Body>());
    encode(out.data() + at, out.size() - at, body);
}

template <class Body>
void putVar(std::vector<uint8_t>& out, const Body& head, const void* tail, uint32_t n)
{
    const size_t at = out.size();
    out.resize(at + encodedSize<Body>(n));
    encodeVar(out.data() + at, out.size() - at, head, tail, n);
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: ring_client SOCKET [--hold] NAME=COUNT@START_S/STEP_US...\n");
        return 2;
    }
    const char* path = argv[1];
    int first = 2;
    const bool loop = std::strcmp(argv[2], "--loop") == 0;
    const bool hold = loop || std::strcmp(argv[2], "--hold") == 0;
    if (hold) ++first;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::fprintf(stderr, "ring_client: cannot connect to %s: %s\n", path, std::strerror(errno));
        return 1;
    }
    std::vector<uint8_t> out;
    const uint64_t start = 1000000000ull;
    const StreamHeader h = makeStreamHeader(kPid, start, 1764460800000000000ull);
    out.resize(sizeof h);
    std::memcpy(out.data(), &h, sizeof h);
    const char cmd[] = "ring_server\0--serve";
    ProcessBody p{};
    p.pid = kPid;
    p.ppid = 1;
    p.startMonotonicNs = start;
    p.startRealtimeNs = 1764460800000000000ull;
    p.length = sizeof cmd - 1;
    putVar(out, p, cmd, p.length);
    ApiDefBody a{};
    a.apiId = kLaunchApi;
    a.category = Category::Launch;
    a.length = 14;
    putVar(out, a, "cuLaunchKernel", a.length);
    a.apiId = kCopyApi;
    a.category = Category::Transfer;
    a.length = 15;
    putVar(out, a, "cuMemcpyHtoD_v2", a.length);
    a.apiId = kSyncApi;
    a.category = Category::Sync;
    a.length = 19;
    putVar(out, a, "cuStreamSynchronize", a.length);
    const char dev[] = "gpuspy simulated GPU 0";
    DeviceDefBody d{0, uint32_t(sizeof dev - 1)};
    putVar(out, d, dev, d.length);
    // What joins the device to DCGM exporter's series, and the shim's running totals (gpuspy's own
    // time, 19.7 ms; calls left out while paused, none).
    DeviceInfoBody info{};
    for (int i = 0; i < 16; ++i) info.uuid[i] = uint8_t(0x10 + i);
    std::strcpy(info.pciBusId, "0000:41:00.0");
    put(out, info);
    ClockBody clk{};
    put(out, clk);
    TallyBody tally{};
    tally.timeNs = start;
    tally.overheadNs = 19700000;
    tally.window = 0xffffffffu;
    put(out, tally);

    uint64_t seq = 0, sent = 0;
    for (uint64_t round = 0;; ++round) {
    for (int i = first; i < argc; ++i) {
        char name[64];
        unsigned long long count = 0, step = 0;
        double startS = 0;
        if (std::sscanf(argv[i], "%63[^=]=%llu@%lf/%llu", name, &count, &startS, &step) != 4) {
            std::fprintf(stderr, "ring_client: bad phase '%s'\n", argv[i]);
            return 2;
        }
        const uint32_t kernelId = uint32_t(i);
        const bool copy = std::strcmp(name, "copy") == 0, sync = std::strcmp(name, "sync") == 0;
        if (!copy && !sync && round == 0) {
            KernelDefBody kd{kernelId, uint32_t(std::strlen(name))};
            putVar(out, kd, name, kd.length);
        }
        uint64_t t = start + uint64_t(startS * 1e9) + round * 100000000000ull;
        for (unsigned long long k = 0; k < count; ++k, t += step * 1000) {
            CallBody c{};
            c.seq = ++seq;
            c.beginNs = t;
            c.endNs = t + 3000;
            c.tid = kPid;
            c.apiId = kLaunchApi;
            c.category = Category::Launch;
            c.flags = kCallDeviceWork | kCallAsync | kCallGpuTimed;
            c.device = 0;
            c.args.launch.kernelId = kernelId;
            c.args.launch.grid[0] = c.args.launch.block[0] = 128;
            c.args.launch.grid[1] = c.args.launch.grid[2] = c.args.launch.block[1] = c.args.launch.block[2] = 1;
            GpuSpanBody s{};
            s.seq = c.seq;
            s.beginNs = t + 5000;
            s.endNs = t + 25000;
            s.device = 0;
            if (copy) {
                c.apiId = kCopyApi;
                c.category = Category::Transfer;
                c.endNs = t + 100000;
                c.flags = kCallDeviceWork | kCallGpuTimed | kCallImplicitSync;
                c.args = CallArgs{};
                c.args.transfer.bytes = 1u << 20;
                c.args.transfer.direction = Direction::HtoD;
                c.args.transfer.srcMem = MemKind::Pageable;
                c.args.transfer.dstMem = MemKind::Device;
                s.beginNs = t + 10000;
                s.endNs = t + 90000;
            } else if (sync) {
                c.apiId = kSyncApi;
                c.category = Category::Sync;
                c.endNs = t + 50000;
                c.flags = 0;
                c.args = CallArgs{};
            }
            put(out, c);
            if (!sync) put(out, s);
            if (out.size() > (256u << 10)) {
                if (!sendAll(fd, out.data(), out.size())) return 1;
                sent += out.size();
                out.clear();
            }
        }
    }
    if (!sendAll(fd, out.data(), out.size())) return 1;
    sent += out.size();
    out.clear();
    if (round == 0) {
        std::printf("sent %llu bytes %llu calls\n", (unsigned long long)sent, (unsigned long long)seq);
        std::fflush(stdout);
    }
    if (!loop) break;
    pollfd in{0, POLLIN, 0};
    if (poll(&in, 1, 200) > 0) break;  // standard input closed (or written to): stop
    }
    if (hold && !loop) {
        char buf[64];
        while (read(0, buf, sizeof buf) > 0) {
        }
    }
    close(fd);
    return 0;
}
