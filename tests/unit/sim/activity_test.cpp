// sim/activity.h: the progress record compute ops and network flows share.
#include "sim/activity.h"

#include <gtest/gtest.h>

namespace shardline::sim {
namespace {

TEST(Activity, AdvanceServesWorkAndProjectSetsTheEndFromNow) {
  Activity a;
  a.remaining = 100;  // e.g. bytes
  a.project(0, 10, 1);  // 10 units per us
  EXPECT_EQ(a.end_us, 10);
  EXPECT_EQ(a.version, 1u);
  a.advance(4, 40);      // 4 us at the old rate
  EXPECT_EQ(a.remaining, 60);
  EXPECT_EQ(a.since_us, 4);
  a.project(4, 60 / 5.0, 2);  // the rate halves: 12 us more
  EXPECT_EQ(a.end_us, 16);
  EXPECT_EQ(a.version, 2u);
}

TEST(Activity, ServingMoreThanIsLeftLeavesNothingNotANegativeAmount) {
  Activity a;
  a.remaining = 1.0;
  a.advance(2, 1.0000000001);  // rounding at the projected end
  EXPECT_EQ(a.remaining, 0.0);
}

}  // namespace
}  // namespace shardline::sim
