#include "core/json_load.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <vector>
#include <sstream>

#include "core/error.h"

namespace shardline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Line and column (1-based) of byte offset `end` in `text`.
std::string position(std::string_view text, size_t end) {
  end = std::min(end, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Refuses nesting deeper than kMaxJsonDepth before nlohmann recurses into it (its parser and
// dump() recurse once per level: 100,000 levels overflow the stack).
void check_depth(std::string_view text, const std::string& where) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw InputError(where, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at " + position(text, i) +
                                    "; expected a shardline document (a few levels)");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// nlohmann's what() is "[json.exception.<kind>.<id>] <message>": keep the message.
std::string reason(const json::exception& e) {
  std::string what = e.what();
  const auto close = what.find("] ");
  if (what.rfind("[json.exception.", 0) == 0 && close != std::string::npos) what = what.substr(close + 2);
  return what;
}

// A parser message quotes what it read last, raw: bytes that are not printable ASCII (a
// binary file, broken UTF-8) are written as \xNN so the message stays one readable line.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    }
  }
  return out;
}

// A parser callback that refuses a key given twice in one object (nlohmann keeps the last
// silently: a pasted "layers" twice changed the model without a word), naming its JSON path.
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(const std::string& where) : where_(where) {}
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames_.push_back(Frame{event == json::parse_event_t::array_start, 0, {}, {}});
        break;
      case json::parse_event_t::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second)
          throw InputError(where_, "\"" + path() + "\" is given twice in one object; JSON would keep only the last: remove one");
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        next_element();
        break;
      case json::parse_event_t::value:
        next_element();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key;
    std::set<std::string> keys;
  };
  void next_element() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) p += f.array ? "[" + std::to_string(f.index) + "]" : (p.empty() ? "" : ".") + f.key;
    return p;
  }
  const std::string& where_;
  std::vector<Frame> frames_;
};

// `check_keys`: inputs a person writes (scenarios, cluster files, profiles, --set values) have
// their keys checked; machine-written outputs (timelines, programs, metrics) are parsed without
// the callback, which doubled the parse of a 34 MB timeline.
json parse_checked(std::string_view text, const std::string& where, bool check_keys) {
  check_depth(text, where);
  try {
    if (check_keys) {
      DuplicateKeyCheck check(where);
      return json::parse(text.begin(), text.end(), std::ref(check));
    }
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.byte is 1-based: the offending character. Keep only nlohmann's "why".
    std::string why = reason(e);
    const auto at_column = why.find(", column ");
    const auto colon = at_column == std::string::npos ? std::string::npos : why.find(": ", at_column);
    if (colon != std::string::npos) why = why.substr(colon + 2);
    throw InputError(where, "malformed JSON at " + position(text, e.byte > 0 ? e.byte - 1 : 0) + ": " + printable(why));
  } catch (const json::exception& e) {
    throw InputError(where, "unreadable JSON: " + reason(e));
  }
}

}  // namespace

json load_json_file(const std::string& path, const std::string& where, int64_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw InputError(where, "cannot open \"" + path + "\" (" + (ec ? ec.message() : std::string("no such file")) +
                                "); expected a readable JSON file");
  }
  if (fs::is_directory(status)) throw InputError(where, "\"" + path + "\" is a directory; expected a JSON file");
  if (!fs::is_regular_file(status)) {
    throw InputError(where, "\"" + path + "\" is not a regular file (a device, pipe or socket); expected a JSON file");
  }
  const auto size = fs::file_size(path, ec);
  if (!ec && static_cast<int64_t>(size) > max_bytes) {
    throw InputError(where, "\"" + path + "\" is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes >> 20) +
                                " MiB this kind of file may hold");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(where, "cannot open \"" + path + "\" (" + std::strerror(errno) + "); expected a readable JSON file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(where, "reading \"" + path + "\" failed");
  const std::string text = buffer.str();
  // gzip's magic bytes: a compressed file (a profiler trace) where plain JSON is read.
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b)
    throw InputError(where, "\"" + path + "\" is gzip-compressed (a profiler trace, for `shardline import`?); expected a plain JSON file");
  try {
    return parse_checked(text, where, max_bytes <= kMaxInputJsonBytes);
  } catch (const InputError& e) {
    // Name the file when `where` does not already (a flag, or a folder of several files).
    if (where == path) throw;
    throw InputError(where, "\"" + path + "\": " + e.sentence());
  }
}

json parse_json_text(std::string_view text, const std::string& where) { return parse_checked(text, where, true); }

std::optional<json> parse_json_text_if_json(std::string_view text, const std::string& where) {
  check_depth(text, where);
  if (!json::accept(text.begin(), text.end())) return std::nullopt;
  return parse_checked(text, where, true);
}

}  // namespace shardline
