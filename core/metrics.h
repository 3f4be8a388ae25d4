// The one definition of the step metrics (DESIGN.md "Metrics"), computed from a Timeline.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/timeline.h"

namespace shardline {

struct KindStats {
  int count = 0;
  int64_t bytes = 0;
  double busy_us = 0;  // union of this kind's intervals
};

struct Metrics {
  double step_time_us = 0;       // first op issued to last op finished (max over ranks)
  double compute_busy_us = 0;    // union of compute-stream compute intervals
  double comm_busy_us = 0;       // union of collective intervals
  double exposed_comm_us = 0;    // step time - compute busy
  double overlap_efficiency = 1; // 1 - exposed / comm busy (1 when no comm)
  double forward_us = 0;         // step start to end of the last forward compute
  double backward_us = 0;        // the rest of the step
  int64_t peak_memory_bytes = 0;
  int64_t memory_capacity_bytes = 0;
  bool fits_memory = true;       // peak <= capacity * (1 - margin)
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
