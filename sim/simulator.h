// The simulator's public entry: interprets a Program (streams, events, ops) on the scenario's
// cluster and returns the predicted Timeline of one representative rank. Deterministic.
#pragma once
#include <cstdint>

#include "core/program.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

struct ClusterProfile;  // core/profile.h: measured collective tables (calibrate)

struct SimOptions {
  // A calibrated cluster profile replaces the analytical alpha-beta costs; null: analytical.
  const ClusterProfile* profile = nullptr;
  // Out (optional): set to the number of engine events processed (bench/ reports events/s).
  uint64_t* events_processed = nullptr;
};

Timeline simulate(const Scenario& scenario, const Program& program, const SimOptions& options = {});
// The same for a Program the caller no longer needs: its ops move into the Timeline instead of
// being copied (a sweep point, a benchmark).
Timeline simulate(const Scenario& scenario, Program&& program, const SimOptions& options = {});

}  // namespace shardline
