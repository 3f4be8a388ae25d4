#include "reports/every_rank.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/metrics.h"
#include "core/schedule.h"

namespace shardline {
RankVariation rank_variation(const Scenario& scenario) {
  const VariationSpec& v = scenario.variation;
  const int gpus_per_node = scenario.cluster.gpus_per_node;
  RankVariation out;
  if (v.sets_rank_compute_factors())
    out.compute_factor = rank_compute_factors(v, scenario.mesh.shard, scenario.mesh.replicate, gpus_per_node);
  if (v.has_slow_links()) out.bandwidth_factor = rank_bandwidth_factors(v, scenario.mesh.shard, scenario.mesh.replicate, gpus_per_node);
  if (v.jitter.cv > 0) out.compute_jitter = [v](int rank, int op) { return compute_jitter_factor(v, rank, 0, op); };
  return out;
}

std::vector<int> varied_ranks(const Scenario& scenario, size_t limit) {
  const VariationSpec& v = scenario.variation;
  std::vector<int> out;
  if (!v.has_stragglers() && !v.has_slow_links()) return out;
  const int shard = scenario.mesh.shard, replicate = scenario.mesh.replicate, gpus_per_node = scenario.cluster.gpus_per_node;
  const std::vector<double> slow = rank_straggler_factors(v, shard, replicate, gpus_per_node);
  const std::vector<double> thin = rank_bandwidth_factors(v, shard, replicate, gpus_per_node);
  for (size_t r = 0; r < slow.size() && out.size() < limit; ++r)
    if (slow[r] != 1.0 || thin[r] != 1.0) out.push_back(static_cast<int>(r));
  return out;
}

EveryRankRun simulate_every_rank(const Scenario& scenario, const Program& program, SimOptions options,
                                 const std::vector<int>& keep_ranks, bool keep_all) {
  for (int r : keep_ranks)
    if (r < 0 || r >= program.world_size)
      throw InputError("--trace-ranks", "rank " + std::to_string(r) + " is not in the world of " + std::to_string(program.world_size) + " ranks");
  const int64_t ranks = program.world_size, ops = static_cast<int64_t>(program.ops.size());
  if (const int64_t bytes = every_rank_bytes(ranks, ops); bytes > kMaxEveryRankBytes) {
    const auto gb = [](int64_t b) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(b) / 1e9);
      return std::string(text);
    };
    // Blamed on the larger factor: the mesh when it has more ranks than the Program has ops
    // (65,536 ranks of a 4,430-op step) or when each rank's own state outweighs its spans, else
    // the key that made the Program large.
    const bool ranks_dominate = (ranks > ops || 16 * ops < kRankStateBytes) && ranks * 16 > kProgramBytesPerOp;
    // Fewer micro-batches are named only when one micro-batch's ops would fit.
    const bool one_micro_batch_fits =
        every_rank_bytes(ranks, ops / std::max(1, scenario.policy.micro_batches)) <= kMaxEveryRankBytes;
    throw InputError(ranks_dominate ? std::string("mesh") : program_size_key(scenario, one_micro_batch_fits),
                     "every rank is simulated (a variation, or --ranks all) and keeps its start and end of every op and "
                     "its own state: " + std::to_string(ranks) + " ranks x " + std::to_string(ops) + " ops is " + gb(bytes) +
                         " (16 bytes per rank and op, about " + std::to_string(kRankStateBytes) + " bytes per rank, " +
                         std::to_string(kProgramBytesPerOp) + " per op for the Program and the representative rank); at most " +
                         gb(kMaxEveryRankBytes) +
                         ": make fewer ops or ranks, or simulate one representative rank (no variation; simulate --ranks one)");
  }
  SimOptions symmetric = options;
  symmetric.every_rank = false;
  symmetric.variation = nullptr;
  symmetric.timeline_ranks.clear();
  symmetric.rank_report = nullptr;
  symmetric.events_processed = nullptr;
  symmetric.choose_timeline_ranks = nullptr;
  const double symmetric_step_us = simulate_metrics(scenario, program, symmetric).step_time_us;

  RankReport report;
  options.every_rank = true;
  const RankVariation variation = rank_variation(scenario);
  options.variation = scenario.variation.empty() ? nullptr : &variation;
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
    const std::vector<int> varied = varied_ranks(scenario, kMaxVariedRanksKept);
    kept.insert(kept.end(), varied.begin(), varied.end());
    kept.insert(kept.end(), keep_ranks.begin(), keep_ranks.end());
    return kept;
  };
  EveryRankRun run;
  run.timeline = simulate(scenario, program, options);
  run.summary = summarize_ranks(report, run.timeline, symmetric_step_us, variation.compute_factor, variation.bandwidth_factor);
  return run;
}

}  // namespace shardline
