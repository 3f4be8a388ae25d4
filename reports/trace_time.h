// Trace timestamps on the nanosecond grid: Perfetto reads a JSON trace's microsecond `ts` and
// `dur` as whole nanoseconds each (llround(value x 1000)), so a slice's end there is its rounded
// start plus its rounded duration, which can pass the rounded start of the slice after it by 1 ns
// and break their nesting. Writing every time as whole nanoseconds, and each duration as the
// difference of the rounded ends, makes the trace's slices nest and abut exactly as the timeline's.
#pragma once
#include <cmath>
#include <cstdint>

namespace shardline {

// A time in microseconds, as whole nanoseconds.
inline int64_t trace_ns(double us) { return std::llround(us * 1000.0); }
// Whole nanoseconds as the microseconds a trace writes.
inline double trace_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace shardline
