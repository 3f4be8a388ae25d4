// Rules of the shared scheduler (../shared/reference/fsdp-semantics.md), one test per rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "core/error.h"
#include "core/schedule.h"
#include "core_test_support.h"

namespace shardline {
namespace {

// A small scenario built by hand: `units` units with two tensors of `numel` each, given times.
Scenario make_scenario(int units = 4, int shard = 4, int replicate = 1, int64_t numel = 1024) {
  Scenario s;
  s.name = "test";
  for (int i = 0; i < units; ++i) {
    UnitSpec u;
    u.name = "u" + std::to_string(i);
    u.tensors = {{"w", numel}, {"b", numel / 2}};
    u.forward_time_us = 100;
    u.backward_time_us = 200;
    u.activation_bytes = 1000;
    s.model.units.push_back(u);
  }
  s.cluster.gpu.name = "test-gpu";
  s.cluster.gpu.peak_tflops[DType::bf16] = 100;
  s.cluster.gpu.memory_bytes = int64_t{80} << 30;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = shard * replicate;
  s.mesh.shard = shard;
  s.mesh.replicate = replicate;
  return s;
}

std::vector<const Op*> ops_of(const Program& p, OpKind kind, Phase phase = Phase::Forward, int microbatch = -1) {
  std::vector<const Op*> out;
  for (const Op& op : p.ops)
    if (op.kind == kind && op.phase == phase && (microbatch < 0 || op.microbatch == microbatch)) out.push_back(&op);
  return out;
}

const Op* compute_of(const Program& p, int unit, Phase phase, int microbatch = 0) {
  for (const Op& op : p.ops)
    if (op.kind == OpKind::Compute && op.unit == unit && op.phase == phase && op.microbatch == microbatch) return &op;
  return nullptr;
}

const Op* dep_of_kind(const Program& p, const Op& op, OpKind kind) {
  for (int d : p.deps(op))
    if (p.ops[d].kind == kind) return &p.ops[d];
  return nullptr;
}

// Transitive "a must finish before b starts": through deps and stream FIFO order.
bool happens_before(const Program& p, int a, int b) {
  std::vector<int> prev_on_stream(p.ops.size(), -1);
  std::array<int, kNumStreams> last{};
  last.fill(-1);
  for (const Op& op : p.ops) {
    prev_on_stream[p.id_of(op)] = last[static_cast<int>(op.stream)];
    last[static_cast<int>(op.stream)] = p.id_of(op);
  }
  std::vector<char> seen(p.ops.size(), 0);
  std::function<bool(int)> reach = [&](int x) -> bool {
    if (x == a) return true;
    if (x < a || seen[x]) return false;
    seen[x] = 1;
    for (int d : p.deps(p.ops[x]))
      if (reach(d)) return true;
    return prev_on_stream[x] >= 0 && reach(prev_on_stream[x]);
  };
  return a != b && reach(b);
}

TEST(Schedule, DepsPointBackward) {
  const Program p = schedule(make_scenario());
  for (size_t i = 0; i < p.ops.size(); ++i) {
    for (int d : p.deps(p.ops[i])) EXPECT_LT(d, static_cast<int>(i));
  }
}

TEST(Schedule, FusedForwardIsCopyInAllGatherCopyOutOnFsdp2Streams) {
  const Program p = schedule(make_scenario(4));
  const auto ags = ops_of(p, OpKind::AllGather);
  ASSERT_EQ(ags.size(), 4u);  // one fused all-gather per unit
  for (const Op* ag : ags) {
    EXPECT_EQ(ag->stream, StreamId::AllGather);
    EXPECT_EQ(ag->group, CommGroup::Shard);
    EXPECT_EQ(p.group_size(*ag), 4);
    // S = output bytes: shard * (shard numel of both tensors) * bf16
    EXPECT_EQ(ag->bytes(), 4 * (256 + 128) * 2);
    const Op* copy_in = dep_of_kind(p, *ag, OpKind::CopyIn);
    ASSERT_NE(copy_in, nullptr);
    EXPECT_EQ(copy_in->stream, StreamId::CopyIn);
    EXPECT_EQ(copy_in->bytes(), ag->bytes() / 4);
  }
  for (const Op* out : ops_of(p, OpKind::CopyOut)) {
    EXPECT_EQ(out->stream, StreamId::Compute);
    EXPECT_EQ(p.ops[p.deps(*out).back()].kind, OpKind::AllGather);
  }
}

TEST(Schedule, ImplicitForwardPrefetchIssuesNextAllGatherBeforeComputeEnds) {
  const Program p = schedule(make_scenario(4));
  const auto ags = ops_of(p, OpKind::AllGather);
  for (int i = 0; i + 1 < 4; ++i) {
    // all-gather(i+1) does not wait for compute(i): it may overlap it.
    EXPECT_FALSE(happens_before(p, p.id_of(*compute_of(p, i, Phase::Forward)), p.id_of(*ags[i + 1]))) << i;
  }
}

TEST(Schedule, ImplicitPrefetchNextCopyInWaitsForPreviousCopyOut) {
  const Program p = schedule(make_scenario(4));
  const auto copy_ins = ops_of(p, OpKind::CopyIn);
  const auto copy_outs = ops_of(p, OpKind::CopyOut);
  // copy-in(i+2) may not start before copy-out(i) finished: at most two outputs alive.
  for (int i = 0; i + 2 < 4; ++i) EXPECT_TRUE(happens_before(p, p.id_of(*copy_outs[i]), p.id_of(*copy_ins[i + 2]))) << i;
}

// The end-of-forward flush frees the held all-gather output only once the all-gather streams
// wait for its copy-out (FSDP2's root post-forward): the backward gather of the last unit, which
// follows at once, may not overwrite the output its forward copy-out still reads.
TEST(Schedule, EndOfForwardFlushWaitsForTheHeldCopyOut) {
  const Program p = schedule(make_scenario(4));
  const auto forward_outs = ops_of(p, OpKind::CopyOut, Phase::Forward);
  const auto backward_ags = ops_of(p, OpKind::AllGather, Phase::Backward);
  ASSERT_EQ(forward_outs.size(), 4u);
  ASSERT_FALSE(backward_ags.empty());
  EXPECT_TRUE(happens_before(p, p.id_of(*forward_outs.back()), p.id_of(*backward_ags.front())));
}

// Without fusion there are no copies, but the all-gather stream is bounded as the fused one is:
// in forward, unit j's gathers wait for compute(j-3) (the fused copy-in(j) waits for
// copy-out(j-2), which runs just after it); in backward, the prefetched gathers of unit j wait
// for the backward compute of unit j+2. Before, they waited for nothing and every gather of the
// step ran ahead of compute, every unit's parameters alive at once.
TEST(Schedule, UnfusedAllGathersAreBoundedLikeFusedOnes) {
  Scenario s = make_scenario(6);
  s.policy.comm_fusion = false;
  const Program p = schedule(s);
  // Every unit gathers in forward and (resharded after forward) again in backward.
  ASSERT_GE(ops_of(p, OpKind::AllGather, Phase::Forward).size(), 6u);
  ASSERT_GE(ops_of(p, OpKind::AllGather, Phase::Backward).size(), 6u);
  for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Forward))
    if (ag->unit >= 3) EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, ag->unit - 3, Phase::Forward)), p.id_of(*ag))) << p.name(*ag);
  for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Backward))
    if (ag->unit <= 3) EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, ag->unit + 2, Phase::Backward)), p.id_of(*ag))) << p.name(*ag);
  // Still a prefetch: unit j+1's gathers do not wait for compute(j).
  for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Forward))
    if (ag->unit >= 1) EXPECT_FALSE(happens_before(p, p.id_of(*compute_of(p, ag->unit - 1, Phase::Forward)), p.id_of(*ag))) << p.name(*ag);
}

TEST(Schedule, ForwardPrefetchOffSerializesAllGatherAfterPreviousCompute) {
  Scenario s = make_scenario(4);
  s.policy.forward_prefetch = 0;
  const Program p = schedule(s);
  const auto ags = ops_of(p, OpKind::AllGather);
  ASSERT_GE(ags.size(), 4u);
  for (int i = 0; i + 1 < 4; ++i)
    EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, i, Phase::Forward)), p.id_of(*ags[i + 1]))) << i;
}

TEST(Schedule, ExplicitForwardPrefetchIssuesDeeperUnshardsBeforeCompute) {
  Scenario s = make_scenario(5);
  s.policy.forward_prefetch = 2;
  const Program p = schedule(s);
  const auto ags = ops_of(p, OpKind::AllGather);
  // In pre-forward(0), units 1 and 2 are unsharded too: both all-gathers precede compute(0).
  EXPECT_LT(p.id_of(*ags[1]), p.id_of(*compute_of(p, 0, Phase::Forward)));
  EXPECT_LT(p.id_of(*ags[2]), p.id_of(*compute_of(p, 0, Phase::Forward)));
  EXPECT_GT(p.id_of(*ags[3]), p.id_of(*compute_of(p, 0, Phase::Forward)));
}

TEST(Schedule, ReshardAfterForwardFalseMeansNoBackwardAllGather) {
  Scenario s = make_scenario(4);
  s.policy.reshard_after_forward.mode = ReshardAfterForward::Mode::Keep;
  const Program p = schedule(s);
  EXPECT_TRUE(ops_of(p, OpKind::AllGather, Phase::Backward).empty());
  EXPECT_EQ(ops_of(p, OpKind::AllGather, Phase::Forward).size(), 4u);
}

TEST(Schedule, ReshardAfterForwardTrueGathersAgainInBackward) {
  const Program p = schedule(make_scenario(4));
  EXPECT_EQ(ops_of(p, OpKind::AllGather, Phase::Backward).size(), 4u);
}

TEST(Schedule, ReshardAfterForwardIntGathersOverTheSmallerGroupInBackward) {
  Scenario s = make_scenario(4, 8);
  s.policy.reshard_after_forward = {ReshardAfterForward::Mode::Partial, 2};
  const Program p = schedule(s);
  EXPECT_EQ(p.groups[static_cast<int>(CommGroup::Reshard)].size, 2);
  ASSERT_EQ(ops_of(p, OpKind::AllGather, Phase::Backward).size(), 4u);
  for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Backward)) {
    EXPECT_EQ(ag->group, CommGroup::Reshard);
    EXPECT_EQ(p.group_size(*ag), 2);
    const Op* copy_in = dep_of_kind(p, *ag, OpKind::CopyIn);
    ASSERT_NE(copy_in, nullptr);
    EXPECT_EQ(copy_in->bytes(), ag->bytes() / 2);  // copy-in of the 1/2 partial shard
  }
  for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Forward)) EXPECT_EQ(p.group_size(*ag), 8);
  // The backward gather reads the 1/k copy made on the compute stream after forward: it waits
  // for that copy (FSDP2's reshard-after-forward event), never gathering from a copy not yet made.
  int resharded_copies = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::Alloc || p.name(op).rfind("alloc resharded", 0) != 0) continue;
    // "alloc resharded b2 mb0" is bucket 2's copy; its backward gather is "ag b2 mb0".
    const std::string bucket_and_mb = p.name(op).substr(std::string("alloc resharded ").size());
    const Op* gather = nullptr;
    for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Backward))
      if (p.name(*ag) == "ag " + bucket_and_mb) gather = ag;
    ASSERT_NE(gather, nullptr) << p.name(op);
    EXPECT_TRUE(happens_before(p, p.id_of(op), p.id_of(*gather))) << p.name(op);
    ++resharded_copies;
  }
  EXPECT_EQ(resharded_copies, 4);  // one per unit's bucket
}

TEST(Schedule, BackwardRunsInReversePostForwardOrderWithDefaultPrefetch) {
  const Program p = schedule(make_scenario(4));
  const auto bwd = ops_of(p, OpKind::Compute, Phase::Backward);
  ASSERT_EQ(bwd.size(), 4u);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(bwd[k]->unit, 3 - k);
  // Default backward prefetch: all-gather(i-1) is issued before bwd(i) and does not wait for it.
  const auto ags = ops_of(p, OpKind::AllGather, Phase::Backward);
  for (int i = 3; i >= 1; --i) {
    const Op* ag_prev = *std::find_if(ags.begin(), ags.end(), [&](const Op* o) { return o->unit == i - 1; });
    EXPECT_LT(p.id_of(*ag_prev), p.id_of(*compute_of(p, i, Phase::Backward)));
    EXPECT_FALSE(happens_before(p, p.id_of(*compute_of(p, i, Phase::Backward)), p.id_of(*ag_prev)));
  }
}

TEST(Schedule, BackwardPrefetchOffWaitsForCurrentBackwardCompute) {
  Scenario s = make_scenario(4);
  s.policy.backward_prefetch = 0;
  const Program p = schedule(s);
  ASSERT_EQ(ops_of(p, OpKind::AllGather, Phase::Backward).size(), 4u);
  for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Backward)) {
    if (ag->unit == 3) continue;
    EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, ag->unit + 1, Phase::Backward)), p.id_of(*ag)));
  }
}

TEST(Schedule, ReduceScatterCannotStartBeforeItsBackwardEnds) {
  const Program p = schedule(make_scenario(4));
  ASSERT_EQ(ops_of(p, OpKind::ReduceScatter, Phase::Backward).size(), 4u);
  for (const Op* rs : ops_of(p, OpKind::ReduceScatter, Phase::Backward)) {
    EXPECT_EQ(rs->stream, StreamId::ReduceScatter);
    EXPECT_EQ(rs->bytes(), 4 * (256 + 128) * 4);  // reduce dtype fp32
    EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, rs->unit, Phase::Backward)), p.id_of(*rs)));
  }
}

TEST(Schedule, ComputeWaitsForPreviousReduceScatter) {
  const Program p = schedule(make_scenario(4));
  const auto rss = ops_of(p, OpKind::ReduceScatter, Phase::Backward);
  // rs(u3) is the first; bwd(u1) comes after post-backward(u2), which waits for rs(u3).
  ASSERT_EQ(rss.size(), 4u);
  EXPECT_EQ(rss[0]->unit, 3);
  EXPECT_TRUE(happens_before(p, p.id_of(*rss[0]), p.id_of(*compute_of(p, 1, Phase::Backward))));
  // ... but bwd(u2) itself may overlap rs(u3).
  EXPECT_FALSE(happens_before(p, p.id_of(*rss[0]), p.id_of(*compute_of(p, 2, Phase::Backward))));
}

TEST(Schedule, HsdpAllReduceFollowsItsReduceScatterOverReplicateGroup) {
  const Program p = schedule(make_scenario(4, 2, 2));
  const auto ars = ops_of(p, OpKind::AllReduce, Phase::Backward);
  const auto rss = ops_of(p, OpKind::ReduceScatter, Phase::Backward);
  ASSERT_EQ(ars.size(), rss.size());
  for (size_t k = 0; k < ars.size(); ++k) {
    EXPECT_EQ(ars[k]->stream, StreamId::AllReduce);
    EXPECT_EQ(ars[k]->group, CommGroup::Replicate);
    EXPECT_EQ(p.group_size(*ars[k]), 2);
    EXPECT_EQ(ars[k]->bytes(), rss[k]->bytes() / 2);  // the reduce-scattered shard
    EXPECT_TRUE(happens_before(p, p.id_of(*rss[k]), p.id_of(*ars[k])));
  }
  // All-gathers only over the shard group.
  for (const Op& op : p.ops)
    if (op.kind == OpKind::AllGather) EXPECT_EQ(op.group, CommGroup::Shard);
}

// The Program states the mesh for its interpreters: rank = replicate_index * shard +
// shard_index, so rank 5 of shard 4 x replicate 2 is in shard group {4..7} and replicate group
// {1, 5}; its reshard group of 2 is {4, 5}.
TEST(Schedule, GroupTableStatesWhichRanksFormEachCommunicator) {
  Scenario s = make_scenario(4, 4, 2);
  s.policy.reshard_after_forward = {ReshardAfterForward::Mode::Partial, 2};
  const Program p = schedule(s);
  EXPECT_EQ(p.world_size, 8);
  ASSERT_EQ(p.groups.size(), static_cast<size_t>(kNumCommGroups));
  auto members = [&](CommGroup g, int rank) {
    const GroupInfo& info = p.groups[static_cast<int>(g)];
    EXPECT_EQ(info.name, comm_group_name(g));
    std::vector<int> m;
    for (int i = 0; i < info.size; ++i) m.push_back(info.member(rank, i));
    return m;
  };
  EXPECT_EQ(members(CommGroup::Shard, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(members(CommGroup::Replicate, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(members(CommGroup::Reshard, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(members(CommGroup::None, 5), (std::vector<int>{5}));
  const GroupInfo& replicate = p.groups[static_cast<int>(CommGroup::Replicate)];
  EXPECT_EQ(replicate.index(5), 1);
  EXPECT_EQ(replicate.color(5), replicate.color(1));
  EXPECT_NE(replicate.color(5), replicate.color(2));
}

// FSDP2 creates its all-gather copy-in, all-gather and reduce-scatter streams at priority -1;
// the all-reduce stream and the default stream stay at 0.
TEST(Schedule, StreamTableCarriesFsdp2Priorities) {
  const Program p = schedule(make_scenario(4, 2, 2));
  ASSERT_EQ(p.streams.size(), static_cast<size_t>(kNumStreams));
  EXPECT_EQ(p.stream_of(Op{}).name, "compute");
  auto priority = [&](StreamId s) { return p.streams[static_cast<int>(s)].priority; };
  EXPECT_EQ(priority(StreamId::Compute), 0);
  EXPECT_EQ(priority(StreamId::CopyIn), -1);
  EXPECT_EQ(priority(StreamId::AllGather), -1);
  EXPECT_EQ(priority(StreamId::ReduceScatter), -1);
  EXPECT_EQ(priority(StreamId::AllReduce), 0);
}

// Every copy names the collective it fills or drains, whatever the dependencies say: the
// reduce-scatter copy-in has no dependency edge to its reduce-scatter (same stream, FIFO).
TEST(Schedule, CopiesLinkToTheCollectiveTheyFillOrDrain) {
  const Program p = schedule(make_scenario(4, 2, 2));
  int copy_ins = 0, copy_outs = 0;
  for (const Op& op : p.ops) {
    if (op.kind == OpKind::CopyIn) {
      ++copy_ins;
      ASSERT_GT(op.link, p.id_of(op)) << p.name(op);
      const Op& target = p.ops[op.link];
      EXPECT_EQ(target.kind, op.stream == StreamId::CopyIn ? OpKind::AllGather : OpKind::ReduceScatter) << p.name(op);
      EXPECT_EQ(target.bucket, op.bucket);
      EXPECT_EQ(target.microbatch, op.microbatch);
    } else if (op.kind == OpKind::CopyOut) {
      ++copy_outs;
      ASSERT_GE(op.link, 0) << p.name(op);
      ASSERT_LT(op.link, p.id_of(op)) << p.name(op);
      EXPECT_EQ(p.ops[op.link].kind, OpKind::AllGather);
      EXPECT_EQ(p.ops[op.link].bucket, op.bucket);
    } else {
      EXPECT_EQ(op.link, -1) << p.name(op);
    }
  }
  EXPECT_GT(copy_ins, 0);
  EXPECT_GT(copy_outs, 0);
}

// The buffer table says what each collective reads and writes: an all-gather this rank's
// parameter block (the same global values everywhere) into a block per member; a
// reduce-scatter each rank's own gradients (a block per member) into one block; HSDP's
// all-reduce that block in place. Copies read or write their collective's buffers.
TEST(Schedule, BufferTableStatesWhatCollectivesReadAndWrite) {
  Scenario s = make_scenario(3, 2, 2);
  s.policy.reshard_after_forward = {ReshardAfterForward::Mode::Partial, 1};
  s.policy.param_dtype = DType::bf16;
  s.policy.reduce_dtype = DType::fp32;
  const Program p = schedule(s);
  auto buffer = [&](int b) -> const BufferInfo& { return p.buffers.at(static_cast<size_t>(b)); };
  int checked = 0;
  for (const Op& op : p.ops) {
    if (op.kind == OpKind::AllGather) {
      EXPECT_EQ(buffer(op.src_buffer).blocks, 1);
      EXPECT_EQ(buffer(op.src_buffer).init, BufferInit::Shared);
      EXPECT_EQ(buffer(op.dst_buffer).blocks, p.group_size(op));
      EXPECT_EQ(buffer(op.dst_buffer).init, BufferInit::None);
      EXPECT_EQ(buffer(op.src_buffer).group, static_cast<int>(op.group));
      EXPECT_EQ(buffer(op.dst_buffer).width, 2);
    } else if (op.kind == OpKind::ReduceScatter) {
      EXPECT_EQ(buffer(op.src_buffer).blocks, p.group_size(op));
      EXPECT_EQ(buffer(op.src_buffer).init, BufferInit::PerRank);
      EXPECT_EQ(buffer(op.dst_buffer).blocks, 1);
      EXPECT_EQ(buffer(op.dst_buffer).width, 4);
    } else if (op.kind == OpKind::AllReduce) {
      EXPECT_EQ(op.src_buffer, op.dst_buffer);
      EXPECT_EQ(buffer(op.dst_buffer).blocks, 1);
    } else if (op.kind == OpKind::CopyIn) {
      EXPECT_EQ(op.src_buffer, p.ops[op.link].src_buffer);
      EXPECT_EQ(op.dst_buffer, -1);
    } else if (op.kind == OpKind::CopyOut) {
      EXPECT_EQ(op.dst_buffer, p.ops[op.link].dst_buffer);
      EXPECT_EQ(op.src_buffer, -1);
    } else {
      EXPECT_EQ(op.src_buffer, -1);
      EXPECT_EQ(op.dst_buffer, -1);
      continue;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
  // Backward all-gathers after a partial reshard read and write the reshard group's buffers.
  bool reshard_gather = false;
  for (const Op& op : p.ops)
    if (op.kind == OpKind::AllGather && op.group == CommGroup::Reshard) {
      reshard_gather = true;
      EXPECT_EQ(buffer(op.src_buffer).name, "param_reshard");
    }
  EXPECT_TRUE(reshard_gather);
}

// The reduction is on the op: averaged gradients by default, summed when asked; all-gathers
// reduce nothing.
TEST(Schedule, CollectivesCarryTheirReduction) {
  Scenario s = make_scenario(2, 2, 2);
  for (bool average : {true, false}) {
    s.policy.average_gradients = average;
    const Program p = schedule(s);
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::AllGather) EXPECT_EQ(op.reduction, Reduction::None);
      else if (is_collective(op.kind)) EXPECT_EQ(op.reduction, average ? Reduction::Avg : Reduction::Sum) << p.name(op);
      else EXPECT_EQ(op.reduction, Reduction::None);
    }
  }
}

TEST(Schedule, NoAllReduceWithoutReplication) {
  const Program p = schedule(make_scenario(4, 4, 1));
  EXPECT_TRUE(ops_of(p, OpKind::AllReduce, Phase::Backward).empty());
}

TEST(Schedule, GradSyncLastSkipsReduceScatterOnEarlierMicroBatches) {
  Scenario s = make_scenario(3, 2, 2);
  s.policy.micro_batches = 3;
  s.policy.grad_sync = GradSync::Last;
  const Program p = schedule(s);
  EXPECT_TRUE(ops_of(p, OpKind::ReduceScatter, Phase::Backward, 0).empty());
  EXPECT_TRUE(ops_of(p, OpKind::ReduceScatter, Phase::Backward, 1).empty());
  EXPECT_TRUE(ops_of(p, OpKind::AllReduce, Phase::Backward, 1).empty());
  EXPECT_EQ(ops_of(p, OpKind::ReduceScatter, Phase::Backward, 2).size(), 3u);
  EXPECT_EQ(ops_of(p, OpKind::AllReduce, Phase::Backward, 2).size(), 3u);
  // Unsharded gradients are allocated once and kept across micro-batches, as FSDP2's
  // accumulated gradients: in the reduce dtype (fp32 here; the parameters gather in bf16).
  int grad_allocs = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::Alloc || op.memory != MemoryKind::UnshardedGrads) continue;
    ++grad_allocs;
    EXPECT_EQ(op.bytes(), (1024 + 512) * 4) << p.name(op);  // a unit's 1536 elements, unsharded, fp32
  }
  EXPECT_EQ(grad_allocs, 3);
  // Reduced every micro-batch, they are the autograd gradients, in the parameter dtype.
  s.policy.grad_sync = GradSync::Every;
  for (const Op& op : schedule(s).ops)
    if (op.kind == OpKind::Alloc && op.memory == MemoryKind::UnshardedGrads) EXPECT_EQ(op.bytes(), (1024 + 512) * 2);
}

TEST(Schedule, GradSyncEveryReducesEveryMicroBatch) {
  Scenario s = make_scenario(3);
  s.policy.micro_batches = 2;
  const Program p = schedule(s);
  EXPECT_EQ(ops_of(p, OpKind::ReduceScatter, Phase::Backward, 0).size(), 3u);
  EXPECT_EQ(ops_of(p, OpKind::ReduceScatter, Phase::Backward, 1).size(), 3u);
}

// The end of every backward that reduced (FSDP2's root post-backward callback with its default
// is_last_backward; FSDP1's final callback): the compute stream waits for every post-reduce
// event of that micro-batch (HSDP: its all-reduces) before the next micro-batch's forward, and
// the last reduce-scatter input is freed then, not held into the next micro-batch.
TEST(Schedule, EachBackwardThatReducedWaitsForItsReductionsBeforeTheNextForward) {
  Scenario s = make_scenario(3, 2, 2);
  s.policy.micro_batches = 2;
  const Program p = schedule(s);
  const Op* next_forward = compute_of(p, 0, Phase::Forward, 1);
  ASSERT_NE(next_forward, nullptr);
  for (const Op* ar : ops_of(p, OpKind::AllReduce, Phase::Backward, 0))
    EXPECT_TRUE(happens_before(p, p.id_of(*ar), p.id_of(*next_forward))) << p.name(*ar);
  // Every reduce-scatter input of micro-batch 0 (one per unit) is freed in it, before micro-batch 1 starts.
  int freed_in_mb0 = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::Free || op.memory != MemoryKind::ReduceScatterBuffer || op.bytes() == 0 || op.microbatch != 0) continue;
    ++freed_in_mb0;
    EXPECT_TRUE(happens_before(p, p.id_of(op), p.id_of(*next_forward))) << p.name(op);
  }
  EXPECT_EQ(freed_in_mb0, 3);
  // With grad_sync "last" the first backward reduces nothing and waits for nothing.
  s.policy.grad_sync = GradSync::Last;
  const Program last = schedule(s);
  for (const Op& op : last.ops)
    EXPECT_FALSE(op.kind == OpKind::Free && op.memory == MemoryKind::ReduceScatterBuffer && op.microbatch == 0) << last.name(op);
}

TEST(Schedule, UnfusedIssuesOneCollectivePerParameterWithoutCopies) {
  Scenario s = make_scenario(3, 2, 2);
  s.policy.comm_fusion = false;
  const Program p = schedule(s);
  EXPECT_EQ(ops_of(p, OpKind::AllGather).size(), 6u);  // 3 units x 2 tensors
  EXPECT_EQ(ops_of(p, OpKind::ReduceScatter, Phase::Backward).size(), 6u);
  EXPECT_EQ(ops_of(p, OpKind::AllReduce, Phase::Backward).size(), 6u);
  EXPECT_TRUE(ops_of(p, OpKind::CopyIn).empty());
  EXPECT_TRUE(ops_of(p, OpKind::CopyOut).empty());
  for (const Op* ag : ops_of(p, OpKind::AllGather)) EXPECT_EQ(p.slices(*ag).size(), 1u);
}

TEST(Schedule, ZeroCopySkipsCopyInUnlessACastIsNeeded) {
  Scenario s = make_scenario(3);
  s.policy.zero_copy = true;
  s.policy.param_dtype = DType::fp32;
  s.cluster.gpu.peak_tflops[DType::fp32] = 50;
  EXPECT_TRUE(ops_of(schedule(s), OpKind::CopyIn).empty());
  s.policy.param_dtype = DType::bf16;  // lower param dtype: one cast copy instead
  const Program cast_program = schedule(s);  // ops_of points into it
  const auto casts = ops_of(cast_program, OpKind::CopyIn);
  ASSERT_EQ(casts.size(), 3u);
  EXPECT_NE(cast_program.name(*casts[0]).find("cast_in"), std::string::npos);
}

// Byte buckets (ZeRO-3 / DDP style) are a queue on the reduce-scatter stream: it waits for the
// compute stream, never the other way, and each bucket's input buffer is freed there after its
// reduce-scatter. FSDP2's "compute waits for the previous reduce-scatter" (one bucket per unit)
// applied per bucket stalled compute behind every bucket of a unit.
TEST(Schedule, ByteBucketsDoNotStallComputeBehindTheirReduceScatters) {
  Scenario s = make_scenario(4, 4, 1, 1024);  // per unit: 6144 bytes of fp32 gradients
  s.policy.bucket_bytes = 2048;               // three gradient buckets per unit
  const Program p = schedule(s);
  const auto rss = ops_of(p, OpKind::ReduceScatter, Phase::Backward);
  ASSERT_GE(rss.size(), 8u);
  for (const Op* rs : rss)
    for (int unit = 0; unit < 4; ++unit)
      EXPECT_FALSE(happens_before(p, p.id_of(*rs), p.id_of(*compute_of(p, unit, Phase::Backward)))) << p.name(*rs) << " before bwd u" << unit;
  int freed_on_rs_stream = 0;
  for (const Op& op : p.ops)
    freed_on_rs_stream += op.kind == OpKind::Free && op.memory == MemoryKind::ReduceScatterBuffer && op.stream == StreamId::ReduceScatter;
  EXPECT_EQ(freed_on_rs_stream, static_cast<int>(rss.size()));
}

TEST(Schedule, BucketsPackConsecutiveGroupsAndSplitLargeOnes) {
  Scenario s = make_scenario(4, 4, 1, 1024);  // per unit: 4 * 384 * 2 = 3072 bytes all-gathered
  s.policy.bucket_bytes = 6144;               // two units per all-gather bucket
  Program p = schedule(s);
  auto ags = ops_of(p, OpKind::AllGather);
  ASSERT_EQ(ags.size(), 2u);
  for (const Op* ag : ags) {
    EXPECT_EQ(ag->bytes(), 6144);
    EXPECT_EQ(ag->unit, -1);  // spans units
  }
  // Gradient buckets are fp32 (6144 bytes per unit): one per unit, filled in backward order.
  auto rss = ops_of(p, OpKind::ReduceScatter, Phase::Backward);
  ASSERT_EQ(rss.size(), 4u);
  EXPECT_EQ(p.slices(*rss[0]).front().param, p.params.size() - 2);  // last unit's first tensor

  s.policy.bucket_bytes = 2048;  // smaller than a group: groups split, buckets stay full
  p = schedule(s);
  ags = ops_of(p, OpKind::AllGather);
  ASSERT_EQ(ags.size(), 6u);
  int64_t total = 0;
  for (const Op* ag : ags) {
    EXPECT_EQ(ag->bytes(), 2048);
    total += ag->bytes();
  }
  // Unit 0 (3072 bytes) needs buckets 0 and 1: both gathered before its forward compute.
  EXPECT_LT(p.id_of(*ags[1]), p.id_of(*compute_of(p, 0, Phase::Forward)));
  EXPECT_EQ(total, 4 * 3072);  // nothing lost, nothing duplicated
}

// FSDP2 shards a parameter on dim 0, padding the rows to a multiple of the shard group; FSDP1's
// flat parameters pad the elements; a one-dimensional tensor (rows 0) is padded as its elements.
TEST(Schedule, Fsdp2PadsDimZeroAndFsdp1TheElements) {
  Scenario s = make_scenario(1, 8, 1);
  s.model.units[0].tensors = {{"w", 1001 * 4, 1001}, {"b", 1001, 0}};
  auto shard_numel = [](const Program& p, const std::string& suffix) {
    for (const ParamInfo& param : p.params)
      if (param.name.ends_with(suffix)) return param.shard_numel;
    return int64_t{-1};
  };
  Program p = schedule(s);
  EXPECT_EQ(shard_numel(p, ".w"), 126 * 4);  // ceil(1001 / 8) rows of 4
  EXPECT_EQ(shard_numel(p, ".b"), 126);
  s.policy.optimizer_params = OptimizerParams::Fsdp1OrigParams;
  p = schedule(s);
  EXPECT_EQ(shard_numel(p, ".w"), 501);  // ceil(4004 / 8)
  EXPECT_EQ(shard_numel(p, ".b"), 126);
}

TEST(Schedule, BucketingWithoutFusionIsAnInputError) {
  Scenario s = make_scenario(2);
  s.policy.comm_fusion = false;
  s.policy.bucket_bytes = 1 << 20;
  coretest::expect_input_error([&] { schedule(s); }, "policy.bucket_bytes");
}

// Tiny buckets on a big model would make tens of millions of ops: refused up front, naming
// the bucket size, instead of exhausting memory.
TEST(Schedule, ProgramsOverTheOpLimitAreAnInputError) {
  Scenario s = make_scenario(4, 4, 1, int64_t{1} << 24);  // 25 M shard-local elements per rank
  s.policy.bucket_bytes = 16;                              // one element per bucket
  coretest::expect_input_error([&] { schedule(s); }, "policy.bucket_bytes", {"use larger buckets (now 16 B)"});
  s.policy.bucket_bytes = int64_t{64} << 20;  // the same model in 64 MiB buckets is fine
  EXPECT_LT(static_cast<int64_t>(schedule(s).ops.size()), kMaxProgramOps);
}

// The estimate counts each unit's memory ops (its activations here) beside its compute: 1,000
// units over 480 micro-batches make about 11.5 M ops; counted as 2 ops a unit they passed the
// estimate (7.7 M) and were stopped only by the build at 8 M ops ("makes more than"), after
// building them; now the estimate (8.6 M, "at least") refuses them first.
TEST(Schedule, TheOpEstimateCountsEachUnitsMemoryOps) {
  Scenario s = make_scenario(1000, 2, 1);
  s.policy.micro_batches = 480;
  coretest::expect_input_error([&] { schedule(s); }, "policy.micro_batches", {"this step makes at least"});
}

// The op count is estimated before anything is built: a billion micro-batches is refused at
// once naming policy.micro_batches (it used to build gigabytes first), and per-unit buckets
// count too (the estimate saw none of them).
TEST(Schedule, TooManyMicroBatchesAreRefusedBeforeBuildingNamingTheKey) {
  Scenario s = make_scenario(4, 4, 1);
  s.policy.micro_batches = 1'000'000'000;
  coretest::expect_input_error([&] { schedule(s); }, "policy.micro_batches", {"use fewer micro-batches"});
  s.policy.micro_batches = 4;
  EXPECT_NO_THROW(schedule(s));
  // With buckets as well, larger buckets are the other way out, and the advice says so (one
  // micro-batch may fit by the estimate, a lower bound, and still not: an audit followed
  // "use fewer micro-batches" alone into a second refusal).
  s.policy.micro_batches = 1'000'000'000;
  s.policy.bucket_bytes = 4096;
  // The values the refusal is about are said beside their keys.
  coretest::expect_input_error([&] { schedule(s); }, "policy.micro_batches",
                               {"use fewer micro-batches (now 1000000000) or larger buckets (policy.bucket_bytes, now 4.0 KiB)"});
}

// Inputs each in range can still ask for a unit that computes for years; refused, naming the model.
TEST(Schedule, AUnitComputingForOverAnHourIsAnInputError) {
  Scenario s = make_scenario(4, 4, 1);
  s.model.units[1].forward_time_us.reset();
  s.model.units[1].backward_time_us.reset();
  s.model.units[1].forward_flops = 1e21;
  s.model.units[1].backward_flops = 2e21;
  s.cluster.gpu.efficiency = 0.001;
  coretest::expect_input_error([&] { schedule(s); }, "model.units[1]", {"over an hour", "a backward not given is twice the forward"});
}

TEST(Schedule, MemoryAllocationsBalanceAndStaticMemoryFollowsFormula) {
  Scenario s = make_scenario(3, 2, 2);
  s.policy.micro_batches = 2;
  const Program p = schedule(s);
  std::map<MemoryKind, int64_t> live;
  for (const Op& op : p.ops) {
    if (op.kind == OpKind::Alloc) live[op.memory] += op.bytes();
    if (op.kind == OpKind::Free) live[op.memory] -= op.bytes();
    for (auto& [k, v] : live) ASSERT_GE(v, 0) << memory_kind_name(k) << " at op " << p.id_of(op);
  }
  for (auto& [k, v] : live) EXPECT_EQ(v, 0) << memory_kind_name(k);
  // sharded master params (fp32) + Adam states (8 bytes) per shard element; the gradient shards
  // are ops of their own (below)
  EXPECT_EQ(p.static_memory_bytes, 3 * (512 + 256) * (4 + 8));
}

// The gradient shards exist from their bucket's first reduce-scatter of the step (made on the
// reduce-scatter stream; later micro-batches accumulate into them) to the step's end, where
// zero_grad(set_to_none=True) frees them: measured on one H100, a forward holds the master
// parameters and optimizer states but no gradients.
TEST(Schedule, GradientShardsLiveFromTheirFirstReduceScatterToTheStepsEnd) {
  Scenario s = make_scenario(3, 2, 1);
  s.policy.micro_batches = 2;
  const Program p = schedule(s);
  std::vector<const Op*> allocs;
  const Op* freed = nullptr;
  for (const Op& op : p.ops) {
    if (op.memory != MemoryKind::ShardedGrads) continue;
    if (op.kind == OpKind::Alloc) allocs.push_back(&op);
    if (op.kind == OpKind::Free) freed = &op;
  }
  ASSERT_EQ(allocs.size(), 3u);  // one per bucket, in micro-batch 0 only
  for (const Op* a : allocs) {
    EXPECT_EQ(a->stream, StreamId::ReduceScatter);
    EXPECT_EQ(a->microbatch, 0);
    EXPECT_EQ(a->bytes(), (512 + 256) * 4);  // this rank's shard of the bucket, fp32
  }
  ASSERT_NE(freed, nullptr);
  EXPECT_EQ(freed, &p.ops.back());
  EXPECT_EQ(freed->bytes(), 3 * (512 + 256) * 4);
  for (const Op* rs : ops_of(p, OpKind::ReduceScatter, Phase::Backward)) EXPECT_TRUE(happens_before(p, p.id_of(*rs), p.id_of(*freed)));
}

// The model's output (the head's logits) lives as the training loop and the loss say
// (policy.output_lifetime): held by the loop until the micro-batch's backward is done; with the
// loop's reference dropped after the loss, until the loss's backward if the loss saved it, else
// not past the head's forward.
TEST(Schedule, TheModelOutputLivesAsTheLoopAndTheLossHoldIt) {
  Scenario s = make_scenario(3, 2, 1);
  s.policy.micro_batches = 2;
  s.model.units.back().output_bytes = 5000;
  // Program order of the output's alloc and free in micro-batch `mb`, and of the op each follows.
  auto span_of = [](const Program& p, int mb) {
    int alloc = -1, free = -1;
    for (const Op& op : p.ops)
      if (op.memory == MemoryKind::Activations && op.bytes() == 5000 && op.microbatch == mb)
        (op.kind == OpKind::Alloc ? alloc : free) = p.id_of(op);
    EXPECT_GE(alloc, 0);
    EXPECT_GT(free, alloc);
    return std::pair{alloc, free};
  };
  auto last_compute_before = [](const Program& p, int id) {
    for (int i = id; i >= 0; --i)
      if (p.ops[i].kind == OpKind::Compute) return &p.ops[i];
    return static_cast<const Op*>(nullptr);
  };
  for (int mb = 0; mb < 2; ++mb) {
    Program p = schedule(s);  // default: held to the end of the micro-batch's backward
    auto [alloc, free] = span_of(p, mb);
    EXPECT_EQ(compute_of(p, 2, Phase::Forward, mb), &p.ops[alloc + 1]);
    EXPECT_EQ(last_compute_before(p, free), compute_of(p, 0, Phase::Backward, mb));
    s.policy.output_lifetime = OutputLifetime::Loss;  // `del pred`: gone after the head's forward
    p = schedule(s);
    std::tie(alloc, free) = span_of(p, mb);
    EXPECT_EQ(last_compute_before(p, free), compute_of(p, 2, Phase::Forward, mb));
    s.model.units.back().output_saved_by_loss = true;  // unless the loss saved it for its backward
    p = schedule(s);
    std::tie(alloc, free) = span_of(p, mb);
    EXPECT_EQ(last_compute_before(p, free), compute_of(p, 2, Phase::Backward, mb));
    s.policy.output_lifetime = OutputLifetime::Backward;
    s.model.units.back().output_saved_by_loss = false;
  }
}

// FSDP2's foreach_reduce: reduce-scatter input, copy-in, release of the unsharded gradients, and
// only then the reduce-scatter output (the gradient shard). With one rank the shard is as large
// as the gradients, and allocating it before the release over-stated the peak by their size
// (1.96 GiB on the 8B-shaped one-GPU steps, docs/benchmarks.md).
// FSDP2's and FSDP1's root pre-forward: a later micro-batch's all-gather streams wait for the
// compute stream, which waited for the earlier micro-batch's reductions, so its first gather
// cannot overlap them (it could, before 2026-11-27's twenty-eighth session).
TEST(Schedule, ALaterMicroBatchsGathersWaitForTheEarlierOnesReductions) {
  for (int64_t bucket_bytes : {int64_t{0}, int64_t{1} << 20}) {  // a bucket per unit; byte buckets
    Scenario s = make_scenario(3, 2, 1);
    s.policy.micro_batches = 2;
    s.policy.bucket_bytes = bucket_bytes;
    const Program p = schedule(s);
    int last_rs_mb0 = -1;
    for (const Op& op : p.ops)
      if (op.kind == OpKind::ReduceScatter && op.microbatch == 0) last_rs_mb0 = p.id_of(op);
    ASSERT_GE(last_rs_mb0, 0);
    // The first op of each all-gather stream in micro-batch 1 depends on micro-batch 0's last
    // reduce-scatter, directly or through the compute op that waited for it.
    auto waits_for_it = [&](const Op& op) {
      for (int d : p.deps(op)) {
        if (d == last_rs_mb0) return true;
        const Op& dep = p.ops[static_cast<size_t>(d)];
        if (dep.stream != StreamId::Compute) continue;
        for (int dd : p.deps(dep))
          if (dd == last_rs_mb0) return true;
      }
      return false;
    };
    for (StreamId stream : {StreamId::CopyIn, StreamId::AllGather}) {
      const Op* first = nullptr;
      for (const Op& op : p.ops)
        if (op.stream == stream && op.microbatch == 1 && op.phase == Phase::Forward) {
          first = &op;
          break;
        }
      ASSERT_NE(first, nullptr);
      EXPECT_TRUE(waits_for_it(*first)) << p.name(*first) << " does not wait for " << p.name(p.ops[static_cast<size_t>(last_rs_mb0)])
                                        << " (bucket_bytes " << bucket_bytes << ")";
    }
  }
}

// In forward FSDP2 keeps each all-gather output through its unit's forward, until the next
// unit's wait-for-unshard frees it, with explicit prefetch too (wait_for_unshard tests the
// training state, not how the gather was issued). It had been freed at its own copy-out.
TEST(Schedule, ExplicitForwardPrefetchHoldsEachGatherOutputThroughItsUnitsForward) {
  Scenario s = make_scenario(4, 2, 1);
  s.policy.forward_prefetch = 2;
  const Program p = schedule(s);
  auto first_index = [&](const std::string& name) {
    for (size_t i = 0; i < p.ops.size(); ++i)
      if (p.name(p.ops[i]) == name) return static_cast<int>(i);
    return -1;
  };
  for (int b = 0; b + 1 < 4; ++b) {
    const int freed = first_index("free ag_buf b" + std::to_string(b) + " mb0");
    const int forward = first_index("fwd u" + std::to_string(b) + " mb0");
    const int next_copy_out = first_index("copy_out b" + std::to_string(b + 1) + " mb0");
    ASSERT_GE(freed, 0) << b;
    EXPECT_GT(freed, forward) << "bucket " << b;
    EXPECT_LT(freed, next_copy_out) << "bucket " << b;
  }
}

TEST(Schedule, GradientShardIsAllocatedAfterTheUnshardedGradientsAreReleased) {
  const Program p = schedule(make_scenario(3, 2, 1));
  int checked = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind != OpKind::Alloc || p.ops[i].memory != MemoryKind::ShardedGrads) continue;
    // In program order: the bucket's copy-in (reduce-scatter stream), the release of the
    // unsharded gradients on the compute stream, which waits for the copy-in (FSDP2's compute
    // stream never runs past it), this allocation, waiting for the release, then the bucket's
    // reduce-scatter.
    const Op* copy_in = nullptr;
    const Op* released = nullptr;
    const Op* rs = nullptr;
    for (size_t j = 0; j < p.ops.size(); ++j) {
      const Op& op = p.ops[j];
      if (j < i && op.kind == OpKind::Free && op.memory == MemoryKind::UnshardedGrads) released = &op;
      if (op.stream != StreamId::ReduceScatter) continue;
      if (j < i && op.kind == OpKind::CopyIn) copy_in = &op;
      if (j > i && op.kind == OpKind::ReduceScatter && rs == nullptr) rs = &op;
    }
    ASSERT_TRUE(copy_in && released && rs) << p.name(p.ops[i]);
    EXPECT_LT(p.id_of(*copy_in), p.id_of(*released)) << p.name(p.ops[i]);
    EXPECT_EQ(released->stream, StreamId::Compute) << p.name(p.ops[i]);
    const auto released_deps = p.deps(*released);
    EXPECT_NE(std::find(released_deps.begin(), released_deps.end(), p.id_of(*copy_in)), released_deps.end()) << p.name(p.ops[i]);
    const auto alloc_deps = p.deps(p.ops[i]);
    EXPECT_NE(std::find(alloc_deps.begin(), alloc_deps.end(), p.id_of(*released)), alloc_deps.end()) << p.name(p.ops[i]);
    EXPECT_EQ(copy_in->bucket, rs->bucket) << p.name(p.ops[i]);
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(Schedule, FinalizeWaitsForEveryPostReduceEvent) {
  const Program p = schedule(make_scenario(3, 2, 2));
  const Op& last = p.ops.back();
  EXPECT_EQ(last.phase, Phase::Finalize);
  EXPECT_EQ(last.stream, StreamId::Compute);
  ASSERT_FALSE(ops_of(p, OpKind::AllReduce, Phase::Backward).empty());
  for (const Op* ar : ops_of(p, OpKind::AllReduce, Phase::Backward)) EXPECT_TRUE(happens_before(p, p.id_of(*ar), p.id_of(last)));
}

TEST(Schedule, ComputeTimesComeFromFlopsOrGivenTimes) {
  Scenario s = make_scenario(1);
  s.model.units[0].forward_time_us.reset();
  s.model.units[0].backward_time_us.reset();
  s.model.units[0].forward_flops = 1e12;
  s.model.units[0].backward_flops = 2e12;
  s.cluster.gpu.efficiency = 0.5;  // 100 TFLOP/s peak -> 50 achieved
  EXPECT_DOUBLE_EQ(forward_compute_us(s, s.model.units[0]), 20000.0);
  EXPECT_DOUBLE_EQ(backward_compute_us(s, s.model.units[0]), 40000.0);
  s.model.units[0].recompute_forward = true;  // full checkpointing re-runs forward in backward
  EXPECT_DOUBLE_EQ(backward_compute_us(s, s.model.units[0]), 60000.0);
  s.policy.param_dtype = DType::fp8;  // no peak for fp8
  EXPECT_THROW(forward_compute_us(s, s.model.units[0]), InputError);
}

// The FSDP root (fully_shard on the whole model: llm-foundry's and torchtitan's embedding, final
// norm and head) is one parameter group: gathered once per micro-batch before the first root
// unit, kept unsharded from forward into backward (no free after forward, no gather before the
// head's backward), freed and reduce-scattered only after the first unit's backward.
TEST(Schedule, RootUnitsShareOneGroupKeptUnshardedFromForwardIntoBackward) {
  Scenario s = make_scenario(4);
  s.model.units[0].root = s.model.units[3].root = true;
  const Program p = schedule(s);
  const auto fwd_ags = ops_of(p, OpKind::AllGather, Phase::Forward);
  ASSERT_EQ(fwd_ags.size(), 3u);  // the root group, u1, u2
  EXPECT_EQ(fwd_ags[0]->unit, -1);  // one bucket of two units
  EXPECT_EQ(fwd_ags[0]->bytes(), 2 * 4 * (256 + 128) * 2);
  const auto bwd_ags = ops_of(p, OpKind::AllGather, Phase::Backward);
  ASSERT_EQ(bwd_ags.size(), 2u);  // u2 and u1 again; the root is still unsharded
  for (const Op* ag : bwd_ags) EXPECT_NE(ag->unit, -1);
  // No parameters are freed in forward but u1's and u2's; the root's are freed after bwd u0.
  int forward_param_frees = 0;
  const Op* root_free = nullptr;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::Free || op.memory != MemoryKind::UnshardedParams) continue;
    if (op.phase == Phase::Forward) ++forward_param_frees;
    if (op.bytes() == fwd_ags[0]->bytes()) root_free = &op;
  }
  EXPECT_EQ(forward_param_frees, 2);
  ASSERT_NE(root_free, nullptr);
  EXPECT_EQ(root_free->phase, Phase::Backward);
  EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, 0, Phase::Backward)), p.id_of(*root_free)));
  // Its gradients: one reduce-scatter of both units' tensors, after the last backward compute.
  const auto rss = ops_of(p, OpKind::ReduceScatter, Phase::Backward);
  ASSERT_EQ(rss.size(), 3u);
  EXPECT_EQ(rss.back()->bytes(), 2 * 4 * (256 + 128) * 4);
  EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, 0, Phase::Backward)), p.id_of(*rss.back())));
}

// FSDP2 from PyTorch 2.8 respects an explicit reshard_after_forward=True on the root's
// fully_shard (KempnerForge's apply_fsdp2): the root group is freed after the head's forward and
// gathered again in the head's pre-backward, then kept until the first unit's backward as before.
TEST(Schedule, AnExplicitRootReshardAfterForwardGathersTheRootAgainInBackward) {
  Scenario s = make_scenario(4);
  s.model.units[0].root = s.model.units[3].root = true;
  s.policy.root_reshard_after_forward = true;
  const Program p = schedule(s);
  const int64_t root_bytes = 2 * 4 * (256 + 128) * 2;
  const auto bwd_ags = ops_of(p, OpKind::AllGather, Phase::Backward);
  ASSERT_EQ(bwd_ags.size(), 3u);  // the root group first, then u2 and u1
  EXPECT_EQ(bwd_ags[0]->unit, -1);
  EXPECT_EQ(bwd_ags[0]->bytes(), root_bytes);
  EXPECT_TRUE(happens_before(p, p.id_of(*bwd_ags[0]), p.id_of(*compute_of(p, 3, Phase::Backward))));
  int forward_root_frees = 0, backward_root_frees = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::Free || op.memory != MemoryKind::UnshardedParams || op.bytes() != root_bytes) continue;
    (op.phase == Phase::Forward ? forward_root_frees : backward_root_frees) += 1;
    if (op.phase == Phase::Forward) EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, 3, Phase::Forward)), p.id_of(op)));
    else EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, 0, Phase::Backward)), p.id_of(op)));
  }
  EXPECT_EQ(forward_root_frees, 1);
  EXPECT_EQ(backward_root_frees, 1);
}

// The loss's backward runs before any pre-backward hook: what it saved and what it makes are
// released before the head's pre-backward gathers or prefetches anything, so they are never live
// with those buffers (what torch.cuda.max_memory_allocated saw on KempnerForge's runs).
TEST(Schedule, TheLossBackwardIsReleasedBeforeTheHeadsPreBackwardGathers) {
  Scenario s = make_scenario(3, 2, 1);
  s.policy.micro_batches = 2;
  UnitSpec& head = s.model.units.back();
  head.loss_activation_bytes = 7000;
  head.loss_backward_transient_bytes = 9000;
  const Program p = schedule(s);
  for (int mb = 0; mb < 2; ++mb) {
    int act_alloc = -1, act_free = -1, tmp_alloc = -1, tmp_free = -1;
    for (const Op& op : p.ops) {
      if (op.microbatch != mb || op.memory != MemoryKind::Activations) continue;
      if (op.bytes() == 7000) (op.kind == OpKind::Alloc ? act_alloc : act_free) = p.id_of(op);
      if (op.bytes() == 9000) (op.kind == OpKind::Alloc ? tmp_alloc : tmp_free) = p.id_of(op);
    }
    ASSERT_GE(act_alloc, 0);
    EXPECT_EQ(p.ops[act_alloc].phase, Phase::Forward);
    EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, 1, Phase::Forward, mb)), act_alloc));
    ASSERT_GE(tmp_alloc, 0);
    EXPECT_LT(tmp_alloc, tmp_free);
    EXPECT_LT(tmp_free, act_free);
    // Every gather issued in backward (the head's prefetch of u1 and its own of the earlier units)
    // starts after the loss's tensors are gone, and the head's backward compute after that too.
    for (const Op& op : p.ops) {
      if (op.microbatch != mb || op.phase != Phase::Backward || op.kind != OpKind::Alloc ||
          op.memory != MemoryKind::AllGatherBuffer)
        continue;
      EXPECT_TRUE(happens_before(p, act_free, p.id_of(op))) << p.name(op);
    }
    EXPECT_TRUE(happens_before(p, act_free, p.id_of(*compute_of(p, 2, Phase::Backward, mb))));
  }
}

// A root unit without tensors of its own (a head tied to the embedding) computes with the root's
// gathered parameters: they are live during its forward and backward.
TEST(Schedule, ATiedHeadComputesWithTheRootsGatheredEmbedding) {
  Scenario s = make_scenario(3);
  s.model.units[0].root = s.model.units[2].root = true;
  s.model.units[2].tensors.clear();
  const Program p = schedule(s);
  const int64_t root_bytes = 4 * (256 + 128) * 2;
  int64_t live = 0;
  for (const Op& op : p.ops) {
    if (op.kind == OpKind::Alloc && op.memory == MemoryKind::UnshardedParams) live += op.bytes();
    if (op.kind == OpKind::Free && op.memory == MemoryKind::UnshardedParams) live -= op.bytes();
    if (op.kind == OpKind::Compute && op.unit == 2) EXPECT_GE(live, root_bytes) << p.name(op);
  }
  EXPECT_EQ(ops_of(p, OpKind::AllGather, Phase::Forward).size(), 2u);
}

// FSDP2 makes gradients per parameter: the root's bucket spans units, so each root unit's
// gradients appear at its own backward, not the whole group's at the first.
TEST(Schedule, RootGradientsAppearPerUnitAtEachUnitsBackward) {
  Scenario s = make_scenario(4);
  s.model.units[0].root = s.model.units[3].root = true;
  s.model.units[3].tensors = {{"w", 4096}};  // a bigger head
  const Program p = schedule(s);
  std::vector<const Op*> root_grads;
  for (const Op& op : p.ops)
    if (op.kind == OpKind::Alloc && op.memory == MemoryKind::UnshardedGrads && op.phase == Phase::Backward) root_grads.push_back(&op);
  ASSERT_EQ(root_grads.size(), 4u);  // u3's, u2's, u1's, u0's: the root's two at their own units
  EXPECT_EQ(root_grads.front()->bytes(), 4 * 1024 * 2);       // u3: its 4096 elements, bf16
  EXPECT_EQ(root_grads.back()->bytes(), 4 * (256 + 128) * 2);  // u0's, at bwd u0
  EXPECT_TRUE(happens_before(p, p.id_of(*compute_of(p, 1, Phase::Backward)), p.id_of(*root_grads.back())));
}

// A transformer block's backward transient counts the weight gradients it makes
// (core/block_backward.h): its gradient bucket is allocated when its backward ends, where the
// walk's gradients become the bucket, not before it (where they would count twice). Other units'
// buckets exist from the start of their backward.
TEST(Schedule, ABlocksGradientsAreAllocatedWhenItsBackwardEnds) {
  Scenario s = make_scenario(3);
  s.model.units[1].backward_transient_makes_weight_grads = true;
  s.model.units[1].backward_transient_bytes = 4096;
  const Program p = schedule(s);
  std::vector<int> grads;  // in issue order: u2's, u1's, u0's
  for (const Op& op : p.ops)
    if (op.kind == OpKind::Alloc && op.memory == MemoryKind::UnshardedGrads) grads.push_back(p.id_of(op));
  ASSERT_EQ(grads.size(), 3u);
  auto bwd = [&](int unit) { return p.id_of(*compute_of(p, unit, Phase::Backward)); };
  EXPECT_LT(grads[0], bwd(2));
  EXPECT_GT(grads[1], bwd(1));
  EXPECT_LT(grads[2], bwd(0));
  // After the unit's transient and activations are released, before its reduce-scatter.
  int transient_freed = -1, rs = -1;
  for (const Op& op : p.ops) {
    const int id = p.id_of(op);
    if (op.kind == OpKind::Free && op.memory == MemoryKind::Activations && id > bwd(1) && transient_freed < 0) transient_freed = id;
    if (op.kind == OpKind::ReduceScatter && id > bwd(1) && rs < 0) rs = id;
  }
  EXPECT_GT(grads[1], transient_freed);
  EXPECT_LT(grads[1], rs);
}

// Every free returns its bytes to the pool its alloc drew from (the stream the alloc was issued
// on, docs/program.md): in issue order, no pool's live bytes go negative and every pool ends the
// step where it began, whatever the policy moves between streams.
TEST(Schedule, EveryFreeReturnsItsBytesToItsAllocsPool) {
  std::vector<std::pair<std::string, Scenario>> cases;
  cases.emplace_back("fsdp", make_scenario(4));
  cases.emplace_back("hsdp", make_scenario(4, 2, 2));
  Scenario s = make_scenario(4);
  s.policy.comm_fusion = false;
  cases.emplace_back("unfused", s);
  s = make_scenario(4);
  s.policy.zero_copy = true;
  s.policy.param_dtype = s.policy.master_dtype;  // the all-gather lands in the parameters
  cases.emplace_back("zero-copy", s);
  s = make_scenario(4);
  s.policy.reshard_after_forward = {ReshardAfterForward::Mode::Partial, 2};
  cases.emplace_back("reshard to 2", s);
  s = make_scenario(4);
  s.policy.bucket_bytes = 6144;
  cases.emplace_back("byte buckets", s);
  s = make_scenario(4, 2, 2);
  s.policy.micro_batches = 3;
  s.policy.grad_sync = GradSync::Last;
  cases.emplace_back("grad sync last", s);
  for (const auto& [name, scenario] : cases) {
    const Program p = schedule(scenario);
    std::array<int64_t, kNumStreams> live{};
    std::set<StreamId> pools;
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::Alloc) {
        EXPECT_EQ(op.pool, op.stream) << name << ": " << p.name(op);
        live[static_cast<size_t>(op.pool)] += op.bytes();
        pools.insert(op.pool);
      } else if (op.kind == OpKind::Free) {
        live[static_cast<size_t>(op.pool)] -= op.bytes();
        EXPECT_GE(live[static_cast<size_t>(op.pool)], 0) << name << ": " << p.name(op);
      }
    }
    for (int k = 0; k < kNumStreams; ++k) EXPECT_EQ(live[static_cast<size_t>(k)], 0) << name << ": pool " << k;
    EXPECT_GE(pools.size(), 2u) << name;  // the compute stream's and at least one collective stream's
  }
}

// The root is gathered in the model's pre-forward, whichever units hold it: an explicit root
// unit that is not first is gathered before the first unit, and freed after its backward.
TEST(Schedule, TheRootIsGatheredBeforeTheFirstUnitWhereverItsUnitsAre) {
  Scenario s = make_scenario(3);
  s.model.units[2].root = true;
  const Program p = schedule(s);
  const auto fwd_ags = ops_of(p, OpKind::AllGather, Phase::Forward);
  ASSERT_EQ(fwd_ags.size(), 3u);
  const Op* first_compute = compute_of(p, 0, Phase::Forward);
  int before_first = 0;
  for (const Op* ag : fwd_ags) before_first += happens_before(p, p.id_of(*ag), p.id_of(*first_compute)) ? 1 : 0;
  EXPECT_EQ(before_first, 2);  // u0's own and the root's
  EXPECT_EQ(ops_of(p, OpKind::AllGather, Phase::Backward).size(), 2u);  // u1, u0 again; the root kept
}

// A unit's own reshard_after_forward overrides the policy: false keeps its parameters for
// backward (no backward gather), true reshards them under a policy that keeps.
TEST(Schedule, AUnitsOwnReshardAfterForwardOverridesThePolicy) {
  Scenario s = make_scenario(4);
  s.model.units[3].reshard_after_forward = false;
  Program p = schedule(s);
  for (const Op* ag : ops_of(p, OpKind::AllGather, Phase::Backward)) EXPECT_NE(ag->unit, 3);
  EXPECT_EQ(ops_of(p, OpKind::AllGather, Phase::Backward).size(), 3u);
  s.model.units[3].reshard_after_forward = true;
  s.policy.reshard_after_forward.mode = ReshardAfterForward::Mode::Keep;
  p = schedule(s);
  const auto bwd = ops_of(p, OpKind::AllGather, Phase::Backward);
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_EQ(bwd[0]->unit, 3);
}

// Byte buckets (ZeRO-3 / DDP style) have no root group: root units are packed in order with the
// others and regathered in backward.
TEST(Schedule, ByteBucketsPackRootUnitsLikeAnyOther) {
  Scenario s = make_scenario(4);
  s.model.units[0].root = s.model.units[3].root = true;
  s.policy.bucket_bytes = 4 * (256 + 128) * 2;  // one unit per bucket
  const Program p = schedule(s);
  EXPECT_EQ(ops_of(p, OpKind::AllGather, Phase::Forward).size(), 4u);
  EXPECT_EQ(ops_of(p, OpKind::AllGather, Phase::Backward).size(), 4u);
}

TEST(Schedule, IsDeterministic) {
  Scenario s = make_scenario(6, 2, 2);
  s.policy.bucket_bytes = 5000;
  const Program a = schedule(s), b = schedule(s);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.name(a.ops[i]), b.name(b.ops[i]));
    const auto da = a.deps(a.ops[i]), db = b.deps(b.ops[i]);
    EXPECT_TRUE(std::equal(da.begin(), da.end(), db.begin(), db.end()));
  }
}

}  // namespace
}  // namespace shardline
