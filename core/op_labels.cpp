#include "core/op_labels.h"
#include "core/invariant.h"


namespace shardline {

int OpLabels::add(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  const int id = static_cast<int>(texts_.size());
  texts_.emplace_back(text);
  index_.emplace(texts_.back(), id);
  return id;
}

std::string OpLabels::name(int label, int number, bool whole, int microbatch) const {
  if (label < 0) return {};
  SHARDLINE_CHECK(static_cast<size_t>(label) < texts_.size(), "op label outside the label table");
  std::string name = texts_[static_cast<size_t>(label)];
  if (number >= 0) name += std::to_string(number);
  if (!whole) name += " mb" + std::to_string(microbatch);
  return name;
}

OpLabels::Named OpLabels::add_name(std::string_view name, int microbatch) {
  if (name.empty()) return {};
  const std::string suffix = " mb" + std::to_string(microbatch);
  if (name.size() > suffix.size() && name.ends_with(suffix))
    return {add(name.substr(0, name.size() - suffix.size())), false};
  return {add(name), true};
}

}  // namespace shardline
