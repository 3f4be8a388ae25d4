#include "core/suggest.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace shardline {

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int up = row[j];
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = up;
    }
  }
  return row[b.size()];
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string listed(const std::vector<std::string>& candidates) {
  std::string list;
  for (const auto& c : candidates) list += (list.empty() ? "" : ", ") + c;
  return list;
}

// What other tools call a scenario key (HuggingFace configs, Megatron-LM and torchtitan
// arguments, GPU spec sheets) -> the key here. Spelling distance gets these wrong: "num_heads" is
// closer to "kv_heads" than to "heads", and "memory_bandwidth" to "copy_bandwidth" than to
// "hbm_bandwidth", and following such a hint sets another parameter without an error.
const std::vector<std::pair<std::string_view, std::string_view>>& other_tools_names() {
  static const std::vector<std::pair<std::string_view, std::string_view>> names = {
      {"num_layers", "layers"}, {"n_layers", "layers"}, {"n_layer", "layers"}, {"num_hidden_layers", "layers"},
      {"hidden_size", "hidden"}, {"d_model", "hidden"}, {"dim", "hidden"}, {"n_embd", "hidden"}, {"hidden_dim", "hidden"},
      {"intermediate_size", "ffn_hidden"}, {"ffn_hidden_size", "ffn_hidden"}, {"ffn_dim", "ffn_hidden"}, {"ffn_size", "ffn_hidden"},
      {"num_heads", "heads"}, {"n_heads", "heads"}, {"n_head", "heads"}, {"num_attention_heads", "heads"},
      {"num_key_value_heads", "kv_heads"}, {"num_kv_heads", "kv_heads"}, {"n_kv_heads", "kv_heads"}, {"num_query_groups", "kv_heads"},
      {"vocab_size", "vocab"}, {"padded_vocab_size", "vocab"},
      {"seq_length", "seq_len"}, {"sequence_length", "seq_len"}, {"max_seq_len", "seq_len"}, {"max_position_embeddings", "seq_len"},
      {"batch_size", "micro_batch_size"}, {"local_batch_size", "micro_batch_size"}, {"per_device_train_batch_size", "micro_batch_size"},
      {"tie_word_embeddings", "tied_embeddings"}, {"tie_embeddings", "tied_embeddings"}, {"share_embeddings_and_output_weights", "tied_embeddings"},
      {"gradient_checkpointing", "activation_checkpointing"}, {"recompute_granularity", "activation_checkpointing"},
      {"gradient_accumulation_steps", "micro_batches"}, {"grad_accum_steps", "micro_batches"},
      {"memory_bandwidth", "hbm_bandwidth"}, {"mem_bandwidth", "hbm_bandwidth"}, {"hbm", "hbm_bandwidth"}, {"dram_bandwidth", "hbm_bandwidth"},
  };
  return names;
}

}  // namespace

std::string closest_match(std::string_view word_as_given, const std::vector<std::string>& candidates) {
  const std::string word = lower(word_as_given);
  // A word that switches a thing off ("none", "off") is no misspelling of an option that is not
  // it: "none" is two edits from "rope", and "did you mean rope" would be wrong.
  for (const std::string_view off : {"none", "off", "no", "false", "null", "disabled"})
    if (word == off) {
      for (const auto& c : candidates)
        if (lower(c) == off) return c;
      return "";
    }
  for (const auto& [theirs, ours] : other_tools_names()) {
    if (word != theirs) continue;
    for (const auto& c : candidates)
      if (lower(c) == ours) return c;
  }
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  int best = limit + 1;
  std::string best_word;
  for (const auto& c_as_given : candidates) {
    const std::string c = lower(c_as_given);
    int d = edit_distance(word, c);
    // A truncated or extended name ("h100-sxm" for "h100-sxm-dgx"), or the last part of one
    // ("complex" for "eager_complex"), is a plausible typo too.
    const auto ends_with = [](const std::string& s, const std::string& tail) {
      return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    const bool prefix = word.size() >= 3 && (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0);
    const bool suffix = word.size() >= 4 && (ends_with(c, word) || ends_with(word, c));
    if (prefix || suffix) d = std::min(d, limit);
    if (d < best) {
      best = d;
      best_word = c_as_given;
    }
  }
  return best_word;
}

std::string suggestion_tail(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = closest_match(word, candidates);
  if (!best.empty()) return " did you mean \"" + best + "\"?";
  return " expected one of: " + listed(candidates) + ".";
}

std::string choice_tail(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = closest_match(word, candidates);
  return (best.empty() ? " expected" : " did you mean \"" + best + "\"? Expected") + " one of: " + listed(candidates) +
         ".";
}

}  // namespace shardline
