#include "core/transformer.h"

#include <algorithm>
#include <string>

#include "core/block_backward.h"

namespace shardline {
namespace {

// A block's parameter tensors as its modules hold them: fused projections are one weight (and
// bias) for q, k and v and one for SwiGLU's gate and up (core/scenario.h, Projections).
std::vector<TensorSpec> block_tensors(const TransformerSpec& t) {
  const int64_t h = t.hidden, kv = t.kv_dim(), f = t.ffn_hidden;
  const bool fused = t.projections == Projections::Fused;
  std::vector<TensorSpec> ts;
  auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    ts.push_back({name + ".weight", in * out, out});
    if (t.bias) ts.push_back({name + ".bias", out});
  };
  if (fused) {
    linear("attention.wqkv", h, h + 2 * kv);
  } else {
    linear("attention.wq", h, h);
    linear("attention.wk", h, kv);
    linear("attention.wv", h, kv);
  }
  linear("attention.wo", h, h);
  if (t.mlp == MlpKind::SwiGlu) {
    if (fused) {
      linear("feed_forward.w13", h, 2 * f);  // gate and up
    } else {
      linear("feed_forward.w1", h, f);  // gate
      linear("feed_forward.w3", h, f);  // up
    }
    linear("feed_forward.w2", f, h);  // down
  } else {
    linear("feed_forward.up", h, f);
    linear("feed_forward.down", f, h);
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

std::vector<UnitSpec> transformer_units(const TransformerSpec& t, int e) {
  const int64_t h = t.hidden, tokens = t.seq_len * t.micro_batch_size, V = t.vocab;
  std::vector<UnitSpec> units;

  UnitSpec embedding;
  embedding.name = "embedding";
  embedding.part = TransformerPart::Embedding;
  embedding.tensors = {{"tok_embeddings.weight", V * h, V}};
  if (t.position == PositionKind::Learned) embedding.tensors.push_back({"pos_embeddings.weight", t.seq_len * h, t.seq_len});
  // A tied weight cannot be in two groups: tied embeddings make the embedding and the head one
  // group, kept after forward, whether or not it is the model's root (torchtitan's apply_fsdp).
  embedding.root = t.root_group || t.tied_embeddings;
  embedding.activation_bytes = 8 * tokens;  // the int64 token ids (the embedding output is block 0's input)
  if (t.dropout > 0) embedding.activation_bytes += tokens * h;  // its dropout mask
  // Tied, the embedding's backward makes a second V x h gradient beside the head's, which holds
  // the table's gradient already, until autograd adds it in.
  if (t.tied_embeddings) embedding.backward_transient_bytes = e * V * h;
  units.push_back(std::move(embedding));

  for (int64_t layer = 0; layer < t.layers; ++layer) {
    UnitSpec block;
    block.name = "layers." + std::to_string(layer);
    block.part = TransformerPart::Block;
    block.tensors = block_tensors(t);
    block.checkpointing = t.block_checkpointing(layer);
    // What the forward keeps and the most the backward holds above it, walked op by op
    // (core/block_backward.h); its weight gradients are part of that most.
    const BlockBackwardMemory memory = block_backward_memory(t, e, block.checkpointing);
    block.activation_bytes = memory.kept_bytes;
    block.backward_transient_bytes = memory.peak_above_kept_bytes;
    block.backward_transient_makes_weight_grads = true;
    // Full: the backward re-runs the forward first (its kernels, up to the down projection with
    // checkpoint_early_stop, and those of selective and selective_op's partial re-runs are in the
    // kernel lists, core/kernels.cpp); the flag marks the op as a re-run.
    block.recompute_forward = block.checkpointing == Checkpointing::Full;
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
  if (!t.tied_embeddings) head.tensors.push_back({"output.weight", V * h, V});
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
