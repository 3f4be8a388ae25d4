// The shared scheduler's output: a flat, ordered list of ops for one rank, on FSDP2-like
// streams, with event dependencies. Program order is host issue order; ops on one stream run
// FIFO in that order; across streams, only `deps` order them (CUDA event semantics).
// The simulator and the executors interpret this and know nothing of FSDP: the Program states
// what they need in tables (docs/program.md): which ranks form each communicator (`groups`),
// each stream's name and priority (`streams`), the data buffers ops read and write with what
// they hold at the start (`buffers`), each copy's link to the collective it fills or drains,
// and each collective's reduction.
#pragma once
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective.h"
#include "core/dtype.h"
#include "core/huge_page_vector.h"
#include "core/op_labels.h"
#include "core/invariant.h"

namespace shardline {

enum class OpKind : uint8_t { Compute, CopyIn, AllGather, CopyOut, ReduceScatter, AllReduce, Alloc, Free };
enum class StreamId : uint8_t { Compute, CopyIn, AllGather, ReduceScatter, AllReduce };
inline constexpr int kNumStreams = 5;
enum class Phase : uint8_t { Forward, Backward, Finalize };
// Which communicator a collective runs over. Reshard: the smaller group that
// reshard_after_forward=<int> reshards to (used by backward all-gathers).
enum class CommGroup : uint8_t { None, Shard, Replicate, Reshard };
enum class MemoryKind : uint8_t {
  None, AllGatherBuffer, UnshardedParams, UnshardedGrads, ReduceScatterBuffer, AllReduceBuffer, Activations,
  ShardedGrads,        // the reduced gradient shards: from their reduce-scatter to the end of the step
  OptimizerTemporary,  // what the optimizer step allocates beside its states (foreach AdamW: sqrt(v))
};
// How many values an op's `memory` field takes (the simulator counts its bytes per value as an
// opaque label: core/memory_at_peak.h names them).
inline constexpr int kMemoryLabelCount = static_cast<int>(MemoryKind::OptimizerTemporary) + 1;
// What a collective does with the values of the group's ranks: AllGather None; reductions Sum
// or Avg (the sum divided by the group size).
enum class Reduction : uint8_t { None, Sum, Avg };
inline constexpr int kNumCommGroups = 4;

std::string_view op_kind_name(OpKind k);        // "compute", "copy_in", "all_gather", ...
std::string_view stream_name(StreamId s);       // "compute", "ag_copy_in", "all_gather", "reduce_scatter", "all_reduce"
std::string_view phase_name(Phase p);           // "forward", "backward", "finalize"
std::string_view comm_group_name(CommGroup g);  // "none", "shard", "replicate", "reshard"
std::string_view memory_kind_name(MemoryKind m);
std::string_view reduction_name(Reduction r);   // "none", "sum", "avg"
bool is_collective(OpKind k);
bool is_marker(OpKind k);  // alloc / free: allocator bookkeeping, no GPU work
CollectiveKind collective_kind(OpKind k);  // asserts is_collective(k)

// A range of one parameter's elements in each rank's local shard: elements
// [shard_offset, shard_offset + shard_numel) of the shard of `param`. A collective or copy
// moves the listed slices, in order; fused ops list many, unfused ops list one parameter.
struct TensorSlice {
  int param = -1;
  int64_t shard_offset = 0;
  int64_t shard_numel = 0;
  bool operator==(const TensorSlice&) const = default;
};

// A slice list: `count` slices of Program::slice_lists from `begin`. Ops name theirs by index
// into Program::slice_list_ranges (0: the empty list).
struct SliceList {
  uint32_t begin = 0;
  uint32_t count = 0;
};

// One op of a Program: a fixed-size record with no heap block. Its id is its index in
// Program::ops (Program::id_of); its group's size is the group table's (Program::group_size).
struct Op {
  int microbatch = 0;
  int unit = -1;             // -1 when it spans units (a bucket) or none
  int bucket = -1;           // communication bucket index, -1 for none
  // Copy-in: the collective whose input it fills (a later op); copy-out: the collective whose
  // output it drains (an earlier op). -1 for every other op.
  int link = -1;
  // The op's name, made when printed (Program::name, core/op_labels.h): an index into the label
  // table (-1: no name), then `label_number` when >= 0, then " mb<microbatch>" unless `whole_name`.
  int label = -1;
  int label_number = -1;
  // Where the op's slices and dependencies live in the Program's shared arrays (read them with
  // Program::slices(op) / deps(op)): `slice_list` indexes Program::slice_list_ranges, so a
  // bucket's slice list is stored once and shared by every op that moves it; dependencies are
  // ids of earlier ops that must finish first, stored in op order (append_op), so op i's run
  // from its deps_begin to the next op's.
  uint32_t slice_list = 0;
  uint32_t deps_begin = 0;
  // Data buffers (indices into Program::buffers), -1 for none. A collective reads `src_buffer`
  // and writes `dst_buffer` (the same buffer for an in-place all-reduce); a copy-in reads its
  // collective's source, a copy-out writes its collective's destination.
  int16_t src_buffer = -1;
  int16_t dst_buffer = -1;
  OpKind kind : 3 = OpKind::Compute;
  StreamId stream : 3 = StreamId::Compute;
  Phase phase : 2 = Phase::Forward;
  DType dtype = DType::bf16;
  CommGroup group : 2 = CommGroup::None;
  Reduction reduction : 2 = Reduction::None;  // collectives: how values combine
  MemoryKind memory : 4 = MemoryKind::None;   // alloc/free: what is allocated or released
  // Alloc/free: the caching allocator's pool the bytes belong to, the stream the alloc was issued
  // on (PyTorch keeps a freed block for reuse by that stream's allocations only); a free's may
  // differ from its own stream. Every other op: its stream, unread.
  StreamId pool : 3 = StreamId::Compute;
  bool recompute : 1 = false;   // compute: includes activation recomputation
  bool whole_name : 1 = false;  // the label is the whole name (read so from a file)

  // Collective: the nccl-tests size S (AG output, RS input, AR input) in `dtype`.
  // Copy-in/copy-out: bytes copied. Alloc/Free: bytes allocated / released. Compute: 0.
  int64_t bytes() const { return kind == OpKind::Compute ? 0 : std::bit_cast<int64_t>(amount_); }
  // Compute: requested duration (compute model), before slow-down. Every other op: 0.
  double compute_us() const { return kind == OpKind::Compute ? std::bit_cast<double>(amount_) : 0.0; }
  // Each sets the one amount the op's kind reads (set the kind first).
  void set_bytes(int64_t bytes) {
    SHARDLINE_CHECK(kind != OpKind::Compute, "a compute op moves no bytes");
    amount_ = std::bit_cast<uint64_t>(bytes);
  }
  void set_compute_us(double us) {
    SHARDLINE_CHECK(kind == OpKind::Compute, "only a compute op has a compute time");
    amount_ = std::bit_cast<uint64_t>(us);
  }

 private:
  uint64_t amount_ = 0;  // bytes (an int64) or compute_us (a double), by kind
};
// 48 bytes (docs/benchmarks.md measures what it costs).
static_assert(sizeof(Op) <= 48, "Op grew: every op of a million-op Program pays for it");
static_assert(kNumStreams <= 8 && kNumCommGroups <= 4, "Op's packed fields hold these enums");
static_assert(static_cast<int>(MemoryKind::OptimizerTemporary) < 16, "Op's 4-bit memory field holds MemoryKind");

// The index of `op` in `ops`: its id. `op` must be an element of `ops`, not a copy.
inline int op_index(std::span<const Op> ops, const Op& op) {
  SHARDLINE_CHECK(!ops.empty() && &op >= ops.data() && &op < ops.data() + ops.size(), "op_index of an op outside the array");
  return static_cast<int>(&op - ops.data());
}

// The op's name from a label table, e.g. "fwd layers.3 mb0", "ag b2 mb1".
inline std::string op_name(const OpLabels& labels, const Op& op) { return labels.name(op.label, op.label_number, op.whole_name, op.microbatch); }
// Gives `op` the name `name` (files and tests; the scheduler adds its labels itself).
inline void set_op_name(OpLabels& labels, Op& op, std::string_view name) {
  const OpLabels::Named named = labels.add_name(name, op.microbatch);
  op.label = named.label;
  op.label_number = -1;
  op.whole_name = named.whole;
}

struct ParamInfo {
  std::string name;   // "layers.3.attn.wq"
  int unit = -1;
  int64_t numel = 0;        // unsharded element count
  int64_t shard_numel = 0;  // per-rank shard element count (padded: ceil(numel / shard))
};

// A communicator pattern over the world's ranks: the group of rank r is the `size` ranks
// base + i * stride (i = 0..size-1), base = (r / block) * block + r % stride, block = size * stride.
// stride 1: contiguous groups; stride k: every k-th rank. size * stride divides the world.
struct GroupInfo {
  std::string name;
  int size = 1;
  int stride = 1;
  int block() const { return size * stride; }
  int color(int rank) const { return (rank / block()) * stride + rank % stride; }  // which group
  int index(int rank) const { return (rank % block()) / stride; }                   // position in it
  int member(int rank, int i) const { return (rank / block()) * block() + rank % stride + i * stride; }
};

// A stream: its name and its priority (CUDA's convention: lower numbers run first; 0 default).
struct StreamInfo {
  std::string name;
  int priority = 0;
};

// What a buffer holds when a step starts; the executor fills it so, and its data check derives
// every later value from these and the collectives' semantics. Element e of parameter p in
// block j stands for element g = b * extent + e of p's global tensor, b = j when the buffer holds
// every member's block, else this rank's position in the buffer's group.
//   None:   nothing yet (written before it is read)
//   Shared: the same values on every rank: the global tensor's element g
//   PerRank: values that differ per rank: rank r's own element g (e.g. its local gradient)
enum class BufferInit : uint8_t { None, Shared, PerRank };
std::string_view buffer_init_name(BufferInit i);  // "none", "shared", "per_rank"

// A data buffer: per parameter, `blocks` blocks of elements laid out for `group` (1: this rank's
// block; the group's size: one block per member), `width` bytes per element.
struct BufferInfo {
  std::string name;
  int width = 4;
  int group = 0;   // index into Program::groups
  int blocks = 1;
  BufferInit init = BufferInit::None;
};

struct Program {
  std::string scenario;
  int world_size = 1;               // ranks the Program runs on
  std::vector<GroupInfo> groups;    // indexed by Op::group (kNumCommGroups entries)
  std::vector<StreamInfo> streams;  // indexed by Op::stream (kNumStreams entries)
  std::vector<BufferInfo> buffers;  // indexed by Op::src_buffer / dst_buffer
  DType param_dtype = DType::bf16;
  DType reduce_dtype = DType::fp32;
  DType master_dtype = DType::fp32;
  int micro_batches = 1;
  int64_t static_memory_bytes = 0;  // sharded master params + optimizer state per rank (gradients are ops)
  // When alloc and free markers count: false, when the host issues them (FSDP2 keeps its buffers
  // alive itself and allocates and frees them on the host: the caching allocator's order); true,
  // when their streams reach them (FSDP1 hands buffers used on other streams to the allocator
  // with record_stream, which keeps them until that work is done, and its rate limiter holds the
  // host near the GPU: the allocator's "active" memory follows the streams).
  bool memory_follows_streams = false;
  std::vector<std::string> units;   // unit names, forward order
  std::vector<ParamInfo> params;
  HugePageVector<Op> ops;
  OpLabels labels;                          // the ops' names (Op::label)
  HugePageVector<TensorSlice> slice_lists;  // every op's slices, a list per range below
  HugePageVector<SliceList> slice_list_ranges{SliceList{}};  // Op::slice_list indexes these; 0: empty
  HugePageVector<int> dep_ids;                // every op's dependencies, in op order (Op::deps_begin)
  // The GPU activities (kernels, copies, collectives) the host launches to issue each op (index:
  // op id), what the simulator's host term charges (cluster.host_launch, sim/host.h): 0 for
  // alloc/free markers and 1 for every other op unless the scheduler counted more (a transformer
  // unit's kernels, the end-of-step ops' multi-tensor launches, one-rank FSDP2's per-parameter
  // casts). append_op gives the default.
  HugePageVector<uint32_t> host_launches;
  // Their sum: what one rank's step launches.
  int64_t host_launches_per_step() const;

  int id_of(const Op& op) const { return op_index(ops, op); }
  const SliceList& slice_list(const Op& op) const { return slice_list_ranges[op.slice_list]; }
  std::span<const TensorSlice> slices(const Op& op) const { return {slice_lists.data() + slice_list(op).begin, slice_list(op).count}; }
  std::span<TensorSlice> slices(const Op& op) { return {slice_lists.data() + slice_list(op).begin, slice_list(op).count}; }
  std::span<const int> deps(const Op& op) const { return {dep_ids.data() + op.deps_begin, deps_end(op) - op.deps_begin}; }
  // One past `op`'s last dependency in dep_ids: the next op's deps_begin. deps_valid(op) says
  // whether that range is inside dep_ids (a Program read from a file is checked with it).
  uint32_t deps_end(const Op& op) const {
    const size_t next = static_cast<size_t>(id_of(op)) + 1;
    return next < ops.size() ? ops[next].deps_begin : static_cast<uint32_t>(dep_ids.size());
  }
  bool deps_valid(const Op& op) const { return op.deps_begin <= deps_end(op) && deps_end(op) <= dep_ids.size(); }
  // Appends a slice list that ops can then share; returns its index for Op::slice_list (0 for
  // an empty one).
  uint32_t add_slices(std::span<const TensorSlice> slices);
  // Names `range`, slices already in slice_lists, as a list; returns its index.
  uint32_t add_slice_range(SliceList range);
  // Appends `op` (its slice_list already set, e.g. from add_slices) with dependencies `deps`;
  // returns its id.
  int append_op(Op op, std::span<const int> deps);
  // The same with its own copy of `slices` (for Programs built by hand).
  int add_op(Op op, const std::vector<int>& deps = {}, const std::vector<TensorSlice>& slices = {});
  std::string name(const Op& op) const { return op_name(labels, op); }
  void set_name(Op& op, std::string_view name) { set_op_name(labels, op, name); }
  const GroupInfo& group_of(const Op& op) const { return groups[static_cast<size_t>(op.group)]; }
  int group_size(const Op& op) const { return group_of(op).size; }
  const StreamInfo& stream_of(const Op& op) const { return streams[static_cast<size_t>(op.stream)]; }
};

}  // namespace shardline
