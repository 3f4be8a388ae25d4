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
  const TensorSlice& a = ags[0]->slices[0];
  const TensorSlice& b = ags[1]->slices[0];
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
    const OpPlan& o = plan.ops[op.id];
    if (op.kind == OpKind::CopyIn) {
      ASSERT_GE(o.collective, 0);
      EXPECT_EQ(plan.ops[o.collective].copy_in, op.id);
      EXPECT_EQ(o.moved_bytes, op.bytes) << op.name;
    }
    if (is_collective(op.kind)) EXPECT_EQ(o.moved_bytes, op.bytes) << op.name;
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
      EXPECT_TRUE(plan.ops[op.id].direct_in) << op.name;
      EXPECT_TRUE(plan.ops[op.id].pack_spans.empty()) << op.name;
      ++direct;
    }
  EXPECT_GT(direct, 0);
  spec.zero_copy = false;
  const Program q = make_test_program(spec);
  const Plan with_copy = make_plan(q, 1, 1, 2);
  for (const auto& op : q.ops)
    if (op.kind == OpKind::AllGather) EXPECT_FALSE(with_copy.ops[op.id].direct_in) << op.name;
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
  Op stray;
  stray.id = static_cast<int>(p.ops.size());
  stray.kind = OpKind::CopyIn;
  stray.stream = StreamId::CopyIn;
  stray.name = "stray";
  stray.slices = {TensorSlice{0, 0, 4}};
  p.ops.push_back(stray);
  try {
    make_plan(p, 1, 0, 2);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("program.ops[" + std::to_string(stray.id) + "]"), std::string::npos) << e.what();
  }
}

TEST(MakePlan, CorruptHookRefusesOpsThatMoveNoData) {
  TestProgramSpec spec;
  const Program p = make_test_program(spec);
  int compute = -1;
  for (const auto& op : p.ops)
    if (op.kind == OpKind::Compute) compute = op.id;
  EXPECT_THROW(make_plan(p, 1, 0, 2, compute), InputError);
  EXPECT_THROW(make_plan(p, 0, 0, 2), InputError);  // --scale 0
}

TEST(GroupLayout, HsdpGroupsFollowTheRankLayout) {
  const GroupLayout l{4, 2, 2};
  EXPECT_EQ(l.members(CommGroup::Shard, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(l.members(CommGroup::Replicate, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(l.members(CommGroup::Reshard, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(l.index(CommGroup::Shard, 6), 2);
  EXPECT_EQ(l.index(CommGroup::Replicate, 6), 1);
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
