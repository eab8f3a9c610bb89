// tests/unit/collector/export/kineto_test.cpp: the ranks of a job (collector/export/job_ranks.h) and the
// Kineto-form files (collector/export/kineto.h) on hand-built captures: one process driving two devices
// as two NCCL ranks splits into a file per rank, each with its device's work and the calls that queued
// it; a process without a communicator is a rank by order; correlation ids, flows, collective fields.
#include "collector/export/job_ranks.h"
#include "collector/export/kineto.h"
#include "collector/export/nccl_launches.h"
#include "collector/export/perfetto.h"

#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace gpuspy::collect {
namespace {

using Json = nlohmann::json;
using exporting::JobRank;
using exporting::RankSource;

constexpr uint64_t kComm = 0x1234;

// A process: a launch API (1), a copy API (2); NCCL's kernel (1) and the app's (2).
struct Proc {
    Process p;
    uint64_t seq = 0;
    explicit Proc(uint32_t pid)
    {
        p.pid = pid;
        p.command = "/bin/app";
        p.startNs = 1'000'000;
        p.startRealtimeNs = 1'700'000'000'000'000'000ull;
        p.threads[7] = "main";
        p.apis[1] = ApiInfo{"cuLaunchKernel", wire::Category::Launch};
        p.apis[2] = ApiInfo{"cuMemcpyHtoDAsync_v2", wire::Category::Transfer};
        p.kernels[1] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
        p.kernels[2] = "_Z4stepPfi";
        const char* names[] = {"", "AllReduce", "ncclFloat32", "RING", "LL", "Send"};
        for (uint32_t i = 1; i < 6; ++i) p.strings[i] = names[i];
    }
    // A call on device `dev` at [begin, begin+10) with its GPU span [begin+20, begin+120).
    const wire::CallBody& work(int dev, uint64_t begin, uint32_t kernel, uint64_t stream, bool copy = false)
    {
        p.devices[dev] = "Simulated GPU";
        wire::CallBody c{};
        c.seq = ++seq;
        c.beginNs = begin;
        c.endNs = begin + 10;
        c.tid = 7;
        c.device = int16_t(dev);
        c.stream = stream;
        c.flags = wire::kCallDeviceWork | wire::kCallAsync | wire::kCallGpuTimed;
        if (copy) {
            c.apiId = 2;
            c.category = wire::Category::Transfer;
            c.args.transfer.bytes = 4096;
            c.args.transfer.direction = wire::Direction::HtoD;
            c.args.transfer.srcMem = wire::MemKind::Pinned;
            c.args.transfer.dstMem = wire::MemKind::Device;
        } else {
            c.apiId = 1;
            c.category = wire::Category::Launch;
            c.args.launch.kernelId = kernel;
            c.args.launch.grid[0] = 8;
            c.args.launch.block[0] = 128;
        }
        p.calls.push_back(c);
        wire::GpuSpanBody s{};
        s.seq = c.seq;
        s.beginNs = begin + 20;
        s.endNs = begin + 120;
        s.device = dev;
        p.spans.push_back(s);
        p.lastNs = std::max(p.lastNs, s.endNs);
        return p.calls.back();
    }
    // An all-reduce of `count` floats by `rank` of `nranks`, carried by the launch that began at `launchNs`.
    void allReduce(int rank, int nranks, uint64_t launchNs, uint64_t count, uint64_t seqNo)
    {
        wire::CollectiveBody b{};
        b.launchNs = launchNs;
        b.startNs = launchNs + 5;
        b.commId = kComm;
        b.seq = seqNo;
        b.count = count;
        b.tid = 7;
        b.funcId = 1;
        b.datatypeId = 2;
        b.algoId = 3;
        b.protoId = 4;
        b.nranks = nranks;
        b.rank = rank;
        b.kind = wire::CollectiveKind::Collective;
        p.collectives.push_back(b);
    }
};

int rankInText(const std::string& json)
{
    // HTA (hta/common/trace_file.py) takes a file's rank from the first `"rank": N` of its text.
    std::smatch m;
    static const std::regex re(R"("rank":\s+(\d+))");
    return std::regex_search(json, m, re) ? std::stoi(m[1]) : -1;
}

TEST(KinetoExport, OneProcessTwoDevicesIsTwoRanksEachWithItsOwnWork)
{
    // ncclCommInitAll over devices 0 and 1, one thread: device 1 is rank 0, device 0 rank 1 (the order is
    // NCCL's, not the ordinals'). Each rank: an NCCL kernel, a kernel of the app and a copy.
    Proc a(100);
    a.work(1, 2'000'000, 1, 0xb1);
    a.allReduce(0, 2, 2'000'000, 1024, 0);
    a.work(0, 2'000'100, 1, 0xa0);
    a.allReduce(1, 2, 2'000'100, 1024, 0);
    a.work(0, 2'001'000, 2, 0xa0);
    a.work(1, 2'001'100, 2, 0xb1);
    a.work(0, 2'002'000, 0, 0xa0, true);
    a.work(1, 2'002'100, 0, 0xb1, true);
    // A call on no device (-1) goes to the process's first rank.
    wire::CallBody none{};
    none.seq = ++a.seq;
    none.beginNs = 2'003'000;
    none.endNs = 2'003'010;
    none.tid = 7;
    none.device = -1;
    none.apiId = 2;
    none.category = wire::Category::Transfer;
    a.p.calls.push_back(none);
    Capture cap;
    cap.processes = {a.p};

    const std::vector<const wire::CallBody*> launches = exporting::ncclLaunchesOf(cap.processes[0]);
    ASSERT_EQ(launches.size(), 2u);
    ASSERT_TRUE(launches[0] && launches[1]);
    EXPECT_EQ(launches[0]->device, 1);
    EXPECT_EQ(launches[1]->device, 0);

    const std::vector<JobRank> ranks = exporting::jobRanks(cap);
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_EQ(ranks[0].rank, 0);
    EXPECT_EQ(ranks[0].devices, std::vector<int>{1});
    EXPECT_TRUE(ranks[0].strays);
    EXPECT_EQ(ranks[1].devices, std::vector<int>{0});
    EXPECT_FALSE(ranks[1].strays);
    EXPECT_EQ(ranks[1].worldSize, 2);
    EXPECT_EQ(ranks[1].source, RankSource::Communicator);

    const std::vector<KinetoFile> files = exportKineto(cap);
    ASSERT_EQ(files.size(), 2u);
    for (int r = 0; r < 2; ++r) {
        const KinetoFile& f = files[size_t(r)];
        EXPECT_EQ(f.name, "rank-" + std::to_string(r) + ".pt.trace.json");
        EXPECT_EQ(rankInText(f.json), r);
        const Json j = Json::parse(f.json);
        EXPECT_EQ(j["distributedInfo"]["backend"], "nccl");
        EXPECT_EQ(j["distributedInfo"]["world_size"], 2);
        EXPECT_EQ(j["baseTimeNanoseconds"], 1'700'000'000'000'000'000ull + 1'000'000);  // the first event is at 2'000'000
        const int device = r == 0 ? 1 : 0;
        std::map<int64_t, Json> calls, gpu;
        int flows = 0;
        for (const Json& e : j["traceEvents"]) {
            if (e["ph"] == "s") ++flows;
            if (e["ph"] != "X") continue;
            if (e["cat"] == "cuda_driver" || e["cat"] == "cuda_runtime") {
                EXPECT_FALSE(e["args"].contains("stream"));
                calls[e["args"]["correlation"].get<int64_t>()] = e;
            } else {
                EXPECT_EQ(e["pid"], device);
                EXPECT_GT(e["args"]["stream"].get<int>(), 0);
                EXPECT_EQ(e["tid"], e["args"]["stream"]);
                gpu[e["args"]["correlation"].get<int64_t>()] = e;
            }
        }
        EXPECT_EQ(gpu.size(), 3u);
        EXPECT_EQ(flows, 3);
        EXPECT_EQ(f.kernels, 2u);
        EXPECT_EQ(f.memcpys, 1u);
        EXPECT_EQ(calls.size(), r == 0 ? 4u : 3u);  // rank 0 also holds the call on no device
        for (const auto& [corr, e] : gpu) {
            ASSERT_TRUE(calls.count(corr));
            EXPECT_EQ(calls[corr]["args"]["device"], device);
            // Microseconds after the base: a call at t, its work at t + 20 ns.
            EXPECT_NEAR(e["ts"].get<double>() - calls[corr]["ts"].get<double>(), 0.020, 1e-9);
            if (e["cat"] == "gpu_memcpy") {
                EXPECT_EQ(e["name"], "Memcpy HtoD (Pinned -> Device)");
                EXPECT_EQ(e["args"]["bytes"], 4096);
            } else if (e["name"].get<std::string>().rfind("nccl", 0) == 0) {
                EXPECT_EQ(e["args"]["Collective name"], "allreduce");
                EXPECT_EQ(e["args"]["In msg nelems"], 1024);
                EXPECT_EQ(e["args"]["Out msg nelems"], 1024);
                EXPECT_EQ(e["args"]["dtype"], "Float");
                EXPECT_EQ(e["args"]["Group size"], 2);
                EXPECT_EQ(e["args"]["Rank"], r);
                EXPECT_EQ(e["args"]["grid"], Json::array({8, 0, 0}));
            } else {
                EXPECT_EQ(e["name"], "step(float*, int)");
                EXPECT_EQ(e["args"]["block"][0], 128);
            }
        }
    }
}

TEST(KinetoExport, PerfettoLabelsProcessesAndStreamsWithTheirRanks)
{
    // One process, devices 0 and 1 as ranks 1 and 0; another with no communicator (not labelled: its
    // rank is only an order).
    Proc a(100), b(200);
    a.work(1, 2'000'000, 1, 0xb1);
    a.allReduce(0, 2, 2'000'000, 8, 0);
    a.work(0, 2'000'100, 1, 0xa0);
    a.allReduce(1, 2, 2'000'100, 8, 0);
    b.work(0, 2'000'500, 2, 0);
    Capture cap;
    cap.processes = {a.p, b.p};
    const Json j = Json::parse(exportPerfetto(cap));
    std::map<uint64_t, std::string> processes;
    std::vector<std::string> streams;
    for (const Json& e : j["traceEvents"]) {
        if (e["ph"] != "M") continue;
        if (e["name"] == "process_name") processes[e["pid"].get<uint64_t>()] = e["args"]["name"];
        if (e["name"] == "thread_name" && e["pid"] == 100 && e["args"]["name"].get<std::string>().rfind("GPU", 0) == 0)
            streams.push_back(e["args"]["name"]);
    }
    EXPECT_EQ(processes[100], "app (pid 100) \u00b7 ranks 0, 1 of 2");
    EXPECT_EQ(processes[200], "app (pid 200)");
    ASSERT_EQ(streams.size(), 2u);
    for (const std::string& s : streams) {
        const bool gpu1 = s.rfind("GPU 1", 0) == 0;
        EXPECT_NE(s.find(gpu1 ? "rank 0" : "rank 1"), std::string::npos) << s;
    }
}

TEST(KinetoExport, ProcessesWithoutACommunicatorAreRanksByOrder)
{
    // Rank 0 of 1 by NCCL in the first process; the second used no NCCL: the next rank, and the world
    // counts both. A third did no GPU work at all: no file.
    Proc a(100), b(200), idle(300);
    a.work(0, 2'000'000, 1, 0);
    a.allReduce(0, 1, 2'000'000, 16, 0);
    b.work(0, 2'000'500, 2, 0);
    Capture cap;
    cap.processes = {b.p, idle.p, a.p};
    const std::vector<JobRank> ranks = exporting::jobRanks(cap);
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_EQ(ranks[0].process, 2u);
    EXPECT_EQ(ranks[0].rank, 0);
    EXPECT_EQ(ranks[0].source, RankSource::Communicator);
    EXPECT_EQ(ranks[1].process, 0u);
    EXPECT_EQ(ranks[1].rank, 1);
    EXPECT_EQ(ranks[1].source, RankSource::Order);
    EXPECT_EQ(ranks[1].worldSize, 2);
    const std::vector<KinetoFile> files = exportKineto(cap);
    ASSERT_EQ(files.size(), 2u);
    const Json j = Json::parse(files[1].json);
    EXPECT_FALSE(j["distributedInfo"].contains("backend"));
    EXPECT_EQ(j["distributedInfo"]["rank"], 1);
    EXPECT_EQ(rankInText(files[1].json), 1);
    // Both files share one base: their times compare directly.
    EXPECT_EQ(Json::parse(files[0].json)["baseTimeNanoseconds"], j["baseTimeNanoseconds"]);
}

TEST(KinetoExport, NcclNamesAsPyTorchWritesThem)
{
    EXPECT_EQ(exporting::c10dCollectiveName("AllGather"), "all_gather");
    EXPECT_EQ(exporting::c10dCollectiveName("ReduceScatter"), "reduce_scatter");
    EXPECT_EQ(exporting::c10dCollectiveName("Something"), "Something");
    EXPECT_EQ(exporting::c10DtypeName("ncclBfloat16"), "BFloat16");
    EXPECT_EQ(exporting::c10DtypeName("ncclFloat16"), "Half");
    EXPECT_TRUE(exporting::isNcclKernelName("_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE"));
    EXPECT_FALSE(exporting::isNcclKernelName("_Z4stepPfi"));
}

}  // namespace
}  // namespace gpuspy::collect
