#include "sim/host.h"

#include <cstdio>
#include <cstdlib>

namespace shardline::sim {

double host_issue_cost_us(const Op& op, double launch_overhead_us) {
  const bool marker = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
  return marker ? 0.0 : launch_overhead_us;
}

HostThread::HostThread(const Program& program, double launch_overhead_us)
    : ops_(program.ops), launch_overhead_us_(launch_overhead_us) {}

void HostThread::issue_next() {
  if (next_op() < 0) {
    std::fprintf(stderr, "shardline sim host: issue_next with nothing left to issue\n");
    std::abort();
  }
  clock_us_ += host_issue_cost_us(ops_[next_], launch_overhead_us_);
  ++next_;
}

}  // namespace shardline::sim
