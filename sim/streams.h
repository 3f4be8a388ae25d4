// Stream and event bookkeeping (CUDA semantics) for a Program run by one rank:
// - each stream runs its ops FIFO in program order, one at a time;
// - an op may start only when the host has issued it, its stream's previous op has finished,
//   and every op in its `deps` has finished (each op's completion is its event).
// Pure bookkeeping: no clock, no durations. What every rank shares (per-stream op lists, the
// dependents of each op) is a StreamPlan built once; a StreamSet is one rank's state over it
// (a byte and a counter per op), so simulating thousands of ranks does not copy the Program.
// Every operation is O(1) amortised (no scans over all ops).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/program.h"

namespace shardline::sim {

class StreamPlan {
 public:
  // Validates what the bookkeeping relies on (op ids == indices, deps name earlier ops) and
  // throws InputError("ops[i]...", ...) otherwise.
  explicit StreamPlan(const Program& program);
  int op_count() const { return static_cast<int>(stream_of_.size()); }

 private:
  friend class StreamSet;
  std::array<std::vector<int>, kNumStreams> stream_ops_;  // each stream's ops, program order
  std::vector<uint8_t> stream_of_;                        // each op's stream index
  std::vector<uint32_t> dep_count_;                       // distinct deps per op
  std::vector<int> dependents_begin_;                     // CSR: dependents of op i are
  std::vector<int> dependents_;                           //   dependents_[begin[i] .. begin[i+1])
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
  // else -1.
  int ready_head(int stream, int issued) const;
  int stream_of(int op) const { return plan_->stream_of_[op]; }

  bool finished(int op) const { return state_[op] >= kFinished; }
  int finished_count() const { return finished_count_; }
  int op_count() const { return static_cast<int>(state_.size()); }

 private:
  enum State : uint8_t { kWaiting, kRunning, kFinished, kSignalled };
  struct Stream {
    uint32_t head = 0;  // next op not yet started (index into the plan's stream list)
    bool busy = false;
  };
  const StreamPlan* plan_;
  std::array<Stream, kNumStreams> streams_{};
  std::vector<uint8_t> state_;
  std::vector<uint32_t> pending_deps_;  // unfinished distinct deps per op
  int finished_count_ = 0;
};

}  // namespace shardline::sim
