// sim/streams: CUDA stream and event rules for one rank, and which streams a finished op can
// have unblocked (the simulator only looks at those).
#include "sim/streams.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "sim_test_support.h"

namespace shardline::sim {
namespace {

using simtest::ProgramBuilder;

constexpr unsigned bit(StreamId s) { return 1u << static_cast<unsigned>(s); }
constexpr int kCompute = static_cast<int>(StreamId::Compute);
constexpr int kAllGather = static_cast<int>(StreamId::AllGather);
constexpr int kCopyIn = static_cast<int>(StreamId::CopyIn);

TEST(Streams, AStreamRunsItsOpsOneAtATimeInProgramOrder) {
  ProgramBuilder b;
  const int first = b.compute(1);
  const int second = b.compute(1);
  const StreamPlan plan(b.program());
  StreamSet s(plan);
  EXPECT_EQ(s.ready_head(kCompute, 2), first);
  s.start(first);
  EXPECT_EQ(s.ready_head(kCompute, 2), -1);  // busy
  EXPECT_EQ(s.finish(first), bit(StreamId::Compute));
  EXPECT_EQ(s.ready_head(kCompute, 2), second);
}

TEST(Streams, AnOpWaitsUntilTheHostIssuedIt) {
  ProgramBuilder b;
  const int op = b.compute(1);
  const StreamPlan plan(b.program());
  StreamSet s(plan);
  EXPECT_EQ(s.ready_head(kCompute, 0), -1);
  EXPECT_EQ(s.ready_head(kCompute, 1), op);
}

TEST(Streams, AnOpWaitsForEveryDependencyAndItsFinishNamesTheWaitingStream) {
  ProgramBuilder b;
  const int gather = b.collective(OpKind::AllGather, 1, CommGroup::Shard, 8);
  const int copy = b.copy_in(1);
  const int compute = b.compute(1, {gather, copy});
  const StreamPlan plan(b.program());
  StreamSet s(plan);
  ASSERT_EQ(s.ready_head(kAllGather, 3), gather);
  ASSERT_EQ(s.ready_head(kCopyIn, 3), copy);
  s.start(gather);
  s.start(copy);
  EXPECT_EQ(s.ready_head(kCompute, 3), -1);  // waits for the all-gather (its first dependency)
  // The copy-in finishing frees its own stream only: compute waits for the all-gather.
  EXPECT_EQ(s.finish(copy), bit(StreamId::CopyIn));
  EXPECT_EQ(s.ready_head(kCompute, 3), -1);
  EXPECT_EQ(s.finish(gather), bit(StreamId::AllGather) | bit(StreamId::Compute));
  EXPECT_EQ(s.ready_head(kCompute, 3), compute);
}

TEST(Streams, AFinishedOpUnblocksOthersOnlyWhenItsEventIsSignalled) {
  ProgramBuilder b;
  const int gather = b.collective(OpKind::AllGather, 1, CommGroup::Shard, 8);
  const int compute = b.compute(1, {gather});
  const StreamPlan plan(b.program());
  StreamSet s(plan);
  ASSERT_EQ(s.ready_head(kAllGather, 2), gather);
  s.start(gather);
  EXPECT_EQ(s.ready_head(kCompute, 2), -1);
  EXPECT_EQ(s.finish(gather, /*signal_event=*/false), bit(StreamId::AllGather));
  EXPECT_TRUE(s.finished(gather));
  EXPECT_EQ(s.ready_head(kCompute, 2), -1);  // event latency: not signalled yet
  EXPECT_EQ(s.signal(gather), bit(StreamId::Compute));
  EXPECT_EQ(s.ready_head(kCompute, 2), compute);
}

TEST(Streams, AnOpWithManyDependenciesIsReadyAfterTheLastWhateverTheOrder) {
  ProgramBuilder b;
  std::vector<int> copies;
  for (int i = 0; i < 5; ++i) copies.push_back(b.copy_in(1));
  const int compute = b.compute(1, copies);
  const StreamPlan plan(b.program());
  StreamSet s(plan);
  const int issued = compute + 1;
  // The copy-ins run one after another on their stream; compute is checked after each.
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(s.ready_head(kCopyIn, issued), copies[i]);
    s.start(copies[i]);
    s.finish(copies[i]);
    EXPECT_EQ(s.ready_head(kCompute, issued), i < 4 ? -1 : compute) << "after copy " << i;
  }
  EXPECT_EQ(s.finished_count(), 5);
}

TEST(Streams, DependenciesOnLaterOrUnknownOpsAreInputErrors) {
  ProgramBuilder b;
  b.compute(1);
  b.compute(1);
  Program& p = b.program();
  p.dep_ids.push_back(5);  // op 0 depends on op 5, which does not exist
  p.ops[1].deps_begin = 1;
  try {
    const StreamPlan plan(p);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "ops[0].deps");
  }
  p.ops[1].deps_begin = 2;  // op 0's range runs past the dependency array
  EXPECT_THROW(StreamPlan{p}, InputError);
}

}  // namespace
}  // namespace shardline::sim
