// The Identity record (who a process is, and its wall-clock pair) through the codec, and the one list
// of a record's host times (wire::shiftRecordTimes) that the test-only clock offset and the collector's
// merge of captures both use.
#include "wire/codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace gpuspy::wire;

namespace {

std::vector<uint8_t> streamWith(const IdentityBody& id, const char* host, const CallBody& call)
{
    std::vector<uint8_t> out(4096);
    StreamHeader h = makeStreamHeader(7, 5000, 9000);
    std::memcpy(out.data(), &h, sizeof h);
    size_t n = sizeof h;
    n += encodeVar(out.data() + n, out.size() - n, id, host, uint32_t(strlen(host)));
    n += encode(out.data() + n, out.size() - n, call);
    out.resize(n);
    return out;
}

IdentityBody sampleIdentity(const char* host)
{
    IdentityBody id{};
    id.realtimeNs = 1765000000123456789ull;
    id.monotonicNs = 424242000;
    id.errorNs = 80;
    id.rank = 3;
    id.localRank = 1;
    id.worldSize = 8;
    id.localWorldSize = 2;
    id.edge = IdentityEdge::Start;
    id.launcher = Launcher::Torch;
    id.length = uint32_t(strlen(host));
    return id;
}

}  // namespace

TEST(WireIdentity, RoundTrip)
{
    CallBody call{};
    call.seq = 1;
    call.beginNs = 100;
    call.endNs = 200;
    const auto bytes = streamWith(sampleIdentity("node-07"), "node-07", call);
    StreamDecoder d;
    int identities = 0;
    ASSERT_TRUE(d.feed(bytes.data(), bytes.size(), [&](const RecordView& v) {
        if (v.type != RecordType::Identity) return;
        ++identities;
        const IdentityBody b = v.as<IdentityBody>();
        EXPECT_EQ(b.rank, 3);
        EXPECT_EQ(b.localRank, 1);
        EXPECT_EQ(b.worldSize, 8);
        EXPECT_EQ(b.localWorldSize, 2);
        EXPECT_EQ(b.launcher, Launcher::Torch);
        EXPECT_EQ(b.edge, IdentityEdge::Start);
        EXPECT_EQ(b.realtimeNs, 1765000000123456789ull);
        EXPECT_EQ(b.monotonicNs, 424242000u);
        EXPECT_EQ(b.errorNs, 80u);
        EXPECT_EQ(v.tail<IdentityBody>(), "node-07");
    }));
    EXPECT_TRUE(d.finish());
    EXPECT_EQ(identities, 1);
    EXPECT_STREQ(launcherName(Launcher::Slurm), "slurm");
    EXPECT_STREQ(launcherName(Launcher::None), "");
}

// A reader of minor 2 does not know record 26: it skips it and reads what follows.
TEST(WireIdentity, OlderReadersSkipIt)
{
    CallBody call{};
    call.seq = 9;
    auto bytes = streamWith(sampleIdentity("h"), "h", call);
    // Renumber the Identity record to an id no build knows, as a minor-2 reader sees 26.
    RecordHeader rh;
    std::memcpy(&rh, bytes.data() + sizeof(StreamHeader), sizeof rh);
    ASSERT_EQ(rh.type, 26);
    rh.type = 63;
    std::memcpy(bytes.data() + sizeof(StreamHeader), &rh, sizeof rh);
    StreamDecoder d;
    uint64_t seq = 0;
    ASSERT_TRUE(d.feed(bytes.data(), bytes.size(), [&](const RecordView& v) {
        if (v.type == RecordType::Call) seq = v.as<CallBody>().seq;
    }));
    EXPECT_EQ(d.unknownRecords(), 1u);
    EXPECT_EQ(seq, 9u);
}

// Every monotonic time moves, nothing else: not the realtime stamp, not a 0 (unknown), not a seq.
TEST(WireIdentity, ShiftMovesMonotonicTimesOnly)
{
    CallBody call{};
    call.seq = 5;
    call.beginNs = 1000;
    call.endNs = 2000;
    auto bytes = streamWith(sampleIdentity("h"), "h", call);
    ASSERT_TRUE(shiftStreamTimes(bytes.data() + sizeof(StreamHeader), bytes.size() - sizeof(StreamHeader), -300));
    StreamDecoder d;
    ASSERT_TRUE(d.feed(bytes.data(), bytes.size(), [&](const RecordView& v) {
        if (v.type == RecordType::Identity) {
            EXPECT_EQ(v.as<IdentityBody>().monotonicNs, 424242000u - 300);
            EXPECT_EQ(v.as<IdentityBody>().realtimeNs, 1765000000123456789ull);
            EXPECT_EQ(v.tail<IdentityBody>(), "h");
        } else if (v.type == RecordType::Call) {
            EXPECT_EQ(v.as<CallBody>().beginNs, 700u);
            EXPECT_EQ(v.as<CallBody>().endNs, 1700u);
            EXPECT_EQ(v.as<CallBody>().seq, 5u);
        }
    }));
    CollectiveBody c{};
    c.startNs = 10;
    c.apiNs = 0;  // unknown stays unknown
    c.launchNs = 30;
    c.seq = 4;
    shiftRecordTimes(RecordType::Collective, reinterpret_cast<uint8_t*>(&c), sizeof c, 5);
    EXPECT_EQ(c.startNs, 15u);
    EXPECT_EQ(c.apiNs, 0u);
    EXPECT_EQ(c.launchNs, 35u);
    EXPECT_EQ(c.seq, 4u);
    ClockBody clock{0, 0, -100, 7};  // host = gpu + offset: the offset moves, even through 0
    shiftRecordTimes(RecordType::Clock, reinterpret_cast<uint8_t*>(&clock), sizeof clock, 100);
    EXPECT_EQ(clock.offsetNs, 0);
    shiftRecordTimes(RecordType::Clock, reinterpret_cast<uint8_t*>(&clock), sizeof clock, 100);
    EXPECT_EQ(clock.offsetNs, 100);
    StreamHeader h = makeStreamHeader(1, 5000, 9000);
    shiftHeaderTime(h, 1000);
    EXPECT_EQ(h.startMonotonicNs, 6000u);
    EXPECT_EQ(h.startRealtimeNs, 9000u);
}
