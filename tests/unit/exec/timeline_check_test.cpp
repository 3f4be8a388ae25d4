// The measured-timeline checker must accept a consistent timeline and name every kind of
// violation: a missing op, a duplicate, a broken event dependency, a non-FIFO stream.
#include <gtest/gtest.h>

#include "exec/timeline_check.h"
#include "tests/unit/exec/test_programs.h"

namespace shardline::exec {
namespace {

// A timeline in which every op runs back to back in program order on every rank.
Timeline serial_timeline(const Program& p, int ranks, int iterations) {
  Timeline t;
  t.source = "measured";
  t.ranks = ranks;
  t.iterations = iterations;
  t.ops = p.ops;
  for (int r = 0; r < ranks; ++r)
    for (int it = 0; it < iterations; ++it)
      for (const auto& op : p.ops) {
        const double s = 10.0 * p.id_of(op);
        t.intervals.push_back(OpInterval{p.id_of(op), r, it, s, s + 1, s + 9});
      }
  return t;
}

bool mentions(const std::vector<std::string>& errors, const std::string& text) {
  for (const auto& e : errors)
    if (e.find(text) != std::string::npos) return true;
  return false;
}

TEST(CheckTimeline, AcceptsAConsistentTimeline) {
  const Program p = testing::make_test_program({});
  EXPECT_TRUE(check_timeline(p, serial_timeline(p, 2, 2)).empty());
}

TEST(CheckTimeline, FindsMissingAndDuplicateOps) {
  const Program p = testing::make_test_program({});
  Timeline t = serial_timeline(p, 2, 1);
  t.intervals.push_back(t.intervals[3]);
  t.intervals.erase(t.intervals.begin() + 5);
  const auto errors = check_timeline(p, t);
  EXPECT_TRUE(mentions(errors, "appears twice: op 3")) << ::testing::PrintToString(errors);
  EXPECT_TRUE(mentions(errors, "missing: op 5")) << ::testing::PrintToString(errors);
}

TEST(CheckTimeline, FindsABrokenDependency) {
  const Program p = testing::make_test_program({});
  int op = -1, dep = -1;
  for (const auto& o : p.ops)
    if (!p.deps(o).empty() && p.ops[p.deps(o)[0]].stream != o.stream) {
      op = p.id_of(o);
      dep = p.deps(o)[0];
      break;
    }
  ASSERT_GE(op, 0);
  Timeline t = serial_timeline(p, 1, 1);
  t.intervals[op].issue_us = t.intervals[dep].start_us;
  t.intervals[op].start_us = t.intervals[dep].start_us + 1;  // before the dependency ended
  EXPECT_TRUE(mentions(check_timeline(p, t), "dependency broken: op " + std::to_string(op)));
}

TEST(CheckTimeline, FindsANonFifoStream) {
  const Program p = testing::make_test_program({});
  int first = -1, second = -1;
  for (const auto& o : p.ops)
    if (o.stream == StreamId::Compute) {
      if (first < 0) first = p.id_of(o);
      else if (second < 0 && p.deps(o).empty()) second = p.id_of(o);
    }
  ASSERT_GE(second, 0);
  Timeline t = serial_timeline(p, 1, 1);
  // `second` runs entirely before `first` on the same stream.
  t.intervals[second].issue_us = t.intervals[first].issue_us - 5;
  t.intervals[second].start_us = t.intervals[first].start_us - 4;
  t.intervals[second].end_us = t.intervals[first].start_us - 3;
  EXPECT_TRUE(mentions(check_timeline(p, t), "stream compute not FIFO: op " + std::to_string(second)));
}

}  // namespace
}  // namespace shardline::exec
