// tests/collector/synth_client.cpp: a stand-in for a long-running traced process in the collector's
// memory test. It connects to $GPUSPY_SOCKET (or SOCKET) and sends the synthetic stream of
// bench/synth_stream.h, RECORDS Call and GpuSpan records, as fast as the collector takes them; then
// prints what holding those records would cost: "records N calls C spans S bytes B held_bytes H",
// H being the bytes of the decoded bodies alone (what a collector keeping every record needs at least).
//
//   synth_client RECORDS [SOCKET]
#include "bench/synth_stream.h"
#include "wire/codec.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using namespace gpuspy;

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

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: synth_client RECORDS [SOCKET]\n");
        return 2;
    }
    const uint64_t records = std::strtoull(argv[1], nullptr, 10);
    const char* path = argc > 2 ? argv[2] : std::getenv("GPUSPY_SOCKET");
    if (!path || !*path) {
        std::fprintf(stderr, "synth_client: no socket (GPUSPY_SOCKET or the second argument)\n");
        return 2;
    }
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::fprintf(stderr, "synth_client: cannot connect to %s: %s\n", path, std::strerror(errno));
        return 1;
    }

    bench::SynthStream stream(records);
    wire::StreamDecoder counter;  // counts what was sent, by type, the way the collector decodes it
    uint64_t calls = 0, spans = 0, bytes = 0;
    std::vector<uint8_t> buf;
    while (true) {
        buf.clear();
        if (stream.read(buf, 256u << 10) == 0) break;
        counter.feed(buf.data(), buf.size(), [&](const wire::RecordView& v) {
            if (v.type == wire::RecordType::Call) ++calls;
            if (v.type == wire::RecordType::GpuSpan) ++spans;
        });
        if (!sendAll(fd, buf.data(), buf.size())) {
            std::fprintf(stderr, "synth_client: send: %s\n", std::strerror(errno));
            return 1;
        }
        bytes += buf.size();
    }
    close(fd);
    const uint64_t held = calls * sizeof(wire::CallBody) + spans * sizeof(wire::GpuSpanBody);
    std::printf("records %llu calls %llu spans %llu bytes %llu held_bytes %llu\n",
                (unsigned long long)stream.recordsWritten(), (unsigned long long)calls, (unsigned long long)spans,
                (unsigned long long)bytes, (unsigned long long)held);
    return 0;
}
