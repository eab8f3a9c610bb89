// tests/unit/collector/compare/repeat_test.cpp: repeated runs (`record --repeat N`): Run chunks survive the
// capture file's round trip; each figure's median and range over the runs, and which are too wide to
// trust; `diff` of repeated captures calls a change inside the runs' ranges noise and one beyond them
// lower or higher, in its text and JSON.
#include "collector/ingest/capture_file.h"
#include "collector/compare/diff.h"
#include "collector/ingest/ingest.h"
#include "collector/compare/repeat.h"
#include "tests/unit/collector/streams.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>

namespace gpuspy::collect {
namespace {

using gpuspy::test::sampleProcess;

TEST(CollectorRepeat, RunChunksSurviveTheCaptureRoundTrip)
{
    char dir[] = "/tmp/gpuspy-repeat-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/r.gspy";
    Capture c;
    std::vector<std::vector<uint8_t>> streams;
    for (uint32_t pid : {100u, 200u, 201u}) {
        auto s = sampleProcess(pid);
        streams.push_back(s.bytes);
        c.processes.push_back(ingestStream(s.bytes.data(), s.bytes.size()));
    }
    c.runs = {RunInfo{0, 0, 10, 20, {0}}, RunInfo{1, 3, 30, 40, {1, 2}}};
    writeCapture(path, c, streams, false);
    const Capture r = readCapture(path);
    ASSERT_EQ(r.runs.size(), 2u);
    EXPECT_EQ(r.runs[0].run, 0u);
    EXPECT_EQ(r.runs[0].processes, (std::vector<size_t>{0}));
    EXPECT_EQ(r.runs[1].run, 1u);
    EXPECT_EQ(r.runs[1].exitStatus, 3);
    EXPECT_EQ(r.runs[1].beginNs, 30u);
    EXPECT_EQ(r.runs[1].endNs, 40u);
    EXPECT_EQ(r.runs[1].processes, (std::vector<size_t>{1, 2}));
    EXPECT_EQ(r.processes[r.runs[1].processes[1]].pid, 201u);

    // A capture of one run has no Run chunk and reads with no runs.
    c.runs.clear();
    writeCapture(path, c, streams, true);
    EXPECT_TRUE(readCapture(path).runs.empty());
    std::system(("rm -rf '" + std::string(dir) + "'").c_str());
}

TEST(CollectorRepeat, SpreadIsMedianAndRange)
{
    const Spread odd = spreadOf({30, 10, 20});
    EXPECT_EQ(odd.median, 20u);
    EXPECT_EQ(odd.min, 10u);
    EXPECT_EQ(odd.max, 30u);
    EXPECT_EQ(odd.runs, 3u);
    EXPECT_DOUBLE_EQ(odd.spreadPct(), 100.0);
    EXPECT_TRUE(odd.wide());
    EXPECT_EQ(spreadOf({10, 20, 30, 40}).median, 25u);
    const Spread tight = spreadOf({100, 104, 110});
    EXPECT_FALSE(tight.wide());  // 10% of the median
    EXPECT_FALSE(spreadOf({5}).wide());  // one run: no spread to judge
    EXPECT_EQ(spreadOf({0, 0}).spreadPct(), 0.0);
}

RunFigures run(uint32_t index, uint64_t wall, uint64_t kernelNs, uint64_t saving)
{
    RunFigures f;
    f.run = index;
    f.headline = {{"wall_ns", wall}, {"cuda_api_ns", wall / 2}, {"gpu_busy_ns", kernelNs}, {"launches", 100},
                  {"sync_blocked_ns", 0}, {"transfer_bytes", 0}};
    f.kernelGpuNs["k"] = kernelNs;
    if (saving) f.findingSavingsNs["sync-in-loop"] = saving;
    return f;
}

TEST(CollectorRepeat, SummaryTakesTheRunOfMedianWallAndCountsAMissingFindingAsZero)
{
    const RunsSummary s = summarizeRuns({run(0, 300, 10, 5), run(1, 100, 11, 0), run(2, 200, 12, 7)});
    EXPECT_EQ(s.medianRun, 2u);
    ASSERT_EQ(s.headline.size(), 6u);
    EXPECT_EQ(s.headline[0].name, "wall_ns");
    EXPECT_EQ(s.headline[0].spread.median, 200u);
    ASSERT_EQ(s.findings.size(), 1u);
    EXPECT_EQ(s.findings[0].spread.min, 0u);  // run 1 had no such finding
    EXPECT_EQ(s.findings[0].spread.median, 5u);
    EXPECT_TRUE(s.findings[0].spread.wide());
    ASSERT_EQ(s.kernels.size(), 1u);
    EXPECT_FALSE(s.kernels[0].spread.wide());
    const std::string text = renderRunsText(s);
    EXPECT_NE(text.find("Runs (3 runs of the command; the tables above are run 3's"), std::string::npos) << text;
    EXPECT_NE(text.find("WIDE: do not trust"), std::string::npos) << text;
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    addRunsJson(j, s);
    EXPECT_EQ(j["runs"].size(), 3u);
    EXPECT_EQ(j["median_run"], 2);
    EXPECT_EQ(j["spread"]["headline"][0]["name"], "wall_ns");
    EXPECT_EQ(j["spread"]["headline"][0]["min"], 100);
    EXPECT_EQ(j["spread"]["findings"][0]["wide"], true);
}

Report reportWithWall(uint64_t wall)
{
    Report r;
    ProcessSummary p;
    p.pid = 1;
    p.command = "./app";
    p.wallNs = wall;
    r.processes.push_back(p);
    return r;
}

TEST(CollectorRepeat, DiffJudgesAChangeByTestsOverTheRuns)
{
    const RunsSummary a = summarizeRuns({run(0, 100, 10, 0), run(1, 120, 10, 0), run(2, 140, 10, 0)});
    // B: wall overlapping A's range (noise), the kernel's GPU time far beyond it (higher: Welch's t-test).
    const RunsSummary b = summarizeRuns({run(0, 110, 30, 0), run(1, 130, 31, 0), run(2, 150, 32, 0)});
    ReportDiff d = diffReports(reportWithWall(120), reportWithWall(130));
    addRunSpreads(d, a, b);
    EXPECT_EQ(d.runsA, 3u);
    EXPECT_EQ(spreadVerdict(d, "headline", "wall_ns"), "noise");
    EXPECT_EQ(spreadVerdict(d, "kernels", "k"), "higher");
    EXPECT_EQ(spreadVerdict(d, "headline", "launches"), "noise");  // equal
    const std::string text = renderDiffText(d, "a.gspy", "b.gspy", 10);
    EXPECT_NE(text.find("(wall): noise, the runs cannot tell the two apart"), std::string::npos) << text;
    EXPECT_NE(text.find("higher (beyond noise)"), std::string::npos) << text;
    const auto j = diffJson(d, "a.gspy", "b.gspy");
    EXPECT_EQ(j["runs"]["a"], 3);
    EXPECT_EQ(j["spread"][0]["name"], "wall_ns");
    EXPECT_EQ(j["spread"][0]["verdict"], "noise");

    // B's whole range below A's, three noisy runs each: apart, but too few runs for either test to tell
    // (the old rule called disjoint ranges a change).
    const RunsSummary fast = summarizeRuns({run(0, 50, 10, 0), run(1, 60, 10, 0), run(2, 70, 10, 0)});
    ReportDiff e = diffReports(reportWithWall(120), reportWithWall(60));
    addRunSpreads(e, a, fast);
    EXPECT_EQ(spreadVerdict(e, "headline", "wall_ns"), "too_few");
    EXPECT_NE(renderDiffText(e, "a", "b", 10).find("(wall): too few runs to tell"), std::string::npos);
    // Six runs each, apart: lower, beyond the noise.
    const RunsSummary a6 = summarizeRuns({run(0, 100, 10, 0), run(1, 120, 10, 0), run(2, 140, 10, 0), run(3, 110, 10, 0),
                                          run(4, 130, 10, 0), run(5, 125, 10, 0)});
    const RunsSummary fast6 = summarizeRuns({run(0, 50, 10, 0), run(1, 60, 10, 0), run(2, 70, 10, 0), run(3, 55, 10, 0),
                                             run(4, 65, 10, 0), run(5, 62, 10, 0)});
    ReportDiff g = diffReports(reportWithWall(120), reportWithWall(60));
    addRunSpreads(g, a6, fast6);
    EXPECT_EQ(spreadVerdict(g, "headline", "wall_ns"), "lower");
    EXPECT_NE(renderDiffText(g, "a", "b", 10).find("(wall): beyond the runs' noise"), std::string::npos);
    // Without repeated runs nothing is compared.
    EXPECT_EQ(spreadVerdict(diffReports(reportWithWall(1), reportWithWall(2)), "headline", "wall_ns"), "");
}

RunFigures waited(RunFigures f, uint64_t cpuWaitNs)
{
    f.cpuWaitNs = cpuWaitNs;
    f.cpuWaitKnown = true;
    return f;
}

TEST(CollectorRepeat, DiffCallsAChangeTheHostsLoadExplainsNoise)
{
    // The same program: B's runs all ~2% slower, as a busier host makes them, and each waited ~25 units
    // longer for a CPU. The walls alone: higher; less their waits: no change, so noise (the host's load).
    std::vector<RunFigures> ra, rb;
    for (uint32_t i = 0; i < 6; ++i) {
        ra.push_back(waited(run(i, 1000 + i, 10, 0), 5));
        rb.push_back(waited(run(i, 1020 + i, 10, 0), 30 - i % 2));
    }
    ReportDiff d = diffReports(reportWithWall(1002), reportWithWall(1022));
    addRunSpreads(d, summarizeRuns(ra), summarizeRuns(rb));
    EXPECT_EQ(spreadVerdict(d, "headline", "wall_ns"), "noise");
    const std::string text = renderDiffText(d, "a", "b", 10);
    EXPECT_NE(text.find("(wall): noise, the host's load: B's runs waited"), std::string::npos) << text;
    EXPECT_NE(text.find("waiting for a CPU"), std::string::npos) << text;
    const auto j = diffJson(d, "a", "b");
    EXPECT_EQ(j["spread"][0]["why"], "host_load");
    EXPECT_EQ(j["spread"][0]["cpu_wait"]["b"]["median"], 29);

    // A real change (20% longer) with the same extra wait: still higher.
    std::vector<RunFigures> slow;
    for (uint32_t i = 0; i < 6; ++i) slow.push_back(waited(run(i, 1200 + i, 10, 0), 30));
    ReportDiff e = diffReports(reportWithWall(1002), reportWithWall(1202));
    addRunSpreads(e, summarizeRuns(ra), summarizeRuns(slow));
    EXPECT_EQ(spreadVerdict(e, "headline", "wall_ns"), "higher");
    EXPECT_FALSE(diffJson(e, "a", "b")["spread"][0].contains("why"));

    // A run without its wait (a stream cut short): the walls' own verdict.
    rb[3].cpuWaitKnown = false;
    ReportDiff f = diffReports(reportWithWall(1002), reportWithWall(1022));
    addRunSpreads(f, summarizeRuns(ra), summarizeRuns(rb));
    EXPECT_EQ(spreadVerdict(f, "headline", "wall_ns"), "higher");
    EXPECT_FALSE(diffJson(f, "a", "b")["spread"][0].contains("cpu_wait"));
}

}  // namespace
}  // namespace gpuspy::collect
