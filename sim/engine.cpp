#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shardline::sim {
namespace {

// std heap algorithms build a max-heap; "greater" gives the earliest (time, seq) on top.
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time_us != b.time_us) return a.time_us > b.time_us;
    return a.seq > b.seq;
  }
};

}  // namespace

void Engine::schedule_at(double time_us, int kind, int target, uint64_t version) {
  if (!(time_us >= now_us_) || !std::isfinite(time_us)) {
    std::fprintf(stderr, "shardline sim engine: event (kind %d, target %d) scheduled at %.17g, before now %.17g\n",
                 kind, target, time_us, now_us_);
    std::abort();
  }
  const Event e{time_us, next_seq_++, kind, target, version};
  if (time_us == now_us_) {
    now_.push_back(e);
    return;
  }
  // A 4-ary min-heap on (time, seq): half the levels of a binary heap, and a node's children
  // share cache lines (thousands of ranks keep tens of thousands of events pending).
  heap_.push_back(e);
  size_t child = heap_.size() - 1;
  while (child > 0) {
    const size_t parent = (child - 1) / 4;
    if (!Later{}(heap_[parent], e)) break;
    heap_[child] = heap_[parent];
    child = parent;
  }
  heap_[child] = e;
}

bool Engine::pop(Event& out) {
  // Every queued now-event is at now_us_ (the clock cannot pass them): one goes first unless the
  // heap holds an event at this time scheduled before it.
  if (now_head_ < now_.size()) {
    const Event& first = now_[now_head_];
    if (heap_.empty() || Later{}(heap_.front(), first)) {
      out = first;
      if (++now_head_ == now_.size()) {
        now_.clear();
        now_head_ = 0;
      }
      ++popped_;
      return true;
    }
  }
  if (heap_.empty()) return false;
  out = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  size_t hole = 0;
  while (n > 0) {
    const size_t first = 4 * hole + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t end = std::min(first + 4, n);
    for (size_t c = first + 1; c < end; ++c)
      if (Later{}(heap_[best], heap_[c])) best = c;
    if (!Later{}(last, heap_[best])) break;
    heap_[hole] = heap_[best];
    hole = best;
  }
  if (n > 0) heap_[hole] = last;
  now_us_ = out.time_us;
  ++popped_;
  return true;
}

}  // namespace shardline::sim
