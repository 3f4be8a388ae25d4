#include "sim/memory.h"

#include <cstdio>
#include <cstdlib>

namespace shardline::sim {

MemoryTracker::MemoryTracker(int64_t static_bytes, double start_us, bool keep_samples)
    : live_(static_bytes), peak_(static_bytes), last_us_(start_us), keep_samples_(keep_samples) {
  if (static_bytes < 0) {
    std::fprintf(stderr, "shardline sim memory: static bytes %lld < 0\n", static_cast<long long>(static_bytes));
    std::abort();
  }
  if (keep_samples_) samples_.push_back(MemorySample{start_us, live_});
}

void MemoryTracker::alloc(double now_us, int64_t bytes) { change(now_us, bytes); }
void MemoryTracker::free(double now_us, int64_t bytes) { change(now_us, -bytes); }

void MemoryTracker::change(double now_us, int64_t delta_bytes) {
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
  if (live_ > peak_) peak_ = live_;
  last_us_ = now_us;
  if (keep_samples_) samples_.push_back(MemorySample{now_us, live_});
}

}  // namespace shardline::sim
