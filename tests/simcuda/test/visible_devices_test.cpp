// CUDA_VISIBLE_DEVICES on the simulated driver (src/visible_devices.cpp): test/visible_devices_app.c run with a
// value each, its output and its trace checked against the device each visible ordinal must be. Physical device p
// (of SIMCUDA_DEVICES=4) is "gpuspy simulated GPU p" on PCI bus 0x41+p with UUID GPU-5c1dc0da-6770-7573-7079-
// 0000000013<p>.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Outcome {
    std::string out;
    std::vector<nlohmann::json> trace;
};

std::string shellQuote(const std::string& s)
{
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// visible: nullptr leaves CUDA_VISIBLE_DEVICES unset.
Outcome run(const char* visible)
{
    static int n = 0;
    const std::string trace = std::string(SIMCUDA_TEST_DIR) + "/visible_devices_" + std::to_string(getpid()) + "_" +
                              std::to_string(n++) + ".jsonl";
    std::remove(trace.c_str());
    std::string cmd = "env -u CUDA_VISIBLE_DEVICES SIMCUDA_DEVICES=4 SIMCUDA_TRACE=" + shellQuote(trace);
    if (visible) cmd += " CUDA_VISIBLE_DEVICES=" + shellQuote(visible);
    cmd += " LD_LIBRARY_PATH=" + shellQuote(SIMCUDA_DIR) + " " + shellQuote(VISIBLE_DEVICES_APP) + " 2>&1";
    Outcome r;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[512];
        while (fgets(buf, sizeof buf, p)) r.out += buf;
        EXPECT_EQ(pclose(p), 0) << r.out;
    }
    std::ifstream in(trace);
    for (std::string line; std::getline(in, line);) r.trace.push_back(nlohmann::json::parse(line));
    std::remove(trace.c_str());
    return r;
}

// The app's line for visible ordinal `ordinal` being physical device `physical`, with `count` devices visible.
std::string deviceLine(int ordinal, int physical, int count)
{
    char line[256];
    std::string peers;
    for (int j = 0; j < count; ++j) peers += j == ordinal ? "0" : "1";
    snprintf(line, sizeof line,
             "dev %d name=\"gpuspy simulated GPU %d\" bus=00000000:%02X:00.0 bus_ordinal=%d "
             "uuid=GPU-5c1dc0da-6770-7573-7079-0000000013%02x mem=85899345920 peers=%s ptr_ordinal=%d\n",
             ordinal, physical, 0x41 + physical, ordinal, physical, peers.c_str(), ordinal);
    return line;
}

std::string expected(const std::vector<int>& physical)
{
    const int n = static_cast<int>(physical.size());
    std::string s = "cuInit 0\ncount " + std::to_string(n) + "\nget_out_of_range 101\n";
    for (int i = 0; i < n; ++i) s += deviceLine(i, physical[size_t(i)], n);
    return s;
}

// One memset per visible device, in ordinal order: "dev" the ordinal, "pdev" the physical device (only when
// CUDA_VISIBLE_DEVICES is set).
void expectTrace(const Outcome& r, const std::vector<int>& physical, bool visibleSet)
{
    std::vector<nlohmann::json> memsets;
    for (const auto& j : r.trace)
        if (j.value("type", "") == "op" && j.value("op", "") == "memset") memsets.push_back(j);
    ASSERT_EQ(memsets.size(), physical.size()) << r.out;
    for (size_t i = 0; i < physical.size(); ++i) {
        EXPECT_EQ(memsets[i].value("dev", -1), static_cast<int>(i));
        if (visibleSet)
            EXPECT_EQ(memsets[i].value("pdev", -1), physical[i]);
        else
            EXPECT_FALSE(memsets[i].contains("pdev"));
    }
}

void expectNoDevice(const Outcome& r)
{
    // As the real driver: cuInit fails with CUDA_ERROR_NO_DEVICE (100), the driver stays uninitialised.
    EXPECT_EQ(r.out, "cuInit 100\ncount_after_failed_init 3 -1\n");
    EXPECT_TRUE(r.trace.empty());
}

}  // namespace

TEST(VisibleDevices, UnsetSeesEveryDeviceInPhysicalOrder)
{
    const Outcome r = run(nullptr);
    EXPECT_EQ(r.out, expected({0, 1, 2, 3}));
    expectTrace(r, {0, 1, 2, 3}, false);
}

TEST(VisibleDevices, OneDeviceIsOrdinalZero)
{
    for (int p = 0; p < 4; ++p) {
        const Outcome r = run(std::to_string(p).c_str());
        EXPECT_EQ(r.out, expected({p})) << "CUDA_VISIBLE_DEVICES=" << p;
        expectTrace(r, {p}, true);
    }
}

TEST(VisibleDevices, ListOrderRenumbers)
{
    const Outcome r = run("2,0,3");
    EXPECT_EQ(r.out, expected({2, 0, 3}));
    expectTrace(r, {2, 0, 3}, true);
    EXPECT_EQ(run(" 3 , 1").out, expected({3, 1}));
}

TEST(VisibleDevices, UuidEntries)
{
    // Full UUIDs (the simulated ones differ only in their last byte, so no shorter prefix is unique), any case,
    // mixed with ordinals; a UUID too long matches nothing and ends the list.
    const Outcome r = run("GPU-5c1dc0da-6770-7573-7079-000000001302,GPU-5c1dc0da-6770-7573-7079-000000001300");
    EXPECT_EQ(r.out, expected({2, 0}));
    expectTrace(r, {2, 0}, true);
    EXPECT_EQ(run("GPU-5C1DC0DA-6770-7573-7079-000000001303").out, expected({3}));
    EXPECT_EQ(run("3,GPU-5c1dc0da-6770-7573-7079-000000001301").out, expected({3, 1}));
    EXPECT_EQ(run("1,GPU-5c1dc0da-6770-7573-7079-0000000013030,2").out, expected({1}));
}

TEST(VisibleDevices, InvalidEntryEndsTheList)
{
    EXPECT_EQ(run("1,7,2").out, expected({1}));     // out of range
    EXPECT_EQ(run("3,x,0").out, expected({3}));     // not a number
    EXPECT_EQ(run("0,-1,2").out, expected({0}));    // negative
    EXPECT_EQ(run("2,1,2,0").out, expected({2, 1}));  // a duplicate
    EXPECT_EQ(run("1,MIG-5c1dc0da,2").out, expected({1}));  // MIG instances: none on these devices
    EXPECT_EQ(run("0,GPU-5c1dc0da,1").out, expected({0}));  // a prefix of every UUID: ambiguous
    EXPECT_EQ(run("2,GPU-ffff,1").out, expected({2}));      // no such UUID
    EXPECT_EQ(run("1,,2").out, expected({1}));              // an empty entry
}

TEST(VisibleDevices, NoDevice)
{
    expectNoDevice(run(""));
    expectNoDevice(run("-1"));
    expectNoDevice(run("4,0"));
    expectNoDevice(run("GPU-none,0"));
}
