// The host issue thread: issues a Program's ops in program order. Issuing a kernel or copy
// (compute, copy-in/out, collectives) costs the host `launch_overhead_us`; Alloc/Free markers
// are allocator bookkeeping, not launches, and cost the host nothing. The host never blocks
// (a Program has no host syncs), so op k is issued at the sum of the costs of ops 0..k-1:
// the first op is issued at t = 0 and the host pays each launch after issuing it.
#pragma once
#include <span>

#include "core/program.h"

namespace shardline::sim {

// Host time spent issuing `op`.
double host_issue_cost_us(const Op& op, double launch_overhead_us);

class HostThread {
 public:
  HostThread(const Program& program, double launch_overhead_us);
  // The next op to issue and when; next_op() == -1 once everything is issued.
  int next_op() const { return next_ < static_cast<int>(ops_.size()) ? next_ : -1; }
  double next_issue_us() const { return clock_us_; }
  // Issues next_op(): the host clock advances by its cost.
  void issue_next();

 private:
  std::span<const Op> ops_;  // the Program's (outlives this)
  double launch_overhead_us_ = 0;
  int next_ = 0;
  double clock_us_ = 0;
};

}  // namespace shardline::sim
