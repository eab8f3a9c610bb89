// bench/stream_sink.cpp: a collector stand-in for the benchmarks: takes gpuspy streams from a Unix
// socket (or reads stream files), validates and counts their records, keeps nothing, and prints one
// JSON line per stream: bytes, records by kind, and the shim's own totals from its End record
// (records made, dropped). The hook benchmarks produce gigabytes a minute; storing them would
// measure the disk.
//
//   stream_sink --socket PATH [--timeout S]   serve until the first connection closes
//   stream_sink FILE...                       count stream files (or the stream in a shim's capture file)
#include "tests/shim/shim_capture_file.h"
#include "wire/codec.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace gpuspy;

struct Counts {
    uint64_t bytes = 0, records = 0, calls = 0, spans = 0, stackDefs = 0, stackFrames = 0, defs = 0;
    bool ended = false;
    wire::EndBody end{};
};

class Counter {
public:
    bool feed(const void* p, size_t n)
    {
        m_counts.bytes += n;
        return m_decoder.feed(p, n, [this](const wire::RecordView& v) {
            ++m_counts.records;
            switch (v.type) {
            case wire::RecordType::Call: ++m_counts.calls; break;
            case wire::RecordType::GpuSpan: ++m_counts.spans; break;
            case wire::RecordType::StackDef:
                ++m_counts.stackDefs;
                m_counts.stackFrames += v.as<wire::StackDefBody>().depth;
                break;
            case wire::RecordType::End:
                m_counts.ended = true;
                m_counts.end = v.as<wire::EndBody>();
                break;
            default: ++m_counts.defs; break;
            }
        });
    }
    void print(const char* source)
    {
        m_decoder.finish();
        const Counts& c = m_counts;
        const double dropPct = c.end.recordsMade ? 100.0 * double(c.end.recordsDropped) / double(c.end.recordsMade) : 0.0;
        printf("{\"source\":\"%s\",\"bytes\":%llu,\"records\":%llu,\"calls\":%llu,\"spans\":%llu,\"stack_defs\":%llu,"
               "\"stack_frames\":%llu,\"other\":%llu,\"ended\":%s,\"made\":%llu,\"dropped\":%llu,\"dropped_pct\":%.3f,"
               "\"bytes_per_record\":%.2f,\"error\":\"%s\"}\n",
               source, (unsigned long long)c.bytes, (unsigned long long)c.records, (unsigned long long)c.calls,
               (unsigned long long)c.spans, (unsigned long long)c.stackDefs, (unsigned long long)c.stackFrames,
               (unsigned long long)c.defs, c.ended ? "true" : "false", (unsigned long long)c.end.recordsMade,
               (unsigned long long)c.end.recordsDropped, dropPct, c.records ? double(c.bytes) / double(c.records) : 0.0,
               m_decoder.error() == wire::DecodeError::None ? "" : wire::decodeErrorName(m_decoder.error()));
        fflush(stdout);
    }

private:
    wire::StreamDecoder m_decoder;
    Counts m_counts;
};

int serve(const char* path, int timeoutS)
{
    int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (ls < 0 || strlen(path) >= sizeof addr.sun_path) {
        perror("stream_sink: socket");
        return 1;
    }
    strcpy(addr.sun_path, path);
    unlink(path);
    if (bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(ls, 4) != 0) {
        perror("stream_sink: bind");
        return 1;
    }
    pollfd pfd{ls, POLLIN, 0};
    if (poll(&pfd, 1, timeoutS * 1000) <= 0) {
        fprintf(stderr, "stream_sink: nobody connected to %s within %d s\n", path, timeoutS);
        unlink(path);
        return 1;
    }
    int fd = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    close(ls);
    unlink(path);
    if (fd < 0) {
        perror("stream_sink: accept");
        return 1;
    }
    Counter counter;
    std::vector<uint8_t> buf(1 << 20);
    for (;;) {
        ssize_t r = read(fd, buf.data(), buf.size());
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        counter.feed(buf.data(), size_t(r));  // a bad stream is reported, and still drained
    }
    close(fd);
    counter.print(path);
    return 0;
}

int countFile(const char* path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    Counter counter;
    std::vector<uint8_t> data, buf(1 << 20);
    for (;;) {
        ssize_t r = read(fd, buf.data(), buf.size());
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        data.insert(data.end(), buf.begin(), buf.begin() + r);
    }
    close(fd);
    test::unwrapShimCapture(data);  // a capture file the shim wrote alone: its stream
    counter.feed(data.data(), data.size());
    counter.print(path);
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc >= 3 && strcmp(argv[1], "--socket") == 0) {
        int timeout = 300;
        if (argc >= 5 && strcmp(argv[3], "--timeout") == 0) timeout = atoi(argv[4]);
        return serve(argv[2], timeout);
    }
    if (argc < 2) {
        fprintf(stderr, "usage: stream_sink --socket PATH [--timeout S] | stream_sink FILE...\n");
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; ++i) rc |= countFile(argv[i]);
    return rc;
}
