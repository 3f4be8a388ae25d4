#include "core/memory_at_peak.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "core/invariant.h"
#include "core/json_fields.h"

namespace shardline {
namespace jf = json_fields;

namespace {
std::string_view kind_name(int k) { return memory_kind_name(static_cast<MemoryKind>(k)); }
}  // namespace

int64_t MemoryAtPeak::total_bytes() const {
  // Summed wide and capped: a hostile metrics.json's parts may each be near 2^63.
  __int128 sum = static_cast<__int128>(sharded_params_bytes) + optimizer_state_bytes;
  for (const int64_t b : bytes_by_kind) sum += b;
  return sum > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(sum);
}

std::vector<std::pair<std::string, int64_t>> MemoryAtPeak::parts() const {
  std::vector<std::pair<std::string, int64_t>> out{{"sharded_params", sharded_params_bytes},
                                                   {"optimizer_state", optimizer_state_bytes}};
  for (int k = 0; k < kMemoryLabelCount; ++k)
    if (static_cast<MemoryKind>(k) != MemoryKind::None || bytes_by_kind[static_cast<size_t>(k)] != 0)
      out.emplace_back(std::string(kind_name(k)), bytes_by_kind[static_cast<size_t>(k)]);
  return out;
}

MemoryAtPeak memory_at_peak_of(const Program& program, const std::array<int64_t, kMemoryLabelCount>& live_by_kind) {
  MemoryAtPeak m;
  for (const ParamInfo& p : program.params) m.sharded_params_bytes += p.shard_numel * dtype_bytes(program.master_dtype);
  m.optimizer_state_bytes = program.static_memory_bytes - m.sharded_params_bytes;
  // The scheduler's static bytes hold the shards by construction, and program_from_json refuses
  // a file whose do not.
  SHARDLINE_CHECK(m.optimizer_state_bytes >= 0, "static memory below the parameters' shards in the master dtype");
  m.bytes_by_kind = live_by_kind;
  return m;
}

nlohmann::json memory_at_peak_to_json(const MemoryAtPeak& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, bytes] : m.parts()) j[name] = bytes;
  return j;
}

MemoryAtPeak memory_at_peak_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  MemoryAtPeak m;
  const auto read = [&](std::string_view key) {
    const int64_t v = jf::get_int(j, key, path);
    if (v < 0) throw InputError(jf::join_path(path, key), "must be >= 0, found " + std::to_string(v));
    return v;
  };
  m.sharded_params_bytes = read("sharded_params");
  m.optimizer_state_bytes = read("optimizer_state");
  size_t known = 2;
  for (int k = 0; k < kMemoryLabelCount; ++k) {
    const bool optional = static_cast<MemoryKind>(k) == MemoryKind::None;
    if (optional && !jf::has_member(j, kind_name(k))) continue;
    m.bytes_by_kind[static_cast<size_t>(k)] = read(kind_name(k));
    ++known;
  }
  if (j.size() != known)
    for (const auto& [key, value] : j.items()) {
      (void)value;
      bool is_known = key == "sharded_params" || key == "optimizer_state";
      for (int k = 0; k < kMemoryLabelCount; ++k) is_known = is_known || key == kind_name(k);
      if (!is_known) throw InputError(jf::join_path(path, key), "is not a part of the peak memory");
    }
  return m;
}

}  // namespace shardline
