// The predicted peak's parts in words, for the summary and the sweep's recommendation.
#pragma once
#include <string>

#include "core/memory_at_peak.h"

namespace shardline {

// The parts that hold bytes, largest first: "activations 30.1 GiB, optimizer state 7.5 GiB, ...".
std::string memory_parts_text(const MemoryAtPeak& peak);

}  // namespace shardline
