#include "reports/memory_text.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/invariant.h"
#include "core/units.h"

namespace shardline {

std::string memory_parts_text(const MemoryAtPeak& peak) {
  static const std::map<std::string, std::string> kLabels = {
      {"sharded_params", "sharded parameters"},      {"optimizer_state", "optimizer state"},
      {"all_gather_buffer", "all-gather buffers"},   {"unsharded_params", "unsharded parameters"},
      {"unsharded_grads", "unsharded gradients"},    {"reduce_scatter_buffer", "reduce-scatter buffers"},
      {"all_reduce_buffer", "all-reduce buffers"},   {"activations", "activations"},
      {"sharded_grads", "sharded gradients"},        {"optimizer_temporary", "optimizer temporaries"},
      {"none", "other"}};
  std::vector<std::pair<std::string, int64_t>> parts = peak.parts();
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [name, bytes] : parts) {
    if (bytes == 0) continue;
    if (!out.empty()) out += ", ";
    const auto label = kLabels.find(name);
    SHARDLINE_CHECK(label != kLabels.end(), "a part of the peak memory without a label here (a MemoryKind added without one)");
    out += label->second + " " + format_bytes(bytes);
  }
  return out;
}

}  // namespace shardline
