// The sweep's self-contained report.html: step time and overlap efficiency against the bucket
// size (one line per setting of the other axes), peak memory against step time with the Pareto
// front and the GPU capacity marked, the recommendation, and the invalid rows with reasons.
#pragma once
#include <string>

#include "reports/sweep.h"

namespace shardline {

std::string sweep_html(const SweepResult& result);

}  // namespace shardline
