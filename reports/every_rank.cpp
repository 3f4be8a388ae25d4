#include "reports/every_rank.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/metrics.h"

namespace shardline {
namespace {

// Up to this many intervals (ranks x ops) one pass keeps every rank and drops the others after;
// above it a second pass records only the kept ranks (the simulation is deterministic).
constexpr size_t kOnePassIntervals = size_t{1} << 21;

}  // namespace

EveryRankRun simulate_every_rank(const Scenario& scenario, const Program& program, SimOptions options,
                                 const RankVariation* variation, const std::vector<int>& keep_ranks, bool keep_all) {
  for (int r : keep_ranks)
    if (r < 0 || r >= program.world_size)
      throw InputError("--trace-ranks", "rank " + std::to_string(r) + " is not in the world of " + std::to_string(program.world_size) + " ranks");
  SimOptions symmetric = options;
  symmetric.every_rank = false;
  symmetric.variation = nullptr;
  symmetric.timeline_ranks.clear();
  symmetric.rank_report = nullptr;
  symmetric.events_processed = nullptr;
  const double symmetric_step_us = compute_metrics(simulate(scenario, program, symmetric)).step_time_us;

  RankReport report;
  options.every_rank = true;
  options.variation = variation;
  options.rank_report = &report;
  const bool one_pass = keep_all || static_cast<size_t>(program.world_size) * program.ops.size() <= kOnePassIntervals;
  options.timeline_ranks = one_pass ? std::vector<int>{} : std::vector<int>{0};
  EveryRankRun run;
  run.timeline = simulate(scenario, program, options);
  run.summary = summarize_ranks(report, run.timeline, symmetric_step_us);
  if (keep_all) return run;

  std::vector<int> kept = ranks_that_matter(run.summary);
  kept.insert(kept.end(), keep_ranks.begin(), keep_ranks.end());
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  if (one_pass) {
    std::erase_if(run.timeline.intervals,
                  [&](const OpInterval& iv) { return !std::binary_search(kept.begin(), kept.end(), iv.rank); });
  } else {
    options.timeline_ranks = kept;
    RankReport again;
    options.rank_report = &again;
    run.timeline = simulate(scenario, program, options);
  }
  return run;
}

}  // namespace shardline
