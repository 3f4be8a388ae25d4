// The timeline reader and compare on damaged timelines: an unknown backend, an op recorded
// twice, negative times (reader); more ranks, iterations or intervals claimed than recorded
// (compare, checked before anything is allocated per rank).
#include <climits>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/scenario.h"
#include "core/timeline.h"
#include "reports/compare.h"

namespace shardline {
namespace {

using nlohmann::json;

// Two ops (copy-in, compute) on `ranks` ranks for `iterations` iterations, each step 100 us.
Timeline complete(const std::string& source, int ranks, int iterations) {
  Timeline t;
  t.source = source;
  t.backend = source == "measured" ? "nccl" : "sim";
  t.ranks = ranks;
  t.iterations = iterations;
  Op a;
  a.kind = OpKind::CopyIn;
  a.stream = StreamId::CopyIn;
  t.set_name(a, "ci u0");
  Op b;
  b.kind = OpKind::Compute;
  t.set_name(b, "fwd u0");
  t.ops = {a, b};
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < iterations; ++i) {
      t.intervals.push_back({0, r, i, 1, 1, 10});
      t.intervals.push_back({1, r, i, 2, 10, 100});
    }
  return t;
}

// The JSON path an InputError names ("" when none is thrown).
std::string error_where(const json& j) {
  try {
    timeline_from_json(j);
  } catch (const InputError& e) {
    return e.where();
  }
  return "";
}

TEST(TimelineReaderRobust, AcceptsEveryBackendTheToolsWrite) {
  EXPECT_TRUE(is_backend_name("sim"));
  EXPECT_TRUE(is_backend_name("mpi"));
  EXPECT_TRUE(is_backend_name("nccl"));
  EXPECT_FALSE(is_backend_name("tcp"));
  EXPECT_FALSE(is_backend_name(""));
  EXPECT_FALSE(is_backend_name("MPI"));
  for (const char* b : {"sim", "mpi", "nccl"}) {
    json j = timeline_to_json(complete("measured", 2, 2));
    j["backend"] = b;
    EXPECT_EQ(error_where(j), "") << b;
  }
  json j = timeline_to_json(complete("measured", 2, 2));
  j["backend"] = "gloo";
  EXPECT_EQ(error_where(j), "backend");
}

TEST(TimelineReaderRobust, AnOpRecordedTwiceNamesTheRepeat) {
  json j = timeline_to_json(complete("measured", 2, 2));
  j["intervals"][6] = j["intervals"][4];  // rank 1, iteration 0, op 0 twice (rows 4 and 6)
  j["intervals"][7] = j["intervals"][4];  // and a third time
  try {
    timeline_from_json(j);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "intervals[6]");
    EXPECT_NE(std::string(e.what()).find("op 0 is recorded twice for rank 1, iteration 0 (first at intervals[4])"),
              std::string::npos)
        << e.what();
  }
  // The same op on another rank or in another iteration is no repeat.
  EXPECT_EQ(error_where(timeline_to_json(complete("measured", 3, 4))), "");
}

TEST(TimelineReaderRobust, NegativeTimesOnRankZeroAreRefused) {
  json j = timeline_to_json(complete("measured", 2, 1));
  j["intervals"][1][4] = -0.5;
  j["intervals"][1][3] = -1.0;
  EXPECT_EQ(error_where(j), "intervals[1][3]");
  j["intervals"][1][3] = 0.0;
  EXPECT_EQ(error_where(j), "intervals[1][4]");
  j = timeline_to_json(complete("measured", 1, 1));
  j["intervals"][0][3] = 0.0;  // 0: no issue time recorded
  j["intervals"][0][4] = 0.0;
  EXPECT_EQ(error_where(j), "");
}

// Other ranks' clocks are aligned to rank 0's within the alignment error: all their times may
// read early by the same offset, but none of their ops starts before it is issued.
TEST(TimelineReaderRobust, OtherRanksMayReadEarlyButNeverStartBeforeTheirIssue) {
  json j = timeline_to_json(complete("measured", 2, 1));
  for (size_t i = 2; i < 4; ++i)
    for (int col = 3; col < 6; ++col) j["intervals"][i][col] = j["intervals"][i][col].get<double>() - 2262.5;
  EXPECT_EQ(error_where(j), "");
  j["intervals"][3][4] = j["intervals"][3][3].get<double>() - 1;
  EXPECT_EQ(error_where(j), "intervals[3][4]");
  j = timeline_to_json(complete("measured", 2, 1));
  j["intervals"][0][4] = 0.5;  // op 0 on rank 0 is issued at 1 us
  EXPECT_EQ(error_where(j), "intervals[0][4]");
}

// The sparse timelines metrics accept (a representative rank, iterations without rows) still
// read; completeness is compare's own requirement.
TEST(TimelineReaderRobust, SparseTimelinesStillRead) {
  json j = timeline_to_json(complete("predicted", 1, 1));
  j["ranks"] = 8;
  j["iterations"] = 3;
  EXPECT_EQ(error_where(j), "");
}

// The `where` of a compare_timelines error, and its message.
std::pair<std::string, std::string> compare_error(const Timeline& p, const Timeline& m) {
  try {
    compare_timelines(p, m, 0.1);
  } catch (const InputError& e) {
    return {e.where(), e.what()};
  }
  return {"", ""};
}

TEST(CompareRobust, CompleteTimelinesCompare) {
  const Comparison c = compare_timelines(complete("predicted", 1, 1), complete("measured", 2, 3), 0.1);
  EXPECT_DOUBLE_EQ(c.measured.step_time_us, 99);
  EXPECT_TRUE(c.within_tolerance);
}

TEST(CompareRobust, ClaimsBeyondTheRecordedRowsAreRefusedInConstantTime) {
  const Timeline p = complete("predicted", 1, 1);
  Timeline m = complete("measured", 2, 2);
  m.ranks = INT_MAX;  // metrics would allocate a per-rank table of 2 GiB
  auto [where, what] = compare_error(p, m);
  EXPECT_EQ(where, "timelines");
  EXPECT_NE(what.find("the measured timeline: ranks: 2147483647 ranks running 2 ops claimed, but the file holds 8 intervals"),
            std::string::npos)
      << what;
  m = complete("measured", 2, 2);
  m.iterations = INT_MAX;
  m.reported_iteration = 1;
  std::tie(where, what) = compare_error(p, m);
  EXPECT_NE(what.find("the measured timeline: iterations: 2147483647 iterations"), std::string::npos) << what;
  m = complete("measured", 2, 2);
  m.intervals.pop_back();
  std::tie(where, what) = compare_error(p, m);
  EXPECT_NE(what.find("the measured timeline: intervals: 2 ranks x 2 iterations x 2 ops need one interval each, but the file holds 7"),
            std::string::npos)
      << what;
  Timeline q = complete("predicted", 1, 1);
  q.ranks = kMaxWorldRanks + 1;  // a prediction may keep some of its ranks, but not of more than a scenario may have
  std::tie(where, what) = compare_error(q, complete("measured", 2, 2));
  EXPECT_NE(what.find("the predicted timeline: ranks: 1048577 ranks"), std::string::npos) << what;
  q.ranks = 4;  // an every-rank prediction that kept rank 0: accepted
  EXPECT_EQ(compare_error(q, complete("measured", 2, 2)).first, "");
  q = complete("predicted", 1, 1);
  q.ops.clear();
  q.intervals.clear();
  m = complete("measured", 1, 1);
  m.ops.clear();
  m.intervals.clear();
  m.ranks = INT_MAX;
  std::tie(where, what) = compare_error(q, m);
  EXPECT_NE(what.find("the predicted timeline: ops: the timeline has no ops"), std::string::npos) << what;
}

}  // namespace
}  // namespace shardline
