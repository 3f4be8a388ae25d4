#include "core/op_json.h"

#include <array>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/timeline.h"
#include "core/units.h"

namespace shardline {

using nlohmann::json;
namespace jf = json_fields;

namespace {

constexpr std::array kOpKinds = {OpKind::Compute, OpKind::CopyIn, OpKind::AllGather, OpKind::CopyOut,
                                 OpKind::ReduceScatter, OpKind::AllReduce, OpKind::Alloc, OpKind::Free};
constexpr std::array kStreams = {StreamId::Compute, StreamId::CopyIn, StreamId::AllGather, StreamId::ReduceScatter,
                                 StreamId::AllReduce};
constexpr std::array kPhases = {Phase::Forward, Phase::Backward, Phase::Finalize};
constexpr std::array kGroups = {CommGroup::None, CommGroup::Shard, CommGroup::Replicate, CommGroup::Reshard};
constexpr std::array kReductions = {Reduction::None, Reduction::Sum, Reduction::Avg};
constexpr std::array kBufferInits = {BufferInit::None, BufferInit::Shared, BufferInit::PerRank};
constexpr std::array kMemoryKinds = {MemoryKind::None, MemoryKind::AllGatherBuffer, MemoryKind::UnshardedParams,
                                     MemoryKind::UnshardedGrads, MemoryKind::ReduceScatterBuffer,
                                     MemoryKind::AllReduceBuffer, MemoryKind::Activations, MemoryKind::ShardedGrads,
                                     MemoryKind::OptimizerTemporary};

template <typename E, size_t N, typename NameFn>
E parse_enum(const json& j, const std::string& path, const std::array<E, N>& values, NameFn name_of, const char* what) {
  std::string text = jf::as_string(j, path);
  std::string valid;
  for (E v : values) {
    if (text == name_of(v)) return v;
    if (!valid.empty()) valid += ", ";
    valid += std::string(name_of(v));
  }
  throw InputError(path, "unknown " + std::string(what) + " \"" + text + "\"; expected one of " + valid);
}

}  // namespace

OpKind parse_op_kind(const json& j, const std::string& path) {
  return parse_enum(j, path, kOpKinds, op_kind_name, "op kind");
}
StreamId parse_stream(const json& j, const std::string& path) {
  return parse_enum(j, path, kStreams, stream_name, "stream");
}
Phase parse_phase(const json& j, const std::string& path) {
  return parse_enum(j, path, kPhases, phase_name, "phase");
}
CommGroup parse_comm_group(const json& j, const std::string& path) {
  return parse_enum(j, path, kGroups, comm_group_name, "communication group");
}
MemoryKind parse_memory_kind(const json& j, const std::string& path) {
  return parse_enum(j, path, kMemoryKinds, memory_kind_name, "memory kind");
}
Reduction parse_reduction(const json& j, const std::string& path) {
  return parse_enum(j, path, kReductions, reduction_name, "reduction");
}
BufferInit parse_buffer_init(const json& j, const std::string& path) {
  return parse_enum(j, path, kBufferInits, buffer_init_name, "buffer init");
}

json op_to_json(const OpLabels& labels, const Program* program, const Op& op, int id, int group_size) {
  json j = json::object();
  j["id"] = id;
  j["kind"] = op_kind_name(op.kind);
  j["stream"] = stream_name(op.stream);
  j["phase"] = phase_name(op.phase);
  j["microbatch"] = op.microbatch;
  j["unit"] = op.unit;
  j["bucket"] = op.bucket;
  j["bytes"] = op.bytes();
  j["dtype"] = dtype_name(op.dtype);
  j["group"] = comm_group_name(op.group);
  j["group_size"] = group_size;
  j["compute_us"] = op.compute_us();
  j["recompute"] = op.recompute;
  j["memory"] = memory_kind_name(op.memory);
  if (is_marker(op.kind)) j["pool"] = stream_name(op.pool);
  j["name"] = op_name(labels, op);
  if (program != nullptr) {
    json slices = json::array();
    for (const auto& s : program->slices(op))
      slices.push_back({{"param", s.param}, {"shard_offset", s.shard_offset}, {"shard_numel", s.shard_numel}});
    j["slices"] = std::move(slices);
    const auto deps = program->deps(op);
    j["deps"] = std::vector<int>(deps.begin(), deps.end());
    j["reduction"] = reduction_name(op.reduction);
    j["link"] = op.link;
    j["src_buffer"] = op.src_buffer;
    j["dst_buffer"] = op.dst_buffer;
    j["host_launches"] = program->host_launches[static_cast<size_t>(id)];
  }
  return j;
}

OpRecord op_from_json(const json& j, const std::string& path, OpLabels& labels, std::vector<TensorSlice>* slices_out, std::vector<int>* deps_out) {
  jf::require_object(j, path);
  OpRecord read;
  Op& op = read.op;
  read.id = jf::get_int32(j, "id", path);
  op.kind = parse_op_kind(jf::member(j, "kind", path), jf::join_path(path, "kind"));
  op.stream = parse_stream(jf::member(j, "stream", path), jf::join_path(path, "stream"));
  op.phase = parse_phase(jf::member(j, "phase", path), jf::join_path(path, "phase"));
  op.microbatch = jf::get_int32(j, "microbatch", path);
  op.unit = jf::get_int32(j, "unit", path);
  op.bucket = jf::get_int32(j, "bucket", path);
  const int64_t bytes = jf::get_int(j, "bytes", path);
  if (bytes < 0) throw InputError(jf::join_path(path, "bytes"), "must be >= 0, found " + std::to_string(bytes));
  op.dtype = parse_dtype(jf::get_string(j, "dtype", path), jf::join_path(path, "dtype"));
  op.group = parse_comm_group(jf::member(j, "group", path), jf::join_path(path, "group"));
  read.group_size = jf::get_int32(j, "group_size", path);
  if (read.group_size < 1) throw InputError(jf::join_path(path, "group_size"), "must be >= 1, found " + std::to_string(read.group_size));
  const double compute_us = jf::get_number(j, "compute_us", path);
  // Within the span a timeline may cover (10 days): a compute time beyond it, negative or not a
  // number is no duration.
  if (!(compute_us >= 0) || compute_us > kMaxTimelineUs)
    throw InputError(jf::join_path(path, "compute_us"), "must be a duration in [0, " + number_text(kMaxTimelineUs) + "] us, found " + number_text(compute_us));
  if (op.kind == OpKind::Compute) {
    if (bytes != 0) throw InputError(jf::join_path(path, "bytes"), "a compute op moves no bytes: 0, found " + std::to_string(bytes));
    op.set_compute_us(compute_us);
  } else {
    if (compute_us != 0) throw InputError(jf::join_path(path, "compute_us"), "only a compute op has a compute time: 0, found " + number_text(compute_us));
    op.set_bytes(bytes);
  }
  op.recompute = jf::get_bool(j, "recompute", path);
  op.memory = parse_memory_kind(jf::member(j, "memory", path), jf::join_path(path, "memory"));
  // The allocator pool (alloc/free; Programs written before it existed: the op's own stream).
  op.pool = is_marker(op.kind) && jf::has_member(j, "pool")
                ? parse_stream(j.at("pool"), jf::join_path(path, "pool"))
                : op.stream;
  if (op.kind == OpKind::Alloc && op.pool != op.stream)
    throw InputError(jf::join_path(path, "pool"), "an alloc's pool is its own stream (" + std::string(stream_name(op.stream)) + ")");
  const std::string name = jf::get_string(j, "name", path);
  // Names are printed in tables and terminals: no control characters (a newline or an escape
  // sequence would break the table or recolour the terminal).
  for (const char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw InputError(jf::join_path(path, "name"), "contains a control character (byte " + std::to_string(static_cast<int>(static_cast<unsigned char>(c))) + ")");
  set_op_name(labels, op, name);
  if (slices_out != nullptr && jf::has_member(j, "slices")) {
    const std::string spath = jf::join_path(path, "slices");
    const json& slices = jf::require_array(j.at("slices"), spath);
    slices_out->reserve(slices.size());
    for (size_t i = 0; i < slices.size(); ++i) {
      const std::string p = jf::index_path(spath, i);
      TensorSlice s;
      s.param = jf::get_int32(slices[i], "param", p);
      s.shard_offset = jf::get_int(slices[i], "shard_offset", p);
      s.shard_numel = jf::get_int(slices[i], "shard_numel", p);
      if (s.shard_offset < 0 || s.shard_numel < 0) throw InputError(p, "shard_offset and shard_numel must be >= 0");
      slices_out->push_back(s);
    }
  }
  if (deps_out != nullptr && jf::has_member(j, "deps")) {
    const std::string dpath = jf::join_path(path, "deps");
    const json& deps = jf::require_array(j.at("deps"), dpath);
    deps_out->reserve(deps.size());
    for (size_t i = 0; i < deps.size(); ++i) deps_out->push_back(jf::as_int32(deps[i], jf::index_path(dpath, i)));
  }
  if (jf::has_member(j, "reduction"))
    op.reduction = parse_reduction(j.at("reduction"), jf::join_path(path, "reduction"));
  if (jf::has_member(j, "link")) op.link = jf::get_int32(j, "link", path);
  for (auto [key, field] : {std::pair{"src_buffer", &op.src_buffer}, std::pair{"dst_buffer", &op.dst_buffer}}) {
    if (!jf::has_member(j, key)) continue;
    const int32_t id = jf::get_int32(j, key, path);
    if (id < -1 || id > INT16_MAX)
      throw InputError(jf::join_path(path, key), "must be -1 (none) or a buffer index up to " + std::to_string(INT16_MAX) +
                                                     ", found " + std::to_string(id));
    *field = static_cast<int16_t>(id);
  }
  return read;
}

}  // namespace shardline
