// The memory tracker: live device bytes of the representative rank over time. Starts at the
// Program's static bytes (sharded params, grads, optimizer state); Alloc/Free ops add/subtract
// their bytes when the host issues them (PyTorch's caching allocator counts in host order).
// Records a sample at every change (time order; unless told to keep only the peak), the peak, and
// the peak of each allocator pool (an op's `pool`, the stream its alloc was issued on: the
// allocator reuses a freed block for that stream's allocations only; the static bytes are the
// first stream's, the default stream the model and optimizer were made on), and the live bytes of
// each memory label (an op's `memory` field, opaque here) at the moment of the peak (the static
// bytes apart; core/memory_at_peak.h names them).
// Live bytes going negative, in all or in a pool, or a change before the last one, is a broken
// program: it aborts loudly.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/program.h"
#include "core/timeline.h"

namespace shardline::sim {

class MemoryTracker {
 public:
  // keep_samples false: only the live bytes and the peak (what metrics need; no sample per change).
  explicit MemoryTracker(int64_t static_bytes, double start_us = 0, bool keep_samples = true);
  void reserve(size_t changes) {  // room for this many changes
    if (keep_samples_) samples_.reserve(changes + 1);
  }
  // An Alloc adds its bytes, a Free takes them away, in its `pool` and under its `memory` label.
  void apply(double now_us, const Op& marker);
  int64_t live_bytes() const { return live_; }
  int64_t peak_bytes() const { return peak_; }
  // The sum over the allocator's pools of the most each held at once: what the caching allocator
  // keeps reserved when it never has to flush its cache.
  int64_t pool_peaks_bytes() const;
  // Each label's live bytes when the peak was first reached (all 0 while the static bytes are the peak).
  const std::array<int64_t, kMemoryLabelCount>& labels_at_peak_bytes() const { return labels_at_peak_bytes_; }
  const std::vector<MemorySample>& samples() const { return samples_; }
  std::vector<MemorySample> take_samples() { return std::move(samples_); }

 private:
  void change(double now_us, int64_t delta_bytes, int pool, int label);
  std::array<int64_t, kNumStreams> pool_live_{}, pool_peak_{};  // by stream index
  std::array<int64_t, kMemoryLabelCount> label_live_bytes_{}, labels_at_peak_bytes_{};  // by memory label
  int64_t live_ = 0;
  int64_t peak_ = 0;
  double last_us_ = 0;  // the time of the last change (or the start)
  bool keep_samples_ = true;
  std::vector<MemorySample> samples_;
};

}  // namespace shardline::sim
