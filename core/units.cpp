#include "core/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/error.h"

namespace shardline {
namespace {

// A number followed by an optional unit: "1.5GB", "1.5 GB", "4096". At most one space
// between the number and the unit; leading/trailing spaces are ignored.
struct Quantity {
  double value = 0;
  std::string_view unit;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// False when the text does not start with a finite number.
bool split_quantity(std::string_view text, Quantity& out) {
  text = trim(text);
  if (text.empty()) return false;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, out.value, std::chars_format::general);
  if (ec != std::errc() || ptr == begin || !std::isfinite(out.value)) return false;
  std::string_view rest(ptr, static_cast<size_t>(end - ptr));
  if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  out.unit = rest;
  return true;
}

[[noreturn]] void fail(std::string_view text, const std::string& where, std::string_view what,
                       std::string_view forms) {
  throw InputError(where, "\"" + std::string(text) + "\" is not a valid " + std::string(what) + "; expected " +
                              std::string(forms));
}

constexpr std::string_view kSizeForms =
    "a non-negative number of bytes with an optional unit (one space allowed): B, KB, MB, GB, TB "
    "(powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. \"64MiB\", \"1.5GB\", \"4096\"";
constexpr std::string_view kRateForms =
    "a positive number with a rate unit (one space allowed): bytes per second B/s, KB/s, MB/s, GB/s, "
    "TB/s, KiB/s, MiB/s, GiB/s (also written GBps) or bits per second bps, Kbps, Mbps, Gbps, Tbps "
    "(also written Gb/s, Gbit/s), e.g. \"450GB/s\", \"400Gbps\"";
constexpr std::string_view kTimeForms =
    "a non-negative number with a time unit (one space allowed): ns, us, ms, s, e.g. \"2.5us\", "
    "\"3ms\", \"800ns\"";
constexpr std::string_view kFlopsForms =
    "a non-negative number of floating-point operations with an optional SI prefix K, M, G, T, P, E and "
    "an optional FLOP / FLOPs suffix, e.g. \"3e12\", \"1.2T\", \"989TFLOP\"";

struct UnitScale {
  std::string_view unit;
  double scale;
};

const UnitScale kSizeUnits[] = {
    {"", 1},          {"B", 1},           {"KB", 1e3},        {"kB", 1e3},        {"MB", 1e6},
    {"GB", 1e9},      {"TB", 1e12},       {"KiB", 1024.0},    {"MiB", 1048576.0}, {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
};

const UnitScale kRateUnits[] = {
    {"B/s", 1},        {"KB/s", 1e3},        {"kB/s", 1e3},         {"MB/s", 1e6},          {"GB/s", 1e9},
    {"TB/s", 1e12},    {"KiB/s", 1024.0},    {"MiB/s", 1048576.0},  {"GiB/s", 1073741824.0}, {"Bps", 1},
    {"KBps", 1e3},     {"MBps", 1e6},        {"GBps", 1e9},         {"TBps", 1e12},
    // bits per second
    {"bps", 0.125},    {"Kbps", 125.0},      {"kbps", 125.0},       {"Mbps", 1.25e5},       {"Gbps", 1.25e8},
    {"Tbps", 1.25e11}, {"b/s", 0.125},       {"Kb/s", 125.0},       {"Mb/s", 1.25e5},       {"Gb/s", 1.25e8},
    {"Tb/s", 1.25e11}, {"bit/s", 0.125},     {"Kbit/s", 125.0},     {"Mbit/s", 1.25e5},     {"Gbit/s", 1.25e8},
    {"Tbit/s", 1.25e11},
};

const UnitScale kTimeUnits[] = {
    {"ns", 1e-3}, {"us", 1}, {"\xC2\xB5s", 1}, {"ms", 1e3}, {"s", 1e6},
};

bool lookup(std::string_view unit, const UnitScale* table, size_t n, double& scale) {
  for (size_t i = 0; i < n; ++i) {
    if (table[i].unit == unit) {
      scale = table[i].scale;
      return true;
    }
  }
  return false;
}

template <size_t N>
bool lookup(std::string_view unit, const UnitScale (&table)[N], double& scale) {
  return lookup(unit, table, N, scale);
}

}  // namespace

int64_t parse_bytes(std::string_view text, const std::string& where) {
  Quantity q;
  double scale = 0;
  if (!split_quantity(text, q) || !lookup(q.unit, kSizeUnits, scale)) fail(text, where, "size", kSizeForms);
  if (q.value < 0) throw InputError(where, "\"" + std::string(text) + "\" is negative; a size must be >= 0 bytes");
  const double bytes = q.value * scale;
  if (bytes > 9.0e18) throw InputError(where, "\"" + std::string(text) + "\" is too large for a size in bytes");
  const double rounded = std::round(bytes);
  if (std::fabs(bytes - rounded) > 1e-6 * std::max(1.0, bytes)) {
    throw InputError(where, "\"" + std::string(text) + "\" is not a whole number of bytes");
  }
  return static_cast<int64_t>(rounded);
}

double parse_rate_bytes_per_s(std::string_view text, const std::string& where) {
  Quantity q;
  double scale = 0;
  if (!split_quantity(text, q) || !lookup(q.unit, kRateUnits, scale)) fail(text, where, "rate", kRateForms);
  if (q.value <= 0) throw InputError(where, "\"" + std::string(text) + "\" must be a positive rate");
  const double rate = q.value * scale;
  // Beyond these, times derived from the rate overflow or round to nothing.
  if (rate < 1.0 || rate > 1e18) throw InputError(where, "\"" + std::string(text) + "\" is out of range; expected 1 B/s to 1 EB/s");
  return rate;
}

double parse_time_us(std::string_view text, const std::string& where) {
  Quantity q;
  double scale = 0;
  if (!split_quantity(text, q) || !lookup(q.unit, kTimeUnits, scale)) fail(text, where, "time", kTimeForms);
  if (q.value < 0) throw InputError(where, "\"" + std::string(text) + "\" is negative; a time must be >= 0");
  return q.value * scale;
}

double parse_flops(std::string_view text, const std::string& where) {
  Quantity q;
  if (!split_quantity(text, q)) fail(text, where, "FLOP count", kFlopsForms);
  std::string_view unit = q.unit;
  double scale = 1;
  if (!unit.empty()) {
    switch (unit.front()) {
      case 'K': case 'k': scale = 1e3; break;
      case 'M': scale = 1e6; break;
      case 'G': scale = 1e9; break;
      case 'T': scale = 1e12; break;
      case 'P': scale = 1e15; break;
      case 'E': scale = 1e18; break;
      default: scale = 0; break;
    }
    if (scale != 0) unit.remove_prefix(1);
    else scale = 1;
  }
  if (!(unit.empty() || unit == "FLOP" || unit == "FLOPs" || unit == "FLOPS" || unit == "flop" || unit == "flops")) {
    fail(text, where, "FLOP count", kFlopsForms);
  }
  if (q.value < 0) throw InputError(where, "\"" + std::string(text) + "\" is negative; a FLOP count must be >= 0");
  return q.value * scale;
}

namespace {
std::string printf_string(const char* fmt, double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v, unit);
  return buf;
}
}  // namespace

std::string format_bytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const bool negative = bytes < 0;
  double v = std::fabs(static_cast<double>(bytes));
  if (v < 1024) return std::to_string(bytes) + " B";
  int i = 0;
  while (v >= 1024 && i < 5) {
    v /= 1024;
    ++i;
  }
  return printf_string(negative ? "-%.1f %s" : "%.1f %s", v, kUnits[i]);
}

std::string format_time_us(double time_us) {
  const double a = std::fabs(time_us);
  if (a < 1.0) return printf_string("%.0f %s", time_us * 1e3, "ns");
  if (a < 1e3) return printf_string("%.2f %s", time_us, "us");
  if (a < 1e6) return printf_string("%.2f %s", time_us / 1e3, "ms");
  return printf_string("%.3f %s", time_us / 1e6, "s");
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string format_rate(double bytes_per_s) {
  static const char* kUnits[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  double v = bytes_per_s;
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 4) {
    v /= 1000;
    ++i;
  }
  return printf_string("%.1f %s", v, kUnits[i]);
}

}  // namespace shardline
