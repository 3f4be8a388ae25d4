// Stream and event bookkeeping (CUDA semantics) for a Program run by one rank:
// - each stream runs its ops FIFO in program order, one at a time;
// - an op may start only when the host has issued it, its stream's previous op has finished,
//   and every op in its `deps` has finished (each op's completion is its event).
// Pure bookkeeping: no clock, no durations. What every rank shares is a StreamPlan built once
// (the validated Program and each op's stream); a StreamSet is one rank's state over it: a byte
// per op and a few words per stream, so simulating thousands of ranks does not copy the Program.
// Readiness is pulled: a stream's head checks its own dependencies, from a cursor that only moves
// forward (a finished dependency stays finished), and remembers the one it waits for, so a
// finished op knows which streams it may have unblocked without a list of its dependents.
// Every operation is O(1) amortised (no scans over all ops).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/program.h"

namespace shardline::sim {

class StreamPlan {
 public:
  // Validates what the bookkeeping relies on (op ids == indices, known streams, deps name earlier
  // ops) and throws InputError("ops[i]...", ...) otherwise. `program` outlives the plan.
  explicit StreamPlan(const Program& program);
  int op_count() const { return static_cast<int>(stream_of_.size()); }

 private:
  friend class StreamSet;
  const Program* program_;
  std::vector<uint8_t> stream_of_;  // each op's stream index
};

class StreamSet {
 public:
  explicit StreamSet(const StreamPlan& plan);  // the plan outlives this

  // The host issues ops in program order, the same on every rank: ops below `issued` are issued.
  void start(int op);   // `op` (== ready_head of its stream) begins: its stream is busy
  // `op` completed: its stream is free; its event is signalled now, or (signal_event false)
  // later by signal(op), e.g. after an event latency. Both return the streams (a bit each) whose
  // head may have become ready: no other stream's can have.
  unsigned finish(int op, bool signal_event = true);
  unsigned signal(int op);  // `op`'s event fires: ops that wait for it may start

  // The op at the head of `stream` if it can start now (below `issued`, stream idle, deps done),
  // else -1. Moves the head's dependency cursor past the deps already done.
  int ready_head(int stream, int issued);
  int stream_of(int op) const { return plan_->stream_of_[op]; }

  bool finished(int op) const { return state_[op] >= kFinished; }
  bool busy(int stream) const { return streams_[static_cast<size_t>(stream)].busy; }  // an op of it is running
  int finished_count() const { return finished_count_; }
  int op_count() const { return static_cast<int>(state_.size()); }

 private:
  enum State : uint8_t { kWaiting, kRunning, kFinished, kSignalled };
  struct Stream {
    int head = 0;             // next op of this stream not yet started (op_count: none left)
    uint32_t dep_cursor = 0;  // the head's deps before this index in dep_ids are done
    int waiting_on = -1;      // the dep the head was last found waiting for, -1: none
    bool busy = false;
  };
  int next_of_stream(int stream, int after) const;  // first op of `stream` after op `after`
  void set_head(int stream, int op);
  const StreamPlan* plan_;
  std::array<Stream, kNumStreams> streams_{};
  std::vector<uint8_t> state_;
  int finished_count_ = 0;
};

}  // namespace shardline::sim
