#include "sim/streams.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
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

StreamPlan::StreamPlan(const Program& program) {
  const int n = static_cast<int>(program.ops.size());
  stream_of_.assign(n, 0);
  dep_count_.assign(n, 0);
  dependents_begin_.assign(n + 1, 0);

  // Distinct deps per op (a repeated dep is one event), validated. The scheduler writes them
  // sorted and distinct: then they are used in place; otherwise a sorted copy is made.
  std::vector<int> scratch;
  auto distinct_deps = [&](const Op& op) -> std::span<const int> {
    const auto deps = program.deps(op);
    if (std::adjacent_find(deps.begin(), deps.end(), [](int a, int b) { return a >= b; }) == deps.end()) return deps;
    scratch.assign(deps.begin(), deps.end());
    std::sort(scratch.begin(), scratch.end());
    scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    return scratch;
  };
  std::vector<int> dependents(n, 0);  // dependents per producer
  for (int i = 0; i < n; ++i) {
    const Op& op = program.ops[i];
    if (op.id != i) throw InputError(op_path(i) + ".id", "op id " + std::to_string(op.id) + " must equal its index " + std::to_string(i));
    const int s = static_cast<int>(op.stream);
    if (s < 0 || s >= kNumStreams) throw InputError(op_path(i) + ".stream", "unknown stream");
    stream_ops_[s].push_back(i);
    stream_of_[i] = static_cast<uint8_t>(s);
    if (static_cast<size_t>(op.deps_begin) + op.deps_count > program.dep_ids.size())
      throw InputError(op_path(i) + ".deps", "runs past the program's dependency array");
    const auto deps = distinct_deps(op);
    for (int d : deps) {
      if (d < 0 || d >= i)
        throw InputError(op_path(i) + ".deps", "dependency " + std::to_string(d) + " must name an earlier op (0.." + std::to_string(i - 1) + ")");
      ++dependents[d];
    }
    dep_count_[i] = static_cast<uint32_t>(deps.size());
  }
  for (int i = 0; i < n; ++i) dependents_begin_[i + 1] = dependents_begin_[i] + dependents[i];
  dependents_.assign(dependents_begin_[n], -1);
  std::vector<int> fill(dependents_begin_.begin(), dependents_begin_.end() - 1);
  for (int i = 0; i < n; ++i) {
    for (int d : distinct_deps(program.ops[i])) dependents_[fill[d]++] = i;  // ascending i: deterministic order
  }
}

StreamSet::StreamSet(const StreamPlan& plan)
    : plan_(&plan), state_(plan.stream_of_.size(), kWaiting), pending_deps_(plan.dep_count_) {}

int StreamSet::ready_head(int stream, int issued) const {
  const Stream& s = streams_[stream];
  const std::vector<int>& ops = plan_->stream_ops_[stream];
  if (s.busy || s.head >= ops.size()) return -1;
  const int op = ops[s.head];
  if (op >= issued || pending_deps_[op] != 0) return -1;
  return op;
}

void StreamSet::start(int op) {
  // Callers start only what ready_head returned; check it to catch misuse.
  const int s = plan_->stream_of_[op];
  if (state_[op] != kWaiting || plan_->stream_ops_[s][streams_[s].head] != op)
    invariant_broken("started an op that is not at its stream's head", op);
  streams_[s].busy = true;
  ++streams_[s].head;
  state_[op] = kRunning;
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
  unsigned ready = 0;
  for (int k = plan_->dependents_begin_[op]; k < plan_->dependents_begin_[op + 1]; ++k) {
    const int d = plan_->dependents_[k];
    if (pending_deps_[d] == 0) invariant_broken("dependency count went negative", d);
    if (--pending_deps_[d] == 0) ready |= 1u << plan_->stream_of_[d];
  }
  return ready;
}

}  // namespace shardline::sim
