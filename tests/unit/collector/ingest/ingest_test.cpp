// Ingest of hand-built streams: valid, split, truncated, corrupted, wrong version, random.
#include "collector/ingest/ingest.h"
#include "tests/unit/collector/streams.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace gpuspy;
using namespace gpuspy::collect;
using gpuspy::test::StreamBuilder;
using gpuspy::test::sampleProcess;

namespace {

// The offsets at which each record of a stream starts, and its end.
std::vector<size_t> recordStarts(const std::vector<uint8_t>& bytes)
{
    std::vector<size_t> starts;
    size_t at = sizeof(wire::StreamHeader);
    while (at < bytes.size()) {
        starts.push_back(at);
        wire::RecordHeader h;
        std::memcpy(&h, bytes.data() + at, sizeof h);
        at += sizeof h + h.size;
    }
    starts.push_back(at);
    return starts;
}

}  // namespace

TEST(CollectorIngest, ValidStreamFillsTheModel)
{
    auto s = sampleProcess();
    Process p = ingestStream(s.bytes.data(), s.bytes.size());
    EXPECT_EQ(p.streamError, "");
    EXPECT_EQ(p.pid, 42u);
    EXPECT_EQ(p.ppid, 1u);
    EXPECT_EQ(p.command, "./app --flag");
    EXPECT_EQ(p.startNs, 1000u);
    ASSERT_EQ(p.apis.size(), 2u);
    EXPECT_EQ(p.apis[1].name, "cuLaunchKernel");
    EXPECT_EQ(p.apis[2].category, wire::Category::Transfer);
    EXPECT_EQ(p.kernels[3], "_Z6scalePfi");
    EXPECT_EQ(p.stacks[5], (std::vector<uint64_t>{0x401000, 0x402000}));
    ASSERT_EQ(p.modules.size(), 1u);
    EXPECT_EQ(p.modules[0].path, "/bin/app");
    EXPECT_EQ(p.threads[7], "main");
    EXPECT_EQ(p.devices[0], "Simulated GPU");
    EXPECT_EQ(p.strings[9], "step");
    ASSERT_EQ(p.calls.size(), 3u);
    EXPECT_EQ(p.calls[1].args.transfer.bytes, 4096u);
    EXPECT_EQ(p.spans.size(), 2u);
    EXPECT_EQ(p.nvtx.size(), 1u);
    EXPECT_EQ(p.threadStats.size(), 1u);
    EXPECT_EQ(p.clocks.size(), 1u);
    ASSERT_EQ(p.notices.size(), 1u);
    EXPECT_EQ(p.notices[0], "sampling on");
    EXPECT_TRUE(p.ended);
    EXPECT_EQ(p.end.recordsMade, 17u);
    EXPECT_EQ(p.lastNs, 20000u);
}

TEST(CollectorIngest, HeaderAloneNamesTheProcess)
{
    StreamBuilder s(77, 5000);
    Process p = ingestStream(s.bytes.data(), s.bytes.size());
    EXPECT_EQ(p.streamError, "");
    EXPECT_EQ(p.pid, 77u);
    EXPECT_EQ(p.startNs, 5000u);
    EXPECT_FALSE(p.ended);
}

TEST(CollectorIngest, AnySplitGivesTheSameProcess)
{
    auto s = sampleProcess();
    for (size_t chunk : {1, 3, 7, 8, 40, 41, 100}) {
        StreamIngest in;
        for (size_t at = 0; at < s.bytes.size(); at += chunk)
            ASSERT_TRUE(in.feed(s.bytes.data() + at, std::min(chunk, s.bytes.size() - at)));
        ASSERT_TRUE(in.finish()) << in.error();
        EXPECT_EQ(in.process().calls.size(), 3u) << chunk;
        EXPECT_EQ(in.records(), s.records) << chunk;
        std::vector<uint8_t> raw;
        in.takeValidated(raw);
        EXPECT_EQ(raw, s.bytes) << chunk;
    }
}

TEST(CollectorIngest, TruncationKeepsEveryWholeRecordBeforeIt)
{
    auto s = sampleProcess();
    const auto starts = recordStarts(s.bytes);
    for (size_t cut = 0; cut < s.bytes.size(); ++cut) {
        StreamIngest in;
        in.feed(s.bytes.data(), cut);
        const bool finished = in.finish();
        // Records wholly before the cut are kept, and the error names where the partial one starts.
        size_t whole = 0;
        while (whole + 1 < starts.size() && starts[whole + 1] <= cut) ++whole;
        if (cut < sizeof(wire::StreamHeader)) {
            EXPECT_FALSE(finished);
            EXPECT_FALSE(in.hasHeader());
            EXPECT_NE(in.error().find("at offset 0"), std::string::npos) << in.error();
            continue;
        }
        if (cut == starts[whole]) {
            // Cut exactly between records: nothing partial, the stream just stops (not an error).
            EXPECT_TRUE(finished) << in.error();
            EXPECT_EQ(in.records(), whole) << cut;
            continue;
        }
        EXPECT_FALSE(finished) << cut;
        EXPECT_EQ(in.records(), whole) << cut;
        EXPECT_NE(in.error().find("truncated"), std::string::npos) << in.error();
        EXPECT_NE(in.error().find("at offset " + std::to_string(starts[whole])), std::string::npos) << in.error();
        std::vector<uint8_t> raw;
        in.takeValidated(raw);
        EXPECT_EQ(raw.size(), starts[whole]);
    }
}

TEST(CollectorIngest, CutBetweenRecordsIsNotAnError)
{
    auto s = sampleProcess();
    const auto starts = recordStarts(s.bytes);
    StreamIngest in;
    in.feed(s.bytes.data(), starts[3]);
    EXPECT_TRUE(in.finish());
    EXPECT_EQ(in.records(), 3u);
}

TEST(CollectorIngest, CorruptRecordStopsTheStreamWithItsOffset)
{
    auto s = sampleProcess();
    const auto starts = recordStarts(s.bytes);
    auto bad = s.bytes;
    // Record 10 claims an odd size.
    wire::RecordHeader h;
    std::memcpy(&h, bad.data() + starts[10], sizeof h);
    h.size = 12;
    std::memcpy(bad.data() + starts[10], &h, sizeof h);
    StreamIngest in;
    EXPECT_FALSE(in.feed(bad.data(), bad.size()));
    EXPECT_TRUE(in.failed());
    EXPECT_EQ(in.records(), 10u);
    EXPECT_EQ(in.process().calls.size(), 1u);
    EXPECT_NE(in.error().find("at offset " + std::to_string(starts[10])), std::string::npos) << in.error();
    // Later input is ignored.
    EXPECT_FALSE(in.feed(s.bytes.data(), s.bytes.size()));
    EXPECT_EQ(in.records(), 10u);
    std::vector<uint8_t> raw;
    in.takeValidated(raw);
    EXPECT_EQ(raw.size(), starts[10]);
}

TEST(CollectorIngest, HugeLengthIsRefusedNotAllocated)
{
    StreamBuilder s;
    wire::RecordHeader h{uint16_t(wire::RecordType::KernelDef), 0, 0xfffffff8u};
    s.put(&h, sizeof h);
    StreamIngest in;
    EXPECT_FALSE(in.feed(s.bytes.data(), s.bytes.size()));
    EXPECT_NE(in.error().find("larger than the format allows"), std::string::npos) << in.error();
    EXPECT_NE(in.error().find("at offset 40"), std::string::npos) << in.error();
}

TEST(CollectorIngest, TailLongerThanItsBodyIsRefused)
{
    StreamBuilder s;
    s.kernel(1, "abcdefgh");
    // Claim a longer name than the body holds.
    const uint32_t lie = 100;
    std::memcpy(s.bytes.data() + 40 + 8 + 4, &lie, 4);
    Process p = ingestStream(s.bytes.data(), s.bytes.size());
    EXPECT_TRUE(p.kernels.empty());
    EXPECT_NE(p.streamError.find("at offset 40"), std::string::npos) << p.streamError;
}

TEST(CollectorIngest, WrongVersionIsRefusedAtItsOffset)
{
    StreamBuilder s;
    s.launch(1, 1, 0, 10, 20);
    const uint32_t v = 9;
    std::memcpy(s.bytes.data() + 8, &v, 4);
    StreamIngest in;
    EXPECT_FALSE(in.feed(s.bytes.data(), s.bytes.size()));
    EXPECT_FALSE(in.hasHeader());
    EXPECT_NE(in.error().find("version 9"), std::string::npos) << in.error();
    EXPECT_NE(in.error().find("at offset 8"), std::string::npos) << in.error();
    EXPECT_EQ(in.pendingValidated(), 0u);
}

TEST(CollectorIngest, UnknownRecordTypesAreSkippedAndKept)
{
    StreamBuilder s;
    wire::RecordHeader h{999, 0, 16};
    uint8_t body[16] = {};
    s.put(&h, sizeof h).put(body, sizeof body);
    s.launch(1, 1, 0, 10, 20);
    StreamIngest in;
    ASSERT_TRUE(in.feed(s.bytes.data(), s.bytes.size()));
    ASSERT_TRUE(in.finish());
    EXPECT_EQ(in.unknownRecords(), 1u);
    EXPECT_EQ(in.process().calls.size(), 1u);
    std::vector<uint8_t> raw;
    in.takeValidated(raw);
    EXPECT_EQ(raw, s.bytes);
}

// A device's identity (DeviceInfo) and the shim's running totals (Tally, the latest kept): the UUID as
// nvidia-smi and DCGM exporter print it.
TEST(CollectorIngest, DeviceInfoAndTally)
{
    StreamBuilder s;
    wire::DeviceInfoBody info{};
    info.device = 1;
    for (int i = 0; i < 16; ++i) info.uuid[i] = uint8_t(0xa0 + i);
    std::strcpy(info.pciBusId, "00000000:41:00.0");
    s.fixed(info);
    wire::DeviceInfoBody unknown{};
    unknown.device = 2;
    s.fixed(unknown);
    wire::TallyBody t{};
    t.timeNs = 100;
    t.overheadNs = 7;
    s.fixed(t);
    t.timeNs = 200;
    t.overheadNs = 9;
    t.window = 0;
    t.leftOut[size_t(wire::Category::Launch)] = 3700;
    s.fixed(t);
    const Process p = ingestStream(s.bytes.data(), s.bytes.size());
    EXPECT_EQ(p.streamError, "");
    ASSERT_EQ(p.deviceIds.count(1), 1u);
    EXPECT_EQ(p.deviceIds.at(1).uuid, "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
    EXPECT_EQ(p.deviceIds.at(1).pciBusId, "00000000:41:00.0");
    EXPECT_EQ(p.deviceIds.at(2).uuid, "");  // all zero: the shim could not ask
    EXPECT_EQ(p.tally.timeNs, 200u);
    EXPECT_EQ(p.tally.overheadNs, 9u);
    EXPECT_EQ(p.tally.leftOut[size_t(wire::Category::Launch)], 3700u);
}

// Who a process is (Identity, at the start and the end of its stream) into the model.
TEST(CollectorIngest, IdentityRecords)
{
    StreamBuilder s;
    wire::IdentityBody id{};
    id.realtimeNs = 1700000000500000000ull;
    id.monotonicNs = 2000;
    id.errorNs = 60;
    id.rank = 2;
    id.localRank = 0;
    id.worldSize = 16;
    id.localWorldSize = 8;
    id.edge = wire::IdentityEdge::Start;
    id.launcher = wire::Launcher::Slurm;
    id.length = 6;
    s.var(id, "node-3", 6);
    id.edge = wire::IdentityEdge::End;
    id.realtimeNs += 1000;
    id.monotonicNs += 1000;
    s.var(id, "node-3", 6);
    const Process p = ingestStream(s.bytes.data(), s.bytes.size());
    EXPECT_EQ(p.streamError, "");
    EXPECT_EQ(p.identity.rank, 2);
    EXPECT_EQ(p.identity.localRank, 0);
    EXPECT_EQ(p.identity.worldSize, 16);
    EXPECT_EQ(p.identity.localWorldSize, 8);
    EXPECT_EQ(p.identity.launcher, "slurm");
    EXPECT_EQ(p.identity.host, "node-3");
    EXPECT_EQ(p.identity.start.monotonicNs, 2000u);
    EXPECT_EQ(p.identity.start.errorNs, 60u);
    EXPECT_EQ(p.identity.end.monotonicNs, 3000u);
    EXPECT_EQ(p.identity.start.wallMinusMono(), p.identity.end.wallMinusMono());
}

// A time shift (a capture put on another's clock) moves every host time the model and the observer see,
// the stream header's start included, and no realtime stamp.
TEST(CollectorIngest, TimeShiftMovesHostTimes)
{
    StreamBuilder s(42, 1000);
    s.process(42, 1, std::string("app\0", 4));
    wire::IdentityBody id{};
    id.realtimeNs = 1700000000500000000ull;
    id.monotonicNs = 2000;
    id.edge = wire::IdentityEdge::Start;
    s.var(id, "", 0);
    wire::CallBody c{};
    c.seq = 1;
    c.beginNs = 5000;
    c.endNs = 6000;
    s.fixed(c);
    StreamIngest in;
    in.setTimeShift(-500);
    uint64_t observedBegin = 0;
    in.setObserver([&](const Process&, const wire::RecordView& v) {
        if (v.type == wire::RecordType::Call) observedBegin = v.as<wire::CallBody>().beginNs;
    });
    ASSERT_TRUE(in.feed(s.bytes.data(), s.bytes.size()));
    ASSERT_TRUE(in.finish());
    const Process& p = in.process();
    EXPECT_EQ(p.startNs, 500u);
    ASSERT_EQ(p.calls.size(), 1u);
    EXPECT_EQ(p.calls[0].beginNs, 4500u);
    EXPECT_EQ(p.calls[0].endNs, 5500u);
    EXPECT_EQ(observedBegin, 4500u);
    EXPECT_EQ(p.identity.start.monotonicNs, 1500u);
    EXPECT_EQ(p.identity.start.realtimeNs, 1700000000500000000ull);
    std::vector<uint8_t> raw;
    in.takeValidated(raw);
    EXPECT_EQ(raw, s.bytes);  // the stored bytes stay as they came
}

TEST(CollectorIngest, RandomBytesNeverCrash)
{
    std::mt19937 rng(1234);
    for (int round = 0; round < 200; ++round) {
        std::vector<uint8_t> junk(rng() % 4096);
        for (auto& b : junk) b = uint8_t(rng());
        StreamIngest in;
        in.feed(junk.data(), junk.size());
        in.finish();
        if (!junk.empty()) {
            EXPECT_TRUE(in.failed());
            EXPECT_NE(in.error().find("at offset 0"), std::string::npos) << in.error();
        }
    }
}

TEST(CollectorIngest, MutatedStreamsKeepAValidPrefix)
{
    auto s = sampleProcess();
    std::mt19937 rng(99);
    for (int round = 0; round < 2000; ++round) {
        auto bytes = s.bytes;
        const int flips = 1 + int(rng() % 4);
        for (int i = 0; i < flips; ++i) bytes[sizeof(wire::StreamHeader) + rng() % (bytes.size() - 40)] ^= uint8_t(1u << (rng() % 8));
        StreamIngest in;
        in.feed(bytes.data(), bytes.size());
        in.finish();
        EXPECT_LE(in.records(), s.records + 4);
        if (in.failed()) {
            EXPECT_NE(in.error().find("at offset"), std::string::npos);
        }
        // Whatever was kept re-ingests to the same thing.
        std::vector<uint8_t> raw;
        in.takeValidated(raw);
        StreamIngest again;
        EXPECT_TRUE(again.feed(raw.data(), raw.size()));
        EXPECT_TRUE(again.finish()) << again.error();
        EXPECT_EQ(again.records(), in.records());
    }
}

TEST(CollectorIngest, SymbolRecordsBecomeFrames)
{
    StreamBuilder s;
    s.module(0x400000, 0x500000, 0x1000, "/bin/app");
    const std::string inl = std::string("inlined_fn\0/src/a.h\0", 20);
    const std::string real = std::string("main\0/src/main.cpp\0", 19);
    wire::SymbolBody b{0x401234, 12, 1, 0, 0, uint32_t(inl.size())};
    s.var(b, inl.data(), b.length);
    b = wire::SymbolBody{0x401234, 40, 0, 0, 0, uint32_t(real.size())};
    s.var(b, real.data(), b.length);
    Process p = ingestStream(s.bytes.data(), s.bytes.size());
    ASSERT_EQ(p.symbols[0x401234].size(), 2u);
    const Frame& f0 = p.symbols[0x401234][0];
    const Frame& f1 = p.symbols[0x401234][1];
    EXPECT_EQ(f0.function, "inlined_fn");
    EXPECT_EQ(f0.file, "/src/a.h");
    EXPECT_TRUE(f0.inlined);
    EXPECT_EQ(f1.function, "main");
    EXPECT_EQ(f1.line, 40u);
    EXPECT_FALSE(f1.inlined);
    EXPECT_EQ(f1.module, "/bin/app");
    EXPECT_EQ(f1.offset, 0x400234u);
}

TEST(CollectorIngest, StackDepthThatWrapsIsNotTrusted)
{
    // depth * 8 wraps to 8 in 32 bits: the record looks consistent with an 8-byte tail.
    StreamBuilder s;
    wire::StackDefBody b{3, 0x20000001u};
    const uint64_t pc = 0x401000;
    std::vector<uint8_t> buf(wire::encodedSize<wire::StackDefBody>(8));
    wire::RecordHeader h{uint16_t(wire::RecordType::StackDef), 0, uint32_t(buf.size() - 8)};
    std::memcpy(buf.data(), &h, sizeof h);
    std::memcpy(buf.data() + 8, &b, sizeof b);
    std::memcpy(buf.data() + 8 + sizeof b, &pc, 8);
    s.put(buf.data(), buf.size());
    Process p = ingestStream(s.bytes.data(), s.bytes.size());
    EXPECT_TRUE(p.stacks.empty());
}

// Issue 18: the shim's Python definitions: code id -> function and file, frame id -> code and line.
TEST(CollectorIngest, PythonDefinitionsFillTheirTables)
{
    StreamBuilder s;
    const std::string text = std::string("Model.to_device\0/src/app.py", 27);
    wire::PyCodeDefBody code{3, 7, uint32_t(text.size()), 0};
    s.var(code, text.data(), code.length);
    s.fixed(wire::PyFrameDefBody{5, 3, 8, 12});
    Process p = ingestStream(s.bytes.data(), s.bytes.size());
    EXPECT_EQ(p.streamError, "");
    ASSERT_EQ(p.pyCodes.count(3), 1u);
    EXPECT_EQ(p.pyCodes[3].function, "Model.to_device");
    EXPECT_EQ(p.pyCodes[3].file, "/src/app.py");
    EXPECT_EQ(p.pyCodes[3].firstLine, 7u);
    ASSERT_EQ(p.pyFrames.count(5), 1u);
    EXPECT_EQ(p.pyFrames[5].codeId, 3u);
    EXPECT_EQ(p.pyFrames[5].line, 8);
    EXPECT_TRUE(wire::isPyFrame(wire::kPyFrameTag | 5));
    EXPECT_FALSE(wire::isPyFrame(0x7fffffffe000));
    EXPECT_EQ(wire::pyFrameId(wire::kPyFrameTag | 5), 5u);
}
