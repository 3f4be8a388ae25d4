// Hand-built FSDP-like Programs for the executor's tests (the real scheduler lives in core/;
// these only give the runner realistic shapes: fused or unfused, zero-copy, buckets that split
// a parameter, HSDP all-reduces, backward all-gathers over a reshard group).
#pragma once
#include <string>
#include <vector>

#include "core/program.h"
#include "core/schedule.h"

namespace shardline::testing {

struct TestProgramSpec {
  int shard = 2;
  int replicate = 1;
  int units = 3;
  int params_per_unit = 2;
  long numel = 1000;        // first parameter's element count; others vary around it
  bool fused = true;
  bool zero_copy = false;
  bool split = false;       // fused: a second bucket per unit that cuts parameter 0 in half
  int reshard = 0;          // > 0: backward all-gathers over reshard groups of this size
  bool average = true;
  DType param_dtype = DType::bf16;
  DType reduce_dtype = DType::fp32;
  double compute_us = 200;
};

inline Program make_test_program(const TestProgramSpec& spec) {
  Program p;
  p.scenario = "test";
  p.world_size = spec.shard * spec.replicate;
  p.groups = fsdp_group_table(spec.shard, spec.replicate, spec.reshard);
  p.streams = fsdp2_stream_table();
  p.param_dtype = spec.param_dtype;
  p.reduce_dtype = spec.reduce_dtype;
  const Reduction reduction = spec.average ? Reduction::Avg : Reduction::Sum;
  const int pwidth = dtype_bytes(spec.param_dtype), rwidth = dtype_bytes(spec.reduce_dtype);
  const int shard_group = static_cast<int>(CommGroup::Shard), reshard_group = static_cast<int>(CommGroup::Reshard);
  p.buffers = {{"param_shard", pwidth, shard_group, 1, BufferInit::Shared},
               {"unsharded_params", pwidth, shard_group, spec.shard, BufferInit::None},
               {"unsharded_grads", rwidth, shard_group, spec.shard, BufferInit::PerRank},
               {"grad_shard", rwidth, static_cast<int>(CommGroup::None), 1, BufferInit::PerRank}};
  if (spec.reshard > 0) {
    p.buffers.push_back({"param_reshard", pwidth, reshard_group, 1, BufferInit::Shared});
    p.buffers.push_back({"unsharded_params_reshard", pwidth, reshard_group, spec.reshard, BufferInit::None});
  }
  const int kGradShard = 3;
  std::vector<std::vector<int>> unit_params(spec.units);
  for (int u = 0; u < spec.units; ++u) {
    p.units.push_back("u" + std::to_string(u));
    for (int k = 0; k < spec.params_per_unit; ++k) {
      ParamInfo info;
      info.name = "u" + std::to_string(u) + ".w" + std::to_string(k);
      info.unit = u;
      info.numel = spec.numel + 37 * u + 13 * k;
      info.shard_numel = (info.numel + spec.shard - 1) / spec.shard;
      unit_params[u].push_back(static_cast<int>(p.params.size()));
      p.params.push_back(info);
    }
  }
  auto add = [&](OpKind kind, StreamId stream, Phase phase, int unit, std::vector<int> deps, std::string name) -> Op& {
    Op op;
    op.kind = kind;
    op.stream = stream;
    op.phase = phase;
    op.unit = unit;
    p.set_name(op, name);
    p.add_op(op, deps);
    return p.ops.back();
  };
  auto set_slices = [&](Op& op, const std::vector<TensorSlice>& slices) {
    op.slice_list = p.add_slices(slices);
  };
  auto total = [](const std::vector<TensorSlice>& s) {
    long n = 0;
    for (const auto& x : s) n += x.shard_numel;
    return n;
  };
  // Buckets of a unit: lists of slices (shard-local, in `extent` elements per parameter).
  auto buckets = [&](int u, bool reshard_group) {
    std::vector<std::vector<TensorSlice>> out;
    auto extent = [&](int param) {
      return reshard_group ? (p.params[param].numel + spec.reshard - 1) / spec.reshard : p.params[param].shard_numel;
    };
    if (!spec.fused) {
      for (int param : unit_params[u]) out.push_back({TensorSlice{param, 0, extent(param)}});
      return out;
    }
    std::vector<TensorSlice> all;
    for (int param : unit_params[u]) all.push_back(TensorSlice{param, 0, extent(param)});
    if (!spec.split) return std::vector<std::vector<TensorSlice>>{all};
    const long half = all[0].shard_numel / 2;
    std::vector<TensorSlice> first{TensorSlice{all[0].param, 0, half}};
    std::vector<TensorSlice> second{TensorSlice{all[0].param, half, all[0].shard_numel - half}};
    for (size_t i = 1; i < all.size(); ++i) second.push_back(all[i]);
    return std::vector<std::vector<TensorSlice>>{first, second};
  };
  const int pw = dtype_bytes(spec.param_dtype), rw = dtype_bytes(spec.reduce_dtype);
  int last_copy_out = -1;
  // Unshard: copy-in, all-gather, copy-out; returns what compute must wait for.
  auto unshard = [&](int u, Phase phase, bool reshard_group) {
    std::vector<int> ready;
    const CommGroup g = reshard_group ? CommGroup::Reshard : CommGroup::Shard;
    const int n = reshard_group ? spec.reshard : spec.shard;
    int b = 0;
    for (const auto& slices : buckets(u, reshard_group)) {
      const std::string tag = std::string(phase == Phase::Forward ? "fwd" : "bwd") + " u" + std::to_string(u) + " b" +
                              std::to_string(b++);
      std::vector<int> ag_deps;
      if (spec.fused && !spec.zero_copy) {
        Op& ci = add(OpKind::CopyIn, StreamId::CopyIn, phase, u, last_copy_out >= 0 ? std::vector<int>{last_copy_out} : std::vector<int>{}, "ci " + tag);
        set_slices(ci, slices);
        ci.set_bytes(total(slices) * pw);
        ag_deps.push_back(p.id_of(ci));
      }
      Op& ag = add(OpKind::AllGather, StreamId::AllGather, phase, u, ag_deps, "ag " + tag);
      set_slices(ag, slices);
      ag.group = g;
      ag.dtype = spec.param_dtype;
      ag.set_bytes(total(slices) * pw * n);
      ag.src_buffer = reshard_group ? 4 : 0;
      ag.dst_buffer = reshard_group ? 5 : 1;
      const int ag_id = p.id_of(ag);
      if (spec.fused && !spec.zero_copy) {
        p.ops[ag_deps[0]].link = ag_id;
        p.ops[ag_deps[0]].src_buffer = p.ops[ag_id].src_buffer;
      }
      if (spec.fused) {
        Op& co = add(OpKind::CopyOut, StreamId::Compute, phase, u, {ag_id}, "co " + tag);
        co.link = ag_id;
        co.dst_buffer = p.ops[ag_id].dst_buffer;
        set_slices(co, slices);
        co.set_bytes(total(slices) * pw * n);
        last_copy_out = p.id_of(co);
        ready.push_back(p.id_of(co));
      } else {
        ready.push_back(ag_id);
      }
    }
    return ready;
  };
  for (int u = 0; u < spec.units; ++u) {
    auto ready = unshard(u, Phase::Forward, false);
    Op& a = add(OpKind::Alloc, StreamId::Compute, Phase::Forward, u, {}, "alloc act u" + std::to_string(u));
    a.memory = MemoryKind::Activations;
    a.set_bytes(4096);
    Op& f = add(OpKind::Compute, StreamId::Compute, Phase::Forward, u, ready, "fwd u" + std::to_string(u));
    f.set_compute_us(spec.compute_us);
  }
  std::vector<int> final_deps;
  int prev_reduce = -1;
  for (int u = spec.units - 1; u >= 0; --u) {
    auto ready = unshard(u, Phase::Backward, spec.reshard > 0);
    if (prev_reduce >= 0) ready.push_back(prev_reduce);
    Op& bw = add(OpKind::Compute, StreamId::Compute, Phase::Backward, u, ready, "bwd u" + std::to_string(u));
    bw.set_compute_us(2 * spec.compute_us);
    const int bwd = p.id_of(bw);
    Op& fr = add(OpKind::Free, StreamId::Compute, Phase::Backward, u, {}, "free act u" + std::to_string(u));
    fr.memory = MemoryKind::Activations;
    fr.set_bytes(4096);
    int b = 0;
    for (const auto& slices : buckets(u, false)) {
      const std::string tag = "u" + std::to_string(u) + " b" + std::to_string(b++);
      std::vector<int> rs_deps{bwd};
      if (spec.fused) {
        Op& ci = add(OpKind::CopyIn, StreamId::ReduceScatter, Phase::Backward, u, {bwd}, "rs ci " + tag);
        set_slices(ci, slices);
        ci.set_bytes(total(slices) * rw * spec.shard);
        rs_deps = {p.id_of(ci)};
      }
      Op& rs = add(OpKind::ReduceScatter, StreamId::ReduceScatter, Phase::Backward, u, rs_deps, "rs " + tag);
      set_slices(rs, slices);
      rs.group = CommGroup::Shard;
      rs.reduction = reduction;
      rs.dtype = spec.reduce_dtype;
      rs.set_bytes(total(slices) * rw * spec.shard);
      rs.src_buffer = 2;
      rs.dst_buffer = kGradShard;
      const int rs_id = p.id_of(rs);  // `rs` dangles once the next op is added
      int done = rs_id;
      if (spec.fused) {
        p.ops[rs_deps[0]].link = rs_id;
        p.ops[rs_deps[0]].src_buffer = 2;
      }
      if (spec.fused) {
        Op& co = add(OpKind::CopyOut, StreamId::ReduceScatter, Phase::Backward, u, {done}, "rs co " + tag);
        co.link = rs_id;
        co.dst_buffer = kGradShard;
        set_slices(co, slices);
        co.set_bytes(total(slices) * rw);
        done = p.id_of(co);
      }
      if (spec.replicate > 1) {
        Op& ar = add(OpKind::AllReduce, StreamId::AllReduce, Phase::Backward, u, {done}, "ar " + tag);
        set_slices(ar, slices);
        ar.group = CommGroup::Replicate;
        ar.reduction = reduction;
        ar.src_buffer = ar.dst_buffer = kGradShard;
        ar.dtype = spec.reduce_dtype;
        ar.set_bytes(total(slices) * rw);
        done = p.id_of(ar);
      }
      prev_reduce = done;
      final_deps.push_back(done);
    }
  }
  Op& fin = add(OpKind::Compute, StreamId::Compute, Phase::Finalize, -1, final_deps, "finalize");
  fin.set_compute_us(0);
  return p;
}

}  // namespace shardline::testing
