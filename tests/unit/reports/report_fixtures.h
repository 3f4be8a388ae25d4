// Hand-built scenarios, programs and timelines for the reports tests, and a scratch folder.
#pragma once
#include <filesystem>
#include <random>
#include <string>

#include <unistd.h>

#include "core/program.h"
#include "core/schedule.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline::testing_fixtures {

inline Scenario tiny_scenario() {
  Scenario s;
  s.name = "tiny-report";
  s.description = "two units <on> one & only node";
  s.cluster.name = "box";
  s.cluster.gpu.name = "H100";
  s.cluster.gpu.memory_bytes = 1000;
  s.cluster.gpus_per_node = 2;
  s.mesh.shard = 2;
  return s;
}

inline Op op(OpLabels& labels, OpKind kind, StreamId stream, Phase phase, int64_t bytes, std::string name, int unit = 0) {
  Op o;
  o.kind = kind;
  o.stream = stream;
  o.phase = phase;
  if (kind != OpKind::Compute) o.set_bytes(bytes);
  o.unit = unit;
  o.bucket = is_collective(kind) ? unit : -1;
  if (is_collective(kind)) o.group = CommGroup::Shard;  // a group of 2 (tiny_program's table)
  set_op_name(labels, o, name);
  return o;
}

inline Program tiny_program() {
  Program p;
  p.scenario = "tiny-report";
  p.world_size = 2;
  p.groups = fsdp_group_table(2, 1, 0);
  p.streams = fsdp2_stream_table();
  p.units = {"u0"};
  p.params = {{"u0.w", 0, 8, 4}};
  p.static_memory_bytes = 4 * 4 + 4 * 8;  // the shard in fp32 (master) and AdamW's two states
  // A chain: each op depends on the one before.
  p.add_op(op(p.labels, OpKind::CopyIn, StreamId::CopyIn, Phase::Forward, 8, "ci u0"));
  p.add_op(op(p.labels, OpKind::AllGather, StreamId::AllGather, Phase::Forward, 16, "ag u0"), {0});
  p.add_op(op(p.labels, OpKind::Compute, StreamId::Compute, Phase::Forward, 0, "fwd u0"), {1});
  p.add_op(op(p.labels, OpKind::Compute, StreamId::Compute, Phase::Backward, 0, "bwd u0"), {2});
  p.add_op(op(p.labels, OpKind::ReduceScatter, StreamId::ReduceScatter, Phase::Backward, 32, "rs u0"), {3});
  p.add_op(op(p.labels, OpKind::AllReduce, StreamId::AllReduce, Phase::Backward, 16, "ar u0"), {4});
  p.add_op(op(p.labels, OpKind::Free, StreamId::Compute, Phase::Finalize, 16, "free u0"), {5});
  const int shard = static_cast<int>(CommGroup::Shard), none = static_cast<int>(CommGroup::None);
  p.buffers = {{"param_shard", 2, shard, 1, BufferInit::Shared},
               {"unsharded_params", 2, shard, 2, BufferInit::None},
               {"unsharded_grads", 2, shard, 2, BufferInit::PerRank},
               {"grad_shard", 2, none, 1, BufferInit::PerRank}};
  p.ops[0].link = 1;
  p.ops[0].src_buffer = p.ops[1].src_buffer = 0;
  p.ops[1].dst_buffer = 1;
  p.ops[4].src_buffer = 2;
  p.ops[4].dst_buffer = p.ops[5].src_buffer = p.ops[5].dst_buffer = 3;
  p.ops[4].reduction = Reduction::Avg;
  p.ops[5].reduction = Reduction::Avg;
  return p;
}

// Two ranks, one iteration; rank 1 is slower. Memory peaks at `peak_bytes` (capacity 1000, margin 0.1).
inline Timeline tiny_timeline(int64_t peak_bytes = 600) {
  Timeline t;
  t.scenario = "tiny-report";
  t.ranks = 2;
  t.memory_capacity_bytes = 1000;
  t.memory_margin = 0.1;
  set_timeline_ops(t, tiny_program());
  for (int r = 0; r < 2; ++r) {
    const double d = r * 5;
    t.intervals.push_back({0, r, 0, 0, 1, 3});
    t.intervals.push_back({1, r, 0, 1, 3, 10});
    t.intervals.push_back({2, r, 0, 2, 10, 30 + d});
    t.intervals.push_back({3, r, 0, 3, 30 + d, 50 + d});
    t.intervals.push_back({4, r, 0, 4, 50 + d, 60 + d});
    t.intervals.push_back({5, r, 0, 5, 60 + d, 70 + d});
    t.intervals.push_back({6, r, 0, 6, 70 + d, 70 + d});
  }
  t.memory = {{0, 100}, {3, 300}, {30, peak_bytes}, {70, 100}};
  return t;
}

// A fresh folder under the system temp folder, removed with everything in it at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("shardline-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace shardline::testing_fixtures
