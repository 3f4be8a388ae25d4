// A cluster profile fitted from a measured run's timeline, i.e. calibration from a real
// training run rather than from microbenchmarks (`shardline calibrate --from-trace`, after
// `shardline import`): per collective kind and group size, the median measured time of every
// distinct size and their alpha-beta fit; copy latency and bandwidth fitted on the copy-ins and
// copy-outs; the host's issue overhead (median gap between consecutive launches); and every
// unit's forward and backward compute. What a run cannot separate is left neutral and said so
// in docs/import.md: slow-downs of compute and communication by each other 1, event latency 0.
#pragma once
#include <string>

#include "core/profile.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

// Throws InputError("timeline") when the timeline is not measured or has no collective. A run
// without copies (zero-copy) gives copy_bandwidth_bytes_per_s 0: not measured.
ClusterProfile profile_from_timeline(const Timeline& timeline, const std::string& machine);

// Puts the profile's measured unit times in place of the scenario's compute model for every
// unit of the same name; returns how many units got them. `unmatched` (optional) receives the
// names of the profile's units that match no unit of the scenario, in the profile's order.
int apply_unit_times(Scenario& scenario, const ClusterProfile& profile, std::vector<std::string>* unmatched = nullptr);

}  // namespace shardline
