#include "kineto/launch_index.h"

#include <algorithm>

namespace shardline::kineto {

LaunchIndex::LaunchIndex(const KinetoTrace& trace) {
  by_correlation_.reserve(trace.launches.size());
  for (const Launch& l : trace.launches) by_correlation_.emplace(l.correlation, l);
}

int64_t LaunchIndex::launch_ns(const GpuActivity& a) const {
  if (a.correlation < 0) return a.ts_ns;
  const auto it = by_correlation_.find(a.correlation);
  return it == by_correlation_.end() ? a.ts_ns : it->second.ts_ns;
}

int64_t LaunchIndex::launch_tid(const GpuActivity& a) const {
  if (a.correlation < 0) return -1;
  const auto it = by_correlation_.find(a.correlation);
  return it == by_correlation_.end() ? -1 : it->second.tid;
}

std::vector<ProfilerStepWindow> profiler_steps(const KinetoTrace& trace) {
  std::vector<ProfilerStepWindow> steps;
  for (const CpuRange& r : trace.ranges) {
    const std::string& name = trace.name_of(r);
    if (name.rfind("ProfilerStep#", 0) == 0) steps.push_back({name, r.ts_ns, r.end_ns()});
  }
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
  if (steps.empty()) steps.push_back({"whole trace", INT64_MIN, INT64_MAX});
  return steps;
}

int step_of(const std::vector<ProfilerStepWindow>& windows, int64_t ns) {
  auto it = std::upper_bound(windows.begin(), windows.end(), ns, [](int64_t t, const auto& w) { return t < w.ts_ns; });
  if (it == windows.begin()) return -1;
  --it;
  return ns < it->end_ns ? static_cast<int>(it - windows.begin()) : -1;
}

}  // namespace shardline::kineto
