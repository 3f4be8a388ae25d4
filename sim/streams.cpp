#include "sim/streams.h"

#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace shardline::sim {
namespace {

[[noreturn]] void invariant_broken(const char* what, int op) {
  std::fprintf(stderr, "shardline sim streams: %s (op %d)\n", what, op);
  std::abort();
}

std::string op_path(int i) { return "ops[" + std::to_string(i) + "]"; }

}  // namespace

StreamPlan::StreamPlan(const Program& program) : program_(&program) {
  const int n = static_cast<int>(program.ops.size());
  stream_of_.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const Op& op = program.ops[i];
    const int s = static_cast<int>(op.stream);
    if (s < 0 || s >= kNumStreams) throw InputError(op_path(i) + ".stream", "unknown stream");
    stream_of_[i] = static_cast<uint8_t>(s);
    if (!program.deps_valid(op)) throw InputError(op_path(i) + ".deps", "runs past the program's dependency array");
    for (int d : program.deps(op))
      if (d < 0 || d >= i)
        throw InputError(op_path(i) + ".deps", "dependency " + std::to_string(d) + " must name an earlier op (0.." + std::to_string(i - 1) + ")");
  }
}

StreamSet::StreamSet(const StreamPlan& plan) : plan_(&plan), state_(plan.stream_of_.size(), kWaiting) {
  for (int s = 0; s < kNumStreams; ++s) set_head(s, next_of_stream(s, -1));
}

int StreamSet::next_of_stream(int stream, int after) const {
  const std::vector<uint8_t>& of = plan_->stream_of_;
  const size_t from = static_cast<size_t>(after + 1);
  if (from >= of.size()) return static_cast<int>(of.size());
  const void* hit = std::memchr(of.data() + from, stream, of.size() - from);
  return hit == nullptr ? static_cast<int>(of.size()) : static_cast<int>(static_cast<const uint8_t*>(hit) - of.data());
}

void StreamSet::set_head(int stream, int op) {
  Stream& s = streams_[stream];
  s.head = op;
  s.dep_cursor = op < op_count() ? plan_->program_->ops[op].deps_begin : 0;
  s.waiting_on = -1;
}

int StreamSet::ready_head(int stream, int issued) {
  Stream& s = streams_[stream];
  if (s.busy || s.head >= op_count() || s.head >= issued) return -1;
  const Program& program = *plan_->program_;
  const uint32_t end = program.deps_end(program.ops[s.head]);
  for (; s.dep_cursor < end; ++s.dep_cursor) {
    const int d = program.dep_ids[s.dep_cursor];
    if (state_[d] != kSignalled) {
      s.waiting_on = d;
      return -1;
    }
  }
  s.waiting_on = -1;
  return s.head;
}

void StreamSet::start(int op) {
  // Callers start only what ready_head returned; check it to catch misuse.
  const int s = plan_->stream_of_[op];
  if (state_[op] != kWaiting || streams_[s].head != op) invariant_broken("started an op that is not at its stream's head", op);
  streams_[s].busy = true;
  state_[op] = kRunning;
  set_head(s, next_of_stream(s, op));
}

unsigned StreamSet::finish(int op, bool signal_event) {
  if (state_[op] != kRunning) invariant_broken("finished an op that is not running", op);
  state_[op] = kFinished;
  ++finished_count_;
  streams_[plan_->stream_of_[op]].busy = false;  // the running op of a stream is its last started
  const unsigned freed = 1u << plan_->stream_of_[op];
  return signal_event ? freed | signal(op) : freed;
}

unsigned StreamSet::signal(int op) {
  if (state_[op] != kFinished) invariant_broken("signalled an op that is not finished (or twice)", op);
  state_[op] = kSignalled;
  // Only a head found waiting for this op can have become ready (any other head was either
  // already checked past it, or is not issued or its stream busy: those are checked when that
  // changes).
  unsigned ready = 0;
  for (int s = 0; s < kNumStreams; ++s)
    if (streams_[s].waiting_on == op) ready |= 1u << s;
  return ready;
}

}  // namespace shardline::sim
