#include "core/compute_model.h"

#include <algorithm>
#include <array>

#include "core/error.h"
#include "core/invariant.h"

namespace shardline {

double peak_flops_per_s(const Scenario& s) {
  const auto it = s.cluster.gpu.peak_tflops.find(s.policy.param_dtype);
  if (it == s.cluster.gpu.peak_tflops.end()) {
    throw InputError("cluster.gpu.peak_tflops", "no peak throughput for the param dtype \"" +
                                                    std::string(dtype_name(s.policy.param_dtype)) +
                                                    "\"; add it or give units forward/backward times");
  }
  return it->second * 1e12;
}

TimedKernel time_kernel(const Kernel& k, const GpuSpec& gpu, double peak) {
  double efficiency = 1.0;
  if (k.kind == KernelKind::Gemm) {
    const double d = static_cast<double>(k.min_dim);
    efficiency = gpu.gemm_efficiency * d / (d + gpu.gemm_half_dim);
  } else if (k.kind == KernelKind::Attention) {
    const double base = k.backward ? gpu.attention_backward_efficiency.value_or(gpu.attention_efficiency) : gpu.attention_efficiency;
    const double half_seq = k.backward ? gpu.attention_backward_half_seq.value_or(gpu.attention_half_seq) : gpu.attention_half_seq;
    const double s = static_cast<double>(k.seq_len), d = static_cast<double>(k.head_dim);
    efficiency = base * (s > 0 ? s / (s + half_seq) : 1.0) * (d > 0 ? d / (d + gpu.attention_half_head_dim) : 1.0);
  }
  const double compute_us = k.flops > 0 ? k.flops / (peak * efficiency) * 1e6 : 0.0;
  const double memory_us = k.bytes > 0 ? k.bytes / (gpu.hbm_bandwidth_bytes_per_s * gpu.memory_efficiency) * 1e6 : 0.0;
  TimedKernel t;
  t.name = k.name;
  t.kind = k.kind;
  t.flops = k.flops;
  t.bytes = k.bytes;
  t.memory_bound = memory_us > compute_us;
  t.launches = k.launches;
  t.time_us = std::max(compute_us, memory_us) + gpu.kernel_launch_us * static_cast<double>(k.launches);
  return t;
}

namespace {

std::vector<TimedKernel> timed(const std::vector<Kernel>& kernels, const GpuSpec& gpu, double peak) {
  std::vector<TimedKernel> out;
  out.reserve(kernels.size());
  for (const Kernel& k : kernels) out.push_back(time_kernel(k, gpu, peak));
  return out;
}

}  // namespace

double total_us(const std::vector<TimedKernel>& kernels) {
  double sum = 0;
  for (const TimedKernel& k : kernels) sum += k.time_us;
  return sum;
}

int64_t total_launches(const std::vector<TimedKernel>& kernels) {
  int64_t sum = 0;
  for (const TimedKernel& k : kernels) sum += k.launches;
  return sum;
}

UnitCompute unit_compute(const Scenario& s, const UnitSpec& unit) {
  SHARDLINE_CHECK(unit.part != TransformerPart::None && s.model.transformer, "a transformer unit timed without its part or the transformer shorthand");
  const UnitKernels kernels =
      transformer_unit_kernels(*s.model.transformer, unit.part, dtype_bytes(s.policy.param_dtype), unit.checkpointing);
  const double peak = peak_flops_per_s(s);
  const GpuSpec& gpu = s.cluster.gpu;
  UnitCompute out;
  out.forward = timed(kernels.forward, gpu, peak);
  out.backward = timed(kernels.recompute, gpu, peak);
  for (TimedKernel& k : timed(kernels.backward, gpu, peak)) out.backward.push_back(std::move(k));
  out.forward_us = total_us(out.forward);
  out.backward_us = total_us(out.backward);
  return out;
}

std::vector<size_t> representative_units(const Scenario& s) {
  std::vector<size_t> rep(s.model.units.size());
  std::array<std::array<int, 4>, 4> first_of{};  // [part][checkpointing]
  for (auto& row : first_of) row.fill(-1);
  for (size_t u = 0; u < s.model.units.size(); ++u) {
    rep[u] = u;
    const TransformerPart part = s.model.units[u].part;
    if (part == TransformerPart::None) continue;
    int& first = first_of[static_cast<size_t>(part)][static_cast<size_t>(s.model.units[u].checkpointing)];
    if (first < 0) first = static_cast<int>(u);
    rep[u] = static_cast<size_t>(first);
  }
  return rep;
}

std::vector<UnitCompute> unit_breakdowns(const Scenario& s) {
  std::vector<UnitCompute> out(s.model.units.size());
  const std::vector<size_t> rep = representative_units(s);
  for (size_t u = 0; u < out.size(); ++u) {
    if (s.model.units[u].part == TransformerPart::None) continue;
    out[u] = rep[u] == u ? unit_compute(s, s.model.units[u]) : out[rep[u]];
  }
  return out;
}

std::vector<UnitComputeTime> unit_compute_us(const Scenario& s) {
  std::vector<UnitComputeTime> out(s.model.units.size());
  const std::vector<size_t> rep = representative_units(s);
  for (size_t u = 0; u < out.size(); ++u) {
    if (rep[u] != u) {
      out[u] = out[rep[u]];
      continue;
    }
    const UnitSpec& unit = s.model.units[u];
    if (unit.part != TransformerPart::None) {
      const UnitCompute c = unit_compute(s, unit);
      out[u] = {c.forward_us, c.backward_us, total_launches(c.forward), total_launches(c.backward)};
    } else {
      out[u] = {forward_compute_us(s, unit), backward_compute_us(s, unit)};
    }
  }
  return out;
}

double forward_compute_us(const Scenario& s, const UnitSpec& unit) {
  if (unit.forward_time_us) return *unit.forward_time_us;
  if (unit.part != TransformerPart::None) return unit_compute(s, unit).forward_us;
  return unit.forward_flops / (peak_flops_per_s(s) * s.cluster.gpu.efficiency) * 1e6;
}

double backward_compute_us(const Scenario& s, const UnitSpec& unit) {
  if (unit.part != TransformerPart::None) return unit_compute(s, unit).backward_us;
  const double backward = unit.backward_time_us ? *unit.backward_time_us
                                                : unit.backward_flops / (peak_flops_per_s(s) * s.cluster.gpu.efficiency) * 1e6;
  return backward + (unit.recompute_forward ? forward_compute_us(s, unit) : 0.0);
}

std::vector<TimedKernel> optimizer_step_compute(const Scenario& s, int64_t shard_params, int64_t local_tensors) {
  if (!s.model.transformer) return {};
  return timed(optimizer_step_kernels(shard_params, dtype_bytes(s.policy.master_dtype), s.policy.optimizer_bytes_per_param,
                                      s.policy.optimizer_implementation, local_tensors),
               s.cluster.gpu, peak_flops_per_s(s));
}

std::vector<TimedKernel> grad_clip_compute(const Scenario& s, int64_t shard_params, int64_t local_tensors) {
  if (!s.model.transformer) return {};
  return timed(grad_clip_kernels(shard_params, dtype_bytes(s.policy.master_dtype), local_tensors), s.cluster.gpu,
               peak_flops_per_s(s));
}

}  // namespace shardline
