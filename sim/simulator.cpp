// simulate(): wires the pieces together. The engine pops events; the host issues ops; the
// stream set says what may start; each started op is timed by its kind:
//   Alloc/Free: zero duration; memory changes when the host issues them (the caching
//   allocator's order), or when their stream reaches them where the Program says memory
//   follows the streams (FSDP1's record_stream);
//   CopyIn/CopyOut: cost_model.copy_time_us(bytes), or a flow of copy_link_bytes(bytes) on
//   the rank's copy resource where copies are work of the rank's processors (mpi profiles):
//   slowed by copy_slowdown_during_comm while a collective of the rank moves data, and slowing
//   the rank's transfers by comm_slowdown_during_copy while it runs;
//   Compute: compute_overhead_us + compute_us of work, slowed while collectives are in flight
//   (sim/compute.h);
//   a compute or copy op ends no earlier than the host made its last launch (cluster.host_launch
//   x Program::host_launches after its issue; sim/host.h);
//   collectives: the cost model's phases, each a latency then a flow on a link (sim/network.h);
//   while any compute op runs, links (and the copy resource) carry 1 / cluster.comm_slowdown_during_compute
//   of their capacity (flows are re-rated when the first compute op starts and the last one ends).
// Zero-duration ops end through an event at the same time (ordered by sequence number).
// An op's event fires cluster.event_latency_us after it ends (0: at once); only then may ops
// that wait for it start (the stream itself is free at the end).
#include "sim/simulator.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "sim/analytical_cost_model.h"
#include "sim/compute.h"
#include "sim/engine.h"
#include "sim/host.h"
#include "sim/memory.h"
#include "sim/network.h"
#include "sim/profile_cost_model.h"
#include "sim/streams.h"
#include "sim/topology.h"

namespace shardline {
namespace {

using sim::CollectivePlan;
using sim::Event;

enum EventKind : int {
  kHostIssue,    // target: op
  kOpDone,       // target: op (fixed-duration op ends)
  kComputeDone,  // target: op, version
  kLatencyDone,  // target: op (a collective phase's latency elapsed)
  kFlowDone,     // target: flow slot, version
  kSignal,       // target: op (its event fires, cluster.event_latency_us after it ended)
};

[[noreturn]] void broken(const char* what, int op) {
  std::fprintf(stderr, "shardline simulator: %s (op %d)\n", what, op);
  std::abort();
}

std::string op_path(int i) { return "ops[" + std::to_string(i) + "]"; }

// What simulate() relies on beyond the stream bookkeeping's checks. Returns the number of
// alloc/free markers (one memory sample each), counted in the same pass over the ops.
size_t validate_ops(const Program& program) {
  size_t markers = 0;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const int id = static_cast<int>(i);
    markers += is_marker(op.kind);
    if (op.bytes() < 0) throw InputError(op_path(id) + ".bytes", "bytes must be >= 0, got " + std::to_string(op.bytes()));
    if (op.kind == OpKind::Compute && (!(op.compute_us() >= 0) || !std::isfinite(op.compute_us())))
      throw InputError(op_path(id) + ".compute_us", "a compute op needs a finite duration >= 0");
    if (is_collective(op.kind) && static_cast<size_t>(op.group) >= program.groups.size())
      throw InputError(op_path(id) + ".group", "names no group of the group table");
  }
  return markers;
}

// One collective across its group's members: the cost model's plan (the same for every member),
// who has arrived, and how many members finished the current phase. A member starts moving
// data only when every member has arrived, and the next phase starts when every member has
// finished this one; in the meantime it waits inside the collective, as NCCL kernels do. With one
// representative rank the instance has one member: it starts at once.
struct CollectiveInstance {
  CollectivePlan plan;
  const GroupInfo* group = nullptr;  // the Program's
  int members = 1;   // members simulated (1: the representative rank)
  int arrived = 0;
  int done_in_phase = 0;
  double last_done_us = 0;
  std::vector<std::pair<int, double>> ready_at;  // (rank, when it arrived / finished the phase)
};

// One collective running on one rank's stream: its op, its instance (every member's shared
// state) and the phase this rank is in.
struct RunningCollective {
  int op = -1;
  int phase = 0;
  uint64_t instance = 0;  // key of the shared instance; unused when `own` is
  bool own_instance = false;
  CollectiveInstance own;  // a one-member instance (the representative rank): no shared state
};

// Everything one simulated rank owns. Ranks share the Program, the stream plan and the cost model.
struct RankState {
  RankState(const sim::StreamPlan& plan, double compute_slowdown, const std::array<double, sim::kNumLinkClasses>& capacity,
            double copy_capacity)
      : streams(plan), compute(compute_slowdown), network(capacity, copy_capacity) {
    compute_timer.fill(-1);
  }
  sim::StreamSet streams;
  sim::ComputeModel compute;
  sim::Network network;
  std::array<RunningCollective, kNumStreams> collectives{};  // one per stream at most
  std::array<double, kNumStreams> started_us{};              // when each stream's running op started
  std::array<int, kNumStreams> compute_timer;                // the engine timer of each stream's compute end (-1: none yet)
  int collectives_in_flight = 0;
  int collectives_moving = 0;  // every member arrived, not yet ended
  int copy_flows = 0;          // copies running as flows (mpi profiles)
  double compute_factor = 1.0;
  int record = -1;  // index among the ranks whose intervals are kept, -1: not kept
  RankStats stats;
};

// Events name their rank in the bits above the kind.
constexpr int kKindBits = 4;
constexpr int kKindMask = (1 << kKindBits) - 1;

class Simulation {
 public:
  // `step` (one rank only): the rank's ops go to it as they end, and neither intervals nor
  // memory samples are kept.
  Simulation(const Scenario& scenario, const Program& program, std::unique_ptr<sim::CostModel> cost,
             const RankVariation* variation, int ranks, const std::vector<int>& recorded_ranks, bool every_span,
             size_t memory_markers, StepAccumulator* step)
      : scenario_(scenario),
        program_(program),
        cost_(std::move(cost)),
        variation_(variation),
        step_(step),
        plan_(program),
        host_(program, scenario.cluster.launch_overhead_us, scenario.cluster.host_launch_us),
        memory_(program.static_memory_bytes, 0, step == nullptr),
        stream_memory_(program.static_memory_bytes, 0, true),
        draw_memory_by_stream_(step == nullptr && !program.memory_follows_streams) {
    if (step_ != nullptr && (ranks != 1 || every_span || !recorded_ranks.empty())) broken("metrics as ops end are kept for one rank only", -1);
    const std::array<double, sim::kNumLinkClasses> capacity{cost_->link_bandwidth_bytes_per_s(sim::LinkClass::IntraNode),
                                                            cost_->link_bandwidth_bytes_per_s(sim::LinkClass::InterNode)};
    ranks_.reserve(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      std::array<double, sim::kNumLinkClasses> c = capacity;
      double copy_capacity = cost_->copy_capacity_bytes_per_s();
      if (variation_ != nullptr && !variation_->bandwidth_factor.empty()) {
        for (double& b : c) b *= variation_->bandwidth_factor[static_cast<size_t>(r)];
        copy_capacity *= variation_->bandwidth_factor[static_cast<size_t>(r)];
      }
      ranks_.emplace_back(plan_, scenario.cluster.compute_slowdown_during_comm, c, copy_capacity);
      if (variation_ != nullptr && !variation_->compute_factor.empty())
        ranks_.back().compute_factor = variation_->compute_factor[static_cast<size_t>(r)];
    }
    const size_t n = program.ops.size();
    if (scenario.cluster.host_launch_us > 0) launches_done_us_.assign(n, 0.0);
    memory_.reserve(memory_markers);  // rank 0's memory samples: one per alloc/free, allocated once
    if (draw_memory_by_stream_) stream_memory_.reserve(memory_markers);
    if (every_span) {
      // Every rank's start and end of every op, 16 bytes each: the Timeline's ranks are chosen
      // after the run, once the slowest and the fastest are known.
      issue_us_.assign(n, 0.0);
      spans_.assign(static_cast<size_t>(ranks) * n * 2, 0.0);
      return;
    }
    intervals_.resize(recorded_ranks.size() * n);
    for (size_t k = 0; k < recorded_ranks.size(); ++k) {
      ranks_[static_cast<size_t>(recorded_ranks[k])].record = static_cast<int>(k);
      for (size_t i = 0; i < n; ++i) {
        OpInterval& iv = intervals_[k * n + i];
        iv.op = static_cast<int>(i);
        iv.rank = recorded_ranks[k];
        iv.iteration = 0;
      }
    }
    engine_.reserve(64);
  }

  void run() {
    if (host_.next_op() >= 0) engine_.schedule_at(host_.next_issue_us(), kHostIssue, host_.next_op());
    Event e;
    while (engine_.pop(e)) dispatch(e);
    for (const RankState& r : ranks_)
      if (r.streams.finished_count() != r.streams.op_count()) broken("simulation ended with unfinished ops", -1);
  }

  HugePageVector<OpInterval> take_intervals() { return std::move(intervals_); }
  // With every span kept: the intervals of `ranks` (ascending), rank by rank.
  HugePageVector<OpInterval> intervals_of(const std::vector<int>& ranks) const {
    const size_t n = program_.ops.size();
    HugePageVector<OpInterval> out;
    out.reserve(ranks.size() * n);
    for (int r : ranks)
      for (size_t i = 0; i < n; ++i) {
        const double* span = &spans_[(static_cast<size_t>(r) * n + i) * 2];
        out.push_back(OpInterval{static_cast<int>(i), r, 0, issue_us_[i], span[0], span[1]});
      }
    return out;
  }
  uint64_t events_processed() const { return engine_.events_processed(); }
  std::vector<MemorySample> take_memory() { return memory_.take_samples(); }
  std::vector<MemorySample> take_memory_by_stream() { return stream_memory_.take_samples(); }
  int64_t peak_memory_bytes() const { return memory_.peak_bytes(); }
  int64_t pool_peaks_bytes() const { return memory_.pool_peaks_bytes(); }
  MemoryAtPeak memory_at_peak() const { return memory_at_peak_of(program_, memory_.labels_at_peak_bytes()); }
  std::vector<RankStats> rank_stats() const {
    std::vector<RankStats> out;
    out.reserve(ranks_.size());
    for (const RankState& r : ranks_) out.push_back(r.stats);
    return out;
  }
  // The critical path, walked back from the end of the slowest rank: on a rank, back to the
  // latest collective it waited in (before that time), then over to the member it waited for,
  // from the moment it arrived (or finished its part of a phase: a slow link); until a rank that
  // waited for nobody. Needs every rank's spans.
  std::vector<PathSegment> critical_path() const {
    std::vector<PathSegment> path;
    if (spans_.empty() || syncs_.empty()) return path;
    const size_t n = program_.ops.size();
    int r = 0;
    for (size_t k = 1; k < ranks_.size(); ++k)
      if (ranks_[k].stats.step_us > ranks_[static_cast<size_t>(r)].stats.step_us) r = static_cast<int>(k);
    double t = ranks_[static_cast<size_t>(r)].stats.step_us;
    struct Wait {
      double sync_us;  // when the wait ended
      int op;
      int last_rank;   // the member waited for
      double wait_us;  // how long this rank waited
      bool operator<(const Wait& o) const { return sync_us != o.sync_us ? sync_us < o.sync_us : op < o.op; }
    };
    // Per rank visited: the collectives it waited in, ascending.
    std::unordered_map<int, std::vector<Wait>> waits;
    int held_up_op = -1;
    double held_up_wait = 0;
    // At the slowest rank's end a wait may end exactly then: the last phase of its last collective,
    // held by another member's slow link. The path crosses there without a stretch on this rank;
    // every later lookup is strict, so the walk always moves back.
    bool at_end = true;
    while (true) {
      auto [it, fresh] = waits.try_emplace(r);
      if (fresh) {
        for (size_t op = 0; op < n; ++op) {
          if (!is_collective(program_.ops[op].kind)) continue;
          const GroupInfo& g = program_.group_of(program_.ops[op]);
          if (g.size <= 1) continue;
          const uint64_t key = static_cast<uint64_t>(op) * static_cast<uint64_t>(program_.world_size) + static_cast<uint64_t>(g.color(r));
          const auto s = syncs_.find(key);
          if (s == syncs_.end()) continue;
          const double arrived = spans_[(static_cast<size_t>(r) * n + op) * 2];
          if (arrived < s->second.sync_us)
            it->second.push_back(Wait{s->second.sync_us, static_cast<int>(op), s->second.last_rank, s->second.sync_us - arrived});
          const auto phases = phase_syncs_.find(key);
          if (phases == phase_syncs_.end()) continue;
          for (const PhaseSync& ph : phases->second)
            if (ph.last_rank != r) it->second.push_back(Wait{ph.sync_us, static_cast<int>(op), ph.last_rank, ph.least_wait_us});
        }
        std::sort(it->second.begin(), it->second.end());
      }
      // The latest wait that ended before t (strictly, so the walk always moves back).
      const auto& list = it->second;
      auto w = at_end ? std::upper_bound(list.begin(), list.end(), Wait{t, std::numeric_limits<int>::max(), -1, 0})
                      : std::lower_bound(list.begin(), list.end(), Wait{t, -1, -1, 0});
      at_end = false;
      if (w == list.begin()) {
        path.push_back(PathSegment{r, 0.0, t, held_up_op, held_up_wait});
        break;
      }
      --w;
      if (w->sync_us < t) path.push_back(PathSegment{r, w->sync_us, t, held_up_op, held_up_wait});
      held_up_op = w->op;
      held_up_wait = w->wait_us;
      r = w->last_rank;
      t = w->sync_us;
    }
    std::reverse(path.begin(), path.end());
    return path;
  }
  const std::vector<double>& wait_at_op() const { return wait_at_op_; }

 private:
  int issued() const { return host_.next_op() < 0 ? static_cast<int>(program_.ops.size()) : host_.next_op(); }
  OpInterval* interval(const RankState& r, int op) {
    return r.record < 0 ? nullptr : &intervals_[static_cast<size_t>(r.record) * program_.ops.size() + static_cast<size_t>(op)];
  }
  size_t span_index(const RankState& r, int op) const {
    return (static_cast<size_t>(rank_index(r)) * program_.ops.size() + static_cast<size_t>(op)) * 2;
  }
  int rank_index(const RankState& r) const { return static_cast<int>(&r - ranks_.data()); }
  void schedule(double time_us, int kind, int rank, int target, uint64_t version = 0) {
    engine_.schedule_at(time_us, kind | (rank << kKindBits), target, version);
  }

  void dispatch(const Event& e) {
    const double now = engine_.now_us();
    const int kind = e.kind & kKindMask;
    const int rank = e.kind >> kKindBits;
    RankState& r = ranks_[static_cast<size_t>(rank)];
    switch (kind) {
      case kHostIssue: {
        // Issue every op due now in one go (markers are free for the host), on every rank (the
        // host issues the same Program everywhere and never blocks), then schedule the next issue.
        // Only the streams of the issued ops can have a new op ready.
        unsigned streams = 0;
        while (host_.next_op() >= 0 && host_.next_issue_us() <= now) {
          const int op = host_.next_op();
          if (!issue_us_.empty()) issue_us_[static_cast<size_t>(op)] = now;
          if (!launches_done_us_.empty()) launches_done_us_[static_cast<size_t>(op)] = now + host_.launches_us(op);
          if (step_ != nullptr) step_->issue(now);
          for (RankState& each : ranks_)
            if (OpInterval* iv = interval(each, op)) iv->issue_us = now;
          const Op& issued_op = program_.ops[op];
          // PyTorch's caching allocator counts a tensor when the host allocates it and releases
          // it when the host frees it: memory follows the host, not the streams.
          if (!program_.memory_follows_streams && is_marker(issued_op.kind)) memory_.apply(now, issued_op);
          streams |= 1u << static_cast<unsigned>(issued_op.stream);
          host_.issue_next();
        }
        if (host_.next_op() >= 0) engine_.schedule_at(host_.next_issue_us(), kHostIssue, host_.next_op());
        for (RankState& each : ranks_) start_ready(each, streams);
        return;
      }
      case kOpDone:
        if (held_by_host(r, e.target)) return;
        start_ready(r, finish_op(r, e.target));
        return;
      case kComputeDone: {
        if (!r.compute.is_current(e.target, e.version)) return;  // re-rated since
        r.compute.finish(e.target);
        if (r.compute.running_count() == 0) set_compute_running(r, false);
        if (held_by_host(r, e.target)) return;
        start_ready(r, finish_op(r, e.target));
        return;
      }
      case kLatencyDone:
        begin_transfer(r, e.target);  // no op ends: no stream can have a new head ready
        return;
      case kSignal:
        start_ready(r, r.streams.signal(e.target));
        return;
      case kFlowDone: {
        if (!r.network.is_current(e.target, e.version)) return;  // re-rated since
        const int op = r.network.owner(e.target);
        r.network.finish_flow(now, e.target);
        schedule_flows(r);
        if (is_collective(program_.ops[op].kind)) {
          phase_done(r, op);
        } else {  // a copy flow (CostModel::copy_link_bytes)
          if (--r.copy_flows == 0) set_copy_running(r, false);
          if (held_by_host(r, op)) return;
          start_ready(r, finish_op(r, op));
        }
        return;
      }
      default:
        broken("unknown event kind", e.target);
    }
  }

  // A compute or copy op whose work is done before the host has made its last launch
  // (sim/host.h) ends then (its kernels run as they are launched): its end is rescheduled
  // (kOpDone) and true returned.
  bool held_by_host(RankState& r, int id) {
    if (launches_done_us_.empty()) return false;
    const Op& op = program_.ops[id];
    if (op.kind != OpKind::Compute && op.kind != OpKind::CopyIn && op.kind != OpKind::CopyOut) return false;
    const double done = launches_done_us_[static_cast<size_t>(id)];
    if (!(engine_.now_us() < done)) return false;
    schedule(done, kOpDone, rank_index(r), id);
    return true;
  }

  // Starts the ready head of each stream in `streams` (a bit per stream), in stream order.
  void start_ready(RankState& r, unsigned streams = (1u << kNumStreams) - 1) {
    for (int s = 0; s < kNumStreams; ++s) {
      if ((streams & (1u << s)) == 0) continue;
      const int op = r.streams.ready_head(s, issued());
      if (op >= 0) start_op(r, op);
    }
  }

  void start_op(RankState& r, int id) {
    const double now = engine_.now_us();
    const Op& op = program_.ops[id];
    r.streams.start(id);
    r.started_us[static_cast<int>(op.stream)] = now;
    if (OpInterval* iv = interval(r, id)) iv->start_us = now;
    if (!spans_.empty()) spans_[span_index(r, id)] = now;
    const int rank = rank_index(r);
    switch (op.kind) {
      case OpKind::Alloc:  // counted when issued (kHostIssue), unless memory follows the streams
      case OpKind::Free:
        if (rank == 0 && program_.memory_follows_streams) memory_.apply(now, op);
        if (rank == 0 && draw_memory_by_stream_) stream_memory_.apply(now, op);
        schedule(now, kOpDone, rank, id);
        break;
      case OpKind::CopyIn:
      case OpKind::CopyOut:
        if (const double link_bytes = cost_->copy_link_bytes(op.bytes()); link_bytes > 0) {
          if (r.copy_flows++ == 0) set_copy_running(r, true);
          r.network.start_copy_flow(now, link_bytes, id);
          schedule_flows(r);
        } else {
          schedule(now + cost_->copy_time_us(op.bytes()), kOpDone, rank, id);
        }
        break;
      case OpKind::Compute: {
        if (r.compute.running_count() == 0) set_compute_running(r, true);
        double work_us = op.compute_us();
        if (r.compute_factor != 1.0) work_us *= r.compute_factor;
        if (variation_ != nullptr && variation_->compute_jitter) work_us *= variation_->compute_jitter(rank, id);
        r.compute.start(now, id, work_us + scenario_.cluster.compute_overhead_us);
        schedule_compute_end(r, r.compute.running_count() - 1);
        break;
      }
      case OpKind::AllGather:
      case OpKind::ReduceScatter:
      case OpKind::AllReduce:
        arrive(r, id);
        break;
    }
  }

  // One of the rank's network scales (`set_scale`) at 1 / `slowdown` while `on`, else 1; the
  // flows re-rated. A slow-down of 1 changes nothing and is skipped.
  void slow_down_while(RankState& r, double slowdown, bool on, void (sim::Network::*set_scale)(double, double)) {
    if (slowdown == 1.0) return;
    (r.network.*set_scale)(engine_.now_us(), on ? 1.0 / slowdown : 1.0);
    schedule_flows(r);
  }

  // Transfers (and, on mpi profiles, copies) slow down while compute runs.
  void set_compute_running(RankState& r, bool running) {
    slow_down_while(r, scenario_.cluster.comm_slowdown_during_compute, running, &sim::Network::set_capacity_scale);
  }

  // While a copy flow runs, the rank's transfers slow down (mpi profiles).
  void set_copy_running(RankState& r, bool running) {
    slow_down_while(r, cost_->comm_slowdown_during_copy(), running, &sim::Network::set_link_scale);
  }

  // While a collective of the rank moves data, its copy flows slow down (mpi profiles).
  void set_collective_moving(RankState& r, bool moving) {
    if (moving ? r.collectives_moving++ != 0 : --r.collectives_moving != 0) return;
    slow_down_while(r, cost_->copy_slowdown_during_comm(), moving, &sim::Network::set_copy_scale);
  }

  RunningCollective& collective_slot(RankState& r, int op) { return r.collectives[static_cast<int>(program_.ops[op].stream)]; }

  // Rank `r` reaches collective `op`: its kernel occupies the GPU from now (compute slows down);
  // data moves once every member is there.
  void arrive(RankState& r, int id) {
    const double now = engine_.now_us();
    const Op& op = program_.ops[id];
    const GroupInfo& group = program_.group_of(op);
    const int rank = rank_index(r);
    const int members = ranks_.size() > 1 ? group.size : 1;
    const uint64_t key = static_cast<uint64_t>(id) * static_cast<uint64_t>(program_.world_size) +
                         static_cast<uint64_t>(members > 1 ? group.color(rank) : 0);
    RunningCollective& rc = collective_slot(r, id);
    rc.op = id;
    rc.phase = 0;
    rc.instance = key;
    rc.own_instance = members == 1;
    CollectiveInstance& in = rc.own_instance ? rc.own : instances_[key];
    if (rc.own_instance) in = CollectiveInstance{};
    if (in.arrived == 0) {
      in.group = &group;
      in.members = members;
      const sim::GroupPlacement placement = sim::place_group(group, scenario_.cluster.gpus_per_node);
      in.plan = cost_->collective(collective_kind(op.kind), op.bytes(), placement);
    }
    if (r.collectives_in_flight++ == 0) {
      r.compute.set_comm_in_flight(now, true);
      schedule_compute(r);
    }
    if (in.members > 1) in.ready_at.emplace_back(rank, now);
    if (++in.arrived < in.members) return;
    if (!spans_.empty() && in.members > 1) syncs_[key] = SyncRecord{now, rank};
    account_waiting(in, now, id);
    for_each_member(in, rank, [&](RankState& m) {
      set_collective_moving(m, true);
      begin_phase(m, id);
    });
    if (in.plan.count == 0 && !rc.own_instance) instances_.erase(key);
  }

  // For the critical path: a phase that some member waited in for others to finish (a slow link)
  // is a wait on the member that finished it last, as an arrival is a wait on the last to arrive.
  // When several finished last together (a node's slow links), that is the one whose finish
  // completed the phase, as at an arrival. Called before account_waiting, which clears the ready
  // times.
  void record_phase_sync(const CollectiveInstance& in, uint64_t key, double now, int last_rank) {
    double latest_waiting = -1;  // the latest a waiting member was ready: its wait is the least
    for (const auto& [rank, at] : in.ready_at)
      if (now > at) latest_waiting = std::max(latest_waiting, at);
    if (latest_waiting >= 0) phase_syncs_[key].push_back(PhaseSync{now, last_rank, now - latest_waiting});
  }

  // Members that were ready before `now` waited inside the collective for the last one to get
  // there (or to finish the phase).
  void account_waiting(CollectiveInstance& in, double now, int op) {
    if (in.members <= 1) return;
    if (wait_at_op_.empty()) wait_at_op_.assign(program_.ops.size(), 0.0);
    for (const auto& [rank, at] : in.ready_at) {
      if (!(now > at)) continue;
      ranks_[static_cast<size_t>(rank)].stats.collective_wait_us += now - at;
      wait_at_op_[static_cast<size_t>(op)] += now - at;
    }
    in.ready_at.clear();
  }

  template <typename Fn>
  void for_each_member(const CollectiveInstance& in, int rank, Fn&& fn) {
    if (in.members <= 1) {
      fn(ranks_[static_cast<size_t>(rank)]);
      return;
    }
    for (int i = 0; i < in.group->size; ++i) fn(ranks_[static_cast<size_t>(in.group->member(rank, i))]);
  }

  CollectiveInstance& instance_of(RankState& r, int op) {
    RunningCollective& rc = collective_slot(r, op);
    if (rc.own_instance) return rc.own;
    const auto it = instances_.find(rc.instance);
    if (it == instances_.end()) broken("a running collective without its instance", op);
    return it->second;
  }

  void begin_phase(RankState& r, int op) {
    RunningCollective& rc = collective_slot(r, op);
    const CollectivePlan& plan = instance_of(r, op).plan;
    if (rc.phase >= plan.count) {
      // Done (or free: a single-rank group): end through an event at this time.
      schedule(engine_.now_us(), kOpDone, rank_index(r), op);
      return;
    }
    const double latency = plan.phases[rc.phase].latency_us;
    if (latency > 0) {
      schedule(engine_.now_us() + latency, kLatencyDone, rank_index(r), op);
    } else {
      begin_transfer(r, op);
    }
  }

  void begin_transfer(RankState& r, int op) {
    RunningCollective& rc = collective_slot(r, op);
    if (rc.op != op) broken("transfer for a collective that is not running", op);
    const sim::CollectivePhase& ph = instance_of(r, op).plan.phases[rc.phase];
    if (ph.link_bytes > 0) {
      r.network.start_flow(engine_.now_us(), ph.link, ph.link_bytes, op);
      schedule_flows(r);
    } else {
      phase_done(r, op);
    }
  }

  // This member finished its part of the current phase; the next starts when every member has.
  void phase_done(RankState& r, int op) {
    const double now = engine_.now_us();
    const uint64_t key = collective_slot(r, op).instance;
    const bool shared = !collective_slot(r, op).own_instance;
    CollectiveInstance& in = instance_of(r, op);
    if (in.members > 1) in.ready_at.emplace_back(rank_index(r), now);
    if (++in.done_in_phase < in.members) return;
    in.done_in_phase = 0;
    if (!spans_.empty() && in.members > 1) record_phase_sync(in, key, now, rank_index(r));
    account_waiting(in, now, op);
    bool last_phase = false;
    for_each_member(in, rank_index(r), [&](RankState& m) {
      RunningCollective& rc = collective_slot(m, op);
      last_phase = ++rc.phase >= in.plan.count;
      begin_phase(m, op);
    });
    if (last_phase && shared) instances_.erase(key);
  }

  // Returns the streams whose head may have become ready (sim/streams.h).
  unsigned finish_op(RankState& r, int id) {
    const double now = engine_.now_us();
    const Op& op = program_.ops[id];
    OpInterval* iv = interval(r, id);
    if (iv != nullptr) iv->end_us = now;
    if (step_ != nullptr) step_->add(op, r.started_us[static_cast<int>(op.stream)], now);
    if (!spans_.empty()) spans_[span_index(r, id) + 1] = now;
    r.stats.step_us = std::max(r.stats.step_us, now);
    const double latency = scenario_.cluster.event_latency_us;
    const unsigned touched = r.streams.finish(id, latency <= 0);
    if (step_ != nullptr && step_->settle_due()) {
      // Ops still to end started on a busy stream, or start from now on.
      double earliest_us = now;
      for (int s = 0; s < kNumStreams; ++s)
        if (r.streams.busy(s)) earliest_us = std::min(earliest_us, r.started_us[static_cast<size_t>(s)]);
      step_->settle(earliest_us);
    }
    if (latency > 0) schedule(now + latency, kSignal, rank_index(r), id);
    if (op.kind == OpKind::Compute) r.stats.compute_busy_us += now - r.started_us[static_cast<int>(op.stream)];
    if (is_collective(op.kind)) {
      collective_slot(r, id).op = -1;
      set_collective_moving(r, false);
      if (--r.collectives_in_flight == 0) {
        r.compute.set_comm_in_flight(now, false);
        schedule_compute(r);
      }
    }
    return touched;
  }

  // (Re)schedules the end of every running compute op / live flow at its current projection. A
  // compute end is its stream's timer, moved in place; a flow's older end events carry older
  // versions and are ignored.
  void schedule_compute(RankState& r) {
    for (int i = 0; i < r.compute.running_count(); ++i) schedule_compute_end(r, i);
  }
  // A compute op's end moves each time collectives start or stop on its rank (no stale event left
  // in the queue).
  void schedule_compute_end(RankState& r, int running) {
    const int op = r.compute.running_op(running);
    int& timer = r.compute_timer[static_cast<int>(program_.ops[op].stream)];
    if (timer < 0) timer = engine_.add_timer();
    engine_.set_timer(timer, r.compute.projected_end_us(running), kComputeDone | (rank_index(r) << kKindBits), op,
                      r.compute.version(running));
  }
  void schedule_flows(RankState& r) {
    for (int slot : r.network.live_slots())
      schedule(r.network.projected_end_us(slot), kFlowDone, rank_index(r), slot, r.network.version(slot));
  }

  const Scenario& scenario_;
  const Program& program_;
  std::unique_ptr<sim::CostModel> cost_;
  const RankVariation* variation_;
  StepAccumulator* step_;  // null: intervals kept
  sim::StreamPlan plan_;
  sim::Engine engine_;
  sim::HostThread host_;
  sim::MemoryTracker memory_;  // rank 0's
  sim::MemoryTracker stream_memory_;  // rank 0's, as its streams reach the markers (drawn only)
  const bool draw_memory_by_stream_;  // a Timeline is made and memory is counted in host order
  std::vector<RankState> ranks_;
  std::unordered_map<uint64_t, CollectiveInstance> instances_;
  HugePageVector<OpInterval> intervals_;  // per recorded rank, every op
  HugePageVector<double> issue_us_;    // every span kept: each op's issue time (the same on every rank)
  HugePageVector<double> spans_;       //   and each rank's start and end of it
  HugePageVector<double> launches_done_us_;  // cluster.host_launch > 0: when the host made each op's last launch
  struct SyncRecord {
    double sync_us = 0;  // when the last member arrived and data began to move
    int last_rank = -1;  // that member
  };
  std::unordered_map<uint64_t, SyncRecord> syncs_;  // every span kept: per collective instance
  struct PhaseSync {
    double sync_us = 0;       // when the last member finished the phase
    int last_rank = -1;       // the member whose finish completed it (one of the last)
    double least_wait_us = 0; // the shortest wait of the others (each waited at least this)
  };
  std::unordered_map<uint64_t, std::vector<PhaseSync>> phase_syncs_;  // every span kept: per instance
  std::vector<double> wait_at_op_;     // per op: waiting at it, summed over members and instances
};

std::unique_ptr<sim::CostModel> make_cost_model(const Scenario& scenario, const SimOptions& options) {
  if (options.profile != nullptr) return std::make_unique<sim::ProfileCostModel>(*options.profile);
  return std::make_unique<sim::AnalyticalCostModel>(scenario.cluster);
}

// With a calibrated profile, its measured issue overhead, compute slow-down, event latency and
// compute overhead replace the scenario's cluster values (sim/profile_cost_model.h).
Scenario with_profile(const Scenario& scenario, const ClusterProfile& profile) {
  Scenario s = scenario;
  s.cluster.launch_overhead_us = profile.issue_overhead_us;
  s.cluster.compute_slowdown_during_comm = profile.compute_slowdown_during_comm;
  s.cluster.comm_slowdown_during_compute = profile.comm_slowdown_during_compute;
  s.cluster.event_latency_us = profile.event_latency_us;
  s.cluster.compute_overhead_us = profile.compute_overhead_us;
  return s;
}

}  // namespace

namespace {

// `consumed`: the same Program when the caller gave it up; its ops then move into the Timeline.
// `step` (with `peak_memory_bytes`): the representative rank's ops go to it as they end, and the
// Timeline returned is its header only: no ops, intervals or memory samples.
Timeline simulate_program(const Scenario& given, const Program& program, const SimOptions& options, Program* consumed,
                          StepAccumulator* step = nullptr, int64_t* peak_memory_bytes = nullptr) {
  const Scenario calibrated = options.profile ? with_profile(given, *options.profile) : Scenario{};
  const Scenario& scenario = options.profile ? calibrated : given;
  if (!(scenario.cluster.launch_overhead_us >= 0) || !std::isfinite(scenario.cluster.launch_overhead_us))
    throw InputError("cluster.launch_overhead", "the launch overhead must be a finite time >= 0");
  for (auto [where, f] : {std::pair{"cluster.compute_slowdown_during_comm", scenario.cluster.compute_slowdown_during_comm},
                          std::pair{"cluster.comm_slowdown_during_compute", scenario.cluster.comm_slowdown_during_compute}})
    if (!(f >= 1.0) || !std::isfinite(f)) throw InputError(where, "the slow-down factor must be a finite number >= 1");
  for (auto [where, t] : {std::pair{"cluster.event_latency", scenario.cluster.event_latency_us},
                          std::pair{"cluster.compute_overhead", scenario.cluster.compute_overhead_us},
                          std::pair{"cluster.host_launch", scenario.cluster.host_launch_us}})
    if (!(t >= 0) || !std::isfinite(t)) throw InputError(where, "must be a finite time >= 0");
  if (scenario.cluster.gpus_per_node < 1) throw InputError("cluster.gpus_per_node", "must be at least 1");
  if (program.groups.empty()) throw InputError("groups", "the program needs its group table");
  for (const GroupInfo& g : program.groups)
    if (g.size < 1 || g.stride < 1) throw InputError("groups", "group \"" + g.name + "\" needs size and stride >= 1");
  if (program.static_memory_bytes < 0) throw InputError("static_memory_bytes", "must be >= 0");
  const size_t memory_markers = validate_ops(program);
  const int ranks = options.every_rank ? program.world_size : 1;
  if (ranks < 1) throw InputError("world_size", "must be at least 1");
  std::vector<int> recorded = options.timeline_ranks;
  if (!options.every_rank && (options.variation != nullptr || !recorded.empty()))
    throw InputError("variation", "variation between ranks and a choice of ranks need every rank simulated");
  if (step != nullptr && (options.every_rank || options.choose_timeline_ranks || options.rank_report != nullptr))
    broken("metrics without a Timeline are of one representative rank", -1);
  if (recorded.empty() && step == nullptr)
    for (int r = 0; r < ranks; ++r) recorded.push_back(r);
  std::sort(recorded.begin(), recorded.end());
  recorded.erase(std::unique(recorded.begin(), recorded.end()), recorded.end());
  if (!recorded.empty() && (recorded.front() < 0 || recorded.back() >= ranks))
    throw InputError("timeline_ranks", "rank " + std::to_string(recorded.front() < 0 ? recorded.front() : recorded.back()) +
                                           " is not in the world of " + std::to_string(ranks) + " ranks");
  if (const RankVariation* v = options.variation) {
    for (const auto* factors : {&v->compute_factor, &v->bandwidth_factor})
      if (!factors->empty() && factors->size() != static_cast<size_t>(ranks))
        throw InputError("variation", "needs one factor per rank (" + std::to_string(ranks) + "), got " + std::to_string(factors->size()));
    for (double f : v->compute_factor)
      if (!(f > 0) || !std::isfinite(f)) throw InputError("variation", "compute factors must be finite and > 0");
    for (double f : v->bandwidth_factor)
      if (!(f > 0 && f <= 1)) throw InputError("variation", "bandwidth factors must be in (0, 1]");
  }

  const bool choose_later = static_cast<bool>(options.choose_timeline_ranks);
  if (choose_later && (!options.every_rank || !options.timeline_ranks.empty()))
    throw InputError("timeline_ranks", "choosing the ranks after the run needs every rank and no list given");
  Simulation sim(scenario, program, make_cost_model(scenario, options), options.variation, ranks, recorded, choose_later,
                 memory_markers, step);
  const auto loop_start = std::chrono::steady_clock::now();
  sim.run();
  if (options.event_loop_seconds != nullptr)
    *options.event_loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  if (options.events_processed != nullptr) *options.events_processed = sim.events_processed();
  RankReport report;
  if (options.rank_report != nullptr || choose_later) {
    report.ranks = sim.rank_stats();
    report.critical_path = sim.critical_path();
    report.wait_at_op_us = sim.wait_at_op();
    if (report.wait_at_op_us.empty()) report.wait_at_op_us.assign(program.ops.size(), 0.0);
  }
  HugePageVector<OpInterval> intervals;
  if (choose_later) {
    std::vector<int> chosen = options.choose_timeline_ranks(report);
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    if (chosen.empty() || chosen.front() < 0 || chosen.back() >= ranks) broken("chosen timeline ranks outside the world", -1);
    intervals = sim.intervals_of(chosen);
  } else {
    intervals = sim.take_intervals();
  }
  if (options.rank_report != nullptr) *options.rank_report = std::move(report);

  Timeline t;
  t.source = "predicted";
  t.backend = "sim";
  t.scenario = scenario.name;
  t.ranks = ranks;
  t.iterations = 1;
  t.reported_iteration = 0;
  t.scale = 1.0;
  set_timeline_scenario(t, scenario);
  t.allocator_pool_peaks_bytes = sim.pool_peaks_bytes();
  t.memory_at_peak = sim.memory_at_peak();
  if (step != nullptr) {
    *peak_memory_bytes = sim.peak_memory_bytes();
    t.host_launches_per_step = program.host_launches_per_step();  // set_timeline_ops does it below
    return t;
  }
  t.intervals = std::move(intervals);
  t.memory = sim.take_memory();
  if (!program.memory_follows_streams) t.memory_by_stream = sim.take_memory_by_stream();
  if (consumed != nullptr) set_timeline_ops(t, std::move(*consumed));
  else set_timeline_ops(t, program);
  return t;
}

}  // namespace

Timeline simulate(const Scenario& scenario, const Program& program, const SimOptions& options) {
  return simulate_program(scenario, program, options, nullptr);
}

Timeline simulate(const Scenario& scenario, Program&& program, const SimOptions& options) {
  return simulate_program(scenario, program, options, &program);
}

Metrics simulate_metrics(const Scenario& scenario, const Program& program, const SimOptions& options, Timeline* header) {
  StepAccumulator step;
  int64_t peak_memory_bytes = 0;
  Timeline t = simulate_program(scenario, program, options, nullptr, &step, &peak_memory_bytes);
  if (step.op_count() == 0) throw InputError("ops", "the program has no ops");
  Metrics m = step.finish(t, peak_memory_bytes);
  if (header != nullptr) *header = std::move(t);
  return m;
}

}  // namespace shardline
