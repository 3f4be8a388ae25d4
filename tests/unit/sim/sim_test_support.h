// Hand-built Programs and Scenarios for the simulator tests (no scheduler involved).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <optional>
#include <vector>

#include "core/program.h"
#include "core/scenario.h"
#include "core/schedule.h"

namespace shardline::simtest {

// A 2-node cluster, 8 GPUs per node; numbers chosen so hand computation is easy.
inline Scenario test_scenario() {
  Scenario s;
  s.name = "sim-test";
  s.cluster.name = "test-cluster";
  s.cluster.gpu.name = "test-gpu";
  s.cluster.gpu.memory_bytes = int64_t{80} << 30;
  s.cluster.gpu.copy_bandwidth_bytes_per_s = 1e12;  // 1 MB per us
  s.cluster.nodes = 2;
  s.cluster.gpus_per_node = 8;
  s.cluster.intra_node = LinkSpec{100e9, 2.0};
  s.cluster.inter_node = LinkSpec{25e9, 10.0};
  s.cluster.launch_overhead_us = 0.0;
  s.cluster.compute_slowdown_during_comm = 1.0;
  s.cluster.hierarchical_collectives = false;
  s.mesh.shard = 8;
  s.mesh.replicate = 2;
  s.run.memory_margin = 0.1;
  return s;
}

class ProgramBuilder {
 public:
  explicit ProgramBuilder(int shard_size = 8, int replicate_size = 2) {
    p_.scenario = "sim-test";
    p_.world_size = shard_size * replicate_size;
    p_.groups = fsdp_group_table(shard_size, replicate_size, 0);
    p_.streams = fsdp2_stream_table();
  }
  int compute(double us, std::vector<int> deps = {}, StreamId stream = StreamId::Compute) {
    Op& op = add(OpKind::Compute, stream, std::move(deps));
    op.set_compute_us(us);
    return p_.id_of(op);
  }
  // copy_bandwidth 1e12 B/s: 1e6 bytes per microsecond.
  int copy_in(int64_t bytes, std::vector<int> deps = {}) {
    Op& op = add(OpKind::CopyIn, StreamId::CopyIn, std::move(deps));
    op.set_bytes(bytes);
    return p_.id_of(op);
  }
  int copy_out(int64_t bytes, std::vector<int> deps = {}) {
    Op& op = add(OpKind::CopyOut, StreamId::Compute, std::move(deps));
    op.set_bytes(bytes);
    return p_.id_of(op);
  }
  int collective(OpKind kind, int64_t bytes, CommGroup group, int group_size, std::vector<int> deps = {}) {
    Op& op = add(kind, default_stream(kind), std::move(deps));
    op.set_bytes(bytes);
    op.group = group;
    // The group table follows the sizes the collectives name (a test states one size per group).
    p_.groups[static_cast<size_t>(group)].size = group_size;
    return p_.id_of(op);
  }
  int alloc(int64_t bytes, StreamId stream, std::vector<int> deps = {}) {
    Op& op = add(OpKind::Alloc, stream, std::move(deps));
    op.set_bytes(bytes);
    op.pool = stream;
    return p_.id_of(op);
  }
  // `pool`: the stream its alloc was issued on (default: this free's own).
  int free(int64_t bytes, StreamId stream, std::vector<int> deps = {}, std::optional<StreamId> pool = std::nullopt) {
    Op& op = add(OpKind::Free, stream, std::move(deps));
    op.set_bytes(bytes);
    op.pool = pool.value_or(stream);
    return p_.id_of(op);
  }
  Op& last() { return p_.ops.back(); }
  Program& program() { return p_; }

  static StreamId default_stream(OpKind kind) {
    switch (kind) {
      case OpKind::AllGather: return StreamId::AllGather;
      case OpKind::ReduceScatter: return StreamId::ReduceScatter;
      case OpKind::AllReduce: return StreamId::AllReduce;
      default: return StreamId::Compute;
    }
  }

 private:
  Op& add(OpKind kind, StreamId stream, std::vector<int> deps) {
    Op op;
    op.kind = kind;
    op.stream = stream;
    p_.set_name(op, std::string(op_kind_name(kind)) + " " + std::to_string(p_.ops.size()));
    p_.add_op(std::move(op), deps);
    return p_.ops.back();
  }
  Program p_;
};

}  // namespace shardline::simtest
