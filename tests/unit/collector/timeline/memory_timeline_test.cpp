// tests/unit/collector/timeline/memory_timeline_test.cpp: the memory timeline on hand-made allocations and
// releases: bytes in use, the peak and its holders, what is still held, failures, releases of memory never
// seen allocated, and the series kept within its bound with the peak visible.
#include "collector/timeline/memory_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpuspy::collect {
namespace {

constexpr uint64_t MiB = 1u << 20;

TEST(MemoryTimeline, ThePeakIsNamedByWhatHeldItThen)
{
    MemoryTimeline t;
    t.allocate(0x1000, 8 * MiB, 10, /*owner*/ 1);   // weights
    for (uint64_t i = 0; i < 5; ++i) {
        t.allocate(0x2000 + i, 1 * MiB, 100 + i * 100, 2);  // a leak per step
        if (i == 2) {
            t.allocate(0x9000, 24 * MiB, 320, 3);  // the intermediate
            t.release(0x9000, 340);
        }
    }
    EXPECT_EQ(t.peak(), 8 * MiB + 3 * MiB + 24 * MiB);
    EXPECT_EQ(t.peakNs(), 320u);
    const auto at = t.atPeak();
    ASSERT_EQ(at.size(), 3u);
    EXPECT_EQ(at[0].owner, 3u);
    EXPECT_EQ(at[0].bytes, 24 * MiB);
    EXPECT_EQ(at[1].owner, 1u);
    EXPECT_EQ(at[2].owner, 2u);
    EXPECT_EQ(at[2].allocations, 3u);
    EXPECT_EQ(t.inUse(), 13 * MiB);
    const auto live = t.live();
    ASSERT_EQ(live.size(), 2u);
    EXPECT_EQ(live[0].owner, 1u);
    EXPECT_EQ(live[1].owner, 2u);
    EXPECT_EQ(live[1].allocations, 5u);
    EXPECT_EQ(live[1].firstNs, 100u);
    EXPECT_EQ(live[1].lastNs, 500u);
}

TEST(MemoryTimeline, APeakStillHeldAtTheEndIsNamedByWhatIsHeld)
{
    MemoryTimeline t;
    t.allocate(1, 100, 1, 7);
    t.allocate(2, 50, 2, 8);
    EXPECT_EQ(t.peak(), 150u);
    ASSERT_EQ(t.atPeak().size(), 2u);
    EXPECT_EQ(t.atPeak()[0].owner, 7u);
}

TEST(MemoryTimeline, AFailureKeepsWhatWasHeldWhenItFailed)
{
    MemoryTimeline t;
    t.allocate(1, 300, 1, 4);
    t.failed(1u << 30, 5, 9, 2, 17);
    t.release(1, 6);
    ASSERT_EQ(t.failures().size(), 1u);
    const auto& f = t.failures()[0];
    EXPECT_EQ(f.bytes, 1u << 30);
    EXPECT_EQ(f.inUse, 300u);
    EXPECT_EQ(f.result, 2);
    EXPECT_EQ(f.owner, 9u);
    ASSERT_EQ(f.holders.size(), 1u);
    EXPECT_EQ(f.holders[0].owner, 4u);
    EXPECT_EQ(t.inUse(), 0u);
    EXPECT_EQ(t.allocations(), 1u);  // a failure allocates nothing
}

TEST(MemoryTimeline, ReleasesOfMemoryNeverSeenAllocatedAreCountedApart)
{
    MemoryTimeline t;
    EXPECT_FALSE(t.release(0xdead, 1));
    EXPECT_EQ(t.unknownReleases(), 1u);
    EXPECT_EQ(t.releases(), 0u);
    EXPECT_EQ(t.inUse(), 0u);
}

TEST(MemoryTimeline, AnAddressReusedWithoutAReleaseReplacesItsBlock)
{
    MemoryTimeline t;
    t.allocate(1, 100, 1, 1);
    t.allocate(1, 40, 2, 2);
    EXPECT_EQ(t.inUse(), 40u);
    EXPECT_EQ(t.peak(), 100u);
}

TEST(MemoryTimeline, TheSeriesStaysBoundedAndKeepsThePeak)
{
    MemoryTimeline t;
    for (uint64_t i = 0; i < 20000; ++i) {
        t.allocate(i + 1, i == 7777 ? 1000 : 10, i * 10, 1);
        t.release(i + 1, i * 10 + 5);
    }
    EXPECT_LT(t.series().size(), MemoryTimeline::kMaxSeries);
    uint64_t top = 0;
    for (const auto& [ns, bytes] : t.series()) top = std::max(top, bytes);
    EXPECT_EQ(top, 1000u);
    EXPECT_EQ(t.peak(), 1000u);
    EXPECT_EQ(t.series().back().second, 0u);
}

}  // namespace
}  // namespace gpuspy::collect
