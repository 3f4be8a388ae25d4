// The compute model shared by the simulator and the executors: how long a unit's forward and
// backward take on the scenario's GPU. Transformer shorthand units: the sum of their kernels
// (core/kernels.h), each timed by a roofline — max(FLOPs / (peak x efficiency), bytes /
// (HBM bandwidth x memory efficiency)) + a per-kernel launch cost, where a GEMM's efficiency
// grows with its smallest dimension d as gemm_efficiency x d / (d + gemm_half_dim) and
// FlashAttention at attention_efficiency x s / (s + attention_half_seq) x d / (d +
// attention_half_head_dim) (its backward with its own efficiency and half sequence), s its
// sequence length, d its head dimension. Explicit units: given times, or FLOPs /
// (peak x gpu.efficiency). docs/compute-model.md has the formulas and where each GPU number
// comes from.
#pragma once
#include <string>
#include <vector>

#include "core/kernels.h"
#include "core/scenario.h"

namespace shardline {

struct TimedKernel {
  std::string name;
  KernelKind kind = KernelKind::Memory;
  double flops = 0;
  double bytes = 0;
  double time_us = 0;         // roofline + launch
  int64_t launches = 1;       // kernel launches it takes (Kernel::launches)
  bool memory_bound = false;  // the bytes term was the larger
};

// A unit's kernels with their times; backward includes the recomputed forward (names
// "recompute.*") first, as the checkpointed backward runs it.
struct UnitCompute {
  std::vector<TimedKernel> forward, backward;
  double forward_us = 0, backward_us = 0;
};

// Dense peak FLOP/s of the compute dtype (policy.param_dtype). InputError when the GPU lacks it.
double peak_flops_per_s(const Scenario& scenario);

TimedKernel time_kernel(const Kernel& kernel, const GpuSpec& gpu, double peak_flops_per_s);

// Transformer parts only (asserts unit.part != None).
UnitCompute unit_compute(const Scenario& scenario, const UnitSpec& unit);

// For each unit, the first unit of the same transformer part and checkpointing mode (itself for
// the first one and for explicit units): such units run the same kernels.
std::vector<size_t> representative_units(const Scenario& scenario);

// Every unit's kernels (index = unit; empty for explicit units): what the report and the trace
// show as each unit's kernel breakdown. Units of one part and checkpointing mode share their
// kernels (timed once).
std::vector<UnitCompute> unit_breakdowns(const Scenario& scenario);

// Every unit's forward and backward (with recomputation) duration per micro-batch: what the
// scheduler puts on its compute ops. Transformer units of one part are timed once.
struct UnitComputeTime {
  double forward_us = 0, backward_us = 0;
  // Kernel launches of each (Kernel::launches summed; explicit units: one each).
  int64_t forward_launches = 1, backward_launches = 1;
};
std::vector<UnitComputeTime> unit_compute_us(const Scenario& scenario);

// Requested duration of a unit's compute, per micro-batch.
double forward_compute_us(const Scenario& scenario, const UnitSpec& unit);
double backward_compute_us(const Scenario& scenario, const UnitSpec& unit);  // incl. recompute

// End-of-step compute of this rank for a transformer shorthand model: AdamW over the local
// shard and gradient clipping (empty for explicit units).
std::vector<TimedKernel> optimizer_step_compute(const Scenario& scenario, int64_t shard_params, int64_t local_tensors = 1);
std::vector<TimedKernel> grad_clip_compute(const Scenario& scenario, int64_t shard_params, int64_t local_tensors = 1);
double total_us(const std::vector<TimedKernel>& kernels);
int64_t total_launches(const std::vector<TimedKernel>& kernels);

}  // namespace shardline
