#include "sim/memory.h"

#include <cstdio>
#include <cstdlib>

namespace shardline::sim {

MemoryTracker::MemoryTracker(int64_t static_bytes, double start_us, bool keep_samples)
    : live_(static_bytes), peak_(static_bytes), last_us_(start_us), keep_samples_(keep_samples) {
  pool_live_[0] = pool_peak_[0] = static_bytes;
  if (static_bytes < 0) {
    std::fprintf(stderr, "shardline sim memory: static bytes %lld < 0\n", static_cast<long long>(static_bytes));
    std::abort();
  }
  if (keep_samples_) samples_.push_back(MemorySample{start_us, live_});
}

void MemoryTracker::alloc(double now_us, int64_t bytes, int pool, int label) { change(now_us, bytes, pool, label); }
void MemoryTracker::free(double now_us, int64_t bytes, int pool, int label) { change(now_us, -bytes, pool, label); }

int64_t MemoryTracker::pool_peaks_bytes() const {
  int64_t sum = 0;
  for (const int64_t p : pool_peak_) sum += p;
  return sum;
}

void MemoryTracker::change(double now_us, int64_t delta_bytes, int pool, int label) {
  if (now_us < last_us_) {
    std::fprintf(stderr, "shardline sim memory: change at %.17g before the last one at %.17g\n", now_us, last_us_);
    std::abort();
  }
  live_ += delta_bytes;
  if (live_ < 0) {
    std::fprintf(stderr, "shardline sim memory: live bytes went negative (%lld) at %.17g us: a Free without its Alloc\n",
                 static_cast<long long>(live_), now_us);
    std::abort();
  }
  if (label < 0 || label >= kMemoryLabelCount) {
    std::fprintf(stderr, "shardline sim memory: memory label %d is out of range\n", label);
    std::abort();
  }
  int64_t& of_label = label_live_bytes_[static_cast<size_t>(label)];
  of_label += delta_bytes;
  if (of_label < 0) {
    std::fprintf(stderr, "shardline sim memory: memory label %d's live bytes went negative (%lld) at %.17g us: a Free of another kind than its Alloc\n",
                 label, static_cast<long long>(of_label), now_us);
    std::abort();
  }
  if (live_ > peak_) {
    peak_ = live_;
    labels_at_peak_bytes_ = label_live_bytes_;
  }
  if (pool < 0 || pool >= kNumStreams) {
    std::fprintf(stderr, "shardline sim memory: pool %d is no stream\n", pool);
    std::abort();
  }
  int64_t& in_pool = pool_live_[static_cast<size_t>(pool)];
  in_pool += delta_bytes;
  if (in_pool < 0) {
    std::fprintf(stderr, "shardline sim memory: pool %d's live bytes went negative (%lld) at %.17g us: a Free in another pool than its Alloc\n",
                 pool, static_cast<long long>(in_pool), now_us);
    std::abort();
  }
  int64_t& pool_peak = pool_peak_[static_cast<size_t>(pool)];
  if (in_pool > pool_peak) pool_peak = in_pool;
  last_us_ = now_us;
  if (keep_samples_) samples_.push_back(MemorySample{now_us, live_});
}

}  // namespace shardline::sim
