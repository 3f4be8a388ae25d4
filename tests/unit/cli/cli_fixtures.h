// Hand-built inputs the CLI tests feed to compare, regress and track: a two-op timeline and a
// metrics document, each with the few numbers a test varies.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "core/timeline.h"

namespace shardline::clitest {

// One compute op and one all-gather on `ranks` ranks for `iterations` iterations; every step
// lasts `step_us` (the all-gather half of it); iteration i is issued and starts at 1000 us x i.
inline Timeline two_op_timeline(double step_us, const std::string& source, int ranks = 1, int iterations = 1) {
  Timeline t;
  t.source = source;
  t.backend = source == "measured" ? "mpi" : "sim";
  t.scenario = "cli-hand";
  t.ranks = ranks;
  t.iterations = iterations;
  t.reported_iteration = iterations - 1;
  Op c;
  c.kind = OpKind::Compute;
  t.set_name(c, "fwd u0");
  Op a;
  a.kind = OpKind::AllGather;
  a.stream = StreamId::AllGather;
  a.group = CommGroup::Shard;
  a.set_bytes(4096);
  t.set_name(a, "ag u0");
  t.ops = {c, a};
  t.group_sizes[static_cast<size_t>(CommGroup::Shard)] = 2;
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < iterations; ++i) {
      const double origin = 1000.0 * i;
      t.intervals.push_back({0, r, i, origin, origin, origin + step_us});
      t.intervals.push_back({1, r, i, origin, origin, origin + step_us / 2});
    }
  return t;
}

// A metrics.json document: the step, its exposed communication and the overlap efficiency.
inline nlohmann::json metrics_json(double step_us, double exposed_us, double efficiency) {
  return {{"step_time_us", step_us},
          {"compute_busy_us", step_us - exposed_us},
          {"comm_busy_us", 1000.0},
          {"exposed_comm_us", exposed_us},
          {"overlap_efficiency", efficiency},
          {"forward_us", step_us / 3},
          {"backward_us", step_us * 2 / 3},
          {"peak_memory_bytes", 1 << 30},
          {"memory_capacity_bytes", 80LL << 30},
          {"fits_memory", true},
          {"by_kind", nlohmann::json::object()}};
}

}  // namespace shardline::clitest
