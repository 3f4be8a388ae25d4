// The simulator's public entry: interprets a Program (streams, events, ops) on the scenario's
// cluster and returns the predicted Timeline: of one representative rank (every member of a
// collective is taken to arrive with it), or of every rank of the world, each with its own host
// issue, streams, compute and links, where a collective moves data only once all its group's
// members have reached it. Deterministic.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/metrics.h"
#include "core/program.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

struct ClusterProfile;  // core/profile.h: measured collective tables (calibrate)

// What differs between ranks (every-rank simulation): a factor on each rank's compute times and
// on its link bandwidths, and a multiplicative jitter per compute op. Empty: 1 for every rank.
struct RankVariation {
  std::vector<double> compute_factor;    // per rank, > 0: 1.5 computes 50% longer
  std::vector<double> bandwidth_factor;  // per rank, in (0, 1]: the fraction of bandwidth its links carry
  std::function<double(int rank, int op)> compute_jitter;  // null: none
};

// One rank's step, simulated with every rank.
struct RankStats {
  double step_us = 0;             // its last op's end (the step starts at 0 everywhere)
  double compute_busy_us = 0;     // time its compute ops ran
  double collective_wait_us = 0;  // time inside collectives waiting for other members
};

// A stretch of the critical path on one rank, [from_us, to_us]. `held_up_op`: the collective
// where the path leaves this rank for a member that waited for it (this rank arrived last, or
// finished a phase of it last), and that member's wait there (at a phase: the shortest wait of
// the members that waited); -1 for the last stretch when it
// ends on the slowest rank's own work (a slow link that held the last collective's last phase
// makes the last stretch that link's rank's, leaving at that collective).
struct PathSegment {
  int rank = 0;
  double from_us = 0, to_us = 0;
  int held_up_op = -1;
  double held_up_wait_us = 0;
};

// What every-rank simulation says beyond the Timeline.
struct RankReport {
  std::vector<RankStats> ranks;
  // The critical path in time order: walked back from the end of the slowest rank (the lowest on
  // ties), on each rank back to the latest collective it waited in, then over to the member that
  // arrived last there (or finished a phase last, while others waited), until a rank that waited
  // for nobody. Kept only when the simulator keeps
  // every rank's spans (choose_timeline_ranks); else empty.
  std::vector<PathSegment> critical_path;
  // Per op: the waiting at that collective, summed over members and groups.
  std::vector<double> wait_at_op_us;
};

struct SimOptions {
  // A calibrated cluster profile replaces the analytical alpha-beta costs; null: analytical.
  const ClusterProfile* profile = nullptr;
  // Out (optional): set to the number of engine events processed, and to the wall seconds the
  // event loop took (without checking the Program, setting up ranks or assembling the Timeline),
  // so bench/ reports events per second of the whole call and of the engine alone.
  uint64_t* events_processed = nullptr;
  double* event_loop_seconds = nullptr;
  // Every rank of the Program's world (true) or one representative rank (false).
  bool every_rank = false;
  // Every rank: what varies between ranks (null: nothing), and which ranks' intervals the
  // Timeline keeps (empty: all).
  const RankVariation* variation = nullptr;
  std::vector<int> timeline_ranks;
  // Or: every rank's spans are kept during the run (16 bytes per rank and op) and this picks
  // the Timeline's ranks from the finished run (e.g. the slowest and the fastest).
  std::function<std::vector<int>(const RankReport&)> choose_timeline_ranks;
  RankReport* rank_report = nullptr;  // out (optional, every rank)
};

Timeline simulate(const Scenario& scenario, const Program& program, const SimOptions& options = {});
// The same for a Program the caller no longer needs: its ops move into the Timeline instead of
// being copied (a sweep point, a benchmark).
Timeline simulate(const Scenario& scenario, Program&& program, const SimOptions& options = {});

// The predicted step's metrics without its Timeline: compute_metrics(simulate(...)), bit for bit,
// with neither an interval per op nor a memory sample per alloc and free held (a summary, a sweep
// point: about 30% less memory on a million-op Program; docs/benchmarks.md). One
// representative rank: every_rank, a variation and rank choices are for simulate(). `header`
// (optional, out): the Timeline simulate() would return, without ops, intervals and memory
// samples: what a summary prints beside the metrics.
Metrics simulate_metrics(const Scenario& scenario, const Program& program, const SimOptions& options = {}, Timeline* header = nullptr);

}  // namespace shardline
