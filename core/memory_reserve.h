// Memory a training process holds beyond the tensors the memory tracker counts: the CUDA
// context and library workspaces, NCCL's buffers (one set per communicator) and the caching
// allocator's fragmentation. Turns the tracked peak (allocated) into an estimate of the peak
// reserved, which is what must fit in the GPU (docs/scenario.md "Memory model").
#pragma once
#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "core/scenario.h"

namespace shardline {

struct MemoryReserve {
  int64_t fixed_bytes = 0;   // context + NCCL buffers of every communicator this rank uses
  double fragmentation = 0;  // reserved = allocated x (1 + fragmentation) + fixed_bytes
};

// Communicators: the shard group, plus the replicate group under HSDP, plus the
// reshard_after_forward=<int> group.
MemoryReserve memory_reserve_of(const Scenario& scenario);

// The reserved estimate for a tracked (allocated) number of bytes.
int64_t reserved_bytes(const MemoryReserve& reserve, int64_t allocated_bytes);

nlohmann::json memory_reserve_to_json(const MemoryReserve& r);
MemoryReserve memory_reserve_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace shardline
