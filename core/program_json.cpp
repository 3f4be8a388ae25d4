#include "core/program_json.h"

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
constexpr int kVersion = 1;
}  // namespace

json program_to_json(const Program& program) {
  json j = json::object();
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["scenario"] = program.scenario;
  j["shard_size"] = program.shard_size;
  j["replicate_size"] = program.replicate_size;
  j["reshard_group_size"] = program.reshard_group_size;
  j["param_dtype"] = dtype_name(program.param_dtype);
  j["reduce_dtype"] = dtype_name(program.reduce_dtype);
  j["master_dtype"] = dtype_name(program.master_dtype);
  j["average_gradients"] = program.average_gradients;
  j["micro_batches"] = program.micro_batches;
  j["static_memory_bytes"] = program.static_memory_bytes;
  j["units"] = program.units;
  json params = json::array();
  for (const auto& p : program.params) {
    params.push_back({{"name", p.name}, {"unit", p.unit}, {"numel", p.numel}, {"shard_numel", p.shard_numel}});
  }
  j["params"] = std::move(params);
  json ops = json::array();
  for (const auto& op : program.ops) ops.push_back(op_to_json(op, true));
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
  p.shard_size = jf::get_int32(j, "shard_size", "");
  p.replicate_size = jf::get_int32(j, "replicate_size", "");
  p.reshard_group_size = jf::get_int32(j, "reshard_group_size", "");
  if (p.shard_size < 1) throw InputError("shard_size", "must be >= 1");
  if (p.replicate_size < 1) throw InputError("replicate_size", "must be >= 1");
  if (p.reshard_group_size < 0) throw InputError("reshard_group_size", "must be >= 0");
  p.param_dtype = parse_dtype(jf::get_string(j, "param_dtype", ""), "param_dtype");
  p.reduce_dtype = parse_dtype(jf::get_string(j, "reduce_dtype", ""), "reduce_dtype");
  p.master_dtype = parse_dtype(jf::get_string(j, "master_dtype", ""), "master_dtype");
  p.average_gradients = jf::get_bool(j, "average_gradients", "");
  p.micro_batches = jf::get_int32(j, "micro_batches", "");
  if (p.micro_batches < 1) throw InputError("micro_batches", "must be >= 1");
  p.static_memory_bytes = jf::get_int(j, "static_memory_bytes", "");
  if (p.static_memory_bytes < 0) throw InputError("static_memory_bytes", "must be >= 0");

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
    p.params.push_back(std::move(info));
  }
  const int num_params = static_cast<int>(p.params.size());

  const json& ops = jf::require_array(jf::member(j, "ops", ""), "ops");
  p.ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = jf::index_path("ops", i);
    Op op = op_from_json(ops[i], path);
    if (op.id != static_cast<int>(i)) throw InputError(jf::join_path(path, "id"), "op ids must equal their index; expected " + std::to_string(i) + ", found " + std::to_string(op.id));
    if (op.unit < -1 || op.unit >= num_units) throw InputError(jf::join_path(path, "unit"), "unit index " + std::to_string(op.unit) + " is not -1 or in [0, " + std::to_string(num_units) + ")");
    if (op.bucket < -1) throw InputError(jf::join_path(path, "bucket"), "must be -1 or a bucket index");
    if (op.microbatch < 0 || op.microbatch >= p.micro_batches) throw InputError(jf::join_path(path, "microbatch"), "micro-batch " + std::to_string(op.microbatch) + " is not in [0, " + std::to_string(p.micro_batches) + ")");
    for (size_t d = 0; d < op.deps.size(); ++d) {
      if (op.deps[d] < 0 || op.deps[d] >= op.id) throw InputError(jf::index_path(jf::join_path(path, "deps"), d), "dependency " + std::to_string(op.deps[d]) + " is not an earlier op (ids 0.." + std::to_string(op.id - 1) + ")");
    }
    for (size_t s = 0; s < op.slices.size(); ++s) {
      const TensorSlice& sl = op.slices[s];
      const std::string spath = jf::index_path(jf::join_path(path, "slices"), s);
      if (sl.param < 0 || sl.param >= num_params) throw InputError(jf::join_path(spath, "param"), "param index " + std::to_string(sl.param) + " is not in [0, " + std::to_string(num_params) + ")");
      if (sl.shard_offset + sl.shard_numel > p.params[sl.param].shard_numel) throw InputError(spath, "slice runs past the end of the shard of " + p.params[sl.param].name);
    }
    p.ops.push_back(std::move(op));
  }
  return p;
}

std::string program_to_text(const Program& program) {
  std::ostringstream out;
  out << "# program of \"" << program.scenario << "\": shard " << program.shard_size << ", replicate " << program.replicate_size;
  if (program.reshard_group_size > 0) out << ", reshard group " << program.reshard_group_size;
  out << ", param " << dtype_name(program.param_dtype) << ", reduce " << dtype_name(program.reduce_dtype)
      << ", micro-batches " << program.micro_batches << ", static memory " << program.static_memory_bytes << " B, "
      << program.units.size() << " units, " << program.params.size() << " params, " << program.ops.size() << " ops\n";
  char line[256];
  std::snprintf(line, sizeof line, "%6s  %-14s %-14s %-26s %5s %6s %14s %-14s %s\n", "id", "stream", "kind", "name", "unit",
                "bucket", "bytes", "group", "deps");
  out << line;
  for (const Op& op : program.ops) {
    std::string group = std::string(comm_group_name(op.group));
    if (op.group != CommGroup::None) group += "(" + std::to_string(op.group_size) + ")";
    std::string deps;
    for (size_t i = 0; i < op.deps.size(); ++i) deps += (i ? "," : "") + std::to_string(op.deps[i]);
    std::snprintf(line, sizeof line, "%6d  %-14s %-14s %-26s %5d %6d %14lld %-14s ", op.id,
                  std::string(stream_name(op.stream)).c_str(), std::string(op_kind_name(op.kind)).c_str(), op.name.c_str(),
                  op.unit, op.bucket, static_cast<long long>(op.bytes), group.c_str());
    out << line << (deps.empty() ? "-" : deps) << "\n";
  }
  return out.str();
}

}  // namespace shardline
