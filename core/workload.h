// What one training step processes, for the throughput metrics (DESIGN.md "Metrics";
// docs/outputs.md "Throughput" has every formula): samples and tokens per step, model and
// hardware FLOPs per step, the GPU count and their dense peak. Filled from the Scenario by
// workload_of(); carried by every Timeline so that metrics, compare, sweep and regress can
// turn a step time into tokens/s, MFU and HFU without the Scenario.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include "core/scenario.h"

namespace shardline {

struct Workload {
  int gpus = 1;                        // every rank of the mesh (shard x replicate)
  // Global per step; 0 when the scenario does not say (explicit units without
  // model.seq_len / model.micro_batch_size; units given as times have no FLOPs).
  double samples_per_step = 0;         // micro_batches x micro_batch_size x data-parallel size
  double tokens_per_step = 0;          // samples_per_step x seq_len
  double model_flops_per_step = 0;     // the MFU numerator: no recomputation
  double hardware_flops_per_step = 0;  // the HFU numerator: model FLOPs + recomputation
  double peak_flops_per_gpu = 0;       // dense peak of the compute dtype (policy.param_dtype), FLOP/s
  // model.seq_len, 0 when not given: only for saying which key a missing tokens/s needs (not in
  // timeline or metrics files, which read it back as 0).
  int64_t seq_len = 0;
};

// Model FLOPs per token of a transformer shorthand model (docs/outputs.md "Model FLOPs"): 6 x
// parameters, less an untied token embedding (a table only looked up), + 12 x layers x hidden x
// seq_len (attention scores and context, forward + backward, no causal discount).
double transformer_model_flops_per_token(const Scenario& scenario);
// Of those, the attention core's per token: 12 x layers x hidden x seq_len; with `recomputed`, also
// its forward again in each block whose checkpointing re-runs it (selective, full), as the
// hardware FLOPs count it.
double transformer_attention_flops_per_token(const Scenario& scenario, bool recomputed);

Workload workload_of(const Scenario& scenario);

nlohmann::json workload_to_json(const Workload& w);
Workload workload_from_json(const nlohmann::json& j, const std::string& path);  // InputError on bad fields

}  // namespace shardline
