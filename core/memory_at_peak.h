// What the predicted peak allocated memory is made of: the representative rank's live bytes at the
// moment of its peak, by what they hold (the sharded master parameters and optimizer states that
// live all step, and each kind of allocation the Program's alloc ops name, core/program.h
// MemoryKind). The parts sum to the peak allocated bytes. A planner reads it to see what to cut.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/program.h"

namespace shardline {

struct MemoryAtPeak {
  int64_t sharded_params_bytes = 0;   // each rank's shard of the parameters, in the master dtype
  int64_t optimizer_state_bytes = 0;  // the optimizer's states of that shard
  std::array<int64_t, kMemoryLabelCount> bytes_by_kind{};  // live allocations by MemoryKind (None: unnamed)
  int64_t total_bytes() const;  // capped at the largest int64 (parts read from a hostile file)
  // (name, bytes) of every part, in a fixed order: "sharded_params", "optimizer_state", then the
  // MemoryKind names ("none" only when it holds bytes).
  std::vector<std::pair<std::string, int64_t>> parts() const;
  bool operator==(const MemoryAtPeak&) const = default;
};

// The static part's split: `static_bytes` (Program::static_memory_bytes) less the parameters'
// shards in the master dtype is the optimizer's.
MemoryAtPeak memory_at_peak_of(const Program& program, const std::array<int64_t, kMemoryLabelCount>& live_by_kind);

nlohmann::json memory_at_peak_to_json(const MemoryAtPeak& m);
// Refuses unknown or missing parts and negative bytes, naming `path`.
MemoryAtPeak memory_at_peak_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace shardline
