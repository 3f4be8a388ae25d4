// The executor: walks a Program generically (it knows nothing of FSDP) and runs every op for
// real on a Backend: copy-ins pack slices into flat buffers, collectives run on the op's group,
// copy-outs unpack, compute ops are stand-ins of op.compute_us, alloc/free are markers. One
// optional verification pass (ops one at a time, data checked after each), then warmup and
// measured passes (streams run concurrently, ordered by the Program's events). Per-op times
// are aligned to rank 0's clock and gathered there. A watchdog ends a run that stops making
// progress. Host-side coordination (barriers, clock alignment, gathers) goes over a HostComm
// (exec/host_comm.h, MPI) for every backend.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/program.h"
#include "core/timeline.h"
#include "exec/backend.h"
#include "exec/plan.h"

namespace shardline::exec {

class HostComm;  // exec/host_comm.h

// --timeout's range (seconds): InputError outside [1, kMaxTimeoutS].
inline constexpr double kMaxTimeoutS = 86400;
void check_timeout(double timeout_s);

struct ExecOptions {
  int iterations = 1;
  int warmup = 0;
  ComputeMode compute = ComputeMode::Sleep;
  int64_t scale = 1;
  double timeout_s = 60;
  bool verify = true;
  // Test hooks: rank `stall_rank` stops before op `stall_op` (-1: the first collective);
  // `corrupt_op` reads its source one element off.
  int stall_rank = -1;
  int stall_op = -1;
  int kill_rank = -1;  // test hook: this rank kills itself (SIGKILL) before `stall_op`
  int corrupt_op = -1;
  // Variation injected into the run (null: none): each compute stand-in runs for its op's
  // compute_us times compute_factor(rank, iteration, op). Measured iterations are numbered
  // 0..iterations-1; the unmeasured passes (data check, warmup) -1 - their pass number.
  std::function<double(int rank, int iteration, int op)> compute_factor;
  // Called on a failing rank (timeout, MPI error) with its partial local timeline, before the
  // run is aborted with MPI_Abort.
  std::function<void(const Timeline& partial, const std::string& message)> on_failure;
};

struct ExecResult {
  int rank = 0;
  int world = 1;
  Timeline timeline;              // rank 0: every rank's intervals; others: their own
  bool verified = false;          // a verification pass ran and passed
  bool verify_failed = false;
  std::vector<std::string> verify_failures;  // rank 0: the first failure of each failing rank
  int64_t elements_checked = 0;   // summed over ranks (rank 0)
  double clock_error_us = 0;      // max over ranks of the alignment error bound
  int64_t bytes_per_rank = 0;     // what the plan allocated
  int64_t available_bytes = 0;    // what the rank could use (min over ranks)
  std::vector<double> step_times_us;  // per measured iteration, max over ranks
};

// Collective over `host`: every rank calls it with the same Program and options.
// Throws InputError for bad programs and for runs that would not fit in memory.
ExecResult run_program(const Program& program, const ExecOptions& options, Backend& backend, const HostComm& host);

// The metadata a measured Timeline carries: the ops without slices and deps, with `bytes` set
// to the bytes this run really moved (copies: bytes copied; collectives: the nccl-tests size).
// Alloc/free: their bytes divided by the scale.
void set_measured_ops(Timeline& timeline, const Plan& plan);

}  // namespace shardline::exec
