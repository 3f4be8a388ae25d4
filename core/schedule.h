// The shared scheduler: the ONLY place that knows FSDP/HSDP/ZeRO-3 semantics
// (../shared/reference/fsdp-semantics.md). Turns a Scenario into the Program of one rank.
#pragma once
#include "core/program.h"
#include "core/scenario.h"

namespace shardline {

Program schedule(const Scenario& scenario);

// Requested duration of a unit's compute on the scenario's GPU (the compute model shared by
// the simulator and the executors): given times, or FLOPs / (peak(param dtype) * efficiency).
double forward_compute_us(const Scenario& scenario, const UnitSpec& unit);
double backward_compute_us(const Scenario& scenario, const UnitSpec& unit);  // incl. recompute

}  // namespace shardline
