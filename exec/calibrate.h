// `shardline calibrate`'s measurements, taken through the same exec Backend that `exec` runs
// on (so the profile describes exactly what exec does): every collective for every group size
// the world can form (each divisor >= 2 of the world size; contiguous groups, like the shard
// groups exec splits), over log-spaced sizes; copy bandwidth; the host's per-op issue cost;
// and the mutual slow-down of compute stand-ins and collectives. Every rank runs the same
// fixed number of repetitions; a repetition's time is the max over ranks (the group finishes
// when its slowest member does), and tables keep the median over repetitions. With several
// passes (CalibrateOptions::passes) the whole calibration runs that many times and every number
// is the median of the passes' (core/profile.h median_of_passes).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/profile.h"
#include "exec/backend.h"
#include "exec/backend_factory.h"

namespace shardline::exec {

class HostComm;  // exec/host_comm.h

// Upper bounds of --repetitions and --passes (--warmup: that of exec's, check_warmup_count).
inline constexpr int kMaxCalibrateRepetitions = 10000;
inline constexpr int kMaxCalibratePasses = 100;

struct CalibrateOptions {
  int64_t min_bytes = 1024;          // smallest collective size S
  int64_t max_bytes = 64LL << 20;    // largest S (lowered to what memory allows)
  int repetitions = 10;              // measured repetitions per point, same on every rank
  int warmup = 2;                    // unmeasured repetitions before each point (collectives: at least one per buffer slot)
  int passes = 1;                    // whole calibrations, medians kept (core/profile.h median_of_passes)
  ComputeMode compute = ComputeMode::Sleep;  // the compute stand-in exec will use
  double interference_compute_us = 4000;     // stand-in length for the slow-down measurements
  int64_t interference_bytes = 1LL << 20;    // collective size for the slow-down measurements
  std::string machine;                       // free text stored in the profile
  // Called on rank 0 with one line per finished measurement (progress), may be empty.
  std::function<void(const std::string&)> log;
};

// InputError naming the flag when the options cannot calibrate `world` ranks (sizes, repetitions,
// fewer than two sizes to measure): checked before mpirun starts, and again by calibrate.
void check_calibrate_options(const CalibrateOptions& options, int world);

// Divisors >= 2 of `world`, ascending.
std::vector<int> calibration_group_sizes(int world);
// Sizes min, 2 min, 4 min, ... up to max (max itself included), each rounded down to a
// multiple of `granularity_bytes` (>= granularity), distinct and ascending.
std::vector<int64_t> calibration_sizes(int64_t min_bytes, int64_t max_bytes, int64_t granularity_bytes);

// Collective over `host` (every rank calls it with the same options). `make_backend` builds a
// fresh backend on every call (one per group size, since a backend keeps one communicator per
// stream and group). Returns the same profile on every rank.
ClusterProfile calibrate(const BackendMaker& make_backend, const HostComm& host, const CalibrateOptions& options);

// Initializes MPI, builds backends by name (exec/backend_factory.h: "mpi" | "nccl",
// InputError("--backend") otherwise) and calibrates.
ClusterProfile calibrate_backend(const std::string& backend, const CalibrateOptions& options);

}  // namespace shardline::exec
