// Who a process is, as the shim reads it (shim/identity.cpp): the launcher's variables (the first family
// set wins), the host name, the Identity record's wall-clock pair, and GPUSPY_OUTPUT's %h and %q{VAR}.
#include "shim/shim.h"
#include "wire/codec.h"

#include <gtest/gtest.h>

#include <sys/utsname.h>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace gpuspy;

namespace {

const char* const kLauncherVars[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                     "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"};

void clearLauncherVars()
{
    for (const char* v : kLauncherVars) unsetenv(v);
}

wire::IdentityBody encodedIdentity(std::string* host)
{
    uint8_t buf[512];
    const size_t n = shim::encodeIdentity(buf, sizeof buf, wire::IdentityEdge::Start);
    EXPECT_GT(n, sizeof(wire::RecordHeader) + sizeof(wire::IdentityBody) - 1);
    wire::IdentityBody b;
    std::memcpy(&b, buf + sizeof(wire::RecordHeader), sizeof b);
    host->assign(reinterpret_cast<const char*>(buf) + sizeof(wire::RecordHeader) + sizeof b, b.length);
    return b;
}

}  // namespace

TEST(ShimIdentity, FirstLauncherFamilyWins)
{
    clearLauncherVars();
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("SLURM_PROCID", "9", 1);
    shim::identityLoad();
    std::string host;
    wire::IdentityBody b = encodedIdentity(&host);
    EXPECT_EQ(b.launcher, wire::Launcher::OpenMpi);
    EXPECT_EQ(b.rank, 5);
    EXPECT_EQ(b.worldSize, 8);
    EXPECT_EQ(b.localRank, 1);
    EXPECT_EQ(b.localWorldSize, -1);  // not set
    utsname u{};
    ASSERT_EQ(uname(&u), 0);
    EXPECT_EQ(host, u.nodename);

    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "4", 1);
    shim::identityLoad();
    b = encodedIdentity(&host);
    EXPECT_EQ(b.launcher, wire::Launcher::Torch);
    EXPECT_EQ(b.rank, 3);
    EXPECT_EQ(b.worldSize, 4);

    clearLauncherVars();
    setenv("RANK", "not a number", 1);
    shim::identityLoad();
    b = encodedIdentity(&host);
    EXPECT_EQ(b.launcher, wire::Launcher::None);
    EXPECT_EQ(b.rank, -1);
    clearLauncherVars();
}

// The pair's realtime stamp and monotonic midpoint bracket each other: against a fresh pair, the two
// realtime - monotonic differences agree within their brackets (same host, same clocks).
TEST(ShimIdentity, WallClockPairIsTight)
{
    uint64_t r0, m0, e0, r1, m1, e1;
    shim::wallClockPair(&r0, &m0, &e0);
    shim::wallClockPair(&r1, &m1, &e1);
    EXPECT_GT(r0, 1600000000000000000ull);
    EXPECT_GT(m0, 0u);
    const int64_t d = int64_t(r1 - m1) - int64_t(r0 - m0);
    EXPECT_LE(std::llabs(d), int64_t(e0 + e1 + 1000)) << "brackets " << e0 << ", " << e1;
}

TEST(ShimIdentity, OutputNamePatterns)
{
    shim::identityLoad();
    utsname u{};
    ASSERT_EQ(uname(&u), 0);
    setenv("GPUSPY_TEST_RANK_VAR", "7", 1);
    unsetenv("GPUSPY_TEST_UNSET_VAR");
    char value[4096] = "/tmp/run/rank-%q{GPUSPY_TEST_RANK_VAR}%q{GPUSPY_TEST_UNSET_VAR}-%h-%p.gspy";
    ASSERT_TRUE(shim::expandOutputName(value, sizeof value));
    EXPECT_EQ(std::string(value), std::string("/tmp/run/rank-7-") + u.nodename + "-%p.gspy");
    char plain[64] = "/tmp/a-%x-%q{unterminated.gspy";
    ASSERT_TRUE(shim::expandOutputName(plain, sizeof plain));
    EXPECT_STREQ(plain, "/tmp/a-%x-%q{unterminated.gspy");
    char tight[4096] = "x-%h-%h-%h";  // one byte short of the result and its NUL: left as it was
    EXPECT_FALSE(shim::expandOutputName(tight, strlen(u.nodename) * 3 + 4));
    EXPECT_STREQ(tight, "x-%h-%h-%h");
    EXPECT_TRUE(shim::expandOutputName(tight, strlen(u.nodename) * 3 + 5));
}
