#include "sim/memory.h"

#include <cstdio>
#include <cstdlib>

namespace shardline::sim {

MemoryTracker::MemoryTracker(int64_t static_bytes, double start_us) : live_(static_bytes), peak_(static_bytes) {
  if (static_bytes < 0) {
    std::fprintf(stderr, "shardline sim memory: static bytes %lld < 0\n", static_cast<long long>(static_bytes));
    std::abort();
  }
  samples_.push_back(MemorySample{start_us, live_});
}

void MemoryTracker::alloc(double now_us, int64_t bytes) { change(now_us, bytes); }
void MemoryTracker::free(double now_us, int64_t bytes) { change(now_us, -bytes); }

void MemoryTracker::change(double now_us, int64_t delta_bytes) {
  if (now_us < samples_.back().time_us) {
    std::fprintf(stderr, "shardline sim memory: change at %.17g before the last sample at %.17g\n", now_us, samples_.back().time_us);
    std::abort();
  }
  live_ += delta_bytes;
  if (live_ < 0) {
    std::fprintf(stderr, "shardline sim memory: live bytes went negative (%lld) at %.17g us: a Free without its Alloc\n",
                 static_cast<long long>(live_), now_us);
    std::abort();
  }
  if (live_ > peak_) peak_ = live_;
  samples_.push_back(MemorySample{now_us, live_});
}

}  // namespace shardline::sim
