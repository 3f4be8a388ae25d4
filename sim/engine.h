// The discrete-event engine: a clock and a time-ordered queue of small POD events.
// Ties at equal times are broken by a monotonically increasing sequence number (insertion
// order), never by pointers or hash order, so the same inputs always pop in the same order.
// Events carry no closures (no per-event allocation); the owner dispatches on `kind`.
// Events at the current time (zero-duration ops: about half of a Program's ops are alloc/free
// markers) skip the heap: they wait in a first-in first-out queue, and pop merges the two by
// (time, sequence), so the order is exactly the heap's.
// Cancellation is by versioning: the owner bumps a version and ignores stale events. An event
// whose time is re-projected often (a compute op's end, each time collectives start or stop) can
// instead be a timer: re-arming it moves its pending event in the heap (with a new sequence number,
// as a fresh event would get) rather than leaving a stale one behind to be popped later.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardline::sim {

struct Event {
  double time_us = 0;
  uint64_t seq = 0;      // insertion order: the tie-breaker
  int kind = 0;          // owner-defined
  int target = -1;       // owner-defined (an op id, a flow slot, ...)
  uint64_t version = 0;  // owner-defined; stale events are recognised by it
  int timer = -1;        // the timer this event belongs to, -1: none
};

class Engine {
 public:
  double now_us() const { return now_us_; }
  // Schedules an event at `time_us` (>= now; asserted loudly).
  void schedule_at(double time_us, int kind, int target, uint64_t version = 0);
  // A new timer, idle (no pending event).
  int add_timer();
  // Arms `timer` with an event at `time_us` (>= now), replacing its pending event if it has one.
  // An event at the current time joins the now-queue and leaves the timer idle: re-arming it then
  // schedules another, so the owner's version still tells the stale one.
  void set_timer(int timer, double time_us, int kind, int target, uint64_t version = 0);
  // Pops the earliest event (ties: earliest scheduled) and advances the clock to it; a timer's
  // event leaves its timer idle. Returns false when the queue is empty.
  bool pop(Event& out);
  bool empty() const { return heap_.empty() && now_head_ == now_.size(); }
  uint64_t events_processed() const { return popped_; }
  void reserve(size_t events) { heap_.reserve(events); }

 private:
  Event make_event(double time_us, int kind, int target, uint64_t version);
  void put(size_t i, const Event& e);      // heap_[i] = e, keeping its timer's position
  void sift_up(size_t i, const Event& e);   // places e at i or above
  void sift_down(size_t i, const Event& e); // places e at i or below
  void remove_at(size_t i);
  void enqueue(Event e);

  std::vector<Event> heap_;  // 4-ary min-heap on (time_us, seq)
  std::vector<Event> now_;   // events at now_us_, in sequence order, from now_head_ on
  size_t now_head_ = 0;
  std::vector<size_t> timer_at_;  // per timer: its event's heap index, kIdle when none
  double now_us_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t popped_ = 0;
};

}  // namespace shardline::sim
