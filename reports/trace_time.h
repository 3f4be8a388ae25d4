// Trace timestamps on the nanosecond grid: a JSON trace's `ts` and `dur` are microseconds, which
// viewers turn into whole nanoseconds each, Perfetto by truncating (static_cast<int64_t>(us x
// 1000); some versions round). A slice's end there is its converted start plus its converted
// duration, which could pass the converted start of the slice after it by 1 ns and break their
// nesting. So every time is written as whole nanoseconds, each duration as the difference of the
// converted ends, and each value as the double that truncating and rounding both read back as
// its nanoseconds: the trace's slices then nest and abut exactly as the timeline's.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace shardline {

// A time in microseconds, as whole nanoseconds.
inline int64_t trace_ns(double us) { return std::llround(us * 1000.0); }
// Whole nanoseconds as the microseconds a trace writes: the double nearest ns / 1000, moved by the
// least steps needed so that value x 1000 is not below ns (above it for a negative ns, where
// truncation goes towards zero) nor a whole nanosecond past it.
inline double trace_us(int64_t ns) {
  double us = static_cast<double>(ns) / 1000.0;
  const double target = static_cast<double>(ns);
  if (ns >= 0)
    while (us * 1000.0 < target) us = std::nextafter(us, std::numeric_limits<double>::infinity());
  else
    while (us * 1000.0 > target) us = std::nextafter(us, -std::numeric_limits<double>::infinity());
  return us;
}

}  // namespace shardline
