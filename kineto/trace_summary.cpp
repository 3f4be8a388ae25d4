#include "kineto/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/interval_union.h"
#include "core/metrics.h"
#include "core/units.h"
#include "kineto/allocator_peaks.h"
#include "kineto/launch_index.h"

namespace shardline::kineto {
namespace {

double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

TraceSummary summarize_trace(const KinetoTrace& trace) {
  require_gpu_activity(trace);
  TraceSummary s;
  s.devices = gpu_devices(trace);
  s.path = trace.path;
  s.rank = trace.rank;
  s.world_size = trace.world_size;
  s.device = trace.device;
  s.events = trace.events;
  s.gpu_activities = static_cast<int64_t>(trace.gpu.size());
  s.skipped_by_category = trace.skipped_by_category;
  for (const GpuActivity& a : trace.gpu) {
    if (const CollectiveInfo* c = trace.collective_of(a)) {
      ++s.collectives_by_kind[static_cast<int>(c->kind)];
      if (!c->group_name.empty() || c->in_nelems >= 0) ++s.collectives_with_metadata;
    }
  }

  const LaunchIndex launches(trace);
  const std::vector<ProfilerStepWindow> windows = profiler_steps(trace);
  struct Acc {
    int64_t first_launch_ns = INT64_MAX, last_end_ns = INT64_MIN, first_start_ns = INT64_MAX;
    const GpuActivity* last_ending = nullptr;   // named when the step spans too long
    const GpuActivity* first_starting = nullptr;
    // Integer nanoseconds: exact, where doubles of epoch-scale microseconds keep only about 256 ns.
    std::vector<std::pair<int64_t, int64_t>> compute, comm;
    std::array<std::vector<std::pair<int64_t, int64_t>>, kNumCommKinds> by_kind;
    StepSummary out;
  };
  std::vector<Acc> acc(windows.size());
  const std::vector<MemoryEvent> memory = gpu_allocator_events(trace.memory);
  for (size_t w = 0; w < windows.size(); ++w) {
    acc[w].out.name = windows[w].name;
    acc[w].out.allocator = allocator_peaks(memory, windows[w].ts_ns, windows[w].end_ns);
  }
  for (const GpuActivity& a : trace.gpu) {
    const int64_t host_ns = launches.launch_ns(a);
    if (!launches.has_launch(a)) ++s.without_launch;
    const int w = step_of(windows, host_ns);
    if (w < 0) {
      ++s.outside_steps;
      continue;
    }
    Acc& x = acc[static_cast<size_t>(w)];
    ++x.out.activities;
    x.first_launch_ns = std::min(x.first_launch_ns, host_ns);
    if (a.end_ns() > x.last_end_ns) {
      x.last_end_ns = a.end_ns();
      x.last_ending = &a;
    }
    if (a.ts_ns < x.first_start_ns) {
      x.first_start_ns = a.ts_ns;
      x.first_starting = &a;
    }
    const std::pair<int64_t, int64_t> iv{a.ts_ns, a.end_ns()};
    if (const CollectiveInfo* c = trace.collective_of(a)) {
      x.comm.push_back(iv);
      x.by_kind[static_cast<int>(c->kind)].push_back(iv);
      ++x.out.collectives_by_kind[static_cast<int>(c->kind)];
    } else {
      x.compute.push_back(iv);
    }
  }
  // A GPU activity more than a timeline's span (10 days) from its step's first launch has a
  // corrupt "ts" or "dur": refused, as the import onto a Program refuses it.
  const auto check_span = [&](const StepSummary& o, const GpuActivity& a, int64_t distance_ns, const char* what) {
    if (distance_ns <= kMaxTraceDurationNs) return;
    throw InputError(trace.path, o.name + ": GPU activity \"" + trace.name_of(a).substr(0, 60) + "\" (ts " + number_text(us(a.ts_ns)) +
                                     " us, dur " + number_text(us(a.dur_ns)) + " us) " + what + " " + number_text(us(distance_ns)) +
                                     " us from the step's first launch, beyond the 10 days a step may span: its \"ts\" or \"dur\" is corrupt");
  };
  for (Acc& x : acc) {
    if (x.out.activities == 0) continue;
    StepSummary& o = x.out;
    check_span(o, *x.last_ending, x.last_end_ns - x.first_launch_ns, "ends");
    check_span(o, *x.first_starting, x.first_launch_ns - x.first_start_ns, "starts");
    o.step_time_us = us(x.last_end_ns - x.first_launch_ns);
    std::vector<std::pair<int64_t, int64_t>> any = x.compute;
    any.insert(any.end(), x.comm.begin(), x.comm.end());
    o.gpu_idle_us = std::max(0.0, o.step_time_us - us(union_length(std::move(any))));
    o.compute_busy_us = us(union_length(std::move(x.compute)));
    o.comm_busy_us = us(union_length(std::move(x.comm)));
    for (int k = 0; k < kNumCommKinds; ++k) o.comm_busy_by_kind_us[k] = us(union_length(std::move(x.by_kind[k])));
    o.exposed_comm_us = std::max(0.0, o.step_time_us - o.compute_busy_us);
    o.overlap_efficiency = o.comm_busy_us > 0 ? std::clamp(1.0 - o.exposed_comm_us / o.comm_busy_us, 0.0, 1.0) : 1.0;
    s.steps.push_back(std::move(o));
  }
  return s;
}

std::string summary_text(const TraceSummary& s) {
  std::ostringstream out;
  const auto known = [](int v) { return v >= 0 ? std::to_string(v) : std::string("?"); };  // distributedInfo may lack them
  out << "# " << s.path << ": rank " << known(s.rank) << " of " << known(s.world_size);
  if (!s.device.empty()) out << ", " << s.device;
  out << "; " << s.events << " events, " << s.gpu_activities << " GPU activities\n";
  out << "# NCCL kernels:";
  for (int k = 0; k < kNumCommKinds; ++k)
    out << " " << comm_kind_name(static_cast<CommKind>(k)) << " " << s.collectives_by_kind[k];
  out << " (" << s.collectives_with_metadata << " with collective metadata)\n";
  char line[320];
  std::snprintf(line, sizeof line, "%-22s %8s %11s %11s %11s %9s %9s %9s %9s %11s %8s %11s %10s %10s\n", "step", "gpu_ops", "step_ms",
                "compute_ms", "comm_ms", "ag_ms", "rs_ms", "ar_ms", "other_ms", "exposed_ms", "overlap", "gpu_idle_ms", "alloc_GiB", "resv_GiB");
  out << line;
  const auto gib = [](const std::optional<AllocatorPeaks>& a, bool reserved) {
    if (!a) return std::string("-");
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", static_cast<double>(reserved ? a->peak_reserved_bytes : a->peak_allocated_bytes) / (1LL << 30));
    return std::string(text);
  };
  for (const StepSummary& st : s.steps) {
    const auto& k = st.comm_busy_by_kind_us;
    std::snprintf(line, sizeof line, "%-22s %8d %11.3f %11.3f %11.3f %9.3f %9.3f %9.3f %9.3f %11.3f %8.3f %11.3f %10s %10s\n", st.name.c_str(),
                  st.activities, st.step_time_us / 1e3, st.compute_busy_us / 1e3, st.comm_busy_us / 1e3, k[0] / 1e3, k[1] / 1e3,
                  k[2] / 1e3, k[3] / 1e3, st.exposed_comm_us / 1e3, st.overlap_efficiency, st.gpu_idle_us / 1e3,
                  gib(st.allocator, false).c_str(), gib(st.allocator, true).c_str());
    out << line;
  }
  out << "# ag / rs / ar / other: busy time of NCCL all-gather, reduce-scatter, all-reduce and other kernels (each a union)\n";
  out << "# gpu_idle: the step's time with no GPU activity at all (where the host issues more slowly than the GPU runs)\n";
  out << "# alloc / resv: the most the caching allocator held allocated and reserved on the GPU in the step (the [memory] events' "
         "totals; - when the trace has none: profile with profile_memory=True)\n";
  if (s.outside_steps > 0) out << "# " << s.outside_steps << " GPU activities were launched outside every ProfilerStep\n";
  if (s.devices.size() > 1) {
    out << "# GPU activities on " << s.devices.size() << " devices (";
    for (size_t i = 0; i < s.devices.size(); ++i) out << (i ? ", " : "") << s.devices[i];
    out << "): the steps above count them together, where one rank's trace holds one GPU's work\n";
  }
  if (s.without_launch > 0)
    out << "# " << s.without_launch << " GPU activities have no recorded CPU launch: each is placed by its own start (a step's "
        << "time then starts at the GPU's, not the host's)\n";
  if (!s.skipped_by_category.empty()) {
    out << "# read and not used, by category:";
    for (const auto& [cat, n] : s.skipped_by_category) out << " " << cat << " " << n;
    out << "\n";
  }
  return out.str();
}

std::string summary_digest(const TraceSummary& s) {
  std::vector<double> steps;
  for (const StepSummary& st : s.steps) steps.push_back(st.step_time_us);
  std::sort(steps.begin(), steps.end());
  std::ostringstream out;
  out << "rank " << (s.rank >= 0 ? std::to_string(s.rank) : std::string("?")) << ": " << s.path << ": " << s.events << " events, " << s.gpu_activities << " GPU activities, NCCL";
  for (int k = 0; k < kNumCommKinds; ++k) out << " " << comm_kind_name(static_cast<CommKind>(k)) << " " << s.collectives_by_kind[k];
  out << "; " << s.steps.size() << " steps";
  // The lower of two middle steps, as the imported timeline reports its step (median_step_iteration).
  if (!steps.empty()) out << ", median " << steps[(steps.size() - 1) / 2] / 1e3 << " ms";
  out << "\n";
  return out.str();
}

nlohmann::json summary_to_json(const TraceSummary& s) {
  nlohmann::json j;
  j["path"] = s.path;
  j["rank"] = s.rank;
  j["world_size"] = s.world_size;
  j["device"] = s.device;
  j["events"] = s.events;
  j["gpu_activities"] = s.gpu_activities;
  for (int k = 0; k < kNumCommKinds; ++k)
    j["collectives"][std::string(comm_kind_name(static_cast<CommKind>(k)))] = s.collectives_by_kind[k];
  j["collectives_with_metadata"] = s.collectives_with_metadata;
  j["outside_steps"] = s.outside_steps;
  j["without_launch"] = s.without_launch;
  j["devices"] = s.devices;
  j["skipped_by_category"] = s.skipped_by_category;
  // What the busy times count: a trace alone cannot tell FSDP's copies from compute
  // (docs/import.md, "Without a scenario"), so these are not metrics.json's definitions.
  j["definitions"] = {{"compute_busy_us", "union of every non-NCCL GPU activity (kernels, memcpys, memsets; FSDP copy-ins and copy-outs included)"},
                      {"comm_busy_us", "union of every NCCL kernel (broadcasts and send/recv included)"},
                      {"step_time_us", "first CPU launch of the step's GPU work to the end of its last GPU activity"},
                      {"exposed_comm_us", "step_time_us - compute_busy_us"},
                      {"gpu_idle_us", "step_time_us - the union of every GPU activity: time with nothing running on the GPU"},
                      {"allocator", "the largest Total Allocated and Total Reserved of the step's [memory] events on a CUDA device, with the "
                                    "level the step starts at; null when the trace carries none"}};
  j["steps"] = nlohmann::json::array();
  for (const StepSummary& st : s.steps) {
    nlohmann::json x{{"name", st.name},
                     {"gpu_activities", st.activities},
                     {"step_time_us", st.step_time_us},
                     {"compute_busy_us", st.compute_busy_us},
                     {"comm_busy_us", st.comm_busy_us},
                     {"exposed_comm_us", st.exposed_comm_us},
                     {"overlap_efficiency", st.overlap_efficiency},
                     {"gpu_idle_us", st.gpu_idle_us},
                     {"allocator", st.allocator ? allocator_peaks_to_json(*st.allocator) : nlohmann::json(nullptr)}};
    for (int k = 0; k < kNumCommKinds; ++k) {
      const std::string kind(comm_kind_name(static_cast<CommKind>(k)));
      x["comm_busy_by_kind_us"][kind] = st.comm_busy_by_kind_us[k];
      x["collectives_by_kind"][kind] = st.collectives_by_kind[k];
    }
    j["steps"].push_back(std::move(x));
  }
  return j;
}

}  // namespace shardline::kineto
