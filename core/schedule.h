// The shared scheduler: the ONLY place that knows FSDP/HSDP/ZeRO-3 semantics
// (../shared/reference/fsdp-semantics.md). Turns a Scenario into the Program of one rank.
#pragma once
#include <string>
#include <vector>

#include "core/compute_model.h"
#include "core/program.h"
#include "core/scenario.h"

namespace shardline {

// Throws InputError naming the key (policy.bucket_bytes, policy.micro_batches, or the model)
// when a lower bound of the op count, estimated before anything is built, exceeds
// kMaxProgramOps: small buckets or many micro-batches make millions of ops (about 90 bytes
// each in memory while simulated for a summary), so the limit keeps one run near 1 GB, and a sweep over
// bucket sizes marks the row instead of being killed for memory. The 70B scenario's 1 MiB
// buckets (7.54 M ops) are inside it.
Program schedule(const Scenario& scenario);
inline constexpr int64_t kMaxProgramOps = 8'000'000;

// The scenario key to name when a Program is too large for something (the scheduler's limit,
// --out's, every rank's): policy.micro_batches when there are several and one micro-batch's
// ops would fit (`one_micro_batch_fits`), else policy.bucket_bytes when the policy buckets, else
// the model's units.
std::string program_size_key(const Scenario& scenario, bool one_micro_batch_fits = true);

// The group table of an FSDP / HSDP mesh (indexed by CommGroup): rank = replicate_index *
// shard + shard_index, so shard groups are `shard` contiguous ranks, replicate groups every
// `shard`-th rank, reshard groups (reshard_after_forward=<int>) `reshard` contiguous ranks inside
// a shard group (size 1 when 0: unused).
std::vector<GroupInfo> fsdp_group_table(int shard, int replicate, int reshard);
// The stream table (indexed by StreamId) with FSDP2's priorities: its all-gather copy-in,
// all-gather and reduce-scatter streams are created at priority -1, the all-reduce stream and
// the default (compute) stream at 0 (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py).
std::vector<StreamInfo> fsdp2_stream_table();


}  // namespace shardline
