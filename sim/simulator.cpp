// simulate(): wires the pieces together. The engine pops events; the host issues ops; the
// stream set says what may start; each started op is timed by its kind:
//   Alloc/Free: zero duration, memory changes at start;
//   CopyIn/CopyOut: cost_model.copy_time_us(bytes), or a flow of copy_link_bytes(bytes) on
//   the intra-node link where copies share the processors with collectives (mpi profiles);
//   Compute: compute_overhead_us + compute_us of work, slowed while collectives are in flight
//   (sim/compute.h);
//   collectives: the cost model's phases, each a latency then a flow on a link (sim/network.h);
//   while any compute op runs, links carry 1 / cluster.comm_slowdown_during_compute of their
//   capacity (flows are re-rated when the first compute op starts and the last one ends).
// Zero-duration ops end through an event at the same time (ordered by sequence number).
// An op's event fires cluster.event_latency_us after it ends (0: at once); only then may ops
// that wait for it start (the stream itself is free at the end).
#include "sim/simulator.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
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

// What simulate() relies on beyond the stream bookkeeping's checks.
void validate_ops(const Program& program) {
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const int id = static_cast<int>(i);
    if (op.bytes < 0) throw InputError(op_path(id) + ".bytes", "bytes must be >= 0, got " + std::to_string(op.bytes));
    if (op.kind == OpKind::Compute && (!(op.compute_us >= 0) || !std::isfinite(op.compute_us)))
      throw InputError(op_path(id) + ".compute_us", "a compute op needs a finite duration >= 0");
    if (is_collective(op.kind) && static_cast<size_t>(op.group) >= program.groups.size())
      throw InputError(op_path(id) + ".group", "names no group of the group table");
    if (is_collective(op.kind) && op.group_size != program.group_of(op).size)
      throw InputError(op_path(id) + ".group_size", "is " + std::to_string(op.group_size) + " but the group table's " +
                                                         program.group_of(op).name + " group has " +
                                                         std::to_string(program.group_of(op).size) + " ranks");
  }
}

struct RunningCollective {
  int op = -1;
  CollectivePlan plan;
  int phase = 0;
};

class Simulation {
 public:
  Simulation(const Scenario& scenario, const Program& program, std::unique_ptr<sim::CostModel> cost)
      : scenario_(scenario),
        program_(program),
        cost_(std::move(cost)),
        streams_(program),
        host_(program, scenario.cluster.launch_overhead_us),
        compute_(scenario.cluster.compute_slowdown_during_comm),
        network_({cost_->link_bandwidth_bytes_per_s(sim::LinkClass::IntraNode),
                  cost_->link_bandwidth_bytes_per_s(sim::LinkClass::InterNode)}),
        memory_(program.static_memory_bytes) {
    const size_t n = program.ops.size();
    intervals_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      intervals_[i].op = static_cast<int>(i);
      intervals_[i].rank = 0;
      intervals_[i].iteration = 0;
    }
    engine_.reserve(64);
  }

  void run() {
    if (host_.next_op() >= 0) engine_.schedule_at(host_.next_issue_us(), kHostIssue, host_.next_op());
    Event e;
    while (engine_.pop(e)) dispatch(e);
    if (streams_.finished_count() != streams_.op_count()) broken("simulation ended with unfinished ops", -1);
  }

  std::vector<OpInterval> take_intervals() { return std::move(intervals_); }
  uint64_t events_processed() const { return engine_.events_processed(); }
  std::vector<MemorySample> take_memory() { return memory_.take_samples(); }

 private:
  void dispatch(const Event& e) {
    const double now = engine_.now_us();
    switch (e.kind) {
      case kHostIssue: {
        // Issue every op due now in one go (markers are free for the host), then schedule
        // the next issue.
        while (host_.next_op() >= 0 && host_.next_issue_us() <= now) {
          const int op = host_.next_op();
          intervals_[op].issue_us = now;
          streams_.issue(op);
          host_.issue_next();
        }
        if (host_.next_op() >= 0) engine_.schedule_at(host_.next_issue_us(), kHostIssue, host_.next_op());
        break;
      }
      case kOpDone:
        finish_op(e.target);
        break;
      case kComputeDone:
        if (!compute_.is_current(e.target, e.version)) return;  // re-rated since
        compute_.finish(e.target);
        if (compute_.running_count() == 0) set_compute_running(false);
        finish_op(e.target);
        break;
      case kLatencyDone:
        begin_transfer(e.target);
        break;
      case kSignal:
        streams_.signal(e.target);
        break;
      case kFlowDone: {
        if (!network_.is_current(e.target, e.version)) return;  // re-rated since
        const int op = network_.owner(e.target);
        network_.finish_flow(now, e.target);
        schedule_flows();
        if (is_collective(program_.ops[op].kind)) next_phase(op);
        else finish_op(op);  // a copy that shared the link (CostModel::copy_link_bytes)
        break;
      }
      default:
        broken("unknown event kind", e.target);
    }
    start_ready();
  }

  void start_ready() {
    for (int s = 0; s < kNumStreams; ++s) {
      const int op = streams_.ready_head(s);
      if (op >= 0) start_op(op);
    }
  }

  void start_op(int id) {
    const double now = engine_.now_us();
    const Op& op = program_.ops[id];
    streams_.start(id);
    intervals_[id].start_us = now;
    switch (op.kind) {
      case OpKind::Alloc:
        memory_.alloc(now, op.bytes);
        engine_.schedule_at(now, kOpDone, id);
        break;
      case OpKind::Free:
        memory_.free(now, op.bytes);
        engine_.schedule_at(now, kOpDone, id);
        break;
      case OpKind::CopyIn:
      case OpKind::CopyOut:
        if (const double link_bytes = cost_->copy_link_bytes(op.bytes); link_bytes > 0) {
          network_.start_flow(now, sim::LinkClass::IntraNode, link_bytes, id);
          schedule_flows();
        } else {
          engine_.schedule_at(now + cost_->copy_time_us(op.bytes), kOpDone, id);
        }
        break;
      case OpKind::Compute:
        if (compute_.running_count() == 0) set_compute_running(true);
        compute_.start(now, id, op.compute_us + scenario_.cluster.compute_overhead_us);
        engine_.schedule_at(compute_.projected_end_us(compute_.running_count() - 1), kComputeDone, id,
                            compute_.version(compute_.running_count() - 1));
        break;
      case OpKind::AllGather:
      case OpKind::ReduceScatter:
      case OpKind::AllReduce: {
        RunningCollective& rc = collective_slot(id);
        rc.op = id;
        rc.phase = 0;
        const sim::GroupPlacement group = sim::place_group(program_.group_of(op), scenario_.cluster.gpus_per_node);
        rc.plan = cost_->collective(collective_kind(op.kind), op.bytes, group);
        if (collectives_in_flight_++ == 0) {
          compute_.set_comm_in_flight(now, true);
          schedule_compute();
        }
        begin_phase(id);
        break;
      }
    }
  }

  // Transfers (and, on mpi profiles, copies) slow down while compute runs.
  void set_compute_running(bool running) {
    const double slowdown = scenario_.cluster.comm_slowdown_during_compute;
    if (slowdown == 1.0) return;
    network_.set_capacity_scale(engine_.now_us(), running ? 1.0 / slowdown : 1.0);
    schedule_flows();
  }

  RunningCollective& collective_slot(int op) { return collectives_[static_cast<int>(program_.ops[op].stream)]; }

  void begin_phase(int op) {
    RunningCollective& rc = collective_slot(op);
    if (rc.phase >= rc.plan.count) {
      // Done (or free: a single-rank group): end through an event at this time.
      engine_.schedule_at(engine_.now_us(), kOpDone, op);
      return;
    }
    const double latency = rc.plan.phases[rc.phase].latency_us;
    if (latency > 0) {
      engine_.schedule_at(engine_.now_us() + latency, kLatencyDone, op);
    } else {
      begin_transfer(op);
    }
  }

  void begin_transfer(int op) {
    RunningCollective& rc = collective_slot(op);
    if (rc.op != op) broken("transfer for a collective that is not running", op);
    const sim::CollectivePhase& ph = rc.plan.phases[rc.phase];
    if (ph.link_bytes > 0) {
      network_.start_flow(engine_.now_us(), ph.link, ph.link_bytes, op);
      schedule_flows();
    } else {
      next_phase(op);
    }
  }

  void next_phase(int op) {
    ++collective_slot(op).phase;
    begin_phase(op);
  }

  void finish_op(int id) {
    const double now = engine_.now_us();
    intervals_[id].end_us = now;
    const double latency = scenario_.cluster.event_latency_us;
    streams_.finish(id, latency <= 0);
    if (latency > 0) engine_.schedule_at(now + latency, kSignal, id);
    if (is_collective(program_.ops[id].kind)) {
      collective_slot(id).op = -1;
      if (--collectives_in_flight_ == 0) {
        compute_.set_comm_in_flight(now, false);
        schedule_compute();
      }
    }
  }

  // (Re)schedules the end of every running compute op / live flow at its current projection;
  // older events for them carry older versions and are ignored.
  void schedule_compute() {
    for (int i = 0; i < compute_.running_count(); ++i)
      engine_.schedule_at(compute_.projected_end_us(i), kComputeDone, compute_.running_op(i), compute_.version(i));
  }
  void schedule_flows() {
    for (int slot : network_.live_slots())
      engine_.schedule_at(network_.projected_end_us(slot), kFlowDone, slot, network_.version(slot));
  }

  const Scenario& scenario_;
  const Program& program_;
  std::unique_ptr<sim::CostModel> cost_;
  sim::Engine engine_;
  sim::StreamSet streams_;
  sim::HostThread host_;
  sim::ComputeModel compute_;
  sim::Network network_;
  sim::MemoryTracker memory_;
  std::array<RunningCollective, kNumStreams> collectives_{};  // one per stream at most
  int collectives_in_flight_ = 0;
  std::vector<OpInterval> intervals_;
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
Timeline simulate_program(const Scenario& given, const Program& program, const SimOptions& options, Program* consumed) {
  const Scenario calibrated = options.profile ? with_profile(given, *options.profile) : Scenario{};
  const Scenario& scenario = options.profile ? calibrated : given;
  if (!(scenario.cluster.launch_overhead_us >= 0) || !std::isfinite(scenario.cluster.launch_overhead_us))
    throw InputError("cluster.launch_overhead", "the launch overhead must be a finite time >= 0");
  for (auto [where, f] : {std::pair{"cluster.compute_slowdown_during_comm", scenario.cluster.compute_slowdown_during_comm},
                          std::pair{"cluster.comm_slowdown_during_compute", scenario.cluster.comm_slowdown_during_compute}})
    if (!(f >= 1.0) || !std::isfinite(f)) throw InputError(where, "the slow-down factor must be a finite number >= 1");
  for (auto [where, t] : {std::pair{"cluster.event_latency", scenario.cluster.event_latency_us},
                          std::pair{"cluster.compute_overhead", scenario.cluster.compute_overhead_us}})
    if (!(t >= 0) || !std::isfinite(t)) throw InputError(where, "must be a finite time >= 0");
  if (scenario.cluster.gpus_per_node < 1) throw InputError("cluster.gpus_per_node", "must be at least 1");
  if (program.groups.empty()) throw InputError("groups", "the program needs its group table");
  for (const GroupInfo& g : program.groups)
    if (g.size < 1 || g.stride < 1) throw InputError("groups", "group \"" + g.name + "\" needs size and stride >= 1");
  if (program.static_memory_bytes < 0) throw InputError("static_memory_bytes", "must be >= 0");
  validate_ops(program);

  Simulation sim(scenario, program, make_cost_model(scenario, options));
  sim.run();
  if (options.events_processed != nullptr) *options.events_processed = sim.events_processed();

  Timeline t;
  t.source = "predicted";
  t.backend = "sim";
  t.scenario = scenario.name;
  t.ranks = 1;
  t.iterations = 1;
  t.reported_iteration = 0;
  t.scale = 1.0;
  t.memory_capacity_bytes = scenario.cluster.gpu.memory_bytes;
  t.workload = workload_of(scenario);
  t.memory_reserve = memory_reserve_of(scenario);
  t.memory_margin = scenario.run.memory_margin;
  t.intervals = sim.take_intervals();
  t.memory = sim.take_memory();
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

}  // namespace shardline
