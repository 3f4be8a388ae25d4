// Chrome trace export: one process per rank, one thread per stream plus a host lane, one X
// event per interval, a memory counter.
#include "reports/trace.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report_fixtures.h"
#include "reports/trace_time.h"

namespace shardline {
namespace {

using nlohmann::json;
using namespace testing_fixtures;

std::vector<json> events_with(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

// The text a run writes, built an event at a time, is the whole object's dump byte for byte: with
// issue instants and memory samples, with none, and for a timeline without intervals.
TEST(Trace, TextWrittenEventByEventIsTheDumpOfTheObject) {
  Timeline t = tiny_timeline();
  ASSERT_FALSE(t.memory.empty());
  EXPECT_EQ(trace_json_text(t), trace_to_json(t).dump());
  for (auto& iv : t.intervals) iv.issue_us = 0;
  t.memory.clear();
  EXPECT_EQ(trace_json_text(t), trace_to_json(t).dump());
  t.intervals.clear();
  EXPECT_EQ(trace_json_text(t), trace_to_json(t).dump());
}

TEST(Trace, HasOneCompleteEventPerIntervalOnItsRankAndStream) {
  Timeline t = tiny_timeline();
  json trace = json::parse(trace_to_json(t).dump());
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  std::vector<json> xs = events_with(trace, "X");
  ASSERT_EQ(xs.size(), t.intervals.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const OpInterval& iv = t.intervals[i];
    const Op& op = t.ops[iv.op];
    const json& e = xs[i];
    EXPECT_EQ(e.at("name"), t.name(op));
    EXPECT_EQ(e.at("pid"), iv.rank);
    EXPECT_EQ(e.at("tid"), static_cast<int>(op.stream));
    EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), iv.start_us);
    EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), iv.end_us - iv.start_us);
    const json& args = e.at("args");
    EXPECT_EQ(args.at("op"), iv.op);
    EXPECT_EQ(args.at("kind"), op_kind_name(op.kind));
    EXPECT_EQ(args.at("unit"), op.unit);
    EXPECT_EQ(args.at("bucket"), op.bucket);
    EXPECT_EQ(args.at("bytes"), op.bytes());
    EXPECT_EQ(args.at("microbatch"), op.microbatch);
    EXPECT_EQ(args.at("phase"), phase_name(op.phase));
  }
}

// Perfetto reads ts and dur as whole nanoseconds each (llround(us x 1000)); written unrounded, a
// slice's rounded start plus rounded duration passed the next slice's rounded start by 1 ns (an
// audit counted 310 such crossings in one 8B trace). Every time is written on the nanosecond grid,
// each duration the difference of the rounded ends: back-to-back ops abut there exactly.
TEST(Trace, SlicesAbutOnTheNanosecondGridAViewerReadsThemOn) {
  Timeline t = tiny_timeline();
  t.intervals.resize(2);
  t.intervals[0].start_us = 0.0006;  // 1 ns
  t.intervals[0].end_us = 1.0004;    // 1000 ns; a duration of 0.9998 us rounds to 1000 ns
  t.intervals[1] = t.intervals[0];
  t.intervals[1].start_us = 1.0004;
  t.intervals[1].end_us = 2.5;
  t.memory.clear();
  const std::vector<json> xs = events_with(json::parse(trace_to_json(t).dump()), "X");
  ASSERT_EQ(xs.size(), 2u);
  // As Perfetto reads them (truncating), and as a rounding reader would.
  for (const auto& ns : {std::function<int64_t(const json&)>([](const json& v) { return static_cast<int64_t>(v.get<double>() * 1000.0); }),
                         std::function<int64_t(const json&)>([](const json& v) { return std::llround(v.get<double>() * 1000.0); })}) {
    EXPECT_EQ(ns(xs[0].at("ts")), 1);
    EXPECT_EQ(ns(xs[0].at("ts")) + ns(xs[0].at("dur")), 1000);
    EXPECT_EQ(ns(xs[1].at("ts")), 1000);
    EXPECT_EQ(ns(xs[1].at("ts")) + ns(xs[1].at("dur")), 2500);
  }
}

// Every whole nanosecond, written as microseconds, reads back as itself whether a viewer truncates
// or rounds (264,973,246 ns as 264973.246 us had truncated to 264,973,245).
TEST(Trace, TimesReadBackAsTheirNanosecondsTruncatedOrRounded) {
  for (int64_t ns : {int64_t{264973246}, int64_t{0}, int64_t{1}, int64_t{999}, int64_t{-264973246}, int64_t{86400000000000}}) {
    const double us = json::parse(json(trace_us(ns)).dump()).get<double>();  // through the JSON text, as a viewer reads it
    EXPECT_EQ(static_cast<int64_t>(us * 1000.0), ns) << ns;
    EXPECT_EQ(std::llround(us * 1000.0), ns) << ns;
  }
  for (int64_t ns = 264973000; ns < 264974000; ++ns) {
    const double us = json::parse(json(trace_us(ns)).dump()).get<double>();
    ASSERT_EQ(static_cast<int64_t>(us * 1000.0), ns) << ns;
  }
}

// A measured run's iterations each count from their own start; on the trace they follow one
// another (an audit found exec's five iterations stacked at the same timestamps, mis-nested).
TEST(Trace, IterationsFollowOneAnotherOnTheTracesClock) {
  Timeline t = tiny_timeline();
  t.memory.clear();
  const size_t one = t.intervals.size();
  double end0 = 0;
  for (const OpInterval& iv : t.intervals) end0 = std::max(end0, iv.end_us);
  for (size_t i = 0; i < one; ++i) {
    OpInterval again = t.intervals[i];
    again.iteration = 1;
    t.intervals.push_back(again);
  }
  t.iterations = 2;
  const std::vector<json> xs = events_with(json::parse(trace_to_json(t).dump()), "X");
  ASSERT_EQ(xs.size(), 2 * one);
  for (size_t i = 0; i < one; ++i) {
    EXPECT_DOUBLE_EQ(xs[i].at("ts").get<double>(), t.intervals[i].start_us);  // the first as it was
    EXPECT_DOUBLE_EQ(xs[one + i].at("ts").get<double>(), t.intervals[i].start_us + 1.1 * end0);
    EXPECT_GE(xs[one + i].at("ts").get<double>(), end0);
  }
}

TEST(Trace, NamesProcessesPerRankAndThreadsPerStream) {
  Timeline t = tiny_timeline();
  json trace = trace_to_json(t);
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  for (const json& e : events_with(trace, "M")) {
    if (e.at("name") == "process_name") processes[e.at("pid")] = e.at("args").at("name");
    if (e.at("name") == "thread_name") threads[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  }
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0], "rank 0 (predicted)");
  EXPECT_EQ(processes[1], "rank 1 (predicted)");
  for (int r = 0; r < 2; ++r) {
    for (int s = 0; s < kNumStreams; ++s) EXPECT_EQ((threads[{r, s}]), stream_name(static_cast<StreamId>(s)));
    EXPECT_EQ((threads[{r, kTraceHostTid}]), "host (issue)");
  }
  EXPECT_EQ(threads.size(), 2u * (kNumStreams + 1));
  // Every X event sits on a named thread of a named process.
  for (const json& e : events_with(trace, "X")) EXPECT_TRUE(threads.count({e.at("pid").get<int>(), e.at("tid").get<int>()}));
}

TEST(Trace, HostLaneShowsIssueInstantsOnlyWhenRecorded) {
  Timeline t = tiny_timeline();
  json trace = trace_to_json(t);
  std::vector<json> instants = events_with(trace, "i");
  ASSERT_EQ(instants.size(), t.intervals.size());
  EXPECT_EQ(instants[1].at("tid"), kTraceHostTid);
  EXPECT_DOUBLE_EQ(instants[1].at("ts").get<double>(), t.intervals[1].issue_us);

  for (auto& iv : t.intervals) iv.issue_us = 0;
  trace = trace_to_json(t);
  EXPECT_TRUE(events_with(trace, "i").empty());
  for (const json& e : events_with(trace, "M")) {
    if (e.contains("tid")) {
      EXPECT_NE(e.at("tid"), kTraceHostTid);
    }
  }
}

TEST(Trace, MemoryIsACounterTrack) {
  Timeline t = tiny_timeline(777);
  t.source = "measured";
  json trace = trace_to_json(t);
  std::vector<json> counters = events_with(trace, "C");
  ASSERT_EQ(counters.size(), t.memory.size());
  EXPECT_EQ(counters[2].at("args").at("live_bytes"), 777);
  EXPECT_DOUBLE_EQ(counters[2].at("ts").get<double>(), 30.0);
  int process_names = 0;
  for (const json& e : events_with(trace, "M")) {
    if (e.at("name") == "process_name") {
      EXPECT_NE(e.at("args").at("name").get<std::string>().find("(measured)"), std::string::npos);
      ++process_names;
    }
  }
  EXPECT_GE(process_names, 1);
}

}  // namespace
}  // namespace shardline
