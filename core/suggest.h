// "Did you mean ...?": the closest known word to a misspelt one (Levenshtein edit distance),
// used by error messages for unknown keys, presets and override paths.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace shardline {

int edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo
// (distance at most max(2, word length / 3), or one is a prefix or a suffix of the other; never
// for a word that switches a thing off, "none" or "off", unless it is a candidate; case is ignored,
// so "MHA" finds "mha"). Ties go to the earlier candidate. A name another tool gives a key
// (HuggingFace's "num_attention_heads", a spec sheet's "memory_bandwidth") finds the key here
// ("heads", "hbm_bandwidth") when that is a candidate, before any spelling distance.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " did you mean \"x\"?" or " expected one of: a, b, c." -- a ready tail for an error sentence.
std::string suggestion_tail(std::string_view word, const std::vector<std::string>& candidates);

// For a value out of a closed set: " did you mean \"x\"? Expected one of: a, b, c." (the list
// always, the suggestion when one is close) -- the value errors name every accepted value.
std::string choice_tail(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace shardline
