// Memory a training process holds beyond the tensors the memory tracker counts: the CUDA
// context and library workspaces, NCCL's buffers (one set per communicator) and the caching
// allocator's cache. Turns the tracked peaks into an estimate of the peak reserved, which is what
// must fit in the GPU (docs/compute-model.md "Memory model"). With memory to spare the allocator
// keeps freed blocks cached: under FSDP2, which frees on the host, each stream's for that stream
// (its pool), so it reserves the sum of the pools' peaks x (1 + `pool_fragmentation`); under
// FSDP1 (record_stream), the peak active memory x (1 + `fragmentation`). At capacity it frees its
// cached blocks and retries before failing, down to the allocated peak x (1 +
// `fragmentation_at_capacity`): a step whose typical reserve exceeds the GPU still fits if the
// least one does, at the cost of those cache flushes.
#pragma once
#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "core/scenario.h"

namespace shardline {

struct MemoryReserve {
  int64_t fixed_bytes = 0;   // context + NCCL buffers of every communicator this rank uses
  double fragmentation = 0;  // typical, FSDP1: reserved = allocated x (1 + fragmentation) + fixed_bytes
  double fragmentation_at_capacity = 0;  // the least, on a full GPU (<= fragmentation)
  double pool_fragmentation = 0;         // typical, FSDP2: reserved = pool peaks x (1 + it) + fixed_bytes
  bool typical_from_pools = false;       // FSDP2's typical reserve (the pools'), else FSDP1's
};

// What a step reserves on a GPU of `capacity_bytes`: its allocated peak and the sum of its
// allocator pools' peaks (>= the allocated peak; the allocated peak where it is not known).
struct ReservedEstimate {
  int64_t min_reserved_bytes = 0;   // at capacity: allocated x (1 + fragmentation_at_capacity) + fixed
  int64_t typical_reserved_bytes = 0;  // with room (at least the least)
  int64_t peak_reserved_bytes = 0;  // the typical reserve, at most the capacity when the least fits
                                    // (the allocator fills the GPU, then flushes); else the least
  bool cache_flushes = false;       // the typical reserve exceeds the capacity, the least fits
  // peak_reserved_bytes without the context and NCCL buffers: the caching allocator's own
  // segments, what torch.cuda.max_memory_reserved() reports (frameworks log this figure).
  int64_t allocator_reserved_bytes = 0;
};
ReservedEstimate estimate_reserved(const MemoryReserve& reserve, int64_t allocated_bytes, int64_t pool_peaks_bytes,
                                   int64_t capacity_bytes);

// Communicators: the shard group, plus the replicate group under HSDP, plus the
// reshard_after_forward=<int> group.
MemoryReserve memory_reserve_of(const Scenario& scenario);

// The reserved estimate for a tracked (allocated) number of bytes with `fragmentation`.
int64_t reserved_bytes(int64_t fixed_bytes, double fragmentation, int64_t allocated_bytes);

nlohmann::json memory_reserve_to_json(const MemoryReserve& r);
MemoryReserve memory_reserve_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace shardline
