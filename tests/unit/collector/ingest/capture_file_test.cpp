// The capture file: round trips, bare shim streams, file safety, and damaged files.
#include "collector/ingest/capture_file.h"
#include "collector/ingest/ingest.h"
#include "tests/unit/collector/streams.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

using namespace gpuspy;
using namespace gpuspy::collect;
using gpuspy::test::StreamBuilder;
using gpuspy::test::sampleProcess;

namespace {

class TempDir {
public:
    TempDir()
    {
        char t[] = "/tmp/gpuspy-test-XXXXXX";
        m_path = mkdtemp(t);
    }
    ~TempDir() { std::system(("rm -rf '" + m_path + "'").c_str()); }
    std::string file(const std::string& name) const { return m_path + "/" + name; }

private:
    std::string m_path;
};

void writeBytes(const std::string& path, const std::vector<uint8_t>& b)
{
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::vector<uint8_t> readBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string errorOf(const std::string& path)
{
    try {
        readCapture(path);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

// Two processes, the second with symbols, one bad stream counted.
Capture sampleCapture(std::vector<std::vector<uint8_t>>& streams)
{
    auto a = sampleProcess(100);
    auto b = sampleProcess(200);
    streams = {a.bytes, b.bytes};
    Capture c;
    c.processes.push_back(ingestStream(a.bytes.data(), a.bytes.size()));
    c.processes.push_back(ingestStream(b.bytes.data(), b.bytes.size()));
    Process& p = c.processes[1];
    Frame inl{0x401000, "inlined_helper", "/src/h.h", 7, "/bin/app", 0x1000, true};
    Frame real{0x401000, "main", "/src/main.cpp", 42, "/bin/app", 0x1000, false};
    p.symbols[0x401000] = {inl, real};
    p.symbols[0x402000] = {Frame{0x402000, "", "", 0, "/bin/app", 0x402000, false}};
    p.symbols[0x7fff0010] = {Frame{0x7fff0010, "__vdso_clock_gettime", "", 0, "[vdso]", 0, false}};
    c.badStreams = 1;
    return c;
}

}  // namespace

TEST(CollectorCaptureFile, RoundTrip)
{
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    const std::string path = dir.file("x.gspy");
    writeCapture(path, c, streams, false);

    ReadInfo info;
    Capture r = readCapture(path, {}, &info);
    EXPECT_TRUE(info.finished);
    EXPECT_FALSE(info.bareStream);
    EXPECT_EQ(info.damage, "");
    EXPECT_EQ(r.badStreams, 1u);
    ASSERT_EQ(r.processes.size(), 2u);
    EXPECT_EQ(r.processes[0].pid, 100u);
    EXPECT_EQ(r.processes[1].pid, 200u);
    EXPECT_EQ(r.processes[1].command, "./app --flag");
    EXPECT_EQ(r.processes[1].calls.size(), 3u);
    EXPECT_EQ(std::memcmp(r.processes[1].calls.data(), c.processes[1].calls.data(), 3 * sizeof(wire::CallBody)), 0);
    EXPECT_TRUE(r.processes[0].symbols.empty());
    const auto& frames = r.processes[1].symbols.at(0x401000);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].function, "inlined_helper");
    EXPECT_TRUE(frames[0].inlined);
    EXPECT_EQ(frames[0].line, 7u);
    EXPECT_EQ(frames[1].function, "main");
    EXPECT_EQ(frames[1].file, "/src/main.cpp");
    EXPECT_EQ(frames[1].module, "/bin/app");
    EXPECT_EQ(frames[1].offset, 0x401000u);  // address - the module's bias (0)
    EXPECT_FALSE(frames[1].inlined);
    EXPECT_EQ(r.processes[1].symbols.at(0x402000)[0].module, "/bin/app");
    // A module the process did not announce keeps its name.
    EXPECT_EQ(r.processes[1].symbols.at(0x7fff0010)[0].module, "[vdso]");
    EXPECT_EQ(r.processes[1].symbols.at(0x7fff0010)[0].function, "__vdso_clock_gettime");
}

TEST(CollectorCaptureFile, StreamErrorsSurviveTheRoundTrip)
{
    TempDir dir;
    auto s = sampleProcess(5);
    auto bad = s.bytes;
    bad.resize(bad.size() - 3);  // a partial End record
    StreamIngest in;
    in.feed(bad.data(), bad.size());
    in.finish();
    ASSERT_TRUE(in.failed());
    std::vector<uint8_t> raw;
    in.takeValidated(raw);
    Capture c;
    c.processes.push_back(std::move(in.process()));
    c.badStreams = 1;
    writeCapture(dir.file("e.gspy"), c, {raw}, false);
    Capture r = readCapture(dir.file("e.gspy"));
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].streamError, c.processes[0].streamError);
    EXPECT_FALSE(r.processes[0].ended);
    EXPECT_EQ(r.processes[0].calls.size(), 3u);
    EXPECT_EQ(r.badStreams, 1u);
}

TEST(CollectorCaptureFile, CreatedPrivateAndNeverOverwrittenUnlessForced)
{
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    const std::string path = dir.file("p.gspy");
    const mode_t old = umask(0);
    writeCapture(path, c, streams, false);
    umask(old);
    struct stat st{};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    try {
        writeCapture(path, c, streams, false);
        FAIL() << "overwrote without -f";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path + ": already exists"), std::string::npos) << e.what();
    }
    chmod(path.c_str(), 0644);
    writeCapture(path, c, streams, true);
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(readCapture(path).processes.size(), 2u);
}

TEST(CollectorCaptureFile, NeverWritesThroughASymlink)
{
    TempDir dir;
    const std::string target = dir.file("target");
    const std::string link = dir.file("link.gspy");
    writeBytes(target, {'k', 'e', 'e', 'p'});
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    for (bool force : {false, true}) {
        try {
            writeCapture(link, c, streams, force);
            FAIL() << "wrote through a symlink";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(readBytes(target), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
    // A dangling link is refused too (O_NOFOLLOW|O_EXCL, not "create the target").
    const std::string dangling = dir.file("dangling.gspy");
    ASSERT_EQ(symlink(dir.file("nowhere").c_str(), dangling.c_str()), 0);
    EXPECT_THROW(writeCapture(dangling, c, streams, false), std::runtime_error);
    EXPECT_NE(access(dir.file("nowhere").c_str(), F_OK), 0);
}

TEST(CollectorCaptureFile, ReadsABareStreamWrittenByTheShim)
{
    TempDir dir;
    auto s = sampleProcess(321);
    writeBytes(dir.file("gpuspy-321.gspy"), s.bytes);
    ReadInfo info;
    Capture c = readCapture(dir.file("gpuspy-321.gspy"), {}, &info);
    EXPECT_TRUE(info.bareStream);
    EXPECT_EQ(info.damage, "");
    ASSERT_EQ(c.processes.size(), 1u);
    EXPECT_EQ(c.processes[0].pid, 321u);
    EXPECT_EQ(c.processes[0].calls.size(), 3u);
    EXPECT_TRUE(c.processes[0].ended);
}

TEST(CollectorCaptureFile, TruncatedBareStreamKeepsItsPrefix)
{
    TempDir dir;
    auto s = sampleProcess(321);
    auto cut = s.bytes;
    cut.resize(cut.size() - 20);
    writeBytes(dir.file("t.gspy"), cut);
    ReadInfo info;
    Capture c = readCapture(dir.file("t.gspy"), {}, &info);
    ASSERT_EQ(c.processes.size(), 1u);
    EXPECT_EQ(c.processes[0].calls.size(), 3u);
    EXPECT_FALSE(c.processes[0].ended);
    EXPECT_EQ(c.badStreams, 1u);
    EXPECT_NE(info.damage.find("truncated"), std::string::npos) << info.damage;
    EXPECT_NE(info.damage.find("at offset " + std::to_string(s.bytes.size() - 48)), std::string::npos) << info.damage;
}

TEST(CollectorCaptureFile, UnreadableFilesThrowNamingTheFileAndOffset)
{
    TempDir dir;
    const std::string missing = dir.file("missing.gspy");
    EXPECT_NE(errorOf(missing).find(missing + ": cannot open"), std::string::npos) << errorOf(missing);

    writeBytes(dir.file("empty"), {});
    EXPECT_NE(errorOf(dir.file("empty")).find("empty file"), std::string::npos);

    EXPECT_NE(errorOf(dir.file("")).find("is a directory"), std::string::npos) << errorOf(dir.file(""));

    std::vector<uint8_t> junk(1000);
    std::mt19937 rng(7);
    for (auto& b : junk) b = uint8_t(rng());
    writeBytes(dir.file("junk"), junk);
    EXPECT_EQ(errorOf(dir.file("junk")), dir.file("junk") + ": not a gpuspy capture or stream (bad magic) at offset 0");

    auto s = sampleProcess();
    const uint32_t v = 2;
    std::memcpy(s.bytes.data() + 8, &v, 4);
    writeBytes(dir.file("v2stream"), s.bytes);
    EXPECT_NE(errorOf(dir.file("v2stream")).find("version 2"), std::string::npos) << errorOf(dir.file("v2stream"));
    EXPECT_NE(errorOf(dir.file("v2stream")).find("at offset 8"), std::string::npos);

    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    writeCapture(dir.file("v2cap"), c, streams, false);
    auto bytes = readBytes(dir.file("v2cap"));
    std::memcpy(bytes.data() + 8, &v, 4);
    writeBytes(dir.file("v2cap"), bytes);
    EXPECT_NE(errorOf(dir.file("v2cap")).find("capture format version 2"), std::string::npos) << errorOf(dir.file("v2cap"));
}

TEST(CollectorCaptureFile, EveryTruncationIsHandled)
{
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    writeCapture(dir.file("full"), c, streams, false);
    const auto bytes = readBytes(dir.file("full"));
    size_t lastProcesses = 0;
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
        writeBytes(dir.file("cut"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(cut)));
        ReadInfo info;
        try {
            Capture r = readCapture(dir.file("cut"), {}, &info);
            EXPECT_FALSE(info.finished);
            EXPECT_NE(info.damage.find("at offset"), std::string::npos) << info.damage;
            EXPECT_GE(r.processes.size(), lastProcesses);  // more file, never less data
            lastProcesses = r.processes.size();
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(dir.file("cut") + ": "), std::string::npos) << e.what();
            if (cut == 0)
                EXPECT_NE(std::string(e.what()).find("empty file"), std::string::npos);
            else
                EXPECT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(lastProcesses, 2u);
}

TEST(CollectorCaptureFile, CorruptChunkKeepsWhatCameBefore)
{
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    writeCapture(dir.file("full"), c, streams, false);
    auto bytes = readBytes(dir.file("full"));
    // The second chunk (process #1's stream) starts after the header and the first chunk.
    ChunkHeader h0;
    std::memcpy(&h0, bytes.data() + sizeof(CaptureHeader), sizeof h0);
    const size_t second = sizeof(CaptureHeader) + sizeof h0 + h0.storedSize;
    bytes[second + sizeof(ChunkHeader) + 10] ^= 0x55;
    writeBytes(dir.file("bad"), bytes);
    ReadInfo info;
    Capture r = readCapture(dir.file("bad"), {}, &info);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].pid, 100u);
    EXPECT_EQ(r.processes[0].calls.size(), 3u);
    EXPECT_EQ(info.damage.rfind("corrupt chunk (", 0), 0u) << info.damage;
    EXPECT_NE(info.damage.find(") at offset " + std::to_string(second)), std::string::npos) << info.damage;
}

TEST(CollectorCaptureFile, RandomDamageNeverCrashes)
{
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    writeCapture(dir.file("full"), c, streams, false);
    const auto bytes = readBytes(dir.file("full"));
    std::mt19937 rng(5);
    for (int round = 0; round < 300; ++round) {
        auto b = bytes;
        for (int i = 0; i < 1 + int(rng() % 3); ++i) b[rng() % b.size()] ^= uint8_t(1u << (rng() % 8));
        writeBytes(dir.file("m"), b);
        try {
            readCapture(dir.file("m"));
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(dir.file("m")), std::string::npos);
        }
    }
}

TEST(CollectorCaptureFile, UnfinishedCaptureIsStillRead)
{
    TempDir dir;
    auto s = sampleProcess(9);
    {
        CaptureWriter w(dir.file("u.gspy"), false);
        const uint32_t idx = w.addStream();
        w.writeStream(idx, s.bytes.data(), 100);
        w.writeStream(idx, s.bytes.data() + 100, s.bytes.size() - 100);
        // No finish(): the collector was killed.
    }
    ReadInfo info;
    Capture r = readCapture(dir.file("u.gspy"), {}, &info);
    EXPECT_FALSE(info.finished);
    EXPECT_NE(info.damage.find("not finished"), std::string::npos) << info.damage;
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].calls.size(), 3u);
    EXPECT_TRUE(r.processes[0].ended);
}

TEST(CollectorCaptureFile, LargeStreamsSpanChunksAndCompress)
{
    TempDir dir;
    StreamBuilder s(11);
    s.api(1, "cuLaunchKernel", wire::Category::Launch).kernel(1, "_Z1kv");
    const int n = 200000;
    uint64_t t = 1000000;
    for (int i = 1; i <= n; ++i) {
        s.launch(uint64_t(i), 1, 1, t, t + 3000 + uint64_t(i % 7) * 10, 1 + uint32_t(i % 3));
        s.span(uint64_t(i), t + 5000, t + 9000 + uint64_t(i % 5));
        t += 10000 + uint64_t(i % 13);
    }
    s.end(t, s.records + 1);
    ASSERT_GT(s.bytes.size(), 2 * size_t(kMaxChunkRaw));
    Capture c;
    c.processes.push_back(ingestStream(s.bytes.data(), s.bytes.size()));
    writeCapture(dir.file("big"), c, {s.bytes}, false);
    Capture r = readCapture(dir.file("big"));
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].calls.size(), size_t(n));
    EXPECT_EQ(r.processes[0].spans.size(), size_t(n));
    EXPECT_TRUE(r.processes[0].ended);
    struct stat st{};
    stat(dir.file("big").c_str(), &st);
    const double perRecord = double(st.st_size) / double(s.records);
    std::printf("capture: %zu records, %zu stream bytes -> %lld file bytes, %.1f bytes/record\n", s.records,
                s.bytes.size(), (long long)st.st_size, perRecord);
    EXPECT_LT(perRecord, 40.0);
}

TEST(CollectorCaptureFile, KeptCallsStopAtTheBudgetAndTheProcessPastItKeepsNone)
{
    // Two processes of 3 calls each (sampleProcess) and a budget of 4: the first keeps its events, the
    // second drops what it kept at its second call past the budget and says so; both keep their totals.
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    const size_t each = c.processes[0].calls.size();
    ASSERT_GE(each, 3u);
    writeCapture(dir.file("b.gspy"), c, streams, false);
    ReadOptions opt;
    opt.keepCallsUpTo = each + 1;
    size_t seen = 0;
    opt.onRecord = [&](const Process&, const wire::RecordView& v) { seen += v.type == wire::RecordType::Call; };
    const Capture r = readCapture(dir.file("b.gspy"), opt);
    ASSERT_EQ(r.processes.size(), 2u);
    EXPECT_EQ(seen, 2 * each) << "the observer sees every call, kept or not";
    EXPECT_EQ(r.processes[0].calls.size(), each);
    EXPECT_FALSE(r.processes[0].eventsDropped);
    EXPECT_TRUE(r.processes[1].calls.empty());
    EXPECT_TRUE(r.processes[1].spans.empty());
    EXPECT_TRUE(r.processes[1].eventsDropped);
    EXPECT_EQ(r.processes[1].apis.size(), c.processes[1].apis.size()) << "definitions are kept";
}

TEST(CollectorCaptureFile, ObserverSeesEveryRecordWithDefinitions)
{
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture c = sampleCapture(streams);
    writeCapture(dir.file("o.gspy"), c, streams, false);
    ReadOptions opt;
    size_t records = 0, symbols = 0;
    std::string lastApi;
    opt.onRecord = [&](const Process& p, const wire::RecordView& v) {
        ++records;
        if (v.type == wire::RecordType::Symbol) ++symbols;
        if (v.type == wire::RecordType::Call) lastApi = p.apis.at(v.as<wire::CallBody>().apiId).name;
    };
    readCapture(dir.file("o.gspy"), opt);
    EXPECT_EQ(records, 2 * sampleProcess().records + 4);
    EXPECT_EQ(symbols, 4u);
    EXPECT_EQ(lastApi, "cuLaunchKernel");
}

TEST(CollectorCaptureFile, StreamsMayArriveInAnyOrder)
{
    // The collector flushes each connection when it has data: stream 1 can reach the file first.
    TempDir dir;
    auto a = sampleProcess(1);
    auto b = sampleProcess(2);
    {
        CaptureWriter w(dir.file("o.gspy"), false);
        const uint32_t ia = w.addStream();
        const uint32_t ib = w.addStream();
        w.writeStream(ib, b.bytes.data(), 64);
        w.writeStream(ia, a.bytes.data(), a.bytes.size());
        w.writeStream(ib, b.bytes.data() + 64, b.bytes.size() - 64);
        w.finish(0);
    }
    ReadInfo info;
    Capture r = readCapture(dir.file("o.gspy"), {}, &info);
    EXPECT_EQ(info.damage, "");
    ASSERT_EQ(r.processes.size(), 2u);
    EXPECT_EQ(r.processes[0].pid, 1u);  // in stream order, not chunk order
    EXPECT_EQ(r.processes[1].pid, 2u);
    EXPECT_EQ(r.processes[1].calls.size(), 3u);
}

TEST(CollectorCaptureFile, InvalidStreamInsideAValidChunkIsDamage)
{
    // A chunk that decompresses fine but holds an invalid record: only a crafted or buggy file.
    TempDir dir;
    StreamBuilder s(3);
    s.launch(1, 1, 0, 10, 20);
    const uint64_t lie = ~0ull;
    s.put(&lie, sizeof lie);
    {
        CaptureWriter w(dir.file("d.gspy"), false);
        w.writeStream(w.addStream(), s.bytes.data(), s.bytes.size());
        w.finish(0);
    }
    ReadInfo info;
    Capture r = readCapture(dir.file("d.gspy"), {}, &info);
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_EQ(r.processes[0].calls.size(), 1u);
    EXPECT_EQ(r.badStreams, 1u);
    EXPECT_NE(info.damage.find("at offset 144"), std::string::npos) << info.damage;
    EXPECT_NE(info.damage.find("(stream of process #0, chunk at file offset 32)"), std::string::npos) << info.damage;
}

// record's tree: the processes not in its streams are kept in Outside chunks, and a capture a child
// wrote of its own is merged as new streams (its records whole, its process one of the capture's).
TEST(CollectorCaptureFile, OutsideProcessesAndAMergedCaptureRoundTrip)
{
    TempDir dir;
    std::vector<std::vector<uint8_t>> streams;
    Capture own = sampleCapture(streams);
    own.processes.resize(1);
    streams.resize(1);
    own.badStreams = 0;
    const std::string ownPath = dir.file("gpuspy-100.gspy");
    writeCapture(ownPath, own, streams, false);

    const std::string path = dir.file("x.gspy");
    {
        CaptureWriter w(path, false);
        auto parent = sampleProcess(200);
        w.writeStream(w.addStream(), parent.bytes.data(), parent.bytes.size());
        EXPECT_EQ(w.appendStreamsOf(ownPath), 1u);
        OutsideProcess merged;
        merged.pid = 100;
        merged.ppid = 200;
        merged.why = OutsideWhy::OwnCapture;
        merged.cuda = OutsideCuda::Loaded;
        merged.merged = true;
        merged.command = "./app --flag";
        merged.capturePath = ownPath;
        w.writeOutside(merged);
        OutsideProcess bare;
        bare.pid = 300;
        bare.ppid = 200;
        bare.why = OutsideWhy::NoPreload;
        bare.cuda = OutsideCuda::NotSeen;
        bare.command = "/bin/worker -n 3";
        w.writeOutside(bare);
        w.finish(0);
    }
    Capture r = readCapture(path);
    ASSERT_EQ(r.processes.size(), 2u);
    EXPECT_EQ(r.processes[0].pid, 200u);
    EXPECT_EQ(r.processes[1].pid, 100u);
    EXPECT_EQ(r.processes[1].calls.size(), own.processes[0].calls.size());
    ASSERT_EQ(r.outside.size(), 2u);
    EXPECT_EQ(r.outside[0].pid, 100u);
    EXPECT_EQ(r.outside[0].why, OutsideWhy::OwnCapture);
    EXPECT_TRUE(r.outside[0].merged);
    EXPECT_EQ(r.outside[0].capturePath, ownPath);
    EXPECT_EQ(r.outside[1].command, "/bin/worker -n 3");
    EXPECT_EQ(r.outside[1].why, OutsideWhy::NoPreload);
    EXPECT_EQ(r.outside[1].cuda, OutsideCuda::NotSeen);
    EXPECT_FALSE(r.outside[1].merged);
    EXPECT_TRUE(r.outside[1].capturePath.empty());
}

TEST(CollectorCaptureFile, PastTheBudgetAWindowOfTheLatestCallsIsKept)
{
    // One process of 100 launches (stacks 1, 2, 3 in turn) with a span each, a budget of 40 and windows
    // on: the process keeps a window of its latest calls, between 20 and 40 of them, contiguous and ending
    // at the last call, only their spans, and counts every call by stack.
    TempDir dir;
    StreamBuilder s(12);
    s.api(1, "cuLaunchKernel", wire::Category::Launch).kernel(1, "_Z1kv");
    const int n = 100;
    uint64_t t = 1000000;
    for (int i = 1; i <= n; ++i) {
        s.launch(uint64_t(i), 1, 1, t, t + 3000, 1 + uint32_t(i % 3));
        s.span(uint64_t(i), t + 5000, t + 9000);
        t += 10000;
    }
    s.end(t, s.records + 1);
    Capture c;
    c.processes.push_back(ingestStream(s.bytes.data(), s.bytes.size()));
    writeCapture(dir.file("w.gspy"), c, {s.bytes}, false);
    ReadOptions opt;
    opt.keepCallsUpTo = 40;
    opt.windowPastBudget = true;
    const Capture r = readCapture(dir.file("w.gspy"), opt);
    ASSERT_EQ(r.processes.size(), 1u);
    const Process& p = r.processes[0];
    EXPECT_TRUE(p.windowed);
    EXPECT_FALSE(p.eventsDropped);
    EXPECT_EQ(p.callsSeen, uint64_t(n));
    ASSERT_GE(p.calls.size(), 20u);
    ASSERT_LE(p.calls.size(), 40u);
    EXPECT_EQ(p.calls.back().seq, uint64_t(n)) << "the window ends at the last call";
    for (size_t i = 1; i < p.calls.size(); ++i) EXPECT_EQ(p.calls[i].seq, p.calls[i - 1].seq + 1) << "contiguous";
    EXPECT_EQ(p.spans.size(), p.calls.size()) << "the spans of the window's calls only";
    for (const wire::GpuSpanBody& sp : p.spans) EXPECT_GE(sp.seq, p.calls.front().seq);
    uint64_t byStack = 0;
    for (uint32_t stack = 1; stack <= 3; ++stack) {
        EXPECT_EQ(p.callsByStack.at(stack), uint64_t(stack == 2 ? 34 : 33)) << "stack " << stack;
        byStack += p.callsByStack.at(stack);
    }
    EXPECT_EQ(byStack, uint64_t(n));
    // Without windows the same read keeps nothing of the process, as before.
    opt.windowPastBudget = false;
    const Capture none = readCapture(dir.file("w.gspy"), opt);
    EXPECT_TRUE(none.processes[0].eventsDropped);
    EXPECT_TRUE(none.processes[0].calls.empty());
}
