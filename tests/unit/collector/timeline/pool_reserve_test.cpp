// tests/unit/collector/timeline/pool_reserve_test.cpp: a stream-ordered pool's use and the floor of its
// reservation by CUDA's documented rule: kept across synchronizations up to the release threshold, given
// back at a synchronize beyond it or at a trim, never below what is in use; growths back into memory the
// pool had before counted apart; and the held series of a memory timeline with pools.
#include "collector/timeline/memory_timeline.h"
#include "collector/timeline/pool_reserve.h"

#include <gtest/gtest.h>

namespace gpuspy::collect {
namespace {

constexpr uint64_t MiB = 1u << 20;

TEST(PoolReserve, TheDefaultThresholdGivesEverythingBackAtEachSynchronize)
{
    PoolReserve p;
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(p.allocate(8 * MiB, 30));   // grows: nothing kept since the last synchronize
        p.release(8 * MiB);
        EXPECT_FALSE(p.allocate(8 * MiB, 2));   // served from what it kept since the free
        p.release(8 * MiB);
        EXPECT_EQ(p.unusedMin(), 8 * MiB);
        EXPECT_TRUE(p.synchronize());
        EXPECT_EQ(p.reservedMin(), 0u);
    }
    EXPECT_EQ(p.grows(), 3u);
    EXPECT_EQ(p.regrows(), 2u);  // the first growth is new memory
    EXPECT_EQ(p.regrowBytes(), 16 * MiB);
    EXPECT_EQ(p.releasesAtSync(), 3u);
    EXPECT_EQ(p.growHostNs(), 90u);
    EXPECT_EQ(p.servedHostNs(), 6u);
    EXPECT_EQ(p.peakReservedMin(), 8 * MiB);
}

TEST(PoolReserve, AThresholdKeepsUpToItAndATrimGivesBackDownToUse)
{
    PoolReserve p;
    p.setThreshold(12 * MiB);
    p.allocate(16 * MiB, 1);
    p.allocate(4 * MiB, 1);
    p.release(16 * MiB);
    EXPECT_TRUE(p.synchronize());
    EXPECT_EQ(p.reservedMin(), 12 * MiB);  // kept up to the threshold
    EXPECT_FALSE(p.synchronize());         // nothing beyond it now
    EXPECT_TRUE(p.trimTo(0));
    EXPECT_EQ(p.reservedMin(), 4 * MiB);   // never below what is in use
    EXPECT_EQ(p.trims(), 1u);
    EXPECT_EQ(p.releasedBytes(), 8 * MiB + 8 * MiB);
    p.setThreshold(UINT64_MAX);
    p.allocate(20 * MiB, 1);
    p.release(24 * MiB);
    EXPECT_FALSE(p.synchronize());  // the maximum: never given back at a synchronize
    EXPECT_EQ(p.unusedMin(), 24 * MiB);
    EXPECT_EQ(p.regrows(), 1u);     // back into the 20 MiB it held before, then beyond
    EXPECT_EQ(p.regrowBytes(), 16 * MiB);
}

TEST(PoolReserve, TheHeldSeriesAddsWhatPoolsKeepToWhatIsInUse)
{
    MemoryTimeline t;
    t.allocate(0x10, 4 * MiB, 10, 1);
    EXPECT_FALSE(t.pooled());
    EXPECT_TRUE(t.held().empty());
    t.setPoolUnused(0, 20, /*point*/ false);  // a pool's allocation: its unused floor shown with the change
    t.allocate(0x20, 8 * MiB, 20, 2);
    t.setPoolUnused(8 * MiB, 30, false);      // its free: the pool keeps the 8 MiB
    t.release(0x20, 30);
    ASSERT_TRUE(t.pooled());
    EXPECT_EQ(t.held().back(), (std::pair<uint64_t, uint64_t>{30, 12 * MiB}));
    EXPECT_EQ(t.peakHeld(), 12 * MiB);        // never the old use plus the new unused
    t.setPoolUnused(0, 40);                   // a synchronize gives it back
    EXPECT_EQ(t.held().back(), (std::pair<uint64_t, uint64_t>{40, 4 * MiB}));
    t.failed(64 * MiB, 50, 3, 2, 7);
    t.setPoolUnused(8 * MiB, 60);
    t.failed(64 * MiB, 70, 3, 2, 7);
    EXPECT_EQ(t.failures()[0].poolUnused, 0u);
    EXPECT_EQ(t.failures()[1].poolUnused, 8 * MiB);
}

}  // namespace
}  // namespace gpuspy::collect
