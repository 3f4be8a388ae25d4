// The per-rank summary: spreads with the ranks at the extremes, the straggler cost and the
// critical path, exactly as documented.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "reports/rank_summary.h"

namespace shardline {
namespace {

RankReport four_ranks() {
  RankReport r;
  // step, compute busy, waiting
  r.ranks = {{100, 80, 10}, {150, 140, 0}, {110, 80, 30}, {100, 90, 20}};
  r.wait_caused_us = {0, 55, 5, 0};
  r.wait_at_op_us = {0, 40, 20};
  return r;
}

TEST(RankSummary, SpreadsNameTheRanksAtTheExtremes) {
  Timeline t;
  t.ops.resize(3);
  t.set_name(t.ops[1], "ag b1 mb0");
  const RankSummary s = summarize_ranks(four_ranks(), t, 120.0);
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.step_us.max, 150);
  EXPECT_EQ(s.step_us.max_rank, 1);
  EXPECT_EQ(s.step_us.min, 100);
  EXPECT_EQ(s.step_us.min_rank, 0);  // ties: the lowest rank
  EXPECT_DOUBLE_EQ(s.step_us.median, 105);
  EXPECT_DOUBLE_EQ(s.step_us.p90, 138);  // 110 + 0.7 * (150 - 110)
  EXPECT_EQ(s.exposed_comm_us.max, 30);  // rank 2: 110 - 80
  EXPECT_EQ(s.exposed_comm_us.max_rank, 2);
  EXPECT_EQ(s.collective_wait_us.max_rank, 2);
  EXPECT_DOUBLE_EQ(s.straggler_cost, 150.0 / 120.0);
  EXPECT_EQ(s.critical_rank, 1);
  EXPECT_EQ(s.critical_rank_wait_us, 55);
  EXPECT_EQ(s.total_wait_us, 60);
  EXPECT_EQ(s.critical_op, 1);
  EXPECT_EQ(s.critical_op_name, "ag b1 mb0");
  EXPECT_EQ(ranks_that_matter(s), (std::vector<int>{0, 1}));
  const nlohmann::json j = rank_summary_to_json(s);
  EXPECT_EQ(j.at("critical_path").at("rank"), 1);
  EXPECT_EQ(j.at("step_us").at("max_rank"), 1);
  EXPECT_NE(rank_summary_text(s).find("rank 1: its late arrivals cost the others"), std::string::npos) << rank_summary_text(s);
}

TEST(RankSummary, NobodyWaitingHasNoCriticalPath) {
  RankReport r;
  r.ranks = {{100, 90, 0}, {100, 90, 0}};
  r.wait_caused_us = {0, 0};
  r.wait_at_op_us = {0};
  const RankSummary s = summarize_ranks(r, Timeline{}, 100.0);
  EXPECT_EQ(s.critical_rank, -1);
  EXPECT_EQ(s.straggler_cost, 1.0);
  EXPECT_TRUE(rank_summary_to_json(s).at("critical_path").is_null());
  EXPECT_NE(rank_summary_text(s).find("no rank waited"), std::string::npos);
}

}  // namespace
}  // namespace shardline
