// A validated, typed scenario: the model (FSDP units), the cluster, the device mesh, the FSDP
// policy and run settings. Built only by parse_scenario() (core/scenario_parse.h); nothing
// half-parsed is ever used. All sizes in bytes, times in microseconds, rates in bytes/s.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/variation.h"
#include "core/dtype.h"

namespace shardline {

// One parameter tensor of a unit (element count of the unsharded tensor).
struct TensorSpec {
  std::string name;
  int64_t numel = 0;
  // Its dim 0 (an nn.Linear weight's out features, an embedding's rows), which FSDP2 shards and
  // pads to a multiple of the shard group (DTensor Shard(0)); 0: one-dimensional, dim 0 = numel
  // (explicit units). numel is a multiple of it.
  int64_t rows = 0;
};

// Which part of a transformer shorthand model a unit is (None: an explicit unit). The
// op-level compute model (core/compute_model.h) derives its kernels from it.
enum class TransformerPart { None, Embedding, Block, Head };

// None; Selective: Megatron-LM's core-attention recompute; SelectiveOp: torchtitan's op-level
// policy (selective_ac_option 'op': the attention output and every other matmul output kept);
// Full: the whole block re-run (docs/compute-model.md, "Checkpointing modes").
enum class Checkpointing { None, Selective, SelectiveOp, Full };

// What fully_shard wraps: a transformer block, the embedding, the output head.
struct UnitSpec {
  std::string name;
  std::vector<TensorSpec> tensors;          // its parameters; one parameter group
  double forward_flops = 0;                 // per micro-batch
  double backward_flops = 0;                // per micro-batch, without recomputation
  std::optional<double> forward_time_us;    // measured times replace FLOPs when given
  std::optional<double> backward_time_us;
  int64_t activation_bytes = 0;             // saved for backward per micro-batch (after checkpointing)
  int64_t forward_transient_bytes = 0;      // live only while its forward runs (e.g. fp32 logits)
  int64_t backward_transient_bytes = 0;     // live only while its backward runs (recomputed
                                            // activations, activation gradients)
  // backward_transient_bytes already counts the weight gradients the backward makes (a transformer
  // block's walk, core/block_backward.h): the unit's unsharded gradients are allocated when its
  // backward ends, not before it (where they would count twice).
  bool backward_transient_makes_weight_grads = false;
  // The loss's backward when this unit makes the model's output (the logit gradients): it runs
  // before the model's pre-backward hooks fire (they wait on the output's gradient), so it is live
  // before this unit's pre-backward gathers and prefetches, and gone when backward_transient_bytes
  // (what the unit's own backward holds) takes over.
  int64_t loss_backward_transient_bytes = 0;
  // What the loss saves for its backward (its log-softmax output or log-sum-exp): made in forward
  // with the unit's activations, freed by the loss's backward, before the pre-backward hooks.
  int64_t loss_activation_bytes = 0;
  // The model's output this unit makes (the head's logits, 16-bit or, with logits_dtype fp32, the
  // model's fp32 copy): alive as long as the training
  // loop holds it (policy.output_lifetime) or, when `output_saved_by_loss`, the loss's backward
  // needs it (a fused cross-entropy saves its input; PyTorch's saves its log-softmax output).
  int64_t output_bytes = 0;
  bool output_saved_by_loss = false;
  bool recompute_forward = false;           // full checkpointing: backward re-runs forward first
  TransformerPart part = TransformerPart::None;
  Checkpointing checkpointing{};            // transformer blocks: this block's checkpointing mode
  std::optional<int64_t> bucket_bytes;      // per-unit bucket override: this unit is bucketed alone
  // A part of the FSDP root (fully_shard on the whole model holds every parameter no other unit
  // wraps): with one bucket per unit, all root units share one parameter group, gathered at the
  // first one's pre-forward, kept unsharded from forward into backward, and reduce-scattered
  // after the last one's backward (docs/schedule.md "The root group").
  bool root = false;
  // fully_shard's own reshard_after_forward for this unit, over the policy's (FSDP2 takes it per
  // call: torchtitan keeps [norm, output] unsharded); a bucket of several units is kept if any
  // of them says false. Root units are always kept.
  std::optional<bool> reshard_after_forward;

  int64_t params() const {
    int64_t n = 0;
    for (const auto& t : tensors) n += t.numel;
    return n;
  }
};

// The transformer shorthand (model.transformer): the shape and the architecture knobs the
// op-level compute model (core/kernels.h) and the memory model need. docs/scenario.md defines
// every knob and checkpointing mode.
enum class MlpKind { SwiGlu, Gelu };           // SwiGLU: gate, up, down; GELU: up (ffn_hidden), down
enum class NormKind { RmsNorm, LayerNorm };
enum class PositionKind { Rope, Alibi, Learned };
// How the norms and RoPE run (docs/compute-model.md, "Eager norms and RoPE"): fused, PyTorch's
// norm kernels (F.layer_norm, F.rms_norm): one kernel forward; backward the input gradient's
// kernel, then the weight gradient's, which reads x and dy again; fused_one_pass, a kernel whose
// backward reads x and dy once, writing dx and per-block partial weight gradients (torchtitan's
// Triton fused_rmsnorm), then sums the partials; eager_fp32, the
// Llama reference RMSNorm in PyTorch ops over an fp32 copy (torchtitan's "rmsnorm", fms's
// LayerNormParameterized with use_high_precision_pow); eager_complex, RoPE as a complex multiply
// of fp32 views (torchtitan, Meta's reference); eager_rotation, RoPE as fms's fp32 2x2 rotation
// (a broadcast multiply, then a sum over the pair); eager_stack, RoPE in the activation dtype on
// the even and odd halves, stacked back into pairs (bench/gpu/fsdp_step.py's apply_rope).
enum class NormImpl { Fused, FusedOnePass, EagerFp32 };
enum class RopeImpl { Fused, EagerComplex, EagerRotation, EagerStack };
// How a block's input projections run: fused, one GEMM for q, k and v and one for SwiGLU's gate
// and up (MPT's Wqkv, GPT-2's c_attn, fms); separate, one GEMM per projection (torchtitan's and
// Hugging Face's Llama: wq, wk, wv; w1, w3), whose input gradients autograd then sums.
enum class Projections { Fused, Separate };
// fp32: PyTorch cross-entropy over an fp32 copy of the logits; eager_16bit: PyTorch cross-entropy
// over the 16-bit logits themselves (log-softmax output 16-bit); fused: one kernel over the 16-bit
// logits (flash-attn's).
enum class LossKind { Fp32, Eager16Bit, Fused };

struct TransformerSpec {
  int64_t layers = 0, hidden = 0, ffn_hidden = 0, heads = 0, kv_heads = 0, vocab = 0;
  int64_t seq_len = 0, micro_batch_size = 0;
  Checkpointing checkpointing = Checkpointing::None;
  // Checkpointing on every k-th block only (torchtitan's selective_ac_option = 'k': blocks
  // k-1, 2k-1, ... counting from 0), the others none; 1: every block. Only with Full.
  int64_t checkpoint_every = 1;
  // The re-run of a checkpointed block stops once every tensor its backward needs is saved again:
  // PyTorch's non-reentrant checkpoint from 2.1 (torch.utils.checkpoint, use_reentrant=False;
  // checkpoint_wrapper's NO_REENTRANT), whose early stop is on by default. The block's last matmul
  // saves its input before it runs, so the re-run skips it (unless a dropout after it saves a mask)
  // and the final residual add. False: the reentrant checkpoint, or PyTorch before 2.1, re-runs the
  // whole block.
  bool checkpoint_early_stop = true;
  MlpKind mlp = MlpKind::SwiGlu;
  NormKind norm = NormKind::RmsNorm;
  PositionKind position = PositionKind::Rope;
  bool bias = false;             // biases on every linear layer and norm
  bool tied_embeddings = false;  // the output head reuses the token embedding
  // The embedding, final norm and head are the FSDP root's parameters (fully_shard on every
  // block, then on the model: llm-foundry, torchtitan 2024); false: torchtitan's apply_fsdp now,
  // the embedding a unit of its own and [norm, output] one kept unsharded after forward (tied
  // embeddings: both one group, kept, as the root).
  bool root_group = true;
  // The last block's own fully_shard(..., reshard_after_forward=): torchtitan from 2024 until its
  // #1094 (July 2025) passed False for it ("FSDP would prefetch it immediately"), keeping it
  // unsharded from forward into backward; unset: the policy's, like every other block.
  std::optional<bool> last_block_reshard_after_forward;
  double dropout = 0;            // probability of the residual and embedding dropouts
  LossKind loss = LossKind::Fp32;
  // The model returns fp32 logits (`self.output(h).float()`: Meta's reference Llama, torchtitan
  // until late 2024), so its output is the fp32 copy and the 16-bit logits live only until that
  // cast; else it returns the 16-bit logits and the fp32 loss makes its copy itself. Fp32 loss only.
  bool fp32_logits = false;
  NormImpl norm_impl = NormImpl::Fused;
  RopeImpl rope_impl = RopeImpl::Fused;
  Projections projections = Projections::Fused;
  int64_t head_dim() const { return hidden / heads; }
  // Whether a checkpointed block's re-run ends before its down projection: the early stop, with no
  // dropout after the projection whose mask would have to be re-made (core/kernels.cpp).
  bool rerun_skips_down_projection() const { return checkpoint_early_stop && dropout == 0; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  // The checkpointing mode of block `layer` (0-based).
  Checkpointing block_checkpointing(int64_t layer) const {
    return (layer + 1) % checkpoint_every == 0 ? checkpointing : Checkpointing::None;
  }
};

struct ModelSpec {
  std::string name;
  std::vector<UnitSpec> units;  // in forward order, repeats expanded
  std::optional<TransformerSpec> transformer;  // set when the units were derived from it
  // Samples per micro-batch and tokens per sample (from the transformer, or model.micro_batch_size
  // and model.seq_len next to explicit units); 0 when not given: throughput metrics are unknown.
  int64_t micro_batch_size = 0;
  int64_t seq_len = 0;
  int64_t total_params() const {
    int64_t n = 0;
    for (const auto& u : units) n += u.params();
    return n;
  }
};

struct LinkSpec {
  double bandwidth_bytes_per_s = 0;  // per GPU, one direction
  double latency_us = 0;             // per hop (alpha)
};

struct GpuSpec {
  std::string name;
  std::map<DType, double> peak_tflops;  // dense peak per dtype
  double efficiency = 0.5;              // explicit units: achievable fraction of peak (MFU-like)
  // The op-level compute model of the transformer shorthand (core/compute_model.h); every
  // value is documented with its source in docs/scenario.md.
  double hbm_bandwidth_bytes_per_s = 0;  // datasheet memory bandwidth
  double gemm_efficiency = 0;            // fraction of dense peak a large GEMM reaches
  double gemm_half_dim = 0;              // smallest GEMM dimension at which it reaches half of that
  double attention_efficiency = 0;       // fraction of dense peak FlashAttention's forward tends to
  // FlashAttention's efficiency at sequence length s and head dimension d (core/compute_model.h):
  // forward attention_efficiency x s / (s + attention_half_seq) x d / (d + attention_half_head_dim);
  // backward the same with its own efficiency and half sequence (unset: the forward's). Half
  // sequence and half head dimension 0: no dependence (the presets fitted on published runs).
  std::optional<double> attention_backward_efficiency;
  double attention_half_seq = 0;
  std::optional<double> attention_backward_half_seq;
  double attention_half_head_dim = 0;
  double memory_efficiency = 0;          // fraction of hbm_bandwidth memory-bound kernels reach
  double kernel_launch_us = 0;           // per kernel: launch gap and tail
  int64_t memory_bytes = 0;
  double copy_bandwidth_bytes_per_s = 0;  // achieved device-local copy rate (copy-in / copy-out)
  // Memory held beyond the tensors the memory tracker counts (core/memory_reserve.h).
  int64_t context_memory_bytes = 0;      // CUDA context, cuBLAS / cuDNN workspaces
  int64_t nccl_memory_bytes = 0;         // NCCL buffers of one communicator
  // The caching allocator's reserve beyond its tensors (core/memory_reserve.h). When memory is
  // plentiful: for FSDP2, which frees its buffers on the host, the sum of the per-stream pools'
  // peaks x (1 + allocator_pool_fragmentation: the allocator keeps each stream's freed blocks for
  // that stream); for FSDP1 (record_stream), the peak active memory x (1 +
  // allocator_fragmentation). At capacity, where it frees its cache and retries before failing,
  // the allocated peak x (1 + allocator_fragmentation_at_capacity).
  double allocator_fragmentation = 0;
  double allocator_pool_fragmentation = 0;
  double allocator_fragmentation_at_capacity = 0;
};

struct ClusterSpec {
  std::string name;  // the preset's key, the cluster file's stem, its own "name", or "custom"
  // The scenario (or a --set) changes its preset's or file's values beyond nodes and
  // gpus_per_node: a GPU number, a link, a slow-down.
  bool base_changed = false;
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 1;
  LinkSpec intra_node;
  LinkSpec inter_node;
  double launch_overhead_us = 5.0;            // host cost to issue one op
  // Host time per GPU activity launched (Program::host_launches): eager PyTorch's Python,
  // dispatcher, autograd and CUDA launch per kernel; 0: the host costs launch_overhead_us per op only.
  double host_launch_us = 0.0;
  double compute_slowdown_during_comm = 1.0;  // compute takes this factor longer while comm runs
  double comm_slowdown_during_compute = 1.0;  // transfers take this factor longer while compute runs
  double event_latency_us = 0.0;     // an event fires -> an op waiting for it can start this much later
  double compute_overhead_us = 0.0;  // fixed cost of starting one compute op (kernel launch, wake-up)
  bool hierarchical_collectives = false;      // groups spanning nodes: intra-node then inter-node
  int world() const { return nodes * gpus_per_node; }
};

struct MeshSpec {
  int shard = 1;
  int replicate = 1;  // HSDP when > 1
  int world() const { return shard * replicate; }
};

struct ReshardAfterForward {
  enum class Mode { Full, Keep, Partial };
  Mode mode = Mode::Full;  // true / false / int
  int group_size = 0;      // Partial: reshard to groups of this many ranks
};

enum class GradSync { Every, Last };

enum class OptimizerImplementation { Fused, Foreach, ForLoop };

enum class OptimizerParams { DTensor, Fsdp1OrigParams, Fsdp1FlatParams };

// How long the training loop holds the model's output (the logits): until the micro-batch's
// backward is done (`outputs = model(batch); loss = loss_fn(outputs); loss.backward()`: Composer,
// fms-fsdp, torchtitan before mid-2024), or only through the loss (`del pred` before backward:
// torchtitan since), after which only the loss's own saved tensors keep it.
enum class OutputLifetime { Backward, Loss };

struct PolicySpec {
  bool comm_fusion = true;
  bool zero_copy = false;
  int64_t bucket_bytes = 0;  // 0: one bucket per unit (FSDP2); else pack consecutive groups
  ReshardAfterForward reshard_after_forward;
  // Whether the FSDP root's parameter group is resharded after forward like the others (FSDP2 from
  // PyTorch 2.8 when the root's fully_shard is given reshard_after_forward=True explicitly) or
  // kept unsharded into backward (FSDP1; FSDP2 before 2.8; FSDP2 since with the default None).
  bool root_reshard_after_forward = false;
  int forward_prefetch = 1;   // 0 off, 1 FSDP2 implicit, k explicit depth
  int backward_prefetch = 1;  // 0 off, 1 FSDP2 default, k explicit depth
  DType param_dtype = DType::bf16;
  DType reduce_dtype = DType::fp32;
  DType master_dtype = DType::fp32;  // sharded parameters and gradients
  int64_t optimizer_bytes_per_param = 8;  // Adam: two fp32 states
  // How the optimizer step is implemented, which sets what it allocates beside its states
  // (torch.optim's `fused` / `foreach` / for-loop; torchtitan's optimizer.implementation):
  // fused none; foreach one state-sized copy of the whole local shard (AdamW's sqrt(v)); for-loop
  // that of the largest local parameter. The transformer shorthand's optimizer op only.
  OptimizerImplementation optimizer_implementation = OptimizerImplementation::Fused;
  // What the optimizer steps over, which sets the for-loop's launches and its largest tensor:
  // FSDP2's per-parameter DTensors (each parameter's dim-0 shard), FSDP1's original-parameter
  // views with use_orig_params=True (the parameters that overlap this rank's chunk of each flat
  // parameter), or FSDP1's FlatParameters (one per parameter group, the only form before
  // PyTorch 2.0).
  OptimizerParams optimizer_params = OptimizerParams::DTensor;
  // FSDP1 (its parameters are what the optimizer steps over) hands the buffers other streams use
  // to the caching allocator with record_stream; FSDP2 keeps them alive and frees them on the host.
  bool fsdp1_record_stream() const { return optimizer_params != OptimizerParams::DTensor; }
  OutputLifetime output_lifetime = OutputLifetime::Backward;
  int micro_batches = 1;
  GradSync grad_sync = GradSync::Every;
  bool average_gradients = true;  // divide by world after reduction (else sum)
};

struct RunSpec {
  int iterations = 1;
  int warmup = 0;
  double memory_margin = 0.0;  // extra fraction of GPU memory kept free beyond the reserve when judging "fits"
};

// The most ranks a scenario (and so any timeline it makes) may have: nodes x gpus_per_node.
inline constexpr int kMaxWorldRanks = 1 << 20;

struct Scenario {
  std::string name;
  std::string description;
  ModelSpec model;
  ClusterSpec cluster;
  MeshSpec mesh;
  PolicySpec policy;
  RunSpec run;
  VariationSpec variation;  // what differs between ranks (every-rank simulation, exec)
};

}  // namespace shardline
