// The kernels a transformer shorthand unit runs per micro-batch — GEMMs with their shapes, the
// FlashAttention core, memory-bound kernels with the bytes they move — and the end-of-step
// optimizer kernels. Pure counting: FLOPs and HBM bytes; core/compute_model.h times them.
// docs/compute-model.md lists every kernel and its formula.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/scenario.h"

namespace shardline {

enum class KernelKind { Gemm, Attention, Memory };

struct Kernel {
  std::string name;      // "qkv", "qkv.dgrad", "attention.bwd", "norm", ...
  KernelKind kind = KernelKind::Memory;
  double flops = 0;      // floating-point operations it executes
  double bytes = 0;      // HBM bytes it reads and writes
  int64_t min_dim = 0;   // GEMM: the smallest of m, n, k (what its efficiency depends on)
  int64_t launches = 1;  // kernel launches it takes (a for-loop optimizer: one per local tensor)
  // Attention: the sequence length and head dimension its efficiency depends on, and whether it
  // is the backward kernel (core/compute_model.h).
  int64_t seq_len = 0;
  int64_t head_dim = 0;
  bool backward = false;
};

struct UnitKernels {
  std::vector<Kernel> forward;
  std::vector<Kernel> backward;   // without recomputation
  std::vector<Kernel> recompute;  // re-run at the start of backward (checkpointing)
};

// The kernels of one unit of a transformer model; `e` is the activation width in bytes.
// Empty for TransformerPart::None.
UnitKernels transformer_unit_kernels(const TransformerSpec& t, TransformerPart part, int e);
// The same for a block checkpointed as `block_checkpointing` (UnitSpec::checkpointing), which
// differs from t.checkpointing on the blocks that `checkpoint_every` leaves out.
UnitKernels transformer_unit_kernels(const TransformerSpec& t, TransformerPart part, int e, Checkpointing block_checkpointing);

// FlashAttention's share of the s x s square it computes under a causal mask: the lower
// triangle plus the diagonal tiles (128 x 128), 0.5 x (1 + 128 / s), at most 1.
double causal_attention_fraction(int64_t seq_len);

// Launches of one multi-tensor kernel (PyTorch's fused and foreach ops: multi_tensor_apply) over
// `tensors` tensors of `elements` elements in all, reading and writing `lists` tensor lists: one
// launch per 320 chunks of 65536 elements, or per depth_to_max_tensors[lists - 1] tensors
// (110, 64, 48, 36, 30), whichever needs more.
int64_t multi_tensor_launches(int64_t elements, int64_t tensors, int lists);

// AdamW over this rank's shard of `local_tensors` parameters, as `implementation` runs it: fused,
// one multi-tensor kernel reading parameter, gradient and both states and writing parameter and
// states; foreach, torch.optim's seven passes over whole tensor lists (decay, exp_avg, exp_avg_sq,
// sqrt, div, add eps, update: 80 bytes per fp32 parameter against the fused kernel's 28); for-loop,
// the same passes launched once per tensor. And gradient-norm clipping (one foreach pass to take
// the norm, one to scale).
std::vector<Kernel> optimizer_step_kernels(int64_t shard_params, int master_bytes, int64_t optimizer_bytes_per_param,
                                           OptimizerImplementation implementation = OptimizerImplementation::Fused,
                                           int64_t local_tensors = 1);
std::vector<Kernel> grad_clip_kernels(int64_t shard_params, int master_bytes, int64_t local_tensors = 1);

}  // namespace shardline
