// tests/unit/collector/analyze/gpu_time_test.cpp: where the report's GPU times come from (collector/README.md,
// "GPU time sources"): which spans are only upper bounds, on hand-built records, and how the report
// carries that (transfer rows, devices, syncs, the note, JSON, text and CSV).
#include "collector/analyze/analyze.h"
#include "collector/analyze/internal.h"
#include "collector/report/report.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

namespace gpuspy::collect {
namespace {

using wire::Category;
using wire::Direction;
using wire::MemKind;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kUs = 1000;

// One process's calls and spans, as ingest would deliver them.
struct Records {
    Process p;
    uint64_t seq = 0;

    Records()
    {
        p.pid = 7;
        p.command = "app";
        p.devices[0] = "GPU";
        p.apis[1] = ApiInfo{"cuMemcpyHtoD_v2", Category::Transfer};
        p.apis[2] = ApiInfo{"cuMemcpyDtoH_v2", Category::Transfer};
        p.apis[3] = ApiInfo{"cuMemcpyHtoDAsync_v2", Category::Transfer};
        p.apis[4] = ApiInfo{"cuLaunchKernel", Category::Launch};
        p.kernels[1] = "_Z6kernelv";
    }

    wire::CallBody& call(uint16_t api, Category cat, uint64_t begin, uint64_t end, uint16_t flags)
    {
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = begin;
        c.endNs = end;
        c.tid = 1;
        c.apiId = api;
        c.category = cat;
        c.flags = uint16_t(flags | wire::kCallDeviceWork | wire::kCallGpuTimed);
        p.calls.push_back(c);
        p.lastNs = std::max(p.lastNs, end);
        return p.calls.back();
    }

    wire::GpuSpanBody span(const wire::CallBody& c, uint64_t begin, uint64_t end)
    {
        wire::GpuSpanBody s{};
        s.seq = c.seq;
        s.beginNs = begin;
        s.endNs = end;
        p.spans.push_back(s);
        p.lastNs = std::max(p.lastNs, end);
        return s;
    }

    // A copy of 1 MiB; a synchronous one (not async) or a pageable one blocks its call.
    wire::CallBody& copy(uint16_t api, Direction dir, MemKind host, bool async, uint64_t begin, uint64_t end)
    {
        const bool blocks = !async || host == MemKind::Pageable;
        wire::CallBody& c = call(api, Category::Transfer, begin, end,
                                 uint16_t((async ? wire::kCallAsync : 0) | (blocks ? wire::kCallImplicitSync : 0)));
        const bool toDevice = dir == Direction::HtoD;
        c.args.transfer = wire::TransferArgs{kMiB, 0xd000, 0xa000, dir, toDevice ? host : MemKind::Device,
                                             toDevice ? MemKind::Device : host, 0, 0};
        return c;
    }

    wire::CallBody& launch(uint64_t begin, uint64_t end)
    {
        wire::CallBody& c = call(4, Category::Launch, begin, end, wire::kCallAsync);
        c.args.launch.kernelId = 1;
        return c;
    }

    Report report() const
    {
        Capture cap;
        cap.processes.push_back(p);
        return analyze(cap, ReportOptions{});
    }
};

// A synchronous copy on a stream with nothing queued: its begin event completed as the call began
// (its span starts a microsecond after the call's begin), long before the driver submitted the work.
TEST(CollectorGpuTime, BlockingCopyOnAnIdleStreamIsAnUpperBound)
{
    Records r;
    const wire::CallBody& c = r.copy(1, Direction::HtoD, MemKind::Pageable, false, 1000 * kUs, 1300 * kUs);
    EXPECT_TRUE(detail::gpuSpanIsUpperBound(c, r.span(c, 1001 * kUs, 1300 * kUs)));
}

// The same copy queued behind a kernel that ran until 200 us into the call: the begin event completed
// when the kernel ended, and the copy's work began then.
TEST(CollectorGpuTime, BlockingCopyQueuedBehindAKernelIsMeasured)
{
    Records r;
    const wire::CallBody& k = r.launch(990 * kUs, 995 * kUs);
    r.span(k, 1000 * kUs, 1200 * kUs);
    const wire::CallBody& c = r.copy(2, Direction::DtoH, MemKind::Pageable, false, 1000 * kUs, 1350 * kUs);
    EXPECT_FALSE(detail::gpuSpanIsUpperBound(c, r.span(c, 1200 * kUs, 1350 * kUs)));
}

// A begin event held back by queued work only just past the call's begin may still have completed
// before the work was submitted: within the slack, the span stays a bound.
TEST(CollectorGpuTime, BeginWithinTheSlackIsStillABound)
{
    Records r;
    const wire::CallBody& c = r.copy(1, Direction::HtoD, MemKind::Pinned, false, 1000 * kUs, 1300 * kUs);
    EXPECT_TRUE(detail::gpuSpanIsUpperBound(c, r.span(c, 1000 * kUs + detail::kIdleStreamSlackNs, 1300 * kUs)));
    EXPECT_FALSE(detail::gpuSpanIsUpperBound(c, r.span(c, 1000 * kUs + detail::kIdleStreamSlackNs + 1, 1300 * kUs)));
}

// An async copy from pinned memory returns once queued: the shim places its span from the call's
// return, and it is measured even on an idle stream.
TEST(CollectorGpuTime, NonBlockingPinnedCopyIsMeasured)
{
    Records r;
    const wire::CallBody& c = r.copy(3, Direction::HtoD, MemKind::Pinned, true, 1000 * kUs, 1005 * kUs);
    EXPECT_FALSE(detail::gpuSpanIsUpperBound(c, r.span(c, 1000 * kUs, 1050 * kUs)));
}

// The three cases in one process, through the analysis and every renderer.
Records mixed()
{
    Records r;
    // Idle stream: a pageable HtoD whose span is the call's (300 us, 40 us of it device work).
    const wire::CallBody& idle = r.copy(1, Direction::HtoD, MemKind::Pageable, false, 1000 * kUs, 1300 * kUs);
    r.span(idle, 1001 * kUs, 1300 * kUs);
    // A kernel running until 1500 us, then a DtoH queued behind it.
    const wire::CallBody& k = r.launch(1310 * kUs, 1315 * kUs);
    r.span(k, 1320 * kUs, 1500 * kUs);
    const wire::CallBody& queued = r.copy(2, Direction::DtoH, MemKind::Pageable, false, 1320 * kUs, 1560 * kUs);
    r.span(queued, 1500 * kUs, 1560 * kUs);
    // A pinned async HtoD.
    const wire::CallBody& async = r.copy(3, Direction::HtoD, MemKind::Pinned, true, 1600 * kUs, 1605 * kUs);
    r.span(async, 1610 * kUs, 1650 * kUs);
    return r;
}

const TransferRow& row(const Report& rep, const std::string& dir, const std::string& mode)
{
    for (const TransferRow& t : rep.transfers)
        if (t.direction == dir && t.mode == mode) return t;
    throw std::runtime_error("no transfer row " + dir + " " + mode);
}

TEST(CollectorGpuTime, RowsDevicesAndSyncsSayWhatIsABound)
{
    const Report rep = mixed().report();
    const TransferRow& idle = row(rep, "HtoD", "sync");
    EXPECT_EQ(idle.upperBoundCount, 1u);
    EXPECT_EQ(idle.upperBoundGpuNs, 299 * kUs);
    EXPECT_EQ(idle.gpuNs, 299 * kUs);
    EXPECT_STREQ(idle.gpuTime(), "upper_bound");
    const TransferRow& queued = row(rep, "DtoH", "sync");
    EXPECT_EQ(queued.upperBoundCount, 0u);
    EXPECT_STREQ(queued.gpuTime(), "measured");
    EXPECT_STREQ(row(rep, "HtoD", "async").gpuTime(), "measured");

    ASSERT_EQ(rep.devices.size(), 1u);
    EXPECT_EQ(rep.devices[0].upperBoundOps, 1u);
    EXPECT_EQ(rep.devices[0].upperBoundNs, 299 * kUs);
    for (const SyncRow& s : rep.syncs)
        EXPECT_EQ(s.upperBoundCount, s.api == "cuMemcpyHtoD_v2" ? 1u : 0u) << s.api;
    EXPECT_EQ(std::count_if(rep.notes.begin(), rep.notes.end(),
                            [](const std::string& n) { return n.find("upper bounds") != std::string::npos; }),
              1);
}

TEST(CollectorGpuTime, NoteOnlyWhenSomeSpanIsABound)
{
    Records r;
    const wire::CallBody& c = r.copy(3, Direction::HtoD, MemKind::Pinned, true, 1000 * kUs, 1005 * kUs);
    r.span(c, 1010 * kUs, 1050 * kUs);
    const Report rep = r.report();
    for (const std::string& n : rep.notes) EXPECT_EQ(n.find("upper bound"), std::string::npos) << n;
    EXPECT_EQ(rep.devices.at(0).upperBoundOps, 0u);
}

TEST(CollectorGpuTime, JsonCsvAndTextCarryIt)
{
    const Report rep = mixed().report();
    const nlohmann::ordered_json j = reportJson(rep);
    for (const auto& t : j["transfers"]) {
        const bool bound = t["direction"] == "HtoD" && t["mode"] == "sync";
        EXPECT_EQ(t["gpu_time"], bound ? "upper_bound" : "measured");
        EXPECT_EQ(t["upper_bound_count"], bound ? 1 : 0);
    }
    EXPECT_EQ(j["devices"][0]["upper_bound_ops"], 1);

    const std::string csv = renderCsv(rep);
    EXPECT_NE(csv.find(",gpu_time,upper_bound_count,upper_bound_gpu_ns\n"), std::string::npos) << csv;
    EXPECT_NE(csv.find(",upper_bound,1,299000\n"), std::string::npos) << csv;

    const std::string text = renderText(rep, TextOptions{});
    EXPECT_NE(text.find("<=299 us"), std::string::npos) << text;  // the bounded row's GPU time
    EXPECT_NE(text.find("<= upper bound"), std::string::npos) << text;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

// Sampled-out work is missing from the busy time (a lower bound), bounded spans inflate it: with both,
// the text marks it as neither.
TEST(CollectorGpuTime, BusyWithBoundsAndUntimedWorkIsNeitherBound)
{
    Records r = mixed();
    wire::CallBody& untimed = r.launch(1700 * kUs, 1705 * kUs);
    untimed.flags = uint16_t((untimed.flags & ~wire::kCallGpuTimed) | wire::kCallGpuSampledOut);
    const Report rep = r.report();
    ASSERT_EQ(rep.devices.size(), 1u);
    EXPECT_EQ(rep.devices[0].sampledOutOps, 1u);
    const std::string text = renderText(rep, TextOptions{});
    EXPECT_NE(text.find("busy ~"), std::string::npos) << text;
    EXPECT_EQ(text.find("busy <="), std::string::npos) << text;
    EXPECT_NE(renderText(mixed().report(), TextOptions{}).find("busy <="), std::string::npos);
}

}  // namespace
}  // namespace gpuspy::collect
