// The simulator's public entry: interprets a Program (streams, events, ops) on the scenario's
// cluster and returns the predicted Timeline of one representative rank. Deterministic.
#pragma once
#include "core/program.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

struct SimOptions {
  // Reserved for a calibrated cluster profile (measured tables); null: analytical alpha-beta.
  const void* profile = nullptr;
};

Timeline simulate(const Scenario& scenario, const Program& program, const SimOptions& options = {});

}  // namespace shardline
