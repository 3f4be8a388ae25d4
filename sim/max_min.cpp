#include "sim/max_min.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace shardline::sim {
namespace {

[[noreturn]] void misuse(const char* what) {
  std::fprintf(stderr, "shardline sim max-min: %s\n", what);
  std::abort();
}

}  // namespace

void MaxMinSolver::reset(int resources) {
  capacity_.assign(resources, 0.0);
  flow_begin_.assign(1, 0);
  flow_resources_.clear();
  rates_.clear();
}

void MaxMinSolver::set_capacity(int resource, double capacity) {
  if (resource < 0 || resource >= static_cast<int>(capacity_.size())) misuse("capacity of an unknown resource");
  if (!(capacity >= 0)) misuse("negative capacity");
  capacity_[resource] = capacity;
}

int MaxMinSolver::add_flow(const int* resources, int count) {
  if (count <= 0) misuse("a flow must cross at least one resource");
  const int begin = flow_begin_.back();
  for (int k = 0; k < count; ++k) {
    const int r = resources[k];
    if (r < 0 || r >= static_cast<int>(capacity_.size())) misuse("flow on an unknown resource");
    for (int j = begin; j < static_cast<int>(flow_resources_.size()); ++j)
      if (flow_resources_[j] == r) misuse("a flow crosses the same resource twice");
    flow_resources_.push_back(r);
  }
  flow_begin_.push_back(static_cast<int>(flow_resources_.size()));
  rates_.push_back(0.0);
  return flow_count() - 1;
}

void MaxMinSolver::solve() {
  const int nr = static_cast<int>(capacity_.size());
  const int nf = flow_count();
  remaining_.assign(capacity_.begin(), capacity_.end());
  unfrozen_on_.assign(nr, 0);
  frozen_.assign(nf, 0);
  saturated_.assign(nr, 0);
  for (int f = 0; f < nf; ++f) {
    rates_[f] = 0.0;
    for (int k = flow_begin_[f]; k < flow_begin_[f + 1]; ++k) ++unfrozen_on_[flow_resources_[k]];
  }
  int unfrozen = nf;
  double level = 0.0;  // the common rate of every unfrozen flow
  while (unfrozen > 0) {
    // The tightest resource: smallest equal share of what is left among its unfrozen flows.
    double delta = std::numeric_limits<double>::infinity();
    for (int r = 0; r < nr; ++r)
      if (unfrozen_on_[r] > 0) {
        const double share = remaining_[r] / unfrozen_on_[r];
        if (share < delta) delta = share;
      }
    if (delta < 0) delta = 0;  // rounding: never shrink
    level += delta;
    // Resources whose share equals delta (exactly: the same expression) saturate.
    for (int r = 0; r < nr; ++r) {
      saturated_[r] = 0;
      if (unfrozen_on_[r] > 0) {
        const double share = remaining_[r] / unfrozen_on_[r];
        saturated_[r] = share <= delta;
        remaining_[r] -= delta * unfrozen_on_[r];
      }
    }
    for (int f = 0; f < nf; ++f) {
      if (frozen_[f]) continue;
      bool hit = false;
      for (int k = flow_begin_[f]; k < flow_begin_[f + 1] && !hit; ++k) hit = saturated_[flow_resources_[k]];
      if (!hit) continue;
      frozen_[f] = 1;
      rates_[f] = level;
      --unfrozen;
      for (int k = flow_begin_[f]; k < flow_begin_[f + 1]; ++k) --unfrozen_on_[flow_resources_[k]];
    }
  }
}

}  // namespace shardline::sim
