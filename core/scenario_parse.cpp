#include "core/scenario_parse.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/cluster_presets.h"
#include "core/error.h"
#include "core/json_load.h"
#include "core/suggest.h"
#include "core/timeline.h"
#include "core/transformer.h"
#include "core/units.h"
#include "core/variation.h"

namespace shardline {
namespace {

using nlohmann::json;

// The known keys of a scenario: objects list their keys, a one-element array describes its
// elements, strings describe leaves. Used to reject unknown keys (with a suggestion) and to
// decide which --set paths may be created. docs/scenario.md documents each key.
constexpr const char* kSchema = R"json({
  "name": "string",
  "description": "string",
  "model": {
    "name": "string",
    "transformer": {
      "layers": "int", "hidden": "int", "ffn_hidden": "int", "heads": "int", "kv_heads": "int",
      "vocab": "int", "seq_len": "int", "micro_batch_size": "int",
      "activation_checkpointing": "none|selective|selective_op|full", "checkpoint_every": "int", "checkpoint_early_stop": "bool", "tied_embeddings": "bool",
      "root_group": "bool", "last_block_reshard_after_forward": "bool",
      "attention": "mha|gqa", "mlp": "swiglu|gelu", "norm": "rmsnorm|layernorm", "position": "rope|alibi|learned",
      "bias": "bool", "dropout": "number", "loss": "fp32|eager_16bit|fused",
      "norm_impl": "fused|fused_one_pass|eager_fp32", "rope_impl": "fused|eager_complex|eager_rotation|eager_stack", "logits_dtype": "param|fp32",
      "projections": "fused|separate"
    },
    "seq_len": "int", "micro_batch_size": "int",
    "units": [{
      "name": "string", "params": "int", "tensors": [{"name": "string", "numel": "int"}],
      "forward_flops": "flops", "forward_time": "time", "backward_flops": "flops", "backward_time": "time",
      "activation_bytes": "size", "recompute": "bool", "repeat": "int", "bucket_bytes": "size",
      "root": "bool", "reshard_after_forward": "bool"
    }]
  },
  "cluster": {
    "preset": "string", "file": "string", "name": "string",
    "gpu": {
      "name": "string",
      "peak_tflops": {"fp32": "number", "bf16": "number", "fp16": "number", "fp8": "number"},
      "efficiency": "number", "memory": "size", "copy_bandwidth": "rate",
      "hbm_bandwidth": "rate", "gemm_efficiency": "number", "gemm_half_dim": "number", "attention_efficiency": "number",
      "attention_backward_efficiency": "number", "attention_half_seq": "number", "attention_backward_half_seq": "number",
      "attention_half_head_dim": "number",
      "memory_efficiency": "number", "kernel_launch": "time",
      "context_memory": "size", "nccl_memory": "size", "allocator_fragmentation": "number",
      "allocator_pool_fragmentation": "number", "allocator_fragmentation_at_capacity": "number"
    },
    "nodes": "int", "gpus_per_node": "int",
    "intra_node": {"bandwidth": "rate", "latency": "time"},
    "inter_node": {"bandwidth": "rate", "latency": "time"},
    "launch_overhead": "time", "host_launch": "time", "compute_slowdown_during_comm": "number", "comm_slowdown_during_compute": "number", "event_latency": "time", "compute_overhead": "time", "hierarchical_collectives": "bool"
  },
  "mesh": {"shard": "int", "replicate": "int"},
  "policy": {
    "comm_fusion": "bool", "zero_copy": "bool", "bucket_bytes": "size|unit", "reshard_after_forward": "bool|int",
    "root_reshard_after_forward": "bool",
    "forward_prefetch": "int", "backward_prefetch": "int", "param_dtype": "dtype", "reduce_dtype": "dtype",
    "master_dtype": "dtype", "optimizer_bytes_per_param": "size", "optimizer_implementation": "fused|foreach|for_loop",
    "optimizer_params": "dtensor|fsdp1_orig_params|fsdp1_flat_params", "output_lifetime": "backward|loss", "micro_batches": "int",
    "grad_sync": "every|last", "average_gradients": "bool"
  },
  "run": {"iterations": "int", "warmup": "int", "memory_margin": "number"},
  "variation": {
    "seed": "int",
    "compute_jitter": {"distribution": "lognormal|normal|uniform", "cv": "number"},
    "rank_compute_spread": {"distribution": "lognormal|normal|uniform", "cv": "number"},
    "stragglers": [{"rank": "int", "node": "int", "group": "shard|replicate", "index": "int", "compute_factor": "number"}],
    "slow_links": [{"rank": "int", "node": "int", "bandwidth_factor": "number"}]
  }
})json";

const json& schema() {
  static const json parsed = json::parse(kSchema);
  return parsed;
}

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }
std::string join(const std::string& path, size_t index) { return join(path, std::to_string(index)); }

std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::vector<std::string> keys_of(const json& object) {
  std::vector<std::string> keys;
  if (object.is_object()) {
    for (const auto& [k, v] : object.items()) keys.push_back(k);
  }
  return keys;
}

// ---- typed readers: each names the path, the value and what was expected -------------------

[[noreturn]] void type_error(const json& v, const std::string& path, const std::string& expected) {
  throw InputError(path, "expected " + expected + ", got " + show(v));
}

int64_t as_int64(const json& v, const std::string& path, int64_t min_value) {
  int64_t n = 0;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      type_error(v, path, "an integer of at most 9223372036854775807 (2^63 - 1)");
    }
    n = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
             std::fabs(v.get<double>()) < 9e18) {
    n = static_cast<int64_t>(v.get<double>());
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>())) {
    // A whole number written as a float (1e30, or an integer beyond 2^64 that the parser read so).
    type_error(v, path, "an integer of at most 9223372036854775807 (2^63 - 1)");
  } else {
    type_error(v, path, "an integer");
  }
  if (n < min_value) {
    throw InputError(path, show(v) + " is too small; expected an integer >= " + std::to_string(min_value));
  }
  return n;
}

int as_int(const json& v, const std::string& path, int min_value) {
  const int64_t n = as_int64(v, path, min_value);
  if (n > std::numeric_limits<int>::max()) type_error(v, path, "an integer below 2^31");
  return static_cast<int>(n);
}

double as_number(const json& v, const std::string& path) {
  if (!v.is_number()) type_error(v, path, "a number");
  return v.get<double>();
}

bool as_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) type_error(v, path, "true or false");
  return v.get<bool>();
}

std::string as_string(const json& v, const std::string& path) {
  if (!v.is_string()) type_error(v, path, "a string");
  return v.get<std::string>();
}

// Names (scenario, model, cluster, GPU, unit, tensor) are printed, put into every op's label and
// written to every output: a non-blank string of at most 256 bytes without control characters
// (a newline split the summary, an escape coloured the terminal, a megabyte name took gigabytes
// once repeated per op).
constexpr size_t kMaxNameBytes = 256;
std::string as_name(const json& v, const std::string& path) {
  const std::string name = as_string(v, path);
  if (name.find_first_not_of(" \t") == std::string::npos) throw InputError(path, "a blank name; expected a non-empty string");
  if (name.size() > kMaxNameBytes)
    throw InputError(path, "a name of " + std::to_string(name.size()) + " bytes; expected at most " + std::to_string(kMaxNameBytes));
  for (const char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw InputError(path, "a name with a control character; expected printable text");
  return name;
}

// Sizes: a JSON integer (bytes) or a string with a unit ("64MiB").
// Sizes are at most 1 PiB: byte counts derived from them (times ranks, micro-batches, units)
// then stay far from int64 overflow.
constexpr int64_t kMaxScenarioBytes = int64_t{1} << 50;
int64_t as_size(const json& v, const std::string& path, int64_t max_bytes = kMaxScenarioBytes) {
  int64_t bytes = 0;
  if (v.is_string()) bytes = parse_bytes(v.get<std::string>(), path);
  else if (v.is_number()) bytes = as_int64(v, path, 0);
  else type_error(v, path, "a size: a number of bytes or a string such as \"64MiB\"");
  if (bytes > max_bytes) throw InputError(path, show(v) + " is too large; expected at most " + format_bytes(max_bytes));
  return bytes;
}

// Rates and times need a unit, so they must be strings ("450GB/s", "2.5us").
double as_rate(const json& v, const std::string& path) {
  if (!v.is_string()) type_error(v, path, "a rate string with a unit, such as \"450GB/s\" or \"400Gbps\"");
  return parse_rate_bytes_per_s(v.get<std::string>(), path);
}

// Every time in a scenario is at most an hour (a unit's forward time; latencies and overheads
// are capped lower where read): beyond that a value is a typo, and it would run as a step of
// 1e300 us.
constexpr double kMaxScenarioTimeUs = 3.6e9;
double as_time_us(const json& v, const std::string& path, double max_us = kMaxScenarioTimeUs) {
  if (!v.is_string()) type_error(v, path, "a time string with a unit, such as \"2.5us\" or \"3ms\"");
  const double us = parse_time_us(v.get<std::string>(), path);
  if (!(us <= max_us)) {
    throw InputError(path, show(v) + " is too long; expected at most " + format_time_us(max_us));
  }
  return us;
}

// Latencies and per-op overheads: microseconds in real systems; a second is a generous cap.
constexpr double kMaxOverheadUs = 1e6;
// cluster.*_slowdown_*: the bound of a calibrated profile's factors (core/profile.cpp).
constexpr double kMaxClusterSlowdown = 100;

// A unit's FLOPs per micro-batch: at most 1e21 (a 405B model's forward over a million tokens
// is under 1e18).
constexpr double kMaxUnitFlops = 1e21;
double as_flops(const json& v, const std::string& path) {
  double f = 0;
  if (v.is_string()) f = parse_flops(v.get<std::string>(), path);
  else if (v.is_number()) f = v.get<double>();
  else type_error(v, path, "a FLOP count: a number or a string such as \"1.2T\"");
  if (f < 0) throw InputError(path, show(v) + " is negative; a FLOP count must be >= 0");
  if (!(f <= kMaxUnitFlops)) throw InputError(path, show(v) + " is too large; expected at most 1e21 FLOPs per unit and micro-batch");
  return f;
}

// An object at `path` whose keys are checked against the schema node.
class Obj {
 public:
  Obj(const json& j, std::string path, const json& schema_node) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) type_error(j_, path_.empty() ? "scenario" : path_, "an object");
    const auto known = keys_of(schema_node);
    for (const auto& [key, value] : j_.items()) {
      if (!schema_node.contains(key)) {
        throw InputError(join(path_, key), "unknown key;" + suggestion_tail(key, known));
      }
    }
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  const std::string& path() const { return path_; }
  std::string at(const std::string& key) const { return join(path_, key); }
  const json& req(const std::string& key, const std::string& expected) const {
    if (!has(key)) throw InputError(at(key), "missing required field; expected " + expected);
    return j_.at(key);
  }
  const json* opt(const std::string& key) const { return has(key) ? &j_.at(key) : nullptr; }
  const json& raw() const { return j_; }

 private:
  const json& j_;
  std::string path_;
};

// ---- model ------------------------------------------------------------------------------------

// Another framework's name for something a knob spells differently, and the sentence that says
// how to write it here (a near-miss suggestion would point elsewhere: "mqa" is one edit from
// "mha", but multi-query attention is "gqa" with one kv head).
struct ForeignName {
  const char* name;
  const char* how;
};

// An enumerated string knob: the value must be one of `names`; the error names them all (and
// the closest one, or how to write a known foreign name).
template <typename E>
E as_choice(const json& v, const std::string& path, const std::vector<std::pair<std::string, E>>& names,
            const std::vector<ForeignName>& foreign = {}) {
  std::vector<std::string> known;
  for (const auto& [name, value] : names) known.push_back(name);
  if (!v.is_string()) throw InputError(path, "expected a string, got " + show(v) + ";" + choice_tail("", known));
  const std::string text = v.get<std::string>();
  for (const auto& [name, value] : names)
    if (name == text) return value;
  for (const auto& f : foreign)
    if (text == f.name) throw InputError(path, "unknown value \"" + text + "\"; " + f.how + "." + choice_tail("", known));
  throw InputError(path, "unknown value \"" + text + "\";" + choice_tail(text, known));
}

// Units (transformer layers, or explicit units after `repeat`): at most a million; and 1e15
// elements per tensor (parameter bytes, times 16 and more, stay far from int64 overflow).
constexpr int64_t kMaxUnits = 1'000'000;
constexpr int64_t kMaxUnitElements = 1'000'000'000'000'000;

TransformerSpec parse_transformer(const json& j, const std::string& path, const json& sch) {
  const Obj o(j, path, sch);
  const auto positive = [&](const char* key) { return as_int64(o.req(key, "a positive integer"), o.at(key), 1); };
  TransformerSpec t;
  t.layers = positive("layers");
  // Each unit makes at least ten ops a step and Programs stop at 4 million ops (core/schedule.h,
  // which also estimates the op count before building): refuse before the units are built.
  if (t.layers > kMaxUnits) {
    throw InputError(o.at("layers"), std::to_string(t.layers) + " layers is more units than shardline schedules; expected at most " +
                                         std::to_string(kMaxUnits));
  }
  t.hidden = positive("hidden");
  t.ffn_hidden = positive("ffn_hidden");
  t.heads = positive("heads");
  t.kv_heads = o.has("kv_heads") ? as_int64(*o.opt("kv_heads"), o.at("kv_heads"), 1) : t.heads;
  t.vocab = positive("vocab");
  t.seq_len = positive("seq_len");
  t.micro_batch_size = positive("micro_batch_size");
  if (const json* v = o.opt("activation_checkpointing")) {
    t.checkpointing = as_choice<Checkpointing>(*v, o.at("activation_checkpointing"),
                                               {{"none", Checkpointing::None},
                                                {"selective", Checkpointing::Selective},
                                                {"selective_op", Checkpointing::SelectiveOp},
                                                {"full", Checkpointing::Full}},
                                               {{"selective_layer",
                                                 "torchtitan's selective layer checkpointing (whole blocks, 1 in N) is \"full\" "
                                                 "with model.transformer.checkpoint_every: N"},
                                                {"block", "checkpointing whole blocks is \"full\""}});
  }
  if (const json* v = o.opt("checkpoint_every")) {
    t.checkpoint_every = as_int64(*v, o.at("checkpoint_every"), 1);
    if (t.checkpoint_every > 1 && t.checkpointing != Checkpointing::Full)
      throw InputError(o.at("checkpoint_every"), "checkpointing 1 block in " + std::to_string(t.checkpoint_every) +
                                                     " needs activation_checkpointing \"full\" (torchtitan's "
                                                     "selective layer mode checkpoints whole blocks)");
  }
  if (const json* v = o.opt("checkpoint_early_stop")) t.checkpoint_early_stop = as_bool(*v, o.at("checkpoint_early_stop"));
  if (const json* v = o.opt("tied_embeddings")) t.tied_embeddings = as_bool(*v, o.at("tied_embeddings"));
  if (const json* v = o.opt("root_group")) t.root_group = as_bool(*v, o.at("root_group"));
  if (const json* v = o.opt("last_block_reshard_after_forward"))
    t.last_block_reshard_after_forward = as_bool(*v, o.at("last_block_reshard_after_forward"));
  if (const json* v = o.opt("mlp")) t.mlp = as_choice<MlpKind>(*v, o.at("mlp"), {{"swiglu", MlpKind::SwiGlu}, {"gelu", MlpKind::Gelu}});
  if (const json* v = o.opt("norm"))
    t.norm = as_choice<NormKind>(*v, o.at("norm"), {{"rmsnorm", NormKind::RmsNorm}, {"layernorm", NormKind::LayerNorm}});
  if (const json* v = o.opt("position")) {
    t.position = as_choice<PositionKind>(
        *v, o.at("position"), {{"rope", PositionKind::Rope}, {"alibi", PositionKind::Alibi}, {"learned", PositionKind::Learned}});
  }
  if (const json* v = o.opt("bias")) t.bias = as_bool(*v, o.at("bias"));
  if (const json* v = o.opt("loss")) t.loss = as_choice<LossKind>(*v, o.at("loss"), {{"fp32", LossKind::Fp32}, {"eager_16bit", LossKind::Eager16Bit}, {"fused", LossKind::Fused}});
  if (const json* v = o.opt("logits_dtype")) {
    t.fp32_logits = as_choice<bool>(*v, o.at("logits_dtype"), {{"param", false}, {"fp32", true}});
    if (t.fp32_logits && t.loss != LossKind::Fp32)
      throw InputError(o.at("logits_dtype"), "\"fp32\" logits are what the \"fp32\" loss runs over; it needs loss \"fp32\"");
  }
  if (const json* v = o.opt("norm_impl")) {
    t.norm_impl = as_choice<NormImpl>(*v, o.at("norm_impl"), {{"fused", NormImpl::Fused}, {"fused_one_pass", NormImpl::FusedOnePass},
                                                             {"eager_fp32", NormImpl::EagerFp32}});
    if (t.norm_impl == NormImpl::EagerFp32 && t.norm != NormKind::RmsNorm)
      throw InputError(o.at("norm_impl"), "\"eager_fp32\" is the Llama reference RMSNorm in PyTorch ops; it needs norm \"rmsnorm\" "
                                          "(PyTorch's layer_norm is one fused kernel even in eager mode: use \"fused\")");
  }
  if (const json* v = o.opt("rope_impl")) {
    t.rope_impl = as_choice<RopeImpl>(*v, o.at("rope_impl"), {{"fused", RopeImpl::Fused},
                                                             {"eager_complex", RopeImpl::EagerComplex},
                                                             {"eager_rotation", RopeImpl::EagerRotation},
                                                             {"eager_stack", RopeImpl::EagerStack}});
    if (t.rope_impl != RopeImpl::Fused && t.position != PositionKind::Rope)
      throw InputError(o.at("rope_impl"), show(*v) + " describes how RoPE runs; it needs position \"rope\"");
  }
  if (const json* v = o.opt("projections"))
    t.projections = as_choice<Projections>(*v, o.at("projections"), {{"fused", Projections::Fused}, {"separate", Projections::Separate}});
  if (const json* v = o.opt("dropout")) {
    t.dropout = as_number(*v, o.at("dropout"));
    if (!(t.dropout >= 0 && t.dropout < 1)) throw InputError(o.at("dropout"), show(*v) + " is out of range; expected a probability in [0, 1)");
  }
  if (t.hidden % t.heads != 0) {
    throw InputError(o.at("heads"), std::to_string(t.heads) + " heads do not divide hidden " +
                                        std::to_string(t.hidden) + "; expected hidden = heads * head_dim");
  }
  if (t.kv_heads > t.heads || t.heads % t.kv_heads != 0) {
    throw InputError(o.at("kv_heads"), std::to_string(t.kv_heads) + " kv_heads do not divide heads " +
                                           std::to_string(t.heads) + "; expected a divisor (grouped-query attention)");
  }
  if (const json* v = o.opt("attention")) {
    const bool gqa = as_choice<bool>(*v, o.at("attention"), {{"mha", false}, {"gqa", true}},
                                     {{"mqa", "multi-query attention is \"gqa\" with model.transformer.kv_heads: 1"}});
    if (!gqa && t.kv_heads != t.heads) {
      throw InputError(o.at("attention"), "\"mha\" (multi-head attention) needs kv_heads = heads, but kv_heads is " +
                                              std::to_string(t.kv_heads) + " and heads " + std::to_string(t.heads) +
                                              "; expected \"gqa\" or kv_heads = heads");
    }
    if (gqa && t.kv_heads == t.heads) {
      throw InputError(o.at("attention"), "\"gqa\" (grouped-query attention) needs fewer kv_heads than heads (" +
                                              std::to_string(t.heads) + "); set kv_heads, or use \"mha\"");
    }
  }
  // Parameter counts and bytes must stay far from int64 overflow (bytes = parameters x 16 and
  // more): refuse models beyond 10^16 parameters, naming the shape.
  {
    const double h = static_cast<double>(t.hidden), f = static_cast<double>(t.ffn_hidden);
    const double kv = static_cast<double>(t.kv_heads) * h / static_cast<double>(t.heads);
    const double block = 2 * h * h + 2 * h * kv + 3 * h * f + 4 * h + 2 * f;
    const bool learned = t.position == PositionKind::Learned;  // only learned positions are parameters (seq_len x hidden)
    const double params = static_cast<double>(t.layers) * block + (t.tied_embeddings ? 1 : 2) * static_cast<double>(t.vocab) * h +
                          (learned ? static_cast<double>(t.seq_len) * h : 0.0);
    if (!(params <= 1e16)) {
      char n[32];
      std::snprintf(n, sizeof n, "%.3g", params);
      throw InputError(path, std::string("this shape has about ") + n +
                                 " parameters, beyond the 1e16 shardline can count in bytes; check layers, hidden, ffn_hidden, vocab" +
                                 (learned ? " and seq_len (learned positions)" : ""));
    }
  }
  // Shapes the modelled kernels do not run: RoPE rotates pairs of a head's dimensions, and
  // FlashAttention (the attention model, docs/compute-model.md) takes head dimensions up to 256.
  const int64_t head_dim = t.hidden / t.heads;
  if (t.position == PositionKind::Rope && head_dim % 2 != 0) {
    throw InputError(o.at("heads"), "head_dim " + std::to_string(head_dim) + " (hidden " + std::to_string(t.hidden) + " / " +
                                        std::to_string(t.heads) + " heads) is odd; expected an even head_dim with position \"rope\" "
                                        "(it rotates pairs of dimensions)");
  }
  constexpr int64_t kMaxFlashHeadDim = 256;
  // PyTorch's flash backend takes multiples of 8 (check_head_dim_size_flash); flash-attn pads
  // others up to one, doing the padded work, which the attention model does not count.
  if (head_dim % 8 != 0) {
    throw InputError(o.at("heads"), "head_dim " + std::to_string(head_dim) + " (hidden " + std::to_string(t.hidden) + " / " +
                                        std::to_string(t.heads) + " heads) is not a multiple of 8, which FlashAttention's kernels "
                                        "take (others are padded up to one: work the model does not count); expected "
                                        "hidden / heads a multiple of 8");
  }
  if (head_dim > kMaxFlashHeadDim) {
    throw InputError(o.at("heads"), "head_dim " + std::to_string(head_dim) + " (hidden " + std::to_string(t.hidden) + " / " +
                                        std::to_string(t.heads) + " heads) is beyond the 256 FlashAttention takes; expected more heads");
  }
  if (t.checkpointing == Checkpointing::Full && t.checkpoint_every > t.layers) {
    throw InputError(o.at("checkpoint_every"), "checkpointing 1 block in " + std::to_string(t.checkpoint_every) + " of " +
                                                   std::to_string(t.layers) + " layers checkpoints none; expected at most " +
                                                   std::to_string(t.layers) + " (or activation_checkpointing \"none\")");
  }
  // Sizes that must stay far from int64 overflow in the memory model (bytes = tokens x width x 20).
  const double tokens = static_cast<double>(t.seq_len) * static_cast<double>(t.micro_batch_size);
  const double widest = static_cast<double>(std::max({t.hidden, t.ffn_hidden, t.vocab}));
  if (tokens * widest * 64.0 > 9e18) {
    throw InputError(path, "seq_len x micro_batch_size x the widest dimension (" + std::to_string(static_cast<int64_t>(widest)) +
                               ") is too large: one activation would exceed 2^63 bytes");
  }
  return t;
}

void parse_unit_list(const json& j, const std::string& path, const json& sch, std::vector<UnitSpec>& units) {
  if (!j.is_array()) type_error(j, path, "an array of units");
  if (j.empty()) throw InputError(path, "the model has no units; expected at least one");
  const json& unit_schema = sch.at(0);
  for (size_t i = 0; i < j.size(); ++i) {
    const Obj o(j[i], join(path, i), unit_schema);
    UnitSpec u;
    u.name = as_name(o.req("name", "a unit name"), o.at("name"));

    if (o.has("params") == o.has("tensors")) {
      throw InputError(o.path(), "unit \"" + u.name + "\" must give exactly one of \"params\" (a number) or "
                                                      "\"tensors\" (a list of {name, numel})");
    }
    if (const json* v = o.opt("params")) {
      u.tensors = {{"params", as_int64(*v, o.at("params"), 1)}};
      if (u.tensors.front().numel > kMaxUnitElements) {
        throw InputError(o.at("params"), show(*v) + " is too large; expected at most 1e15 parameters per unit");
      }
    } else {
      const json& tensors = *o.opt("tensors");
      const std::string tpath = o.at("tensors");
      if (!tensors.is_array() || tensors.empty()) type_error(tensors, tpath, "a non-empty array of {name, numel}");
      std::set<std::string> seen;
      for (size_t k = 0; k < tensors.size(); ++k) {
        const Obj t(tensors[k], join(tpath, k), unit_schema.at("tensors").at(0));
        TensorSpec spec;
        spec.name = as_name(t.req("name", "a tensor name"), t.at("name"));
        spec.numel = as_int64(t.req("numel", "a positive element count"), t.at("numel"), 1);
        if (spec.numel > kMaxUnitElements) {
          throw InputError(t.at("numel"), std::to_string(spec.numel) + " is too large; expected at most 1e15 elements per tensor");
        }
        if (!seen.insert(spec.name).second) {
          throw InputError(t.at("name"), "duplicate tensor name \"" + spec.name + "\" in unit \"" + u.name + "\"");
        }
        u.tensors.push_back(std::move(spec));
      }
    }

    if (o.has("forward_flops") == o.has("forward_time")) {
      throw InputError(o.path(), "unit \"" + u.name + "\" must give exactly one of \"forward_flops\" or \"forward_time\"");
    }
    if (o.has("backward_flops") && o.has("backward_time")) {
      throw InputError(o.path(), "unit \"" + u.name + "\" gives both \"backward_flops\" and \"backward_time\"; expected one");
    }
    if (const json* v = o.opt("forward_flops")) u.forward_flops = as_flops(*v, o.at("forward_flops"));
    if (const json* v = o.opt("forward_time")) u.forward_time_us = as_time_us(*v, o.at("forward_time"));
    if (const json* v = o.opt("backward_flops")) {
      u.backward_flops = as_flops(*v, o.at("backward_flops"));
    } else if (const json* w = o.opt("backward_time")) {
      u.backward_time_us = as_time_us(*w, o.at("backward_time"));
    } else if (u.forward_time_us) {
      u.backward_time_us = 2.0 * *u.forward_time_us;  // documented default: backward = 2 x forward
    } else {
      u.backward_flops = 2.0 * u.forward_flops;
    }
    if (const json* v = o.opt("activation_bytes")) u.activation_bytes = as_size(*v, o.at("activation_bytes"));
    if (const json* v = o.opt("recompute")) u.recompute_forward = as_bool(*v, o.at("recompute"));
    if (const json* v = o.opt("bucket_bytes")) {
      u.bucket_bytes = as_size(*v, o.at("bucket_bytes"));
      if (*u.bucket_bytes == 0) throw InputError(o.at("bucket_bytes"), "0 bytes; expected a positive bucket size");
    }
    if (const json* v = o.opt("root")) u.root = as_bool(*v, o.at("root"));
    if (const json* v = o.opt("reshard_after_forward")) {
      u.reshard_after_forward = as_bool(*v, o.at("reshard_after_forward"));
      if (u.root && *u.reshard_after_forward)
        throw InputError(o.at("reshard_after_forward"), "unit \"" + u.name + "\" is part of the FSDP root, which never "
                                                        "reshards after forward unit by unit (the whole root group does, "
                                                        "with policy.root_reshard_after_forward true); drop \"root\" or this key");
    }
    if (u.root && u.bucket_bytes) {
      throw InputError(o.at("bucket_bytes"), "unit \"" + u.name + "\" is part of the FSDP root (\"root\": true), whose "
                                             "units share one parameter group; a bucket size of its own would split it");
    }
    const int repeat = o.has("repeat") ? as_int(*o.opt("repeat"), o.at("repeat"), 1) : 1;
    if (static_cast<int64_t>(units.size()) + repeat > kMaxUnits) {
      throw InputError(o.at("repeat"), "the model would have over " + std::to_string(kMaxUnits) +
                                           " units, more than shardline schedules; expected fewer repeats");
    }
    if (repeat == 1) {
      units.push_back(std::move(u));
    } else {
      for (int r = 0; r < repeat; ++r) {
        UnitSpec copy = u;
        copy.name = u.name + "." + std::to_string(r);
        units.push_back(std::move(copy));
      }
    }
  }
}

ModelSpec parse_model(const json& j, const json& sch) {
  const Obj o(j, "model", sch);
  ModelSpec m;
  if (o.has("transformer") == o.has("units")) {
    throw InputError("model", "expected exactly one of \"transformer\" (a shape to derive units from) or \"units\" "
                              "(an explicit list)");
  }
  if (const json* v = o.opt("transformer")) {
    m.transformer = parse_transformer(*v, o.at("transformer"), sch.at("transformer"));
    // Units are derived once the activation dtype is known (parse_scenario); the names are fixed.
    m.name = "transformer";
    m.seq_len = m.transformer->seq_len;
    m.micro_batch_size = m.transformer->micro_batch_size;
    for (const char* key : {"seq_len", "micro_batch_size"}) {
      if (o.has(key)) throw InputError(o.at(key), std::string("give it inside model.transformer (a transformer states its own ") + key + ")");
    }
  } else {
    parse_unit_list(*o.opt("units"), o.at("units"), sch.at("units"), m.units);
    double total = 0;
    for (const auto& u : m.units)
      for (const auto& t : u.tensors) total += static_cast<double>(t.numel);
    if (!(total <= 1e16)) {
      throw InputError(o.at("units"), "the units hold about " + std::to_string(static_cast<long double>(total)).substr(0, 8) +
                                          " parameters in all, beyond the 1e16 shardline can count in bytes");
    }
    m.name = "custom";
    if (const json* v = o.opt("seq_len")) m.seq_len = as_int64(*v, o.at("seq_len"), 1);
    if (const json* v = o.opt("micro_batch_size")) m.micro_batch_size = as_int64(*v, o.at("micro_batch_size"), 1);
  }
  if (const json* v = o.opt("name")) m.name = as_name(*v, o.at("name"));
  std::set<std::string> names;
  for (const auto& u : m.units) {
    if (!names.insert(u.name).second) {
      throw InputError(o.at("units"), "duplicate unit name \"" + u.name + "\"; unit names must be unique");
    }
  }
  return m;
}

// ---- cluster ----------------------------------------------------------------------------------

LinkSpec parse_link(const json& j, const std::string& path, const json& sch) {
  const Obj o(j, path, sch);
  LinkSpec l;
  l.bandwidth_bytes_per_s = as_rate(o.req("bandwidth", "a rate such as \"450GB/s\""), o.at("bandwidth"));
  l.latency_us = as_time_us(o.req("latency", "a time such as \"2us\""), o.at("latency"), kMaxOverheadUs);
  return l;
}

// Achieved fractions of a peak below 0.1% are typos (1e-300 ran as a step of 1e306 us).
constexpr double kMinEfficiency = 1e-3;
// Dense peak per GPU: 0.001 (a GFLOP/s, below any CPU core) to 1e6 TFLOP/s (an exaFLOP/s).
constexpr double kMaxPeakTflops = 1e6;
constexpr double kMinPeakTflops = 1e-3;
// At most a million ranks: per-rank and per-group tables stay small.
constexpr int64_t kMaxWorld = kMaxWorldRanks;

// The cluster from its merged keys (a preset's or a file's, with the scenario's on top).
ClusterSpec parse_merged_cluster(const json& merged, const json& sch, const std::string& default_name) {
  const Obj o(merged, "cluster", sch);
  ClusterSpec c;
  c.name = o.has("name") ? as_name(*o.opt("name"), o.at("name")) : default_name;

  const Obj g(o.req("gpu", "an object {name, peak_tflops, efficiency, memory, copy_bandwidth}"), o.at("gpu"), sch.at("gpu"));
  c.gpu.name = g.has("name") ? as_name(*g.opt("name"), g.at("name")) : "gpu";
  {
    const std::string path = g.at("peak_tflops");
    const Obj peaks(g.req("peak_tflops", "an object of dense peak TFLOP/s per dtype, e.g. {\"bf16\": 989}"), path,
                    sch.at("gpu").at("peak_tflops"));
    for (const auto& [key, value] : peaks.raw().items()) {
      const std::string vpath = join(path, key);
      const double tflops = as_number(value, vpath);
      if (!(tflops > 0)) throw InputError(vpath, show(value) + " is not positive; expected the dense peak in TFLOP/s");
      if (!(tflops <= kMaxPeakTflops)) throw InputError(vpath, show(value) + " is too large; expected at most 1e6 TFLOP/s");
      if (!(tflops >= kMinPeakTflops)) throw InputError(vpath, show(value) + " is too small; expected at least 0.001 TFLOP/s");
      c.gpu.peak_tflops[parse_dtype(key, vpath)] = tflops;
    }
    if (c.gpu.peak_tflops.empty()) throw InputError(path, "is empty; expected at least one dtype's peak TFLOP/s");
  }
  const auto fraction = [&](const char* key, double& out) {
    if (const json* v = g.opt(key)) {
      out = as_number(*v, g.at(key));
      if (!(out >= kMinEfficiency && out <= 1)) throw InputError(g.at(key), show(*v) + " is out of range; expected a fraction in [0.001, 1]");
    }
  };
  fraction("efficiency", c.gpu.efficiency);
  fraction("gemm_efficiency", c.gpu.gemm_efficiency);
  fraction("attention_efficiency", c.gpu.attention_efficiency);
  fraction("memory_efficiency", c.gpu.memory_efficiency);
  if (g.opt("attention_backward_efficiency")) fraction("attention_backward_efficiency", c.gpu.attention_backward_efficiency.emplace());
  // Half points of FlashAttention's efficiency: a sequence length (tokens) or a head dimension.
  const auto half_point = [&](const char* key, double max, const char* what) -> std::optional<double> {
    const json* v = g.opt(key);
    if (!v) return std::nullopt;
    const double x = as_number(*v, g.at(key));
    if (!(x >= 0 && x <= max)) throw InputError(g.at(key), show(*v) + " is out of range; expected " + what);
    return x;
  };
  c.gpu.attention_half_seq = half_point("attention_half_seq", 1e7, "a sequence length in [0, 1e7] tokens").value_or(0);
  c.gpu.attention_backward_half_seq = half_point("attention_backward_half_seq", 1e7, "a sequence length in [0, 1e7] tokens");
  c.gpu.attention_half_head_dim = half_point("attention_half_head_dim", 4096, "a head dimension in [0, 4096]").value_or(0);
  if (const json* v = g.opt("hbm_bandwidth")) c.gpu.hbm_bandwidth_bytes_per_s = as_rate(*v, g.at("hbm_bandwidth"));
  if (const json* v = g.opt("gemm_half_dim")) {
    c.gpu.gemm_half_dim = as_number(*v, g.at("gemm_half_dim"));
    if (!(c.gpu.gemm_half_dim >= 0 && c.gpu.gemm_half_dim <= 1e6))
      throw InputError(g.at("gemm_half_dim"), show(*v) + " is out of range; expected a GEMM dimension in [0, 1e6]");
  }
  if (const json* v = g.opt("kernel_launch")) {
    c.gpu.kernel_launch_us = as_time_us(*v, g.at("kernel_launch"));
    if (c.gpu.kernel_launch_us > 1e6) throw InputError(g.at("kernel_launch"), show(*v) + " is over a second; expected a per-kernel cost of microseconds");
  }
  if (const json* v = g.opt("context_memory")) c.gpu.context_memory_bytes = as_size(*v, g.at("context_memory"));
  if (const json* v = g.opt("nccl_memory")) c.gpu.nccl_memory_bytes = as_size(*v, g.at("nccl_memory"));
  // The allocator's fragmentations: fractions of the allocated bytes (the key's value, or null).
  const auto allocated_fraction = [&](const char* key, double& out) -> const json* {
    const json* v = g.opt(key);
    if (!v) return nullptr;
    out = as_number(*v, g.at(key));
    if (!(out >= 0 && out <= 1)) throw InputError(g.at(key), show(*v) + " is out of range; expected a fraction in [0, 1] of the allocated bytes");
    return v;
  };
  allocated_fraction("allocator_fragmentation", c.gpu.allocator_fragmentation);
  allocated_fraction("allocator_pool_fragmentation", c.gpu.allocator_pool_fragmentation);
  // Without its own value the allocator is taken to hold as much at capacity as otherwise.
  c.gpu.allocator_fragmentation_at_capacity = c.gpu.allocator_fragmentation;
  if (const json* v = allocated_fraction("allocator_fragmentation_at_capacity", c.gpu.allocator_fragmentation_at_capacity)) {
    if (c.gpu.allocator_fragmentation_at_capacity > c.gpu.allocator_fragmentation)
      // The merged keys do not say whose each is (the scenario's, its preset's or its cluster
      // file's), so the message does not guess; it says when the bound is only the default.
      throw InputError(g.at("allocator_fragmentation_at_capacity"),
                       show(*v) + " is above allocator_fragmentation (" + number_text(c.gpu.allocator_fragmentation) +
                           (g.has("allocator_fragmentation") ? "" : ", its default: neither the scenario nor its preset or cluster file sets it") +
                           "); a full GPU's allocator, having freed its cache, holds no more than it does otherwise: "
                           "set cluster.gpu.allocator_fragmentation_at_capacity to at most that, or set allocator_fragmentation too");
  }
  const json& memory = g.req("memory", "a size such as \"80GiB\"");
  if (memory.is_number() && !(memory.get<double>() > 0))  // one message for 0 and below
    throw InputError(g.at("memory"), show(memory) + " bytes; expected a positive memory size such as \"80GiB\"");
  c.gpu.memory_bytes = as_size(memory, g.at("memory"));
  if (c.gpu.memory_bytes <= 0) throw InputError(g.at("memory"), "0 bytes; expected a positive memory size such as \"80GiB\"");
  // A plain number is bytes: 80 meant as GB would run and report every step as not fitting.
  constexpr int64_t kMinGpuMemoryBytes = int64_t{1} << 20;
  if (c.gpu.memory_bytes < kMinGpuMemoryBytes)
    throw InputError(g.at("memory"), show(memory) + " is " + format_bytes(c.gpu.memory_bytes) +
                                         ", under 1 MiB (a plain number is bytes); expected a memory size such as \"80GiB\"");
  c.gpu.copy_bandwidth_bytes_per_s = as_rate(g.req("copy_bandwidth", "a rate such as \"1.6TB/s\""), g.at("copy_bandwidth"));

  c.nodes = as_int(o.req("nodes", "a positive integer"), o.at("nodes"), 1);
  c.gpus_per_node = as_int(o.req("gpus_per_node", "a positive integer"), o.at("gpus_per_node"), 1);
  if (static_cast<int64_t>(c.nodes) * c.gpus_per_node > kMaxWorld) {
    throw InputError(o.at("nodes"), std::to_string(c.nodes) + " nodes x " + std::to_string(c.gpus_per_node) +
                                        " GPUs is over a million ranks; expected at most " + std::to_string(kMaxWorld));
  }
  c.intra_node = parse_link(o.req("intra_node", "an object {bandwidth, latency}"), o.at("intra_node"), sch.at("intra_node"));
  if (o.has("inter_node")) {
    c.inter_node = parse_link(*o.opt("inter_node"), o.at("inter_node"), sch.at("inter_node"));
  } else if (c.nodes > 1) {
    throw InputError(o.at("inter_node"), "missing required field: the cluster has " + std::to_string(c.nodes) +
                                             " nodes; expected an object {bandwidth, latency}");
  }
  if (const json* v = o.opt("launch_overhead")) c.launch_overhead_us = as_time_us(*v, o.at("launch_overhead"), kMaxOverheadUs);
  if (const json* v = o.opt("host_launch")) c.host_launch_us = as_time_us(*v, o.at("host_launch"), kMaxOverheadUs);
  if (const json* v = o.opt("event_latency")) c.event_latency_us = as_time_us(*v, o.at("event_latency"), kMaxOverheadUs);
  if (const json* v = o.opt("compute_overhead")) c.compute_overhead_us = as_time_us(*v, o.at("compute_overhead"), kMaxOverheadUs);
  // Slow-down factors: at most 100, as a calibrated profile's (a factor of 1e306 made the
  // simulator schedule an event at infinity and abort).
  for (auto [key, field] : {std::pair{"comm_slowdown_during_compute", &c.comm_slowdown_during_compute},
                            std::pair{"compute_slowdown_during_comm", &c.compute_slowdown_during_comm}}) {
    if (const json* v = o.opt(key)) {
      *field = as_number(*v, o.at(key));
      if (!(*field >= 1.0 && *field <= kMaxClusterSlowdown))
        throw InputError(o.at(key), show(*v) + " is out of range; expected a slow-down factor in [1, 100] (1 = no slow-down)");
    }
  }
  if (const json* v = o.opt("hierarchical_collectives")) {
    c.hierarchical_collectives = as_bool(*v, o.at("hierarchical_collectives"));
  }
  return c;
}

// Under JSON merge patch a null deletes the base's value, and the key would then fall back to
// its default without a word: refused as a null is everywhere else in a scenario.
void reject_null_overrides(const json& value, const std::string& where) {
  if (value.is_null())
    throw InputError(where, "expected a value, got null; leave the key out to keep the base's value (the preset's or the cluster file's) or its default");
  if (value.is_object())
    for (const auto& [key, inner] : value.items()) reject_null_overrides(inner, where + "." + key);
}

ClusterSpec parse_cluster(const json& j, const json& sch, const std::string& base_dir) {
  const Obj raw(j, "cluster", sch);
  if (raw.has("preset") && raw.has("file")) {
    throw InputError("cluster", "gives both \"preset\" and \"file\"; expected at most one base to override");
  }
  json merged = json::object();
  std::string default_name = "custom";
  std::string cluster_file;  // cluster.file, when given
  if (const json* p = raw.opt("preset")) {
    const std::string preset = as_string(*p, raw.at("preset"));
    merged = cluster_preset_json(preset, raw.at("preset"));
    default_name = preset;
  } else if (const json* f = raw.opt("file")) {
    const std::string file = as_string(*f, raw.at("file"));
    std::filesystem::path resolved(file);
    if (resolved.is_relative()) resolved = std::filesystem::path(base_dir) / resolved;
    merged = load_json_file(resolved.string(), raw.at("file"), kMaxInputJsonBytes);
    if (!merged.is_object()) type_error(merged, raw.at("file"), "a file holding a cluster object");
    if (merged.contains("preset") || merged.contains("file")) {
      throw InputError(raw.at("file"), "the cluster file \"" + file + "\" must be fully explicit (no preset or file)");
    }
    default_name = resolved.stem().string();
    cluster_file = file;
  }
  const auto in_the_file = [&](const InputError& e) {
    return InputError(e.where(), e.sentence() + " (in the cluster file \"" + cluster_file + "\")");
  };
  if (!cluster_file.empty()) {
    try {
      Obj check(merged, "cluster", sch);  // unknown keys inside the file
    } catch (const InputError& e) {
      throw in_the_file(e);
    }
  }
  json overrides = j;
  overrides.erase("preset");
  overrides.erase("file");
  for (const auto& [key, value] : overrides.items()) reject_null_overrides(value, "cluster." + key);
  merged.merge_patch(overrides);

  try {
    ClusterSpec cluster = parse_merged_cluster(merged, sch, default_name);
    // What the scenario changes of its base beyond the cluster's shape (a GPU number, a link, a
    // slow-down): the summary says the cluster is its base with changes.
    cluster.base_changed = std::any_of(overrides.items().begin(), overrides.items().end(), [](const auto& item) {
      return item.key() != "nodes" && item.key() != "gpus_per_node" && item.key() != "name";
    });
    return cluster;
  } catch (const InputError& e) {
    // A value the scenario does not set came from the cluster file: say so.
    if (cluster_file.empty() || e.where().rfind("cluster.", 0) != 0) throw;
    const json* at = &overrides;
    std::string key;
    std::istringstream path(e.where().substr(std::string("cluster.").size()));
    while (at != nullptr && std::getline(path, key, '.')) {
      key = key.substr(0, key.find('['));
      at = at->is_object() && at->contains(key) ? &at->at(key) : nullptr;
    }
    if (at != nullptr) throw;
    throw in_the_file(e);
  }
}

// ---- mesh, policy, run ------------------------------------------------------------------------

MeshSpec parse_mesh(const json& j, const json& sch, const ClusterSpec& cluster) {
  const Obj o(j, "mesh", sch);
  MeshSpec m;
  m.shard = as_int(o.req("shard", "a positive integer (ranks a unit is sharded over)"), o.at("shard"), 1);
  if (const json* v = o.opt("replicate")) m.replicate = as_int(*v, o.at("replicate"), 1);
  if (static_cast<int64_t>(m.shard) * m.replicate != cluster.world()) {
    throw InputError("mesh", "shard " + std::to_string(m.shard) + " x replicate " + std::to_string(m.replicate) + " = " +
                                 std::to_string(static_cast<int64_t>(m.shard) * m.replicate) +
                                 " ranks, but the cluster has " + std::to_string(cluster.nodes) + (cluster.nodes == 1 ? " node x " : " nodes x ") +
                                 std::to_string(cluster.gpus_per_node) + (cluster.gpus_per_node == 1 ? " GPU = " : " GPUs = ") +
                                 std::to_string(cluster.world()) +
                                 "; expected shard x replicate = nodes x gpus_per_node");
  }
  return m;
}

PolicySpec parse_policy(const json& j, const json& sch, const MeshSpec& mesh, size_t unit_count) {
  const Obj o(j, "policy", sch);
  PolicySpec p;
  if (const json* v = o.opt("comm_fusion")) p.comm_fusion = as_bool(*v, o.at("comm_fusion"));
  if (const json* v = o.opt("zero_copy")) p.zero_copy = as_bool(*v, o.at("zero_copy"));
  if (const json* v = o.opt("bucket_bytes")) {
    if (v->is_string() && v->get<std::string>() == "unit") {
      p.bucket_bytes = 0;
    } else if (v->is_number()) {
      p.bucket_bytes = as_size(*v, o.at("bucket_bytes"));
    } else if (v->is_string()) {
      try {
        p.bucket_bytes = as_size(*v, o.at("bucket_bytes"));
      } catch (const InputError& e) {  // the size's own sentence, and the key's other value
        throw InputError(e.where(), closest_match(v->get<std::string>(), {"unit"}) == "unit"
                                        ? e.sentence() + "; did you mean \"unit\" (one bucket per unit)?"
                                        : e.sentence() + "; or \"unit\" / 0 for one bucket per unit");
      }
    } else {
      type_error(*v, o.at("bucket_bytes"), "a size such as \"64MiB\", or \"unit\" / 0 for one bucket per unit");
    }
  }
  if (const json* v = o.opt("reshard_after_forward")) {
    const std::string path = o.at("reshard_after_forward");
    if (v->is_boolean()) {
      p.reshard_after_forward.mode = v->get<bool>() ? ReshardAfterForward::Mode::Full : ReshardAfterForward::Mode::Keep;
    } else if (v->is_number()) {
      const int k = as_int(*v, path, std::numeric_limits<int>::min());  // any integer: the divisor rule below says what fits
      if (k <= 1 || k >= mesh.shard || mesh.shard % k != 0) {
        throw InputError(path, std::to_string(k) + " is not a non-trivial divisor of the shard size " +
                                   std::to_string(mesh.shard) +
                                   "; expected true, false, or an integer k with 1 < k < shard and shard % k == 0");
      }
      p.reshard_after_forward.mode = ReshardAfterForward::Mode::Partial;
      p.reshard_after_forward.group_size = k;
    } else {
      type_error(*v, path, "true, false, or an integer group size");
    }
  }
  if (const json* v = o.opt("root_reshard_after_forward"))
    p.root_reshard_after_forward = as_bool(*v, o.at("root_reshard_after_forward"));
  const int max_depth = unit_count > 0 ? static_cast<int>(unit_count) - 1 : 0;
  for (const char* key : {"forward_prefetch", "backward_prefetch"}) {
    if (const json* v = o.opt(key)) {
      const int depth = as_int(*v, o.at(key), 0);
      if (depth > max_depth) {
        throw InputError(o.at(key), "depth " + std::to_string(depth) + " is larger than the model allows: with " +
                                        std::to_string(unit_count) + " units at most " + std::to_string(max_depth) +
                                        " can be prefetched; expected 0.." + std::to_string(max_depth));
      }
      (std::strcmp(key, "forward_prefetch") == 0 ? p.forward_prefetch : p.backward_prefetch) = depth;
    }
  }
  if (const json* v = o.opt("param_dtype")) p.param_dtype = parse_dtype(as_string(*v, o.at("param_dtype")), o.at("param_dtype"));
  if (const json* v = o.opt("reduce_dtype")) p.reduce_dtype = parse_dtype(as_string(*v, o.at("reduce_dtype")), o.at("reduce_dtype"));
  if (const json* v = o.opt("master_dtype")) p.master_dtype = parse_dtype(as_string(*v, o.at("master_dtype")), o.at("master_dtype"));
  if (const json* v = o.opt("optimizer_bytes_per_param")) {
    // AdamW keeps 8 bytes per parameter; 1 KiB per parameter is far beyond any optimizer.
    p.optimizer_bytes_per_param = as_size(*v, o.at("optimizer_bytes_per_param"), 1024);
  }
  if (const json* v = o.opt("optimizer_implementation")) {
    p.optimizer_implementation = as_choice<OptimizerImplementation>(
        *v, o.at("optimizer_implementation"),
        {{"fused", OptimizerImplementation::Fused},
         {"foreach", OptimizerImplementation::Foreach},
         {"for_loop", OptimizerImplementation::ForLoop}},
        {{"for-loop", "torchtitan's and torch.optim's for-loop implementation is \"for_loop\""}});
  }
  if (const json* v = o.opt("optimizer_params")) {
    p.optimizer_params = as_choice<OptimizerParams>(
        *v, o.at("optimizer_params"),
        {{"dtensor", OptimizerParams::DTensor},
         {"fsdp1_orig_params", OptimizerParams::Fsdp1OrigParams},
         {"fsdp1_flat_params", OptimizerParams::Fsdp1FlatParams}});
  }
  if (const json* v = o.opt("output_lifetime")) {
    p.output_lifetime = as_choice<OutputLifetime>(*v, o.at("output_lifetime"),
                                                  {{"backward", OutputLifetime::Backward}, {"loss", OutputLifetime::Loss}});
  }
  if (const json* v = o.opt("micro_batches")) p.micro_batches = as_int(*v, o.at("micro_batches"), 1);
  if (const json* v = o.opt("grad_sync")) {
    const std::string s = as_string(*v, o.at("grad_sync"));
    if (s == "every") p.grad_sync = GradSync::Every;
    else if (s == "last") p.grad_sync = GradSync::Last;
    else {
      throw InputError(o.at("grad_sync"), "unknown grad_sync \"" + s + "\";" + choice_tail(s, {"every", "last"}));
    }
  }
  if (const json* v = o.opt("average_gradients")) p.average_gradients = as_bool(*v, o.at("average_gradients"));
  return p;
}

RunSpec parse_run(const json& j, const json& sch) {
  const Obj o(j, "run", sch);
  RunSpec r;
  if (const json* v = o.opt("iterations")) {
    r.iterations = as_int(*v, o.at("iterations"), 1);
    if (r.iterations > kMaxTimelineIterations)
      throw InputError(o.at("iterations"), show(*v) + " is too large; a run measures at most " +
                                               std::to_string(kMaxTimelineIterations) + " iterations");
  }
  if (const json* v = o.opt("warmup")) r.warmup = as_int(*v, o.at("warmup"), 0);
  if (const json* v = o.opt("memory_margin")) {
    r.memory_margin = as_number(*v, o.at("memory_margin"));
    if (!(r.memory_margin >= 0 && r.memory_margin < 1)) {
      throw InputError(o.at("memory_margin"), show(*v) + " is out of range; expected a fraction in [0, 1)");
    }
  }
  return r;
}

// ---- variation --------------------------------------------------------------------------------

// Which ranks a straggler or slow link names: exactly one of "rank", "node" or "group" (with
// "index"), inside the mesh.
RankSelector parse_rank_selector(const Obj& o, const MeshSpec& mesh, const ClusterSpec& cluster, bool groups_allowed) {
  const int world = mesh.shard * mesh.replicate;
  const int nodes = (world + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  int named = 0;
  for (const char* key : {"rank", "node", "group"}) named += o.has(key) ? 1 : 0;
  const std::string what = groups_allowed ? "one of \"rank\", \"node\" or \"group\" (with \"index\")" : "one of \"rank\" or \"node\"";
  if (named != 1) throw InputError(o.path(), std::string(named == 0 ? "names no ranks" : "names ranks twice") + "; expected " + what);
  if (!o.has("group") && o.has("index")) throw InputError(o.at("index"), "goes with \"group\"");
  RankSelector sel;
  auto index_below = [&](const std::string& key, int limit, const std::string& of) {
    const int i = as_int(*o.opt(key), o.at(key), 0);
    if (i >= limit) throw InputError(o.at(key), std::to_string(i) + " is outside the mesh; expected 0.." + std::to_string(limit - 1) + " (" + of + ")");
    return i;
  };
  const auto count = [](int n, const std::string& one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); };
  if (o.has("rank")) {
    sel.index = index_below("rank", world, count(world, "rank"));
  } else if (o.has("node")) {
    sel.scope = RankSelector::Scope::Node;
    sel.index = index_below("node", nodes, count(nodes, "node") + " of " + count(cluster.gpus_per_node, "GPU"));
  } else {
    sel.scope = as_choice<RankSelector::Scope>(*o.opt("group"), o.at("group"),
                                              {{"shard", RankSelector::Scope::ShardGroup}, {"replicate", RankSelector::Scope::ReplicateGroup}});
    const bool shard = sel.scope == RankSelector::Scope::ShardGroup;
    const int groups = shard ? mesh.replicate : mesh.shard;
    o.req("index", "the group's index");
    sel.index = index_below("index", groups, count(groups, std::string(shard ? "shard" : "replicate") + " group"));
  }
  return sel;
}

// A straggler's compute factor in [0.001, 1000], a slow link's bandwidth fraction in [0.001, 1]:
// beyond them a value is a typo, and it would run as a step of years.
constexpr double kMinVariationFactor = 1e-3;
constexpr double kMaxComputeFactor = 1e3;
bool factor_in_range(double f, bool at_most_one) { return f >= kMinVariationFactor && f <= (at_most_one ? 1.0 : kMaxComputeFactor); }
const char* factor_range(bool at_most_one) {
  return at_most_one ? "a fraction in [0.001, 1]" : "a factor in [0.001, 1000] (1.5: 50% slower)";
}

double as_factor(const Obj& o, const char* key, bool at_most_one) {
  const json& v = o.req(key, factor_range(at_most_one));
  const double f = as_number(v, o.at(key));
  if (!factor_in_range(f, at_most_one)) throw InputError(o.at(key), show(v) + " is out of range; expected " + factor_range(at_most_one));
  return f;
}

// Entries naming the same rank multiply: their product per rank keeps the same bounds.
void check_factor_products(const std::vector<double>& per_rank, const std::string& path, bool at_most_one) {
  for (size_t r = 0; r < per_rank.size(); ++r)
    if (!factor_in_range(per_rank[r], at_most_one))
      throw InputError(path, "the entries naming rank " + std::to_string(r) + " multiply to " + number_text(per_rank[r]) + "; expected " +
                                 factor_range(at_most_one));
}

// A named distribution with its coefficient of variation (compute_jitter, rank_compute_spread).
Spread parse_spread(const Obj& c) {
  Spread out;
  if (const json* d = c.opt("distribution"))
    out.distribution = as_choice<JitterDistribution>(*d, c.at("distribution"), {{"lognormal", JitterDistribution::LogNormal},
                                                                                {"normal", JitterDistribution::Normal},
                                                                                {"uniform", JitterDistribution::Uniform}});
  const json& cv = c.req("cv", "the coefficient of variation, e.g. 0.05");
  out.cv = as_number(cv, c.at("cv"));
  const bool uniform = out.distribution == JitterDistribution::Uniform;
  const bool normal = out.distribution == JitterDistribution::Normal;
  const double max_cv = uniform ? kMaxUniformCv : normal ? kMaxNormalCv : 2.0;
  if (!(out.cv >= 0 && out.cv <= max_cv))
    throw InputError(c.at("cv"), show(cv) + " is out of range; expected a coefficient of variation in [0, " + number_text(max_cv) + "]" +
                                     (uniform ? " for a uniform distribution"
                                      : normal ? " for a normal distribution, whose clamp at 0.1 would raise the mean above 1; "
                                                 "lognormal takes up to 2"
                                               : ""));
  return out;
}

VariationSpec parse_variation(const json& j, const json& sch, const MeshSpec& mesh, const ClusterSpec& cluster) {
  const Obj o(j, "variation", sch);
  VariationSpec v;
  if (const json* s = o.opt("seed")) v.seed = static_cast<uint64_t>(as_int64(*s, o.at("seed"), 0));
  for (const auto& [key, spread] : {std::pair{"compute_jitter", &v.jitter}, std::pair{"rank_compute_spread", &v.rank_compute_spread}})
    if (const json* sj = o.opt(key)) *spread = parse_spread(Obj(*sj, o.at(key), sch.at(key)));
  for (const auto& [key, groups_allowed] : {std::pair{"stragglers", true}, std::pair{"slow_links", false}}) {
    const json* list = o.opt(key);
    if (list == nullptr) continue;
    if (!list->is_array()) type_error(*list, o.at(key), "a list of objects");
    for (size_t i = 0; i < list->size(); ++i) {
      const Obj e((*list)[i], join(o.at(key), i), sch.at(key).at(0));
      const RankSelector sel = parse_rank_selector(e, mesh, cluster, groups_allowed);
      if (groups_allowed) v.stragglers.push_back({sel, as_factor(e, "compute_factor", false)});
      else v.slow_links.push_back({sel, as_factor(e, "bandwidth_factor", true)});
    }
  }
  // The stragglers naming one rank multiply, and their product keeps their range. The rank's
  // spread draw multiplies that product too, but it is not held to the range: whether a
  // scenario is accepted must not depend on its seed (an audit: --straggler 1=1000 with a spread
  // was refused for five seeds in ten, by a product the user could not work out).
  if (!v.stragglers.empty())
    check_factor_products(rank_straggler_factors(v, mesh.shard, mesh.replicate, cluster.gpus_per_node), o.at("stragglers"), false);
  if (!v.slow_links.empty())
    check_factor_products(rank_bandwidth_factors(v, mesh.shard, mesh.replicate, cluster.gpus_per_node), o.at("slow_links"), true);
  return v;
}

// ---- files ------------------------------------------------------------------------------------

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

nlohmann::json load_scenario_json(const std::string& path) {
  json j = load_json_file(path, path, kMaxInputJsonBytes);
  // Another kind of file given as a scenario (a timeline, metrics, a profile): said as such,
  // naming the file, instead of the first of its keys the scenario schema does not know. Only
  // where the file has none of a scenario's "model", "cluster" and "mesh" and a key no scenario
  // has, which the parse refuses anyway (a scenario with "modle" keeps its "did you mean").
  if (j.is_object() && !j.contains("model") && !j.contains("cluster") && !j.contains("mesh")) {
    const json& top = schema();
    std::vector<std::string> foreign;
    for (const auto& [key, value] : j.items())
      if (!top.contains(key)) foreign.push_back("\"" + key + "\"");
    if (!foreign.empty()) {
      if (foreign.size() > 4) foreign.resize(4), foreign.back() = "...";
      std::string keys;
      for (const auto& k : foreign) keys += (keys.empty() ? "" : ", ") + k;
      throw InputError(path, "is not a scenario: it has no \"model\", \"cluster\" or \"mesh\" and has keys no scenario has (" + keys +
                                 "); a scenario JSON has \"model\", \"cluster\" and \"mesh\" (docs/scenario.md)");
    }
  }
  return j;
}

void apply_overrides(nlohmann::json& scenario_json, const std::vector<std::string>& overrides) {
  for (const std::string& item : overrides) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("--set", "\"" + item + "\" is not of the form path=value; expected e.g. "
                                              "policy.bucket_bytes=64MiB");
    }
    const std::string path = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    const std::optional<json> parsed = parse_json_text_if_json(text, "--set");
    json value = parsed ? *parsed : json(text);

    std::vector<std::string> segments;
    for (size_t start = 0;;) {
      const auto dot = path.find('.', start);
      segments.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    json* cur = &scenario_json;
    const json* sch = &schema();
    std::string done;
    for (size_t i = 0; i < segments.size(); ++i) {
      const std::string& seg = segments[i];
      const bool last = i + 1 == segments.size();
      if (seg.empty()) throw InputError("--set", "\"" + path + "\" has an empty path segment; expected a.b.c=value");
      if (cur->is_array()) {
        if (!is_index(seg) || std::stoul(seg) >= cur->size()) {
          throw InputError("--set", "\"" + path + "\": " + done + " is an array of " + std::to_string(cur->size()) +
                                        " elements; \"" + seg + "\" is not an index in 0.." +
                                        std::to_string(cur->size() == 0 ? 0 : cur->size() - 1));
        }
        cur = &(*cur)[std::stoul(seg)];
        sch = (sch && sch->is_array()) ? &sch->at(0) : nullptr;
      } else if (cur->is_object() || cur->is_null()) {
        const bool known = sch && sch->is_object() && sch->contains(seg);
        const bool present = cur->is_object() && cur->contains(seg);
        if (!known && !present) {
          std::vector<std::string> candidates = sch && sch->is_object() ? keys_of(*sch) : std::vector<std::string>{};
          for (const auto& k : keys_of(*cur)) {
            if (!sch || !sch->contains(k)) candidates.push_back(k);
          }
          throw InputError("--set", "\"" + path + "\": unknown key \"" + seg + "\"" +
                                        (done.empty() ? "" : " in " + done) + ";" + suggestion_tail(seg, candidates));
        }
        if (!present && !last) {
          const json& child = sch->at(seg);
          if (child.is_array()) {
            throw InputError("--set", "\"" + path + "\": " + join(done, seg) + " is not in the scenario, so it has no "
                                                                                 "element to set; add it to the file");
          }
          if (!child.is_object()) {  // a value's key (the schema's leaf), as when the file sets it
            throw InputError("--set", "\"" + path + "\": " + join(done, seg) + " is a value (" + child.get<std::string>() +
                                          "), not an object, so \"" + segments[i + 1] + "\" cannot be set inside it");
          }
          (*cur)[seg] = json::object();
        }
        cur = &(*cur)[seg];
        sch = known ? &sch->at(seg) : nullptr;
      } else {
        throw InputError("--set", "\"" + path + "\": " + done + " is " + show(*cur) + ", not an object or array, so \"" +
                                      seg + "\" cannot be set inside it");
      }
      done = join(done, seg);
    }
    *cur = std::move(value);
  }
}

Scenario parse_scenario(const nlohmann::json& scenario_json, const std::string& base_dir) {
  const json& sch = schema();
  const Obj top(scenario_json, "", sch);
  Scenario s;
  s.name = as_name(top.req("name", "a scenario name"), "name");
  if (const json* v = top.opt("description")) s.description = as_string(*v, "description");
  s.model = parse_model(top.req("model", "an object with \"transformer\" or \"units\""), sch.at("model"));
  s.cluster = parse_cluster(top.req("cluster", "an object with \"preset\" or explicit fields"), sch.at("cluster"), base_dir);
  s.mesh = parse_mesh(top.req("mesh", "an object {shard, replicate}"), sch.at("mesh"), s.cluster);
  const size_t unit_count = s.model.transformer ? static_cast<size_t>(s.model.transformer->layers) + 2 : s.model.units.size();
  s.policy = top.has("policy") ? parse_policy(*top.opt("policy"), sch.at("policy"), s.mesh, unit_count) : PolicySpec{};
  if (s.model.transformer) {
    s.model.units = transformer_units(*s.model.transformer, dtype_bytes(s.policy.param_dtype));
    // The op-level compute model needs the GPU's memory bandwidth and efficiencies.
    const GpuSpec& gpu = s.cluster.gpu;
    for (auto [key, value] : {std::pair{"hbm_bandwidth", gpu.hbm_bandwidth_bytes_per_s}, std::pair{"gemm_efficiency", gpu.gemm_efficiency},
                              std::pair{"attention_efficiency", gpu.attention_efficiency},
                              std::pair{"memory_efficiency", gpu.memory_efficiency}}) {
      if (!(value > 0)) {
        throw InputError(std::string("cluster.gpu.") + key,
                         "missing; the transformer shorthand times each kernel with a roofline and needs the GPU's hbm_bandwidth, "
                         "gemm_efficiency, attention_efficiency and memory_efficiency (the presets carry them; docs/compute-model.md)");
      }
    }
  }
  s.run = top.has("run") ? parse_run(*top.opt("run"), sch.at("run")) : RunSpec{};
  if (const json* v = top.opt("variation")) s.variation = parse_variation(*v, sch.at("variation"), s.mesh, s.cluster);

  // Cross-checks that need more than one section.
  if (!s.cluster.gpu.peak_tflops.count(s.policy.param_dtype)) {
    throw InputError("cluster.gpu.peak_tflops", "has no entry for the compute dtype (policy.param_dtype) \"" +
                                                    std::string(dtype_name(s.policy.param_dtype)) +
                                                    "\"; expected its dense peak TFLOP/s");
  }
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  json j = load_scenario_json(path);
  apply_overrides(j, overrides);
  const auto parent = std::filesystem::path(path).parent_path();
  return parse_scenario(j, parent.empty() ? "." : parent.string());
}

}  // namespace shardline
