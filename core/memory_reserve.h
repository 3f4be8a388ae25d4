// Memory a training process holds beyond the tensors the memory tracker counts: the CUDA
// context and library workspaces, NCCL's buffers (one set per communicator) and the caching
// allocator's fragmentation. Turns the tracked peak (allocated) into an estimate of the peak
// reserved, which is what must fit in the GPU (docs/scenario.md "Memory model"). The allocator
// keeps more when memory is plentiful (`fragmentation`) than it can get down to at capacity,
// where it frees its cached blocks and retries before failing (`fragmentation_at_capacity`): a
// step whose typical reserve exceeds the GPU still fits if the least one does, at the cost of
// those cache flushes.
#pragma once
#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "core/scenario.h"

namespace shardline {

struct MemoryReserve {
  int64_t fixed_bytes = 0;   // context + NCCL buffers of every communicator this rank uses
  double fragmentation = 0;  // typical: reserved = allocated x (1 + fragmentation) + fixed_bytes
  double fragmentation_at_capacity = 0;  // the least, on a full GPU (<= fragmentation)
};

// What a peak of allocated bytes reserves on a GPU of `capacity_bytes`.
struct ReservedEstimate {
  int64_t min_reserved_bytes = 0;   // at capacity: allocated x (1 + fragmentation_at_capacity) + fixed
  int64_t peak_reserved_bytes = 0;  // the typical reserve, at most the capacity when the least fits
                                    // (the allocator fills the GPU, then flushes); else the least
  bool cache_flushes = false;       // the typical reserve exceeds the capacity, the least fits
  // peak_reserved_bytes without the context and NCCL buffers: the caching allocator's own
  // segments, what torch.cuda.max_memory_reserved() reports (frameworks log this figure).
  int64_t allocator_reserved_bytes = 0;
};
ReservedEstimate estimate_reserved(const MemoryReserve& reserve, int64_t allocated_bytes, int64_t capacity_bytes);

// Communicators: the shard group, plus the replicate group under HSDP, plus the
// reshard_after_forward=<int> group.
MemoryReserve memory_reserve_of(const Scenario& scenario);

// The reserved estimate for a tracked (allocated) number of bytes with `fragmentation`.
int64_t reserved_bytes(int64_t fixed_bytes, double fragmentation, int64_t allocated_bytes);

nlohmann::json memory_reserve_to_json(const MemoryReserve& r);
MemoryReserve memory_reserve_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace shardline
