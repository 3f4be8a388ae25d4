// The shared scheduler: the ONLY place that knows FSDP/HSDP/ZeRO-3 semantics
// (../shared/reference/fsdp-semantics.md). Turns a Scenario into the Program of one rank.
#pragma once
#include "core/compute_model.h"
#include "core/program.h"
#include "core/scenario.h"

namespace shardline {

// Throws InputError("policy.bucket_bytes", ...) when the Program would exceed kMaxProgramOps:
// small buckets on a large model make millions of ops (about 500 bytes each in memory), and
// a sweep over bucket sizes would otherwise be killed for memory instead of marking the row.
Program schedule(const Scenario& scenario);
inline constexpr int64_t kMaxProgramOps = 10'000'000;


}  // namespace shardline
