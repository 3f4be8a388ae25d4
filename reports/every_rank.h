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

// The ranks a straggler or slow link names (their factors not 1; a rank_compute_spread, which
// draws a factor for every rank, names none), ascending, at most `limit` of them (the lowest):
// the Timeline keeps them by default, so an injected straggler is in the trace even when it ties
// with the ranks that waited for it.
std::vector<int> varied_ranks(const Scenario& scenario, size_t limit);
inline constexpr size_t kMaxVariedRanksKept = 8;

// The scenario's variation applies. `options`: the profile and the like (its every-rank fields
// are set here). `keep_ranks`: ranks the Timeline keeps besides rank 0, the slowest, the fastest
// and the varied ranks (varied_ranks, up to kMaxVariedRanksKept); `keep_all`: every rank. Throws InputError("--trace-ranks", ...) for a rank outside the world,
// and, when every_rank_bytes exceeds kMaxEveryRankBytes, before simulating, InputError naming "mesh"
// when the ranks are what is large (more ranks than the Program has ops, or a Program so small that
// each rank's fixed state outweighs its spans), else the key that made the Program large
// (program_size_key).
// What simulating every rank holds: each rank's start and end of every op (16 bytes each; the
// simulator picks the Timeline's ranks after the run) and each rank's own state (streams, network,
// collectives in flight, statistics: kRankStateBytes, measured as the slope of peak memory over
// 131,072 and 262,144 ranks of host-tiny-fsdp, 4.95 KB per rank of which 2.4 KB spans), plus what
// does not grow with the ranks: the Program and the representative rank's run before the every-rank
// one, kProgramBytesPerOp (a review on 2026-11-27 measured 267-500 bytes per op beyond the spans on
// runs of 2.6-7.8 M ops over 25-64 ranks, which the count had left out: 6.3 GB where it said 3.1).
// Held to 4 GB: the 70B scenario on 16,384 GPUs needs 1.2 GB, Llama 3 405B on 16,384 H100s 3.7 GB.
inline constexpr int64_t kRankStateBytes = 2'600;
inline constexpr int64_t kProgramBytesPerOp = 512;
inline constexpr int64_t kMaxEveryRankBytes = 4'000'000'000;
inline int64_t every_rank_bytes(int64_t ranks, int64_t ops) { return ranks * (16 * ops + kRankStateBytes) + ops * kProgramBytesPerOp; }
EveryRankRun simulate_every_rank(const Scenario& scenario, const Program& program, SimOptions options,
                                 const std::vector<int>& keep_ranks, bool keep_all);

}  // namespace shardline
