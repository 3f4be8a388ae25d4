// The memory of one transformer block's backward, walked op by op in the order autograd runs it:
// each op allocates the gradients it makes (of its inputs and weights), then the saved tensors and
// gradients it was the last to use are released. The block's peak is the most that walk holds
// above what the forward kept for it (docs/compute-model.md, "Memory model"). Measured on one rank
// of FSDP2 HSDP runs (bench/gpu/framework_rank.py): the peak falls inside the MLP's backward,
// with SwiGLU's gate, up and SiLU outputs, three hidden gradients and w2's weight gradient alive,
// not with every recomputed tensor, every weight gradient and every activation gradient at once.
#pragma once
#include <cstdint>

#include "core/scenario.h"

namespace shardline {

struct BlockBackwardMemory {
  // Bytes the forward keeps for the block's backward (the unit's activation_bytes).
  int64_t kept_bytes = 0;
  // The most the backward holds above kept_bytes: the incoming gradient, what checkpointing
  // recomputes, activation gradients, kernel workspaces, and the weight gradients made so far.
  int64_t peak_above_kept_bytes = 0;
  // The block's weight gradients (16-bit, `e` bytes each), all made by the end of its backward.
  int64_t weight_grad_bytes = 0;
};

// `e`: the width of activations and of the weight gradients autograd makes (policy.param_dtype).
BlockBackwardMemory block_backward_memory(const TransformerSpec& t, int e, Checkpointing mode);

// What a norm over `tokens` rows keeps for backward. Its input: fused, the input itself (e bytes an
// element); eager fp32 (NormImpl::EagerFp32), in its place the fp32 copy (which pow and the
// multiply by 1/rms save) and the 16-bit normalized input before the weight (which the multiply
// by the weight saves). Its per-row statistics, fp32: LayerNorm mean and 1/std, RMSNorm 1/rms.
int64_t norm_saved_input_bytes(const TransformerSpec& t, int e, int64_t tokens);
int64_t norm_stats_bytes(const TransformerSpec& t, int64_t tokens);
// Both, with its output (the next layer's input, which that layer saves): a head norm's share.
int64_t norm_saved_bytes(const TransformerSpec& t, int e, int64_t tokens);

}  // namespace shardline
