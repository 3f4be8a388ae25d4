// The step of each iteration of a Timeline (first issue to last end, over every rank) and the
// iteration a measured run reports: what exec and import both state.
#include <gtest/gtest.h>

#include "core/timeline.h"

namespace shardline {
namespace {

TEST(Timeline, IterationStepIsFirstIssueToLastEndOverEveryRank) {
  Timeline t;
  t.ranks = 2;
  t.iterations = 2;
  t.intervals = {{0, 0, 0, 5, 6, 10}, {1, 1, 0, 2, 9, 30}, {0, 0, 1, 1, 1, 4}, {1, 1, 1, 3, 3, 8}};
  EXPECT_EQ(iteration_step_times_us(t), (std::vector<double>{28, 7}));
}

TEST(Timeline, TheReportedIterationIsTheMedianStepAndTheEarlierOfEqualOnes) {
  EXPECT_EQ(median_step_iteration({30, 10, 20}), 2);
  EXPECT_EQ(median_step_iteration({30, 10, 20, 40}), 2);  // even count: the lower middle
  EXPECT_EQ(median_step_iteration({5, 5, 5}), 1);
  EXPECT_EQ(median_step_iteration({7, 5, 5, 9}), 2);  // equal steps: the earlier first
}

}  // namespace
}  // namespace shardline
