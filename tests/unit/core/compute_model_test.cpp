// The op-level compute model of the transformer shorthand: kernel FLOPs and bytes from the
// shapes, roofline times, recomputation per checkpointing mode, the end-of-step ops the
// scheduler emits, the transient memory around compute, and the workload / reserve facts the
// throughput and memory metrics use.
#include <algorithm>
#include <map>
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/compute_model.h"
#include "core/kernels.h"
#include "core/error.h"
#include "core/memory_reserve.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "core/workload.h"
#include "core_test_support.h"

namespace shardline {
namespace {

using nlohmann::json;

// A 2-layer Llama-shaped model on a custom GPU with round numbers: peak 100 TFLOP/s, HBM 1 TB/s.
json scenario_json(const std::string& ckpt = "none") {
  return json::parse(R"({
    "name": "cm",
    "model": {"transformer": {"layers": 2, "hidden": 1024, "ffn_hidden": 4096, "heads": 8, "kv_heads": 2,
                              "vocab": 32000, "seq_len": 2048, "micro_batch_size": 2,
                              "activation_checkpointing": ")" + ckpt + R"("}},
    "cluster": {
      "gpu": {"name": "g", "peak_tflops": {"bf16": 100}, "memory": "80GiB", "copy_bandwidth": "500GB/s",
              "hbm_bandwidth": "1TB/s", "gemm_efficiency": 0.8, "gemm_half_dim": 256, "attention_efficiency": 0.5,
              "memory_efficiency": 0.5, "kernel_launch": "4us",
              "context_memory": "1GiB", "nccl_memory": "256MiB", "allocator_fragmentation": 0.1,
              "allocator_pool_fragmentation": 0.02},
      "nodes": 1, "gpus_per_node": 8, "intra_node": {"bandwidth": "100GB/s", "latency": "2us"}
    },
    "mesh": {"shard": 8}
  })");
}

Scenario parse(const json& j) { return parse_scenario(j); }

double flops_of(const std::vector<Kernel>& ks, KernelKind kind) {
  double sum = 0;
  for (const Kernel& k : ks)
    if (k.kind == kind) sum += k.flops;
  return sum;
}

const Kernel* find(const std::vector<Kernel>& ks, const std::string& name) {
  for (const Kernel& k : ks)
    if (k.name == name) return &k;
  return nullptr;
}

TEST(Kernels, GemmFlopsAreTwiceTokensTimesTheMatmulParametersAndBackwardDoublesThem) {
  const Scenario s = parse(scenario_json());
  const TransformerSpec& t = *s.model.transformer;
  const UnitKernels k = transformer_unit_kernels(t, TransformerPart::Block, 2);
  const double T = 2048 * 2, h = 1024, kv = 256, f = 4096;
  const double matmul_params = h * (h + 2 * kv) + h * h + h * 2 * f + f * h;
  EXPECT_DOUBLE_EQ(flops_of(k.forward, KernelKind::Gemm), 2 * T * matmul_params);
  EXPECT_DOUBLE_EQ(flops_of(k.backward, KernelKind::Gemm), 4 * T * matmul_params);
  const Kernel* qkv = find(k.forward, "qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->min_dim, 1024);
  EXPECT_DOUBLE_EQ(qkv->bytes, 2 * (T * h + h * (h + 2 * kv) + T * (h + 2 * kv)));
  const Kernel* wgrad = find(k.backward, "qkv.wgrad");
  ASSERT_NE(wgrad, nullptr);
  EXPECT_EQ(wgrad->min_dim, 1024);  // (h + 2kv) x T . T x h: the tokens are the reduction
  const UnitKernels head_kernels = transformer_unit_kernels(t, TransformerPart::Head, 2);
  const Kernel* head = find(head_kernels.forward, "output");
  ASSERT_NE(head, nullptr);
  EXPECT_DOUBLE_EQ(head->flops, 2 * T * h * 32000);
}

TEST(Kernels, FlashAttentionCountsTheCausalPartAndABackwardOfTwoAndAHalf) {
  EXPECT_DOUBLE_EQ(causal_attention_fraction(2048), 0.5 * (1 + 128.0 / 2048));
  EXPECT_DOUBLE_EQ(causal_attention_fraction(128), 1.0);
  EXPECT_DOUBLE_EQ(causal_attention_fraction(64), 1.0);
  const Scenario s = parse(scenario_json());
  const UnitKernels k = transformer_unit_kernels(*s.model.transformer, TransformerPart::Block, 2);
  const double fwd = 4.0 * 2 * 2048.0 * 2048.0 * 1024 * causal_attention_fraction(2048);
  EXPECT_DOUBLE_EQ(flops_of(k.forward, KernelKind::Attention), fwd);
  EXPECT_DOUBLE_EQ(flops_of(k.backward, KernelKind::Attention), 2.5 * fwd);
}

TEST(Kernels, KnobsAddAndRemoveKernels) {
  json j = scenario_json();
  const UnitKernels llama = transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Block, 2);
  EXPECT_NE(find(llama.forward, "rope"), nullptr);
  EXPECT_NE(find(llama.forward, "swiglu"), nullptr);
  EXPECT_EQ(find(llama.backward, "qkv.bias_grad"), nullptr);
  EXPECT_EQ(find(llama.forward, "attention_dropout"), nullptr);
  j["model"]["transformer"].update({{"mlp", "gelu"}, {"position", "learned"}, {"bias", true}, {"dropout", 0.1}});
  const Scenario mpt = parse(j);
  const UnitKernels gelu = transformer_unit_kernels(*mpt.model.transformer, TransformerPart::Block, 2);
  EXPECT_EQ(find(gelu.forward, "rope"), nullptr);
  EXPECT_NE(find(gelu.forward, "gelu"), nullptr);
  EXPECT_NE(find(gelu.backward, "qkv.bias_grad"), nullptr);
  EXPECT_NE(find(gelu.forward, "attention_dropout"), nullptr);
  const UnitKernels embedding = transformer_unit_kernels(*mpt.model.transformer, TransformerPart::Embedding, 2);
  EXPECT_NE(find(embedding.forward, "position_add"), nullptr);
}

TEST(Kernels, TheLossOverTheVocabularyMovesFp32BytesUnlessFused) {
  json j = scenario_json();
  const double TV = 4096.0 * 32000;
  const UnitKernels fp32_kernels = transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Head, 2);
  const Kernel* fp32 = find(fp32_kernels.forward, "loss");
  ASSERT_NE(fp32, nullptr);
  EXPECT_DOUBLE_EQ(fp32->bytes, (2 + 12) * TV);
  j["model"]["transformer"]["loss"] = "fused";
  const UnitKernels fused = transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Head, 2);
  EXPECT_DOUBLE_EQ(find(fused.forward, "loss")->bytes, 2 * TV);
  EXPECT_DOUBLE_EQ(find(fused.backward, "loss.bwd")->bytes, 4 * TV);
  // PyTorch's cross-entropy over the bf16 logits: log-softmax read and write; backward, the NLL
  // gradient written, then log-softmax backward reading two and writing one.
  j["model"]["transformer"]["loss"] = "eager_16bit";
  const UnitKernels eager = transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Head, 2);
  EXPECT_DOUBLE_EQ(find(eager.forward, "loss")->bytes, 2 * 2 * TV);
  EXPECT_DOUBLE_EQ(find(eager.backward, "loss.bwd")->bytes, 4 * 2 * TV);
}

// Eager norms and RoPE (docs/compute-model.md, "Eager norms and RoPE"): the bytes and launches of
// the PyTorch op sequences, per element of the norm's T x h input and of RoPE's q and k; fused
// stays one kernel forward (PyTorch's norm backward: two kernels, the weight gradient's reading x
// and dy again, 5e; a one-pass kernel reads them once, 3e); the final norm in the head follows the
// same knob.
TEST(Kernels, EagerNormsAndRopeMoveTheBytesOfTheirOpSequences) {
  json j = scenario_json();
  const double Th = 4096.0 * 1024, qk = 4096.0 * (1024 + 256);  // T = 2 x 2048 tokens; kv = 2 heads of 128
  const auto block = [&] { return transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Block, 2); };
  UnitKernels fused = block();
  EXPECT_DOUBLE_EQ(find(fused.forward, "attention_norm")->bytes, 4 * Th);
  EXPECT_DOUBLE_EQ(find(fused.backward, "ffn_norm.bwd")->bytes, 10 * Th);
  EXPECT_EQ(find(fused.backward, "ffn_norm.bwd")->launches, 2);
  j["model"]["transformer"]["norm_impl"] = "fused_one_pass";
  const UnitKernels one_pass = block();
  EXPECT_DOUBLE_EQ(find(one_pass.forward, "attention_norm")->bytes, 4 * Th);
  EXPECT_DOUBLE_EQ(find(one_pass.backward, "ffn_norm.bwd")->bytes, 6 * Th);
  EXPECT_EQ(find(one_pass.backward, "ffn_norm.bwd")->launches, 2);
  EXPECT_DOUBLE_EQ(find(transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Head, 2).backward, "norm.bwd")->bytes,
                   6 * Th);
  EXPECT_DOUBLE_EQ(find(fused.forward, "rope")->bytes, 4 * qk);
  EXPECT_EQ(find(fused.forward, "rope")->launches, 1);
  j["model"]["transformer"].update({{"norm_impl", "eager_fp32"}, {"rope_impl", "eager_complex"}});
  UnitKernels eager = block();
  for (const char* name : {"attention_norm", "ffn_norm"}) {
    EXPECT_DOUBLE_EQ(find(eager.forward, name)->bytes, 36 * Th) << name;  // 28 + 4e
    EXPECT_EQ(find(eager.forward, name)->launches, 8) << name;
    EXPECT_DOUBLE_EQ(find(eager.backward, std::string(name) + ".bwd")->bytes, 92 * Th) << name;  // 76 + 8e
    EXPECT_EQ(find(eager.backward, std::string(name) + ".bwd")->launches, 16) << name;
  }
  EXPECT_DOUBLE_EQ(find(eager.forward, "rope")->bytes, 20 * qk);  // 16 + 2e
  EXPECT_DOUBLE_EQ(find(eager.backward, "rope.bwd")->bytes, 20 * qk);
  EXPECT_EQ(find(eager.forward, "rope")->launches, 6);  // three for q, three for k
  j["model"]["transformer"]["rope_impl"] = "eager_rotation";
  eager = block();
  EXPECT_DOUBLE_EQ(find(eager.forward, "rope")->bytes, 36 * qk);  // 32 + 2e
  EXPECT_EQ(find(eager.backward, "rope.bwd")->launches, 8);
  j["model"]["transformer"]["rope_impl"] = "eager_stack";
  eager = block();
  EXPECT_DOUBLE_EQ(find(eager.forward, "rope")->bytes, 18 * qk);  // 9e
  EXPECT_EQ(find(eager.forward, "rope")->launches, 20);            // ten for q, ten for k
  EXPECT_DOUBLE_EQ(find(eager.backward, "rope.bwd")->bytes, 30 * qk);  // 15e
  EXPECT_EQ(find(eager.backward, "rope.bwd")->launches, 24);
  const UnitKernels head = transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Head, 2);
  EXPECT_DOUBLE_EQ(find(head.forward, "norm")->bytes, 36 * Th);
  EXPECT_DOUBLE_EQ(find(head.backward, "norm.bwd")->bytes, 92 * Th);
  // Recomputation re-runs the eager sequence as it is.
  j = scenario_json("full");
  j["model"]["transformer"]["norm_impl"] = "eager_fp32";
  EXPECT_DOUBLE_EQ(find(block().recompute, "recompute.attention_norm")->bytes, 36 * Th);
}

int64_t launches_of(const std::vector<Kernel>& ks) {
  int64_t n = 0;
  for (const Kernel& k : ks) n += k.launches;
  return n;
}

// Separate projections (torchtitan's wq, wk, wv and w1, w3) run one GEMM per projection, the same
// FLOPs as the fused GEMMs, and autograd sums their input gradients.
TEST(Kernels, SeparateProjectionsRunOneGemmEachAndSumTheirInputGradients) {
  json j = scenario_json();
  const double T = 4096, h = 1024, kv = 256, f = 4096;
  const auto block = [&] { return transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Block, 2); };
  const UnitKernels fused = block();
  EXPECT_DOUBLE_EQ(find(fused.forward, "qkv")->flops, 2 * T * h * (h + 2 * kv));
  EXPECT_DOUBLE_EQ(find(fused.forward, "mlp_gate_up")->flops, 2 * T * h * 2 * f);
  EXPECT_EQ(find(fused.backward, "qkv_input_grad_add"), nullptr);
  j["model"]["transformer"]["projections"] = "separate";
  const UnitKernels separate = block();
  EXPECT_EQ(find(separate.forward, "qkv"), nullptr);
  EXPECT_DOUBLE_EQ(find(separate.forward, "wq")->flops, 2 * T * h * h);
  EXPECT_DOUBLE_EQ(find(separate.forward, "wk")->flops, 2 * T * h * kv);
  EXPECT_EQ(find(separate.forward, "wv")->min_dim, 256);
  EXPECT_DOUBLE_EQ(find(separate.forward, "mlp_gate")->flops + find(separate.forward, "mlp_up")->flops, 2 * T * h * 2 * f);
  EXPECT_DOUBLE_EQ(flops_of(separate.forward, KernelKind::Gemm), flops_of(fused.forward, KernelKind::Gemm));
  EXPECT_DOUBLE_EQ(flops_of(separate.backward, KernelKind::Gemm), flops_of(fused.backward, KernelKind::Gemm));
  EXPECT_DOUBLE_EQ(find(separate.backward, "qkv_input_grad_add")->bytes, 2 * 3 * 2 * T * h);  // two adds, 3e each
  EXPECT_EQ(find(separate.backward, "qkv_input_grad_add")->launches, 2);
  EXPECT_DOUBLE_EQ(find(separate.backward, "mlp_input_grad_add")->bytes, 3 * 2 * T * h);
  EXPECT_EQ(launches_of(separate.forward), launches_of(fused.forward) + 3);
  EXPECT_EQ(launches_of(separate.backward), launches_of(fused.backward) + 6 + 3);  // 4 + 2 GEMMs, 3 adds
  // With biases each projection reduces its own bias gradient.
  j["model"]["transformer"]["bias"] = true;
  const UnitKernels biased = block();
  for (const char* name : {"wq.bias_grad", "wk.bias_grad", "wv.bias_grad", "mlp_gate.bias_grad", "mlp_up.bias_grad"})
    EXPECT_NE(find(biased.backward, name), nullptr) << name;
  EXPECT_DOUBLE_EQ(find(biased.backward, "wk.bias_grad")->bytes, 2 * T * kv);
  // A GELU MLP has one input projection either way: nothing to sum.
  j["model"]["transformer"].update({{"bias", false}, {"mlp", "gelu"}});
  const UnitKernels gelu = block();
  EXPECT_DOUBLE_EQ(find(gelu.forward, "mlp_up")->flops, 2 * T * h * f);
  EXPECT_EQ(find(gelu.backward, "mlp_input_grad_add"), nullptr);
  EXPECT_NE(find(gelu.backward, "qkv_input_grad_add"), nullptr);
}

// A Llama block as bench/gpu/fsdp_step.py runs it under PyTorch 2.11 (separate projections, its
// RoPE in PyTorch ops, SDPA, eager SwiGLU) launches the kernels the H100 traces counted: per block
// 34 forward (bench/gpu/h100_kernel_sums.json, llama-1b-none: 53 GPU activities per block less
// FSDP2's 9 casts, 9 copies and a memset); backward it counts 53 of the 57 kernels the traces show
// (82 GPU activities less FSDP2's 9 casts, 11 copies, 4 memsets and its reduce-scatter's copy-in:
// three strided copies and one other kernel are not named by the model).
TEST(Kernels, ALlamaBlockLaunchesWhatPyTorchLaunched) {
  json j = scenario_json();
  j["model"]["transformer"].update({{"projections", "separate"}, {"rope_impl", "eager_stack"}});
  const UnitKernels k = transformer_unit_kernels(*parse(j).model.transformer, TransformerPart::Block, 2);
  // norm 1, q k v 3, RoPE 20, attention 1, wo 1, add 1, norm 1, w1 w3 2, SwiGLU 2, w2 1, add 1
  EXPECT_EQ(launches_of(k.forward), 34);
  // w2 2, SwiGLU 3, w1 w3 4 and their sum 1, norm 2, add 1, wo 2, attention 3, RoPE 24, q k v 6
  // and their sums 2, norm 2, add 1
  EXPECT_EQ(launches_of(k.backward), 53);
  EXPECT_EQ(find(k.backward, "attention.bwd")->launches, 3);
  EXPECT_EQ(find(k.backward, "ffn_norm.bwd")->launches, 2);
  EXPECT_EQ(find(k.forward, "swiglu")->launches, 2);
  EXPECT_EQ(find(k.backward, "swiglu.bwd")->launches, 3);
}

TEST(Roofline, AKernelTakesTheLargerOfItsComputeAndMemoryTimesPlusTheLaunch) {
  GpuSpec gpu;
  gpu.hbm_bandwidth_bytes_per_s = 1e12;
  gpu.memory_efficiency = 0.5;
  gpu.gemm_efficiency = 0.8;
  gpu.gemm_half_dim = 256;
  gpu.attention_efficiency = 0.5;
  gpu.kernel_launch_us = 4;
  const double peak = 100e12;
  Kernel gemm{"g", KernelKind::Gemm, 1e12, 1e6, 256};  // efficiency 0.8 x 256 / 512 = 0.4
  const TimedKernel g = time_kernel(gemm, gpu, peak);
  EXPECT_DOUBLE_EQ(g.time_us, 1e12 / (100e12 * 0.4) * 1e6 + 4);
  EXPECT_FALSE(g.memory_bound);
  Kernel big{"b", KernelKind::Gemm, 1e12, 1e6, 1 << 30};
  EXPECT_NEAR(time_kernel(big, gpu, peak).time_us, 1e12 / (100e12 * 0.8) * 1e6 + 4, 0.01);  // d / (d + 256) -> 1
  Kernel mem{"m", KernelKind::Memory, 0, 5e8, 0};
  const TimedKernel m = time_kernel(mem, gpu, peak);
  EXPECT_DOUBLE_EQ(m.time_us, 5e8 / (1e12 * 0.5) * 1e6 + 4);
  EXPECT_TRUE(m.memory_bound);
  Kernel thin{"t", KernelKind::Gemm, 1e9, 1e9, 4096};  // 10 us of compute, 2000 us of bytes
  EXPECT_TRUE(time_kernel(thin, gpu, peak).memory_bound);
  Kernel attn{"a", KernelKind::Attention, 1e12, 1e6, 0};
  EXPECT_DOUBLE_EQ(time_kernel(attn, gpu, peak).time_us, 1e12 / (100e12 * 0.5) * 1e6 + 4);
}

// FlashAttention's efficiency falls with short sequences and narrow heads, and its backward has
// its own: efficiency x s / (s + half_seq) x d / (d + half_head_dim), each pass with its own
// efficiency and half sequence, the backward's defaulting to the forward's.
TEST(Roofline, AttentionEfficiencyDependsOnSequenceHeadDimensionAndPass) {
  GpuSpec gpu;
  gpu.hbm_bandwidth_bytes_per_s = 1e12;
  gpu.memory_efficiency = 0.5;
  gpu.attention_efficiency = 0.8;
  const double peak = 100e12;
  Kernel fwd{"a", KernelKind::Attention, 1e12, 1e6, 0};
  fwd.seq_len = 2048;
  fwd.head_dim = 64;
  Kernel bwd = fwd;
  bwd.backward = true;
  EXPECT_DOUBLE_EQ(time_kernel(fwd, gpu, peak).time_us, 1e12 / (100e12 * 0.8) * 1e6);  // no dependence set
  EXPECT_DOUBLE_EQ(time_kernel(bwd, gpu, peak).time_us, time_kernel(fwd, gpu, peak).time_us);
  gpu.attention_half_seq = 2048;      // a half at this sequence length
  gpu.attention_half_head_dim = 64;   // and a half at this head dimension
  EXPECT_DOUBLE_EQ(time_kernel(fwd, gpu, peak).time_us, 1e12 / (100e12 * 0.8 * 0.5 * 0.5) * 1e6);
  EXPECT_DOUBLE_EQ(time_kernel(bwd, gpu, peak).time_us, time_kernel(fwd, gpu, peak).time_us);  // the forward's values
  gpu.attention_backward_efficiency = 0.4;
  gpu.attention_backward_half_seq = 6144;  // 2048 / (2048 + 6144) = 0.25
  EXPECT_DOUBLE_EQ(time_kernel(bwd, gpu, peak).time_us, 1e12 / (100e12 * 0.4 * 0.25 * 0.5) * 1e6);
  EXPECT_DOUBLE_EQ(time_kernel(fwd, gpu, peak).time_us, 1e12 / (100e12 * 0.8 * 0.5 * 0.5) * 1e6);
  // The block's attention kernels carry the scenario's sequence length and head dimension.
  const UnitKernels k = transformer_unit_kernels(*parse(scenario_json()).model.transformer, TransformerPart::Block, 2);
  EXPECT_EQ(find(k.forward, "attention")->seq_len, 2048);
  EXPECT_EQ(find(k.forward, "attention")->head_dim, 128);
  EXPECT_FALSE(find(k.forward, "attention")->backward);
  EXPECT_TRUE(find(k.backward, "attention.bwd")->backward);
}

// Full checkpointing re-runs the block's forward; with the early stop (non-reentrant checkpoint,
// PyTorch 2.1 on, the default) it ends once the down projection's input is saved again: no down
// projection, no final residual add (a dropout after the down projection saves a mask, which
// keeps the projection in the re-run). Selective re-runs the attention core.
TEST(Recompute, FullReRunsTheBlockForwardUntilItsLastSaveAndSelectiveTheAttention) {
  const Scenario none = parse(scenario_json("none"));
  json whole = scenario_json("full");
  whole["model"]["transformer"]["checkpoint_early_stop"] = false;
  const Scenario full = parse(whole);
  const Scenario sel = parse(scenario_json("selective"));
  const UnitCompute n = unit_compute(none, none.model.units[1]);
  const UnitCompute f = unit_compute(full, full.model.units[1]);
  const UnitCompute s = unit_compute(sel, sel.model.units[1]);
  EXPECT_NEAR(f.backward_us, n.backward_us + n.forward_us, 1e-9 * f.backward_us);
  EXPECT_EQ(f.backward.front().name, "recompute.attention_norm");
  const auto attention = std::find_if(n.forward.begin(), n.forward.end(), [](const TimedKernel& k) { return k.name == "attention"; });
  ASSERT_NE(attention, n.forward.end());
  EXPECT_NEAR(s.backward_us, n.backward_us + attention->time_us, 1e-9 * s.backward_us);
  // The scheduler's compute ops carry these durations.
  EXPECT_DOUBLE_EQ(forward_compute_us(full, full.model.units[1]), f.forward_us);
  EXPECT_DOUBLE_EQ(backward_compute_us(full, full.model.units[1]), f.backward_us);
  // The early stop: the forward's kernels less the down projection and the last residual add.
  const Scenario early = parse(scenario_json("full"));
  const UnitKernels k = transformer_unit_kernels(*early.model.transformer, TransformerPart::Block, 2);
  ASSERT_EQ(k.recompute.size(), k.forward.size() - 2);
  for (size_t i = 0, j = 0; i < k.forward.size(); ++i) {
    const bool last_add = i + 1 == k.forward.size();
    if (k.forward[i].name == "mlp_down" || last_add) continue;
    EXPECT_EQ(k.recompute[j++].name, "recompute." + k.forward[i].name) << i;
  }
  EXPECT_EQ(k.forward.back().name, "residual_add");
  const UnitCompute e = unit_compute(early, early.model.units[1]);
  EXPECT_LT(e.backward_us, f.backward_us);
  EXPECT_GT(e.backward_us, n.backward_us);
  // With dropout the down projection's output feeds a dropout that saves its mask: re-run.
  json dropout = scenario_json("full");
  dropout["model"]["transformer"]["dropout"] = 0.1;
  const UnitKernels d = transformer_unit_kernels(*parse(dropout).model.transformer, TransformerPart::Block, 2);
  EXPECT_EQ(d.recompute.size(), d.forward.size() - 1);
  EXPECT_NE(find(d.recompute, "recompute.mlp_down"), nullptr);
  EXPECT_EQ(d.recompute.back().name, "recompute.mlp_dropout");
}

// torchtitan's op-level policy re-runs wk, wo and the MLP's second matmul (SwiGLU's w3, GELU's
// down) and every memory-bound forward kernel, never the attention kernel.
TEST(Recompute, SelectiveOpReRunsTheEvenMatmulsAndTheMemoryBoundKernels) {
  const auto separate = [](const std::string& ckpt) {  // torchtitan's block
    json j = scenario_json(ckpt);
    j["model"]["transformer"]["projections"] = "separate";
    return j;
  };
  const Scenario none = parse(separate("none"));
  const Scenario op = parse(separate("selective_op"));
  const TransformerSpec& t = *op.model.transformer;
  const UnitKernels k = transformer_unit_kernels(t, TransformerPart::Block, 2);
  const double T = 2048 * 2, h = 1024, kv = 256, f = 4096;
  EXPECT_DOUBLE_EQ(flops_of(k.recompute, KernelKind::Gemm), 2 * T * h * (kv + h + f));
  EXPECT_DOUBLE_EQ(flops_of(k.recompute, KernelKind::Attention), 0);
  ASSERT_NE(find(k.recompute, "recompute.wk"), nullptr);
  EXPECT_DOUBLE_EQ(find(k.recompute, "recompute.mlp_up")->flops, 2 * T * h * f);
  size_t memory_forward = 0, memory_recompute = 0;
  for (const Kernel& x : k.forward) memory_forward += x.kind == KernelKind::Memory;
  for (const Kernel& x : k.recompute) memory_recompute += x.kind == KernelKind::Memory;
  EXPECT_EQ(memory_recompute, memory_forward - 1);  // the early stop: not the final residual add
  // Its backward lies between no checkpointing's and full checkpointing's.
  const Scenario full = parse(separate("full"));
  const double b_none = unit_compute(none, none.model.units[1]).backward_us;
  const double b_op = unit_compute(op, op.model.units[1]).backward_us;
  const double b_full = unit_compute(full, full.model.units[1]).backward_us;
  EXPECT_GT(b_op, b_none);
  EXPECT_LT(b_op, b_full);
  // GELU's second MLP matmul is the down projection, which the early stop skips.
  json gelu = separate("selective_op");
  gelu["model"]["transformer"].update({{"mlp", "gelu"}, {"checkpoint_early_stop", false}});
  const UnitKernels g = transformer_unit_kernels(*parse(gelu).model.transformer, TransformerPart::Block, 2);
  ASSERT_NE(find(g.recompute, "recompute.mlp_down"), nullptr);
  EXPECT_DOUBLE_EQ(find(g.recompute, "recompute.mlp_down")->flops, 2 * T * f * h);
  EXPECT_EQ(find(g.recompute, "recompute.mlp_up"), nullptr);
  gelu["model"]["transformer"]["checkpoint_early_stop"] = true;
  const Scenario gelu_early = parse(gelu);
  const UnitKernels ge = transformer_unit_kernels(*gelu_early.model.transformer, TransformerPart::Block, 2);
  EXPECT_EQ(find(ge.recompute, "recompute.mlp_down"), nullptr);
  EXPECT_DOUBLE_EQ(flops_of(ge.recompute, KernelKind::Gemm), 2 * T * h * (kv + h));
  const Workload gw = workload_of(gelu_early);
  EXPECT_DOUBLE_EQ(gw.hardware_flops_per_step, gw.model_flops_per_step + 2.0 * 2 * h * (kv + h) * gw.tokens_per_step);
  // HFU counts those matmuls: 2 h (kv + h + f) per layer and token.
  const Workload w = workload_of(op);
  EXPECT_DOUBLE_EQ(w.hardware_flops_per_step, w.model_flops_per_step + 2.0 * 2 * h * (kv + h + f) * w.tokens_per_step);
  // Fused projections (qkv, wo, gate/up, down): it re-runs wo and down, for SwiGLU and GELU
  // (without the early stop; with it, wo alone).
  for (const char* mlp : {"swiglu", "gelu"}) {
    json j = scenario_json("selective_op");
    j["model"]["transformer"].update({{"mlp", mlp}, {"checkpoint_early_stop", false}});
    const Scenario fused = parse(j);
    const UnitKernels fk = transformer_unit_kernels(*fused.model.transformer, TransformerPart::Block, 2);
    EXPECT_DOUBLE_EQ(flops_of(fk.recompute, KernelKind::Gemm), 2 * T * h * (h + f)) << mlp;
    EXPECT_NE(find(fk.recompute, "recompute.attention_out"), nullptr) << mlp;
    EXPECT_NE(find(fk.recompute, "recompute.mlp_down"), nullptr) << mlp;
    EXPECT_EQ(find(fk.recompute, "recompute.wk"), nullptr) << mlp;
    const Workload fw = workload_of(fused);
    EXPECT_DOUBLE_EQ(fw.hardware_flops_per_step, fw.model_flops_per_step + 2.0 * 2 * h * (h + f) * fw.tokens_per_step) << mlp;
    j["model"]["transformer"]["checkpoint_early_stop"] = true;
    const Scenario early = parse(j);
    const UnitKernels ek = transformer_unit_kernels(*early.model.transformer, TransformerPart::Block, 2);
    EXPECT_DOUBLE_EQ(flops_of(ek.recompute, KernelKind::Gemm), 2 * T * h * h) << mlp;
    EXPECT_EQ(find(ek.recompute, "recompute.mlp_down"), nullptr) << mlp;
    const Workload ew = workload_of(early);
    EXPECT_DOUBLE_EQ(ew.hardware_flops_per_step, ew.model_flops_per_step + 2.0 * 2 * h * h * ew.tokens_per_step) << mlp;
  }
}

// HFU's recomputed matmul FLOPs are those of the op policy's re-run GEMMs, in every layout, MLP,
// dropout and early-stop setting; the early stop drops the last residual add (the second), never
// the first; with dropout after the down projection the re-run keeps the projection.
TEST(Recompute, SelectiveOpHfuCountsTheReRunGemmsInEveryCase) {
  for (const char* projections : {"fused", "separate"})
    for (const char* mlp : {"swiglu", "gelu"})
      for (const double dropout : {0.0, 0.1})
        for (const bool early : {false, true}) {
          json j = scenario_json("selective_op");
          j["model"]["transformer"].update({{"projections", projections}, {"mlp", mlp}, {"dropout", dropout},
                                            {"checkpoint_early_stop", early}, {"position", "alibi"}});
          const Scenario sc = parse(j);
          const TransformerSpec& t = *sc.model.transformer;
          const UnitKernels k = transformer_unit_kernels(t, TransformerPart::Block, 2);
          const std::string what = std::string(projections) + " " + mlp + " dropout " + std::to_string(dropout) +
                                   (early ? " early" : " whole");
          const Workload w = workload_of(sc);
          const double tokens_per_block_run = 2.0 * 2048;  // micro_batch_size x seq_len
          EXPECT_NEAR(w.hardware_flops_per_step - w.model_flops_per_step,
                      t.layers * flops_of(k.recompute, KernelKind::Gemm) * w.tokens_per_step / tokens_per_block_run,
                      1e-9 * w.hardware_flops_per_step) << what;
          const bool down_in_policy = std::string(projections) == "fused" || std::string(mlp) == "gelu";
          EXPECT_EQ(find(k.recompute, "recompute.mlp_down") != nullptr, down_in_policy && (!early || dropout > 0)) << what;
          int adds_forward = 0, adds_recompute = 0;
          for (const Kernel& x : k.forward) adds_forward += x.name == "residual_add";
          for (const Kernel& x : k.recompute) adds_recompute += x.name == "recompute.residual_add";
          EXPECT_EQ(adds_recompute, adds_forward - (early ? 1 : 0)) << what;
          // The add dropped is the block's last kernel: what remains last is the MLP's dropout or
          // the activation, never the attention's residual add.
          if (early) EXPECT_NE(k.recompute.back().name, "recompute.residual_add") << what;
        }
}

// Full checkpointing with dropout after the down projection: the early stop keeps the projection
// (the dropout saves a mask), so HFU counts the whole block's matmuls, as without the early stop.
TEST(Recompute, FullWithDropoutReRunsTheDownProjectionAndHfuCountsIt) {
  json j = scenario_json("full");
  j["model"]["transformer"]["dropout"] = 0.1;
  const Workload early = workload_of(parse(j));
  j["model"]["transformer"]["checkpoint_early_stop"] = false;
  const Workload whole = workload_of(parse(j));
  EXPECT_DOUBLE_EQ(early.hardware_flops_per_step, whole.hardware_flops_per_step);
  j["model"]["transformer"]["dropout"] = 0;
  j["model"]["transformer"]["checkpoint_early_stop"] = true;
  const Workload no_dropout = workload_of(parse(j));
  EXPECT_DOUBLE_EQ(whole.hardware_flops_per_step - no_dropout.hardware_flops_per_step,
                   2 * 2.0 * 4096 * 1024 * no_dropout.tokens_per_step);  // 2 layers x 2 f h per token
}

// checkpoint_every: the checkpointed blocks re-run their forward, the others do not, and HFU
// counts the re-run of the checkpointed blocks only.
TEST(Recompute, CheckpointEveryKthBlockReRunsOnlyThoseBlocks) {
  json j = scenario_json("full");
  j["model"]["transformer"]["checkpoint_every"] = 2;  // 2 layers: block 1 checkpointed, block 0 not
  const Scenario every2 = parse(j);
  const Scenario none = parse(scenario_json("none"));
  const Scenario full = parse(scenario_json("full"));
  EXPECT_DOUBLE_EQ(backward_compute_us(every2, every2.model.units[1]), backward_compute_us(none, none.model.units[1]));
  EXPECT_DOUBLE_EQ(backward_compute_us(every2, every2.model.units[2]), backward_compute_us(full, full.model.units[2]));
  const std::vector<UnitComputeTime> times = unit_compute_us(every2);
  EXPECT_LT(times[1].backward_us, times[2].backward_us);
  const Workload w = workload_of(every2);
  const double block_params = static_cast<double>(every2.model.units[2].params());
  EXPECT_DOUBLE_EQ(w.hardware_flops_per_step,
                   w.model_flops_per_step + (2 * block_params + 4.0 * 1 * 1024 * 2048 - 2.0 * 4096 * 1024) * w.tokens_per_step);
}

// The optimizer step's temporary: foreach AdamW computes sqrt(v) of the whole local shard at once
// (one fp32 copy of it: +12.04 GiB for a 3.23 B-parameter step measured on one H100), the for-loop
// one parameter at a time, the fused kernel nothing; allocated around the optimizer op.
// torch.optim's foreach AdamW makes seven passes (80 bytes per fp32 parameter, against the fused
// kernel's 28: one H100 measured 32 ms of foreach kernels per step for 953 M parameters, the
// passes give 29); the for-loop launches each pass once per tensor.
TEST(Kernels, TheOptimizerStepsTrafficFollowsItsImplementation) {
  auto bytes = [](const std::vector<Kernel>& ks) {
    double b = 0;
    for (const Kernel& k : ks) b += k.bytes;
    return b;
  };
  EXPECT_DOUBLE_EQ(bytes(optimizer_step_kernels(1000, 4, 8, OptimizerImplementation::Fused)), 28000);
  const auto foreach = optimizer_step_kernels(1000, 4, 8, OptimizerImplementation::Foreach, 50);
  EXPECT_EQ(foreach.size(), 7u);
  EXPECT_DOUBLE_EQ(bytes(foreach), 80000);
  for (const Kernel& k : foreach) EXPECT_EQ(k.launches, 1);
  const auto loop = optimizer_step_kernels(1000, 4, 8, OptimizerImplementation::ForLoop, 50);
  EXPECT_DOUBLE_EQ(bytes(loop), 80000);
  for (const Kernel& k : loop) EXPECT_EQ(k.launches, 50);
  GpuSpec gpu;
  gpu.hbm_bandwidth_bytes_per_s = 1e12;
  gpu.memory_efficiency = 0.5;
  gpu.kernel_launch_us = 4;
  EXPECT_DOUBLE_EQ(time_kernel(loop[0], gpu, 1e12).time_us, 8000.0 / 0.5e12 * 1e6 + 4 * 50);
}

// multi_tensor_apply's launches: one per 320 chunks of 65536 elements, or per 110 / 64 / 36
// tensors of one / two / four lists. PyTorch 2.11 on an H100 launched fused AdamW 46 times and
// the clipping's norm and scale 46 times each over the 147 tensors (953,223,168 elements) of the
// Llama 1B shape of bench/gpu/fsdp_step.py, and 18 times over the 292 of its 350M GPT shape.
TEST(Kernels, MultiTensorKernelsLaunchPerChunksOrTensorsAsAtenDoes) {
  EXPECT_EQ(multi_tensor_launches(953223168, 147, 4), 46);
  EXPECT_EQ(multi_tensor_launches(953223168, 147, 1), 46);
  EXPECT_EQ(multi_tensor_launches(65536 * 320, 1, 1), 1);
  EXPECT_EQ(multi_tensor_launches(65536 * 320 + 1, 1, 1), 2);
  EXPECT_EQ(multi_tensor_launches(1000, 110, 1), 1) << "small tensors: bound by the tensor count";
  EXPECT_EQ(multi_tensor_launches(1000, 111, 1), 2);
  EXPECT_EQ(multi_tensor_launches(1000, 37, 4), 2);
  EXPECT_EQ(multi_tensor_launches(0, 0, 2), 1);
  const auto fused = optimizer_step_kernels(953223168, 4, 8, OptimizerImplementation::Fused, 147);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].launches, 46);
  const auto clip = grad_clip_kernels(953223168, 4, 147);
  ASSERT_EQ(clip.size(), 2u);
  EXPECT_EQ(clip[0].launches + clip[1].launches, 92);
  for (const Kernel& k : optimizer_step_kernels(953223168, 4, 8, OptimizerImplementation::Foreach, 147))
    EXPECT_EQ(k.launches, 46) << k.name;
}

TEST(Schedule, TheOptimizerTemporaryFollowsItsImplementation) {
  json j = scenario_json();
  auto temporary = [&](const std::string& impl) -> int64_t {
    j["policy"] = {{"optimizer_implementation", impl}};
    const Program p = schedule(parse(j));
    int64_t bytes = -1;
    for (size_t i = 0; i + 1 < p.ops.size(); ++i)
      if (p.ops[i].kind == OpKind::Alloc && p.ops[i].memory == MemoryKind::OptimizerTemporary) {
        EXPECT_EQ(p.name(p.ops[i + 1]).rfind("optimizer_step", 0), 0u);
        bytes = p.ops[i].bytes();
      }
    return bytes;
  };
  const Program p = schedule(parse(scenario_json()));
  int64_t shard = 0, largest = 0;
  for (const ParamInfo& param : p.params) {
    shard += param.shard_numel;
    largest = std::max(largest, param.shard_numel);
  }
  EXPECT_EQ(temporary("foreach"), shard * 4);
  EXPECT_EQ(temporary("for_loop"), largest * 4);
  EXPECT_EQ(temporary("fused"), -1);  // none: the default, torchtitan's
  j["policy"] = {{"optimizer_implementation", "for-loop"}};
  coretest::expect_input_error([&] { parse(j); }, "policy.optimizer_implementation", {"\"for_loop\""});
}

// What the for-loop optimizer steps over (policy.optimizer_params), by the definition: FSDP1
// flattens each parameter group (a block; the root's embedding, final norm and head together)
// into one tensor padded to the shard count, and rank r owns [r C, (r + 1) C). The flat form
// steps over one chunk per group; the original-parameter views over each parameter that
// overlaps the rank's chunk, counted at the busiest rank; FSDP2 over every parameter's shard.
TEST(Schedule, TheForLoopStepsOverWhatTheFsdpVersionGivesTheOptimizer) {
  json j = scenario_json();
  struct Seen {
    int64_t temporary_bytes = -1;
    double step_us = -1;
  };
  auto run = [&](const char* params) {
    j["policy"] = {{"optimizer_implementation", "for_loop"}, {"optimizer_params", params}};
    const Program p = schedule(parse(j));
    Seen seen;
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::Alloc && op.memory == MemoryKind::OptimizerTemporary) seen.temporary_bytes = op.bytes();
      if (op.kind == OpKind::Compute && p.name(op).rfind("optimizer_step", 0) == 0) seen.step_us = op.compute_us();
    }
    return std::make_pair(seen, p);
  };
  // Shard 8: an embedding chunk is the largest view. HSDP shard 2: the chunks hold whole blocks
  // and the largest view is a parameter inside one chunk.
  for (const json& mesh : {json{{"shard", 8}}, json{{"shard", 2}, {"replicate", 4}}}) {
    SCOPED_TRACE(mesh.dump());
    j["mesh"] = mesh;
    const auto [dtensor, p] = run("dtensor");
    const auto [flat, p_flat] = run("fsdp1_flat_params");
    const auto [views, p_views] = run("fsdp1_orig_params");
    const Scenario sc = parse(j);
    const int64_t shards = sc.mesh.shard;
    // The groups by the definition: blocks one each, the root units (embedding, norm + head) one.
    std::map<int, std::vector<int64_t>> groups;
    int64_t largest_shard = 0;
    for (const ParamInfo& param : p.params) {
      groups[sc.model.units[param.unit].root ? -1 : param.unit].push_back(param.numel);
      largest_shard = std::max(largest_shard, param.shard_numel);
    }
    ASSERT_EQ(groups.size(), 3u);  // two blocks and the root group
    int64_t largest_chunk = 0, busiest = 0, largest_view = 0;
    std::vector<int64_t> views_of_rank(static_cast<size_t>(shards), 0);
    for (const auto& [group, sizes] : groups) {
      const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
      const int64_t chunk = (total + shards - 1) / shards;
      largest_chunk = std::max(largest_chunk, chunk);
      for (int64_t r = 0; r < shards; ++r) {
        int64_t a = 0;
        for (const int64_t n : sizes) {
          const int64_t overlap = std::min(a + n, (r + 1) * chunk) - std::max(a, r * chunk);
          if (overlap > 0) {
            ++views_of_rank[static_cast<size_t>(r)];
            largest_view = std::max(largest_view, overlap);
          }
          a += n;
        }
      }
    }
    for (const int64_t v : views_of_rank) busiest = std::max(busiest, v);
    EXPECT_EQ(dtensor.temporary_bytes, largest_shard * 4);
    EXPECT_EQ(flat.temporary_bytes, largest_chunk * 4);
    EXPECT_EQ(views.temporary_bytes, largest_view * 4);
    if (shards == 8) EXPECT_GT(largest_view, largest_shard);  // a whole embedding chunk, not an eighth of one tensor
    // Seven passes, each launched once per local tensor; everything else is the same.
    const double launch_us = sc.cluster.gpu.kernel_launch_us;
    const auto params = static_cast<double>(p.params.size());
    EXPECT_NEAR(dtensor.step_us - flat.step_us, 7 * launch_us * (params - 3), 1e-9 * dtensor.step_us);
    EXPECT_NEAR(dtensor.step_us - views.step_us, 7 * launch_us * (params - static_cast<double>(busiest)),
                1e-9 * dtensor.step_us);
    EXPECT_LT(busiest, static_cast<int64_t>(p.params.size()));
  }
  // FSDP1's flattening is per parameter group: byte buckets are refused, naming the key.
  j["policy"] = {{"optimizer_params", "fsdp1_flat_params"}, {"bucket_bytes", "8MiB"}};
  coretest::expect_input_error([&] { schedule(parse(j)); }, "policy.optimizer_params", {"bucket_bytes 0"});
  j["policy"] = {{"optimizer_params", "flat"}};
  coretest::expect_input_error([&] { parse(j); }, "policy.optimizer_params", {"fsdp1_flat_params"});
}

TEST(Schedule, ATransformerStepEndsWithClippingThenTheOptimizerStepOnTheComputeStream) {
  const Scenario s = parse(scenario_json());
  const Program p = schedule(s);
  ASSERT_GE(p.ops.size(), 3u);
  // The last three: clipping, the optimizer step, then the gradient shards freed (zero_grad).
  const Op& clip = p.ops[p.ops.size() - 3];
  const Op& adam = p.ops[p.ops.size() - 2];
  EXPECT_EQ(p.ops.back().kind, OpKind::Free);
  EXPECT_EQ(p.ops.back().memory, MemoryKind::ShardedGrads);
  EXPECT_EQ(clip.kind, OpKind::Compute);
  EXPECT_EQ(clip.phase, Phase::Finalize);
  EXPECT_EQ(clip.stream, StreamId::Compute);
  EXPECT_EQ(p.name(clip).rfind("clip_grad_norm", 0), 0u);
  EXPECT_EQ(p.name(adam).rfind("optimizer_step", 0), 0u);
  int64_t shard = 0;
  for (const ParamInfo& param : p.params) shard += param.shard_numel;
  // AdamW reads and writes the fp32 master shard and the two fp32 states and reads the gradient:
  // 28 bytes per parameter at 1 TB/s x 0.5, plus one launch.
  EXPECT_DOUBLE_EQ(adam.compute_us(), static_cast<double>(shard) * 28 / 0.5e12 * 1e6 + 4);
  EXPECT_DOUBLE_EQ(clip.compute_us(), static_cast<double>(shard) * 4 / 0.5e12 * 1e6 + 4 +
                                        static_cast<double>(shard) * 8 / 0.5e12 * 1e6 + 4);
  // Both come after the last reduce-scatter in program order (the compute stream waits for it).
  int last_rs = -1;
  for (const Op& op : p.ops)
    if (op.kind == OpKind::ReduceScatter) last_rs = p.id_of(op);
  ASSERT_GE(last_rs, 0);
  EXPECT_LT(last_rs, p.id_of(clip));
}

// The host term's counts (Program::host_launches, sim/host.h): a transformer unit's compute op
// launches its kernels; on one rank FSDP2 casts and copies each parameter into its unsharded
// tensor (two launches per parameter of the group), on more one split_with_sizes_copy does it;
// markers launch nothing, every other op once.
TEST(Schedule, EachOpCarriesTheLaunchesTheHostMakesForIt) {
  for (const int shard : {1, 8}) {
    json j = scenario_json();
    j["mesh"]["shard"] = shard;
    j["cluster"]["gpus_per_node"] = shard;
    const Scenario s = parse(j);
    const Program p = schedule(s);
    ASSERT_EQ(p.host_launches.size(), p.ops.size());
    const std::vector<UnitCompute> units = unit_breakdowns(s);
    int64_t shard_params = 0;
    for (const ParamInfo& param : p.params) shard_params += param.shard_numel;
    const auto tensors = static_cast<int64_t>(p.params.size());
    int compute_checked = 0, copy_outs = 0, end_of_step = 0;
    int64_t forward_copy_out_launches = 0;
    for (const Op& op : p.ops) {
      const uint32_t launches = p.host_launches[static_cast<size_t>(p.id_of(op))];
      if (is_marker(op.kind)) {
        EXPECT_EQ(launches, 0u);
      } else if (op.kind == OpKind::Compute && op.unit >= 0) {
        const UnitCompute& u = units[static_cast<size_t>(op.unit)];
        int64_t expected = 0;
        for (const TimedKernel& k : op.phase == Phase::Forward ? u.forward : u.backward) expected += k.launches;
        EXPECT_EQ(launches, static_cast<uint32_t>(expected)) << p.name(op);
        EXPECT_GT(launches, s.model.units[static_cast<size_t>(op.unit)].part == TransformerPart::Block ? 5u : 0u) << p.name(op);
        ++compute_checked;
      } else if (op.kind == OpKind::Compute) {  // clipping, then the optimizer step
        const bool clip = p.name(op).rfind("clip_grad_norm", 0) == 0;
        EXPECT_EQ(launches, total_launches(clip ? grad_clip_compute(s, shard_params, tensors)
                                                : optimizer_step_compute(s, shard_params, tensors)))
            << p.name(op);
        EXPECT_GE(launches, clip ? 2u : 1u);
        ++end_of_step;
      } else if (op.kind == OpKind::CopyOut) {
        if (shard > 1) EXPECT_EQ(launches, 1u) << p.name(op);
        if (op.phase == Phase::Forward) forward_copy_out_launches += launches;
        ++copy_outs;
      } else {
        EXPECT_EQ(launches, 1u) << p.name(op);
      }
    }
    EXPECT_GT(compute_checked, 4);
    EXPECT_GT(copy_outs, 2);
    EXPECT_EQ(end_of_step, 2);
    // One rank: forward unshards every parameter once, casting and copying each.
    if (shard == 1) EXPECT_EQ(forward_copy_out_launches, 2 * tensors);
  }
}

TEST(Schedule, TransientBytesAreAllocatedAroundTheComputeThatNeedsThem) {
  const Scenario s = parse(scenario_json("full"));
  const Program p = schedule(s);
  const UnitSpec& head = s.model.units.back();
  const UnitSpec& block = s.model.units[1];
  int checked = 0;
  for (size_t i = 1; i + 1 < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.kind != OpKind::Compute || op.unit < 0) continue;
    const UnitSpec& u = s.model.units[op.unit];
    const int64_t transient = op.phase == Phase::Forward ? u.forward_transient_bytes : u.backward_transient_bytes;
    if (transient == 0) continue;
    EXPECT_EQ(p.ops[i - 1].kind, OpKind::Alloc) << p.name(op);
    EXPECT_EQ(p.ops[i - 1].bytes(), transient) << p.name(op);
    EXPECT_EQ(p.ops[i + 1].kind, OpKind::Free) << p.name(op);
    EXPECT_EQ(p.ops[i + 1].bytes(), transient) << p.name(op);
    ++checked;
  }
  EXPECT_GT(head.forward_transient_bytes, 0);
  EXPECT_GT(block.backward_transient_bytes, 0);
  EXPECT_EQ(checked, 1 + 1 + 2);  // head forward, head backward, two block backwards
}

TEST(Schedule, ExplicitUnitsGetNoEndOfStepOps) {
  json j = scenario_json();
  j["model"] = json::parse(R"({"units": [{"name": "a", "params": 1000, "forward_flops": 1e9}]})");
  const Program p = schedule(parse(j));
  for (const Op& op : p.ops) EXPECT_NE(op.phase == Phase::Finalize && op.kind == OpKind::Compute, true) << p.name(op);
}

TEST(Workload, TokensFlopsAndPeakFollowTheDocumentedFormulas) {
  json j = scenario_json("full");
  j["policy"] = {{"micro_batches", 3}};
  const Scenario s = parse(j);
  const Workload w = workload_of(s);
  EXPECT_EQ(w.gpus, 8);
  EXPECT_DOUBLE_EQ(w.samples_per_step, 3.0 * 2 * 8);
  EXPECT_DOUBLE_EQ(w.tokens_per_step, 3.0 * 2 * 8 * 2048);
  // Every parameter once, less the untied token embedding (only looked up: 32,000 x 1,024).
  ASSERT_FALSE(s.model.transformer->tied_embeddings);
  const double N = static_cast<double>(s.model.total_params());
  const double per_token = 6 * (N - 32000.0 * 1024) + 12.0 * 2 * 1024 * 2048;
  EXPECT_DOUBLE_EQ(transformer_model_flops_per_token(s), per_token);
  // Tied, the one table is the output head's weight and counts once: the same FLOPs (and one
  // table fewer of parameters).
  json tied = j;
  tied["model"]["transformer"]["tied_embeddings"] = true;
  const Scenario st = parse(tied);
  EXPECT_DOUBLE_EQ(static_cast<double>(st.model.total_params()), N - 32000.0 * 1024);
  EXPECT_DOUBLE_EQ(transformer_model_flops_per_token(st), per_token);
  // The attention core's part: 12 L h s, and with full checkpointing each block's forward again.
  EXPECT_DOUBLE_EQ(transformer_attention_flops_per_token(s, false), 12.0 * 2 * 1024 * 2048);
  EXPECT_DOUBLE_EQ(transformer_attention_flops_per_token(s, true), 16.0 * 2 * 1024 * 2048);
  EXPECT_DOUBLE_EQ(transformer_attention_flops_per_token(parse(scenario_json("selective_op")), true), 12.0 * 2 * 1024 * 2048);
  EXPECT_DOUBLE_EQ(w.model_flops_per_step, per_token * w.tokens_per_step);
  // Full checkpointing re-runs each block's forward: 2 x block parameters + the attention, per
  // token, less the down projection (2 f h) that the early stop skips.
  const double block_params = static_cast<double>(s.model.units[1].params() + s.model.units[2].params());
  const double down = 2.0 * 4096 * 1024;
  EXPECT_DOUBLE_EQ(w.hardware_flops_per_step,
                   w.model_flops_per_step + (2 * block_params + 2 * (4.0 * 1024 * 2048 - down)) * w.tokens_per_step);
  j["model"]["transformer"]["checkpoint_early_stop"] = false;
  const Workload whole = workload_of(parse(j));
  EXPECT_DOUBLE_EQ(whole.hardware_flops_per_step,
                   w.model_flops_per_step + (2 * block_params + 4.0 * 2 * 1024 * 2048) * w.tokens_per_step);
  EXPECT_DOUBLE_EQ(w.peak_flops_per_gpu, 100e12);

  json units = scenario_json();
  units["model"] = json::parse(R"({"units": [{"name": "a", "params": 1000, "forward_flops": 1e9, "recompute": true}],
                                   "seq_len": 512, "micro_batch_size": 4})");
  const Workload u = workload_of(parse(units));
  EXPECT_DOUBLE_EQ(u.tokens_per_step, 512.0 * 4 * 8);
  EXPECT_DOUBLE_EQ(u.model_flops_per_step, (1e9 + 2e9) * 8);
  EXPECT_DOUBLE_EQ(u.hardware_flops_per_step, (1e9 + 2e9 + 1e9) * 8);
  units["model"].erase("seq_len");
  EXPECT_DOUBLE_EQ(workload_of(parse(units)).tokens_per_step, 0);  // unknown
}

TEST(Workload, AUnitWithOnePassGivenAsATimeLeavesTheModelFlopsUnknown) {
  // A partial sum (the forward's FLOPs without the timed backward's) would report too low an MFU.
  json units = scenario_json();
  units["model"] = json::parse(R"({"units": [{"name": "a", "params": 1000, "forward_flops": 1e9},
                                              {"name": "b", "params": 1000, "forward_flops": 1e9, "backward_time": "2ms"}],
                                   "seq_len": 512, "micro_batch_size": 4})");
  Workload w = workload_of(parse(units));
  EXPECT_DOUBLE_EQ(w.model_flops_per_step, 0);  // unknown
  EXPECT_DOUBLE_EQ(w.hardware_flops_per_step, 0);
  EXPECT_DOUBLE_EQ(w.tokens_per_step, 512.0 * 4 * 8);  // tokens do not need FLOPs
  // A backward of zero time is no work: the FLOPs are known (the forward's only).
  units["model"]["units"][1]["backward_time"] = "0ms";
  w = workload_of(parse(units));
  EXPECT_DOUBLE_EQ(w.model_flops_per_step, (1e9 + 2e9 + 1e9) * 8);
}

TEST(MemoryReserve, ContextNcclPerCommunicatorAndFragmentation) {
  json j = scenario_json();
  const MemoryReserve fsdp = memory_reserve_of(parse(j));
  EXPECT_EQ(fsdp.fixed_bytes, (int64_t{1} << 30) + (int64_t{256} << 20));
  EXPECT_DOUBLE_EQ(fsdp.fragmentation, 0.1);
  EXPECT_DOUBLE_EQ(fsdp.fragmentation_at_capacity, 0.1);  // not given: the same at capacity
  EXPECT_EQ(reserved_bytes(fsdp.fixed_bytes, fsdp.fragmentation, 1000), 1100 + fsdp.fixed_bytes);
  j["mesh"] = {{"shard", 4}, {"replicate", 2}};
  EXPECT_EQ(memory_reserve_of(parse(j)).fixed_bytes, (int64_t{1} << 30) + 2 * (int64_t{256} << 20));
  j["cluster"]["gpu"]["allocator_fragmentation_at_capacity"] = 0.2;
  coretest::expect_input_error([&] { parse(j); }, "cluster.gpu.allocator_fragmentation_at_capacity");
  j["cluster"]["gpu"].erase("allocator_fragmentation_at_capacity");
  // FSDP2 (the default: the optimizer steps over DTensors) takes its typical reserve from the
  // allocator's pools; FSDP1 (record_stream) from the peak active memory.
  EXPECT_TRUE(memory_reserve_of(parse(j)).typical_from_pools);
  EXPECT_DOUBLE_EQ(memory_reserve_of(parse(j)).pool_fragmentation, 0.02);
  j["policy"]["optimizer_params"] = "fsdp1_flat_params";
  j["policy"]["bucket_bytes"] = 0;
  EXPECT_FALSE(memory_reserve_of(parse(j)).typical_from_pools);
}

// The typical reserve while it fits; capped at the GPU, with cache flushes, while only the least
// reserve (the at-capacity fragmentation) fits; the least reserve when even that does not.
TEST(MemoryReserve, TypicalReserveCappedAtCapacityWhileTheLeastFits) {
  const MemoryReserve r{100, 0.25, 0.05};
  ReservedEstimate e = estimate_reserved(r, 1000, 1000, 2000);  // typical 1350, least 1150
  EXPECT_EQ(e.peak_reserved_bytes, 1350);
  EXPECT_EQ(e.min_reserved_bytes, 1150);
  EXPECT_EQ(e.allocator_reserved_bytes, 1250);  // without the context and NCCL buffers
  EXPECT_FALSE(e.cache_flushes);
  e = estimate_reserved(r, 1000, 1000, 1200);
  EXPECT_EQ(e.peak_reserved_bytes, 1200);
  EXPECT_EQ(e.min_reserved_bytes, 1150);
  EXPECT_EQ(e.allocator_reserved_bytes, 1100);  // the allocator fills what the fixed part leaves
  EXPECT_TRUE(e.cache_flushes);
  e = estimate_reserved(r, 1000, 1000, 1100);
  EXPECT_EQ(e.peak_reserved_bytes, 1150);
  EXPECT_FALSE(e.cache_flushes);
}

// With room, FSDP2's allocator keeps each stream's pool at its own peak: the typical reserve grows
// with their sum, while the least (it flushes its cache at capacity) follows the allocated peak.
// FSDP1's typical reserve ignores the pools.
TEST(MemoryReserve, Fsdp2sTypicalReserveIsThePoolsPeaksSum) {
  const MemoryReserve pools{100, 0.25, 0.05, 0.25, true};
  const ReservedEstimate e = estimate_reserved(pools, 1000, 1600, 5000);
  EXPECT_EQ(e.peak_reserved_bytes, 2100);  // 1600 x 1.25 + 100
  EXPECT_EQ(e.min_reserved_bytes, 1150);
  EXPECT_EQ(estimate_reserved(MemoryReserve{100, 0.25, 0.05}, 1000, 1600, 5000).peak_reserved_bytes, 1350);
  // A within-pool fragmentation below the at-capacity one never puts the typical under the least.
  EXPECT_EQ(estimate_reserved(MemoryReserve{100, 0.25, 0.05, 0.01, true}, 1000, 1000, 5000).peak_reserved_bytes, 1150);
}

}  // namespace
}  // namespace shardline
