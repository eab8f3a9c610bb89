// The call scope's clock: the TSC-to-CLOCK_MONOTONIC map's arithmetic, and, where the TSC is
// invariant, that stamps converted through it agree with clock_gettime read between them.
#include "shim/clock.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace gpuspy::shim;

namespace {

uint64_t monoNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

bool cpuHas(const char* flag)
{
    FILE* f = fopen("/proc/cpuinfo", "r");
    if (!f) return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (std::strncmp(line, "flags", 5) == 0) found = (" " + std::string(line)).find(std::string(" ") + flag) != std::string::npos;
    fclose(f);
    return found;
}

// Calls clockWarmUp the way ending scopes do until the TSC is in use or `limit` ns passed.
bool warmUp(uint64_t limitNs)
{
    const uint64_t until = monoNs() + limitNs;
    while (!clockUsesTsc() && monoNs() < until) clockWarmUp(monoNs());
    return clockUsesTsc();
}

}  // namespace

TEST(ShimClock, MapConvertsAroundItsAnchor)
{
    ClockMap m;
    m.tick0 = 1000000;
    m.ns0 = 5000000000ull;
    m.mult = uint64_t(1) << 31;  // 0.5 ns per tick
    EXPECT_EQ(m.toNs(1000000), 5000000000ull);
    EXPECT_EQ(m.toNs(1002000), 5000001000ull);
    EXPECT_EQ(m.toNs(998000), 4999999000ull);  // a stamp taken before the anchor
    EXPECT_EQ(m.durationNs(3000), 1500u);
    const ClockMap identity;
    EXPECT_EQ(identity.toNs(123456789), 123456789u);
    EXPECT_EQ(identity.durationNs(42), 42u);
}

TEST(ShimClock, ClockGettimeStampsAreNanoseconds)
{
    const uint64_t before = monoNs();
    const uint64_t s = clockStamp(false);
    EXPECT_GE(s, before);
    EXPECT_EQ(clockMapFor(false, s).toNs(s), s);
}

namespace {

// A clock_gettime read between two TSC stamps must convert between them, within the anchors' error.
// Preempted brackets (wider than 2 us) say nothing and are skipped; every thread checks.
void expectStampsAgree(int iterations)
{
    auto check = [iterations](int* outside, int* checked) {
        for (int i = 0; i < iterations; ++i) {
            const uint64_t t1 = clockStamp(true);
            const uint64_t ns = monoNs();
            const uint64_t t2 = clockStamp(true);
            const ClockMap m = clockMapFor(true, t2);
            const uint64_t a = m.toNs(t1), b = m.toNs(t2);
            if (b - a > 2000) continue;
            ++*checked;
            // 100 ns: anchors are good to about 10 ns; this is far from any real error.
            if (ns + 100 < a || ns > b + 100) ++*outside;
        }
    };
    std::vector<int> outside(4), checked(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back(check, &outside[t], &checked[t]);
    for (auto& t : threads) t.join();
    for (int t = 0; t < 4; ++t) {
        EXPECT_GT(checked[t], iterations / 20) << "thread " << t;
        EXPECT_EQ(outside[t], 0) << "thread " << t << ": " << outside[t] << " of " << checked[t];
    }
}

bool tscWarm()
{
    clockConfigure();
    if (!(cpuHas("constant_tsc") && cpuHas("nonstop_tsc"))) {
        EXPECT_FALSE(warmUp(20000000));
        return false;
    }
    EXPECT_TRUE(warmUp(2000000000ull)) << "the TSC is invariant but never came into use";
    return clockUsesTsc();
}

}  // namespace

TEST(ShimClock, TscStampsAgreeWithClockGettime)
{
    if (!tscWarm()) GTEST_SKIP() << "no invariant TSC here: stamps are clock_gettime's";
    expectStampsAgree(20000);
}

// A machine that slows every anchor bracket past twice the narrowest one seen (load, a sanitizer's
// clock_gettime) must not leave the map to extrapolate: anchors are still taken, and stamps agree.
TEST(ShimClock, TscStampsAgreeWhenEveryBracketIsWide)
{
    if (!tscWarm()) GTEST_SKIP() << "no invariant TSC here: stamps are clock_gettime's";
    clockSetBestBracketForTest(1);  // no real bracket is within 2 x 1 + 16 ticks
    expectStampsAgree(200000);
}
