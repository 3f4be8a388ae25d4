#include "core/memory_reserve.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"

namespace shardline {

using nlohmann::json;
namespace jf = json_fields;

MemoryReserve memory_reserve_of(const Scenario& s) {
  int communicators = 1;
  if (s.mesh.replicate > 1) ++communicators;
  if (s.policy.reshard_after_forward.mode == ReshardAfterForward::Mode::Partial) ++communicators;
  MemoryReserve r;
  r.fixed_bytes = s.cluster.gpu.context_memory_bytes + communicators * s.cluster.gpu.nccl_memory_bytes;
  r.fragmentation = s.cluster.gpu.allocator_fragmentation;
  return r;
}

int64_t reserved_bytes(const MemoryReserve& r, int64_t allocated_bytes) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(allocated_bytes) * (1.0 + r.fragmentation))) + r.fixed_bytes;
}

json memory_reserve_to_json(const MemoryReserve& r) {
  return json{{"fixed_bytes", r.fixed_bytes}, {"fragmentation", r.fragmentation}};
}

MemoryReserve memory_reserve_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  MemoryReserve r;
  r.fixed_bytes = jf::get_int(j, "fixed_bytes", path);
  if (r.fixed_bytes < 0) throw InputError(jf::join_path(path, "fixed_bytes"), "must be >= 0");
  r.fragmentation = jf::get_number(j, "fragmentation", path);
  if (!(r.fragmentation >= 0 && r.fragmentation < 10)) throw InputError(jf::join_path(path, "fragmentation"), "must be a fraction in [0, 10)");
  return r;
}

}  // namespace shardline
