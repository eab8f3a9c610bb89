// tests/unit/collector/analyze/stream_analysis_test.cpp: the streaming report (StreamAnalyzer, as `gpuspy
// report` reads a capture) agrees with the analysis of the same capture held in memory, also when the
// stream is longer than the window and its records arrive out of time order; and the quantile sketch
// behind every median and p99.
#include "collector/analyze/analyze.h"
#include "collector/analyze/quantile.h"
#include "collector/ingest/ingest.h"
#include "collector/report/report.h"
#include "tests/unit/collector/streams.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace {

using namespace gpuspy;
using namespace gpuspy::collect;
using gpuspy::test::StreamBuilder;

// Two threads each running a loop: a timed copy, launches (one in four timed), an NVTX range around
// each step, a stream synchronize per step. Records of the two threads interleave out of time order
// and each GPU span arrives a few records after its call, as they do from the shim.
std::vector<uint8_t> loopStream(uint64_t steps)
{
    StreamBuilder s(77, 1000);
    s.process(77, 1, std::string("loop\0", 5));
    s.api(1, "cuLaunchKernel", wire::Category::Launch);
    s.api(2, "cuMemcpyHtoDAsync_v2", wire::Category::Transfer);
    s.api(3, "cuStreamSynchronize", wire::Category::Sync);
    s.kernel(1, "_Z4stepPf");
    s.kernel(2, "_Z5tinyPf");
    s.stack(1, {0x401000});
    s.stack(2, {0x401100});
    s.module(0x400000, 0x500000, 0x400000, "/work/loop");
    s.device(0, "GPU 0");
    s.string(1, "step");
    std::mt19937_64 rng(7);
    struct Thread {
        uint32_t tid;
        uint64_t clock, gpu;
    };
    Thread threads[2] = {{1, 10000, 0}, {2, 10500, 0}};
    uint64_t seq = 0;
    std::vector<wire::GpuSpanBody> late;  // spans not yet sent
    std::vector<wire::CallBody> delayed;  // thread 2's calls, sent a few at a time behind thread 1's
    auto emitCall = [&](const wire::CallBody& c) {
        if (c.tid == 2) {
            delayed.push_back(c);
            if (delayed.size() < 5) return;
            for (const wire::CallBody& d : delayed) s.fixed(d);
            delayed.clear();
        } else {
            s.fixed(c);
        }
        if (late.size() > 3) {
            s.fixed(late.front());
            late.erase(late.begin());
        }
    };
    for (uint64_t step = 0; step < steps; ++step)
        for (Thread& t : threads) {
            wire::NvtxBody push{t.clock, 0, t.tid, 1, 0, wire::NvtxKind::Push, {}};
            s.fixed(push);
            for (int op = 0; op < 6; ++op) {
                wire::CallBody c{};
                c.seq = ++seq;
                c.tid = t.tid;
                c.device = 0;
                c.beginNs = t.clock;
                c.endNs = t.clock + 2000 + rng() % 1000;
                const bool copy = op == 0, sync = op == 5;
                c.apiId = copy ? 2 : sync ? 3 : 1;
                c.category = copy ? wire::Category::Transfer : sync ? wire::Category::Sync : wire::Category::Launch;
                c.stackId = sync ? 2 : 1;
                bool timed = false;
                if (copy) {
                    c.args.transfer = {4096, 0xd000, 0xa000, wire::Direction::HtoD, wire::MemKind::Pinned, wire::MemKind::Device, 0, 0};
                    c.flags = wire::kCallAsync | wire::kCallDeviceWork | wire::kCallGpuTimed;
                    timed = true;
                } else if (!sync) {
                    c.args.launch.kernelId = op % 2 ? 1 : 2;
                    timed = (seq % 4) == 0;
                    c.flags = uint16_t(wire::kCallAsync | wire::kCallDeviceWork | (timed ? wire::kCallGpuTimed : wire::kCallGpuSampledOut));
                }
                if (timed) {
                    const uint64_t b = std::max(t.gpu, c.beginNs + 500);
                    t.gpu = b + 300 + rng() % 4000;
                    late.push_back(wire::GpuSpanBody{c.seq, b, t.gpu, 0, 0});
                }
                emitCall(c);
                t.clock = c.endNs + 100 + rng() % 3000;
            }
            wire::NvtxBody pop{t.clock, 0, t.tid, 0, 0, wire::NvtxKind::Pop, {}};
            s.fixed(pop);
        }
    for (const wire::CallBody& d : delayed) s.fixed(d);
    for (const wire::GpuSpanBody& g : late) s.fixed(g);
    wire::EndBody end{threads[1].clock + 10000, 0, 0, 0, 0, 0};
    s.fixed(end);
    return s.bytes;
}

Report streamed(const std::vector<uint8_t>& bytes, const ReportOptions& options)
{
    StreamAnalyzer analyzer(options);
    StreamIngest in;
    in.setKeepRaw(false);
    in.setKeepEvents(false);
    in.setObserver([&](const Process& p, const wire::RecordView& v) { analyzer.onRecord(p, v); });
    for (size_t at = 0; at < bytes.size(); at += 65536) in.feed(bytes.data() + at, std::min<size_t>(65536, bytes.size() - at));
    EXPECT_TRUE(in.finish()) << in.error();
    EXPECT_TRUE(in.process().calls.empty());  // the events went to the analysis, not into memory
    analyzer.onProcess(in.process());
    return analyzer.finish(0);
}

Report inMemory(const std::vector<uint8_t>& bytes, const ReportOptions& options)
{
    Capture c;
    c.processes.push_back(ingestStream(bytes.data(), bytes.size()));
    return analyze(c, options);
}

TEST(StreamAnalysis, SameReportAsInMemoryForASmallCapture)
{
    const auto bytes = loopStream(200);
    const std::string a = renderJson(streamed(bytes, {})), b = renderJson(inMemory(bytes, {}));
    EXPECT_EQ(a, b);
    EXPECT_NE(a.find("\"step\""), std::string::npos);  // the NVTX range is there
}

TEST(StreamAnalysis, SameReportAsInMemoryBeyondTheWindow)
{
    // 2 threads x 6 calls x 25000 steps = 300000 calls: more than two windows of one process.
    const auto bytes = loopStream(25000);
    const Report s = streamed(bytes, {}), m = inMemory(bytes, {});
    ASSERT_EQ(s.processes.size(), 1u);
    EXPECT_EQ(s.processes[0].calls, 300000u);
    EXPECT_EQ(renderJson(s), renderJson(m));
    ASSERT_EQ(s.devices.size(), 1u);
    EXPECT_GT(s.devices[0].gaps, 0u);
    for (const std::string& note : s.notes) EXPECT_EQ(note.find("window"), std::string::npos) << note;
}

TEST(StreamAnalysis, ProcessFilterLeavesOthersOut)
{
    ReportOptions only;
    only.pid = 78;
    const Report r = streamed(loopStream(10), only);
    EXPECT_TRUE(r.processes.empty());
    EXPECT_TRUE(r.apis.empty());
}

TEST(QuantileSketch, ExactWhileSmall)
{
    QuantileSketch q;
    std::vector<uint64_t> v;
    for (uint64_t i = 0; i < 1000; ++i) v.push_back((i * 7919) % 1000 + 1);
    for (uint64_t x : v) q.add(x);
    const DurationStats a = q.stats(), b = durationStats(v);
    EXPECT_TRUE(q.exact());
    EXPECT_EQ(a.median, b.median);
    EXPECT_EQ(a.p99, b.p99);
    EXPECT_EQ(a.total, b.total);
}

TEST(QuantileSketch, WithinOnePercentWhenLarge)
{
    QuantileSketch q;
    std::vector<uint64_t> v;
    std::mt19937_64 rng(3);
    for (int i = 0; i < 200000; ++i) v.push_back(1000 + rng() % 1000000);
    for (uint64_t x : v) q.add(x);
    EXPECT_FALSE(q.exact());
    const DurationStats a = q.stats(), b = durationStats(v);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.total, b.total);
    EXPECT_EQ(a.min, b.min);
    EXPECT_EQ(a.max, b.max);
    EXPECT_NEAR(double(a.median), double(b.median), 0.01 * double(b.median));
    EXPECT_NEAR(double(a.p99), double(b.p99), 0.01 * double(b.p99));
}

}  // namespace
