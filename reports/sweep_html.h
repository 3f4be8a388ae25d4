// The sweep's self-contained report.html: the objective and overlap efficiency against the bucket
// size or another varied number (docs/sweep.md says which; one line per setting of the other
// axes), peak memory against the objective with the Pareto front and the GPU capacity marked, the
// recommendation, and the invalid rows with reasons.
#pragma once
#include <string>

#include "reports/sweep.h"

namespace shardline {

std::string sweep_html(const SweepResult& result);

}  // namespace shardline
