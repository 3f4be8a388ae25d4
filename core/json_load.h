// The one way shardline reads JSON that comes from outside the process (scenarios, cluster
// files, profiles, timelines, metrics, history lines, --set values): regular files only
// (directories, devices and pipes are refused by name), a size limit, a nesting-depth limit
// checked before parsing, and every nlohmann exception (syntax, a number beyond double range)
// turned into one InputError naming the file or flag, with line and column for syntax errors.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace shardline {

inline constexpr int kMaxJsonDepth = 64;                       // no shardline file nests deeper than 8
inline constexpr int64_t kMaxInputJsonBytes = int64_t{64} << 20;   // scenarios, cluster files, profiles
inline constexpr int64_t kMaxOutputJsonBytes = int64_t{2} << 30;   // timelines, metrics, program files

// Reads and parses `path`. `where` is what the error names (a flag, a JSON path, the file).
nlohmann::json load_json_file(const std::string& path, const std::string& where, int64_t max_bytes);

// Parses `text` (e.g. a --set value or a history line) with the same depth limit and error mapping.
nlohmann::json parse_json_text(std::string_view text, const std::string& where);

// As parse_json_text, but text that is not JSON at all gives nullopt (a --set value such as
// 64MiB is then taken as a string); text that is JSON but too deep or out of range still throws.
std::optional<nlohmann::json> parse_json_text_if_json(std::string_view text, const std::string& where);

}  // namespace shardline
