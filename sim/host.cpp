#include "sim/host.h"

#include <cstdio>
#include <cstdlib>

namespace shardline::sim {

HostThread::HostThread(const Program& program, double launch_overhead_us, double host_launch_us)
    : ops_(program.ops), launches_(program.host_launches), launch_overhead_us_(launch_overhead_us), host_launch_us_(host_launch_us) {
  if (launches_.size() != ops_.size()) {
    std::fprintf(stderr, "shardline sim host: %zu host launch counts for %zu ops\n", launches_.size(), ops_.size());
    std::abort();
  }
}

double HostThread::issue_cost_us(int id) const {
  const Op& op = ops_[static_cast<size_t>(id)];
  const bool marker = is_marker(op.kind);
  return (marker ? 0.0 : launch_overhead_us_) + launches_us(id);
}

void HostThread::issue_next() {
  if (next_op() < 0) {
    std::fprintf(stderr, "shardline sim host: issue_next with nothing left to issue\n");
    std::abort();
  }
  clock_us_ += issue_cost_us(next_);
  ++next_;
}

}  // namespace shardline::sim
