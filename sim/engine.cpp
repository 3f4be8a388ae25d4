#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shardline::sim {
namespace {

constexpr size_t kIdle = static_cast<size_t>(-1);

// Whether `a` pops after `b`: the earliest (time, seq) is on top.
bool later(const Event& a, const Event& b) {
  if (a.time_us != b.time_us) return a.time_us > b.time_us;
  return a.seq > b.seq;
}

}  // namespace

Event Engine::make_event(double time_us, int kind, int target, uint64_t version) {
  if (!(time_us >= now_us_) || !std::isfinite(time_us)) {
    std::fprintf(stderr, "shardline sim engine: event (kind %d, target %d) scheduled at %.17g, before now %.17g\n",
                 kind, target, time_us, now_us_);
    std::abort();
  }
  return Event{time_us, next_seq_++, kind, target, version, -1};
}

void Engine::put(size_t i, const Event& e) {
  heap_[i] = e;
  if (e.timer >= 0) timer_at_[static_cast<size_t>(e.timer)] = i;
}

// A 4-ary min-heap on (time, seq): half the levels of a binary heap, and a node's children
// share cache lines (thousands of ranks keep tens of thousands of events pending).
void Engine::sift_up(size_t i, const Event& e) {
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!later(heap_[parent], e)) break;
    put(i, heap_[parent]);
    i = parent;
  }
  put(i, e);
}

void Engine::sift_down(size_t i, const Event& e) {
  const size_t n = heap_.size();
  while (true) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t end = std::min(first + 4, n);
    for (size_t c = first + 1; c < end; ++c)
      if (later(heap_[best], heap_[c])) best = c;
    if (!later(e, heap_[best])) break;
    put(i, heap_[best]);
    i = best;
  }
  put(i, e);
}

void Engine::remove_at(size_t i) {
  const Event last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;  // it was the last
  if (i > 0 && later(heap_[(i - 1) / 4], last)) sift_up(i, last);
  else sift_down(i, last);
}

// An event at the current time joins the now-queue (a timer's leaves its timer idle); any other
// goes into the heap.
void Engine::enqueue(Event e) {
  if (e.time_us == now_us_) {
    e.timer = -1;
    now_.push_back(e);
    return;
  }
  heap_.push_back(e);
  sift_up(heap_.size() - 1, e);
}

void Engine::schedule_at(double time_us, int kind, int target, uint64_t version) { enqueue(make_event(time_us, kind, target, version)); }

int Engine::add_timer() {
  timer_at_.push_back(kIdle);
  return static_cast<int>(timer_at_.size() - 1);
}

void Engine::set_timer(int timer, double time_us, int kind, int target, uint64_t version) {
  if (timer < 0 || static_cast<size_t>(timer) >= timer_at_.size()) {
    std::fprintf(stderr, "shardline sim engine: unknown timer %d\n", timer);
    std::abort();
  }
  Event e = make_event(time_us, kind, target, version);
  const size_t at = timer_at_[static_cast<size_t>(timer)];
  if (at != kIdle) {
    timer_at_[static_cast<size_t>(timer)] = kIdle;
    remove_at(at);
  }
  e.timer = timer;
  enqueue(e);
}

bool Engine::pop(Event& out) {
  // Every queued now-event is at now_us_ (the clock cannot pass them): one goes first unless the
  // heap holds an event at this time scheduled before it.
  if (now_head_ < now_.size()) {
    const Event& first = now_[now_head_];
    if (heap_.empty() || later(heap_.front(), first)) {
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
  if (out.timer >= 0) timer_at_[static_cast<size_t>(out.timer)] = kIdle;
  remove_at(0);
  now_us_ = out.time_us;
  ++popped_;
  return true;
}

}  // namespace shardline::sim
