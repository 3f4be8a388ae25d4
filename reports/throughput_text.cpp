// Throughput formatting (see reports/throughput_text.h).
#include "reports/throughput_text.h"

#include <cmath>
#include <cstdio>

namespace shardline {

std::string format_per_s(double per_s) {
  char buf[64];
  if (!(std::fabs(per_s) >= 100)) {
    std::snprintf(buf, sizeof buf, "%.3g", per_s);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.0f", std::round(std::fabs(per_s)));
  const std::string digits = buf;
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (per_s < 0 ? "-" : "") + out;
}

std::string format_tflops(double tflops) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(tflops) >= 10 ? "%.1f" : "%.3g", tflops);
  return buf;
}

std::string format_utilisation(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string format_or_na(const std::optional<double>& value, std::string (*format)(double)) {
  return value ? format(*value) : std::string("n/a");
}

std::string throughput_unknown_reason(const Workload& w, double step_time_us, ThroughputValue value) {
  if (!(step_time_us > 0)) return "the step time is 0";
  const char* no_flops = "the model's FLOPs are unknown: give the units' forward_flops / backward_flops (not times)";
  const char* no_peak = "the GPU has no dense peak for policy.param_dtype in cluster.gpu.peak_tflops";
  switch (value) {
    case ThroughputValue::Samples:
      return w.samples_per_step > 0 ? "" : "give model.micro_batch_size";
    case ThroughputValue::Tokens:
      if (w.tokens_per_step > 0) return "";
      if (w.samples_per_step > 0) return "give model.seq_len";
      return w.seq_len > 0 ? "give model.micro_batch_size" : "give model.seq_len and model.micro_batch_size";
    case ThroughputValue::ModelFlops:
      return w.model_flops_per_step > 0 ? "" : no_flops;
    case ThroughputValue::Mfu:
      if (!(w.model_flops_per_step > 0)) return no_flops;
      return w.peak_flops_per_gpu > 0 ? "" : no_peak;
    case ThroughputValue::Hfu:
      if (!(w.hardware_flops_per_step > 0)) return no_flops;
      return w.peak_flops_per_gpu > 0 ? "" : no_peak;
  }
  return "";
}

}  // namespace shardline
