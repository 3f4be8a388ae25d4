#include "core/suggest.h"

#include <algorithm>
#include <cctype>

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

}  // namespace

std::string closest_match(std::string_view word_as_given, const std::vector<std::string>& candidates) {
  const std::string word = lower(word_as_given);
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  int best = limit + 1;
  std::string best_word;
  for (const auto& c_as_given : candidates) {
    const std::string c = lower(c_as_given);
    int d = edit_distance(word, c);
    // A truncated or extended name ("h100-sxm" for "h100-sxm-dgx") is a plausible typo too.
    const bool prefix = word.size() >= 3 && (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0);
    if (prefix) d = std::min(d, limit);
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
