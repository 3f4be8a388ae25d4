// Op names, made when printed. An op's name is a label shared by many ops ("ag b", "fwd layers.3"),
// the op's label number when it has one (a bucket: "ag b" 12 -> "ag b12"), and " mb<micro-batch>",
// so the Program stores a few hundred labels instead of one string per op. A name read from a
// file that does not end in its op's " mb<k>" is kept whole (the op is marked so) and printed as
// it was.
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardline {

class OpLabels {
 public:
  // The index of `text`, added when new (the same text always gets the same index).
  int add(std::string_view text);
  // The name of an op with label `label` (-1: none, the empty name), label number `number` (-1:
  // none) in `microbatch`; `whole`: the label is the whole name.
  std::string name(int label, int number, bool whole, int microbatch) const;
  // Splits `name` into a label and the rule above: {label, whole}.
  struct Named {
    int label = -1;
    bool whole = false;
  };
  Named add_name(std::string_view name, int microbatch);

  const std::vector<std::string>& texts() const { return texts_; }
  size_t size() const { return texts_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> texts_;
  std::unordered_map<std::string, int, Hash, std::equal_to<>> index_;
};

}  // namespace shardline
