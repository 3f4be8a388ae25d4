// The bound on what simulating every rank holds (reports/every_rank.h), on the cases a review of
// 2026-11-27 measured: the count must cover the Program beside the ranks' spans.
#include "reports/every_rank.h"

#include <gtest/gtest.h>

namespace shardline {
namespace {

// 7.8 M ops on 25 ranks: the spans alone (3.1 GB) were under the old 3.2 GB bound, and the run
// took 6.3 GB; counted with the Program, it is refused.
TEST(EveryRankBytes, AProgramOfMillionsOfOpsIsCountedBesideTheRanksSpans) {
  const int64_t ranks = 25, ops = 7'830'036;
  EXPECT_LT(ranks * 16 * ops, kMaxEveryRankBytes);
  EXPECT_GT(every_rank_bytes(ranks, ops), kMaxEveryRankBytes);
}

// Llama 3 405B on 16,384 H100s (13,951 ops a rank) is a real plan: within the bound (it ran in
// 123 s and 3.9 GB); a million ranks of a 151-op step is not.
TEST(EveryRankBytes, RealPlansAtScaleFitAndAMillionRanksDoNot) {
  EXPECT_LE(every_rank_bytes(16'384, 13'951), kMaxEveryRankBytes);
  EXPECT_LE(every_rank_bytes(16'384, 4'470), kMaxEveryRankBytes);  // the 70B scenario on 16,384 GPUs
  EXPECT_GT(every_rank_bytes(1 << 20, 151), kMaxEveryRankBytes);
}

}  // namespace
}  // namespace shardline
