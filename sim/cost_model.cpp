#include "sim/cost_model.h"

namespace shardline::sim {

double lone_collective_time_us(const CostModel& model, CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group) {
  const CollectivePlan plan = model.collective(kind, size_bytes, group);
  double t = 0;
  for (int p = 0; p < plan.count; ++p) {
    const CollectivePhase& ph = plan.phases[p];
    t += ph.latency_us + ph.link_bytes / model.link_bandwidth_bytes_per_s(ph.link) * 1e6;
  }
  return t;
}

}  // namespace shardline::sim
