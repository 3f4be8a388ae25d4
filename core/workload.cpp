#include "core/workload.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"

namespace shardline {

using nlohmann::json;
namespace jf = json_fields;

double transformer_model_flops_per_token(const Scenario& s) {
  const TransformerSpec& t = s.model.transformer.value();
  // Every parameter once, less an untied token embedding: a table that is only looked up
  // multiplies nothing (torchtitan leaves it out of its count too). A tied one is the output
  // head's weight and counts once; learned positions count, as in llm-foundry's formula.
  const int64_t looked_up = t.tied_embeddings ? 0 : t.vocab * t.hidden;
  const double params = static_cast<double>(s.model.total_params() - looked_up);
  return 6.0 * params + transformer_attention_flops_per_token(s, false);
}

double transformer_attention_flops_per_token(const Scenario& s, bool recomputed) {
  const TransformerSpec& t = s.model.transformer.value();
  const double h = static_cast<double>(t.hidden), seq = static_cast<double>(t.seq_len);
  int64_t rerun = 0;  // blocks whose backward re-runs the attention core's forward
  if (recomputed)
    for (const UnitSpec& u : s.model.units)
      if (u.part == TransformerPart::Block && (u.checkpointing == Checkpointing::Selective || u.checkpointing == Checkpointing::Full))
        ++rerun;
  return 12.0 * static_cast<double>(t.layers) * h * seq + 4.0 * static_cast<double>(rerun) * h * seq;
}

namespace {

// Recomputed FLOPs per token of a transformer (same convention as the model FLOPs: attention
// without causal discount): full checkpointing re-runs every block's forward; selective
// (Megatron-LM core attention) re-runs the attention scores and context. With the checkpoint's
// early stop and no dropout, the re-run ends before the down projection (core/kernels.cpp).
double transformer_recompute_flops_per_token(const Scenario& s) {
  const TransformerSpec& t = s.model.transformer.value();
  const double attention_per_block = 4.0 * static_cast<double>(t.hidden) * static_cast<double>(t.seq_len);
  const bool skips_down = t.rerun_skips_down_projection();
  const double down_flops = 2.0 * static_cast<double>(t.ffn_hidden) * static_cast<double>(t.hidden);
  switch (t.checkpointing) {
    case Checkpointing::None: return 0;
    case Checkpointing::Selective: return static_cast<double>(t.layers) * attention_per_block;
    case Checkpointing::SelectiveOp: {
      // torchtitan's op-level policy re-runs wk, wo and the MLP's second matmul (SwiGLU's w3;
      // GELU's down); with fused projections wo and the MLP's down projection (core/kernels.cpp).
      const bool second_is_down = t.projections == Projections::Fused || t.mlp == MlpKind::Gelu;
      const double mlp = second_is_down && skips_down ? 0.0 : static_cast<double>(t.ffn_hidden);
      return 2.0 * static_cast<double>(t.layers) * static_cast<double>(t.hidden) *
             (static_cast<double>((t.projections == Projections::Fused ? 0 : t.kv_dim()) + t.hidden) + mlp);
    }
    case Checkpointing::Full: {
      // The checkpointed blocks (every block, or every checkpoint_every-th).
      double block_params = 0;
      int64_t checkpointed = 0;
      for (const UnitSpec& u : s.model.units)
        if (u.part == TransformerPart::Block && u.checkpointing == Checkpointing::Full) {
          block_params += static_cast<double>(u.params());
          ++checkpointed;
        }
      return 2.0 * block_params + static_cast<double>(checkpointed) * (attention_per_block - (skips_down ? down_flops : 0.0));
    }
  }
  return 0;
}

}  // namespace

Workload workload_of(const Scenario& s) {
  Workload w;
  w.gpus = s.mesh.world();
  w.seq_len = s.model.seq_len;
  const double data_parallel = static_cast<double>(s.mesh.world());
  const double micro_batches = static_cast<double>(s.policy.micro_batches);
  if (s.model.micro_batch_size > 0) {
    w.samples_per_step = micro_batches * static_cast<double>(s.model.micro_batch_size) * data_parallel;
    if (s.model.seq_len > 0) w.tokens_per_step = w.samples_per_step * static_cast<double>(s.model.seq_len);
  }
  if (s.model.transformer) {
    w.model_flops_per_step = transformer_model_flops_per_token(s) * w.tokens_per_step;
    w.hardware_flops_per_step = w.model_flops_per_step + transformer_recompute_flops_per_token(s) * w.tokens_per_step;
  } else {
    // Explicit units: their own FLOPs per micro-batch, on every rank, every micro-batch.
    double model = 0, recompute = 0;
    bool known = true;
    for (const UnitSpec& u : s.model.units) {
      // A pass given as a time without FLOPs leaves the model's FLOPs unknown (a partial sum would
      // report too low an MFU); a unit timed by a profile (calibrate --from-trace) keeps the FLOPs
      // it states. A time of zero is no work, so it knows its FLOPs: none.
      const auto timed_without_flops = [](const std::optional<double>& time_us, double flops) {
        return time_us && *time_us > 0 && flops == 0;
      };
      if (timed_without_flops(u.forward_time_us, u.forward_flops) || timed_without_flops(u.backward_time_us, u.backward_flops)) {
        known = false;
      }
      model += u.forward_flops + u.backward_flops;
      if (u.recompute_forward) recompute += u.forward_flops;
    }
    if (known) {
      w.model_flops_per_step = model * micro_batches * data_parallel;
      w.hardware_flops_per_step = (model + recompute) * micro_batches * data_parallel;
    }
  }
  const auto peak = s.cluster.gpu.peak_tflops.find(s.policy.param_dtype);
  if (peak != s.cluster.gpu.peak_tflops.end()) w.peak_flops_per_gpu = peak->second * 1e12;
  return w;
}

json workload_to_json(const Workload& w) {
  return json{{"gpus", w.gpus},
              {"samples_per_step", w.samples_per_step},
              {"tokens_per_step", w.tokens_per_step},
              {"model_flops_per_step", w.model_flops_per_step},
              {"hardware_flops_per_step", w.hardware_flops_per_step},
              {"peak_flops_per_gpu", w.peak_flops_per_gpu}};
}

Workload workload_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  Workload w;
  w.gpus = jf::get_int32(j, "gpus", path);
  if (w.gpus < 1) throw InputError(jf::join_path(path, "gpus"), "must be >= 1");
  const auto non_negative = [&](const char* key) {
    const double v = jf::get_number(j, key, path);
    if (!(v >= 0)) throw InputError(jf::join_path(path, key), "must be a number >= 0");
    return v;
  };
  w.samples_per_step = non_negative("samples_per_step");
  w.tokens_per_step = non_negative("tokens_per_step");
  w.model_flops_per_step = non_negative("model_flops_per_step");
  w.hardware_flops_per_step = non_negative("hardware_flops_per_step");
  w.peak_flops_per_gpu = non_negative("peak_flops_per_gpu");
  return w;
}

}  // namespace shardline
