#include "sim/memory.h"

#include <cstdio>
#include <cstdlib>

namespace shardline::sim {
namespace {

// Adds `delta_bytes` to slot `index` of `live` (a pool's or a memory label's live bytes: `what`)
// and returns them. An index without a slot, or live bytes going negative (a Free `mismatch`
// than its Alloc), is a broken program.
template <size_t N>
int64_t add_live(std::array<int64_t, N>& live, int index, int64_t delta_bytes, const char* what, const char* mismatch, double now_us) {
  if (index < 0 || index >= static_cast<int>(N)) {
    std::fprintf(stderr, "shardline sim memory: %s %d is out of range\n", what, index);
    std::abort();
  }
  int64_t& slot = live[static_cast<size_t>(index)];
  slot += delta_bytes;
  if (slot < 0) {
    std::fprintf(stderr, "shardline sim memory: %s %d's live bytes went negative (%lld) at %.17g us: a Free %s than its Alloc\n", what,
                 index, static_cast<long long>(slot), now_us, mismatch);
    std::abort();
  }
  return slot;
}

}  // namespace

MemoryTracker::MemoryTracker(int64_t static_bytes, double start_us, bool keep_samples)
    : live_(static_bytes), peak_(static_bytes), last_us_(start_us), keep_samples_(keep_samples) {
  pool_live_[0] = pool_peak_[0] = static_bytes;
  if (static_bytes < 0) {
    std::fprintf(stderr, "shardline sim memory: static bytes %lld < 0\n", static_cast<long long>(static_bytes));
    std::abort();
  }
  if (keep_samples_) samples_.push_back(MemorySample{start_us, live_});
}

void MemoryTracker::apply(double now_us, const Op& marker) {
  if (!is_marker(marker.kind)) {
    std::fprintf(stderr, "shardline sim memory: op kind %d is no alloc or free\n", static_cast<int>(marker.kind));
    std::abort();
  }
  change(now_us, marker.kind == OpKind::Alloc ? marker.bytes() : -marker.bytes(), static_cast<int>(marker.pool),
         static_cast<int>(marker.memory));
}

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
  add_live(label_live_bytes_, label, delta_bytes, "memory label", "of another kind", now_us);
  if (live_ > peak_) {
    peak_ = live_;
    labels_at_peak_bytes_ = label_live_bytes_;
  }
  const int64_t in_pool = add_live(pool_live_, pool, delta_bytes, "pool", "in another pool", now_us);
  int64_t& pool_peak = pool_peak_[static_cast<size_t>(pool)];
  if (in_pool > pool_peak) pool_peak = in_pool;
  last_us_ = now_us;
  if (keep_samples_) samples_.push_back(MemorySample{now_us, live_});
}

}  // namespace shardline::sim
