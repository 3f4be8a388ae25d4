// One Op <-> JSON, and the enum names of program.h read back from JSON. Shared by
// program.json (full ops) and timeline.json (op metadata without slices and deps).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/program.h"

namespace shardline {

// program == nullptr writes the metadata a Timeline carries; with the op's Program it adds
// slices, deps, reduction, link and buffers (program.json).
// `id` and `group_size` are written beside the op's own fields (its index and its group's size).
nlohmann::json op_to_json(const OpLabels& labels, const Program* program, const Op& op, int id, int group_size);
// An op read from JSON with the two numbers the Op record does not keep: its stated id and
// group size (the reader checks them against the index and the group table).
struct OpRecord {
  Op op;
  int id = -1;
  int group_size = 1;
};
// `path` names the op in errors ("ops[12]"); its name goes into `labels`. Slices and deps (read into the given vectors when
// not null), reduction, link and buffers are optional members (program_from_json checks that a
// Program's ops carry consistent ones).
// A compute op moves no bytes and only a compute op has a compute time: a file that says
// otherwise is refused.
OpRecord op_from_json(const nlohmann::json& j, const std::string& path, OpLabels& labels, std::vector<TensorSlice>* slices = nullptr,
                      std::vector<int>* deps = nullptr);

// Inverse of op_kind_name() etc.; each throws InputError(path, ...) listing the valid names.
OpKind parse_op_kind(const nlohmann::json& j, const std::string& path);
StreamId parse_stream(const nlohmann::json& j, const std::string& path);
Phase parse_phase(const nlohmann::json& j, const std::string& path);
CommGroup parse_comm_group(const nlohmann::json& j, const std::string& path);
MemoryKind parse_memory_kind(const nlohmann::json& j, const std::string& path);
Reduction parse_reduction(const nlohmann::json& j, const std::string& path);
BufferInit parse_buffer_init(const nlohmann::json& j, const std::string& path);

}  // namespace shardline
