// The transformer shorthand's units: what fully_shard wraps (the embedding, each block, the
// final norm and output head), their parameter tensors, and the memory model — the bytes each
// unit keeps for backward under each checkpointing mode, and the bytes that live only while its
// forward or backward runs (docs/scenario.md "Memory model" lists every tensor).
#pragma once
#include <cstdint>
#include <vector>

#include "core/scenario.h"

namespace shardline {

// Units in forward order: "embedding", "layers.0" .. "layers.{L-1}", "norm+output".
// `activation_bytes_per_element`: the width of activations (the compute dtype, policy.param_dtype).
std::vector<UnitSpec> transformer_units(const TransformerSpec& t, int activation_bytes_per_element);

}  // namespace shardline
