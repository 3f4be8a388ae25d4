#include "core/json_fields.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace shardline::json_fields {

using nlohmann::json;

std::string join_path(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string index_path(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "the string " + value.dump();
    case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "the number " + value.dump();
    default: return "an unsupported value";
  }
}

const json& require_object(const json& value, const std::string& path) {
  if (!value.is_object()) throw InputError(path, "expected an object, found " + describe(value));
  return value;
}

const json& require_array(const json& value, const std::string& path) {
  if (!value.is_array()) throw InputError(path, "expected an array, found " + describe(value));
  return value;
}

bool has_member(const json& object, std::string_view key) {
  return object.is_object() && object.find(std::string(key)) != object.end();
}

const json& member(const json& object, std::string_view key, const std::string& path) {
  require_object(object, path);
  auto it = object.find(std::string(key));
  if (it == object.end()) throw InputError(join_path(path, key), "missing required field");
  return *it;
}

int64_t as_int(const json& value, const std::string& path) {
  // Unsigned first: nlohmann counts an unsigned number as an integer too, and 2^63 read as a
  // signed one would wrap to a negative.
  if (value.is_number_unsigned()) {
    auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) throw InputError(path, "integer " + value.dump() + " is out of range");
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) return static_cast<int64_t>(d);
    if (std::isfinite(d) && d == std::floor(d)) throw InputError(path, "integer " + value.dump() + " is out of range");
  }
  throw InputError(path, "expected an integer, found " + describe(value));
}

int as_int32(const json& value, const std::string& path) {
  int64_t v = as_int(value, path);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) throw InputError(path, "integer " + value.dump() + " is out of range");
  return static_cast<int>(v);
}

double as_number(const json& value, const std::string& path) {
  if (!value.is_number()) throw InputError(path, "expected a number, found " + describe(value));
  double d = value.get<double>();
  if (!std::isfinite(d)) throw InputError(path, "expected a finite number");
  return d;
}

bool as_bool(const json& value, const std::string& path) {
  if (!value.is_boolean()) throw InputError(path, "expected true or false, found " + describe(value));
  return value.get<bool>();
}

std::string as_string(const json& value, const std::string& path) {
  if (!value.is_string()) throw InputError(path, "expected a string, found " + describe(value));
  return value.get<std::string>();
}

int64_t get_int(const json& object, std::string_view key, const std::string& path) {
  return as_int(member(object, key, path), join_path(path, key));
}
int get_int32(const json& object, std::string_view key, const std::string& path) {
  return as_int32(member(object, key, path), join_path(path, key));
}
double get_number(const json& object, std::string_view key, const std::string& path) {
  return as_number(member(object, key, path), join_path(path, key));
}
bool get_bool(const json& object, std::string_view key, const std::string& path) {
  return as_bool(member(object, key, path), join_path(path, key));
}
std::string get_string(const json& object, std::string_view key, const std::string& path) {
  return as_string(member(object, key, path), join_path(path, key));
}

}  // namespace shardline::json_fields
