// Reading typed fields out of JSON documents that shardline itself writes (program.json,
// timeline.json, metrics.json) with errors that name the JSON path ("ops[3].kind"). Used by
// the *_from_json readers; scenario parsing has its own, richer validation.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace shardline::json_fields {

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c". index: "a" + 3 -> "a[3]".
std::string join_path(const std::string& path, std::string_view key);
std::string index_path(const std::string& path, size_t index);

// Each throws InputError(path, ...) naming what was found and what was expected.
const nlohmann::json& require_object(const nlohmann::json& value, const std::string& path);
const nlohmann::json& require_array(const nlohmann::json& value, const std::string& path);
// The member `key` of an object (which must exist); `path` is the object's path.
const nlohmann::json& member(const nlohmann::json& object, std::string_view key, const std::string& path);
bool has_member(const nlohmann::json& object, std::string_view key);

int64_t as_int(const nlohmann::json& value, const std::string& path);
int as_int32(const nlohmann::json& value, const std::string& path);
double as_number(const nlohmann::json& value, const std::string& path);
bool as_bool(const nlohmann::json& value, const std::string& path);
std::string as_string(const nlohmann::json& value, const std::string& path);

// Shorthands: member + conversion, with the member's path in errors.
int64_t get_int(const nlohmann::json& object, std::string_view key, const std::string& path);
int get_int32(const nlohmann::json& object, std::string_view key, const std::string& path);
double get_number(const nlohmann::json& object, std::string_view key, const std::string& path);
bool get_bool(const nlohmann::json& object, std::string_view key, const std::string& path);
std::string get_string(const nlohmann::json& object, std::string_view key, const std::string& path);

// A JSON value's type in words ("a string", "an array") for messages.
std::string describe(const nlohmann::json& value);

}  // namespace shardline::json_fields
