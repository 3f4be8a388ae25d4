#include "core/transformer.h"

#include <algorithm>
#include <string>

namespace shardline {
namespace {

// Bytes of the per-row statistics a norm saves (fp32): LayerNorm mean and 1/std, RMSNorm 1/rms.
int64_t norm_stats_bytes(const TransformerSpec& t, int64_t tokens) {
  return (t.norm == NormKind::LayerNorm ? 8 : 4) * tokens;
}

// What a norm over `tokens` rows keeps for backward, with its output (the next layer's input,
// which that layer saves): fused, its input and output; eager fp32 (NormImpl::EagerFp32), the
// fp32 copy of its input (which pow and the multiply by 1/rms save) in place of the input, and
// the 16-bit normalized input before the weight (which the multiply by the weight saves).
int64_t norm_saved_bytes(const TransformerSpec& t, int e, int64_t tokens) {
  const int64_t per_element = t.norm_impl == NormImpl::EagerFp32 ? 4 + 2 * e : 2 * e;
  return per_element * tokens * t.hidden + norm_stats_bytes(t, tokens);
}

// Activation gradients alive at once at the start of a block's backward: the incoming and
// outgoing residual gradients and the MLP's hidden gradients (GELU: two of width f; SwiGLU:
// three, the product's, the up projection's and the SiLU's).
int64_t block_gradient_workspace_bytes(const TransformerSpec& t, int e, int64_t tokens) {
  const int64_t f_tensors = t.mlp == MlpKind::Gelu ? 2 : 3;
  return e * tokens * (2 * t.hidden + f_tensors * t.ffn_hidden);
}

std::vector<TensorSpec> block_tensors(const TransformerSpec& t) {
  const int64_t h = t.hidden, kv = t.kv_dim(), f = t.ffn_hidden;
  std::vector<TensorSpec> ts = {
      {"attention.wq.weight", h * h},
      {"attention.wk.weight", h * kv},
      {"attention.wv.weight", h * kv},
      {"attention.wo.weight", h * h},
  };
  if (t.bias) {
    ts.push_back({"attention.wq.bias", h});
    ts.push_back({"attention.wk.bias", kv});
    ts.push_back({"attention.wv.bias", kv});
    ts.push_back({"attention.wo.bias", h});
  }
  if (t.mlp == MlpKind::SwiGlu) {
    ts.push_back({"feed_forward.w1.weight", h * f});  // gate
    ts.push_back({"feed_forward.w3.weight", h * f});  // up
    ts.push_back({"feed_forward.w2.weight", f * h});  // down
    if (t.bias) {
      ts.push_back({"feed_forward.w1.bias", f});
      ts.push_back({"feed_forward.w3.bias", f});
      ts.push_back({"feed_forward.w2.bias", h});
    }
  } else {
    ts.push_back({"feed_forward.up.weight", h * f});
    ts.push_back({"feed_forward.down.weight", f * h});
    if (t.bias) {
      ts.push_back({"feed_forward.up.bias", f});
      ts.push_back({"feed_forward.down.bias", h});
    }
  }
  ts.push_back({"attention_norm.weight", h});
  ts.push_back({"ffn_norm.weight", h});
  if (t.bias && t.norm == NormKind::LayerNorm) {
    ts.push_back({"attention_norm.bias", h});
    ts.push_back({"ffn_norm.bias", h});
  }
  return ts;
}

}  // namespace

int64_t block_saved_bytes_no_checkpointing(const TransformerSpec& t, int e) {
  const int64_t tokens = t.seq_len * t.micro_batch_size;
  const int64_t h = t.hidden, kv = t.kv_dim(), f = t.ffn_hidden;
  int64_t bytes = 0;
  bytes += norm_saved_bytes(t, e, tokens);                    // attention norm: input, output (QKV's input)
  bytes += e * tokens * (h + 2 * kv);                         // FlashAttention's inputs q, k, v (after RoPE)
  bytes += e * tokens * h;                                    // its output (also the output projection's input)
  bytes += 4 * tokens * t.heads;                              // its log-sum-exp, fp32
  bytes += norm_saved_bytes(t, e, tokens);                    // MLP norm: input, output
  bytes += (t.mlp == MlpKind::Gelu ? 2 : 4) * e * tokens * f; // GELU: its input and output; SwiGLU: gate, up, SiLU(gate), product
  if (t.dropout > 0) bytes += 2 * tokens * h;                 // two residual dropout masks (1 byte per element)
  return bytes;
}

std::vector<UnitSpec> transformer_units(const TransformerSpec& t, int e) {
  const int64_t h = t.hidden, tokens = t.seq_len * t.micro_batch_size, V = t.vocab;
  std::vector<UnitSpec> units;

  UnitSpec embedding;
  embedding.name = "embedding";
  embedding.part = TransformerPart::Embedding;
  embedding.tensors = {{"tok_embeddings.weight", V * h}};
  if (t.position == PositionKind::Learned) embedding.tensors.push_back({"pos_embeddings.weight", t.seq_len * h});
  // A tied weight cannot be in two groups: tied embeddings make the embedding and the head one
  // group, kept after forward, whether or not it is the model's root (torchtitan's apply_fsdp).
  embedding.root = t.root_group || t.tied_embeddings;
  embedding.activation_bytes = 8 * tokens;  // the int64 token ids (the embedding output is block 0's input)
  if (t.dropout > 0) embedding.activation_bytes += tokens * h;  // its dropout mask
  units.push_back(std::move(embedding));

  const int64_t none_bytes = block_saved_bytes_no_checkpointing(t, e);
  const int64_t workspace = block_gradient_workspace_bytes(t, e, tokens);
  for (int64_t layer = 0; layer < t.layers; ++layer) {
    UnitSpec block;
    block.name = "layers." + std::to_string(layer);
    block.part = TransformerPart::Block;
    block.tensors = block_tensors(t);
    block.checkpointing = t.block_checkpointing(layer);
    switch (block.checkpointing) {
      case Checkpointing::None:
        block.activation_bytes = none_bytes;
        block.backward_transient_bytes = workspace;
        break;
      case Checkpointing::Selective:
        // Megatron-LM's core-attention recompute: the attention kernel's own state (its
        // log-sum-exp) is not kept; q, k, v are the checkpoint's inputs and the output is kept by
        // the output projection, so only the log-sum-exp is saved less.
        block.activation_bytes = none_bytes - 4 * tokens * t.heads;
        block.backward_transient_bytes = workspace + 4 * tokens * t.heads;
        break;
      case Checkpointing::SelectiveOp: {
        // torchtitan's op-level policy keeps the checkpoint's input, the attention output and its
        // log-sum-exp, and the outputs of the matmuls at odd positions: wq, wv, then SwiGLU's w1
        // and w2 or GELU's up. The backward re-runs the rest (core/kernels.cpp), so what the
        // policy does not keep of an uncheckpointed block's tensors is alive again then.
        const int64_t kv = t.kv_dim(), f = t.ffn_hidden;
        const int64_t mlp_kept = t.mlp == MlpKind::SwiGlu ? f + h : f;
        block.activation_bytes = e * tokens * (h + h + kv + h + mlp_kept) + 4 * tokens * t.heads;
        const int64_t kept_beyond_input = block.activation_bytes - e * tokens * h;
        block.backward_transient_bytes = std::max<int64_t>(0, none_bytes - kept_beyond_input) + workspace;
        break;  // a partial re-run, like selective: not `recompute_forward` (the whole forward)
      }
      case Checkpointing::Full:
        block.activation_bytes = e * tokens * h;  // the checkpoint's input, the block input
        block.backward_transient_bytes = none_bytes + workspace;  // the forward re-run, then gradients
        block.recompute_forward = true;
        break;
    }
    if (layer == t.layers - 1) block.reshard_after_forward = t.last_block_reshard_after_forward;
    units.push_back(std::move(block));
  }

  UnitSpec head;
  head.name = "norm+output";
  head.part = TransformerPart::Head;
  head.root = t.root_group || t.tied_embeddings;
  // torchtitan's [norm, output]: not resharded after forward, "since FSDP would prefetch them
  // immediately after the forward pass".
  if (!head.root) head.reshard_after_forward = false;
  head.tensors = {{"norm.weight", h}};
  if (t.bias && t.norm == NormKind::LayerNorm) head.tensors.push_back({"norm.bias", h});
  if (!t.tied_embeddings) head.tensors.push_back({"output.weight", V * h});
  // Norm input and output; the logits are the model's output (16-bit, or the model's own fp32
  // copy), held as the training loop and the loss say (policy.output_lifetime; only the fused loss
  // saves them for its backward).
  head.activation_bytes = norm_saved_bytes(t, e, tokens);
  head.output_bytes = e * tokens * V;
  head.output_saved_by_loss = t.loss == LossKind::Fused;
  if (t.loss == LossKind::Fp32) {
    head.loss_activation_bytes = 4 * tokens * V;              // log-softmax output, fp32
    if (t.fp32_logits) {
      head.output_bytes = 4 * tokens * V;                     // the model returns the fp32 copy
      head.forward_transient_bytes = e * tokens * V;          // the 16-bit logits until its cast
    } else {
      head.forward_transient_bytes = 4 * tokens * V;          // the loss's fp32 copy of the logits
    }
    // The NLL gradient and the log-softmax gradient, both fp32, alive together in the log-softmax
    // backward (then the fp32 logit gradient and its 16-bit cast, 4 + e bytes per logit, less).
    head.loss_backward_transient_bytes = 8 * tokens * V;
  } else if (t.loss == LossKind::Eager16Bit) {
    head.loss_activation_bytes = e * tokens * V;              // log-softmax output, 16-bit
    // The NLL gradient and the log-softmax gradient, alive together in its backward.
    head.loss_backward_transient_bytes = 2 * e * tokens * V;
  } else {
    head.loss_activation_bytes = 4 * tokens;                  // log-sum-exp per row, fp32
    head.loss_backward_transient_bytes = e * tokens * V;     // 16-bit logit gradient
  }
  // The head's own backward (after the model's pre-backward hooks): the 16-bit logit gradient it
  // consumes, and dX.
  head.backward_transient_bytes = e * tokens * V + e * tokens * h;
  units.push_back(std::move(head));
  return units;
}

}  // namespace shardline
