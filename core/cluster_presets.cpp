#include "core/cluster_presets.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/suggest.h"

namespace shardline {
namespace {

// Sources for every number: docs/scenario.md, section "Cluster presets". A preset's cluster name
// is its key. h100-sxm-dgx: DGX H100 (8x H100 SXM5 80GB, NVLink 4, 8x 400 Gb/s InfiniBand NDR);
// a100-80gb-dgx / a100-40gb-dgx: DGX A100 (8x A100 SXM4 80GB / 40GB, NVLink 3, 8x 200 Gb/s
// InfiniBand HDR); h200-sxm-hgx: HGX H200 (8x H200 SXM 141GB: the H100's SM and NVLink 4 with
// HBM3e; 8x 400 Gb/s NICs assumed), the H100's fitted compute-model numbers; h100-sxm-dgx-torch2.11
// / h200-sxm-hgx-torch2.11: the same clusters with chip numbers measured on PyTorch 2.11 (kernel
// microbenchmarks, memory efficiency on measured one-GPU FSDP2 steps; bench/gpu/fit_kernels.py); a100-80gb-roce / a100-40gb-roce: the same nodes on a 1600 Gb/s RoCE fabric as
// MosaicML's published A100 runs describe it, collectives as flat rings (chosen on the published
// fit rows, bench/published/README.md); host-cpu: MPI ranks on one host as devices, shared-memory
// transport. Latencies per ring step: NCCL's own tuning model for the ring's Simple protocol (the
// one it picks for FSDP's large buckets), src/graph/tuning.cc hwLat: NVLink 3.4 us, network 14 us.
constexpr const char* kPresets = R"json({
  "h100-sxm-dgx": {
    "gpu": {
      "name": "H100 SXM5 80GB",
      "peak_tflops": {"bf16": 989, "fp16": 989, "fp8": 1979, "fp32": 67},
      "efficiency": 0.45,
      "memory": "81559MiB",
      "copy_bandwidth": "1.6TB/s",
      "hbm_bandwidth": "3.35TB/s",
      "gemm_efficiency": 0.5988, "gemm_half_dim": 345, "attention_efficiency": 0.1834, "memory_efficiency": 0.8619,
      "kernel_launch": "5us",
      "context_memory": "768MiB", "nccl_memory": "656MiB", "allocator_fragmentation": 0.26, "allocator_pool_fragmentation": 0.018,
      "allocator_fragmentation_at_capacity": 0.068
    },
    "nodes": 1,
    "gpus_per_node": 8,
    "intra_node": {"bandwidth": "450GB/s", "latency": "3.4us"},
    "inter_node": {"bandwidth": "400Gbps", "latency": "14us"},
    "launch_overhead": "5us",
    "compute_slowdown_during_comm": 1.1,
    "hierarchical_collectives": true
  },
  "h200-sxm-hgx": {
    "same_as": "h100-sxm-dgx",
    "gpu": {"name": "H200 SXM 141GB", "memory": "143771MiB", "hbm_bandwidth": "4.8TB/s", "copy_bandwidth": "2.4TB/s"}
  },
  "h100-sxm-dgx-torch2.11": {
    "same_as": "h100-sxm-dgx",
    "gpu": {"gemm_efficiency": 0.7264, "gemm_half_dim": 98, "memory_efficiency": 0.65,
            "attention_efficiency": 0.875, "attention_backward_efficiency": 0.8031, "attention_half_seq": 252,
            "attention_backward_half_seq": 832, "attention_half_head_dim": 48,
            "kernel_launch": "1.71us", "copy_bandwidth": "1124GB/s"}
  },
  "h200-sxm-hgx-torch2.11": {
    "same_as": "h200-sxm-hgx",
    "gpu": {"gemm_efficiency": 0.712, "gemm_half_dim": 82, "memory_efficiency": 0.5875,
            "attention_efficiency": 0.9719, "attention_backward_efficiency": 0.85, "attention_half_seq": 256,
            "attention_backward_half_seq": 576, "attention_half_head_dim": 60,
            "kernel_launch": "1.08us", "copy_bandwidth": "1359GB/s"}
  },
  "a100-80gb-dgx": {
    "gpu": {
      "name": "A100 SXM4 80GB",
      "peak_tflops": {"bf16": 312, "fp16": 312, "fp32": 19.5},
      "efficiency": 0.5,
      "memory": "81920MiB",
      "copy_bandwidth": "1.0TB/s",
      "hbm_bandwidth": "2039GB/s",
      "gemm_efficiency": 0.8282, "gemm_half_dim": 472, "attention_efficiency": 0.3145, "memory_efficiency": 0.7227,
      "kernel_launch": "5us",
      "context_memory": "768MiB", "nccl_memory": "656MiB", "allocator_fragmentation": 0.26, "allocator_pool_fragmentation": 0.018,
      "allocator_fragmentation_at_capacity": 0.068
    },
    "nodes": 1,
    "gpus_per_node": 8,
    "intra_node": {"bandwidth": "300GB/s", "latency": "3.4us"},
    "inter_node": {"bandwidth": "200Gbps", "latency": "14us"},
    "launch_overhead": "5us",
    "compute_slowdown_during_comm": 1.1,
    "hierarchical_collectives": true
  },
  "a100-40gb-dgx": {
    "same_as": "a100-80gb-dgx",
    "gpu": {"name": "A100 SXM4 40GB", "memory": "40960MiB", "hbm_bandwidth": "1555GB/s"}
  },
  "a100-80gb-roce": {
    "same_as": "a100-80gb-dgx",
    "hierarchical_collectives": false
  },
  "a100-40gb-roce": {
    "same_as": "a100-80gb-dgx",
    "gpu": {"name": "A100 SXM4 40GB", "memory": "40960MiB", "hbm_bandwidth": "1555GB/s"},
    "hierarchical_collectives": false
  },
  "host-cpu": {
    "gpu": {
      "name": "host CPU core",
      "peak_tflops": {"fp32": 0.05, "bf16": 0.05, "fp16": 0.05},
      "efficiency": 0.5,
      "memory": "2GiB",
      "copy_bandwidth": "5GB/s",
      "hbm_bandwidth": "10GB/s",
      "gemm_efficiency": 0.5, "gemm_half_dim": 16, "attention_efficiency": 0.25, "memory_efficiency": 0.5,
      "kernel_launch": "20us"
    },
    "nodes": 1,
    "gpus_per_node": 2,
    "intra_node": {"bandwidth": "4GB/s", "latency": "1.5us"},
    "inter_node": {"bandwidth": "4GB/s", "latency": "1.5us"},
    "launch_overhead": "20us",
    "compute_slowdown_during_comm": 1.2,
    "hierarchical_collectives": false
  }
})json";

// A preset with "same_as" is that preset (itself resolved first) with its own fields merged over
// it: the A100 40GB is the 80GB chip with less, slower HBM; a "-torch2.11" preset is its hardware
// preset with the chip numbers of that software.
nlohmann::json resolve_preset(const nlohmann::json& all, const std::string& name, int depth = 0) {
  const nlohmann::json& preset = all.at(name);
  if (!preset.contains("same_as")) return preset;
  if (depth > 8) throw std::logic_error("cluster preset \"" + name + "\": a same_as cycle");
  nlohmann::json merged = resolve_preset(all, preset.at("same_as").get<std::string>(), depth + 1);
  nlohmann::json own = preset;
  own.erase("same_as");
  merged.merge_patch(own);
  return merged;
}

const nlohmann::json& presets() {
  static const nlohmann::json resolved = [] {
    const nlohmann::json all = nlohmann::json::parse(kPresets);
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, preset] : all.items()) out[name] = resolve_preset(all, name);
    return out;
  }();
  return resolved;
}

}  // namespace

std::vector<std::string> cluster_preset_names() {
  std::vector<std::string> names;
  for (const auto& [key, value] : presets().items()) names.push_back(key);
  return names;
}

nlohmann::json cluster_preset_json(std::string_view name, const std::string& where) {
  const auto& all = presets();
  const auto it = all.find(std::string(name));
  if (it == all.end()) {
    throw InputError(where, "unknown cluster preset \"" + std::string(name) + "\";" +
                                suggestion_tail(name, cluster_preset_names()));
  }
  return *it;
}

}  // namespace shardline
