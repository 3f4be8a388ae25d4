#include "sim/profile_cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace shardline::sim {

ProfileCostModel::ProfileCostModel(const ClusterProfile& profile) : profile_(profile) {
  if (!(profile.copy_bandwidth_bytes_per_s >= 0) || !std::isfinite(profile.copy_bandwidth_bytes_per_s))
    throw InputError("--profile", "the profile's copy_bandwidth_bytes_per_s must be a positive number (0: not measured)");
}

CollectivePlan ProfileCostModel::collective(CollectiveKind kind, int64_t size_bytes, const GroupPlacement& group) const {
  CollectivePlan plan;
  if (group.ranks <= 1) return plan;
  const double t = profile_.collective_time_us(kind, size_bytes, group.ranks);  // throws when no table
  const CollectiveTable* table = profile_.find(kind, group.ranks);
  CollectivePhase p;
  p.link = LinkClass::IntraNode;
  p.latency_us = std::clamp(table->fit.alpha_us, 0.0, t);
  p.link_bytes = (t - p.latency_us) * kVirtualBytesPerUs;
  plan.add(p);
  return plan;
}

double ProfileCostModel::copy_time_us(int64_t bytes) const {
  if (bytes == 0) return 0.0;
  if (profile_.copy_bandwidth_bytes_per_s == 0)
    throw InputError("--profile", "the profile measured no copies (it was fitted on a run without copy-ins or copy-outs, e.g. "
                                  "zero-copy), so it cannot time this scenario's copies: calibrate on a run that has them");
  return profile_.copy_latency_us + static_cast<double>(bytes) / profile_.copy_bandwidth_bytes_per_s * 1e6;
}

double ProfileCostModel::copy_link_bytes(int64_t bytes) const {
  return profile_.backend == "mpi" ? copy_time_us(bytes) * kVirtualBytesPerUs : 0.0;
}

double ProfileCostModel::link_bandwidth_bytes_per_s(LinkClass) const { return kVirtualBytesPerUs * 1e6; }

}  // namespace shardline::sim
