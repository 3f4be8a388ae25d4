// The --vary grammar and the grid of override points (see reports/sweep_grid.h).
#include "reports/sweep_grid.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string_view>

#include "core/error.h"
#include "core/invariant.h"
#include "core/units.h"

namespace shardline {
namespace {

constexpr size_t kMaxValuesPerAxis = 1'000'000;

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

[[noreturn]] void vary_error(const std::string& path, const std::string& sentence) {
  throw InputError("--vary", path + ": " + sentence);
}

// A plain number (JSON-like), or nullopt.
std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A range's value as text. Steps add and multiply in binary floating point (0 + 3 x 0.1 is
// 0.30000000000000004): 12 significant digits, far more than any setting needs, drop that
// residue, so the value set and its label are the 0.3 the range meant.
std::string format_number(double v) {
  if (std::abs(v) < 9e15 && v == std::floor(v)) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

// A size value: a plain byte count or a quantity with a unit ("64MiB").
int64_t parse_size(const std::string& path, const std::string& text) {
  if (auto n = parse_number(text)) {
    if (*n < 0 || *n != std::floor(*n)) vary_error(path, "\"" + text + "\" is not a whole, non-negative byte count");
    return static_cast<int64_t>(*n);
  }
  try {
    return parse_bytes(text, path);
  } catch (const InputError& e) {
    vary_error(path, "bad size \"" + text + "\": " + e.what());
  }
}

double parse_endpoint(const std::string& path, const std::string& text, bool bytes) {
  if (bytes) return static_cast<double>(parse_size(path, text));
  auto n = parse_number(text);
  if (!n) {
    bool is_size = false;
    try {
      parse_bytes(text, path);
      is_size = true;
    } catch (const InputError&) {
    }
    vary_error(path, "range endpoint \"" + text + "\" is not a number" +
                         (is_size ? std::string("; a range of sizes needs a path that ends in _bytes, so list this one's values "
                                                "instead (e.g. 40GiB,80GiB)")
                                  : std::string()));
  }
  return *n;
}

// "a..b:xK" or "a..b:+K".
std::vector<std::string> expand_range(const std::string& path, const std::string& item, bool bytes) {
  const size_t dots = item.find("..");
  // "1...8": the third dot made the end ".8", read as 0.8 ("the start is above the end").
  if (item.find("...") != std::string::npos || item.find("..", dots + 2) != std::string::npos)
    vary_error(path, "range \"" + item + "\": expected one \"..\" between the start and the end, as in a..b:xK or a..b:+K");
  const size_t colon = item.find(':', dots);
  if (colon == std::string::npos || colon + 1 >= item.size())
    vary_error(path, "range \"" + item + "\" needs a step: a..b:xK (geometric) or a..b:+K (arithmetic)");
  const std::string a_text = trim(item.substr(0, dots));
  const std::string b_text = trim(item.substr(dots + 2, colon - dots - 2));
  const char step_kind = item[colon + 1];
  const std::string k_text = trim(item.substr(colon + 2));
  if (step_kind != 'x' && step_kind != '+')
    vary_error(path, "range \"" + item + "\": the step must be xK (geometric) or +K (arithmetic)");
  const double a = parse_endpoint(path, a_text, bytes);
  const double b = parse_endpoint(path, b_text, bytes);
  if (a > b) vary_error(path, "empty range \"" + item + "\": the start is above the end");
  // Whole-number endpoints give whole numbers (1..100:x1.5 for micro-batches), unless an
  // arithmetic increment is itself a fraction: 0..2:+0.5 means 0, 0.5, 1, 1.5, 2, not 0, 1, 2.
  bool integral = bytes || (a == std::floor(a) && b == std::floor(b));
  if (!bytes && step_kind == '+')
    if (const auto k = parse_number(k_text); k && *k != std::floor(*k)) integral = false;
  std::vector<std::string> out;
  auto emit = [&](double v) {
    std::string text = integral ? format_number(std::round(v)) : format_number(v);
    if (out.empty() || out.back() != text) out.push_back(std::move(text));
    if (out.size() > kMaxValuesPerAxis) vary_error(path, "range \"" + item + "\" has more than a million values");
  };
  if (step_kind == 'x') {
    auto k = parse_number(k_text);
    if (!k) vary_error(path, "range \"" + item + "\": the factor \"" + k_text + "\" is not a number");
    if (*k <= 1) vary_error(path, "range \"" + item + "\": a geometric step must multiply by more than 1 (x" + k_text + " never advances)");
    if (a <= 0) vary_error(path, "range \"" + item + "\": a geometric range must start above 0");
    const double slack = 1 + 1e-9;
    for (int i = 0;; ++i) {
      const double v = a * std::pow(*k, i);
      if (v > b * slack) break;
      emit(v);
    }
  } else {
    const double k = bytes ? static_cast<double>(parse_size(path, k_text)) : [&] {
      auto n = parse_number(k_text);
      if (!n) vary_error(path, "range \"" + item + "\": the increment \"" + k_text + "\" is not a number");
      return *n;
    }();
    if (k <= 0) vary_error(path, "range \"" + item + "\": an arithmetic step must be above 0 (+" + k_text + " never advances)");
    const double slack = 1e-9 * std::max({std::abs(a), std::abs(b), k});
    for (int64_t i = 0;; ++i) {
      const double v = a + static_cast<double>(i) * k;
      if (v > b + slack) break;
      emit(v);
    }
  }
  return out;
}

std::string single_value(const std::string& path, const std::string& item, bool bytes) {
  if (item.empty()) vary_error(path, "empty value in the list");
  // A size path may also take a word (bucket_bytes "unit"): kept as-is for the parser to judge.
  const bool word = std::none_of(item.begin(), item.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (bytes && !word) return std::to_string(parse_size(path, item));
  return item;
}

}  // namespace

std::string SweepAxis::label() const {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : "/") + p;
  return out;
}

bool path_takes_bytes(const std::string& path) {
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  return last.size() >= 6 && last.compare(last.size() - 6, 6, "_bytes") == 0;
}

std::vector<std::string> expand_vary_values(const std::string& path, const std::string& expr) {
  const bool bytes = path_takes_bytes(path);
  if (trim(expr).empty()) vary_error(path, "no values given");
  std::vector<std::string> out;
  for (const auto& raw : split(expr, ',')) {
    const std::string item = trim(raw);
    if (item.find("..") != std::string::npos) {
      auto range = expand_range(path, item, bytes);
      out.insert(out.end(), range.begin(), range.end());
    } else {
      out.push_back(single_value(path, item, bytes));
    }
    if (out.size() > kMaxValuesPerAxis) vary_error(path, "more than a million values");
  }
  return out;
}

std::vector<std::string> parse_vary_paths(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--vary", "\"" + spec + "\" is not PATH=VALUES (e.g. policy.bucket_bytes=1MiB..512MiB:x2)");
  std::vector<std::string> paths;
  for (const auto& p : split(trim(spec.substr(0, eq)), '/')) {
    const std::string path = trim(p);
    if (path.empty()) throw InputError("--vary", "\"" + spec + "\" has an empty path");
    paths.push_back(path);
  }
  return paths;
}

namespace {

// A value given twice would simulate the same point twice and list it twice: refused, naming it.
SweepAxis without_repeats(SweepAxis axis) {
  std::set<std::vector<std::string>> seen;  // an axis may hold up to kMaxValuesPerAxis values
  for (const std::vector<std::string>& value : axis.values)
    if (!seen.insert(value).second) {
      std::string text;
      for (const std::string& v : value) text += (text.empty() ? "" : "/") + v;
      vary_error(axis.label(), "the value " + text + " is given twice");
    }
  return axis;
}

}  // namespace

SweepAxis parse_vary(const std::string& spec) {
  SweepAxis axis;
  axis.paths = parse_vary_paths(spec);
  const std::string expr = spec.substr(spec.find('=') + 1);
  if (axis.paths.size() == 1) {
    for (auto& v : expand_vary_values(axis.paths[0], expr)) axis.values.push_back({std::move(v)});
    return without_repeats(std::move(axis));
  }
  // Joint axis: comma list of tuples "v1/v2/...".
  const std::string label = axis.label();
  if (trim(expr).empty()) vary_error(label, "no values given");
  for (const auto& raw : split(expr, ',')) {
    const std::string item = trim(raw);
    if (item.find("..") != std::string::npos) vary_error(label, "a joint axis takes a list of value tuples (v1/v2,...), not ranges");
    auto parts = split(item, '/');
    if (parts.size() != axis.paths.size())
      vary_error(label, "\"" + item + "\" has " + std::to_string(parts.size()) + " values; expected one per path (" +
                            std::to_string(axis.paths.size()) + ")");
    std::vector<std::string> tuple;
    for (size_t p = 0; p < parts.size(); ++p)
      tuple.push_back(single_value(axis.paths[p], trim(parts[p]), path_takes_bytes(axis.paths[p])));
    axis.values.push_back(std::move(tuple));
  }
  return without_repeats(std::move(axis));
}

std::vector<std::string> sweep_paths(const std::vector<SweepAxis>& axes) {
  std::vector<std::string> out;
  for (const auto& a : axes) out.insert(out.end(), a.paths.begin(), a.paths.end());
  return out;
}

size_t grid_size(const std::vector<SweepAxis>& axes, size_t max_points) {
  size_t n = 1;
  for (const auto& a : axes) {
    SHARDLINE_CHECK(!a.values.empty(), "a varied path without values");
    if (n > max_points / a.values.size())
      throw InputError("--vary", "the grid has more than " + std::to_string(max_points) + " points");
    n *= a.values.size();
  }
  if (n > max_points) throw InputError("--vary", "the grid has more than " + std::to_string(max_points) + " points");
  return n;
}

std::vector<size_t> grid_coordinates(const std::vector<SweepAxis>& axes, size_t index) {
  std::vector<size_t> coords(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    coords[i] = index % axes[i].values.size();
    index /= axes[i].values.size();
  }
  SHARDLINE_CHECK(index == 0, "grid index out of range");
  return coords;
}

SweepPoint grid_point(const std::vector<SweepAxis>& axes, size_t index) {
  SweepPoint pt;
  pt.index = index;
  const auto coords = grid_coordinates(axes, index);
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t p = 0; p < axes[i].paths.size(); ++p)
      pt.overrides.push_back(axes[i].paths[p] + "=" + axes[i].values[coords[i]][p]);
  return pt;
}

}  // namespace shardline
