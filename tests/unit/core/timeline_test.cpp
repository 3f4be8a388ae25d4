// The step of each iteration of a Timeline (the longest of its ranks' own steps) and the
// iteration a measured run reports: what exec and import both state.
#include <gtest/gtest.h>

#include "core/metrics.h"
#include "core/timeline.h"

namespace shardline {
namespace {

// Each rank's step runs from its own first issue to its own last end; the iteration's is the
// longest (the slowest rank, as the metrics and validate's spread state it), not the span from
// one rank's first issue to another's last end.
TEST(Timeline, IterationStepIsTheSlowestRanksOwnStep) {
  Timeline t;
  t.ranks = 2;
  t.iterations = 2;
  t.ops.resize(2);
  t.intervals = {{0, 0, 0, 5, 6, 10}, {1, 1, 0, 2, 9, 30}, {0, 0, 1, 1, 1, 4}, {1, 1, 1, 3, 3, 8}};
  EXPECT_EQ(iteration_step_times_us(t), (std::vector<double>{28, 5}));  // not 7: rank 0's issue at 1 to rank 1's end at 8
  for (int it = 0; it < 2; ++it) EXPECT_EQ(iteration_step_times_us(t)[static_cast<size_t>(it)], compute_metrics(t, -1, it).step_time_us);
}

TEST(Timeline, TheReportedIterationIsTheMedianStepAndTheEarlierOfEqualOnes) {
  EXPECT_EQ(median_step_iteration({30, 10, 20}), 2);
  EXPECT_EQ(median_step_iteration({30, 10, 20, 40}), 2);  // even count: the lower middle
  EXPECT_EQ(median_step_iteration({5, 5, 5}), 1);
  EXPECT_EQ(median_step_iteration({7, 5, 5, 9}), 2);  // equal steps: the earlier first
}

}  // namespace
}  // namespace shardline
