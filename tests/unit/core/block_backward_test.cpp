// The block's backward, walked op by op: what the forward keeps per checkpointing mode, the most
// the backward holds above it, and the weight gradients it makes. The expected peaks are worked by
// hand from the walk's order (docs/compute-model.md): for these shapes (tokens >= hidden, ffn
// several times hidden) it falls in the MLP's backward, once the product's gradient has made the
// gradients of SiLU(gate) and of up (SwiGLU), or GELU's input gradient (GELU).
#include "core/block_backward.h"

#include <gtest/gtest.h>

namespace shardline {
namespace {

TransformerSpec llama_block(Checkpointing mode) {
  TransformerSpec t;
  t.layers = 2;
  t.hidden = 4096;
  t.ffn_hidden = 14336;
  t.heads = 32;
  t.kv_heads = 8;
  t.vocab = 128256;
  t.seq_len = 8192;
  t.micro_batch_size = 1;
  t.checkpointing = mode;
  return t;
}

constexpr int64_t e = 2, T = 8192, h = 4096, kv = 8 * 128, f = 14336, a = 32;
constexpr int64_t Th = e * T * h, Tkv = e * T * kv, Tf = e * T * f, lse = 4 * T * a, rms = 4 * T;
// Every tensor an uncheckpointed block saves: the attention norm's input (the block input) and
// output and 1/rms, q, k, v after RoPE, the attention output and log-sum-exp, the MLP norm's input
// and output and 1/rms, SwiGLU's gate, up, SiLU(gate) and product.
constexpr int64_t none_bytes = 2 * Th + rms + Th + 2 * Tkv + Th + lse + 2 * Th + rms + 4 * Tf;
constexpr int64_t w2_grad = e * h * f;

TEST(BlockBackward, NoCheckpointingPeaksWithTheMlpGradientsAndW2sWeightGradient) {
  const BlockBackwardMemory m = block_backward_memory(llama_block(Checkpointing::None), e, Checkpointing::None);
  EXPECT_EQ(m.kept_bytes, none_bytes);
  // dY; w2's backward makes d product and w2's gradient and releases the product; the product's
  // backward makes d SiLU(gate) and d up.
  EXPECT_EQ(m.peak_above_kept_bytes, Th + 2 * Tf + w2_grad);
}

TEST(BlockBackward, FullCheckpointingAlsoHoldsWhatTheReRunMade) {
  const BlockBackwardMemory m = block_backward_memory(llama_block(Checkpointing::Full), e, Checkpointing::Full);
  EXPECT_EQ(m.kept_bytes, Th);  // the block input
  // The re-run makes every saved tensor but the block input (a fused norm's saved input is it).
  EXPECT_EQ(m.peak_above_kept_bytes, Th + (none_bytes - Th) + 2 * Tf + w2_grad);
}

TEST(BlockBackward, MegatronSelectiveReMakesTheAttentionOutputAndLogSumExp) {
  const BlockBackwardMemory m = block_backward_memory(llama_block(Checkpointing::Selective), e, Checkpointing::Selective);
  EXPECT_EQ(m.kept_bytes, none_bytes - lse);
  EXPECT_EQ(m.peak_above_kept_bytes, Th + (Th + lse) + 2 * Tf + w2_grad);
}

TEST(BlockBackward, TorchtitansOpPolicyKeepsItsListAndReRunsTheRest) {
  TransformerSpec t = llama_block(Checkpointing::SelectiveOp);
  t.projections = Projections::Separate;  // torchtitan's block: wq, wk, wv, wo, w1, w3, w2
  const BlockBackwardMemory m = block_backward_memory(t, e, Checkpointing::SelectiveOp);
  // The block input, wq's and wv's outputs, the attention output and log-sum-exp, w1's and w2's.
  EXPECT_EQ(m.kept_bytes, Th + Th + Tkv + Th + lse + Tf + Th);
  // Re-made: what an uncheckpointed block saves less the input, v, o, lse and w1's output.
  const int64_t rerun = none_bytes - (Th + Tkv + Th + lse + Tf);
  EXPECT_EQ(m.peak_above_kept_bytes, Th + rerun + 2 * Tf + w2_grad);
  // Fused projections (qkv, wo, gate/up, down): the policy keeps the first and third matmuls'
  // outputs, q, k (before RoPE) and v, and SwiGLU's gate and up; it re-runs wo and down.
  t.projections = Projections::Fused;
  const BlockBackwardMemory fused = block_backward_memory(t, e, Checkpointing::SelectiveOp);
  EXPECT_EQ(fused.kept_bytes, Th + (Th + Tkv) + Tkv + Th + lse + 2 * Tf);
  const int64_t fused_rerun = none_bytes - (Th + Tkv + Th + lse + 2 * Tf);
  EXPECT_EQ(fused.peak_above_kept_bytes, Th + fused_rerun + 2 * Tf + w2_grad);
  // GELU, fused (qkv, wo, up, down): the qkv output and up's.
  t.mlp = MlpKind::Gelu;
  EXPECT_EQ(block_backward_memory(t, e, Checkpointing::SelectiveOp).kept_bytes, Th + (Th + Tkv) + Tkv + Th + lse + Tf);
  // Without RoPE the kept projection outputs are the attention's q (and, fused, k) themselves:
  // counted once, not re-made.
  t.mlp = MlpKind::SwiGlu;
  t.position = PositionKind::Learned;
  const BlockBackwardMemory learned = block_backward_memory(t, e, Checkpointing::SelectiveOp);
  EXPECT_EQ(learned.kept_bytes, fused.kept_bytes);
  EXPECT_EQ(learned.peak_above_kept_bytes, fused.peak_above_kept_bytes - (Th + Tkv));
  t.projections = Projections::Separate;
  EXPECT_EQ(block_backward_memory(t, e, Checkpointing::SelectiveOp).peak_above_kept_bytes,
            m.peak_above_kept_bytes - Th);  // q (wq's output) no longer re-made
}

TEST(BlockBackward, GeluPeaksWhenItsInputGradientIsMade) {
  TransformerSpec t = llama_block(Checkpointing::None);
  t.mlp = MlpKind::Gelu;
  t.kv_heads = t.heads;  // MHA
  const BlockBackwardMemory m = block_backward_memory(t, e, Checkpointing::None);
  const int64_t mha_none = 2 * Th + rms + 3 * Th + Th + lse + 2 * Th + rms + 2 * Tf;  // GELU: its input and output
  EXPECT_EQ(m.kept_bytes, mha_none);
  EXPECT_EQ(m.peak_above_kept_bytes, Th + Tf + e * f * h);  // dY, d GELU(up), down's weight gradient
}

TEST(BlockBackward, MakesEveryWeightGradientOnce) {
  for (Checkpointing mode : {Checkpointing::None, Checkpointing::Selective, Checkpointing::SelectiveOp, Checkpointing::Full}) {
    const BlockBackwardMemory m = block_backward_memory(llama_block(mode), e, mode);
    EXPECT_EQ(m.weight_grad_bytes, e * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h));
  }
}

TEST(BlockBackward, ShortSequencesPeakWithEveryWeightGradient) {
  // One token: the activations are small beside the weights, so the walk holds the most near its
  // end, every weight gradient made and little else.
  TransformerSpec t = llama_block(Checkpointing::None);
  t.seq_len = 1;
  const BlockBackwardMemory m = block_backward_memory(t, e, Checkpointing::None);
  const int64_t peak_live = m.kept_bytes + m.peak_above_kept_bytes;
  EXPECT_GE(peak_live, m.weight_grad_bytes);
  EXPECT_LE(peak_live, m.weight_grad_bytes + 8 * e * h);  // and a few one-token gradients and workspaces
}

TEST(BlockBackward, AnEagerNormKeepsItsFp32CopyAndTheCheckpointKeepsTheBlockInput) {
  TransformerSpec t = llama_block(Checkpointing::Full);
  t.norm_impl = NormImpl::EagerFp32;
  const BlockBackwardMemory full = block_backward_memory(t, e, Checkpointing::Full);
  EXPECT_EQ(full.kept_bytes, Th);
  // Each norm saves an fp32 copy and its 16-bit normalized input in place of its input.
  const int64_t eager_none = none_bytes - 2 * Th + 2 * (4 + e) * T * h;
  EXPECT_EQ(full.peak_above_kept_bytes, Th + eager_none + 2 * Tf + w2_grad);
  t.checkpointing = Checkpointing::None;
  EXPECT_EQ(block_backward_memory(t, e, Checkpointing::None).kept_bytes, eager_none);
}

}  // namespace
}  // namespace shardline
