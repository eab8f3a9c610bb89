// tests/unit/shim_lanes_test.cpp: a thread's lane wakes the drain thread once each time it crosses half
// full, never while the drain thread keeps it below, and not again while it stays above.
#include "shim/shim.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

using namespace gpuspy::shim;

TEST(ShimLanes, WakesTheDrainOncePerCrossingOfHalfFull)
{
    setenv("GPUSPY_QUEUE_ITEMS", "1024", 1);
    lanesConfigure();  // lanes made from now on hold 1024 items: half full is 512
    Lane* lane = laneCreate();
    ASSERT_NE(lane, nullptr);
    Item item{};
    item.kind = Item::Call;
    std::vector<Item> out(2048);
    const uint32_t wakes0 = drainWakeCount();

    // A steady stream the drain thread keeps up with (100 in, 100 out): never half full, no wake.
    for (int round = 0; round < 1000; ++round) {
        for (int i = 0; i < 100; ++i) ASSERT_TRUE(laneTryEnqueue(lane, item));
        ASSERT_EQ(laneDequeue(lane, out.data(), out.size()), 100u);
    }
    EXPECT_EQ(drainWakeCount(), wakes0);

    // A burst the drain thread does not take: the 512th record waiting wakes it, once.
    for (int i = 0; i < 511; ++i) ASSERT_TRUE(laneTryEnqueue(lane, item));
    EXPECT_EQ(drainWakeCount(), wakes0);
    ASSERT_TRUE(laneTryEnqueue(lane, item));
    EXPECT_EQ(drainWakeCount(), wakes0 + 1);

    // On to full and past it (drops): the drain thread was woken already, no more wakes.
    size_t accepted = 512;
    for (int i = 0; i < 2000; ++i) accepted += laneTryEnqueue(lane, item) ? 1 : 0;
    EXPECT_GE(accepted, 1024u);
    EXPECT_LT(accepted, 2512u);  // the lane is bounded: some were refused
    EXPECT_EQ(drainWakeCount(), wakes0 + 1);

    // The drain thread empties the lane; the next burst crosses half full again: one more wake.
    size_t taken = 0;
    while (const size_t n = laneDequeue(lane, out.data(), out.size())) taken += n;
    EXPECT_EQ(taken, accepted);
    for (int i = 0; i < 600; ++i) ASSERT_TRUE(laneTryEnqueue(lane, item));
    EXPECT_EQ(drainWakeCount(), wakes0 + 2);
    while (laneDequeue(lane, out.data(), out.size())) {
    }
}
