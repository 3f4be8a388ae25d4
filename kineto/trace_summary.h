// What a profiler trace says without a scenario: per profiler step (`ProfilerStep#N`, or the
// whole trace when it has none) the step time, compute and communication busy time, exposed
// communication, overlap efficiency and the most the caching allocator held, with the project's
// metric definitions (DESIGN.md, core/metrics.h) applied to GPU activities; and the NCCL
// collectives counted by kind.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/timeline.h"
#include "kineto/trace.h"

namespace shardline::kineto {

inline constexpr int kNumCommKinds = 4;

struct StepSummary {
  std::string name;              // "ProfilerStep#12", or "whole trace"
  int activities = 0;            // GPU kernels, memcpys and memsets launched in the step
  // First launch (CPU) of the step's GPU work to the end of its last GPU activity: "first op
  // issued to last op finished".
  double step_time_us = 0;
  double compute_busy_us = 0;    // union of every non-NCCL GPU activity (kernels, copies, memsets)
  double comm_busy_us = 0;       // union of the NCCL kernels
  std::array<double, kNumCommKinds> comm_busy_by_kind_us{};
  std::array<int, kNumCommKinds> collectives_by_kind{};
  double exposed_comm_us = 0;    // step time - compute busy
  // step time - the union of every GPU activity: time with nothing running on the GPU, which a
  // host that issues more slowly than the GPU runs leaves (a one-GPU run's exposed comm is all this)
  double gpu_idle_us = 0;
  double overlap_efficiency = 1; // 1 - exposed / comm busy, clamped to [0, 1]
  // What the caching allocator held over the step's window (kineto/allocator_peaks.h): known when
  // the trace was profiled with profile_memory=True.
  std::optional<AllocatorPeaks> allocator;
};

struct TraceSummary {
  std::string path;
  int rank = -1, world_size = -1;
  std::string device;
  int64_t events = 0;
  int64_t gpu_activities = 0;
  std::array<int64_t, kNumCommKinds> collectives_by_kind{};  // every NCCL kernel of the trace
  int64_t collectives_with_metadata = 0;  // NCCL kernels carrying "Collective name"
  int64_t outside_steps = 0;              // GPU activities launched outside every ProfilerStep
  int64_t without_launch = 0;             // GPU activities no recorded launch names: placed by their own start
  std::vector<int> devices;               // the GPUs its activities ran on (gpu_devices): one for one rank
  std::vector<StepSummary> steps;
  std::map<std::string, int64_t> skipped_by_category;
};

// Busy times are unions over the trace's integer nanoseconds: exact. Copy kernels count as
// compute and every NCCL kernel as comm (a trace alone cannot tell copies from compute), so these
// are not metrics.json's numbers (docs/import.md); summary_to_json says so in "definitions".
// Throws InputError(trace.path) when the trace has no GPU activity at all, or a GPU activity lies
// more than 10 days (kMaxTraceDurationNs) from its step's first launch (a corrupt "ts").
TraceSummary summarize_trace(const KinetoTrace& trace);

std::string summary_text(const TraceSummary& s);
// One line: the file, rank, events, GPU activities, NCCL kernels by kind, profiler steps and
// their median step time.
std::string summary_digest(const TraceSummary& s);
nlohmann::json summary_to_json(const TraceSummary& s);

}  // namespace shardline::kineto
