// The memory tracker: live device bytes of the representative rank over time. Starts at the
// Program's static bytes (sharded params, grads, optimizer state); Alloc/Free ops add/subtract
// their bytes when the host issues them (PyTorch's caching allocator counts in host order). Records a sample at every change (time
// order; unless told to keep only the peak) and the peak. Live bytes going negative, or a change
// before the last one, is a broken program: it aborts loudly.
#pragma once
#include <cstdint>
#include <vector>

#include "core/timeline.h"

namespace shardline::sim {

class MemoryTracker {
 public:
  // keep_samples false: only the live bytes and the peak (what metrics need; no sample per change).
  explicit MemoryTracker(int64_t static_bytes, double start_us = 0, bool keep_samples = true);
  void reserve(size_t changes) {  // room for this many changes
    if (keep_samples_) samples_.reserve(changes + 1);
  }
  void alloc(double now_us, int64_t bytes);
  void free(double now_us, int64_t bytes);
  int64_t live_bytes() const { return live_; }
  int64_t peak_bytes() const { return peak_; }
  const std::vector<MemorySample>& samples() const { return samples_; }
  std::vector<MemorySample> take_samples() { return std::move(samples_); }

 private:
  void change(double now_us, int64_t delta_bytes);
  int64_t live_ = 0;
  int64_t peak_ = 0;
  double last_us_ = 0;  // the time of the last change (or the start)
  bool keep_samples_ = true;
  std::vector<MemorySample> samples_;
};

}  // namespace shardline::sim
