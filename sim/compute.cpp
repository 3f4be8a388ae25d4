#include "sim/compute.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shardline::sim {
namespace {

[[noreturn]] void broken(const char* what, int op) {
  std::fprintf(stderr, "shardline sim compute: %s (op %d)\n", what, op);
  std::abort();
}

}  // namespace

ComputeModel::ComputeModel(double slowdown_during_comm) : slowdown_(slowdown_during_comm) {
  if (!(slowdown_ >= 1.0) || !std::isfinite(slowdown_)) broken("slowdown during comm must be a finite factor >= 1", -1);
}

void ComputeModel::start(double now_us, int op, double work_us) {
  if (!(work_us >= 0) || !std::isfinite(work_us)) broken("compute work must be finite and >= 0", op);
  Task t;
  t.op = op;
  t.work.remaining = work_us;
  t.work.since_us = now_us;
  project(t, now_us);
  running_.push_back(t);
}

void ComputeModel::finish(int op) {
  auto it = std::find_if(running_.begin(), running_.end(), [op](const Task& t) { return t.op == op; });
  if (it == running_.end()) broken("finishing a compute op that is not running", op);
  running_.erase(it);
}

void ComputeModel::set_comm_in_flight(double now_us, bool in_flight) {
  if (in_flight == comm_in_flight_) return;
  for (Task& t : running_) {
    const double elapsed_us = now_us - t.work.since_us;
    if (elapsed_us < 0) broken("time went backwards", t.op);
    t.work.advance(now_us, elapsed_us / multiplier());
  }
  comm_in_flight_ = in_flight;
  for (Task& t : running_) project(t, now_us);
}

bool ComputeModel::is_current(int op, uint64_t version) const {
  for (const Task& t : running_)
    if (t.op == op) return t.work.version == version;
  return false;
}

}  // namespace shardline::sim
