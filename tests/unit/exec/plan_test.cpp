// The executor's memory plan: scaling keeps slices partitioning their shards, copies are
// linked to their collectives, zero-copy collectives read their stores directly, bad programs
// and bad hooks are refused with the path named.
#include <gtest/gtest.h>

#include "core/error.h"
#include "exec/payload.h"
#include "exec/plan.h"
#include "tests/unit/exec/test_programs.h"

namespace shardline::exec {
namespace {

using testing::make_test_program;
using testing::TestProgramSpec;

TEST(ScaleProgram, SlicesStillPartitionTheirShard) {
  TestProgramSpec spec;
  spec.split = true;
  const Program scaled = scale_program(make_test_program(spec), 7);
  // The two all-gathers of unit 0 in forward split parameter 0: together they cover it once.
  std::vector<const Op*> ags;
  for (const auto& op : scaled.ops)
    if (op.kind == OpKind::AllGather && op.unit == 0 && op.phase == Phase::Forward) ags.push_back(&op);
  ASSERT_EQ(ags.size(), 2u);
  const TensorSlice& a = scaled.slices(*ags[0])[0];
  const TensorSlice& b = scaled.slices(*ags[1])[0];
  EXPECT_EQ(a.param, b.param);
  EXPECT_EQ(a.shard_offset, 0);
  EXPECT_EQ(a.shard_offset + a.shard_numel, b.shard_offset);
  EXPECT_EQ(b.shard_offset + b.shard_numel, scaled.params[a.param].shard_numel);
}

TEST(MakePlan, LinksCopiesAndMovesTheRightBytes) {
  TestProgramSpec spec;  // fused, bf16 params, fp32 reductions, shard 2
  const Program p = make_test_program(spec);
  const Plan plan = make_plan(p, 1, 0, 2);
  for (const auto& op : p.ops) {
    const OpPlan& o = plan.ops[p.id_of(op)];
    if (op.kind == OpKind::CopyIn) {
      ASSERT_GE(o.collective, 0);
      EXPECT_EQ(plan.ops[o.collective].copy_in, p.id_of(op));
      EXPECT_EQ(o.moved_bytes, op.bytes()) << p.name(op);
    }
    if (is_collective(op.kind)) EXPECT_EQ(o.moved_bytes, op.bytes()) << p.name(op);
  }
}

TEST(MakePlan, ZeroCopyAllGatherReadsTheShardStoreDirectly) {
  TestProgramSpec spec;
  spec.zero_copy = true;
  const Program p = make_test_program(spec);
  const Plan plan = make_plan(p, 1, 1, 2);
  int direct = 0;
  for (const auto& op : p.ops)
    if (op.kind == OpKind::AllGather) {
      EXPECT_TRUE(plan.ops[p.id_of(op)].direct_in) << p.name(op);
      EXPECT_TRUE(plan.ops[p.id_of(op)].pack_spans.empty()) << p.name(op);
      ++direct;
    }
  EXPECT_GT(direct, 0);
  spec.zero_copy = false;
  const Program q = make_test_program(spec);
  const Plan with_copy = make_plan(q, 1, 1, 2);
  for (const auto& op : q.ops)
    if (op.kind == OpKind::AllGather) EXPECT_FALSE(with_copy.ops[q.id_of(op)].direct_in) << q.name(op);
}

TEST(MakePlan, RefusesAWorldThatDoesNotMatchTheMesh) {
  TestProgramSpec spec;
  spec.shard = 2;
  spec.replicate = 2;
  EXPECT_THROW(make_plan(make_test_program(spec), 1, 0, 2), InputError);
}

TEST(MakePlan, RefusesACopyInThatFeedsNothing) {
  TestProgramSpec spec;
  Program p = make_test_program(spec);
  const int stray_id = static_cast<int>(p.ops.size());
  Op stray;
  stray.kind = OpKind::CopyIn;
  stray.stream = StreamId::CopyIn;
  p.set_name(stray, "stray");
  p.add_op(stray, {}, {TensorSlice{0, 0, 4}});
  try {
    make_plan(p, 1, 0, 2);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("program.ops[" + std::to_string(stray_id) + "]"), std::string::npos) << e.what();
  }
}

TEST(MakePlan, CorruptHookRefusesOpsThatMoveNoData) {
  TestProgramSpec spec;
  const Program p = make_test_program(spec);
  int compute = -1;
  for (const auto& op : p.ops)
    if (op.kind == OpKind::Compute) compute = p.id_of(op);
  EXPECT_THROW(make_plan(p, 1, 0, 2, compute), InputError);
  EXPECT_THROW(make_plan(p, 0, 0, 2), InputError);  // --scale 0
  // A collective its copy-in fills reads a staging buffer: the refusal names the copy-in to
  // corrupt instead (it had said the all-gather moves no data).
  int gather = -1, copy_in = -1;
  for (const auto& op : p.ops)
    if (op.kind == OpKind::AllGather && gather < 0) gather = p.id_of(op);
  for (const auto& op : p.ops)
    if (op.kind == OpKind::CopyIn && op.link == gather) copy_in = p.id_of(op);
  ASSERT_GE(copy_in, 0);
  try {
    make_plan(p, 1, 0, 2, gather);
    FAIL() << "corrupted an all-gather that reads a staging buffer";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("reads the staging buffer its copy-in fills; corrupt that copy-in (op " + std::to_string(copy_in) + ")"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(make_plan(p, 1, 0, 2, copy_in));
}

// The executor forms communicators from the group table alone: any size and stride, not only
// the patterns an FSDP mesh makes (here every third rank of 12, in blocks of 6).
TEST(GroupMembers, FollowTheGroupTablesSizeAndStride) {
  const GroupInfo every_third{"every_third", 2, 3};
  EXPECT_EQ(group_members(every_third, 7), (std::vector<int>{7, 10}));
  EXPECT_EQ(group_members(every_third, 10), (std::vector<int>{7, 10}));
  EXPECT_EQ(group_members(every_third, 2), (std::vector<int>{2, 5}));
  EXPECT_EQ(every_third.index(10), 1);
  EXPECT_NE(every_third.color(7), every_third.color(8));
  EXPECT_EQ(group_members(GroupInfo{"block", 4, 1}, 6), (std::vector<int>{4, 5, 6, 7}));
}

// Copies go where the Program links them, not to a guessed collective: the first forward
// copy-out depends on its all-gather, but linked to the other one it drains that one (and is
// refused, since its slices are not that all-gather's); a copy without a valid link is refused,
// naming it.
// Each collective's buffers must have the blocks its kind reads and writes: an all-gather
// writing into a one-block buffer is refused, naming the op's dst_buffer.
TEST(MakePlan, BuffersMustHaveTheBlocksTheirCollectivesNeed) {
  Program p = make_test_program(TestProgramSpec{});
  int ag = -1;
  for (const auto& op : p.ops)
    if (op.kind == OpKind::AllGather && ag < 0) ag = p.id_of(op);
  ASSERT_GE(ag, 0);
  p.ops[ag].dst_buffer = p.ops[ag].src_buffer;  // one block per rank, not one per member
  try {
    make_plan(p, 1, 0, 2);
    ADD_FAILURE() << "an all-gather into a one-block buffer was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "program.ops[" + std::to_string(ag) + "].dst_buffer");
  }
}

TEST(MakePlan, CopiesFollowTheProgramsLinks) {
  TestProgramSpec spec;
  spec.split = true;  // two all-gathers per unit: the first copy-out could drain either
  Program p = make_test_program(spec);
  std::vector<int> ags, copy_outs;
  for (const auto& op : p.ops) {
    if (op.kind == OpKind::AllGather && op.phase == Phase::Forward && op.unit == 0) ags.push_back(p.id_of(op));
    if (op.kind == OpKind::CopyOut && op.phase == Phase::Forward && op.unit == 0) copy_outs.push_back(p.id_of(op));
  }
  ASSERT_EQ(ags.size(), 2u);
  ASSERT_EQ(copy_outs.size(), 2u);
  const Plan plan = make_plan(p, 1, 0, 2);
  EXPECT_EQ(plan.ops[copy_outs[0]].collective, ags[0]);
  EXPECT_EQ(plan.ops[copy_outs[1]].collective, ags[1]);

  Program bad = p;
  bad.ops[copy_outs[0]].link = ags[1];
  EXPECT_THROW(make_plan(bad, 1, 0, 2), InputError);
  bad = p;
  bad.ops[copy_outs[0]].link = -1;
  try {
    make_plan(bad, 1, 0, 2);
    ADD_FAILURE() << "a copy-out without a link was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "program.ops[" + std::to_string(copy_outs[0]) + "].link");
  }
  bad = p;
  for (auto& op : bad.ops)
    if (op.kind == OpKind::CopyIn) {
      op.link = bad.id_of(op) - 1;  // an earlier op: a copy-in fills a later collective
      break;
    }
  EXPECT_THROW(make_plan(bad, 1, 0, 2), InputError);
}

TEST(Payload, SmallIntegersRoundTripInEveryWidth) {
  unsigned char buf[4];
  for (int w : {4, 2, 1})
    for (double v : {-100.0, -8.0, -0.5 * (w != 1), 0.0, 3.0, 127.0 * (w != 2) + 100.0 * (w == 2)}) {
      encode_value(buf, w, v);
      EXPECT_EQ(decode_value(buf, w), v) << "width " << w;
    }
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_LE(std::abs(param_value(3, i)), 8);
    EXPECT_LE(std::abs(grad_value(2, 3, i)), 4);
  }
}

}  // namespace
}  // namespace shardline::exec
