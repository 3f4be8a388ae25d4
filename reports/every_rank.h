// Every-rank simulation as the commands run it (`simulate --ranks all`): the step of every rank,
// the same step without variation for the straggler cost, and a Timeline that keeps the ranks
// worth looking at (rank 0, the slowest, the fastest, the stragglers and any asked for) rather
// than thousands.
#pragma once
#include <vector>

#include "core/program.h"
#include "core/scenario.h"
#include "core/timeline.h"
#include "reports/rank_summary.h"
#include "sim/simulator.h"

namespace shardline {

struct EveryRankRun {
  Timeline timeline;  // every rank's step; intervals of the kept ranks
  RankSummary summary;
};

// The scenario's variation as the simulator takes it: per-rank compute and bandwidth factors,
// and the jitter of each compute op (iteration 0, the simulated step).
RankVariation rank_variation(const Scenario& scenario);

// The ranks a straggler or slow link names (compute factor or bandwidth factor not 1), ascending,
// at most `limit` of them (the lowest): the Timeline keeps them by default, so an injected
// straggler is in the trace even when it ties with the ranks that waited for it.
std::vector<int> varied_ranks(const RankVariation& variation, size_t limit);
inline constexpr size_t kMaxVariedRanksKept = 8;

// The scenario's variation applies. `options`: the profile and the like (its every-rank fields
// are set here). `keep_ranks`: ranks the Timeline keeps besides rank 0, the slowest, the fastest
// and the varied ranks (varied_ranks, up to kMaxVariedRanksKept); `keep_all`: every rank. Throws InputError("--trace-ranks", ...) for a rank outside the world,
// and, when ranks x ops exceeds kMaxRankOps, before simulating, InputError naming "mesh" when the
// world has more ranks than the Program has ops, else the key that made the Program large
// (program_size_key).
// kMaxRankOps: the simulator keeps every rank's start and end of every op (16 bytes each) to pick
// the Timeline's ranks after the run: 200 million of them is 3.2 GB (the 70B scenario on 16,384
// GPUs is 73 million; on 64 GPUs with 4 MiB buckets 121 million).
inline constexpr int64_t kMaxRankOps = 200'000'000;
EveryRankRun simulate_every_rank(const Scenario& scenario, const Program& program, SimOptions options,
                                 const std::vector<int>& keep_ranks, bool keep_all);

}  // namespace shardline
