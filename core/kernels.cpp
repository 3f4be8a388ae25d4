#include "core/kernels.h"
#include "core/invariant.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace shardline {
namespace {

using D = double;

// Collects a phase's kernels; sizes are per micro-batch, T = tokens, e = activation bytes.
class KernelList {
 public:
  explicit KernelList(int e) : e_(e) {}

  // One GEMM (m x k) . (k x n): 2mnk FLOPs; reads both operands, writes the result.
  void gemm(std::string name, int64_t m, int64_t n, int64_t k) {
    Kernel g;
    g.name = std::move(name);
    g.kind = KernelKind::Gemm;
    g.flops = 2.0 * D(m) * D(n) * D(k);
    g.bytes = D(e_) * (D(m) * D(k) + D(k) * D(n) + D(m) * D(n));
    g.min_dim = std::min({m, n, k});
    out_.push_back(std::move(g));
  }
  // A linear layer of `in` -> `out` features over `tokens` rows, forward.
  void linear_forward(const std::string& name, int64_t tokens, int64_t in, int64_t out) { gemm(name, tokens, out, in); }
  // Its backward: input gradient, weight gradient (reduces over the tokens), bias gradient.
  void linear_backward(const std::string& name, int64_t tokens, int64_t in, int64_t out, bool bias) {
    gemm(name + ".dgrad", tokens, in, out);
    gemm(name + ".wgrad", out, in, tokens);
    if (bias) memory(name + ".bias_grad", D(e_) * D(tokens) * D(out));
  }
  // A memory-bound kernel, or `launches` kernels that together move `bytes` (an eager op sequence).
  void memory(std::string name, double bytes, int64_t launches = 1) {
    Kernel k;
    k.name = std::move(name);
    k.kind = KernelKind::Memory;
    k.bytes = bytes;
    k.launches = launches;
    out_.push_back(std::move(k));
  }
  void attention(std::string name, double flops, double bytes, const TransformerSpec& t, bool backward, int64_t launches = 1) {
    Kernel k;
    k.launches = launches;
    k.seq_len = t.seq_len;
    k.head_dim = t.head_dim();
    k.backward = backward;
    k.name = std::move(name);
    k.kind = KernelKind::Attention;
    k.flops = flops;
    k.bytes = bytes;
    out_.push_back(std::move(k));
  }
  std::vector<Kernel> take() { return std::move(out_); }
  int e() const { return e_; }

 private:
  int e_;
  std::vector<Kernel> out_;
};

struct Shape {
  int64_t T, h, kv, f, V, heads;
  D e;
};

Shape shape_of(const TransformerSpec& t, int e) {
  return Shape{t.seq_len * t.micro_batch_size, t.hidden, t.kv_dim(), t.ffn_hidden, t.vocab, t.heads, D(e)};
}

// Forward FLOPs of the attention core (scores and context) over the causal part of the square.
double attention_forward_flops(const TransformerSpec& t) {
  return 4.0 * D(t.micro_batch_size) * D(t.seq_len) * D(t.seq_len) * D(t.hidden) * causal_attention_fraction(t.seq_len);
}

// A norm over T x h elements (x, 16-bit: e bytes each). Fused: one kernel reads x, writes y; its
// backward is two kernels, as PyTorch's layer_norm and rms_norm run it: the input gradient's reads
// x and dy and writes dx (3e), the weight gradient's (GammaBeta) reads x and dy again (2e), 5e in
// all. Fused one-pass (torchtitan's Triton fused_rmsnorm): one kernel reads x and dy once, writes
// dx and per-block partial weight gradients (blocks x h fp32, not counted), then a second launch
// sums the partials: 3e. Eager fp32 (torchtitan's "rmsnorm", fms's
// LayerNormParameterized): x.float(), pow(2), mean, + eps, rsqrt, multiply, type_as, * weight,
// 28 + 4e bytes per element in 8 launches; autograd's backward runs the weight multiply's two
// gradients and the weight's sum over tokens (6e), the casts back (e + 4 each way), the multiply
// by 1/rms and its sum over the row (24), the mean's expanded gradient (4), pow's backward
// (self.pow(1), x 2, x grad: 28), the sum of x's two gradients (12): 76 + 8e bytes in 16 launches
// (the per-row scalars' 3 of them move T-sized data, not counted in bytes).
void norm_forward(KernelList& k, const std::string& name, const TransformerSpec& t, const Shape& s) {
  const D Th = D(s.T) * D(s.h);
  if (t.norm_impl == NormImpl::EagerFp32) k.memory(name, (28 + 4 * s.e) * Th, 8);
  else k.memory(name, 2 * s.e * Th);
}
void norm_backward(KernelList& k, const std::string& name, const TransformerSpec& t, const Shape& s) {
  const D Th = D(s.T) * D(s.h);
  if (t.norm_impl == NormImpl::EagerFp32) k.memory(name + ".bwd", (76 + 8 * s.e) * Th, 16);
  else k.memory(name + ".bwd", (t.norm_impl == NormImpl::FusedOnePass ? 3 : 5) * s.e * Th, 2);
}

// RoPE on q and k, T x (h + kv) elements. Fused: read and write each (2e). Eager complex
// (torchtitan): x.float(), the complex multiply by freqs_cis, type_as: 16 + 2e bytes per element
// in 3 launches per tensor, and the same backward (the casts, the multiply by the conjugate).
// Eager rotation (fms): x.float(), a broadcast multiply by the 2 x 2 rotations that writes two
// fp32 values per element, the sum over the pair, type_as: 32 + 2e in 4 launches per tensor; its
// backward mirrors it (the cast, the broadcast multiply, the sum back over the pair, the cast).
// Eager stack (bench/gpu/fsdp_step.py): the cos and sin tables cast to the activation dtype (2
// launches on seq x head_dim / 2 elements, not counted in bytes), four products of a half by a
// table (each reads and writes half the tensor: 4e), a difference and a sum of two products (1.5e
// each), torch.stack's two strided copies back into pairs (2e): 9e in 10 launches per tensor.
// Its backward: the difference's negation (e), four products by the tables (4e), each half's two
// gradients summed (3e), each half's gradient written into a zeroed full tensor (a fill and a
// copy: 2e each), the two full tensors summed (3e): 15e in 12 launches per tensor.
void rope(KernelList& k, const std::string& name, const TransformerSpec& t, const Shape& s, bool backward) {
  const D elements = D(s.T) * D(s.h + s.kv);
  switch (t.rope_impl) {
    case RopeImpl::Fused: k.memory(name, 2 * s.e * elements); break;
    case RopeImpl::EagerComplex: k.memory(name, (16 + 2 * s.e) * elements, 2 * 3); break;
    case RopeImpl::EagerRotation: k.memory(name, (32 + 2 * s.e) * elements, 2 * 4); break;
    case RopeImpl::EagerStack: k.memory(name, (backward ? 15 : 9) * s.e * elements, 2 * (backward ? 12 : 10)); break;
  }
}

// The block's input projections: one GEMM for q, k and v, or three (Projections::Separate).
// Separate, autograd sums the three input gradients (two adds of T x h, 3e each).
void qkv_forward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  if (t.projections == Projections::Fused) return k.linear_forward("qkv", s.T, s.h, s.h + 2 * s.kv);
  k.linear_forward("wq", s.T, s.h, s.h);
  k.linear_forward("wk", s.T, s.h, s.kv);
  k.linear_forward("wv", s.T, s.h, s.kv);
}
void qkv_backward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  if (t.projections == Projections::Fused) return k.linear_backward("qkv", s.T, s.h, s.h + 2 * s.kv, t.bias);
  k.linear_backward("wq", s.T, s.h, s.h, t.bias);
  k.linear_backward("wk", s.T, s.h, s.kv, t.bias);
  k.linear_backward("wv", s.T, s.h, s.kv, t.bias);
  k.memory("qkv_input_grad_add", 2 * 3 * s.e * D(s.T) * D(s.h), 2);
}

// The MLP's first GEMM(s): GELU's up; SwiGLU's gate and up as one GEMM or two
// (Projections::Separate, whose two input gradients autograd sums: one add, 3e per element).
void mlp_in_forward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  if (t.mlp == MlpKind::Gelu) return k.linear_forward("mlp_up", s.T, s.h, s.f);
  if (t.projections == Projections::Fused) return k.linear_forward("mlp_gate_up", s.T, s.h, 2 * s.f);
  k.linear_forward("mlp_gate", s.T, s.h, s.f);
  k.linear_forward("mlp_up", s.T, s.h, s.f);
}
void mlp_in_backward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  if (t.mlp == MlpKind::Gelu) return k.linear_backward("mlp_up", s.T, s.h, s.f, t.bias);
  if (t.projections == Projections::Fused) return k.linear_backward("mlp_gate_up", s.T, s.h, 2 * s.f, t.bias);
  k.linear_backward("mlp_up", s.T, s.h, s.f, t.bias);
  k.linear_backward("mlp_gate", s.T, s.h, s.f, t.bias);
  k.memory("mlp_input_grad_add", 3 * s.e * D(s.T) * D(s.h));
}

// SwiGLU in PyTorch ops: SiLU(gate), then its product with up (5e per element of T x f, 2
// launches); backward, the product's two gradients and SiLU's (9e, 3 launches).
// Launches beyond one: a fused norm's backward runs two kernels (the input gradient, and the
// weight's (and bias') gradient summed over tokens; one-pass: both in one, then the partial
// weight gradients summed); FlashAttention's backward three (the
// row-wise dot of dO and O, the backward kernel, dQ converted from its fp32 accumulator).
void block_forward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  const D Th = D(s.T) * D(s.h), Tf = D(s.T) * D(s.f);
  norm_forward(k, "attention_norm", t, s);
  qkv_forward(k, t, s);
  if (t.position == PositionKind::Rope) rope(k, "rope", t, s, false);
  k.attention("attention", attention_forward_flops(t), s.e * D(s.T) * D(2 * s.h + 2 * s.kv) + 4.0 * D(s.T) * D(s.heads), t, false);
  k.linear_forward("attention_out", s.T, s.h, s.h);
  if (t.dropout > 0) k.memory("attention_dropout", (2 * s.e + 1) * Th);
  k.memory("residual_add", 3 * s.e * Th);
  norm_forward(k, "ffn_norm", t, s);
  mlp_in_forward(k, t, s);
  if (t.mlp == MlpKind::SwiGlu) k.memory("swiglu", 5 * s.e * Tf, 2);
  else k.memory("gelu", 2 * s.e * Tf);
  k.linear_forward("mlp_down", s.T, s.f, s.h);
  if (t.dropout > 0) k.memory("mlp_dropout", (2 * s.e + 1) * Th);
  k.memory("residual_add", 3 * s.e * Th);
}

void block_backward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  const D Th = D(s.T) * D(s.h), Tf = D(s.T) * D(s.f);
  if (t.dropout > 0) k.memory("mlp_dropout.bwd", (2 * s.e + 1) * Th);
  k.linear_backward("mlp_down", s.T, s.f, s.h, t.bias);
  if (t.mlp == MlpKind::SwiGlu) k.memory("swiglu.bwd", 9 * s.e * Tf, 3);
  else k.memory("gelu.bwd", 3 * s.e * Tf);
  mlp_in_backward(k, t, s);
  norm_backward(k, "ffn_norm", t, s);
  k.memory("residual_grad_add", 3 * s.e * Th);
  if (t.dropout > 0) k.memory("attention_dropout.bwd", (2 * s.e + 1) * Th);
  k.linear_backward("attention_out", s.T, s.h, s.h, t.bias);
  k.attention("attention.bwd", 2.5 * attention_forward_flops(t),
              s.e * D(s.T) * D(2 * (s.h + 2 * s.kv) + 2 * s.h) + 4.0 * D(s.T) * D(s.heads), t, true, 3);
  if (t.position == PositionKind::Rope) rope(k, "rope.bwd", t, s, true);
  qkv_backward(k, t, s);
  norm_backward(k, "attention_norm", t, s);
  k.memory("residual_grad_add", 3 * s.e * Th);
}

// What torchtitan's op-level selective checkpointing re-runs in a block's backward: every
// kernel whose output it does not keep. It keeps the attention kernel's outputs and the matmuls
// at odd positions of the block's forward order, and re-runs every memory-bound kernel of the
// forward (norms, RoPE, the activation, residual adds, dropouts). Separate projections: wq, wk,
// wv, wo, then SwiGLU's w1, w3, w2 or GELU's up, down, so it re-runs wk, wo and the MLP's second
// matmul (w3, or GELU's down). Fused: qkv, wo, gate/up (GELU: up), down, so it re-runs wo and
// down.
std::vector<Kernel> selective_op_recompute(const TransformerSpec& t, const Shape& s, const std::vector<Kernel>& forward) {
  KernelList k(static_cast<int>(s.e));
  if (t.projections == Projections::Fused) {
    k.linear_forward("attention_out", s.T, s.h, s.h);
    k.linear_forward("mlp_down", s.T, s.f, s.h);
  } else {
    k.linear_forward("wk", s.T, s.h, s.kv);
    k.linear_forward("attention_out", s.T, s.h, s.h);
    if (t.mlp == MlpKind::SwiGlu) k.linear_forward("mlp_up", s.T, s.h, s.f);
    else k.linear_forward("mlp_down", s.T, s.f, s.h);
  }
  std::vector<Kernel> out = k.take();
  for (const Kernel& f : forward)
    if (f.kind == KernelKind::Memory) out.push_back(f);
  return out;
}

// A checkpoint's early stop (TransformerSpec::checkpoint_early_stop): the re-run ends once the
// last tensor the backward needs is saved again. The block's forward ends with the down
// projection, whose matmul saves its input before it runs, then (with dropout) the dropout, which
// saves its mask, and the residual add, which saves nothing. So the re-run skips the final add and,
// without dropout, the down projection (the traced Llama steps re-run 6 of a block's 7 GEMMs).
void stop_early(std::vector<Kernel>& recompute, const TransformerSpec& t) {
  const auto named = [](const char* name) { return [name](const Kernel& k) { return k.name == name; }; };
  const auto add = std::find_if(recompute.rbegin(), recompute.rend(), named("residual_add"));
  SHARDLINE_CHECK(add != recompute.rend(), "a block re-run without its final residual add");
  recompute.erase(std::prev(add.base()));
  if (t.rerun_skips_down_projection()) {
    const auto down = std::find_if(recompute.begin(), recompute.end(), named("mlp_down"));
    if (down != recompute.end()) recompute.erase(down);
  }
}

void embedding_forward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  const D Th = D(s.T) * D(s.h);
  k.memory("embedding_gather", 2 * s.e * Th + 8.0 * D(s.T));
  if (t.position == PositionKind::Learned) k.memory("position_add", 3 * s.e * Th);
  if (t.dropout > 0) k.memory("embedding_dropout", (2 * s.e + 1) * Th);
}

void embedding_backward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  const D Th = D(s.T) * D(s.h);
  if (t.dropout > 0) k.memory("embedding_dropout.bwd", (2 * s.e + 1) * Th);
  if (t.position == PositionKind::Learned) k.memory("position_grad", s.e * Th + s.e * D(t.seq_len) * D(s.h));
  k.memory("embedding_grad_zero", s.e * D(s.V) * D(s.h));
  k.memory("embedding_scatter_add", 2 * s.e * Th + 8.0 * D(s.T));
  // Tied, the table already holds the head's weight gradient: autograd adds this one into it
  // (AccumulateGrad, in place: read both, write one).
  if (t.tied_embeddings) k.memory("embedding_grad_accumulate", 3 * s.e * D(s.V) * D(s.h));
}

// Bytes the loss moves per logit, forward or backward.
// fp32: cast the logits to fp32, log-softmax (read, write); backward the NLL gradient (write),
// log-softmax backward (read 2, write 1), the cast to 16-bit.
// eager_16bit: log-softmax over the 16-bit logits (read, write); backward the same in 16 bits,
// without the cast.
// fused: read the 16-bit logits once; backward read them, write their gradient.
D loss_bytes_per_logit(LossKind loss, D e, bool backward) {
  switch (loss) {
    case LossKind::Fp32: return backward ? 20 + e : e + 12;
    case LossKind::Eager16Bit: return (backward ? 4 : 2) * e;
    case LossKind::Fused: return (backward ? 2 : 1) * e;
  }
  std::abort();  // not a LossKind: a corrupted TransformerSpec
}

void head_forward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  norm_forward(k, "norm", t, s);
  k.linear_forward("output", s.T, s.h, s.V);
  k.memory("loss", loss_bytes_per_logit(t.loss, s.e, false) * D(s.T) * D(s.V));
}

void head_backward(KernelList& k, const TransformerSpec& t, const Shape& s) {
  k.memory("loss.bwd", loss_bytes_per_logit(t.loss, s.e, true) * D(s.T) * D(s.V));
  k.linear_backward("output", s.T, s.h, s.V, false);
  norm_backward(k, "norm", t, s);
}

}  // namespace

double causal_attention_fraction(int64_t seq_len) {
  SHARDLINE_CHECK(seq_len > 0, "a sequence length that is not positive (the parser refuses it)");
  return std::min(1.0, 0.5 * (1.0 + 128.0 / D(seq_len)));
}

UnitKernels transformer_unit_kernels(const TransformerSpec& t, TransformerPart part, int e) {
  return transformer_unit_kernels(t, part, e, t.checkpointing);
}

UnitKernels transformer_unit_kernels(const TransformerSpec& t, TransformerPart part, int e, Checkpointing block_checkpointing) {
  const Shape s = shape_of(t, e);
  KernelList fwd(e), bwd(e);
  UnitKernels out;
  switch (part) {
    case TransformerPart::None:
      return out;
    case TransformerPart::Embedding:
      embedding_forward(fwd, t, s);
      embedding_backward(bwd, t, s);
      break;
    case TransformerPart::Block:
      block_forward(fwd, t, s);
      block_backward(bwd, t, s);
      break;
    case TransformerPart::Head:
      head_forward(fwd, t, s);
      head_backward(bwd, t, s);
      break;
  }
  out.forward = fwd.take();
  out.backward = bwd.take();
  if (part == TransformerPart::Block) {
    if (block_checkpointing == Checkpointing::Full) {
      out.recompute = out.forward;
    } else if (block_checkpointing == Checkpointing::Selective) {
      for (const Kernel& k : out.forward)
        if (k.kind == KernelKind::Attention) out.recompute.push_back(k);
    } else if (block_checkpointing == Checkpointing::SelectiveOp) {
      out.recompute = selective_op_recompute(t, s, out.forward);
    }
    if (t.checkpoint_early_stop && (block_checkpointing == Checkpointing::Full || block_checkpointing == Checkpointing::SelectiveOp))
      stop_early(out.recompute, t);
    for (Kernel& k : out.recompute) k.name = "recompute." + k.name;
  }
  return out;
}

int64_t multi_tensor_launches(int64_t elements, int64_t tensors, int lists) {
  // ATen's multi_tensor_apply (MultiTensorApply.cuh): chunks of 65536 elements, at most 320
  // blocks (chunks) and depth_to_max_tensors[lists - 1] tensors per launch. Each tensor's last
  // chunk may be partial, so the chunk count is at least elements / 65536.
  constexpr int64_t kChunkElements = 65536, kMaxBlocks = 320;
  constexpr int64_t kMaxTensors[] = {110, 64, 48, 36, 30};
  SHARDLINE_CHECK(lists >= 1 && lists <= 5, "multi_tensor_apply takes 1 to 5 tensor lists");
  const int64_t chunks = (elements + kChunkElements - 1) / kChunkElements;
  const int64_t by_blocks = (chunks + kMaxBlocks - 1) / kMaxBlocks;
  const int64_t max_tensors = kMaxTensors[lists - 1];
  const int64_t by_tensors = (tensors + max_tensors - 1) / max_tensors;
  return std::max<int64_t>(1, std::max(by_blocks, by_tensors));
}

std::vector<Kernel> optimizer_step_kernels(int64_t shard_params, int master_bytes, int64_t optimizer_bytes_per_param,
                                           OptimizerImplementation implementation, int64_t local_tensors) {
  const double n = D(shard_params), m = D(master_bytes);
  if (implementation == OptimizerImplementation::Fused) {
    Kernel k;
    k.name = "adamw";
    k.kind = KernelKind::Memory;
    // parameter read + write, gradient read, optimizer state read + write
    k.bytes = n * (3.0 * m + 2.0 * D(optimizer_bytes_per_param));
    k.launches = multi_tensor_launches(shard_params, local_tensors, 4);  // parameters, gradients, two states
    return {k};
  }
  // torch.optim's _multi_tensor_adam (AdamW) pass by pass, reads and writes per parameter of the
  // parameter / gradient (m bytes) and of a state (s bytes, Adam's two states in
  // optimizer_bytes_per_param): decay p *= 1 - lr wd; exp_avg lerp towards g; exp_avg_sq *= b2
  // then += (1 - b2) g^2; t = sqrt(exp_avg_sq); t /= bias correction; t += eps; p -= step exp_avg / t.
  const double s = D(optimizer_bytes_per_param) / 2.0;
  const std::pair<const char*, double> passes[] = {
      {"adamw.decay", 2 * m},         {"adamw.exp_avg", 2 * s + m}, {"adamw.exp_avg_sq", 4 * s + m},
      {"adamw.sqrt", 2 * s},          {"adamw.div", 2 * s},         {"adamw.add_eps", 2 * s},
      {"adamw.update", 2 * m + 2 * s}};
  std::vector<Kernel> out;
  for (const auto& [name, bytes_per_param] : passes) {
    Kernel k;
    k.name = name;
    k.kind = KernelKind::Memory;
    k.bytes = n * bytes_per_param;
    k.launches = implementation == OptimizerImplementation::ForLoop ? std::max<int64_t>(1, local_tensors)
                                                                    : multi_tensor_launches(shard_params, local_tensors, 2);
    out.push_back(k);
  }
  return out;
}

std::vector<Kernel> grad_clip_kernels(int64_t shard_params, int master_bytes, int64_t local_tensors) {
  Kernel norm, scale;
  norm.name = "grad_norm";
  norm.bytes = D(shard_params) * D(master_bytes);
  norm.launches = multi_tensor_launches(shard_params, local_tensors, 1);  // torch._foreach_norm
  scale.name = "grad_scale";
  scale.bytes = 2.0 * D(shard_params) * D(master_bytes);
  scale.launches = multi_tensor_launches(shard_params, local_tensors, 1);  // torch._foreach_mul_
  return {norm, scale};
}

}  // namespace shardline
