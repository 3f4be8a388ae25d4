#include "core/program_json.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/op_json.h"

namespace shardline {

using nlohmann::json;
namespace jf = json_fields;

namespace {
constexpr const char* kFormat = "shardline.program";
constexpr int kVersion = 2;

// The group and stream tables are indexed by the op's group / stream names' positions, so a
// table must list exactly those names in that order: entry `path` must be named `expected`.
std::string table_entry_name(const json& entry, const std::string& path, std::string_view expected) {
  std::string name = jf::get_string(entry, "name", path);
  if (name != expected)
    throw InputError(jf::join_path(path, "name"), "expected \"" + std::string(expected) + "\", found \"" + name + "\"");
  return name;
}

void read_group_table(const json& j, Program& p) {
  const json& groups = jf::require_array(jf::member(j, "groups", ""), "groups");
  if (groups.size() != kNumCommGroups)
    throw InputError("groups", "must list " + std::to_string(kNumCommGroups) + " groups (none, shard, replicate, reshard)");
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string path = jf::index_path("groups", i);
    GroupInfo g;
    g.name = table_entry_name(groups[i], path, comm_group_name(static_cast<CommGroup>(i)));
    g.size = jf::get_int32(groups[i], "size", path);
    g.stride = jf::get_int32(groups[i], "stride", path);
    if (g.size < 1 || g.stride < 1) throw InputError(path, "size and stride must be >= 1");
    if (static_cast<int64_t>(g.size) * g.stride > p.world_size || p.world_size % g.block() != 0)
      throw InputError(path, "size x stride (" + std::to_string(static_cast<int64_t>(g.size) * g.stride) +
                                 ") must divide world_size " + std::to_string(p.world_size));
    p.groups.push_back(std::move(g));
  }
}

void read_stream_table(const json& j, Program& p) {
  const json& streams = jf::require_array(jf::member(j, "streams", ""), "streams");
  if (streams.size() != kNumStreams)
    throw InputError("streams", "must list " + std::to_string(kNumStreams) + " streams");
  for (size_t i = 0; i < streams.size(); ++i) {
    const std::string path = jf::index_path("streams", i);
    StreamInfo st;
    st.name = table_entry_name(streams[i], path, stream_name(static_cast<StreamId>(i)));
    st.priority = jf::get_int32(streams[i], "priority", path);
    if (st.priority < -100 || st.priority > 100) throw InputError(jf::join_path(path, "priority"), "must be in [-100, 100]");
    p.streams.push_back(std::move(st));
  }
}

void read_buffer_table(const json& j, Program& p) {
  const json& buffers = jf::require_array(jf::member(j, "buffers", ""), "buffers");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::string path = jf::index_path("buffers", i);
    BufferInfo b;
    b.name = jf::get_string(buffers[i], "name", path);
    b.width = jf::get_int32(buffers[i], "width", path);
    if (b.width != 1 && b.width != 2 && b.width != 4 && b.width != 8)
      throw InputError(jf::join_path(path, "width"), "element width must be 1, 2, 4 or 8 bytes");
    const std::string group = jf::get_string(buffers[i], "group", path);
    b.group = -1;
    for (size_t g = 0; g < p.groups.size(); ++g)
      if (p.groups[g].name == group) b.group = static_cast<int>(g);
    if (b.group < 0) throw InputError(jf::join_path(path, "group"), "no group \"" + group + "\" in the group table");
    b.blocks = jf::get_int32(buffers[i], "blocks", path);
    if (b.blocks != 1 && b.blocks != p.groups[b.group].size)
      throw InputError(jf::join_path(path, "blocks"), "must be 1 (this rank's block) or the " + group + " group's size " +
                                                          std::to_string(p.groups[b.group].size));
    b.init = parse_buffer_init(jf::member(buffers[i], "init", path), jf::join_path(path, "init"));
    p.buffers.push_back(std::move(b));
  }
}

// What an interpreter relies on beyond each op's own fields: collectives name a real group of
// the table's size and the reduction their kind needs; copies link to the collective they fill
// (a later op) or drain (an earlier op); nothing else links.
void check_op_contract(const Program& p, const Op& op, const std::string& path) {
  if (is_collective(op.kind)) {
    if (op.group == CommGroup::None && p.group_size(op) > 1)
      throw InputError(jf::join_path(path, "group"), "a collective over more than one rank must name its group");
    const bool reduces = op.kind != OpKind::AllGather;
    if (reduces == (op.reduction == Reduction::None))
      throw InputError(jf::join_path(path, "reduction"), std::string(reduces ? "a reduction needs \"sum\" or \"avg\""
                                                                             : "an all-gather reduces nothing: \"none\""));
  } else if (op.reduction != Reduction::None) {
    throw InputError(jf::join_path(path, "reduction"), "only collectives reduce: \"none\"");
  } else if (op.group != CommGroup::None) {
    throw InputError(jf::join_path(path, "group"), "only collectives run over a group: \"none\"");
  }
  const int nbuf = static_cast<int>(p.buffers.size());
  for (auto [key, b] : {std::pair{"src_buffer", op.src_buffer}, std::pair{"dst_buffer", op.dst_buffer}})
    if (b < -1 || b >= nbuf)
      throw InputError(jf::join_path(path, key), "buffer " + std::to_string(b) + " is not -1 or in [0, " + std::to_string(nbuf) + ")");
  if (is_collective(op.kind)) {
    if (op.src_buffer < 0 || op.dst_buffer < 0)
      throw InputError(jf::join_path(path, op.src_buffer < 0 ? "src_buffer" : "dst_buffer"), "a collective reads and writes buffers");
    const int w = dtype_bytes(op.dtype);
    for (auto [key, b] : {std::pair{"src_buffer", op.src_buffer}, std::pair{"dst_buffer", op.dst_buffer}})
      if (p.buffers[b].width != w)
        throw InputError(jf::join_path(path, key), "buffer \"" + p.buffers[b].name + "\" holds " + std::to_string(p.buffers[b].width) +
                                                       "-byte elements, the op's dtype " + std::to_string(w));
  }
  const std::string lpath = jf::join_path(path, "link");
  const int n = static_cast<int>(p.ops.size());
  if (op.kind == OpKind::CopyIn) {
    if (op.link <= p.id_of(op) || op.link >= n || !is_collective(p.ops[op.link].kind))
      throw InputError(lpath, "a copy-in links to the later collective it fills; " + std::to_string(op.link) + " is not one");
    if (op.src_buffer != p.ops[op.link].src_buffer || op.dst_buffer != -1)
      throw InputError(jf::join_path(path, "src_buffer"), "a copy-in reads its collective's source buffer");
  } else if (op.kind == OpKind::CopyOut) {
    if (op.link < 0 || op.link >= p.id_of(op) || !is_collective(p.ops[op.link].kind))
      throw InputError(lpath, "a copy-out links to the earlier collective it drains; " + std::to_string(op.link) + " is not one");
    if (op.dst_buffer != p.ops[op.link].dst_buffer || op.src_buffer != -1)
      throw InputError(jf::join_path(path, "dst_buffer"), "a copy-out writes its collective's destination buffer");
  } else if (op.link != -1) {
    throw InputError(lpath, "only copies link to a collective: -1");
  }
  // A copy moves its collective's elements: the same dtype (the bytes of both are counted in it).
  if ((op.kind == OpKind::CopyIn || op.kind == OpKind::CopyOut) && op.dtype != p.ops[op.link].dtype)
    throw InputError(jf::join_path(path, "dtype"), "a copy has its collective's dtype (op " + std::to_string(op.link) + ")");
  if (!is_collective(op.kind) && op.kind != OpKind::CopyIn && op.kind != OpKind::CopyOut &&
      (op.src_buffer != -1 || op.dst_buffer != -1))
    throw InputError(jf::join_path(path, "src_buffer"), "only collectives and copies move data: -1");
}
}  // namespace

json program_to_json(const Program& program) {
  json j = json::object();
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["scenario"] = program.scenario;
  j["world_size"] = program.world_size;
  json groups = json::array();
  for (const auto& g : program.groups) groups.push_back({{"name", g.name}, {"size", g.size}, {"stride", g.stride}});
  j["groups"] = std::move(groups);
  json streams = json::array();
  for (const auto& st : program.streams) streams.push_back({{"name", st.name}, {"priority", st.priority}});
  j["streams"] = std::move(streams);
  json buffers = json::array();
  for (const auto& b : program.buffers)
    buffers.push_back({{"name", b.name}, {"width", b.width}, {"group", program.groups.at(b.group).name},
                       {"blocks", b.blocks}, {"init", buffer_init_name(b.init)}});
  j["buffers"] = std::move(buffers);
  j["param_dtype"] = dtype_name(program.param_dtype);
  j["reduce_dtype"] = dtype_name(program.reduce_dtype);
  j["master_dtype"] = dtype_name(program.master_dtype);
  j["micro_batches"] = program.micro_batches;
  j["static_memory_bytes"] = program.static_memory_bytes;
  j["memory_follows_streams"] = program.memory_follows_streams;
  j["units"] = program.units;
  json params = json::array();
  for (const auto& p : program.params) {
    params.push_back({{"name", p.name}, {"unit", p.unit}, {"numel", p.numel}, {"shard_numel", p.shard_numel}});
  }
  j["params"] = std::move(params);
  json ops = json::array();
  for (size_t i = 0; i < program.ops.size(); ++i)
    ops.push_back(op_to_json(program.labels, &program, program.ops[i], static_cast<int>(i), program.group_size(program.ops[i])));
  j["ops"] = std::move(ops);
  return j;
}

Program program_from_json(const json& j) {
  jf::require_object(j, "");
  const std::string format = jf::get_string(j, "format", "");
  if (format != kFormat) throw InputError("format", "expected \"" + std::string(kFormat) + "\", found \"" + format + "\"");
  const int version = jf::get_int32(j, "version", "");
  if (version != kVersion) throw InputError("version", "unsupported program version " + std::to_string(version) + "; this build reads version " + std::to_string(kVersion));

  Program p;
  p.scenario = jf::get_string(j, "scenario", "");
  p.world_size = jf::get_int32(j, "world_size", "");
  if (p.world_size < 1) throw InputError("world_size", "must be >= 1");
  read_group_table(j, p);
  read_stream_table(j, p);
  read_buffer_table(j, p);
  p.param_dtype = parse_dtype(jf::get_string(j, "param_dtype", ""), "param_dtype");
  p.reduce_dtype = parse_dtype(jf::get_string(j, "reduce_dtype", ""), "reduce_dtype");
  p.master_dtype = parse_dtype(jf::get_string(j, "master_dtype", ""), "master_dtype");
  p.micro_batches = jf::get_int32(j, "micro_batches", "");
  if (p.micro_batches < 1) throw InputError("micro_batches", "must be >= 1");
  p.static_memory_bytes = jf::get_int(j, "static_memory_bytes", "");
  if (p.static_memory_bytes < 0) throw InputError("static_memory_bytes", "must be >= 0");
  // Optional (Programs written before 2026-11-27 have none): frees when the host issues them.
  p.memory_follows_streams = jf::has_member(j, "memory_follows_streams") && jf::get_bool(j, "memory_follows_streams", "");

  const json& units = jf::require_array(jf::member(j, "units", ""), "units");
  for (size_t i = 0; i < units.size(); ++i) p.units.push_back(jf::as_string(units[i], jf::index_path("units", i)));
  const int num_units = static_cast<int>(p.units.size());

  const json& params = jf::require_array(jf::member(j, "params", ""), "params");
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string path = jf::index_path("params", i);
    ParamInfo info;
    info.name = jf::get_string(params[i], "name", path);
    info.unit = jf::get_int32(params[i], "unit", path);
    info.numel = jf::get_int(params[i], "numel", path);
    info.shard_numel = jf::get_int(params[i], "shard_numel", path);
    if (info.unit < 0 || info.unit >= num_units) throw InputError(jf::join_path(path, "unit"), "unit index " + std::to_string(info.unit) + " is not in [0, " + std::to_string(num_units) + ")");
    if (info.numel < 0 || info.shard_numel < 0) throw InputError(path, "numel and shard_numel must be >= 0");
    if (info.shard_numel > info.numel) throw InputError(jf::join_path(path, "shard_numel"), "a shard holds at most the parameter's numel");
    p.params.push_back(std::move(info));
  }
  // The static bytes hold each parameter's shard in the master dtype (and the optimizer's states):
  // what the peak's parts split them into (core/memory_at_peak.h). Summed wide: no overflow.
  __int128 shard_bytes = 0;
  for (const ParamInfo& info : p.params) shard_bytes += static_cast<__int128>(info.shard_numel) * dtype_bytes(p.master_dtype);
  if (shard_bytes > p.static_memory_bytes)
    throw InputError("static_memory_bytes", std::to_string(p.static_memory_bytes) +
                                                " B is less than the parameters' shards in the master dtype (params[].shard_numel x " +
                                                std::to_string(dtype_bytes(p.master_dtype)) + " B)");
  const int num_params = static_cast<int>(p.params.size());

  const json& ops = jf::require_array(jf::member(j, "ops", ""), "ops");
  p.ops.reserve(ops.size());
  std::vector<TensorSlice> op_slices;
  std::vector<int> op_deps;
  uint32_t last_list = 0;  // the empty list
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = jf::index_path("ops", i);
    op_slices.clear();
    op_deps.clear();
    OpRecord read = op_from_json(ops[i], path, p.labels, &op_slices, &op_deps);
    Op& op = read.op;
    const int id = static_cast<int>(i);
    if (read.id != id) throw InputError(jf::join_path(path, "id"), "op ids must equal their index; expected " + std::to_string(i) + ", found " + std::to_string(read.id));
    // An op's group size is its group's, from the group table (collectives and every other op).
    if (read.group_size != p.group_size(op))
      throw InputError(jf::join_path(path, "group_size"), "is " + std::to_string(read.group_size) + " but the " + p.group_of(op).name +
                                                              " group has " + std::to_string(p.group_size(op)) + " ranks");
    if (op.unit < -1 || op.unit >= num_units) throw InputError(jf::join_path(path, "unit"), "unit index " + std::to_string(op.unit) + " is not -1 or in [0, " + std::to_string(num_units) + ")");
    if (op.bucket < -1) throw InputError(jf::join_path(path, "bucket"), "must be -1 or a bucket index");
    if (op.microbatch < 0 || op.microbatch >= p.micro_batches) throw InputError(jf::join_path(path, "microbatch"), "micro-batch " + std::to_string(op.microbatch) + " is not in [0, " + std::to_string(p.micro_batches) + ")");
    for (size_t d = 0; d < op_deps.size(); ++d) {
      if (op_deps[d] < 0 || op_deps[d] >= id) throw InputError(jf::index_path(jf::join_path(path, "deps"), d), "dependency " + std::to_string(op_deps[d]) + " is not an earlier op (ids 0.." + std::to_string(id - 1) + ")");
    }
    for (size_t s = 0; s < op_slices.size(); ++s) {
      const TensorSlice& sl = op_slices[s];
      const std::string spath = jf::index_path(jf::join_path(path, "slices"), s);
      if (sl.param < 0 || sl.param >= num_params) throw InputError(jf::join_path(spath, "param"), "param index " + std::to_string(sl.param) + " is not in [0, " + std::to_string(num_params) + ")");
      // offset + numel may pass int64 (2^63 - 1 and 1 wrapped negative and were taken): compare
      // without the sum (both are >= 0, checked where they are read).
      if (sl.shard_offset > p.params[sl.param].shard_numel || sl.shard_numel > p.params[sl.param].shard_numel - sl.shard_offset)
        throw InputError(spath, "slice runs past the end of the shard of " + p.params[sl.param].name);
    }
    // Ops of one bucket list the same slices: keep one copy of a list its predecessor shares.
    const SliceList& last_range = p.slice_list_ranges[last_list];
    const auto last = std::span<const TensorSlice>(p.slice_lists).subspan(last_range.begin, last_range.count);
    if (!std::equal(last.begin(), last.end(), op_slices.begin(), op_slices.end())) last_list = p.add_slices(op_slices);
    op.slice_list = last_list;
    p.append_op(op, op_deps);
    // Optional (files written before it was counted): the kind's default from append_op.
    if (ops[i].contains("host_launches")) {
      const int launches = jf::get_int32(ops[i], "host_launches", path);
      const bool marker = is_marker(op.kind);
      if (launches < 0 || (marker && launches != 0))
        throw InputError(jf::join_path(path, "host_launches"),
                         marker ? "an alloc or free marker launches nothing: must be 0" : "must be >= 0");
      p.host_launches.back() = static_cast<uint32_t>(launches);
    }
  }
  for (size_t i = 0; i < p.ops.size(); ++i) check_op_contract(p, p.ops[i], jf::index_path("ops", i));
  return p;
}

void write_program_text(const Program& program, std::ostream& out) {
  out << "# program of \"" << program.scenario << "\": " << program.world_size << (program.world_size == 1 ? " rank" : " ranks") << "; groups";
  int listed = 0;
  for (const GroupInfo& info : program.groups) {
    if (info.size < 2) continue;
    out << (listed++ ? ", " : " ") << info.name << " " << info.size;
    if (info.stride > 1) out << " (stride " << info.stride << ")";
  }
  if (listed == 0) out << " none";
  out << "; param " << dtype_name(program.param_dtype) << ", reduce " << dtype_name(program.reduce_dtype)
      << ", micro-batches " << program.micro_batches << ", static memory " << program.static_memory_bytes << " B, "
      << program.units.size() << " units, " << program.params.size() << " params, " << program.ops.size() << " ops\n";
  char line[256];
  std::snprintf(line, sizeof line, "%6s  %-14s %-14s %-26s %5s %6s %14s %-18s %s\n", "id", "stream", "kind", "name", "unit",
                "bucket", "bytes", "group / link", "deps");
  out << line;
  for (const Op& op : program.ops) {
    // The group column: a collective's group, size and reduction; a copy's linked collective.
    std::string group = std::string(comm_group_name(op.group));
    if (op.group != CommGroup::None) group += "(" + std::to_string(program.group_size(op)) + ")";
    if (op.reduction != Reduction::None) group += " " + std::string(reduction_name(op.reduction));
    if (op.kind == OpKind::CopyIn) group = "fills " + std::to_string(op.link);
    if (op.kind == OpKind::CopyOut) group = "drains " + std::to_string(op.link);
    std::string deps;
    for (int d : program.deps(op)) deps += (deps.empty() ? "" : ",") + std::to_string(d);
    std::snprintf(line, sizeof line, "%6d  %-14s %-14s %-26s %5d %6d %14lld %-18s ", program.id_of(op),
                  std::string(stream_name(op.stream)).c_str(), std::string(op_kind_name(op.kind)).c_str(), program.name(op).c_str(),
                  op.unit, op.bucket, static_cast<long long>(op.bytes()), group.c_str());
    out << line << (deps.empty() ? "-" : deps) << "\n";
  }
}

std::string program_to_text(const Program& program) {
  std::ostringstream out;
  write_program_text(program, out);
  return out.str();
}

}  // namespace shardline
