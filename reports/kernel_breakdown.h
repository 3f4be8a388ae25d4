// Each unit's predicted kernel breakdown (core/compute_model.h) as the run outputs show it: child
// slices inside every compute op of a predicted Chrome trace, and an HTML table per part of a
// transformer (embedding, block, head) with each kernel's time, share, FLOPs, bytes and bound.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/compute_model.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

// Trace events ("X", cat "kernel") for the compute intervals of a predicted timeline whose unit
// has kernels: the unit's forward or backward kernels laid end to end inside the interval, each
// scaled by interval / sum of kernel times (slow-down while communication runs and the compute
// overhead stretch them alike). Measured timelines get none: their kernels were not observed.
// Each is handed to `emit` as it is made, in interval order (the trace is written an event at a
// time and never holds them all).
void for_each_kernel_trace_event(const Timeline& timeline, const std::vector<UnitCompute>& breakdowns,
                                 const std::function<void(nlohmann::json&&)>& emit);

// The "Compute per unit" section of report.html; empty for explicit units.
std::string kernel_breakdown_html(const Scenario& scenario, const std::vector<UnitCompute>& breakdowns);

}  // namespace shardline
