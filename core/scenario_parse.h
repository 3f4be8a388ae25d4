// Turning scenario JSON (files, --set overrides, cluster presets) into a validated Scenario.
// Every bad input throws InputError naming the JSON path, the value and what was expected.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/scenario.h"

namespace shardline {

// Reads a scenario file (JSON). Relative preset/profile references resolve against its folder.
nlohmann::json load_scenario_json(const std::string& path);

// Applies "path=value" overrides (e.g. "policy.bucket_bytes=64MiB") to the raw JSON. The value
// is parsed as JSON when it is valid JSON, else taken as a string. Unknown paths throw
// InputError("--set", ...) with the closest known key.
void apply_overrides(nlohmann::json& scenario_json, const std::vector<std::string>& overrides);

// Validates and types the JSON. `base_dir` resolves relative file references.
Scenario parse_scenario(const nlohmann::json& scenario_json, const std::string& base_dir = ".");

// Convenience: load + overrides + parse.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace shardline
