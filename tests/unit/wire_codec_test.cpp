// Round trips and hostile input for the record codec.
#include "wire/codec.h"

#include <gtest/gtest.h>

#include <random>

using namespace gpuspy::wire;

namespace {

std::vector<uint8_t> sampleStream()
{
    std::vector<uint8_t> out(1 << 16);
    size_t n = 0;
    StreamHeader h = makeStreamHeader(42, 1000, 2000);
    std::memcpy(out.data(), &h, sizeof h);
    n += sizeof h;
    ApiDefBody api{7, Category::Launch, 0, 14};
    n += encodeVar(out.data() + n, out.size() - n, api, "cuLaunchKernel", 14);
    CallBody call{};
    call.seq = 1;
    call.beginNs = 10;
    call.endNs = 20;
    call.apiId = 7;
    call.category = Category::Launch;
    call.args.launch.kernelId = 3;
    call.args.launch.grid[0] = 256;
    n += encode(out.data() + n, out.size() - n, call);
    uint64_t pcs[3] = {0x1000, 0x2000, 0x3000};
    StackDefBody st{5, 3};
    n += encodeVar(out.data() + n, out.size() - n, st, pcs, sizeof pcs);
    EndBody end{};
    end.recordsMade = 3;
    n += encode(out.data() + n, out.size() - n, end);
    out.resize(n);
    return out;
}

struct Collected {
    std::vector<RecordType> types;
    std::string apiName;
    CallBody call{};
    std::vector<uint64_t> pcs;
};

void collect(Collected& c, const RecordView& v)
{
    c.types.push_back(v.type);
    if (v.type == RecordType::ApiDef) c.apiName = std::string(v.tail<ApiDefBody>());
    if (v.type == RecordType::Call) c.call = v.as<CallBody>();
    if (v.type == RecordType::StackDef) {
        auto t = v.tail<StackDefBody>();
        c.pcs.resize(t.size() / 8);
        std::memcpy(c.pcs.data(), t.data(), t.size());
    }
}

}  // namespace

TEST(WireCodec, RoundTripInOneFeed)
{
    auto bytes = sampleStream();
    StreamDecoder d;
    Collected c;
    ASSERT_TRUE(d.feed(bytes.data(), bytes.size(), [&](const RecordView& v) { collect(c, v); }));
    ASSERT_TRUE(d.finish());
    EXPECT_EQ(d.header().pid, 42u);
    ASSERT_EQ(c.types.size(), 4u);
    EXPECT_EQ(c.types[1], RecordType::Call);
    EXPECT_EQ(c.apiName, "cuLaunchKernel");
    EXPECT_EQ(c.call.args.launch.grid[0], 256u);
    EXPECT_EQ(c.pcs, (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));
}

TEST(WireCodec, EverySplitDecodesTheSame)
{
    auto bytes = sampleStream();
    for (size_t chunk = 1; chunk < 64; ++chunk) {
        StreamDecoder d;
        Collected c;
        for (size_t i = 0; i < bytes.size(); i += chunk)
            ASSERT_TRUE(d.feed(bytes.data() + i, std::min(chunk, bytes.size() - i), [&](const RecordView& v) { collect(c, v); }));
        ASSERT_TRUE(d.finish()) << d.errorMessage();
        ASSERT_EQ(c.types.size(), 4u) << "chunk " << chunk;
        EXPECT_EQ(c.apiName, "cuLaunchKernel");
        EXPECT_EQ(c.pcs.size(), 3u);
    }
}

TEST(WireCodec, TruncationKeepsWhatCameBefore)
{
    auto bytes = sampleStream();
    bytes.resize(bytes.size() - 5);
    StreamDecoder d;
    Collected c;
    ASSERT_TRUE(d.feed(bytes.data(), bytes.size(), [&](const RecordView& v) { collect(c, v); }));
    EXPECT_FALSE(d.finish());
    EXPECT_EQ(d.error(), DecodeError::Truncated);
    EXPECT_EQ(c.types.size(), 3u);
    EXPECT_NE(d.errorMessage().find("offset"), std::string::npos);
}

TEST(WireCodec, BadMagicAndVersionAreRefused)
{
    auto bytes = sampleStream();
    auto bad = bytes;
    bad[0] = 'X';
    StreamDecoder d1;
    EXPECT_FALSE(d1.feed(bad.data(), bad.size(), [](const RecordView&) { FAIL(); }));
    EXPECT_EQ(d1.error(), DecodeError::BadMagic);
    bad = bytes;
    bad[8] = 9;
    StreamDecoder d2;
    EXPECT_FALSE(d2.feed(bad.data(), bad.size(), [](const RecordView&) { FAIL(); }));
    EXPECT_EQ(d2.error(), DecodeError::BadVersion);
}

TEST(WireCodec, LyingLengthsStopTheStreamAtTheirOffset)
{
    auto bytes = sampleStream();
    // The ApiDef's stated name length (first record after the header) now exceeds its body.
    size_t at = sizeof(StreamHeader) + sizeof(RecordHeader) + 4;
    uint32_t huge = 1u << 30;
    std::memcpy(bytes.data() + at, &huge, 4);
    StreamDecoder d;
    int seen = 0;
    EXPECT_FALSE(d.feed(bytes.data(), bytes.size(), [&](const RecordView&) { ++seen; }));
    EXPECT_EQ(d.error(), DecodeError::BadTail);
    EXPECT_EQ(d.errorOffset(), sizeof(StreamHeader));
    EXPECT_EQ(seen, 0);
}

TEST(WireCodec, UnknownRecordTypesAreSkipped)
{
    auto bytes = sampleStream();
    std::vector<uint8_t> extra(sizeof(RecordHeader) + 16, 0);
    RecordHeader h{999, 0, 16};
    std::memcpy(extra.data(), &h, sizeof h);
    bytes.insert(bytes.begin() + sizeof(StreamHeader), extra.begin(), extra.end());
    StreamDecoder d;
    Collected c;
    ASSERT_TRUE(d.feed(bytes.data(), bytes.size(), [&](const RecordView& v) { collect(c, v); }));
    EXPECT_TRUE(d.finish());
    EXPECT_EQ(d.unknownRecords(), 1u);
    EXPECT_EQ(c.types.size(), 4u);
}

TEST(WireCodec, RandomBytesNeverCrash)
{
    std::mt19937_64 rng(1234);
    auto good = sampleStream();
    for (int round = 0; round < 2000; ++round) {
        auto bytes = good;
        int flips = 1 + int(rng() % 8);
        for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = uint8_t(rng());
        StreamDecoder d;
        size_t delivered = 0;
        d.feed(bytes.data(), bytes.size(), [&](const RecordView& v) {
            ++delivered;
            EXPECT_LE(v.size, kMaxBody);
        });
        d.finish();
        EXPECT_LE(delivered, 4u);
    }
}

TEST(WireCodec, EncoderRefusesSmallBuffersAndHugeBodies)
{
    uint8_t buf[16];
    CallBody call{};
    EXPECT_EQ(encode(buf, sizeof buf, call), 0u);
    std::vector<uint8_t> big(kMaxBody * 2);
    KernelDefBody k{1, uint32_t(kMaxBody)};
    EXPECT_EQ(encodeVar(big.data(), big.size(), k, big.data(), kMaxBody), 0u);
}

TEST(WireCodec, HugeStackDepthDoesNotWrap)
{
    // depth * 8 would wrap to 8 in 32 bits: the decoder must see the real 4 GiB claim.
    std::vector<uint8_t> bytes(sizeof(StreamHeader));
    StreamHeader h = makeStreamHeader(1, 0, 0);
    std::memcpy(bytes.data(), &h, sizeof h);
    StackDefBody st{1, 0x20000001u};
    uint64_t pc = 0x1234;
    uint8_t rec[64];
    size_t n = encodeRaw(rec, sizeof rec, RecordType::StackDef, &st, sizeof st, &pc, sizeof pc);
    ASSERT_GT(n, 0u);
    bytes.insert(bytes.end(), rec, rec + n);
    StreamDecoder d;
    EXPECT_FALSE(d.feed(bytes.data(), bytes.size(), [](const RecordView&) { FAIL(); }));
    EXPECT_EQ(d.error(), DecodeError::BadTail);
}

// Category::Query (minor 4): named "query"; a value past the last category (a newer writer's) reads "other",
// as a reader before minor 4 reads Query.
TEST(WireCodec, CategoryNames)
{
    using gpuspy::wire::Category;
    EXPECT_STREQ(gpuspy::wire::categoryName(Category::Graph), "graph");
    EXPECT_STREQ(gpuspy::wire::categoryName(Category::Query), "query");
    EXPECT_STREQ(gpuspy::wire::categoryName(Category(8)), "other");
    EXPECT_LT(size_t(Category::Query), gpuspy::wire::kWindowCategories);  // a window's left-out counts hold it
}
