// How every table (summary, compare, regress, sweep) prints throughput, and why a throughput
// value is unknown, in the terms of the scenario key that would make it known.
#pragma once
#include <optional>
#include <string>

#include "core/workload.h"

namespace shardline {

// Rates of tokens or samples: whole numbers with thousands separators from 100 up
// ("1,234,567"), three significant digits below ("15.1", "0.523").
std::string format_per_s(double per_s);
std::string format_tflops(double tflops);         // "412.3"; three significant digits below 10 ("0.029")
std::string format_utilisation(double fraction);  // MFU / HFU: "41.7%"
// `format(*value)`, or "n/a" when unknown.
std::string format_or_na(const std::optional<double>& value, std::string (*format)(double));

enum class ThroughputValue { Samples, Tokens, ModelFlops, Mfu, Hfu };
// Why `value` is unknown for a step of `step_time_us` over `workload` ("give model.seq_len and
// model.micro_batch_size"); empty when it is known.
std::string throughput_unknown_reason(const Workload& workload, double step_time_us, ThroughputValue value);

}  // namespace shardline
