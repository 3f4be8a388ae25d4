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
  // The path: rank 1 from 0 to 40 us, then rank 2 (which waited 25 us for it at op 2) to 150.
  r.critical_path = {{1, 0, 40, 2, 25}, {2, 40, 150, -1, 0}};
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
  EXPECT_EQ(s.path_rank, 2);
  EXPECT_EQ(s.path_rank_us, 110);
  EXPECT_EQ(s.path_us, 150);
  EXPECT_EQ(s.path_hops, 1);
  EXPECT_EQ(s.path_op, 2);
  EXPECT_EQ(s.path_op_wait_us, 25);
  EXPECT_EQ(s.total_wait_us, 60);
  EXPECT_EQ(s.most_waiting_op, 1);
  EXPECT_EQ(s.most_waiting_op_name, "ag b1 mb0");
  EXPECT_EQ(ranks_that_matter(s), (std::vector<int>{0, 1}));
  const nlohmann::json j = rank_summary_to_json(s);
  EXPECT_EQ(j.at("critical_path").at("rank"), 2);
  EXPECT_EQ(j.at("most_waiting").at("op"), 1);
  EXPECT_EQ(j.at("step_us").at("max_rank"), 1);
  EXPECT_NE(rank_summary_text(s).find("critical path          73% on rank 2"), std::string::npos) << rank_summary_text(s);
}

// Where the variation gives each rank a compute factor, the summary spreads it like the times
// (the slowest chip named), in the text and the JSON; where it gives none, neither shows one.
TEST(RankSummary, ComputeFactorsAreSpreadWhereTheVariationGivesThem) {
  const RankSummary s = summarize_ranks(four_ranks(), Timeline{}, 120.0, {1.02, 0.97, 1.31, 1.0});
  EXPECT_EQ(s.compute_factor_ranks, 4);
  EXPECT_EQ(s.compute_factor.max, 1.31);
  EXPECT_EQ(s.compute_factor.max_rank, 2);
  EXPECT_EQ(s.compute_factor.min_rank, 1);
  EXPECT_NE(rank_summary_text(s).find("  compute factor         min 0.970 (rank 1), p10 0.979, median 1.010, p90 1.223, max 1.310 (rank 2)\n"),
            std::string::npos)
      << rank_summary_text(s);
  EXPECT_EQ(rank_summary_to_json(s).at("compute_factor").at("max_rank"), 2);
  const RankSummary none = summarize_ranks(four_ranks(), Timeline{}, 120.0);
  EXPECT_EQ(rank_summary_text(none).find("compute factor"), std::string::npos);
  EXPECT_TRUE(rank_summary_to_json(none).at("compute_factor").is_null());
  EXPECT_EQ(rank_summary_text(none).find("link bandwidth factor"), std::string::npos);
  EXPECT_TRUE(rank_summary_to_json(none).at("link_factor").is_null());
}

// Slow links are named the same way: the rank with the thinnest link is the minimum.
TEST(RankSummary, LinkFactorsAreSpreadWhereTheVariationHasSlowLinks) {
  const RankSummary s = summarize_ranks(four_ranks(), Timeline{}, 120.0, {}, {1, 1, 1, 0.25});
  EXPECT_EQ(s.compute_factor_ranks, 0);
  EXPECT_EQ(s.link_factor_ranks, 4);
  EXPECT_NE(rank_summary_text(s).find("  link bandwidth factor  min 0.250 (rank 3), p10 0.475, median 1.000, p90 1.000, max 1.000 (rank 0)\n"),
            std::string::npos)
      << rank_summary_text(s);
  EXPECT_EQ(rank_summary_to_json(s).at("link_factor").at("min_rank"), 3);
  EXPECT_TRUE(rank_summary_to_json(s).at("compute_factor").is_null());
}

// The report's heat strip: a cell per rank, the one that waited most the darkest red.
TEST(RankSummary, HtmlHasAHeatStripCellPerRank) {
  const RankSummary s = summarize_ranks(four_ranks(), Timeline{}, 120.0);
  const std::string html = rank_summary_html(s);
  EXPECT_NE(html.find("<h2>Every rank</h2>"), std::string::npos);
  for (int r = 0; r < 4; ++r) EXPECT_NE(html.find("<title>rank " + std::to_string(r) + ": waited"), std::string::npos) << r;
  EXPECT_NE(html.find("fill=\"rgb(160,0,0)\" stroke=\"#ddd\" stroke-width=\"0.2\"><title>rank 2: waited"), std::string::npos) << html;
  EXPECT_NE(html.find("fill=\"rgb(255,255,255)\" stroke=\"#ddd\" stroke-width=\"0.2\"><title>rank 1: waited"), std::string::npos) << html;
  // Above 1,024 ranks a cell holds a block of ranks: its upper half shows its most waiting, its
  // lower half its least, so the straggler everyone waits for (itself waiting least) shows white
  // among red.
  RankReport many;
  many.ranks.assign(3000, RankStats{10, 5, 7});
  many.ranks[2999].collective_wait_us = 0;
  const std::string big = rank_summary_html(summarize_ranks(many, Timeline{}, 10.0));
  EXPECT_NE(big.find("<title>ranks 2997-2999: waited up to 7.00 us (rank 2997)"), std::string::npos) << big.substr(0, 2000);
  EXPECT_NE(big.find("fill=\"rgb(255,255,255)\" stroke=\"#ddd\" stroke-width=\"0.2\"><title>ranks 2997-2999: waited at least 0 ns "
                     "(rank 2999)"),
            std::string::npos);
  EXPECT_NE(big.find("each cell is a block of 3 ranks"), std::string::npos);
  EXPECT_EQ(big.find("<title>rank 5:"), std::string::npos);
}

TEST(RankSummary, NobodyWaitingHasNoCriticalPath) {
  RankReport r;
  r.ranks = {{100, 90, 0}, {100, 90, 0}};
  r.wait_at_op_us = {0};
  const RankSummary s = summarize_ranks(r, Timeline{}, 100.0);
  EXPECT_EQ(s.path_rank, -1);
  EXPECT_EQ(s.most_waiting_op, -1);
  EXPECT_EQ(s.straggler_cost, 1.0);
  EXPECT_TRUE(rank_summary_to_json(s).at("critical_path").is_null());
  EXPECT_NE(rank_summary_text(s).find("no rank waited"), std::string::npos);
  EXPECT_NE(rank_summary_text(s).find(" 2 ranks simulated\n"), std::string::npos);
  r.ranks.resize(1);  // a world of one: "1 rank"
  EXPECT_NE(rank_summary_text(summarize_ranks(r, Timeline{}, 100.0)).find(" 1 rank simulated\n"), std::string::npos);
}

}  // namespace
}  // namespace shardline
