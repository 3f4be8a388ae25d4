// The length of a union of time spans (busy time: a stream's, a kind of op's, every collective's),
// summed so that it depends only on the spans, in double microseconds or in integer nanoseconds
// where epoch-scale times must stay exact (kineto/). Used by the step metrics and the trace summary.
#pragma once
#include <algorithm>
#include <utility>
#include <vector>

namespace shardline {

// The length of a union of [start, end) spans fed in order of start (ties in any order): each
// piece's length is added once it closes, so the sum depends only on the pieces. `T`: double
// microseconds, or integer nanoseconds where epoch-scale times must stay exact (kineto/).
template <typename T>
class BasicUnionSum {
 public:
  void add(T start, T end) {
    if (end <= start) return;
    if (!open_ || start > cur_end_) {
      if (open_) total_ += cur_end_ - cur_start_;
      cur_start_ = start;
      cur_end_ = end;
      open_ = true;
    } else {
      cur_end_ = std::max(cur_end_, end);
    }
  }
  T result() const { return open_ ? total_ + (cur_end_ - cur_start_) : total_; }

 private:
  T total_ = 0;
  bool open_ = false;
  T cur_start_ = 0, cur_end_ = 0;
};
using UnionSum = BasicUnionSum<double>;

// Union length of [start, end) intervals, in any order: double microseconds, or integer
// nanoseconds where epoch-scale times must stay exact (kineto/).
template <typename T>
T union_length(std::vector<std::pair<T, T>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  BasicUnionSum<T> sum;
  for (const auto& [start, end] : intervals) sum.add(start, end);
  return sum.result();
}
inline double union_length_us(std::vector<std::pair<double, double>> intervals) { return union_length(std::move(intervals)); }

}  // namespace shardline
