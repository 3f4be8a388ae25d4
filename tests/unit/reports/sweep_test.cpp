// Sweep results: memory-fit marking, the objective, the Pareto front, the recommendation and the
// outputs (the grammar and the grid: sweep_grid_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/scenario.h"
#include "reports/svg_chart.h"
#include "reports/memory_text.h"
#include "reports/sweep.h"
#include "reports/sweep_html.h"

namespace shardline {
namespace {

SweepRow row(size_t index, double step_us, int64_t peak, int64_t capacity = 1000, double exposed_us = 0) {
  SweepRow r;
  r.index = index;
  r.values = {std::to_string(index)};
  r.valid = true;
  r.metrics.step_time_us = step_us;
  r.metrics.exposed_comm_us = exposed_us;
  r.metrics.compute_busy_us = step_us - exposed_us;
  r.metrics.comm_busy_us = exposed_us + 10;
  r.metrics.overlap_efficiency = 1 - exposed_us / (exposed_us + 10);
  r.metrics.peak_memory_bytes = peak;
  r.metrics.peak_reserved_bytes = r.metrics.min_reserved_bytes = peak;  // no reserve: the tests below that need one set it
  r.metrics.memory_capacity_bytes = capacity;
  return r;
}

// A sweep over every combination of `axes` (the last axis varying fastest), row i stepping in
// 100 + i us with memory to spare, ranked by step time: the grid tests below vary only the axes.
SweepResult grid_result(std::vector<SweepAxis> axes) {
  SweepResult res;
  res.scenario = "s";
  res.axes = std::move(axes);
  size_t rows = 1;
  for (const SweepAxis& a : res.axes) rows *= a.values.size();
  for (size_t i = 0; i < rows; ++i) {
    SweepRow r = row(i, 100.0 + static_cast<double>(i), 500);
    r.values.clear();
    size_t rest = i;
    std::vector<const std::vector<std::string>*> picked(res.axes.size());
    for (size_t a = res.axes.size(); a-- > 0;) {
      picked[a] = &res.axes[a].values[rest % res.axes[a].values.size()];
      rest /= res.axes[a].values.size();
    }
    for (const auto* v : picked) r.values.insert(r.values.end(), v->begin(), v->end());
    mark_memory_fit(r, 0.1);
    res.rows.push_back(r);
  }
  res.ranked_by = resolve_objective(res.rows, SweepObjective::StepTime);
  return res;
}

SweepRow invalid_row(size_t index, const std::string& why) {
  SweepRow r;
  r.index = index;
  r.values = {std::to_string(index)};
  r.valid = false;
  r.error = why;
  return r;
}

TEST(SweepMemory, FitMarking) {
  SweepRow exact = row(0, 10, 1000);
  mark_memory_fit(exact, 0.1);
  EXPECT_TRUE(exact.fits_memory);
  EXPECT_FALSE(exact.fits_with_margin);
  SweepRow over = row(1, 10, 1001);
  mark_memory_fit(over, 0.1);
  EXPECT_FALSE(over.fits_memory);
  EXPECT_FALSE(over.fits_with_margin);
  SweepRow roomy = row(2, 10, 900);
  mark_memory_fit(roomy, 0.1);
  EXPECT_TRUE(roomy.fits_memory);
  EXPECT_TRUE(roomy.fits_with_margin);
  mark_memory_fit(roomy, 0.2);
  EXPECT_FALSE(roomy.fits_with_margin);
  SweepRow bad = invalid_row(3, "mesh.shard: 16 does not divide the world (8)");
  mark_memory_fit(bad, 0.1);
  EXPECT_FALSE(bad.fits_memory);
}

// The fit is judged on the least reserve the step needs (the allocator at capacity), not on what
// the tracker allocates nor on the typical reserve, which a full GPU's allocator flushes.
TEST(SweepMemory, FitIsJudgedOnTheLeastReserve) {
  SweepRow r = row(0, 10, 800);  // 800 allocated: would fit with the margin
  r.metrics.min_reserved_bytes = 950;
  r.metrics.peak_reserved_bytes = 1000;  // typical 1200, capped at the GPU
  mark_memory_fit(r, 0.1);
  EXPECT_TRUE(r.fits_memory);
  EXPECT_FALSE(r.fits_with_margin);
  r.metrics.min_reserved_bytes = r.metrics.peak_reserved_bytes = 1001;
  mark_memory_fit(r, 0.1);
  EXPECT_FALSE(r.fits_memory);
}

TEST(SweepObjectiveFlag, ParsesTheThreeNamesAndRejectsOthers) {
  EXPECT_EQ(parse_sweep_objective("throughput"), SweepObjective::Throughput);
  EXPECT_EQ(parse_sweep_objective("step_time"), SweepObjective::StepTime);
  EXPECT_EQ(parse_sweep_objective("memory"), SweepObjective::Memory);
  for (SweepObjective o : {SweepObjective::Throughput, SweepObjective::StepTime, SweepObjective::Memory})
    EXPECT_EQ(parse_sweep_objective(std::string(sweep_objective_name(o))), o);
  try {
    parse_sweep_objective("tokens");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--objective");
    EXPECT_NE(std::string(e.what()).find("\"tokens\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected one of: throughput, step_time, memory."), std::string::npos) << e.what();
  }
  try {
    parse_sweep_objective("THROUGHPUT");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean \"throughput\"?"), std::string::npos) << e.what();
  }
}

// A row that knows its throughput: `tokens` per GPU per step over a step of `step_us`.
SweepRow tp_row(size_t index, double step_us, double tokens, int64_t peak, double exposed_us = 0) {
  SweepRow r = row(index, step_us, peak, 1000, exposed_us);
  r.metrics.throughput.tokens_per_s_per_gpu = tokens / (step_us / 1e6);
  r.metrics.throughput.tokens_per_s = *r.metrics.throughput.tokens_per_s_per_gpu * 8;
  r.metrics.throughput.mfu = 0.4;
  return r;
}

// The case: over micro-batch size, the larger batch takes a longer step but moves more
// tokens per second. A planner wants it; the step-time objective still picks the short step.
TEST(SweepRecommend, MicroBatchSweepRecommendsTheLargerBatchForThroughput) {
  std::vector<SweepRow> rows = {
      tp_row(0, 100000, 8192, 500),   // micro_batch_size=1: 81,920 tokens/s per GPU
      tp_row(1, 180000, 16384, 700),  // micro_batch_size=2: 91,022 tokens/s per GPU, step 1.8x longer
  };
  rows[0].values = {"1"};
  rows[1].values = {"2"};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const std::vector<std::string> paths = {"model.transformer.micro_batch_size"};

  const RankedBy by_throughput = resolve_objective(rows, SweepObjective::Throughput);
  EXPECT_EQ(by_throughput.used, SweepObjective::Throughput);
  EXPECT_TRUE(by_throughput.note.empty());
  const Recommendation tp = recommend(rows, paths, 0.1, by_throughput);
  ASSERT_EQ(tp.best, std::optional<size_t>(1));
  EXPECT_EQ(tp.runner_up, std::optional<size_t>(0));
  EXPECT_NE(tp.text.find("highest tokens/s per GPU"), std::string::npos) << tp.text;
  EXPECT_NE(tp.text.find("  model.transformer.micro_batch_size=2\n"), std::string::npos) << tp.text;
  EXPECT_NE(tp.text.find("it moves 11.1% more tokens/s per GPU (91,022 vs 81,920)"), std::string::npos) << tp.text;
  EXPECT_NE(tp.text.find("2.00x the tokens per GPU per step (16,384 vs 8,192) in 1.80x the step time"), std::string::npos) << tp.text;
  EXPECT_EQ(pareto_front(rows, SweepObjective::Throughput), (std::vector<size_t>{1, 0}));  // best throughput first

  const Recommendation st = recommend(rows, paths, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  ASSERT_EQ(st.best, std::optional<size_t>(0));
  EXPECT_NE(st.text.find("fastest configuration"), std::string::npos) << st.text;
  // ... and says that the runner-up does twice the work in its longer step.
  EXPECT_NE(st.text.find("note: the runner-up carries 2.00x the tokens per step (131,072 vs 65,536): a shorter step is not "
                         "a higher throughput"),
            std::string::npos)
      << st.text;
  EXPECT_EQ(tp.text.find("note:"), std::string::npos) << tp.text;  // the same model: no FLOPs note
  // On (step time, memory) the larger batch is dominated and drops off the front entirely.
  EXPECT_EQ(pareto_front(rows, SweepObjective::StepTime), (std::vector<size_t>{0}));
}

// Rows within 0.05% on the objective are a tie in effect: the explanation says so rather than
// "0.001% more tokens/s per GPU (788 vs 788)" (an audit found that line).
TEST(SweepRecommend, NearTiesAreSaidToBeTies) {
  std::vector<SweepRow> rows = {tp_row(0, 100000, 1000, 500), tp_row(1, 100001, 1000, 500)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  for (SweepObjective o : {SweepObjective::Throughput, SweepObjective::StepTime}) {
    const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, o));
    ASSERT_EQ(rec.best, std::optional<size_t>(0));
    EXPECT_NE(rec.text.find("in effect a tie, and either serves"), std::string::npos) << rec.text;
  }
  rows[1] = tp_row(1, 101000, 1000, 500);  // 1% apart: a real difference
  const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  EXPECT_EQ(rec.text.find("in effect a tie"), std::string::npos) << rec.text;
}

// A near tie is decided by the second key: an audit's sweep recommended 8,707.82 tokens/s per GPU
// needing 0.5 GiB more over 8,707.67 ("in effect a tie, and either serves"). Within 0.05% the
// lower reserve (for the memory objective, the shorter step) wins; beyond it, the objective.
TEST(SweepRecommend, NearTiesGoToTheLowerReserve) {
  std::vector<SweepRow> rows = {tp_row(0, 100000, 1000, 600), tp_row(1, 100002, 1000, 500), tp_row(2, 100001, 1000, 550)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  for (SweepObjective o : {SweepObjective::Throughput, SweepObjective::StepTime}) {
    const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, o));
    ASSERT_EQ(rec.best, std::optional<size_t>(1)) << rec.text;
    EXPECT_EQ(rec.runner_up, std::optional<size_t>(0)) << rec.text;  // the best by the objective
    EXPECT_NE(rec.text.find("in effect a tie, and is chosen for its lower peak memory (500 B vs 600 B reserve needed)"),
              std::string::npos)
        << rec.text;
  }
  rows[1] = tp_row(1, 100100, 1000, 500);  // 0.1% slower: no longer a tie, the faster row wins
  mark_memory_fit(rows[1], 0.1);
  const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  EXPECT_EQ(rec.best, std::optional<size_t>(2)) << rec.text;  // row 2 is within the tie and needs less than row 0
  // Memory: reserves within 0.05% go to the shorter step.
  std::vector<SweepRow> mem = {tp_row(0, 200, 1000, 100000), tp_row(1, 100, 1000, 100010)};
  for (auto& r : mem) {
    r.metrics.memory_capacity_bytes = 1'000'000;
    mark_memory_fit(r, 0.1);
  }
  const Recommendation m = recommend(mem, {"x"}, 0.1, resolve_objective(mem, SweepObjective::Memory));
  ASSERT_EQ(m.best, std::optional<size_t>(1)) << m.text;
  EXPECT_NE(m.text.find("in effect a tie, and is chosen for its shorter step"), std::string::npos) << m.text;
}

// Same tokens per step (a bucket-size sweep): the throughput gain is the shorter step, and the
// explanation splits it into compute busy and exposed comm as the step-time objective does.
TEST(SweepRecommend, ThroughputWithEqualTokensExplainsTheShorterStep) {
  std::vector<SweepRow> rows = {tp_row(0, 130, 1000, 500, 40), tp_row(1, 100, 1000, 600, 10)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  ASSERT_EQ(rec.best, std::optional<size_t>(1));
  EXPECT_NE(rec.text.find("both carry 1,000 tokens per GPU per step, so the gain is the shorter step"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("mostly exposed communication"), std::string::npos) << rec.text;
}

TEST(SweepRecommend, ThroughputTiesGoToLowerMemory) {
  std::vector<SweepRow> rows = {tp_row(0, 100, 1000, 600), tp_row(1, 100, 1000, 500)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  ASSERT_EQ(rec.best, std::optional<size_t>(1));
  EXPECT_NE(rec.text.find("ties with the runner-up on tokens/s per GPU and is chosen for its lower peak memory"), std::string::npos)
      << rec.text;
}

// Explicit units without model.seq_len: tokens/s is unknown, so throughput cannot rank the rows;
// they are ranked by step time and the recommendation says so.
TEST(SweepRecommend, UnknownTokensFallBackToStepTimeWithANote) {
  std::vector<SweepRow> rows = {row(0, 120, 500), row(1, 100, 500), invalid_row(2, "bad")};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const RankedBy by = resolve_objective(rows, SweepObjective::Throughput);
  EXPECT_EQ(by.requested, SweepObjective::Throughput);
  EXPECT_EQ(by.used, SweepObjective::StepTime);
  EXPECT_NE(by.note.find("tokens/s is unknown for every valid configuration"), std::string::npos) << by.note;
  const Recommendation rec = recommend(rows, {"x"}, 0.1, by);
  ASSERT_EQ(rec.best, std::optional<size_t>(1));
  EXPECT_NE(rec.text.find("fastest configuration"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("  note: tokens/s is unknown"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("model.seq_len"), std::string::npos) << rec.text;
  // One row that knows is not enough: every valid row must.
  rows[0] = tp_row(0, 120, 1000, 500);
  EXPECT_EQ(resolve_objective(rows, SweepObjective::Throughput).used, SweepObjective::StepTime);
  EXPECT_NE(resolve_objective(rows, SweepObjective::Throughput).note.find("1 of 2 valid configurations"), std::string::npos);
}

TEST(SweepRecommend, MemoryObjectivePicksTheLowestReservedThenTheShorterStep) {
  std::vector<SweepRow> rows = {tp_row(0, 100, 1000, 700), tp_row(1, 150, 1000, 400), tp_row(2, 140, 1000, 400)};
  rows[1].metrics.min_reserved_bytes = rows[2].metrics.min_reserved_bytes = 450;
  rows[0].metrics.min_reserved_bytes = 800;
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Memory));
  ASSERT_EQ(rec.best, std::optional<size_t>(2));
  EXPECT_EQ(rec.runner_up, std::optional<size_t>(1));
  EXPECT_NE(rec.text.find("lowest reserve needed"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("ties with the runner-up on peak memory (450 B reserve needed) and is chosen for its shorter step"),
            std::string::npos) << rec.text;
  EXPECT_EQ(pareto_front(rows, SweepObjective::Memory), (std::vector<size_t>{2, 0}));  // least memory first
  rows = {tp_row(0, 100, 1000, 700), tp_row(1, 150, 1000, 400)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation less = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Memory));
  ASSERT_EQ(less.best, std::optional<size_t>(1));
  EXPECT_NE(less.text.find("it needs 300 B less peak memory (reserve needed 400 B vs 700 B"), std::string::npos) << less.text;
}

// Throughput Pareto front: most tokens/s per GPU and least reserved memory.
TEST(SweepPareto, ThroughputAgainstMemory) {
  std::vector<SweepRow> rows = {tp_row(0, 100, 1000, 500),   // 10,000 tokens/s: front
                                tp_row(1, 100, 900, 400),    // 9,000: front (less memory)
                                tp_row(2, 100, 800, 450),    // dominated by 1
                                tp_row(3, 100, 1000, 600),   // dominated by 0
                                invalid_row(4, "bad")};
  EXPECT_EQ(pareto_front(rows, SweepObjective::Throughput), (std::vector<size_t>{0, 1}));
}

TEST(SweepPareto, HandMadePoints) {
  std::vector<SweepRow> rows = {
      row(0, 10, 100),  // front: fastest
      row(1, 12, 50),   // front
      row(2, 11, 120),  // dominated by 0
      row(3, 12, 60),   // dominated by 1 (same step, more memory)
      row(4, 15, 50),   // dominated by 1 (same memory, slower)
      row(5, 20, 10),   // front: smallest memory
      invalid_row(6, "rejected"),
      row(7, 11, 80),   // front
  };
  EXPECT_EQ(pareto_front(rows, SweepObjective::StepTime), (std::vector<size_t>{0, 7, 1, 5}));
}

TEST(SweepPareto, IdenticalPointsBothStay) {
  std::vector<SweepRow> rows = {row(0, 10, 100), row(1, 10, 100), row(2, 9, 200)};
  EXPECT_EQ(pareto_front(rows, SweepObjective::StepTime), (std::vector<size_t>{2, 0, 1}));
}

TEST(SweepRecommend, FastestThatFitsWithMarginAndWhy) {
  std::vector<SweepRow> rows = {
      row(0, 80, 1200, 1000, 5),   // fastest but over capacity
      row(1, 95, 950, 1000, 5),    // fits capacity, not the margin
      row(2, 100, 800, 1000, 10),  // best that fits with margin
      row(3, 130, 700, 1000, 40),  // runner-up: slower by exposed comm
      invalid_row(4, "bad"),
  };
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"policy.bucket_bytes"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  ASSERT_TRUE(rec.best.has_value());
  EXPECT_EQ(*rec.best, 2u);
  ASSERT_TRUE(rec.runner_up.has_value());
  EXPECT_EQ(*rec.runner_up, 3u);
  EXPECT_NE(rec.text.find("exposed communication"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("1 exceeds GPU memory"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("1 invalid"), std::string::npos) << rec.text;
}

TEST(SweepRecommend, ComputeTermNamedWhenItShrinks) {
  std::vector<SweepRow> rows = {row(0, 100, 500, 1000, 10), row(1, 120, 500, 1000, 10)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  ASSERT_EQ(rec.best, std::optional<size_t>(0));
  EXPECT_NE(rec.text.find("mostly compute busy"), std::string::npos) << rec.text;
}

// Equal step time: the lower peak memory wins and the text says so; equal in both: the first
// in grid order, and the text does not pretend one is better.
TEST(SweepRecommend, TiesAreBrokenByMemoryThenGridOrder) {
  std::vector<SweepRow> rows = {row(0, 100, 600, 1000, 10), row(1, 100, 500, 1000, 10)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  ASSERT_EQ(rec.best, std::optional<size_t>(1));
  EXPECT_NE(rec.text.find("chosen for its lower peak memory"), std::string::npos) << rec.text;
  rows = {row(0, 100, 500, 1000, 10), row(1, 100, 500, 1000, 10)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  ASSERT_EQ(rec.best, std::optional<size_t>(0));
  EXPECT_NE(rec.text.find("ties with the runner-up on step time and on peak memory"), std::string::npos) << rec.text;
  EXPECT_EQ(rec.text.find("lower peak memory"), std::string::npos) << rec.text;
}

// Nothing fits: the recommendation names the configuration closest to fitting, how far over the
// GPU it is, and what its peak holds, so the planner knows what to cut.
TEST(SweepRecommend, NothingFitsNamesTheClosestAndWhatItsPeakHolds) {
  std::vector<SweepRow> rows = {row(0, 100, 3000), row(1, 100, 2000), invalid_row(2, "bad")};
  MemoryAtPeak peak;
  peak.sharded_params_bytes = 500;
  peak.optimizer_state_bytes = 1000;
  peak.bytes_by_kind[static_cast<size_t>(MemoryKind::Activations)] = 500;
  rows[1].metrics.memory_at_peak = peak;
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  EXPECT_FALSE(rec.best.has_value());
  EXPECT_NE(rec.text.find("none: no valid configuration fits"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("closest: x=1 needs 2.0 KiB reserved (the allocator at capacity) of 1000 B, 1000 B over the GPU\n"),
            std::string::npos)
      << rec.text;
  EXPECT_NE(rec.text.find("its allocated peak (2.0 KiB): optimizer state 1000 B, sharded parameters 500 B, activations 500 B\n"),
            std::string::npos)
      << rec.text;
  EXPECT_NE(rec.text.find("2 over capacity"), std::string::npos) << rec.text;
  // One that fits the GPU but not the margin is named as such.
  rows[1].metrics.min_reserved_bytes = rows[1].metrics.peak_reserved_bytes = 950;
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation margin = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  EXPECT_NE(margin.text.find("closest: x=1 needs 950 B reserved (the allocator at capacity) of 1000 B: it fits the GPU, not the margin\n"),
            std::string::npos)
      << margin.text;
}

// A configuration that fits only by the allocator flushing its cache is charged nothing for the
// flushes by the model, so it ranks after every one that fits without, however fast; it is named
// when it would have won. With nothing else fitting, it is recommended and marked.
TEST(SweepRecommend, ConfigurationsThatFlushTheCacheRankAfterThoseThatDoNot) {
  std::vector<SweepRow> rows = {tp_row(0, 80, 1000, 500), tp_row(1, 100, 1000, 500), tp_row(2, 120, 1000, 400)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  rows[0].metrics.allocator_cache_flushes = true;
  for (SweepObjective o : {SweepObjective::Throughput, SweepObjective::StepTime}) {
    const Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, o));
    ASSERT_EQ(rec.best, std::optional<size_t>(1)) << rec.text;
    EXPECT_EQ(rec.runner_up, std::optional<size_t>(2)) << rec.text;
    EXPECT_NE(rec.text.find("ranked after it: 1 configuration that fits only by the allocator flushing its cache"), std::string::npos)
        << rec.text;
    EXPECT_NE(rec.text.find("the best of them, x=0,"), std::string::npos) << rec.text;
  }
  // A flushing row that would not have won is not named.
  rows[0] = tp_row(0, 130, 1000, 500);
  mark_memory_fit(rows[0], 0.1);
  rows[0].metrics.allocator_cache_flushes = true;
  Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  ASSERT_EQ(rec.best, std::optional<size_t>(1)) << rec.text;
  EXPECT_EQ(rec.text.find("ranked after it"), std::string::npos) << rec.text;
  // Every row flushes: the best of them is recommended, marked as flushing.
  for (auto& r : rows) r.metrics.allocator_cache_flushes = true;
  rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  ASSERT_EQ(rec.best, std::optional<size_t>(1)) << rec.text;
  EXPECT_NE(rec.text.find("(fits by the allocator flushing its cache: slower steps)"), std::string::npos) << rec.text;
  EXPECT_EQ(rec.text.find("ranked after it"), std::string::npos) << rec.text;
}

// Byte buckets or one collective per parameter model another framework than FSDP2's groups: a
// sweep over them says which grouping the recommendation runs and names the best of each other
// one, and says nothing when every row groups alike.
TEST(SweepRecommend, RowsThatGroupTheirCollectivesDifferentlyAreNamedByGrouping) {
  PolicySpec fsdp2, buckets, unfused;
  buckets.bucket_bytes = 1 << 30;
  unfused.comm_fusion = false;
  EXPECT_EQ(collective_grouping_of(fsdp2), "fsdp2_groups");
  EXPECT_EQ(collective_grouping_of(buckets), "byte_buckets");
  EXPECT_EQ(collective_grouping_of(unfused), "per_parameter");
  EXPECT_EQ(collective_grouping_text("byte_buckets"), "byte buckets (ZeRO-3 / DeepSpeed style)");
  PolicySpec fsdp1;
  fsdp1.optimizer_params = OptimizerParams::Fsdp1FlatParams;
  EXPECT_EQ(collective_grouping_of(fsdp1), "fsdp1_flat_params");

  std::vector<SweepRow> rows = {tp_row(0, 100, 1000, 500), tp_row(1, 90, 1000, 500), tp_row(2, 95, 1000, 500),
                                tp_row(3, 92, 1000, 500), tp_row(4, 80, 1000, 500), tp_row(5, 98, 1000, 500)};
  rows[0].collective_grouping = rows[2].collective_grouping = collective_grouping_of(fsdp2);
  rows[1].collective_grouping = rows[3].collective_grouping = collective_grouping_of(buckets);
  rows[4].collective_grouping = collective_grouping_of(unfused);
  rows[5].collective_grouping = collective_grouping_of(fsdp1);
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  rows[4].metrics.allocator_cache_flushes = true;  // the fastest, but it flushes: not a grouping's best
  Recommendation rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  ASSERT_EQ(rec.best, std::optional<size_t>(1)) << rec.text;
  ASSERT_EQ(rec.runner_up, std::optional<size_t>(3)) << rec.text;
  EXPECT_NE(rec.text.find("the recommended one runs byte buckets (ZeRO-3 / DeepSpeed style)\n"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("  the best that runs FSDP2 groups (one per unit): x=2 at"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("  the best that runs FSDP1 flat parameters (one per unit): x=5 at"), std::string::npos) << rec.text;
  EXPECT_EQ(rec.text.find("the best that runs one collective per parameter"), std::string::npos) << rec.text;
  EXPECT_NE(rec.text.find("the best of them, x=4,"), std::string::npos) << rec.text;  // named as flushing instead
  // The runner-up is not named twice.
  rows[2].collective_grouping = collective_grouping_of(buckets);
  rows[3].collective_grouping = collective_grouping_of(fsdp2);
  rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  ASSERT_EQ(rec.runner_up, std::optional<size_t>(3)) << rec.text;
  EXPECT_NE(rec.text.find("  the best that runs FSDP2 groups (one per unit): the runner-up\n"), std::string::npos) << rec.text;
  // One grouping, or none recorded (rows read from an older sweep.json): no note.
  for (auto& r : rows) r.collective_grouping = collective_grouping_of(fsdp2);
  rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  EXPECT_EQ(rec.text.find("group their collectives differently"), std::string::npos) << rec.text;
  for (auto& r : rows) r.collective_grouping.clear();
  rec = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  EXPECT_EQ(rec.text.find("group their collectives differently"), std::string::npos) << rec.text;
}

// Every kind of allocation has its words in the summary's "allocated at the peak" line.
TEST(MemoryText, EveryPartHasALabel) {
  MemoryAtPeak peak;
  peak.sharded_params_bytes = 1;
  peak.optimizer_state_bytes = 2;
  for (int k = 0; k < kMemoryLabelCount; ++k) peak.bytes_by_kind[static_cast<size_t>(k)] = 100 + k;
  const std::string text = memory_parts_text(peak);
  for (const char* label : {"sharded parameters 1 B", "optimizer state 2 B", "other 100 B", "all-gather buffers 101 B",
                            "activations", "optimizer temporaries 108 B"})
    EXPECT_NE(text.find(label), std::string::npos) << label << ": " << text;
  EXPECT_EQ(text.rfind("optimizer temporaries 108 B", 0), 0u) << text;  // largest first
}

// Varying a knob that changes the model (the MLP, kv heads, the layers) changes the FLOPs
// per token: tokens/s then compares different models, and the recommendation says so.
TEST(SweepRecommend, DifferentModelFlopsPerTokenAreNoted) {
  std::vector<SweepRow> rows = {tp_row(0, 100000, 8192, 500), tp_row(1, 80000, 8192, 500)};
  rows[0].metrics.throughput.model_tflops_per_gpu = *rows[0].metrics.throughput.tokens_per_s_per_gpu * 61.1e9 / 1e12;
  rows[1].metrics.throughput.model_tflops_per_gpu = *rows[1].metrics.throughput.tokens_per_s_per_gpu * 49.8e9 / 1e12;
  rows[1].metrics.throughput.mfu = 0.387;
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"model.transformer.mlp"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  ASSERT_EQ(rec.best, std::optional<size_t>(1));
  EXPECT_NE(rec.text.find("note: the two differ in model FLOPs per token (49.8 vs 61.1 GFLOP): they are different models, so "
                          "tokens/s compares different work; MFU (38.7% vs 40.0%) says which uses the GPU better."),
            std::string::npos)
      << rec.text;
}

// Explicit units (no tokens): a step of more micro-batches runs more compute ops; the step-time
// ranking says the two do different work.
TEST(SweepRecommend, DifferentComputeOpsPerStepAreNotedWhereTokensAreUnknown) {
  std::vector<SweepRow> rows = {row(0, 100, 500), row(1, 180, 500)};
  rows[0].metrics.by_kind["compute"].count = 12;
  rows[1].metrics.by_kind["compute"].count = 24;
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation rec = recommend(rows, {"policy.micro_batches"}, 0.1, resolve_objective(rows, SweepObjective::Throughput));
  EXPECT_NE(rec.text.find("note: the runner-up runs 2.00x the compute ops per step (24 vs 12)"), std::string::npos) << rec.text;
}

// A seed or a jitter is the run's environment, not a setting: a sweep over only such paths
// recommends nothing (it states the range); with settings besides, each setting is judged by
// its worst case over the environment's points.
TEST(SweepRecommend, EnvironmentPathsAreNotChosenButJudgedOver) {
  const std::vector<std::string> env_only = {"variation.seed"};
  std::vector<SweepRow> rows = {row(0, 100, 500), row(1, 120, 500), row(2, 110, 500)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation none = recommend(rows, env_only, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  EXPECT_FALSE(none.best.has_value());
  EXPECT_NE(none.text.find("Recommendation: none. Every varied path describes the run's environment (variation.seed)"),
            std::string::npos)
      << none.text;
  EXPECT_NE(none.text.find("best 100.00 us (variation.seed=0), worst 120.00 us (variation.seed=1)"), std::string::npos) << none.text;

  // prefetch 0 / 1 (the setting) x seed 1 / 2 (the environment): prefetch 1 is faster at seed 1
  // (90 us against 100) but slower at seed 2 (130 against 105): by its worst case, prefetch 0 wins.
  const std::vector<std::string> paths = {"policy.forward_prefetch", "variation.seed"};
  rows = {row(0, 100, 500), row(1, 105, 500), row(2, 90, 500), row(3, 130, 500)};
  const std::vector<std::vector<std::string>> values = {{"0", "1"}, {"0", "2"}, {"1", "1"}, {"1", "2"}};
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].values = values[i];
    mark_memory_fit(rows[i], 0.1);
  }
  Recommendation rec = recommend(rows, paths, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  EXPECT_EQ(rec.best, std::optional<size_t>(1));       // prefetch 0's worst case (seed 2, 105 us)
  EXPECT_EQ(rec.runner_up, std::optional<size_t>(3));  // prefetch 1's (seed 2, 130 us)
  // The Pareto front is over those worst cases too: no seed is on it as a choice. Over every point
  // it would hold prefetch 1 at seed 1 (90 us), the fastest of all.
  EXPECT_EQ(pareto_front(rows, paths, SweepObjective::StepTime), (std::vector<size_t>{1}));
  EXPECT_EQ(pareto_front(rows, SweepObjective::StepTime), (std::vector<size_t>{2}));
  EXPECT_EQ(pareto_front(rows, {"policy.forward_prefetch", "policy.backward_prefetch"}, SweepObjective::StepTime),
            (std::vector<size_t>{2}));  // without environment paths: every row
  EXPECT_NE(rec.text.find("note: variation.seed describes the run's environment, not a setting: each setting is judged by its "
                          "worst case over the 2 environment points"),
            std::string::npos)
      << rec.text;
  // A setting that does not fit in one environment point does not fit.
  rows[1].metrics.min_reserved_bytes = 5000;
  mark_memory_fit(rows[1], 0.1);
  rec = recommend(rows, paths, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  EXPECT_EQ(rec.best, std::optional<size_t>(3));
  EXPECT_NE(rec.text.find("it is the only configuration that fits"), std::string::npos) << rec.text;
}

// "1 exceeds", "2 exceed".
TEST(SweepRecommend, TheCountOfRowsOverMemoryAgreesInNumber) {
  std::vector<SweepRow> rows = {row(0, 100, 500), row(1, 90, 2000)};
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const Recommendation one = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  EXPECT_NE(one.text.find("; 1 exceeds GPU memory,"), std::string::npos) << one.text;
  rows.push_back(row(2, 80, 3000));
  mark_memory_fit(rows.back(), 0.1);
  const Recommendation two = recommend(rows, {"x"}, 0.1, resolve_objective(rows, SweepObjective::StepTime));
  EXPECT_NE(two.text.find("; 2 exceed GPU memory,"), std::string::npos) << two.text;
}

TEST(SweepOutput, CsvHasOneRowPerConfigurationWithReasons) {
  std::vector<SweepRow> rows = {row(0, 100, 500), invalid_row(1, "mesh.shard: 16, 32 do not divide \"world\"")};
  rows[0].metrics.by_kind["all_gather"] = {3, 300, 12.5};
  rows[0].metrics.by_kind["compute"] = {2, 0, 40.0};  // its per-kind column must not repeat the name compute_busy_us
  for (auto& r : rows) mark_memory_fit(r, 0.1);
  const std::string csv = sweep_csv(rows, {"mesh.shard"});
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < csv.size()) {
    size_t nl = csv.find('\n', start);
    lines.push_back(csv.substr(start, nl - start));
    start = nl + 1;
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("index,mesh.shard,valid,fits_memory", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(",peak_memory_bytes,peak_reserved_bytes,min_reserved_bytes,allocator_cache_flushes,memory_capacity_bytes,samples_per_s,tokens_per_s,"
                          "tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,hfu,"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(",500,500,500,false,1000,,,,,,,"), std::string::npos) << lines[1];  // unknown throughput: empty cells
  EXPECT_NE(lines[0].find("all_gather_op_busy_us"), std::string::npos);
  // Every header names one column: the per-kind ones never repeat a metric's name.
  std::set<std::string> names;
  std::istringstream header(lines[0]);
  for (std::string name; std::getline(header, name, ',');) EXPECT_TRUE(names.insert(name).second) << name;
  EXPECT_NE(lines[1].find(",12.5,"), std::string::npos) << lines[1];
  // Same column count on every line (quoted cells count once).
  auto columns = [](const std::string& line) {
    size_t n = 1;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  EXPECT_EQ(columns(lines[1]), columns(lines[0]));
  EXPECT_EQ(columns(lines[2]), columns(lines[0]));
  EXPECT_NE(lines[2].find("\"mesh.shard: 16, 32 do not divide \"\"world\"\"\""), std::string::npos) << lines[2];
}

// A joint axis moves its paths together: plotted against mesh.shard (no one-path axis is
// numeric), the series are the settings of the other axes (one line per comm fusion setting), not
// one point per mesh.replicate value, which mesh.shard determines.
TEST(SweepOutput, PlotSeriesLeaveOutTheJointPathsThatMoveWithX) {
  const std::string html = sweep_html(grid_result({SweepAxis{{"mesh.shard", "mesh.replicate"}, {{"8", "8"}, {"16", "4"}, {"32", "2"}}},
                                                   SweepAxis{{"policy.comm_fusion"}, {{"true"}, {"false"}}}}));
  EXPECT_NE(html.find("against mesh.shard"), std::string::npos);
  EXPECT_NE(html.find(">policy.comm_fusion=true<"), std::string::npos) << "one series per comm fusion setting";
  EXPECT_NE(html.find(">policy.comm_fusion=false<"), std::string::npos);
  EXPECT_EQ(html.find(">mesh.replicate="), std::string::npos) << "a series per replicate value";
}

// The grid of a checkpointing study: a joint axis (mode / every N layers) and the micro-batch
// size. The x axis is the one-path axis, micro_batch_size, not checkpoint_every: along that,
// checkpoint_every=1 holds three different modes, and a line would run through all of them.
TEST(SweepOutput, TheXAxisIsAOnePathAxisBeforeAJointOne) {
  const std::string html =
      sweep_html(grid_result({parse_vary("model.transformer.activation_checkpointing/model.transformer.checkpoint_every=none/1,full/1,full/2,selective_op/1"),
                              parse_vary("model.transformer.micro_batch_size=2,4")}));
  EXPECT_NE(html.find("Step time against model.transformer.micro_batch_size<"), std::string::npos) << html.substr(0, 3000);
  EXPECT_EQ(html.find("against model.transformer.checkpoint_every"), std::string::npos);
  // One line per checkpointing setting, named whole.
  for (const char* setting : {"none, model.transformer.checkpoint_every=1<", "full, model.transformer.checkpoint_every=1<",
                              "full, model.transformer.checkpoint_every=2<", "selective_op, model.transformer.checkpoint_every=1<"})
    EXPECT_NE(html.find(">model.transformer.activation_checkpointing=" + std::string(setting)), std::string::npos) << setting;
}

// Only a joint axis is numeric: x is its checkpoint_every, which does not determine the mode, so
// the mode names the lines (none at 1, full at 1 and 2, selective_op at 1), and no line holds two
// configurations at one x. checkpoint_every is a count: its ticks are whole numbers.
TEST(SweepOutput, AJointXNamesTheLinesByItsPathsThatXDoesNotDetermine) {
  const std::string html =
      sweep_html(grid_result({parse_vary("model.transformer.activation_checkpointing/model.transformer.checkpoint_every=none/1,full/1,full/2,selective_op/1")}));
  EXPECT_NE(html.find("Step time against model.transformer.checkpoint_every<"), std::string::npos) << html.substr(0, 3000);
  for (const char* mode : {"none", "full", "selective_op"})
    EXPECT_NE(html.find(">model.transformer.activation_checkpointing=" + std::string(mode) + "<"), std::string::npos) << mode;
  // Every polyline (a line of two or more points) has distinct x values.
  const std::regex line("<polyline [^>]*points=\"([^\"]*)\"");
  size_t lines = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), line); it != std::sregex_iterator(); ++it, ++lines) {
    std::set<std::string> xs;
    std::istringstream points((*it)[1].str());
    for (std::string point; points >> point;)
      EXPECT_TRUE(xs.insert(point.substr(0, point.find(','))).second) << "two points at one x: " << (*it)[1];
  }
  EXPECT_EQ(lines, 2u) << "full's line, on the step and the overlap plots";
  const std::string line_plots = html.substr(0, html.find("<h2>Memory against"));
  const std::regex tick("text-anchor=\"middle\">([0-9.]+)</text>");
  size_t ticks = 0;
  for (auto it = std::sregex_iterator(line_plots.begin(), line_plots.end(), tick); it != std::sregex_iterator(); ++it, ++ticks)
    EXPECT_EQ((*it)[1].str().find('.'), std::string::npos) << "a fractional tick on a count: " << (*it)[1];
  EXPECT_GE(ticks, 2u);
}

// A bucket-size axis with `unit` among the sizes: the unit row has no place on the size axis, so
// it is named under the plots with its value (it may be the best configuration).
TEST(SweepOutput, RowsWhoseXIsAWordAreNamedUnderThePlots) {
  SweepResult res;
  res.scenario = "s";
  res.axes = {SweepAxis{{"policy.bucket_bytes"}, {{"unit"}, {"1048576"}, {"4194304"}}}};
  for (size_t i = 0; i < 3; ++i) {
    SweepRow r = row(i, i == 0 ? 50.0 : 100.0 + static_cast<double>(i), 500);
    r.values = {res.axes[0].values[i][0]};
    mark_memory_fit(r, 0.1);
    res.rows.push_back(r);
  }
  res.ranked_by = resolve_objective(res.rows, SweepObjective::StepTime);
  const std::string html = sweep_html(res);
  EXPECT_NE(html.find("Not on these axes (policy.bucket_bytes is not a number): policy.bucket_bytes=unit: 50"), std::string::npos)
      << html.substr(0, 4000);
}

// Points with a variation carry their straggler cost: the Pareto table shows it, and only then.
TEST(SweepOutput, ThePagesParetoTableShowsTheStragglerCostWhereThereIsOne) {
  SweepResult res = grid_result({SweepAxis{{"policy.forward_prefetch"}, {{"0"}, {"1"}}}});
  res.pareto = pareto_front(res.rows, SweepObjective::StepTime);
  EXPECT_EQ(sweep_html(res).find("straggler cost"), std::string::npos);
  for (SweepRow& r : res.rows) r.straggler_cost = 1.2345;
  const std::string html = sweep_html(res);
  EXPECT_NE(html.find("<th>straggler cost</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>1.234</td>"), std::string::npos) << html.substr(html.find("Pareto front"), 1500);
}

// Needs under a GiB are plotted in MiB (a host scenario's 34-43 MiB read as ticks of 0.034 GiB);
// a GPU's stay in GiB.
TEST(SweepOutput, TheMemoryPlotsUnitFollowsTheSizes) {
  SweepResult res;
  res.scenario = "s";
  res.axes = {SweepAxis{{"policy.bucket_bytes"}, {{"1048576"}, {"4194304"}}}};
  for (size_t i = 0; i < 2; ++i) {
    SweepRow r = row(i, 100.0 + static_cast<double>(i), (34 + 9 * static_cast<int64_t>(i)) << 20, int64_t{2} << 30);
    r.values = {res.axes[0].values[i][0]};
    mark_memory_fit(r, 0.1);
    res.rows.push_back(r);
  }
  res.ranked_by = resolve_objective(res.rows, SweepObjective::StepTime);
  EXPECT_NE(sweep_html(res).find("reserve needed (MiB)"), std::string::npos);
  for (SweepRow& r : res.rows) r.metrics.min_reserved_bytes = r.metrics.peak_reserved_bytes = r.metrics.peak_memory_bytes = int64_t{3} << 30;
  const std::string gib = sweep_html(res);
  EXPECT_NE(gib.find("reserve needed (GiB)"), std::string::npos);
  EXPECT_EQ(gib.find("reserve needed (MiB)"), std::string::npos);
}

// The charts' bold titles in `html`.
std::vector<std::string> chart_titles(const std::string& html) {
  std::vector<std::string> out;
  const std::regex re("font-size=\"14\" font-weight=\"bold\">([^<]*)</text>");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it) out.push_back((*it)[1]);
  return out;
}

// Rows of different GPUs (a varied preset over A100 40 GB, A100 80 GB and H100): no single capacity
// line; a note under the plot lists each, and the title stays short enough to be drawn whole.
TEST(SweepOutput, TheMemoryPlotOfMixedGpusListsEachCapacityUnderATitleThatFits) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  SweepResult res;
  res.scenario = "s";
  res.axes = {parse_vary("cluster.preset=a100-40gb-dgx,a100-80gb-dgx,h100-sxm-dgx")};
  const int64_t capacities[] = {40 * kGiB, 80 * kGiB, 79 * kGiB + 6 * kGiB / 10};
  for (size_t i = 0; i < 3; ++i) {
    SweepRow r = tp_row(i, 100.0 - static_cast<double>(i), 1000, 30 * kGiB);
    r.metrics.memory_capacity_bytes = capacities[i];
    r.values = res.axes[0].values[i];
    mark_memory_fit(r, 0.1);
    res.rows.push_back(r);
  }
  res.ranked_by = resolve_objective(res.rows, SweepObjective::Throughput);
  ASSERT_EQ(res.ranked_by.used, SweepObjective::Throughput);  // the longest title: "... against tokens/s per GPU"
  const std::string html = sweep_html(res);
  EXPECT_NE(html.find(">GPU memory per configuration: 40.0 GiB, 79.6 GiB, 80.0 GiB<"), std::string::npos) << html.substr(0, 5000);
  EXPECT_EQ(html.find("GPU memory 80.0 GiB"), std::string::npos) << "a single line at the larger capacity";
  const std::vector<std::string> titles = chart_titles(html);
  EXPECT_NE(std::find(titles.begin(), titles.end(), "Reserve needed against tokens/s per GPU (Pareto front marked)"), titles.end());
  for (const std::string& title : titles) EXPECT_LE(chart_title_width(title), Chart{}.width) << "cut off: " << title;
}

// One GPU, every peak far under its memory: no line (it would squash the points), the capacity
// is noted under the plot, not in the title.
TEST(SweepOutput, AFarCapacityIsNotedUnderTheMemoryPlot) {
  SweepResult res;
  res.scenario = "s";
  res.axes = {SweepAxis{{"policy.forward_prefetch"}, {{"0"}, {"1"}}}};
  res.rows = {row(0, 100, 100, 1000), row(1, 90, 120, 1000)};
  for (SweepRow& r : res.rows) mark_memory_fit(r, 0.1);
  res.ranked_by = resolve_objective(res.rows, SweepObjective::StepTime);
  const std::string html = sweep_html(res);
  EXPECT_NE(html.find(">GPU memory 1000 B<"), std::string::npos) << html;
  EXPECT_EQ(html.find("stroke-dasharray"), std::string::npos) << "a capacity line far above every point";
  for (const std::string& title : chart_titles(html)) {
    EXPECT_EQ(title.find("GPU memory"), std::string::npos) << title;
    EXPECT_LE(chart_title_width(title), Chart{}.width) << "cut off: " << title;
  }
}

TEST(SweepOutput, RowJsonRoundTrip) {
  SweepRow r = row(4, 123.5, 777);
  r.values = {"1048576"};
  mark_memory_fit(r, 0.1);
  const std::vector<std::string> paths = {"policy.bucket_bytes"};
  const nlohmann::json j = sweep_row_to_json(r, paths);
  EXPECT_EQ(j["settings"]["policy.bucket_bytes"], 1048576);
  r.collective_grouping = "byte_buckets";
  const SweepRow back = sweep_row_from_json(sweep_row_to_json(r, paths), paths);
  EXPECT_EQ(back.collective_grouping, r.collective_grouping);  // MPI sweeps pass rows as JSON
  EXPECT_EQ(back.index, 4u);
  EXPECT_EQ(back.values, r.values);
  EXPECT_TRUE(back.valid);
  EXPECT_EQ(back.metrics.step_time_us, 123.5);
  EXPECT_EQ(back.metrics.peak_memory_bytes, 777);
  EXPECT_TRUE(back.fits_with_margin);
  const SweepRow bad = sweep_row_from_json(sweep_row_to_json(invalid_row(5, "why"), {"x"}), {"x"});
  EXPECT_FALSE(bad.valid);
  EXPECT_EQ(bad.error, "why");
}

}  // namespace
}  // namespace shardline
