// tests/unit/collector/report/report_test.cpp: the renderers on a hand-built Report: the JSON has the schema's
// keys and types (parsed back with nlohmann), the text fits 100 columns with findings first and no
// colour unless asked, the CSV has one table per section.
#include "collector/report/report.h"
#include "collector/report/text_parts.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace gpuspy::collect {
namespace {

Report sampleReport()
{
    Report r;
    r.options.top = 3;
    ProcessSummary p;
    p.pid = 4242;
    p.command = "python train.py --epochs 3 --data /very/long/path/" + std::string(150, 'x');
    p.wallNs = 2500000000;
    p.cudaApiNs = 1200000000;
    p.cudaApiPct = 48;
    p.gpuspyOverheadNs = 1000000;
    p.droppedRecords = 3;
    p.recordsMade = 100000;
    r.processes.push_back(p);
    DeviceSummary d;
    d.pid = 4242;
    d.id = 0;
    d.name = "NVIDIA H200";
    d.busyNs = 500000000;
    d.busyPct = 20;
    d.activeNs = 2500000000;
    r.devices.push_back(d);
    ApiRow a;
    a.api = "cuMemcpyHtoD_v2";
    a.display = "cuMemcpyHtoD_v2 (cudaMemcpy)";
    a.category = "transfer";
    a.host = durationStats({100, 200, 300});
    r.apis.push_back(a);
    TransferRow t;
    t.direction = "HtoD";
    t.hostMemory = "pageable";
    t.mode = "sync";
    t.count = 100;
    t.bytes = 100ull << 20;
    t.gpuNs = 10000000;
    t.hostNs = 30000000;
    t.gbps = 10.49;
    t.gbpsBasis = "gpu";
    t.buckets = {{"<=64KiB", 65536, 0, 0}, {"<=1MiB", 1 << 20, 100, 100ull << 20}, {">1MiB", 0, 0, 0}};
    t.callsites = {0};
    r.transfers.push_back(t);
    KernelRow k;
    k.name = "void gemm_tile<float, 128, 128>(float const*, float const*, float*, int, int, int, "
             "cutlass::epilogue::thread::LinearCombination<float, 4, float, float> const&)";
    k.count = 12000;
    k.timedCount = 12000;
    k.gpuNs = 120000000;
    k.estimatedGpuNs = 120000000;
    k.gpu = durationStats({10000, 10000, 10000});
    k.launchHostNs = 60000000;
    k.medianLaunchHostNs = 5000;
    r.kernels.push_back(k);
    r.launches.count = 12000;
    r.launches.hostNs = 60000000;
    r.launches.medianHostNs = 5000;
    r.launches.perSecond = 4800;
    SyncRow s;
    s.api = "cuCtxSynchronize";
    s.display = "cuCtxSynchronize (cudaDeviceSynchronize)";
    s.kind = "context";
    s.count = 50;
    s.blockedNs = 400000000;
    s.gpuBusyNs = 300000000;
    s.host = durationStats({8000000, 8000000});
    r.syncs.push_back(s);
    NvtxRow n;
    n.name = "epoch";
    n.ranges = 3;
    n.rangeNs = 2400000000;
    r.nvtx.push_back(n);
    CallSite c;
    c.id = 0;
    c.category = "transfer";
    c.label = "train_step(Model&, Batch const&, std::vector<float, std::allocator<float> >&) (train.cu:128)";
    c.frames = {ReportFrame{"cudaMemcpy", "", 0, "/usr/lib/libcudart.so.12", 0x100, 0x7f00100, false, false},
                ReportFrame{"train_step(Model&, Batch const&, std::vector<float, std::allocator<float> >&)",
                            "/src/train.cu", 128, "/usr/bin/train", 0x1234, 0x401234, false, true}};
    c.siteFrame = 1;
    c.count = 100;
    c.ns = 30000000;
    c.apis = {"cuMemcpyHtoD_v2"};
    r.callsites.push_back(c);
    Finding f;
    f.rule = "pageable-memcpy";
    f.severity = "high";
    f.message = "100 synchronous copies of 100.0 MiB used pageable host memory, a very long message that has "
                "to be wrapped because it is far longer than one line of a terminal of one hundred columns; "
                "averyveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryvery"
                "veryveryveryverylongword, assuming things.";
    f.count = 100;
    f.ns = 30000000;
    f.estimatedSavingsNs = 15000000;
    f.evidence = {{"copies", 100}, {"gbps", 10.49}};
    f.callsites = {0};
    r.findings.push_back(f);
    r.notes.push_back("3 of 100000 records were dropped: counts and times are lower bounds");
    return r;
}

TEST(ReportJson, SchemaKeysAndTypes)
{
    const nlohmann::json j = nlohmann::json::parse(renderJson(sampleReport()));
    EXPECT_EQ(j.at("schema"), "gpuspy.report/1");
    auto hasNumbers = [](const nlohmann::json& o, std::initializer_list<const char*> keys) {
        for (const char* k : keys) EXPECT_TRUE(o.contains(k) && o.at(k).is_number()) << k;
    };
    auto hasStrings = [](const nlohmann::json& o, std::initializer_list<const char*> keys) {
        for (const char* k : keys) EXPECT_TRUE(o.contains(k) && o.at(k).is_string()) << k;
    };
    ASSERT_TRUE(j.at("processes").is_array());
    const auto& p = j.at("processes").at(0);
    hasNumbers(p, {"pid", "wall_ns", "cuda_api_ns", "gpuspy_overhead_ns", "dropped_records"});
    hasStrings(p, {"command"});
    const auto& d = j.at("devices").at(0);
    hasNumbers(d, {"id", "busy_ns", "busy_pct"});
    hasStrings(d, {"name"});
    const auto& t = j.at("transfers").at(0);
    hasStrings(t, {"direction", "host_memory", "mode"});
    hasNumbers(t, {"count", "bytes", "gpu_ns", "host_ns", "gbps"});
    EXPECT_EQ(t.at("direction"), "HtoD");
    EXPECT_EQ(t.at("host_memory"), "pageable");
    EXPECT_EQ(t.at("mode"), "sync");
    EXPECT_EQ(t.at("bytes"), 100ull << 20);
    const auto& k = j.at("kernels").at(0);
    hasStrings(k, {"name"});
    hasNumbers(k, {"count", "gpu_ns", "median_gpu_ns", "launch_host_ns"});
    EXPECT_EQ(k.at("median_gpu_ns"), 10000);
    const auto& l = j.at("launches");
    ASSERT_TRUE(l.is_object());
    hasNumbers(l, {"count", "host_ns", "median_host_ns", "launch_bound_kernels"});
    const auto& s = j.at("syncs").at(0);
    hasStrings(s, {"api"});
    EXPECT_TRUE(s.at("implicit").is_boolean());
    hasNumbers(s, {"count", "blocked_ns", "gpu_busy_ns"});
    EXPECT_EQ(s.at("api"), "cuCtxSynchronize");
    const auto& c = j.at("callsites").at(0);
    hasNumbers(c, {"id", "count", "ns"});
    EXPECT_EQ(c.at("category"), "transfer");
    ASSERT_TRUE(c.at("frames").is_array());
    const auto& fr = c.at("frames").at(1);
    hasStrings(fr, {"function", "file", "module"});
    hasNumbers(fr, {"line"});
    EXPECT_EQ(fr.at("line"), 128);
    const auto& f = j.at("findings").at(0);
    hasStrings(f, {"rule", "severity", "message", "estimated_savings_bound"});
    hasNumbers(f, {"count", "ns", "estimated_savings_ns"});
    EXPECT_TRUE(f.at("estimated_savings_bound") == "estimate" || f.at("estimated_savings_bound") == "at_most" ||
                f.at("estimated_savings_bound") == "at_least")
        << f.at("estimated_savings_bound");
    ASSERT_TRUE(f.at("callsites").is_array());
    EXPECT_EQ(f.at("callsites").at(0), 0);
    EXPECT_TRUE(j.at("nvtx").is_array());
}

TEST(ReportJson, EmptyReportIsValid)
{
    const nlohmann::json j = nlohmann::json::parse(renderJson(Report{}));
    for (const char* k : {"processes", "devices", "transfers", "kernels", "syncs", "callsites", "findings"})
        EXPECT_TRUE(j.at(k).is_array() && j.at(k).empty()) << k;
    EXPECT_TRUE(j.at("launches").is_object());
}

TEST(ReportJson, InvalidUtf8DoesNotThrow)
{
    Report r;
    KernelRow k;
    k.name = "bad\xff\xfe";
    r.kernels.push_back(k);
    EXPECT_NO_THROW(nlohmann::json::parse(renderJson(r)));
}

TEST(ReportText, FitsHundredColumnsFindingsFirstNoColour)
{
    const std::string text = renderText(sampleReport(), TextOptions{});
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) EXPECT_LE(line.size(), 100u) << line;
    EXPECT_EQ(text.find('\033'), std::string::npos);
    const size_t findings = text.find("Findings"), processes = text.find("== Processes");
    ASSERT_NE(findings, std::string::npos);
    ASSERT_NE(processes, std::string::npos);
    EXPECT_LT(findings, processes);
    for (const char* s : {"pageable-memcpy", "HIGH", "Time %", "Total", "Avg", "Med", "Min", "Max",
                          "cuCtxSynchronize (cudaDeviceSynchronize)", "train_step", "epoch", "note:"})
        EXPECT_NE(text.find(s), std::string::npos) << s;
    // A finding's call site stands under its text, indented, not at the line's start.
    EXPECT_NE(text.find("\n     at train_step("), std::string::npos) << text;
    EXPECT_EQ(text.find("\nat "), std::string::npos) << text;
}

TEST(ReportText, ColourOnlyWhenAsked)
{
    const std::string text = renderText(sampleReport(), TextOptions{true});
    EXPECT_NE(text.find("\033["), std::string::npos);
}

// Colour escapes take no column: with colour on, every line breaks where it does without, so the text
// stripped of its escapes is the plain text, at any width.
TEST(ReportText, ColourDoesNotMoveLineBreaks)
{
    auto strip = [](const std::string& s) {
        std::string out;
        for (size_t i = 0; i < s.size(); ++i) {
            if (s[i] == '\033' && i + 1 < s.size() && s[i + 1] == '[') {
                i += 2;
                while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
                continue;
            }
            out += s[i];
        }
        return out;
    };
    for (size_t width : {60, 80, 100, 200}) {
        TextOptions plain, colour;
        plain.width = colour.width = width;
        colour.color = true;
        const std::string coloured = renderText(sampleReport(), colour);
        ASSERT_NE(coloured.find("\033["), std::string::npos);
        EXPECT_EQ(strip(coloured), renderText(sampleReport(), plain)) << "width " << width;
    }
    EXPECT_EQ(textparts::columns("\033[31mHIGH  \033[0m \033[1mpageable-memcpy\033[0m"), 22u);
    EXPECT_EQ(textparts::columns("12.5 \xc2\xb5s"), 7u);  // "12.5 µs": µ is two bytes, one column
}

// Findings on the same calls say so, in the verdict and in the findings; the JSON has the combined saving.
TEST(ReportText, OverlappingFindingsSaySo)
{
    Report r = sampleReport();
    Finding sync = r.findings[0];
    sync.rule = "sync-memcpy";
    sync.estimatedSavingsNs = 5000000;
    r.findings[0].overlaps = {"sync-memcpy"};
    sync.overlaps = {"pageable-memcpy"};
    r.findings.push_back(sync);
    TextOptions wide;
    wide.width = 400;  // one line per sentence: the phrases are searched whole
    const std::string text = renderText(r, wide);
    EXPECT_NE(text.find("(the same calls as sync-memcpy)"), std::string::npos) << text;
    EXPECT_NE(text.find("Some of the same calls as pageable-memcpy: the savings do not add"), std::string::npos) << text;
    const nlohmann::json j = nlohmann::json::parse(renderJson(r));
    EXPECT_EQ(j.at("findings").at(0).at("overlaps"), nlohmann::json::array({"sync-memcpy"}));
    EXPECT_EQ(j.at("findings_savings_ns"), 15000000u);  // the larger of 15 ms and 5 ms, not 20 ms
}

TEST(ReportText, EmptyReportSaysNoFindings)
{
    const std::string text = renderText(Report{}, TextOptions{});
    EXPECT_NE(text.find("No findings"), std::string::npos);
}

TEST(ReportCsv, OneTablePerSection)
{
    const std::string csv = renderCsv(sampleReport());
    for (const char* s : {"# processes\n", "# devices\n", "# transfers\n", "# kernels\n", "# launches\n", "# syncs\n",
                          "# nvtx\n", "# callsites\n", "# findings\n"})
        EXPECT_NE(csv.find(s), std::string::npos) << s;
    EXPECT_NE(csv.find("direction,host_memory,mode,count,bytes,gpu_ns,host_ns,gbps"), std::string::npos);
    EXPECT_NE(csv.find("HtoD,pageable,sync,100,104857600,10000000,30000000,10.49,gpu"), std::string::npos);
    // A field with commas is quoted.
    EXPECT_NE(csv.find("\"void gemm_tile<float, 128, 128>"), std::string::npos);
    const std::vector<Table> tables = reportTables(sampleReport());
    for (const Table& t : tables)
        for (const auto& row : t.rows) EXPECT_EQ(row.size(), t.columns.size()) << t.name;
}

}  // namespace
}  // namespace gpuspy::collect
