// The flight recorder (collect --ring): the window counts back from each process's newest event, the
// definitions stay outside it, the byte bound, finished processes, and a snapshot that ingests as a
// whole process. And the server feeding it (the control requests are collector/live/control.h's).
#include "collector/live/flight_recorder.h"
#include "collector/ingest/ingest.h"
#include "collector/live/server.h"
#include "tests/unit/collector/streams.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

using namespace gpuspy;
using namespace gpuspy::collect;
using gpuspy::test::StreamBuilder;

namespace {

// Feeds a stream to the recorder as stream `stream`.
void feed(FlightRecorder& r, uint32_t stream, const std::vector<uint8_t>& bytes)
{
    wire::StreamDecoder d;
    bool header = false;
    d.feed(bytes.data(), bytes.size(), [&](const wire::RecordView& v) {
        if (!header) {
            r.onHeader(stream, d.header());
            header = true;
        }
        r.onRecord(stream, v);
    });
}

StreamBuilder launches(uint32_t pid, uint64_t from, uint64_t count, uint64_t step)
{
    StreamBuilder s(pid);
    s.process(pid, 1, std::string("./server\0", 9)).api(1, "cuLaunchKernel", wire::Category::Launch).kernel(3, "k");
    for (uint64_t i = 0; i < count; ++i) s.launch(i + 1, 1, 3, from + i * step, from + i * step + 10);
    return s;
}

}  // namespace

TEST(FlightRecorder, KeepsTheLastWindowOfEachProcessAndItsDefinitions)
{
    FlightRecorder r(1000, 1u << 20);
    feed(r, 0, launches(10, 0, 100, 100).bytes);  // the last ends at 9910: keeps those ending at 8910.. (11)
    feed(r, 1, launches(11, 50000, 3, 100).bytes);  // another process, its own window
    const auto snap = r.snapshot();
    ASSERT_EQ(snap.size(), 2u);
    EXPECT_EQ(snap[0].calls, 11u);
    EXPECT_EQ(snap[1].calls, 3u);
    const Process p = ingestStream(snap[0].bytes.data(), snap[0].bytes.size());
    EXPECT_TRUE(p.streamError.empty()) << p.streamError;
    EXPECT_EQ(p.pid, 10u);
    EXPECT_EQ(p.command, "./server");
    EXPECT_EQ(p.kernels.at(3), "k");
    ASSERT_EQ(p.calls.size(), 11u);
    EXPECT_EQ(p.calls.front().seq, 90u);
    EXPECT_EQ(r.trimmedEvents(), 89u);
}

TEST(FlightRecorder, HoldsAtMostMaxBytes)
{
    FlightRecorder r(uint64_t(1) << 60, 64u << 10);
    feed(r, 0, launches(10, 0, 5000, 100).bytes);
    EXPECT_LE(r.heldBytes(), 64u << 10);
    EXPECT_GT(r.evictedEvents(), 0u);
    EXPECT_EQ(r.heldEvents() + r.evictedEvents(), 5000u);
}

TEST(FlightRecorder, KeepsTheLatestFinishedProcesses)
{
    FlightRecorder r(1000, 1u << 20);
    for (uint32_t i = 0; i < FlightRecorder::kMaxFinished + 5; ++i) {
        feed(r, i, launches(100 + i, 0, 2, 100).bytes);
        r.onFinished(i);
    }
    EXPECT_EQ(r.processes(), FlightRecorder::kMaxFinished);
    EXPECT_EQ(r.snapshot().front().stream, 5u);
}

TEST(FlightRecorder, EmptyRingSnapshotsNothing)
{
    FlightRecorder r(1000, 1u << 20);
    StreamBuilder s(10);
    s.process(10, 1, std::string("./idle\0", 7));
    feed(r, 0, s.bytes);
    EXPECT_TRUE(r.snapshot().empty());
}

TEST(CollectorServer, GivesAListenerTheStreamsAndKeepsOnlyWhoTheyWere)
{
    ServerOptions o;
    o.quiet = true;
    FlightRecorder ring(1000, 1u << 20);
    o.listener = &ring;
    Server s(o);
    auto connectTo = [&] {
        const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, s.socketPath().c_str(), sizeof addr.sun_path - 1);
        EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        return fd;
    };
    // A stream whose first bytes come one by one is still a stream.
    const auto bytes = launches(12, 0, 4, 100).bytes;
    const int p = connectTo();
    for (size_t i = 0; i < 10; ++i) {
        ASSERT_EQ(write(p, &bytes[i], 1), 1);
        s.poll(5);
    }
    ASSERT_EQ(write(p, bytes.data() + 10, bytes.size() - 10), ssize_t(bytes.size() - 10));
    close(p);
    for (int i = 0; i < 400 && s.openConnections() + (s.acceptedConnections() < 1); ++i) s.poll(10);
    s.closeAll();
    EXPECT_EQ(s.badStreams(), 0u);
    ASSERT_EQ(ring.snapshot().size(), 1u);
    EXPECT_EQ(ring.snapshot()[0].calls, 4u);
    // The listener holds the process; the server keeps only who it was.
    const Capture cap = s.takeCapture();
    ASSERT_EQ(cap.processes.size(), 1u);
    EXPECT_EQ(cap.processes[0].pid, 12u);
    EXPECT_EQ(cap.processes[0].command, "./server");
    EXPECT_TRUE(cap.processes[0].kernels.empty());
    EXPECT_TRUE(cap.processes[0].apis.empty());
}

#include "collector/live/live_stats.h"

namespace {

void feedLive(LiveStats& live, uint32_t stream, const std::vector<uint8_t>& bytes, bool header)
{
    wire::StreamDecoder d;
    if (!header) {
        // Continue a stream already begun: a fresh decoder needs a header in front.
        const wire::StreamHeader h = wire::makeStreamHeader(10, 1000, 1);
        d.feed(&h, sizeof h, [](const wire::RecordView&) {});
    }
    bool sent = !header;
    d.feed(bytes.data(), bytes.size(), [&](const wire::RecordView& v) {
        if (!sent) {
            live.onHeader(stream, d.header());
            sent = true;
        }
        live.onRecord(stream, v);
    });
}

}  // namespace

TEST(LiveStats, CountsEachRecordOnceAcrossTicksAndOnlyWhileWatched)
{
    LiveStats live;
    live.setWatched(true);
    StreamBuilder a(10);
    a.process(10, 1, std::string("./server\0", 9))
        .api(1, "cuLaunchKernel", wire::Category::Launch)
        .api(2, "cuMemcpyHtoD_v2", wire::Category::Transfer)
        .kernel(3, "k")
        .device(0, "GPU")
        .launch(1, 1, 3, 2000, 2500)
        .span(1, 2600, 7600)
        .copy(2, 2, 4096, 8000, 9000)
        .span(2, 8100, 8900);
    feedLive(live, 0, a.bytes, true);
    live.tick(1000000000ull);
    const LiveProcess& p = live.processes().at(0);
    EXPECT_EQ(p.pid, 10u);
    EXPECT_EQ(p.launches, 1u);
    ASSERT_EQ(p.devices.size(), 1u);
    EXPECT_EQ(p.devices[0].busyNs, 5000u + 800u);
    EXPECT_EQ(p.transfers.at("HtoD/pageable/sync").bytesTotal, 4096u);
    EXPECT_NE(live.topText(100).find("pid 10  ./server"), std::string::npos);

    StreamBuilder b(10);
    b.launch(3, 1, 3, 20000, 20500).span(3, 20600, 21600).launch(4, 1, 3, 22000, 22500).span(4, 22600, 23600);
    std::vector<uint8_t> more(b.bytes.begin() + sizeof(wire::StreamHeader), b.bytes.end());
    feedLive(live, 0, more, false);
    live.tick(2000000000ull);
    EXPECT_EQ(p.launches, 2u);
    EXPECT_EQ(p.launchesTotal, 3u);
    EXPECT_EQ(p.devices[0].launchesTotal, 3u);
    EXPECT_EQ(p.transfers.at("HtoD/pageable/sync").bytes, 0u);  // none this tick
    EXPECT_EQ(p.transfers.at("HtoD/pageable/sync").bytesTotal, 4096u);

    // Nobody looks: the events are not kept, the next tick analyzes nothing.
    live.setWatched(false);
    feedLive(live, 0, more, false);
    live.tick(3000000000ull, false);
    EXPECT_EQ(live.evictedRecords(), 0u);
    EXPECT_EQ(p.launchesTotal, 3u);

    live.onFinished(0);
    live.tick(4000000000ull);
    live.tick(5000000000ull);
    EXPECT_TRUE(live.processes().empty());
}

// The shim's running totals (Tally, about once a second) and its window edges, read as they come: the
// own time, whether it records and the calls it left out while paused, by category; the device's
// identity from its definitions before any call on it. The ring keeps the latest Tally only.
TEST(LiveStats, ReadsTheShimsRunningTotalsAndWindowEdges)
{
    FlightRecorder ring(1000000000ull, 1u << 20);
    LiveStats live(&ring);
    live.setWatched(true);
    StreamBuilder a(10);
    wire::DeviceInfoBody info{};
    info.uuid[0] = 0xab;
    std::strcpy(info.pciBusId, "0000:41:00.0");
    a.process(10, 1, std::string("./server\0", 9)).api(1, "cuLaunchKernel", wire::Category::Launch).kernel(3, "k");
    a.device(0, "GPU").fixed(info).launch(1, 1, 3, 2000, 2500);  // a snapshot holds processes with events
    wire::TallyBody t{};
    for (uint64_t i = 1; i <= 50; ++i) {
        t.timeNs = i * 1000;
        t.overheadNs = i * 100;
        t.window = 0xffffffffu;  // no window asked for: recording
        a.fixed(t);
    }
    feedLive(live, 0, a.bytes, true);
    const LiveProcess& p = live.processes().at(0);
    EXPECT_EQ(p.overheadNs, 5000u);
    EXPECT_TRUE(p.recording);
    ASSERT_EQ(p.devices.size(), 1u);
    EXPECT_EQ(p.devices[0].name, "GPU");
    EXPECT_EQ(p.devices[0].uuid.substr(0, 6), "GPU-ab");
    EXPECT_EQ(p.devices[0].pciBusId, "0000:41:00.0");

    StreamBuilder b(10);
    wire::WindowBody end{};
    end.edge = wire::WindowEdge::End;
    end.leftOut[size_t(wire::Category::Launch)] = 5;
    b.fixed(end);
    t.window = 0;
    t.leftOut[size_t(wire::Category::Launch)] = 3700;
    t.leftOut[size_t(wire::Category::Sync)] = 20;
    b.fixed(t);
    std::vector<uint8_t> more(b.bytes.begin() + sizeof(wire::StreamHeader), b.bytes.end());
    feedLive(live, 0, more, false);
    EXPECT_FALSE(p.recording);
    EXPECT_EQ(p.notRecorded.at("launch"), 3700u);
    EXPECT_EQ(p.notRecorded.at("sync"), 20u);
    live.tick(1000000000ull);
    EXPECT_EQ(p.overheadNs, 5000u);  // the analysis of the tick does not take it back
    EXPECT_NE(live.topText(100).find("calls not recorded (made while paused): 3700 launch, 20 sync"), std::string::npos)
        << live.topText(100);

    const auto snap = ring.snapshot();
    ASSERT_EQ(snap.size(), 1u);
    size_t tallies = 0;
    wire::StreamDecoder d;
    d.feed(snap[0].bytes.data(), snap[0].bytes.size(), [&](const wire::RecordView& v) { tallies += v.type == wire::RecordType::Tally; });
    EXPECT_EQ(tallies, 1u);  // 51 sent, the latest kept
}
