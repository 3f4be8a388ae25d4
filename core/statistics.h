// Order statistics of measured samples, one definition for every report and fit: the median,
// interpolated quantiles, and the relative spread (p90 - p10) / median that profiles record.
#pragma once
#include <vector>

namespace shardline {

// The middle value (the mean of the two middle values for an even count); 0 when empty.
double median(std::vector<double> values);
// The p-quantile (0..1), linearly interpolated between order statistics; 0 when empty.
double quantile(std::vector<double> values, double p);
// (p90 - p10) / p50 of repeated measurements (interpolated quantiles); 0 for fewer than two
// samples or a median of 0.
double relative_spread(std::vector<double> values);

}  // namespace shardline
