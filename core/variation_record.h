// How a run records the variation it ran with (core/variation.h): as JSON in timeline.json, in
// the scenario's own `variation` form (what a user pastes back to reproduce the run), and as one
// line of words for the summaries. Only what acts is written: a spread of cv 0 and the seed of
// no draw are left out, so two runs that varied the same way record the same.
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/variation.h"

namespace shardline {

// What acts of `v`, as the scenario's `variation` object ({} when nothing varies).
nlohmann::json variation_to_json(const VariationSpec& v);
// Reads what variation_to_json writes; errors name `path`.
VariationSpec variation_from_json(const nlohmann::json& j, const std::string& path);
// "straggler rank 2 x1.5; jitter lognormal cv 0.1 (seed 3)", or "none".
std::string variation_text(const VariationSpec& v);
// Only what acts (variation_to_json's form): two runs that varied the same way compare equal.
VariationSpec acting_variation(const VariationSpec& v);

}  // namespace shardline
