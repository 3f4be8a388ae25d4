#include "reports/every_rank.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/metrics.h"

namespace shardline {
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
  symmetric.choose_timeline_ranks = nullptr;
  const double symmetric_step_us = compute_metrics(simulate(scenario, program, symmetric)).step_time_us;

  RankReport report;
  options.every_rank = true;
  options.variation = variation;
  options.rank_report = &report;
  options.timeline_ranks.clear();
  // One pass: the simulator keeps every rank's spans and the Timeline takes the ranks that
  // matter once the slowest and the fastest are known.
  options.choose_timeline_ranks = [&](const RankReport& finished) {
    if (keep_all) {
      std::vector<int> all(finished.ranks.size());
      for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
      return all;
    }
    std::vector<int> kept = ranks_that_matter(summarize_ranks(finished, Timeline{}, symmetric_step_us));
    kept.insert(kept.end(), keep_ranks.begin(), keep_ranks.end());
    return kept;
  };
  EveryRankRun run;
  run.timeline = simulate(scenario, program, options);
  run.summary = summarize_ranks(report, run.timeline, symmetric_step_us);
  return run;
}

}  // namespace shardline
