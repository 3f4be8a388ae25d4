// Every-rank simulation in the numbers a user acts on: how the step, the exposed communication
// and the waiting inside collectives spread over the ranks; what the variation costs (straggler
// cost: the step with variation divided by the step without); and which rank and which collective
// the waiting runs through (the critical path).
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/timeline.h"
#include "sim/simulator.h"

namespace shardline {

// A per-rank quantity over the ranks: percentiles (interpolated, reports/compare.h) and the
// ranks that hold the extremes (the lowest rank on ties).
struct RankSpread {
  double min = 0, p10 = 0, median = 0, p90 = 0, max = 0;
  int min_rank = 0, max_rank = 0;
};

struct RankSummary {
  int ranks = 0;
  RankSpread step_us;             // each rank's step
  RankSpread exposed_comm_us;     // step - compute busy
  RankSpread collective_wait_us;  // waiting inside collectives, summed over its collectives
  // Each rank's compute factor (its stragglers' factors times its draw of the rank compute
  // spread), where the variation gives one; compute_factor_ranks 0: none.
  RankSpread compute_factor;
  int compute_factor_ranks = 0;
  // Each rank's link bandwidth factor (its slow_links entries multiplied), where the variation
  // has slow links; link_factor_ranks 0: none.
  RankSpread link_factor;
  int link_factor_ranks = 0;
  std::vector<double> wait_by_rank_us;  // that waiting, rank by rank
  double symmetric_step_us = 0;   // the same Program with no variation
  double straggler_cost = 1;      // step_us.max / symmetric_step_us
  // The critical path (sim/simulator.h RankReport): the rank it spends the most time on and that
  // time, how many ranks it crosses, and the collective where it crossed with the longest wait
  // (-1: it stays on one rank). Then the collective with the most waiting at it, summed over
  // members and groups (-1: nobody waited).
  int path_rank = -1;
  double path_rank_us = 0;
  double path_us = 0;
  int path_hops = 0;
  int path_op = -1;
  std::string path_op_name;
  double path_op_wait_us = 0;
  double total_wait_us = 0;
  int most_waiting_op = -1;
  std::string most_waiting_op_name;
  double most_waiting_op_us = 0;
};

// `timeline` names the ops; `symmetric_step_us` is the step of the same scenario without variation;
// `compute_factors` / `link_factors`: each rank's compute / link bandwidth factor, or empty where
// the variation sets none.
RankSummary summarize_ranks(const RankReport& report, const Timeline& timeline, double symmetric_step_us,
                            const std::vector<double>& compute_factors = {}, const std::vector<double>& link_factors = {});
// The ranks worth a trace: rank 0, the slowest and the fastest.
std::vector<int> ranks_that_matter(const RankSummary& summary);

std::string rank_summary_text(const RankSummary& summary);
// The report's section: the summary text and a heat strip of each rank's waiting inside
// collectives (one cell per rank; above 1,024 ranks each cell is a block of ranks, its upper half
// the most any of them waited, its lower half the least), darker red for more waiting, the value
// on hover.
std::string rank_summary_html(const RankSummary& summary);
nlohmann::json rank_summary_to_json(const RankSummary& summary);

// A measured run of several ranks (exec), its reported iteration: each rank's step, exposed
// communication and waiting inside collectives for the last member (`groups`: the Program's group
// table), spread over the ranks with the ranks at the ends named. No straggler cost: that needs a
// run without the variation (bench/accuracy.py pairs them). "" for one rank.
std::string measured_ranks_text(const Timeline& measured, const std::vector<GroupInfo>& groups);

}  // namespace shardline
