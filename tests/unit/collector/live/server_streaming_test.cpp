// The collector with a capture writer keeps definitions, not records: the records are in the capture,
// a process that left early is still symbolized at the end, and `record` prints the report of the
// capture through the same streaming path as `gpuspy report`.
#include "collector/ingest/capture_file.h"
#include "collector/cli/cli.h"
#include "collector/live/server.h"
#include "tests/unit/collector/streams.h"

#if GPUSPY_HAVE_REPORT
#include "collector/analyze/analyze.h"
#include "collector/report/report.h"
#endif

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

using namespace gpuspy;
using namespace gpuspy::collect;
using gpuspy::test::sampleProcess;

namespace {

void sendAll(int fd, const uint8_t* p, size_t n)
{
    while (n > 0) {
        const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        ASSERT_GT(w, 0);
        p += w;
        n -= size_t(w);
    }
}

void pollUntil(Server& s, const std::function<bool()>& done)
{
    for (int i = 0; i < 400 && !done(); ++i) s.poll(10);
    ASSERT_TRUE(done());
}

struct TempDir {
    std::string path;
    TempDir()
    {
        char t[] = "/tmp/gpuspy-stream-XXXXXX";
        path = mkdtemp(t);
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// Runs a server with a writer on `path`: process 1 sends everything and leaves while process 2 is
// still connected (half its stream sent); then the run ends, symbols and the End chunk are written.
// Returns what the server held at the end.
Capture collectTwo(const std::string& path, uint64_t& callsReceived)
{
    CaptureWriter w(path, false);
    ServerOptions o;
    o.quiet = true;
    o.writer = &w;
    o.flushBytes = 64;
    Server s(o);
    int early[2], late[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, early), 0);
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, late), 0);
    s.adopt(early[0]);
    s.adopt(late[0]);
    const auto a = sampleProcess(1).bytes;
    const auto b = sampleProcess(2).bytes;
    sendAll(early[1], a.data(), a.size());
    sendAll(late[1], b.data(), b.size() / 2);
    close(early[1]);
    pollUntil(s, [&] { return s.openConnections() == 1; });
    s.closeAll();
    close(late[1]);
    callsReceived = s.callsReceived();
    Capture c = s.takeCapture();
    Capture held = c;  // what the server kept, before finishing adds symbols
    cli::finishCapture(c, w);
    return held;
}

}  // namespace

TEST(CollectorServerStreaming, KeepsDefinitionsNotRecordsAndSymbolizesProcessesThatLeftEarly)
{
    TempDir dir;
    const std::string path = dir.path + "/c.gspy";
    uint64_t calls = 0;
    const Capture held = collectTwo(path, calls);
    ASSERT_EQ(held.processes.size(), 2u);
    const Process& early = held.processes[0];
    EXPECT_EQ(early.pid, 1u);
    EXPECT_TRUE(early.ended);
    EXPECT_TRUE(early.calls.empty());
    EXPECT_TRUE(early.spans.empty());
    EXPECT_TRUE(early.nvtx.empty());
    EXPECT_EQ(early.stacks.count(5), 1u);    // what symbolizing needs after the run stays
    EXPECT_EQ(early.modules.size(), 1u);
    EXPECT_EQ(early.command, "./app --flag");
    EXPECT_TRUE(early.apis.empty());          // the other definitions are in the capture
    EXPECT_TRUE(early.kernels.empty());
    EXPECT_GE(calls, 3u);                    // counted as they passed

    ReadInfo info;
    const Capture back = readCapture(path, {}, &info);
    EXPECT_EQ(info.damage, "");
    ASSERT_EQ(back.processes.size(), 2u);
    EXPECT_EQ(back.processes[0].calls.size(), 3u);
    EXPECT_EQ(back.processes[0].spans.size(), 2u);
    EXPECT_EQ(back.processes[0].nvtx.size(), 1u);
    EXPECT_EQ(back.processes[0].apis.size(), 2u);
    EXPECT_EQ(back.processes[0].kernels.size(), 1u);
    EXPECT_EQ(back.processes[0].calls.size() + back.processes[1].calls.size(), calls);
    // The process that left first was symbolized at the end from the definitions the server kept.
    ASSERT_EQ(back.processes[0].symbols.count(0x401000), 1u);
    EXPECT_EQ(back.processes[0].symbols.at(0x401000).back().module, "/bin/app");
    EXPECT_FALSE(back.processes[1].ended);  // still connected when the run ended: what came is kept
}

#if GPUSPY_HAVE_REPORT
TEST(CollectorServerStreaming, ReportOfCaptureIsTheAnalysisOfTheWholeCapture)
{
    // Processes smaller than the analysis window: the streamed report equals the in-memory one.
    TempDir dir;
    const std::string path = dir.path + "/c.gspy";
    uint64_t calls = 0;
    collectTwo(path, calls);
    for (const char* format : {"text", "json", "csv"}) {
        cli::ReportRequest request;
        request.format = format;
        cli::ReportSource source;
        const std::string streamed = cli::reportOfCapture(path, request, source);
        const Report whole = cli::analyzeAndPredict(readCapture(path), ReportOptions{});
        std::string expected = request.format == "json" ? renderJson(whole)
                               : request.format == "csv" ? renderCsv(whole)
                                                         : renderText(whole, TextOptions{});
        if (expected.empty() || expected.back() != '\n') expected += '\n';
        EXPECT_EQ(streamed, expected) << format;
        ASSERT_EQ(source.capture.processes.size(), 2u);
        // The reader keeps the calls for the replay only up to its budget (far above these processes').
        EXPECT_EQ(source.capture.processes[0].calls.size() + source.capture.processes[1].calls.size(), calls);
        EXPECT_LE(calls, cli::kReplayCallBudget);
        EXPECT_EQ(source.info.damage, "");
    }
}
#endif

TEST(CollectorServerStreaming, ReportOfADamagedCaptureSaysWhere)
{
    TempDir dir;
    const std::string path = dir.path + "/c.gspy";
    uint64_t calls = 0;
    collectTwo(path, calls);
    const std::string cut = dir.path + "/cut.gspy";
    ASSERT_EQ(std::system(("head -c -5 '" + path + "' > '" + cut + "'").c_str()), 0);  // into the End chunk
    cli::ReportSource source;
    cli::reportOfCapture(cut, cli::ReportRequest{}, source);
    EXPECT_NE(source.info.damage.find("at offset"), std::string::npos) << source.info.damage;
    EXPECT_THROW(cli::reportOfCapture(dir.path + "/missing.gspy", cli::ReportRequest{}, source), std::runtime_error);
}
