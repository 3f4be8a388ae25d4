#include "core/program.h"
#include "core/invariant.h"

#include <cstdint>

namespace shardline {

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Compute: return "compute";
    case OpKind::CopyIn: return "copy_in";
    case OpKind::AllGather: return "all_gather";
    case OpKind::CopyOut: return "copy_out";
    case OpKind::ReduceScatter: return "reduce_scatter";
    case OpKind::AllReduce: return "all_reduce";
    case OpKind::Alloc: return "alloc";
    case OpKind::Free: return "free";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

std::string_view stream_name(StreamId s) {
  switch (s) {
    case StreamId::Compute: return "compute";
    case StreamId::CopyIn: return "ag_copy_in";
    case StreamId::AllGather: return "all_gather";
    case StreamId::ReduceScatter: return "reduce_scatter";
    case StreamId::AllReduce: return "all_reduce";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Finalize: return "finalize";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

std::string_view comm_group_name(CommGroup g) {
  switch (g) {
    case CommGroup::None: return "none";
    case CommGroup::Shard: return "shard";
    case CommGroup::Replicate: return "replicate";
    case CommGroup::Reshard: return "reshard";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

std::string_view memory_kind_name(MemoryKind m) {
  switch (m) {
    case MemoryKind::None: return "none";
    case MemoryKind::AllGatherBuffer: return "all_gather_buffer";
    case MemoryKind::UnshardedParams: return "unsharded_params";
    case MemoryKind::UnshardedGrads: return "unsharded_grads";
    case MemoryKind::ReduceScatterBuffer: return "reduce_scatter_buffer";
    case MemoryKind::AllReduceBuffer: return "all_reduce_buffer";
    case MemoryKind::Activations: return "activations";
    case MemoryKind::ShardedGrads: return "sharded_grads";
    case MemoryKind::OptimizerTemporary: return "optimizer_temporary";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

std::string_view reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Sum: return "sum";
    case Reduction::Avg: return "avg";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

std::string_view buffer_init_name(BufferInit i) {
  switch (i) {
    case BufferInit::None: return "none";
    case BufferInit::Shared: return "shared";
    case BufferInit::PerRank: return "per_rank";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

uint32_t Program::add_slices(std::span<const TensorSlice> slices) {
  if (slices.empty()) return 0;
  SHARDLINE_CHECK(slice_lists.size() + slices.size() < UINT32_MAX, "slice pool overflow");
  const SliceList range{static_cast<uint32_t>(slice_lists.size()), static_cast<uint32_t>(slices.size())};
  slice_lists.insert(slice_lists.end(), slices.begin(), slices.end());
  return add_slice_range(range);
}

uint32_t Program::add_slice_range(SliceList range) {
  SHARDLINE_CHECK(range.begin + static_cast<uint64_t>(range.count) <= slice_lists.size(), "a slice range outside the pool");
  SHARDLINE_CHECK(slice_list_ranges.size() < UINT32_MAX, "slice range overflow");
  slice_list_ranges.push_back(range);
  return static_cast<uint32_t>(slice_list_ranges.size() - 1);
}

int Program::append_op(Op op, std::span<const int> deps) {
  SHARDLINE_CHECK(dep_ids.size() + deps.size() < UINT32_MAX, "dependency pool overflow");
  op.deps_begin = static_cast<uint32_t>(dep_ids.size());
  dep_ids.insert(dep_ids.end(), deps.begin(), deps.end());
  host_launches.push_back(is_marker(op.kind) ? 0u : 1u);
  ops.push_back(std::move(op));
  return static_cast<int>(ops.size() - 1);
}

int Program::add_op(Op op, const std::vector<int>& deps, const std::vector<TensorSlice>& slices) {
  op.slice_list = add_slices(slices);
  return append_op(std::move(op), deps);
}

bool is_collective(OpKind k) {
  return k == OpKind::AllGather || k == OpKind::ReduceScatter || k == OpKind::AllReduce;
}

bool is_marker(OpKind k) { return k == OpKind::Alloc || k == OpKind::Free; }

CollectiveKind collective_kind(OpKind k) {
  SHARDLINE_CHECK(is_collective(k), "collective_kind() of a non-collective op");
  if (k == OpKind::AllGather) return CollectiveKind::AllGather;
  if (k == OpKind::ReduceScatter) return CollectiveKind::ReduceScatter;
  return CollectiveKind::AllReduce;
}

int64_t Program::host_launches_per_step() const {
  int64_t sum = 0;
  for (uint32_t launches : host_launches) sum += launches;
  return sum;
}

}  // namespace shardline
