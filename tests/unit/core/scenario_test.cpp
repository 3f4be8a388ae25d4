// Scenario JSON -> validated Scenario: transformer derivation, presets, overrides, every class of
// bad input, and every shipped scenario file.
#include <filesystem>
#include <functional>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/cluster_presets.h"
#include "core/error.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "core/units.h"
#include "core_test_support.h"

namespace shardline {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;

// A small valid scenario: 3 explicit units on a custom 1 x 8 cluster, FSDP over 8.
json tiny() {
  return json::parse(R"({
    "name": "tiny",
    "model": {"units": [
      {"name": "embedding", "params": 1000, "forward_flops": 1e6},
      {"name": "block", "tensors": [{"name": "w1", "numel": 4000}, {"name": "w2", "numel": 4000}],
       "forward_flops": "2G", "activation_bytes": "1MiB"},
      {"name": "head", "params": 1000, "forward_time": "1ms"}
    ]},
    "cluster": {
      "gpu": {"name": "g", "peak_tflops": {"bf16": 100, "fp32": 10}, "efficiency": 0.5, "memory": "16GiB",
              "copy_bandwidth": "500GB/s"},
      "nodes": 1, "gpus_per_node": 8,
      "intra_node": {"bandwidth": "100GB/s", "latency": "2us"}
    },
    "mesh": {"shard": 8}
  })");
}

json llama(int64_t layers, int64_t hidden, int64_t ffn, int64_t heads, int64_t kv, const std::string& ckpt) {
  json j = tiny();
  j["model"] = {{"transformer",
                 {{"layers", layers}, {"hidden", hidden}, {"ffn_hidden", ffn}, {"heads", heads}, {"kv_heads", kv},
                  {"vocab", 128256}, {"seq_len", 8192}, {"micro_batch_size", 1}, {"activation_checkpointing", ckpt}}}};
  // The op-level compute model's GPU numbers (any valid values: these tests check the derivation).
  j["cluster"]["gpu"].update({{"hbm_bandwidth", "2TB/s"}, {"gemm_efficiency", 0.8}, {"gemm_half_dim", 128},
                              {"attention_efficiency", 0.5}, {"memory_efficiency", 0.8}, {"kernel_launch", "4us"}});
  return j;
}

using coretest::expect_input_error;

// Applies `set` (path=value overrides) to the tiny scenario and expects an InputError at `where`.
void expect_bad(json j, const std::string& where, std::initializer_list<std::string> parts) {
  expect_input_error([&] { parse_scenario(j); }, where, parts);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "shardline_scenario_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

// ---- transformer derivation -------------------------------------------------------------------

TEST(Transformer, Llama3_8BUnitsAndParameterCount) {
  const Scenario s = parse_scenario(llama(32, 4096, 14336, 32, 8, "selective"));
  ASSERT_EQ(s.model.units.size(), 34u);
  EXPECT_EQ(s.model.units.front().name, "embedding");
  EXPECT_EQ(s.model.units[1].name, "layers.0");
  EXPECT_EQ(s.model.units[32].name, "layers.31");
  EXPECT_EQ(s.model.units.back().name, "norm+output");
  // Per block: q, o: h*h; k, v: h * kv_heads * head_dim; gate, up, down: h * ffn; two RMSNorm weights.
  const int64_t h = 4096, kv_dim = 8 * 128, ffn = 14336;
  const int64_t block = 2 * h * h + 2 * h * kv_dim + 3 * h * ffn + 2 * h;
  EXPECT_EQ(block, 218112000);
  EXPECT_EQ(s.model.units[1].params(), block);
  EXPECT_EQ(s.model.units.front().params(), 128256 * h);
  EXPECT_EQ(s.model.units.back().params(), 128256 * h + h);
  EXPECT_NEAR(static_cast<double>(s.model.total_params()), 8.03e9, 8.03e9 * 0.005);
  // Fused projections (the default): one q/k/v weight, one gate/up weight.
  const auto& t = s.model.units[1].tensors;
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].name, "attention.wqkv.weight");
  EXPECT_EQ(t[0].numel, h * (h + 2 * kv_dim));
  EXPECT_EQ(t[2].name, "feed_forward.w13.weight");
  EXPECT_EQ(t[2].numel, 2 * h * ffn);
  // Separate projections (torchtitan's wq, wk, wv; w1, w3): the same parameters in nine tensors.
  json j = llama(32, 4096, 14336, 32, 8, "selective");
  j["model"]["transformer"]["projections"] = "separate";
  const Scenario separate = parse_scenario(j);
  EXPECT_EQ(separate.model.units[1].params(), block);
  const auto& ts = separate.model.units[1].tensors;
  ASSERT_EQ(ts.size(), 9u);
  EXPECT_EQ(ts[1].name, "attention.wk.weight");
  EXPECT_EQ(ts[1].numel, h * kv_dim);
  EXPECT_EQ(ts[5].name, "feed_forward.w3.weight");
}

TEST(Transformer, Llama3_70BAnd405BParameterCounts) {
  EXPECT_NEAR(static_cast<double>(parse_scenario(llama(80, 8192, 28672, 64, 8, "full")).model.total_params()), 70.6e9,
              70.6e9 * 0.005);
  json j = llama(126, 16384, 53248, 128, 8, "full");
  EXPECT_NEAR(static_cast<double>(parse_scenario(j).model.total_params()), 405e9, 405e9 * 0.005);
}

TEST(Transformer, SavedActivationsPerCheckpointingModeWithFlashAttention) {
  // Llama shape: RMSNorm (one fp32 statistic per row), SwiGLU, RoPE, GQA; 16-bit activations.
  const int64_t T = 8192, h = 4096, kv = 8 * 128, f = 14336, a = 32, V = 128256, e = 2;
  const int64_t none_bytes = 2 * e * T * h + 4 * T      // attention norm input and output, 1/rms
                             + e * T * (h + 2 * kv)     // q, k, v after RoPE (FlashAttention's inputs)
                             + e * T * h + 4 * T * a    // its output and fp32 log-sum-exp (no s x s scores)
                             + 2 * e * T * h + 4 * T    // MLP norm input and output, 1/rms
                             + 4 * e * T * f;           // gate, up, SiLU(gate), product
  // The most each backward holds above what the forward kept (core/block_backward.h, tested on
  // its own there): here, in the MLP's backward, with w2's weight gradient.
  const int64_t mlp_backward = e * T * h + 2 * e * T * f + e * h * f;

  const Scenario none = parse_scenario(llama(2, h, f, a, 8, "none"));
  const UnitSpec& blk = none.model.units[1];
  EXPECT_EQ(blk.part, TransformerPart::Block);
  EXPECT_EQ(blk.activation_bytes, none_bytes);
  EXPECT_EQ(blk.backward_transient_bytes, mlp_backward);
  EXPECT_TRUE(blk.backward_transient_makes_weight_grads);
  EXPECT_FALSE(blk.recompute_forward);

  const Scenario selective = parse_scenario(llama(2, h, f, a, 8, "selective"));
  const UnitSpec& sel = selective.model.units[1];
  EXPECT_EQ(sel.activation_bytes, none_bytes - 4 * T * a);
  EXPECT_FALSE(sel.recompute_forward);

  // torchtitan's op-level policy keeps the block input, wq's and wv's outputs, the attention
  // output and log-sum-exp, and w1's and w2's outputs; the backward re-runs the rest of an
  // uncheckpointed block's tensors.
  json torchtitan = llama(2, h, f, a, 8, "selective_op");
  torchtitan["model"]["transformer"]["projections"] = "separate";  // its wq, wk, wv, w1, w3
  const Scenario op_sac = parse_scenario(torchtitan);
  const UnitSpec& op = op_sac.model.units[1];
  const int64_t op_kept = e * T * (h + h + kv + h + f + h) + 4 * T * a;
  EXPECT_EQ(op.activation_bytes, op_kept);
  EXPECT_EQ(op.backward_transient_bytes, none_bytes - (e * T * (h + kv + h + f) + 4 * T * a) + mlp_backward);
  EXPECT_FALSE(op.recompute_forward);  // a partial re-run, timed by its kernels
  // With fused projections it keeps the qkv projection's whole output (q and k before RoPE, v)
  // and the gate/up projection's (gate and up), and re-makes the rest.
  const UnitSpec& op_fused = parse_scenario(llama(2, h, f, a, 8, "selective_op")).model.units[1];
  EXPECT_EQ(op_fused.activation_bytes, e * T * (h + (h + kv) + kv + h + 2 * f) + 4 * T * a);
  EXPECT_EQ(op_fused.backward_transient_bytes, none_bytes - (e * T * (h + kv + h + 2 * f) + 4 * T * a) + mlp_backward);

  const Scenario full_ckpt = parse_scenario(llama(2, h, f, a, 8, "full"));
  const UnitSpec& full = full_ckpt.model.units[1];
  EXPECT_EQ(full.activation_bytes, e * T * h);  // only the block input
  EXPECT_EQ(full.backward_transient_bytes, none_bytes - e * T * h + mlp_backward);
  EXPECT_TRUE(full.recompute_forward);

  // The head keeps its norm's input and output and the 16-bit logits (held by the model output);
  // the loss keeps the fp32 log-softmax until its backward. The fp32 copy of the logits lives
  // through its forward; the loss's backward holds the fp32 NLL and log-softmax gradients together
  // (measured on torchtitan's step: docs/benchmarks.md), and the head's own backward (after the
  // pre-backward hooks) the 16-bit logit gradient and dX.
  const UnitSpec& head = none.model.units.back();
  EXPECT_EQ(head.part, TransformerPart::Head);
  EXPECT_EQ(head.activation_bytes, 2 * e * T * h + 4 * T);
  EXPECT_EQ(head.loss_activation_bytes, 4 * T * V);
  EXPECT_EQ(head.output_bytes, e * T * V);  // the 16-bit logits: the model's output
  EXPECT_FALSE(head.output_saved_by_loss);  // the fp32 loss keeps its copy's log-softmax, not them
  EXPECT_EQ(head.forward_transient_bytes, 4 * T * V);
  EXPECT_EQ(head.loss_backward_transient_bytes, 8 * T * V);  // the fp32 NLL and log-softmax gradients
  EXPECT_EQ(head.backward_transient_bytes, e * T * V + e * T * h);
  json fused = llama(2, h, f, a, 8, "none");
  fused["model"]["transformer"]["loss"] = "fused";
  const Scenario fused_scenario = parse_scenario(fused);
  const UnitSpec& fused_head = fused_scenario.model.units.back();
  EXPECT_EQ(fused_head.activation_bytes, 2 * e * T * h + 4 * T);
  EXPECT_EQ(fused_head.loss_activation_bytes, 4 * T);  // its log-sum-exp per row
  EXPECT_EQ(fused_head.output_bytes, e * T * V);
  EXPECT_TRUE(fused_head.output_saved_by_loss);  // a fused cross-entropy saves its input
  EXPECT_EQ(fused_head.forward_transient_bytes, 0);
  EXPECT_EQ(fused_head.loss_backward_transient_bytes, e * T * V);
  EXPECT_EQ(fused_head.backward_transient_bytes, e * T * V + e * T * h);
  // Over the 16-bit logits without an upcast: the 16-bit log-softmax is kept; the loss's backward
  // holds the NLL gradient and the log-softmax gradient together; then the head's, as above.
  json eager = llama(2, h, f, a, 8, "none");
  eager["model"]["transformer"]["loss"] = "eager_16bit";
  const Scenario eager_scenario = parse_scenario(eager);
  const UnitSpec& eager_head = eager_scenario.model.units.back();
  EXPECT_EQ(eager_head.activation_bytes, 2 * e * T * h + 4 * T);
  EXPECT_EQ(eager_head.loss_activation_bytes, e * T * V);
  EXPECT_FALSE(eager_head.output_saved_by_loss);
  EXPECT_EQ(eager_head.forward_transient_bytes, 0);
  EXPECT_EQ(eager_head.loss_backward_transient_bytes, 2 * e * T * V);
  EXPECT_EQ(eager_head.backward_transient_bytes, e * T * V + e * T * h);
  // A model that returns fp32 logits (`self.output(h).float()`): its output is the fp32 copy, the
  // 16-bit logits live only until that cast; the loss's log-softmax and backward are the same.
  json upcast = llama(2, h, f, a, 8, "none");
  upcast["model"]["transformer"]["logits_dtype"] = "fp32";
  const Scenario upcast_scenario = parse_scenario(upcast);
  const UnitSpec& upcast_head = upcast_scenario.model.units.back();
  EXPECT_EQ(upcast_head.activation_bytes, head.activation_bytes);
  EXPECT_EQ(upcast_head.loss_activation_bytes, head.loss_activation_bytes);
  EXPECT_EQ(upcast_head.loss_backward_transient_bytes, head.loss_backward_transient_bytes);
  EXPECT_EQ(upcast_head.output_bytes, 4 * T * V);
  EXPECT_EQ(upcast_head.forward_transient_bytes, e * T * V);
  EXPECT_EQ(upcast_head.backward_transient_bytes, head.backward_transient_bytes);
}

// MosaicML's MPT-7B as llm-foundry benchmarks it: GELU MLP of 4h, LayerNorm and linear biases,
// learned positions (max_seq_len = seq_len), tied embeddings. llm-foundry's README reports
// 6,658,859,008 parameters at sequence 2048 and 6,918,905,856 at 65536.
TEST(Transformer, MptKnobsReproduceLlmFoundryParameterCounts) {
  json j = llama(32, 4096, 16384, 32, 32, "full");
  j["model"]["transformer"].update({{"vocab", 50368}, {"seq_len", 2048}, {"mlp", "gelu"}, {"norm", "layernorm"},
                                    {"position", "learned"}, {"bias", true}, {"tied_embeddings", true}, {"attention", "mha"}});
  EXPECT_EQ(parse_scenario(j).model.total_params(), 6658859008);
  j["model"]["transformer"]["seq_len"] = 65536;
  EXPECT_EQ(parse_scenario(j).model.total_params(), 6918905856);
  // MPT's GELU block saves the norms' inputs, outputs and mean / 1/std, q, k, v, the attention
  // output and log-sum-exp, and the GELU's input and output: 16 activations of width h.
  j["model"]["transformer"]["activation_checkpointing"] = "none";
  const Scenario s = parse_scenario(j);
  const int64_t T = 65536, h = 4096;
  EXPECT_EQ(s.model.units[1].activation_bytes, 2 * 16 * T * h + 2 * 8 * T + 4 * T * 32);
  // Its backward holds most with dY, GELU's input gradient and the down projection's weight gradient.
  EXPECT_EQ(s.model.units[1].backward_transient_bytes, 2 * T * h + 2 * T * 4 * h + 2 * 4 * h * h);
}

// The Llama shapes of bench/published/torchtitan.json (torchtitan's llama2_configs / llama3_configs:
// SwiGLU, RMSNorm, RoPE, no biases, untied embeddings) give the released models' parameter counts.
TEST(Transformer, TorchtitanLlamaShapesReproduceTheReleasedParameterCounts) {
  json j = llama(40, 5120, 13824, 40, 40, "none");  // Llama 2 13B
  j["model"]["transformer"].update({{"vocab", 32000}, {"seq_len", 4096}});
  EXPECT_EQ(parse_scenario(j).model.total_params(), 13015864320);
  j = llama(80, 8192, 28672, 64, 8, "full");  // Llama 2 70B (GQA, 8 kv heads)
  j["model"]["transformer"].update({{"vocab", 32000}, {"seq_len", 4096}});
  EXPECT_EQ(parse_scenario(j).model.total_params(), 68976648192);
  j["model"]["transformer"].update({{"vocab", 128256}, {"seq_len", 8192}});  // Llama 3 70B
  EXPECT_EQ(parse_scenario(j).model.total_params(), 70553706496);
  // bench/published/fms_fsdp.json's other two shapes: Llama 2 7B and the 34B of fms-fsdp's
  // get_model_config (Code Llama 34B's shape).
  j = llama(32, 4096, 11008, 32, 32, "none");
  j["model"]["transformer"].update({{"vocab", 32000}, {"seq_len", 4096}});
  EXPECT_EQ(parse_scenario(j).model.total_params(), 6738415616);
  j = llama(48, 8192, 22016, 64, 8, "full");
  j["model"]["transformer"].update({{"vocab", 32000}, {"seq_len", 4096}});
  EXPECT_EQ(parse_scenario(j).model.total_params(), 33743970304);
}

// torchtitan's selective layer mode (selective_ac_option = '2'): a full checkpoint on every second
// block, counting from 1, so blocks 1, 3, ... are checkpointed and 0, 2, ... keep everything.
TEST(Transformer, CheckpointEveryKthBlockChecksOnlyThoseBlocks) {
  const int64_t T = 8192, h = 4096, e = 2;
  json j = llama(4, h, 14336, 32, 8, "full");
  j["model"]["transformer"]["checkpoint_every"] = 2;
  const Scenario s = parse_scenario(j);
  const Scenario none = parse_scenario(llama(4, h, 14336, 32, 8, "none"));
  for (int layer = 0; layer < 4; ++layer) {
    const UnitSpec& b = s.model.units[1 + layer];
    const bool checkpointed = layer % 2 == 1;
    EXPECT_EQ(b.checkpointing, checkpointed ? Checkpointing::Full : Checkpointing::None) << layer;
    EXPECT_EQ(b.recompute_forward, checkpointed) << layer;
    EXPECT_EQ(b.activation_bytes, checkpointed ? e * T * h : none.model.units[1 + layer].activation_bytes) << layer;
  }
  j["model"]["transformer"]["activation_checkpointing"] = "selective";
  expect_bad(j, "model.transformer.checkpoint_every", {"1 block in 2", "\"full\""});
  j["model"]["transformer"]["activation_checkpointing"] = "full";
  j["model"]["transformer"]["checkpoint_every"] = 0;
  expect_bad(j, "model.transformer.checkpoint_every", {"0"});
  // One block in k of 4 layers: k = 4 checkpoints block 3; k = 5 would checkpoint none.
  j["model"]["transformer"]["checkpoint_every"] = 4;
  EXPECT_EQ(parse_scenario(j).model.units[4].checkpointing, Checkpointing::Full);
  j["model"]["transformer"]["checkpoint_every"] = 5;
  expect_bad(j, "model.transformer.checkpoint_every", {"1 block in 5 of 4 layers checkpoints none", "at most 4"});
}

// Shapes the modelled kernels do not run are refused: an odd head_dim under RoPE (it rotates
// pairs of dimensions) and a head_dim beyond FlashAttention's 256.
TEST(Transformer, HeadDimensionsTheKernelsDoNotRunAreRefused) {
  json j = llama(2, 4000, 14336, 32, 8, "none");  // head_dim 125
  expect_bad(j, "model.transformer.heads", {"head_dim 125 (hidden 4000 / 32 heads) is odd", "\"rope\""});
  // Without RoPE an odd head_dim is no pair to rotate, but FlashAttention takes multiples of 8.
  j["model"]["transformer"]["position"] = "alibi";
  expect_bad(j, "model.transformer.heads", {"head_dim 125 (hidden 4000 / 32 heads) is not a multiple of 8"});
  j = llama(2, 3200, 14336, 32, 8, "none");  // head_dim 100: even, not a multiple of 8
  expect_bad(j, "model.transformer.heads", {"head_dim 100", "not a multiple of 8"});
  j = llama(2, 3840, 14336, 32, 8, "none");  // head_dim 120
  EXPECT_NO_THROW(parse_scenario(j));
  j = llama(2, 4096, 14336, 8, 8, "none");  // head_dim 512
  expect_bad(j, "model.transformer.heads", {"head_dim 512", "beyond the 256 FlashAttention takes"});
  j = llama(2, 4096, 14336, 16, 8, "none");  // head_dim 256: FlashAttention's largest
  EXPECT_NO_THROW(parse_scenario(j));
}

TEST(Transformer, TiedEmbeddingsDropTheOutputWeightAndMicroBatchScales) {
  json j = llama(2, 4096, 14336, 32, 8, "full");
  j["model"]["transformer"]["tied_embeddings"] = true;
  const Scenario tied = parse_scenario(j);
  EXPECT_EQ(tied.model.units.back().params(), 4096);
  // The embedding's backward makes a second 128,256 x 4,096 bf16 gradient beside the head's until
  // autograd adds it in (untied, its gradient is the table's own: no transient).
  EXPECT_EQ(tied.model.units.front().backward_transient_bytes, int64_t{2} * 128256 * 4096);
  EXPECT_EQ(parse_scenario(llama(2, 4096, 14336, 32, 8, "full")).model.units.front().backward_transient_bytes, 0);
  j["model"]["transformer"]["micro_batch_size"] = 2;
  j["model"]["transformer"]["tied_embeddings"] = false;
  const Scenario two = parse_scenario(j);
  const Scenario one = parse_scenario(llama(2, 4096, 14336, 32, 8, "full"));
  for (size_t u = 0; u < one.model.units.size(); ++u) {
    EXPECT_EQ(two.model.units[u].activation_bytes, 2 * one.model.units[u].activation_bytes) << u;
    // A block's backward transient holds w2's weight gradient, which the batch does not scale.
    const int64_t weights = one.model.units[u].part == TransformerPart::Block ? 2 * 4096 * 14336 : 0;
    EXPECT_EQ(two.model.units[u].backward_transient_bytes - weights,
              2 * (one.model.units[u].backward_transient_bytes - weights)) << u;
  }
  EXPECT_EQ(two.model.micro_batch_size, 2);
  EXPECT_EQ(two.model.seq_len, 8192);
}

TEST(Transformer, KnobsHaveDefaultsAndBadValuesNameTheAcceptedOnes) {
  const TransformerSpec t = *parse_scenario(llama(2, 4096, 14336, 32, 8, "none")).model.transformer;
  EXPECT_EQ(t.mlp, MlpKind::SwiGlu);
  EXPECT_EQ(t.norm, NormKind::RmsNorm);
  EXPECT_EQ(t.position, PositionKind::Rope);
  EXPECT_EQ(t.loss, LossKind::Fp32);
  EXPECT_FALSE(t.bias);
  EXPECT_EQ(t.dropout, 0);
  json j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["mlp"] = "swigl";
  expect_bad(j, "model.transformer.mlp", {"\"swigl\"", "did you mean \"swiglu\"?"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["position"] = "sinusoidal";
  expect_bad(j, "model.transformer.position", {"\"sinusoidal\"", "rope", "alibi", "learned"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["mpl"] = "gelu";
  expect_bad(j, "model.transformer.mpl", {"unknown key", "did you mean \"mlp\"?"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["attention"] = "mha";
  expect_bad(j, "model.transformer.attention", {"kv_heads = heads", "is 8"});
  j = llama(2, 4096, 14336, 32, 32, "none");
  j["model"]["transformer"]["attention"] = "gqa";
  expect_bad(j, "model.transformer.attention", {"fewer kv_heads"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["dropout"] = 1.5;
  expect_bad(j, "model.transformer.dropout", {"1.5", "[0, 1)"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["activation_checkpointing"] = "partial";
  expect_bad(j, "model.transformer.activation_checkpointing", {"\"partial\"", "none", "selective", "selective_op", "full"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["seq_len"] = 4096;
  expect_bad(j, "model.seq_len", {"inside model.transformer"});
  EXPECT_EQ(t.norm_impl, NormImpl::Fused);
  EXPECT_EQ(t.rope_impl, RopeImpl::Fused);
  EXPECT_EQ(t.projections, Projections::Fused);
  EXPECT_TRUE(t.checkpoint_early_stop);
  j = llama(2, 4096, 14336, 32, 8, "full");
  j["model"]["transformer"]["checkpoint_early_stop"] = false;
  EXPECT_FALSE(parse_scenario(j).model.transformer->checkpoint_early_stop);
  j["model"]["transformer"]["checkpoint_early_stop"] = "yes";
  expect_bad(j, "model.transformer.checkpoint_early_stop", {"\"yes\""});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["projections"] = "split";
  expect_bad(j, "model.transformer.projections", {"\"split\"", "fused", "separate"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["projection"] = "separate";
  expect_bad(j, "model.transformer.projection", {"did you mean \"projections\"?"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["norm_impl"] = "eager";
  expect_bad(j, "model.transformer.norm_impl", {"\"eager\"", "fused", "fused_one_pass", "eager_fp32"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"].update({{"norm", "layernorm"}, {"norm_impl", "eager_fp32"}});
  expect_bad(j, "model.transformer.norm_impl", {"needs norm \"rmsnorm\"", "layer_norm is one fused kernel"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"].update({{"position", "learned"}, {"rope_impl", "eager_complex"}});
  expect_bad(j, "model.transformer.rope_impl", {"\"eager_complex\"", "needs position \"rope\""});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["rope_impl"] = "eager_rotaton";
  expect_bad(j, "model.transformer.rope_impl", {"did you mean \"eager_rotation\"?"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["policy"]["output_lifetime"] = "step";
  expect_bad(j, "policy.output_lifetime", {"\"step\"", "backward", "loss"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["logits_dtype"] = "bf16";
  expect_bad(j, "model.transformer.logits_dtype", {"\"bf16\"", "param", "fp32"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"].update({{"loss", "fused"}, {"logits_dtype", "fp32"}});
  expect_bad(j, "model.transformer.logits_dtype", {"needs loss \"fp32\""});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["loss"] = "bf16";
  expect_bad(j, "model.transformer.loss", {"\"bf16\"", "fp32", "eager_16bit", "fused"});
}

// The eager fp32 RMSNorm keeps the fp32 copy of its input (for pow and the multiply by 1/rms) in
// place of the 16-bit input, and the 16-bit normalized input (for the multiply by the weight):
// 4 bytes more per element and norm; RoPE's eager forms keep nothing more (only the rotation
// tables, which need no gradient).
TEST(Transformer, AnEagerFp32NormKeepsItsFp32InputCopy) {
  json j = llama(2, 4096, 14336, 32, 8, "none");
  const Scenario fused = parse_scenario(j);
  j["model"]["transformer"].update({{"norm_impl", "eager_fp32"}, {"rope_impl", "eager_rotation"}});
  const Scenario eager = parse_scenario(j);
  const int64_t T = 8192, h = 4096;
  EXPECT_EQ(eager.model.units[1].activation_bytes - fused.model.units[1].activation_bytes, 2 * 4 * T * h);
  EXPECT_EQ(eager.model.units.back().activation_bytes - fused.model.units.back().activation_bytes, 4 * T * h);
}

TEST(Transformer, ShapesTooLargeToCountAreRefusedNamingTheShape) {
  json j = llama(2, 1099511627776, 14336, 32, 8, "none");
  expect_bad(j, "model.transformer", {"parameters", "hidden"});
  j = llama(1000000, 65536, 262144, 128, 8, "none");
  expect_bad(j, "model.transformer", {"parameters"});
  j = llama(10000000, 256, 688, 4, 2, "none");  // tiny layers, but ten million of them
  expect_bad(j, "model.transformer.layers", {"10000000", "at most 1000000"});
  expect_input_error([] { parse_rate_bytes_per_s("1e-300B/s", "cluster.intra_node.bandwidth"); }, "cluster.intra_node.bandwidth",
                     {"out of range"});
}

TEST(Transformer, TheComputeModelNeedsTheGpusBandwidthAndEfficiencies) {
  json j = llama(2, 4096, 14336, 32, 8, "none");
  j["cluster"]["gpu"].erase("hbm_bandwidth");
  expect_bad(j, "cluster.gpu.hbm_bandwidth", {"missing", "roofline"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["cluster"]["gpu"]["gemm_efficiency"] = 1.5;
  expect_bad(j, "cluster.gpu.gemm_efficiency", {"1.5", "[0.001, 1]"});
  j = llama(2, 4096, 14336, 32, 8, "none");
  j["cluster"]["gpu"]["allocator_fragmentation"] = -0.1;
  expect_bad(j, "cluster.gpu.allocator_fragmentation", {"-0.1", "[0, 1]"});
  // Explicit units keep the flat model: no kernel numbers needed.
  EXPECT_NO_THROW(parse_scenario(tiny()));
}

// The shorthand's embedding and final norm + head are the FSDP root's units by default (fully_shard
// on every block, then on the model); root_group false makes them units of their own.
TEST(Transformer, EmbeddingAndHeadAreTheRootUnlessRootGroupIsFalse) {
  json j = llama(2, 4096, 14336, 32, 8, "none");
  const Scenario rooted = parse_scenario(j);
  ASSERT_EQ(rooted.model.units.size(), 4u);
  EXPECT_TRUE(rooted.model.units.front().root);
  EXPECT_TRUE(rooted.model.units.back().root);
  EXPECT_FALSE(rooted.model.units[1].root);
  j["model"]["transformer"]["root_group"] = false;
  const Scenario separate = parse_scenario(j);
  for (const UnitSpec& u : separate.model.units) EXPECT_FALSE(u.root) << u.name;
  // torchtitan's [norm, output] is kept unsharded after forward; the embedding follows the policy.
  EXPECT_EQ(separate.model.units.back().reshard_after_forward, std::optional<bool>(false));
  EXPECT_FALSE(separate.model.units.front().reshard_after_forward.has_value());
  // A tied weight is in one group: tied embeddings keep the embedding and the head together.
  j["model"]["transformer"]["tied_embeddings"] = true;
  const Scenario tied = parse_scenario(j);
  EXPECT_TRUE(tied.model.units.front().root);
  EXPECT_TRUE(tied.model.units.back().root);
  j["model"]["transformer"]["root_group"] = "yes";
  expect_bad(j, "model.transformer.root_group", {"\"yes\""});
}

// torchtitan (2024 to July 2025) gave the last block's fully_shard reshard_after_forward=False:
// last_block_reshard_after_forward false keeps that block, and only it, from forward into backward.
TEST(Transformer, LastBlockReshardAfterForwardSetsTheLastBlockOnly) {
  json j = llama(3, 4096, 14336, 32, 8, "none");
  for (const UnitSpec& u : parse_scenario(j).model.units)
    if (u.part == TransformerPart::Block) EXPECT_FALSE(u.reshard_after_forward.has_value()) << u.name;
  j["model"]["transformer"]["last_block_reshard_after_forward"] = false;
  const Scenario kept = parse_scenario(j);
  ASSERT_EQ(kept.model.units.size(), 5u);
  EXPECT_FALSE(kept.model.units[1].reshard_after_forward.has_value());
  EXPECT_FALSE(kept.model.units[2].reshard_after_forward.has_value());
  EXPECT_EQ(kept.model.units[3].name, "layers.2");
  EXPECT_EQ(kept.model.units[3].reshard_after_forward, std::optional<bool>(false));
  // Scheduled: the last block is gathered once per micro-batch, the others twice.
  int last_block_gathers = 0, first_block_gathers = 0;
  const Program p = schedule(kept);
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::AllGather) continue;
    last_block_gathers += op.unit == 3;
    first_block_gathers += op.unit == 1;
  }
  EXPECT_EQ(last_block_gathers, 1);
  EXPECT_EQ(first_block_gathers, 2);
  j["model"]["transformer"]["last_block_reshard_after_forward"] = "no";
  expect_bad(j, "model.transformer.last_block_reshard_after_forward", {"\"no\""});
}

// ---- explicit units, cluster, mesh, policy ----------------------------------------------------

// An explicit unit may be part of the FSDP root; a bucket size of its own would split the root's
// one parameter group and is refused.
TEST(Units, RootUnitsTakeNoBucketSizeOfTheirOwn) {
  json j = tiny();
  j["model"]["units"][0]["root"] = true;
  EXPECT_TRUE(parse_scenario(j).model.units[0].root);
  EXPECT_FALSE(parse_scenario(j).model.units[1].root);
  j["model"]["units"][0]["bucket_bytes"] = "4MiB";
  expect_bad(j, "model.units.0.bucket_bytes", {"FSDP root", "one parameter group"});
  j["model"]["units"][0].erase("bucket_bytes");
  j["model"]["units"][0]["reshard_after_forward"] = true;
  expect_bad(j, "model.units.0.reshard_after_forward", {"FSDP root", "never reshards after forward"});
  j["model"]["units"][0].erase("root");
  EXPECT_EQ(parse_scenario(j).model.units[0].reshard_after_forward, std::optional<bool>(true));
  j["model"]["units"][0]["reshard_after_forward"] = 2;
  expect_bad(j, "model.units.0.reshard_after_forward", {"2"});
}

// Byte buckets (ZeRO-3 style) fetch a tied weight at each use, which is not modelled: refused,
// naming the bucket size, rather than a head computing with a weight no bucket gathers.
TEST(Transformer, TiedEmbeddingsWithByteBucketsAreRefused) {
  json j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["tied_embeddings"] = true;
  j["policy"] = {{"bucket_bytes", "64MiB"}};
  expect_input_error([&] { schedule(parse_scenario(j)); }, "policy.bucket_bytes", {"tied_embeddings", "not modelled"});
}

TEST(Units, ExplicitUnitsParamsTensorsTimesAndDefaults) {
  json j = tiny();
  j["model"]["units"][1]["repeat"] = 3;
  j["model"]["units"][1]["bucket_bytes"] = "4MiB";
  const Scenario s = parse_scenario(j);
  ASSERT_EQ(s.model.units.size(), 5u);
  EXPECT_EQ(s.model.units[1].name, "block.0");
  EXPECT_EQ(s.model.units[3].name, "block.2");
  EXPECT_EQ(s.model.units[2].params(), 8000);
  EXPECT_EQ(s.model.units[2].activation_bytes, 1 << 20);
  EXPECT_EQ(s.model.units[2].bucket_bytes, std::optional<int64_t>(4 << 20));
  EXPECT_DOUBLE_EQ(s.model.units[1].forward_flops, 2e9);
  EXPECT_DOUBLE_EQ(s.model.units[1].backward_flops, 4e9);  // default: 2 x forward
  EXPECT_EQ(s.model.units[0].params(), 1000);
  EXPECT_EQ(s.model.units[4].forward_time_us, std::optional<double>(1000));
  EXPECT_EQ(s.model.units[4].backward_time_us, std::optional<double>(2000));
  EXPECT_EQ(s.model.name, "custom");
}

TEST(Cluster, PresetsCarryRealNumbers) {
  json j = tiny();
  j["cluster"] = {{"preset", "h100-sxm-dgx"}};
  const Scenario s = parse_scenario(j);
  EXPECT_EQ(s.cluster.name, "h100-sxm-dgx");
  EXPECT_EQ(s.cluster.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak_tflops.at(DType::bf16), 989);
  EXPECT_EQ(s.cluster.gpu.memory_bytes, 81559LL << 20);  // what nvidia-smi reports for an H100 SXM5 80GB
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_bandwidth_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node.bandwidth_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(s.cluster.inter_node.bandwidth_bytes_per_s, 50e9);  // 400 Gb/s
  EXPECT_DOUBLE_EQ(s.cluster.launch_overhead_us, 5);

  j["cluster"] = {{"preset", "a100-80gb-dgx"}, {"nodes", 2}, {"gpu", {{"efficiency", 0.4}}}};
  j["mesh"] = {{"shard", 8}, {"replicate", 2}};
  const Scenario a = parse_scenario(j);
  EXPECT_DOUBLE_EQ(a.cluster.gpu.peak_tflops.at(DType::bf16), 312);
  EXPECT_DOUBLE_EQ(a.cluster.gpu.efficiency, 0.4);      // overridden
  EXPECT_EQ(a.cluster.gpu.memory_bytes, 80LL << 30);  // kept from the preset
  EXPECT_DOUBLE_EQ(a.cluster.gpu.hbm_bandwidth_bytes_per_s, 2.039e12);
  EXPECT_DOUBLE_EQ(a.cluster.inter_node.bandwidth_bytes_per_s, 25e9);
  EXPECT_EQ(a.mesh.world(), 16);
  for (const auto& name : cluster_preset_names()) {
    const json preset = cluster_preset_json(name, "test");
    j["cluster"] = {{"preset", name}};
    j["mesh"] = {{"shard", preset["nodes"].get<int>() * preset["gpus_per_node"].get<int>()}};
    EXPECT_NO_THROW(parse_scenario(j)) << name;
  }
  EXPECT_EQ(cluster_preset_names().size(), 9u);
  // A "-torch2.11" preset is its hardware preset (resolved through its own same_as) with the chip
  // numbers measured on that software: hardware fields from the base, efficiencies its own.
  for (const auto& [torch_name, base_name] : {std::pair{"h100-sxm-dgx-torch2.11", "h100-sxm-dgx"},
                                              std::pair{"h200-sxm-hgx-torch2.11", "h200-sxm-hgx"}}) {
    const json current = cluster_preset_json(torch_name, "test");
    const json base = cluster_preset_json(base_name, "test");
    EXPECT_FALSE(current.contains("same_as")) << torch_name;
    for (const char* field : {"name", "memory", "hbm_bandwidth", "peak_tflops", "context_memory"})
      EXPECT_EQ(current["gpu"][field], base["gpu"][field]) << torch_name << " " << field;
    EXPECT_EQ(current["intra_node"], base["intra_node"]) << torch_name;
    EXPECT_NE(current["gpu"]["gemm_efficiency"], base["gpu"]["gemm_efficiency"]) << torch_name;
    EXPECT_NE(current["gpu"]["copy_bandwidth"], base["gpu"]["copy_bandwidth"]) << torch_name;
  }
  EXPECT_EQ(cluster_preset_json("h200-sxm-hgx-torch2.11", "test")["gpu"]["memory"], "143771MiB");
  // The H200 is the H100's chip with more, faster HBM: the same fitted compute-model numbers.
  j["cluster"] = {{"preset", "h200-sxm-hgx"}};
  j["mesh"] = {{"shard", 8}};
  const Scenario h200 = parse_scenario(j);
  j["cluster"] = {{"preset", "h100-sxm-dgx"}};
  const Scenario h100 = parse_scenario(j);
  EXPECT_EQ(h200.cluster.gpu.memory_bytes, 143771LL << 20);
  EXPECT_DOUBLE_EQ(h200.cluster.gpu.hbm_bandwidth_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.cluster.gpu.gemm_efficiency, h100.cluster.gpu.gemm_efficiency);
  EXPECT_DOUBLE_EQ(h200.cluster.gpu.memory_efficiency, h100.cluster.gpu.memory_efficiency);
  EXPECT_DOUBLE_EQ(h200.cluster.intra_node.bandwidth_bytes_per_s, h100.cluster.intra_node.bandwidth_bytes_per_s);
  // The RoCE presets are the DGX A100 nodes with flat-ring collectives (bench/published/README.md).
  for (const char* name : {"a100-80gb-roce", "a100-40gb-roce"}) {
    const json roce = cluster_preset_json(name, "test");
    EXPECT_FALSE(roce["hierarchical_collectives"].get<bool>()) << name;
    EXPECT_EQ(roce["gpu"]["gemm_efficiency"], cluster_preset_json("a100-80gb-dgx", "test")["gpu"]["gemm_efficiency"]) << name;
  }
  EXPECT_EQ(cluster_preset_json("a100-40gb-roce", "test")["gpu"]["memory"], "40960MiB");
  // The A100 40GB is the 80GB preset with less, slower HBM.
  j["cluster"] = {{"preset", "a100-40gb-dgx"}};
  j["mesh"] = {{"shard", 8}};
  const Scenario forty = parse_scenario(j);
  EXPECT_EQ(forty.cluster.gpu.memory_bytes, 40LL << 30);
  EXPECT_DOUBLE_EQ(forty.cluster.gpu.hbm_bandwidth_bytes_per_s, 1.555e12);
  EXPECT_EQ(forty.cluster.gpu.name, "A100 SXM4 40GB");
  EXPECT_DOUBLE_EQ(forty.cluster.gpu.gemm_efficiency, a.cluster.gpu.gemm_efficiency);
  EXPECT_DOUBLE_EQ(forty.cluster.inter_node.bandwidth_bytes_per_s, 25e9);
}

// Under JSON merge patch a null would delete the preset's value and fall back to the schema's
// default without a word (gemm_half_dim 634 -> 0 moved MFU by 3 points): refused, path named.
TEST(Cluster, ANullOverrideIsRefusedNotMergedAway) {
  json j = tiny();
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"gpu", {{"gemm_half_dim", nullptr}}}};
  j["mesh"] = {{"shard", 8}};
  expect_input_error([&] { parse_scenario(j); }, "cluster.gpu.gemm_half_dim", {"got null", "leave the key out"});
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"compute_slowdown_during_comm", nullptr}};
  expect_input_error([&] { parse_scenario(j); }, "cluster.compute_slowdown_during_comm", {"got null"});
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"gpu", {{"peak_tflops", {{"bf16", nullptr}}}}}};
  expect_input_error([&] { parse_scenario(j); }, "cluster.gpu.peak_tflops.bf16", {"got null"});
}

// The slow-down factors are bounded as a calibrated profile's: a factor of 1e306 had the
// simulator schedule an event at infinity and abort (exit 134), a whole sweep with it.
TEST(Cluster, SlowdownFactorsAreBetweenOneAndAHundred) {
  json j = tiny();
  j["mesh"] = {{"shard", 8}};
  for (const char* key : {"compute_slowdown_during_comm", "comm_slowdown_during_compute"}) {
    for (double bad : {1e306, 100.5, 0.5}) {
      j["cluster"] = {{"preset", "h100-sxm-dgx"}, {key, bad}};
      expect_input_error([&] { parse_scenario(j); }, std::string("cluster.") + key, {"expected a slow-down factor in [1, 100]"});
    }
    j["cluster"] = {{"preset", "h100-sxm-dgx"}, {key, 100}};
    EXPECT_NO_THROW(parse_scenario(j));
  }
}

// FlashAttention's per-pass, per-sequence and per-head-dimension parameters: the -torch2.11
// presets carry them, the presets fitted on published runs leave them unset (no dependence); bad
// values name their path.
TEST(Cluster, AttentionParametersReadAndChecked) {
  json j = tiny();
  j["mesh"] = {{"shard", 8}};
  j["cluster"] = {{"preset", "h100-sxm-dgx"}};
  const GpuSpec plain = parse_scenario(j).cluster.gpu;
  EXPECT_FALSE(plain.attention_backward_efficiency.has_value());
  EXPECT_FALSE(plain.attention_backward_half_seq.has_value());
  EXPECT_EQ(plain.attention_half_seq, 0);
  EXPECT_EQ(plain.attention_half_head_dim, 0);
  j["cluster"] = {{"preset", "h100-sxm-dgx-torch2.11"}};
  const GpuSpec fitted = parse_scenario(j).cluster.gpu;
  EXPECT_GT(fitted.attention_half_seq, 0);
  EXPECT_GT(fitted.attention_half_head_dim, 0);
  EXPECT_TRUE(fitted.attention_backward_efficiency.has_value());
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"gpu", {{"attention_half_seq", -1}}}};
  expect_input_error([&] { parse_scenario(j); }, "cluster.gpu.attention_half_seq", {"-1", "[0, 1e7] tokens"});
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"gpu", {{"attention_half_head_dim", 5000}}}};
  expect_input_error([&] { parse_scenario(j); }, "cluster.gpu.attention_half_head_dim", {"5000", "[0, 4096]"});
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"gpu", {{"attention_backward_efficiency", 2}}}};
  expect_input_error([&] { parse_scenario(j); }, "cluster.gpu.attention_backward_efficiency", {"2", "[0.001, 1]"});
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"gpu", {{"attention_half_sequence", 100}}}};
  expect_input_error([&] { parse_scenario(j); }, "cluster.gpu.attention_half_sequence", {"did you mean \"attention_half_seq\"?"});
}

TEST(Cluster, FileRelativeToTheScenario) {
  write_temp("cluster_file_test_clusters.json", R"({
    "gpu": {"peak_tflops": {"bf16": 50}, "memory": "24GiB", "copy_bandwidth": "300GB/s"},
    "nodes": 1, "gpus_per_node": 8, "intra_node": {"bandwidth": "64GB/s", "latency": "3us"}})");
  json j = tiny();
  j["cluster"] = {{"file", "cluster_file_test_clusters.json"}, {"gpu", {{"efficiency", 0.3}}}};
  const std::string path = write_temp("cluster_file_test.json", j.dump());
  const Scenario s = load_scenario(path);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak_tflops.at(DType::bf16), 50);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.efficiency, 0.3);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node.latency_us, 3);
}

// A bad value that came from the cluster file says so (the path alone, cluster.gpu.memory, is
// the merged one); a bad value the scenario sets on top does not blame the file.
TEST(Cluster, AnErrorInTheClusterFileNamesTheFile) {
  write_temp("cluster_file_bad_clusters.json", R"({
    "gpu": {"peak_tflops": {"bf16": 50}, "memory": "-3GiB", "copy_bandwidth": "300GB/s"},
    "nodes": 1, "gpus_per_node": 8, "intra_node": {"bandwidth": "64GB/s", "latency": "3us"}, "colour": 1})");
  json j = tiny();
  j["cluster"] = {{"file", "cluster_file_bad_clusters.json"}};
  const std::string unknown = write_temp("cluster_file_bad.json", j.dump());
  const auto message = [](const std::string& path) {
    try {
      load_scenario(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message(unknown), HasSubstr("colour"));
  EXPECT_THAT(message(unknown), HasSubstr("(in the cluster file \"cluster_file_bad_clusters.json\")"));
  write_temp("cluster_file_bad_clusters.json", R"({
    "gpu": {"peak_tflops": {"bf16": 50}, "memory": "-3GiB", "copy_bandwidth": "300GB/s"},
    "nodes": 1, "gpus_per_node": 8, "intra_node": {"bandwidth": "64GB/s", "latency": "3us"}})");
  EXPECT_THAT(message(unknown), HasSubstr("cluster.gpu.memory"));
  EXPECT_THAT(message(unknown), HasSubstr("(in the cluster file \"cluster_file_bad_clusters.json\")"));
  j["cluster"]["gpu"] = {{"memory", "-5GiB"}};  // the scenario's own value: not the file's fault
  const std::string own = write_temp("cluster_file_bad.json", j.dump());
  EXPECT_THAT(message(own), HasSubstr("cluster.gpu.memory"));
  EXPECT_THAT(message(own), ::testing::Not(HasSubstr("cluster file")));
}

TEST(Policy, ValuesAndDefaults) {
  json j = tiny();
  EXPECT_EQ(parse_scenario(j).policy.bucket_bytes, 0);
  EXPECT_EQ(parse_scenario(j).policy.reshard_after_forward.mode, ReshardAfterForward::Mode::Full);
  j["policy"] = {{"bucket_bytes", "64MiB"}, {"reshard_after_forward", 4}, {"forward_prefetch", 2},
                 {"backward_prefetch", 0}, {"param_dtype", "fp32"}, {"reduce_dtype", "bf16"},
                 {"micro_batches", 4}, {"grad_sync", "last"}, {"average_gradients", false},
                 {"comm_fusion", false}, {"zero_copy", true}, {"optimizer_bytes_per_param", 12}};
  const PolicySpec p = parse_scenario(j).policy;
  EXPECT_EQ(p.bucket_bytes, 64 << 20);
  EXPECT_EQ(p.reshard_after_forward.mode, ReshardAfterForward::Mode::Partial);
  EXPECT_EQ(p.reshard_after_forward.group_size, 4);
  EXPECT_EQ(p.forward_prefetch, 2);
  EXPECT_EQ(p.backward_prefetch, 0);
  EXPECT_EQ(p.param_dtype, DType::fp32);
  EXPECT_EQ(p.reduce_dtype, DType::bf16);
  EXPECT_EQ(p.micro_batches, 4);
  EXPECT_EQ(p.grad_sync, GradSync::Last);
  EXPECT_FALSE(p.average_gradients);
  EXPECT_FALSE(p.comm_fusion);
  EXPECT_TRUE(p.zero_copy);
  EXPECT_EQ(p.optimizer_bytes_per_param, 12);
  EXPECT_FALSE(p.root_reshard_after_forward);  // the root kept from forward into backward
  j["policy"]["root_reshard_after_forward"] = true;
  EXPECT_TRUE(parse_scenario(j).policy.root_reshard_after_forward);
  j["policy"] = {{"bucket_bytes", 0}, {"reshard_after_forward", false}};
  EXPECT_EQ(parse_scenario(j).policy.bucket_bytes, 0);
  EXPECT_EQ(parse_scenario(j).policy.reshard_after_forward.mode, ReshardAfterForward::Mode::Keep);
  j["policy"] = {{"bucket_bytes", "unit"}};
  EXPECT_EQ(parse_scenario(j).policy.bucket_bytes, 0);
  // A string that is no size names the key's other value too, and "Unit" is refused suggesting "unit".
  j["policy"] = {{"bucket_bytes", "Unit"}};
  expect_bad(j, "policy.bucket_bytes", {"is not a valid size", "did you mean \"unit\" (one bucket per unit)?"});
  j["policy"] = {{"bucket_bytes", "64QB"}};
  expect_bad(j, "policy.bucket_bytes", {"is not a valid size", "or \"unit\" / 0 for one bucket per unit"});
}

// ---- every class of bad input -----------------------------------------------------------------

TEST(BadInput, UnknownKeysSuggestTheClosest) {
  json j = tiny();
  j["policy"] = {{"bucket_byte", 1}};
  expect_bad(j, "policy.bucket_byte", {"unknown key", "did you mean \"bucket_bytes\"?"});
  j = tiny();
  j["modle"] = 1;
  expect_bad(j, "modle", {"did you mean \"model\"?"});
  j = tiny();
  j["cluster"]["gpu"]["effciency"] = 0.5;
  expect_bad(j, "cluster.gpu.effciency", {"did you mean \"efficiency\"?"});
  j = tiny();
  j["model"]["units"][1]["tensors"][0]["numels"] = 5;
  expect_bad(j, "model.units.1.tensors.0.numels", {"did you mean \"numel\"?"});
  j = tiny();
  j["cluster"] = {{"preset", "h100-sxm-dgx"}, {"gpus_per_nod", 8}};
  expect_bad(j, "cluster.gpus_per_nod", {"did you mean \"gpus_per_node\"?"});
  j = tiny();
  j["mesh"]["zzzzzzzz"] = 1;
  expect_bad(j, "mesh.zzzzzzzz", {"expected one of: replicate, shard"});
}

// A plain number is bytes: a GPU of 80 B is "80" meant as GB, refused rather than reported as a run
// that does not fit (an audit found it accepted).
TEST(BadInput, AGpuMemoryUnderAMebibyteIsRefused) {
  json j = tiny();
  j["cluster"]["gpu"]["memory"] = 80;
  expect_bad(j, "cluster.gpu.memory", {"80 is 80 B, under 1 MiB (a plain number is bytes); expected a memory size such as \"80GiB\""});
  j["cluster"]["gpu"]["memory"] = "1MiB";
  EXPECT_EQ(parse_scenario(j).cluster.gpu.memory_bytes, 1 << 20);
}

// The allocator at capacity holds no more than otherwise. The message names the bound and says when
// it is only the default (an audit: it blamed "the preset's" value on a cluster without a preset).
TEST(BadInput, FragmentationAtCapacityAboveTheOtherNamesTheBound) {
  json j = tiny();
  j["cluster"]["gpu"]["allocator_fragmentation_at_capacity"] = 0.1;
  expect_bad(j, "cluster.gpu.allocator_fragmentation_at_capacity",
             {"0.1 is above allocator_fragmentation (0, its default: neither the scenario nor its preset or cluster file sets it)"});
  j["cluster"]["gpu"]["allocator_fragmentation"] = 0.05;
  expect_bad(j, "cluster.gpu.allocator_fragmentation_at_capacity", {"0.1 is above allocator_fragmentation (0.05);"});
  try {
    parse_scenario(j);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find("preset's"), std::string::npos) << e.what();
  }
}

// Names are printed and put into every op's label: blank, over 256 bytes, or with a control
// character (a newline split the summary, an escape coloured the terminal) is refused at its path.
TEST(BadInput, NamesAreShortPrintableAndNotBlank) {
  const auto refused = [](const std::string& where, const std::string& name, std::initializer_list<std::string> expected) {
    json j = tiny();
    if (where == "name") j["name"] = name;
    else if (where == "model.units.1.name") j["model"]["units"][1]["name"] = name;
    else if (where == "model.units.1.tensors.0.name") j["model"]["units"][1]["tensors"][0]["name"] = name;
    else j["cluster"]["gpu"]["name"] = name;
    expect_bad(j, where, expected);
  };
  refused("name", "", {"a blank name"});
  refused("name", "  ", {"a blank name"});
  refused("name", std::string(257, 'n'), {"a name of 257 bytes; expected at most 256"});
  refused("name", "a\nb", {"a name with a control character"});
  refused("model.units.1.name", "esc\x1b[31mred", {"a name with a control character"});
  refused("model.units.1.name", std::string(1000000, 'U'), {"a name of 1000000 bytes"});
  refused("model.units.1.tensors.0.name", std::string("nul\0x", 5), {"a name with a control character"});
  refused("cluster.gpu.name", "", {"a blank name"});
  json j = tiny();
  j["name"] = std::string(256, 'n') ;  // at the limit; unicode is fine
  j["model"]["units"][1]["name"] = "bloc\u00e9";
  EXPECT_NO_THROW(parse_scenario(j));
}

TEST(BadInput, WrongTypes) {
  json j = tiny();
  j["mesh"]["shard"] = "eight";
  expect_bad(j, "mesh.shard", {"\"eight\"", "integer"});
  j = tiny();
  j["mesh"]["shard"] = 2.5;
  expect_bad(j, "mesh.shard", {"2.5", "integer"});
  j = tiny();
  j["policy"] = {{"comm_fusion", "yes"}};
  expect_bad(j, "policy.comm_fusion", {"\"yes\"", "true or false"});
  j = tiny();
  j["cluster"]["intra_node"]["bandwidth"] = 450;
  expect_bad(j, "cluster.intra_node.bandwidth", {"450", "GB/s"});
  j = tiny();
  j["cluster"]["intra_node"]["latency"] = 2;
  expect_bad(j, "cluster.intra_node.latency", {"2", "us"});
  j = tiny();
  j["model"] = json::array();
  expect_bad(j, "model", {"object"});
  j = tiny();
  j["policy"] = {{"bucket_bytes", "64MB/s"}};
  expect_bad(j, "policy.bucket_bytes", {"\"64MB/s\"", "MiB"});
  j = tiny();
  j["policy"] = {{"reshard_after_forward", "yes"}};
  expect_bad(j, "policy.reshard_after_forward", {"\"yes\"", "true, false"});
  j = tiny();
  j["policy"] = {{"root_reshard_after_forward", 1}};
  expect_bad(j, "policy.root_reshard_after_forward", {"1", "true or false"});
}

TEST(BadInput, NegativeOrZeroSizesAndCounts) {
  json j = tiny();
  j["policy"] = {{"bucket_bytes", -5}};
  expect_bad(j, "policy.bucket_bytes", {"-5", ">= 0"});
  j = tiny();
  j["mesh"]["shard"] = 0;
  expect_bad(j, "mesh.shard", {"0", ">= 1"});
  j = tiny();
  j["model"]["units"][0]["params"] = 0;
  expect_bad(j, "model.units.0.params", {"0", ">= 1"});
  j = tiny();
  j["model"]["units"][1]["repeat"] = 0;
  expect_bad(j, "model.units.1.repeat", {"0"});
  j = tiny();
  j["cluster"]["gpu"]["memory"] = "0GiB";
  expect_bad(j, "cluster.gpu.memory", {"positive"});
  j = llama(2, 4096, 14336, 32, 8, "full");
  j["model"]["transformer"]["layers"] = -1;
  expect_bad(j, "model.transformer.layers", {"-1"});
  j = tiny();
  j["policy"] = {{"micro_batches", 0}};
  expect_bad(j, "policy.micro_batches", {"0"});
  j = tiny();
  j["run"] = {{"memory_margin", 1.5}};
  expect_bad(j, "run.memory_margin", {"1.5", "[0, 1)"});
  j = tiny();
  j["run"] = {{"iterations", 1025}};  // a timeline holds at most 1024
  expect_bad(j, "run.iterations", {"1025", "1024"});
}

// Values far outside anything real are refused naming the key, instead of overflowing byte
// counts (a numel of 2^62 reported 42 MB) or running as 1e306 us steps.
TEST(BadInput, ValuesBeyondAnythingRealNameTheKey) {
  const auto with = [](const std::function<void(json&)>& edit) {
    json j = tiny();
    edit(j);
    return j;
  };
  expect_bad(with([](json& j) { j["model"]["units"][1]["tensors"][0]["numel"] = int64_t{1} << 62; }),
             "model.units.1.tensors.0.numel", {"too large", "1e15"});
  expect_bad(with([](json& j) { j["model"]["units"][0]["params"] = int64_t{1} << 62; }), "model.units.0.params", {"too large"});
  expect_bad(with([](json& j) { j["policy"] = {{"optimizer_bytes_per_param", int64_t{1} << 62}}; }),
             "policy.optimizer_bytes_per_param", {"too large", "1.0 KiB"});
  expect_bad(with([](json& j) { j["cluster"]["gpu"]["efficiency"] = 1e-300; }), "cluster.gpu.efficiency", {"[0.001, 1]"});
  expect_bad(with([](json& j) { j["cluster"]["intra_node"]["latency"] = "1e300s"; }), "cluster.intra_node.latency", {"too long"});
  expect_bad(with([](json& j) { j["cluster"]["launch_overhead"] = "2s"; }), "cluster.launch_overhead", {"at most 1.000 s"});
  expect_bad(with([](json& j) { j["model"]["units"][2]["forward_time"] = "7200s"; }), "model.units.2.forward_time", {"too long"});
  expect_bad(with([](json& j) { j["model"]["units"][0]["forward_flops"] = 1e30; }), "model.units.0.forward_flops", {"1e21"});
  expect_bad(with([](json& j) { j["model"]["units"][1]["repeat"] = 2000000000; }), "model.units.1.repeat", {"1000000 units"});
  expect_bad(with([](json& j) { j["cluster"]["gpu"]["memory"] = "2048TiB"; }), "cluster.gpu.memory", {"too large"});
  expect_bad(with([](json& j) { j["cluster"]["gpu"]["peak_tflops"]["bf16"] = 1e300; }), "cluster.gpu.peak_tflops.bf16", {"too large"});
  expect_bad(with([](json& j) {
               j["cluster"]["nodes"] = 2000000;
               j["mesh"]["shard"] = 16000000;
             }),
             "cluster.nodes", {"million ranks"});
  // Many units of the largest tensor: the total is refused even when each tensor passes.
  expect_bad(with([](json& j) {
               j["model"]["units"][1]["tensors"][0]["numel"] = int64_t{1'000'000'000'000'000};
               j["model"]["units"][1]["repeat"] = 100;
             }),
             "model.units", {"1e16"});
}

// The parameter bound counts the parameters the shape has: a position table only with learned
// positions, the embedding once when the head is tied to it. A huge seq_len with RoPE was once
// refused as "about 4e16 parameters; check layers, hidden, ffn_hidden and vocab" (an audit).
TEST(BadInput, TheParameterBoundNamesTheKeysThatMakeTheParameters) {
  json j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["seq_len"] = int64_t{10'000'000'000'000};
  expect_bad(j, "model.transformer", {"seq_len x micro_batch_size", "exceed 2^63 bytes"});
  j["model"]["transformer"]["position"] = "learned";
  expect_bad(j, "model.transformer", {"about 4.1e+16 parameters", "and seq_len (learned positions)"});
  // Tied: one vocab x hidden table. 1.2e12 x 4096 is 4.9e15 parameters once, 9.8e15 twice.
  j = llama(1, 4096, 4096, 32, 32, "none");
  j["model"]["transformer"]["vocab"] = int64_t{1'400'000'000'000};
  j["model"]["transformer"]["seq_len"] = 1;
  expect_bad(j, "model.transformer", {"about 1.15e+16 parameters", "check layers, hidden, ffn_hidden, vocab"});
  j["model"]["transformer"]["tied_embeddings"] = true;
  EXPECT_NO_THROW(parse_scenario(j));
}

// An integer too large for int64 read as a float (1e30, or 2^64 written out) is "too large",
// as 2^63 is, not "expected an integer, got 1e+30".
TEST(BadInput, AWholeNumberBeyondInt64SaysItIsTooLarge) {
  json j = llama(2, 4096, 14336, 32, 8, "none");
  j["model"]["transformer"]["layers"] = json::parse("1e30");
  expect_bad(j, "model.transformer.layers", {"expected an integer of at most 9223372036854775807 (2^63 - 1), got 1e+30"});
  j["model"]["transformer"]["layers"] = json::parse("18446744073709551616");
  expect_bad(j, "model.transformer.layers", {"an integer of at most 9223372036854775807"});
  j["model"]["transformer"]["layers"] = 2.5;
  expect_bad(j, "model.transformer.layers", {"expected an integer, got 2.5"});
}

TEST(BadInput, WorldSizeMismatchNamesBothValues) {
  json j = tiny();
  j["mesh"] = {{"shard", 4}, {"replicate", 3}};
  expect_bad(j, "mesh", {"shard 4 x replicate 3 = 12", "= 8"});
}

TEST(BadInput, UnknownDtypePresetCheckpointingAndGradSync) {
  json j = tiny();
  j["policy"] = {{"param_dtype", "bf17"}};
  expect_bad(j, "policy.param_dtype", {"\"bf17\"", "bf16"});
  j = tiny();
  j["cluster"] = {{"preset", "h100-sxm"}};
  expect_bad(j, "cluster.preset", {"\"h100-sxm\"", "did you mean \"h100-sxm-dgx\"?"});
  j = llama(2, 4096, 14336, 32, 8, "partial");
  expect_bad(j, "model.transformer.activation_checkpointing", {"\"partial\"", "selective"});
  j = tiny();
  j["policy"] = {{"grad_sync", "sometimes"}};
  expect_bad(j, "policy.grad_sync", {"\"sometimes\"", "expected one of: every, last."});
  j = tiny();
  j["cluster"]["gpu"]["peak_tflops"]["tf32"] = 400;
  expect_bad(j, "cluster.gpu.peak_tflops.tf32", {"did you mean"});
  j = tiny();
  j["policy"] = {{"param_dtype", "fp8"}};
  expect_bad(j, "cluster.gpu.peak_tflops", {"\"fp8\""});
}

TEST(BadInput, PrefetchDepthAndReshardGroup) {
  json j = tiny();  // 3 units
  j["policy"] = {{"forward_prefetch", 3}};
  expect_bad(j, "policy.forward_prefetch", {"depth 3", "3 units", "0..2"});
  j["policy"] = {{"backward_prefetch", 10}};
  expect_bad(j, "policy.backward_prefetch", {"depth 10"});
  j["policy"] = {{"forward_prefetch", -1}};
  expect_bad(j, "policy.forward_prefetch", {"-1"});
  // 0 and negatives get the same sentence as 1 (not "expected an integer >= 1", which 1 is).
  for (int bad : {-3, 0, 1, 3, 8, 16}) {
    j["policy"] = {{"reshard_after_forward", bad}};
    expect_bad(j, "policy.reshard_after_forward", {std::to_string(bad) + " is not a non-trivial divisor", "8"});
  }
}

// Near misses of dtype and grad_sync names get the closest one, as keys and presets do.
TEST(BadInput, DtypeAndGradSyncNearMissesSuggestTheClosestName) {
  json j = tiny();
  j["policy"] = {{"param_dtype", "bf61"}};
  expect_bad(j, "policy.param_dtype", {"unknown dtype \"bf61\"; did you mean \"bf16\"?", "fp32, bf16, fp16, fp8"});
  j["policy"] = {{"grad_sync", "evry"}};
  expect_bad(j, "policy.grad_sync", {"did you mean \"every\"?"});
  j["policy"] = {{"grad_sync", "sometimes"}};
  expect_bad(j, "policy.grad_sync", {"unknown grad_sync \"sometimes\"; expected one of: every, last."});
}

// A knob's value error always lists every accepted value, beside the suggestion; case is
// ignored when suggesting; other frameworks' names get how to write them here, not a near miss
// that means something else ("mqa" is one edit from "mha"); a non-string names the values too.
TEST(BadInput, KnobValueErrorsListTheAcceptedValuesAndExplainForeignNames) {
  const auto refused = [](const char* key, const json& value, std::initializer_list<std::string> expected) {
    json j = llama(2, 4096, 14336, 32, 32, "none");  // kv_heads = heads: "mha" is consistent
    j["model"]["transformer"][key] = value;
    expect_bad(j, std::string("model.transformer.") + key, expected);
  };
  refused("mlp", "swiglue", {"unknown value \"swiglue\"; did you mean \"swiglu\"? Expected one of: swiglu, gelu."});
  refused("attention", "MHA", {"did you mean \"mha\"?", "one of: mha, gqa."});
  refused("attention", "mqa", {"multi-query attention is \"gqa\" with model.transformer.kv_heads: 1", "one of: mha, gqa."});
  refused("activation_checkpointing", "selective_layer",
          {"is \"full\" with model.transformer.checkpoint_every: N", "one of: none, selective, selective_op, full."});
  refused("activation_checkpointing", true, {"expected a string, got true; expected one of: none, selective, selective_op, full."});
}

TEST(BadInput, MissingRequiredFieldsAndModelShape) {
  json j = tiny();
  j["mesh"].erase("shard");
  expect_bad(j, "mesh.shard", {"missing required field"});
  j = tiny();
  j.erase("model");
  expect_bad(j, "model", {"missing required field"});
  j = tiny();
  j.erase("name");
  expect_bad(j, "name", {"missing required field"});
  j = tiny();
  j["cluster"]["gpu"].erase("memory");
  expect_bad(j, "cluster.gpu.memory", {"missing required field"});
  j = tiny();
  j["cluster"]["nodes"] = 2;
  j["mesh"]["replicate"] = 2;
  expect_bad(j, "cluster.inter_node", {"missing required field", "2 nodes"});
  j = tiny();
  j["model"]["units"][0].erase("forward_flops");
  expect_bad(j, "model.units.0", {"\"embedding\"", "forward_flops"});
  j = tiny();
  j["model"]["units"][0]["tensors"] = json::array({{{"name", "w"}, {"numel", 3}}});
  expect_bad(j, "model.units.0", {"exactly one of \"params\"", "\"tensors\""});
  j = tiny();
  j["model"]["units"][2]["name"] = "embedding";
  expect_bad(j, "model.units", {"duplicate unit name \"embedding\""});
  j = llama(2, 4096, 14336, 30, 8, "full");
  expect_bad(j, "model.transformer.heads", {"30", "4096"});
  j = llama(2, 4096, 14336, 32, 6, "full");
  expect_bad(j, "model.transformer.kv_heads", {"6", "32"});
  j = llama(2, 4096, 14336, 32, 8, "full");
  j["model"]["units"] = tiny()["model"]["units"];
  expect_bad(j, "model", {"exactly one of \"transformer\"", "\"units\""});
}

TEST(BadInput, MalformedJsonAndMissingFileNameThePlace) {
  const std::string path = write_temp("malformed.json", "{\n  \"name\": \"x\",\n  \"mesh\": {shard: 8}\n}\n");
  expect_input_error([&] { load_scenario(path); }, path, {"malformed JSON", "line 3", "column 12", "expected string literal"});
  const std::string missing = (fs::temp_directory_path() / "shardline_no_such_file.json").string();
  expect_input_error([&] { load_scenario(missing); }, missing, {"cannot open"});
}

// ---- overrides --------------------------------------------------------------------------------

TEST(Overrides, NestedArrayAndNewKnownPaths) {
  json j = tiny();
  apply_overrides(j, {"policy.bucket_bytes=64MiB", "cluster.nodes=2", "mesh.shard=16", "model.units.1.repeat=3",
                      "policy.grad_sync=last", "cluster.inter_node.bandwidth=\"200Gbps\"",
                      "cluster.inter_node.latency=5us"});
  const Scenario s = parse_scenario(j);
  EXPECT_EQ(s.policy.bucket_bytes, 64 << 20);
  EXPECT_EQ(s.mesh.shard, 16);
  EXPECT_EQ(s.model.units.size(), 5u);
  EXPECT_EQ(s.policy.grad_sync, GradSync::Last);
  EXPECT_DOUBLE_EQ(s.cluster.inter_node.bandwidth_bytes_per_s, 25e9);

  json t = llama(32, 4096, 14336, 32, 8, "full");
  apply_overrides(t, {"model.transformer.layers=4"});
  EXPECT_EQ(parse_scenario(t).model.units.size(), 6u);
}

TEST(Overrides, PresetClusterFieldsCanBeOverridden) {
  json j = tiny();
  j["cluster"] = {{"preset", "h100-sxm-dgx"}};
  apply_overrides(j, {"cluster.gpu.efficiency=0.3", "cluster.intra_node.latency=4us"});
  const Scenario s = parse_scenario(j);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.efficiency, 0.3);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node.latency_us, 4);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node.bandwidth_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak_tflops.at(DType::bf16), 989);
}

TEST(Overrides, BadPathsAndMalformedItems) {
  json j = tiny();
  expect_input_error([&] { apply_overrides(j, {"policy.bucket_byte=1"}); }, "--set",
                     {"policy.bucket_byte", "did you mean \"bucket_bytes\"?"});
  expect_input_error([&] { apply_overrides(j, {"mesh.shrad=4"}); }, "--set", {"did you mean \"shard\"?"});
  expect_input_error([&] { apply_overrides(j, {"policy.bucket_bytes"}); }, "--set", {"path=value"});
  expect_input_error([&] { apply_overrides(j, {"=3"}); }, "--set", {"path=value"});
  expect_input_error([&] { apply_overrides(j, {"model.units.7.repeat=2"}); }, "--set", {"\"7\"", "0..2"});
  expect_input_error([&] { apply_overrides(j, {"mesh.shard.x=2"}); }, "--set", {"mesh.shard", "cannot be set"});
  // A value's key the file does not set is still a value (an audit: "expected one of: ." with an
  // empty list, after an empty object had been made in its place).
  expect_input_error([&] { apply_overrides(j, {"cluster.gpu.peak_tflops.fp8.x=1"}); }, "--set",
                     {"cluster.gpu.peak_tflops.fp8 is a value (number), not an object, so \"x\" cannot be set inside it"});
  expect_input_error([&] { apply_overrides(j, {"policy..x=2"}); }, "--set", {"empty path segment"});
  // A failed override leaves the parse of the rest to report nothing half-applied as valid.
  json k = tiny();
  apply_overrides(k, {"mesh.shard=7"});
  expect_bad(k, "mesh", {"shard 7"});
}

// ---- shipped scenarios ------------------------------------------------------------------------

// The bytes a rank must hold at the start of backward in the simplest accounting: sharded master
// params, grads and optimizer state, every unit's saved activations for one micro-batch, and two
// unsharded units (current + prefetched) plus one unsharded gradient in the reduce dtype.
double lower_bound_peak_bytes(const Scenario& s) {
  const auto& p = s.policy;
  const double per_param = dtype_bytes(p.master_dtype) * 2.0 + static_cast<double>(p.optimizer_bytes_per_param);
  double bytes = static_cast<double>(s.model.total_params()) * per_param / s.mesh.shard;
  int64_t largest = 0;
  for (const auto& u : s.model.units) {
    bytes += static_cast<double>(u.activation_bytes);
    largest = std::max(largest, u.params());
  }
  bytes += static_cast<double>(largest) * (2.0 * dtype_bytes(p.param_dtype) + dtype_bytes(p.reduce_dtype));
  return bytes;
}

TEST(ShippedScenarios, EveryFileParsesAndFitsInMemory) {
  const fs::path dir = fs::path(SHARDLINE_SOURCE_DIR) / "scenarios";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    Scenario s;
    ASSERT_NO_THROW(s = load_scenario(entry.path().string())) << entry.path();
    EXPECT_EQ(s.name, entry.path().stem().string());
    EXPECT_EQ(s.mesh.world(), s.cluster.world());
    EXPECT_LT(lower_bound_peak_bytes(s), static_cast<double>(s.cluster.gpu.memory_bytes) * (1 - s.run.memory_margin));
  }
  EXPECT_GE(count, 6);
}

TEST(ShippedScenarios, DefaultScenarioIsLlama3_8BOnOneH100Node) {
  const Scenario s = load_scenario(std::string(SHARDLINE_SOURCE_DIR) + "/scenarios/llama3-8b-fsdp-h100x8.json",
                                   {"policy.bucket_bytes=25MiB"});
  EXPECT_EQ(s.cluster.world(), 8);
  EXPECT_EQ(s.mesh.shard, 8);
  EXPECT_EQ(s.model.units.size(), 34u);
  EXPECT_EQ(s.policy.bucket_bytes, 25 << 20);
}

}  // namespace
}  // namespace shardline
