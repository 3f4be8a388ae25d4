// Built-in cluster presets ("h100-sxm-dgx", "a100-80gb-dgx", "host-cpu"): cluster JSON embedded
// in the binary, in the same schema as an explicit "cluster" object of a scenario
// (docs/scenario.md cites where each number comes from).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardline {

std::vector<std::string> cluster_preset_names();

// The preset's cluster JSON. Throws InputError(where, ...) naming the known presets when
// `name` is not one of them.
nlohmann::json cluster_preset_json(std::string_view name, const std::string& where);

}  // namespace shardline
