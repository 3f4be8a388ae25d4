// The host issue thread: issues a Program's ops in program order. Issuing an op costs the host
// `launch_overhead_us` plus `host_launch_us` per GPU activity it launches
// (Program::host_launches: an eager framework's Python, dispatcher, autograd and CUDA launch per
// kernel); alloc/free markers are allocator bookkeeping and cost nothing. The host never blocks
// (a Program has no host syncs), so op k is issued at the sum of the costs of ops 0..k-1: the
// first op at t = 0, the host paying each op's cost after issuing it. An op's kernels are launched
// over that time, so it cannot end before its issue + its launches' host time (the simulator
// holds its end until then: launches_done_us).
#pragma once
#include <cstdint>
#include <span>

#include "core/program.h"

namespace shardline::sim {

class HostThread {
 public:
  HostThread(const Program& program, double launch_overhead_us, double host_launch_us);
  // The next op to issue and when; next_op() == -1 once everything is issued.
  int next_op() const { return next_ < static_cast<int>(ops_.size()) ? next_ : -1; }
  double next_issue_us() const { return clock_us_; }
  // Host time spent issuing op `id`.
  double issue_cost_us(int id) const;
  // Host time spent on op `id`'s launches (host_launch_us x its launches): issued at t, its last
  // launch is made by t + this.
  double launches_us(int id) const { return host_launch_us_ * static_cast<double>(launches_[static_cast<size_t>(id)]); }
  // Issues next_op(): the host clock advances by its cost.
  void issue_next();

 private:
  std::span<const Op> ops_;             // the Program's (outlives this)
  std::span<const uint32_t> launches_;  // Program::host_launches
  double launch_overhead_us_ = 0;
  double host_launch_us_ = 0;
  int next_ = 0;
  double clock_us_ = 0;
};

}  // namespace shardline::sim
