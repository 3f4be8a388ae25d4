// The compute model at run time: a Compute op carries `compute_us` of work (its duration on an
// idle GPU, from the scheduler's compute model). It progresses at 1 us of work per
// `slowdown` us while any collective is in flight on this rank (slowdown =
// cluster.compute_slowdown_during_comm), else at 1 us per us. Progress-based: when the
// comm state flips, each running op's remaining work is brought up to date and its end is
// re-projected (each re-projection gets a new version; older end events are stale).
#pragma once
#include <cstdint>
#include <vector>

#include "sim/activity.h"

namespace shardline::sim {

class ComputeModel {
 public:
  explicit ComputeModel(double slowdown_during_comm);  // >= 1 (asserted)

  void start(double now_us, int op, double work_us);
  void finish(int op);  // at its projected end
  // Collectives in flight or not from now on: running ops are re-rated.
  void set_comm_in_flight(double now_us, bool in_flight);

  // Running ops (start order) with their projected end and version.
  int running_count() const { return static_cast<int>(running_.size()); }
  int running_op(int i) const { return running_[i].op; }
  double projected_end_us(int i) const { return running_[i].work.end_us; }
  uint64_t version(int i) const { return running_[i].work.version; }
  bool is_current(int op, uint64_t version) const;

 private:
  struct Task {
    int op = -1;
    Activity work;  // remaining: us of work
  };
  double multiplier() const { return comm_in_flight_ ? slowdown_ : 1.0; }  // wall us per work us
  void project(Task& t, double now_us) { t.work.project(now_us, t.work.remaining * multiplier(), next_version_++); }

  double slowdown_;
  bool comm_in_flight_ = false;
  std::vector<Task> running_;  // few: at most one per stream
  uint64_t next_version_ = 1;
};

}  // namespace shardline::sim
