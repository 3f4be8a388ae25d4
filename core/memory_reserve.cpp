#include "core/memory_reserve.h"

#include <algorithm>
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
  r.fragmentation_at_capacity = s.cluster.gpu.allocator_fragmentation_at_capacity;
  r.pool_fragmentation = s.cluster.gpu.allocator_pool_fragmentation;
  r.typical_from_pools = !s.policy.fsdp1_record_stream();
  return r;
}

int64_t reserved_bytes(int64_t fixed_bytes, double fragmentation, int64_t allocated_bytes) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(allocated_bytes) * (1.0 + fragmentation))) + fixed_bytes;
}

ReservedEstimate estimate_reserved(const MemoryReserve& r, int64_t allocated_bytes, int64_t pool_peaks_bytes, int64_t capacity_bytes) {
  ReservedEstimate e;
  e.min_reserved_bytes = reserved_bytes(r.fixed_bytes, r.fragmentation_at_capacity, allocated_bytes);
  // The least the allocator holds never exceeds what it holds with room (a within-pool
  // fragmentation below the at-capacity one must not make the typical reserve the smaller).
  const int64_t with_room = r.typical_from_pools
                                ? reserved_bytes(r.fixed_bytes, r.pool_fragmentation, std::max(pool_peaks_bytes, allocated_bytes))
                                : reserved_bytes(r.fixed_bytes, r.fragmentation, allocated_bytes);
  const int64_t typical = std::max(e.min_reserved_bytes, with_room);
  e.typical_reserved_bytes = typical;
  if (e.min_reserved_bytes > capacity_bytes) {
    e.peak_reserved_bytes = e.min_reserved_bytes;
  } else {
    e.peak_reserved_bytes = std::min(typical, capacity_bytes);
    e.cache_flushes = typical > capacity_bytes;
  }
  e.allocator_reserved_bytes = std::max<int64_t>(0, e.peak_reserved_bytes - r.fixed_bytes);
  return e;
}

json memory_reserve_to_json(const MemoryReserve& r) {
  return json{{"fixed_bytes", r.fixed_bytes}, {"fragmentation", r.fragmentation},
              {"fragmentation_at_capacity", r.fragmentation_at_capacity}, {"pool_fragmentation", r.pool_fragmentation},
              {"typical_from_pools", r.typical_from_pools}};
}

MemoryReserve memory_reserve_from_json(const json& j, const std::string& path) {
  jf::require_object(j, path);
  MemoryReserve r;
  r.fixed_bytes = jf::get_int(j, "fixed_bytes", path);
  if (r.fixed_bytes < 0) throw InputError(jf::join_path(path, "fixed_bytes"), "must be >= 0");
  r.fragmentation = jf::get_number(j, "fragmentation", path);
  if (!(r.fragmentation >= 0 && r.fragmentation < 10)) throw InputError(jf::join_path(path, "fragmentation"), "must be a fraction in [0, 10)");
  // Files written before the at-capacity value existed: the allocator holds as much at capacity.
  r.fragmentation_at_capacity =
      jf::has_member(j, "fragmentation_at_capacity") ? jf::get_number(j, "fragmentation_at_capacity", path) : r.fragmentation;
  if (!(r.fragmentation_at_capacity >= 0 && r.fragmentation_at_capacity <= r.fragmentation))
    throw InputError(jf::join_path(path, "fragmentation_at_capacity"), "must be a fraction in [0, fragmentation]");
  // Both optional: files written before 2026-11-27 estimated every typical reserve from the
  // allocated peak.
  r.pool_fragmentation = jf::has_member(j, "pool_fragmentation") ? jf::get_number(j, "pool_fragmentation", path) : 0.0;
  if (!(r.pool_fragmentation >= 0 && r.pool_fragmentation < 10))
    throw InputError(jf::join_path(path, "pool_fragmentation"), "must be a fraction in [0, 10)");
  r.typical_from_pools = jf::has_member(j, "typical_from_pools") && jf::get_bool(j, "typical_from_pools", path);
  return r;
}

}  // namespace shardline
