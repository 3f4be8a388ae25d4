// Where in a rank's trace each GPU activity came from: its CPU launch (through the correlation
// id the profiler records on both), and which profiler step (`ProfilerStep#N`) that launch fell
// in. A GPU activity without a recorded launch counts from its own start.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kineto/trace.h"

namespace shardline::kineto {

class LaunchIndex {
 public:
  explicit LaunchIndex(const KinetoTrace& trace);
  // When the CPU launched `a` (ns), or a.ts_ns when no launch carries its correlation id.
  int64_t launch_ns(const GpuActivity& a) const;
  // The CPU thread that launched `a` (-1 when no launch is recorded).
  int64_t launch_tid(const GpuActivity& a) const;
  // Whether a launch carries `a`'s correlation id (else it is placed by its own start).
  bool has_launch(const GpuActivity& a) const { return a.correlation >= 0 && by_correlation_.count(a.correlation) > 0; }
  
 private:
  std::unordered_map<int64_t, Launch> by_correlation_;
};

struct ProfilerStepWindow {
  std::string name;  // "ProfilerStep#12" or "whole trace"
  int64_t ts_ns = 0;
  int64_t end_ns = 0;
};

// The trace's ProfilerStep#N ranges in time order, or one window over everything when it has none.
std::vector<ProfilerStepWindow> profiler_steps(const KinetoTrace& trace);
// Index of the window holding CPU time `ns` ([ts, end)), -1 for none.
int step_of(const std::vector<ProfilerStepWindow>& windows, int64_t ns);

}  // namespace shardline::kineto
