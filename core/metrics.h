// The one definition of the step metrics (DESIGN.md "Metrics"), computed from a Timeline.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/timeline.h"

namespace shardline {

struct KindStats {
  int count = 0;
  int64_t bytes = 0;
  double busy_us = 0;  // union of this kind's intervals
};

// What the step achieves (docs/outputs.md "Throughput"; formulas in metrics.cpp). Each value is
// unknown (nullopt; null in metrics.json) when the timeline's workload lacks what it needs
// (tokens, samples, FLOPs or the dense peak are 0) or the step time is 0.
struct Throughput {
  std::optional<double> samples_per_s;         // global
  std::optional<double> tokens_per_s;          // global
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> model_tflops_per_gpu;  // model FLOPs (no recomputation) per second per GPU / 1e12
  std::optional<double> mfu;                   // model FLOPs utilisation, a fraction of the dense peak
  std::optional<double> hfu;                   // hardware FLOPs utilisation: the same with recomputation
};

// The throughput of a step of `step_time_us` processing `workload`.
Throughput throughput_of(const Workload& workload, double step_time_us);

struct Metrics {
  double step_time_us = 0;       // first op issued to last op finished (max over ranks)
  double compute_busy_us = 0;    // union of compute-stream compute intervals
  double comm_busy_us = 0;       // union of collective intervals
  double exposed_comm_us = 0;    // step time - compute busy
  double overlap_efficiency = 1; // 1 - exposed / comm busy (1 when no comm)
  double forward_us = 0;         // step start to end of the last forward compute
  double backward_us = 0;        // the rest of the step
  int64_t peak_memory_bytes = 0;    // peak allocated (what the memory tracker counts)
  int64_t peak_reserved_bytes = 0;  // estimate: reserved_bytes(memory_reserve, peak allocated); 0 without samples
  int64_t memory_capacity_bytes = 0;
  bool fits_memory = true;          // peak reserved <= capacity * (1 - margin)
  Throughput throughput;
  std::map<std::string, KindStats> by_kind;  // keyed by op_kind_name, collectives and copies
};

// Metrics for one rank and iteration; rank -1: each rank's, combined with the max step time
// (the rank that defines the step) reported.
Metrics compute_metrics(const Timeline& timeline, int rank = -1, int iteration = -1);

// The step window of one rank and iteration, as step_time_us defines it: from the first op
// issued (the first start when the timeline records no issue times) to the last op finished.
// rank -1: the rank with the longest step (lowest on ties) among ranks with intervals;
// iteration -1: reported_iteration.
struct StepWindow {
  int rank = 0;
  int iteration = 0;
  double start_us = 0;
  double end_us = 0;
};
StepWindow step_window(const Timeline& timeline, int rank = -1, int iteration = -1);

// Union length of [start, end) intervals.
double union_length_us(std::vector<std::pair<double, double>> intervals);

nlohmann::json metrics_to_json(const Metrics& m);
Metrics metrics_from_json(const nlohmann::json& j);

}  // namespace shardline
