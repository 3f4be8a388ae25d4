#include "core/block_backward.h"

#include <algorithm>

namespace shardline {
namespace {

// Live bytes through the walk: starts at what the forward kept, records the most it reaches.
class Walk {
 public:
  explicit Walk(int64_t kept) : live_(kept), peak_(kept), kept_(kept) {}
  void alloc(int64_t bytes) {
    live_ += bytes;
    peak_ = std::max(peak_, live_);
  }
  void release(int64_t bytes) { live_ -= bytes; }
  int64_t peak_above_kept() const { return peak_ - kept_; }

 private:
  int64_t live_, peak_, kept_;
};

// A tensor the backward needs: kept by the forward, re-made by the recompute, or neither (its
// mode does not save it). Released once, at its last use.
struct Saved {
  int64_t bytes = 0;
  bool kept = false;
  bool recomputed = false;
  void release(Walk& w) {
    if (kept || recomputed) w.release(bytes);
    kept = recomputed = false;
  }
};

}  // namespace

int64_t norm_saved_input_bytes(const TransformerSpec& t, int e, int64_t tokens) {
  return (t.norm_impl == NormImpl::EagerFp32 ? 4 + e : e) * tokens * t.hidden;
}

int64_t norm_stats_bytes(const TransformerSpec& t, int64_t tokens) { return (t.norm == NormKind::LayerNorm ? 8 : 4) * tokens; }

int64_t norm_saved_bytes(const TransformerSpec& t, int e, int64_t tokens) {
  return norm_saved_input_bytes(t, e, tokens) + e * tokens * t.hidden + norm_stats_bytes(t, tokens);
}

BlockBackwardMemory block_backward_memory(const TransformerSpec& t, int e, Checkpointing mode) {
  const int64_t T = t.seq_len * t.micro_batch_size;
  const int64_t h = t.hidden, kv = t.kv_dim(), f = t.ffn_hidden, a = t.heads;
  const int64_t Th = e * T * h, Tkv = e * T * kv, Tf = e * T * f;
  const bool swiglu = t.mlp == MlpKind::SwiGlu;
  const bool eager_norm = t.norm_impl == NormImpl::EagerFp32;
  const int64_t stats = norm_stats_bytes(t, T);
  const int64_t mask = t.dropout > 0 ? T * h : 0;  // one byte per element

  // What the forward saves with no checkpointing (docs/compute-model.md's list). A norm's saved
  // input (norm_saved_input_bytes) is, fused, the block input x itself (attention norm: `x` here)
  // or the residual x2 (MLP norm).
  Saved x{Th}, n1_in{eager_norm ? norm_saved_input_bytes(t, e, T) : 0}, stats1{stats}, y1{Th};
  Saved q{Th}, k{Tkv}, v{Tkv}, o{Th}, lse{4 * T * a}, attention_mask{mask};
  Saved n2_in{norm_saved_input_bytes(t, e, T)}, stats2{stats}, y2{Th}, mlp_mask{mask};
  Saved gate{Tf}, up{swiglu ? Tf : 0}, act{Tf}, product{swiglu ? Tf : 0};  // GELU: up in `gate`, GELU(up) in `act`
  Saved* const none_saved[] = {&n1_in, &stats1, &y1, &q, &k, &v, &o, &lse, &attention_mask,
                               &n2_in, &stats2, &y2, &mlp_mask, &gate, &up, &act, &product};
  Saved recomputed_output{Th};  // Megatron's core-attention recompute re-makes the attention output
  // Kept by torchtitan's op policy beyond what the backward itself uses: wq's output (before RoPE)
  // and, for SwiGLU, w2's; with fused projections, q and k before RoPE (the fused projection's
  // output beside v). They are released when the block's backward ends.
  int64_t policy_extra = 0;
  int64_t recompute_temporary = 0;  // the forward re-run's last output, released when it stops

  x.kept = true;  // the block input: a fused norm's saved input, else the checkpoint's input
  switch (mode) {
    case Checkpointing::None:
      for (Saved* s : none_saved) s->kept = true;
      if (eager_norm) x.kept = false;  // not saved: the norm saved its fp32 copy
      break;
    case Checkpointing::Selective:
      for (Saved* s : none_saved) s->kept = true;
      if (eager_norm) x.kept = false;
      lse.kept = false;
      lse.recomputed = recomputed_output.recomputed = true;
      break;
    case Checkpointing::SelectiveOp: {
      const bool fused = t.projections == Projections::Fused;
      for (Saved* s : none_saved) s->recomputed = true;
      v.recomputed = o.recomputed = lse.recomputed = gate.recomputed = false;
      v.kept = o.kept = lse.kept = gate.kept = true;
      if (fused) {  // the first and third matmuls: qkv and SwiGLU's gate/up (its up beside the gate)
        up.recomputed = false;
        up.kept = swiglu;
      }
      // The kept projection output holding q (wq's; fused, qkv's q and k beside v): with RoPE it is
      // kept beyond what the backward uses; without, it is the attention's own q (and k), not re-made.
      if (t.position == PositionKind::Rope) {
        policy_extra = Th + (fused ? Tkv : 0);
      } else {
        q.recomputed = false;
        q.kept = true;
        if (fused) {
          k.recomputed = false;
          k.kept = true;
        }
      }
      if (swiglu && !fused) policy_extra += Th;  // w2's output
      recompute_temporary = Th;  // the output projection's, re-run to re-make the residual
      break;
    }
    case Checkpointing::Full:
      for (Saved* s : none_saved) s->recomputed = true;
      // The re-run's last output, w2's, when it runs the whole block; with the early stop it ends
      // once w2 has saved its input (core/kernels.cpp), and the last output is that input, kept.
      recompute_temporary = t.rerun_skips_down_projection() ? 0 : Th;
      break;
  }
  int64_t kept = policy_extra;
  int64_t recomputed = 0;
  for (const Saved* s : {&x, &recomputed_output}) kept += s->kept ? s->bytes : 0;
  for (const Saved* s : none_saved) {
    kept += s->kept ? s->bytes : 0;
    recomputed += s->recomputed ? s->bytes : 0;
  }
  recomputed += recomputed_output.recomputed ? recomputed_output.bytes : 0;

  Walk w(kept);
  int64_t weight_grads = 0;
  auto weight_grad = [&](int64_t elements) {
    w.alloc(e * elements);
    weight_grads += e * elements;
  };
  w.alloc(Th);  // the incoming gradient dY, which also flows on to the residual x2
  if (recomputed > 0) {
    w.alloc(recomputed);
    w.alloc(recompute_temporary);
    w.release(recompute_temporary);
  }
  // MLP: out = x2 + dropout(down(hidden)).
  int64_t d_out = 0;  // a dropout's input gradient (else dY itself)
  if (mask > 0) {
    w.alloc(d_out = Th);
    mlp_mask.release(w);
  }
  if (swiglu) {
    w.alloc(Tf);  // d product (w2's input gradient)
    weight_grad(f * h);
    product.release(w);
    w.release(d_out);
    w.alloc(Tf);  // d SiLU(gate) = d product x up
    w.alloc(Tf);  // d up = d product x SiLU(gate)
    w.release(Tf);  // d product
    act.release(w);
    up.release(w);
    w.alloc(Tf);  // d gate (SiLU's backward)
    w.release(Tf);  // d SiLU(gate)
    gate.release(w);
    w.alloc(Th);  // d y2 from w1
    weight_grad(h * f);
    w.release(Tf);  // d gate
    w.alloc(Th);  // d y2 from w3, summed into the first
    weight_grad(h * f);
    w.release(Tf);  // d up
    w.release(Th);
  } else {
    w.alloc(Tf);  // d GELU(up)
    weight_grad(f * h);
    act.release(w);
    w.release(d_out);
    w.alloc(Tf);  // d up (GELU's backward)
    w.release(Tf);
    gate.release(w);
    w.alloc(Th);  // d y2
    weight_grad(h * f);
    w.release(Tf);
  }
  y2.release(w);
  if (eager_norm) {  // the fp32 gradient, then its 16-bit cast
    w.alloc(4 * T * h);
    w.alloc(Th);
    w.release(4 * T * h);
  } else {
    w.alloc(Th);  // d x2 from the norm, summed into dY's buffer
  }
  weight_grad(h);
  w.release(Th);  // d y2
  n2_in.release(w);
  stats2.release(w);
  w.release(Th);  // the norm's d x2, summed in place

  // Attention: x2 = x + dropout(wo(attention(q, k, v))).
  d_out = 0;
  if (mask > 0) {
    w.alloc(d_out = Th);
    attention_mask.release(w);
  }
  w.alloc(Th);  // d attention output
  weight_grad(h * h);
  w.release(d_out);
  // Megatron's recompute gives the attention its own output: the kept one was the projection's.
  if (recomputed_output.recomputed) o.release(w);
  w.alloc(Th + 2 * Tkv);  // d q, d k, d v
  // FlashAttention's backward workspace: an fp32 dq accumulator and an fp32 term per row and head;
  // with GQA, d k and d v expanded to every query head before they are summed.
  const int64_t workspace = 4 * T * h + 4 * T * a + (kv < h ? 2 * Th : 0);
  w.alloc(workspace);
  w.release(workspace);
  w.release(Th);  // d attention output
  for (Saved* s : {&q, &k, &v, &lse, &recomputed_output, &o}) s->release(w);
  if (t.position == PositionKind::Rope) {  // RoPE's backward: new gradients of q and k
    w.alloc(Th + Tkv);
    w.release(Th + Tkv);
  }
  w.alloc(Th);  // d y1 from wq
  weight_grad(h * h);
  w.alloc(Th);  // from wk, summed into it
  weight_grad(h * kv);
  w.release(Th);
  w.alloc(Th);  // from wv
  weight_grad(h * kv);
  w.release(Th);
  w.release(Th + 2 * Tkv);  // d q, d k, d v
  y1.release(w);
  if (eager_norm) {
    w.alloc(4 * T * h);
    w.alloc(Th);
    w.release(4 * T * h);
  } else {
    w.alloc(Th);  // d x from the norm, summed into d x2: the block's input gradient
  }
  weight_grad(h);
  w.release(Th);  // d y1
  n1_in.release(w);
  stats1.release(w);
  x.release(w);  // the norm's saved input, or the checkpoint's, whose backward ends here
  w.release(Th);

  BlockBackwardMemory m;
  m.kept_bytes = kept;
  m.peak_above_kept_bytes = w.peak_above_kept();
  m.weight_grad_bytes = weight_grads;
  return m;
}

}  // namespace shardline
