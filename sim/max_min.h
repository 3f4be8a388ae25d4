// Max-min fair bandwidth sharing (progressive filling), independent of the rest of the
// simulator: resources have capacities; each flow uses a set of resources. All unfrozen
// flows grow at the same rate until some resource saturates; the flows through it freeze
// at that rate; repeat. Result: no flow can get more without taking from a flow that has
// no more than it. Buffers are reused across solves (no allocation once warm).
#pragma once
#include <vector>

namespace shardline::sim {

class MaxMinSolver {
 public:
  // Starts a new problem with `resources` resources, all of capacity 0, and no flows.
  void reset(int resources);
  void set_capacity(int resource, double capacity);
  // Adds a flow that crosses `count` resources (each at most once); returns its index.
  // A flow must cross at least one resource.
  int add_flow(const int* resources, int count);
  int add_flow(int resource) { return add_flow(&resource, 1); }
  // Computes the max-min fair rates; rate(f) is then the rate of flow f.
  void solve();
  double rate(int flow) const { return rates_[flow]; }
  int flow_count() const { return static_cast<int>(flow_begin_.size()) - 1; }

 private:
  std::vector<double> capacity_;
  std::vector<int> flow_begin_{0};  // CSR: flow f uses flow_resources_[begin[f]..begin[f+1])
  std::vector<int> flow_resources_;
  std::vector<double> rates_;
  // solve() scratch
  std::vector<double> remaining_;
  std::vector<int> unfrozen_on_;
  std::vector<char> frozen_;
  std::vector<char> saturated_;
};

}  // namespace shardline::sim
