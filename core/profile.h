// A calibrated cluster profile: what `shardline calibrate` measured on real hardware (tables
// of collective times per group size, copy bandwidth, issue overhead, mutual slow-downs of
// compute and communication) and the alpha-beta fits of those tables. The simulator uses it
// in place of the analytical presets: log-log interpolation between measured sizes, the
// fitted alpha + beta * S outside them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/collective.h"

namespace shardline {

struct AlphaBeta {
  double alpha_us = 0;          // fixed cost per collective
  double beta_us_per_byte = 0;  // cost per byte of S (nccl-tests size)
};

// Least-squares fit of t = alpha + beta * S, weighted by 1/t^2 (relative error), so small
// and large sizes count alike. Needs >= 2 distinct sizes; asserts otherwise.
AlphaBeta fit_alpha_beta(const std::vector<int64_t>& sizes_bytes, const std::vector<double>& times_us);

struct CollectiveTable {
  CollectiveKind kind = CollectiveKind::AllGather;
  int group_size = 1;
  std::vector<int64_t> sizes_bytes;  // ascending, distinct
  std::vector<double> times_us;      // median measured time per size
  // Per size, how much the repetitions varied: (p90 - p10) / median (optional in files: empty).
  std::vector<double> relative_spread;
  AlphaBeta fit;

  // Exact on table points, log-log linear between them, alpha-beta outside the table.
  double time_us(int64_t size_bytes) const;
};

// A unit's measured compute per micro-batch (a profile from a real run: calibrate --from-trace);
// backward without the recomputed forward.
struct UnitTimes {
  std::string name;
  double forward_us = 0;
  double backward_us = 0;
};

struct ClusterProfile {
  std::string backend;   // "mpi" | "nccl"
  std::string machine;   // free text: host name, CPU/GPU model
  std::string created;   // ISO 8601 UTC
  std::vector<CollectiveTable> collectives;
  // calibrate's own noise: the median over every collective size of its relative spread (0:
  // not measured, e.g. a profile written before it was).
  double collective_noise = 0;
  double copy_bandwidth_bytes_per_s = 0;  // 0: not measured (a run with no copies); copies are then refused
  double copy_latency_us = 0;  // fixed cost per copy op (optional in files; 0 when absent)
  double issue_overhead_us = 0;
  double comm_slowdown_during_compute = 1.0;  // collective time factor while compute runs
  double compute_slowdown_during_comm = 1.0;  // compute time factor while a collective runs
  // mpi: a copy's time factor while a collective of its rank moves data, and the collective's
  // transfer factor while a copy runs (the rank's cores do both; sim/profile_cost_model.h).
  double copy_slowdown_during_comm = 1.0;
  double comm_slowdown_during_copy = 1.0;
  // Optional in files (0 when absent): the delay from an op's end to the start of an op on
  // another stream that waits for it, and what a compute stand-in takes beyond its request.
  double event_latency_us = 0;
  double compute_overhead_us = 0;
  // Optional in files (empty when absent): measured unit compute times, which `simulate
  // --profile` puts in place of the scenario's compute model for the units of those names.
  std::vector<UnitTimes> units{};
  // The ranks the profile was measured on (calibrate's world, a measured run's ranks); 0: not
  // known (a profile written before 2026-11-27's twenty-seventh session). Its times are those of
  // that many ranks (sharing their hosts and links).
  int ranks = 0;

  const CollectiveTable* find(CollectiveKind kind, int group_size) const;
  // Throws InputError("--profile", ...) when the profile has no table for (kind, group size).
  double collective_time_us(CollectiveKind kind, int64_t size_bytes, int group_size) const;
};

// Now as a profile's `created` stamp: ISO 8601 UTC, to the second.
std::string profile_created_now();

// A profile's collective_noise from its tables: the median over every table and size of the
// relative spread (0 when no table has spreads).
double median_relative_spread(const std::vector<CollectiveTable>& tables);

// One profile from several calibration passes of the same machine (calibrate --passes): every
// measured number is the median of the passes' (each table's time and relative spread at each
// size, each scalar), the tables' alpha-beta refitted on the median times and collective_noise
// taken from the median spreads (median_relative_spread); backend, machine and
// created stamp are the first pass's. A slow spell of a shared machine that moves one pass then
// moves nothing. Passes with different tables (kinds, group sizes, sizes) or measured units are a
// bug: std::logic_error.
ClusterProfile median_of_passes(const std::vector<ClusterProfile>& passes);

nlohmann::json profile_to_json(const ClusterProfile& profile);
ClusterProfile profile_from_json(const nlohmann::json& j);  // throws InputError with the path
ClusterProfile load_profile(const std::string& path);       // throws InputError("--profile", ...)
// A note (empty when none) for a run of `world` ranks predicted with `profile`: measured on
// another number of ranks, its times are those of that many (sharing their hosts and links).
std::string profile_ranks_note(const ClusterProfile& profile, int world);

// Notes, one per (kind, group size), where the Program's largest collective is more than
// kProfileReachFactor times the largest size the profile measured for it: its time then comes
// from the profile's alpha-beta fit alone, which sizes far below it (latency-bound) fit poorly.
struct Program;
inline constexpr double kProfileReachFactor = 16;
std::vector<std::string> profile_reach_notes(const ClusterProfile& profile, const Program& program);

}  // namespace shardline
