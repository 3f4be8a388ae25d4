#include "core/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/variation_record.h"
#include "core/op_json.h"
#include "core/scenario.h"
#include "core/units.h"
#include "core/invariant.h"

namespace shardline {

static_assert(kMaxWorldRanks <= 1 << 20 && kMaxTimelineIterations <= 1 << 10,
              "OpInterval packs rank and iteration into 21 and 11 signed bits");

using nlohmann::json;
namespace jf = json_fields;

void check_iteration_count(int iterations, const std::string& flag) { check_count_in(iterations, 1, kMaxTimelineIterations, flag); }

void check_warmup_count(int warmup, const std::string& flag) { check_count_in(warmup, 0, kMaxTimelineIterations, flag); }

namespace {
constexpr const char* kFormat = "shardline.timeline";
constexpr int kVersion = 1;
// Intervals and memory samples are written as compact rows; these name the columns.
const std::vector<std::string> kIntervalFields = {"op", "rank", "iteration", "issue_us", "start_us", "end_us"};
const std::vector<std::string> kMemoryFields = {"time_us", "bytes"};

// The first row (in file order) that repeats the (op, rank, iteration) of an earlier row:
// throws InputError naming it and the earlier one. Sorts row indices, so the cost follows the
// rows present, not the ranks or iterations claimed.
void check_no_duplicate_intervals(std::span<const OpInterval> intervals) {
  std::vector<size_t> order(intervals.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) { return std::tuple(intervals[i].op, intervals[i].rank, intervals[i].iteration, i); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  size_t repeat = intervals.size(), first = 0;
  for (size_t k = 1; k < order.size(); ++k) {
    const OpInterval& a = intervals[order[k - 1]];
    const OpInterval& b = intervals[order[k]];
    if (a.op == b.op && a.rank == b.rank && a.iteration == b.iteration && order[k] < repeat) {
      repeat = order[k];
      first = order[k - 1];
    }
  }
  if (repeat == intervals.size()) return;
  const OpInterval& iv = intervals[repeat];
  throw InputError(json_fields::index_path("intervals", repeat),
                   "op " + std::to_string(iv.op) + " is recorded twice for rank " + std::to_string(iv.rank) + ", iteration " +
                       std::to_string(iv.iteration) + " (first at " + json_fields::index_path("intervals", first) + ")");
}
}  // namespace

bool is_backend_name(std::string_view name) { return name == "sim" || name == "mpi" || name == "nccl"; }

std::vector<double> iteration_step_times_us(const Timeline& t) {
  const size_t ranks = static_cast<size_t>(std::max(t.ranks, 1));
  std::vector<StepBounds> bounds(static_cast<size_t>(t.iterations) * ranks);  // per (iteration, rank)
  for (const OpInterval& iv : t.intervals) {
    // Loading refuses intervals outside the timeline's iterations and ranks, and the simulator and exec make none.
    SHARDLINE_CHECK(iv.iteration >= 0 && iv.iteration < t.iterations && iv.rank >= 0 && static_cast<size_t>(iv.rank) < ranks,
                    "an interval outside the timeline's iterations or ranks");
    StepBounds& b = bounds[static_cast<size_t>(iv.iteration) * ranks + static_cast<size_t>(iv.rank)];
    b.issue(iv.issue_us);
    b.ran(iv.start_us, iv.end_us);
  }
  std::vector<double> steps;
  for (int it = 0; it < t.iterations; ++it) {
    double step = 0;
    for (size_t r = 0; r < ranks; ++r) {
      const StepBounds& b = bounds[static_cast<size_t>(it) * ranks + r];
      if (!b.empty()) step = std::max(step, b.end_us() - b.start_us());
    }
    steps.push_back(step);
  }
  return steps;
}

int median_step_iteration(const std::vector<double>& step_times_us) {
  std::vector<int> order(step_times_us.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return step_times_us[static_cast<size_t>(a)] < step_times_us[static_cast<size_t>(b)]; });
  return order[(order.size() - 1) / 2];
}

void set_timeline_scenario(Timeline& timeline, const Scenario& scenario) {
  timeline.memory_capacity_bytes = scenario.cluster.gpu.memory_bytes;
  timeline.workload = workload_of(scenario);
  timeline.memory_reserve = memory_reserve_of(scenario);
  timeline.memory_margin = scenario.run.memory_margin;
  timeline.variation = acting_variation(scenario.variation);
}

void set_timeline_ops(Timeline& timeline, Program&& program) {
  timeline.ops = std::move(program.ops);
  timeline.labels = std::move(program.labels);
  timeline.host_launches_per_step = program.host_launches_per_step();
  // The consumed Program's shared arrays describe ops it no longer has: release them now rather
  // than when the caller's Program goes (a million-op step's dependencies are tens of MB).
  HugePageVector<int>().swap(program.dep_ids);
  HugePageVector<TensorSlice>().swap(program.slice_lists);
  HugePageVector<SliceList>().swap(program.slice_list_ranges);
  HugePageVector<uint32_t>().swap(program.host_launches);
  for (size_t g = 0; g < timeline.group_sizes.size(); ++g) timeline.group_sizes[g] = g < program.groups.size() ? program.groups[g].size : 1;
  for (Op& op : timeline.ops) {
    op.slice_list = 0;  // a Timeline has no slice or dependency arrays
    op.deps_begin = 0;
  }
}

void set_timeline_ops(Timeline& timeline, const Program& program) {
  Program metadata;
  metadata.ops = program.ops;
  metadata.labels = program.labels;
  metadata.groups = program.groups;
  set_timeline_ops(timeline, std::move(metadata));
  timeline.host_launches_per_step = program.host_launches_per_step();
}

json timeline_to_json(const Timeline& t) {
  json j = json::object();
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["source"] = t.source;
  j["backend"] = t.backend;
  j["scenario"] = t.scenario;
  j["ranks"] = t.ranks;
  j["iterations"] = t.iterations;
  j["reported_iteration"] = t.reported_iteration;
  j["scale"] = t.scale;
  j["memory_capacity_bytes"] = t.memory_capacity_bytes;
  j["memory_margin"] = t.memory_margin;
  j["workload"] = workload_to_json(t.workload);
  j["memory_reserve"] = memory_reserve_to_json(t.memory_reserve);
  j["host_launches_per_step"] = t.host_launches_per_step;
  json ops = json::array();
  for (size_t i = 0; i < t.ops.size(); ++i) ops.push_back(op_to_json(t.labels, nullptr, t.ops[i], static_cast<int>(i), t.group_size(t.ops[i])));
  j["ops"] = std::move(ops);
  j["interval_fields"] = kIntervalFields;
  json intervals = json::array();
  for (const OpInterval& iv : t.intervals) intervals.push_back(json::array({iv.op, iv.rank, iv.iteration, iv.issue_us, iv.start_us, iv.end_us}));
  j["intervals"] = std::move(intervals);
  j["memory_fields"] = kMemoryFields;
  const auto rows = [](const std::vector<MemorySample>& samples) {
    json out = json::array();
    for (const MemorySample& m : samples) out.push_back(json::array({m.time_us, m.bytes}));
    return out;
  };
  j["memory"] = rows(t.memory);
  if (!t.memory_by_stream.empty()) j["memory_by_stream"] = rows(t.memory_by_stream);
  if (t.allocator_measured) j["allocator_measured"] = allocator_peaks_to_json(*t.allocator_measured);
  if (t.allocator_pool_peaks_bytes) j["allocator_pool_peaks_bytes"] = *t.allocator_pool_peaks_bytes;
  if (t.memory_at_peak) j["memory_at_peak"] = memory_at_peak_to_json(*t.memory_at_peak);
  if (t.variation_recorded) j["variation"] = variation_to_json(t.variation);  // {}: none
  return j;
}

json allocator_peaks_to_json(const AllocatorPeaks& peaks) {
  return {{"peak_allocated_bytes", peaks.peak_allocated_bytes}, {"peak_reserved_bytes", peaks.peak_reserved_bytes}};
}

Timeline timeline_from_json(const json& j) {
  jf::require_object(j, "");
  const std::string format = jf::get_string(j, "format", "");
  if (format != kFormat) throw InputError("format", "expected \"" + std::string(kFormat) + "\", found \"" + format + "\"");
  const int version = jf::get_int32(j, "version", "");
  if (version != kVersion) throw InputError("version", "unsupported timeline version " + std::to_string(version) + "; this build reads version " + std::to_string(kVersion));

  Timeline t;
  t.source = jf::get_string(j, "source", "");
  if (t.source != "predicted" && t.source != "measured") throw InputError("source", "expected \"predicted\" or \"measured\", found \"" + t.source + "\"");
  t.backend = jf::get_string(j, "backend", "");
  if (!is_backend_name(t.backend)) throw InputError("backend", "expected \"sim\", \"mpi\" or \"nccl\", found " + json(t.backend).dump());
  t.scenario = jf::get_string(j, "scenario", "");
  t.ranks = jf::get_int32(j, "ranks", "");
  if (t.ranks < 1 || t.ranks > kMaxWorldRanks)
    throw InputError("ranks", "must be in [1, " + std::to_string(kMaxWorldRanks) + "], found " + std::to_string(t.ranks));
  t.iterations = jf::get_int32(j, "iterations", "");
  if (t.iterations < 1 || t.iterations > kMaxTimelineIterations)
    throw InputError("iterations", "must be in [1, " + std::to_string(kMaxTimelineIterations) + "], found " + std::to_string(t.iterations));
  t.reported_iteration = jf::get_int32(j, "reported_iteration", "");
  if (t.reported_iteration < 0 || t.reported_iteration >= t.iterations) throw InputError("reported_iteration", "must be in [0, " + std::to_string(t.iterations) + ")");
  t.scale = jf::get_number(j, "scale", "");
  if (t.scale <= 0) throw InputError("scale", "must be > 0");
  t.memory_capacity_bytes = jf::get_int(j, "memory_capacity_bytes", "");
  if (t.memory_capacity_bytes < 0) throw InputError("memory_capacity_bytes", "must be >= 0");
  t.memory_margin = jf::get_number(j, "memory_margin", "");
  if (t.memory_margin < 0 || t.memory_margin >= 1) throw InputError("memory_margin", "must be in [0, 1)");
  // Both optional: timelines written before they existed read as unknown throughput and no reserve.
  if (j.contains("workload")) t.workload = workload_from_json(j.at("workload"), "workload");
  if (j.contains("memory_reserve")) t.memory_reserve = memory_reserve_from_json(j.at("memory_reserve"), "memory_reserve");
  // Optional: timelines written before 2026-11-27 (twenty-fifth session) read as unknown, 0.
  if (j.contains("host_launches_per_step")) {
    t.host_launches_per_step = jf::get_int(j, "host_launches_per_step", "");
    if (t.host_launches_per_step < 0) throw InputError("host_launches_per_step", "must be >= 0");
  }
  // Optional too: only an imported run whose traces carry the allocator's totals has it.
  if (j.contains("allocator_measured")) {
    const json& a = j.at("allocator_measured");
    jf::require_object(a, "allocator_measured");
    AllocatorPeaks peaks;
    peaks.peak_allocated_bytes = jf::get_int(a, "peak_allocated_bytes", "allocator_measured");
    peaks.peak_reserved_bytes = jf::get_int(a, "peak_reserved_bytes", "allocator_measured");
    for (const auto& [key, v] : {std::pair{"peak_allocated_bytes", peaks.peak_allocated_bytes}, std::pair{"peak_reserved_bytes", peaks.peak_reserved_bytes}})
      if (v < 0) throw InputError(jf::join_path("allocator_measured", key), "must be >= 0");
    t.allocator_measured = peaks;
  }
  // Optional: a predicted run's allocator pools (timelines written before 2026-11-27 have none).
  if (j.contains("allocator_pool_peaks_bytes")) {
    t.allocator_pool_peaks_bytes = jf::get_int(j, "allocator_pool_peaks_bytes", "");
    if (*t.allocator_pool_peaks_bytes < 0) throw InputError("allocator_pool_peaks_bytes", "must be >= 0");
  }
  // Optional: a predicted run's peak by part (timelines written before 2026-11-27, twenty-seventh session, have none).
  if (j.contains("memory_at_peak")) t.memory_at_peak = memory_at_peak_from_json(j.at("memory_at_peak"), "memory_at_peak");
  // Optional: an imported run, and timelines written before it was recorded (2026-11-27), do not know it.
  t.variation_recorded = j.contains("variation");
  if (t.variation_recorded) t.variation = variation_from_json(j.at("variation"), "variation");

  const json& ops = jf::require_array(jf::member(j, "ops", ""), "ops");
  t.ops.reserve(ops.size());
  std::array<int, kNumCommGroups> group_first_op{-1, -1, -1, -1};  // the op that stated each group's size
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = jf::index_path("ops", i);
    OpRecord read = op_from_json(ops[i], path, t.labels);
    Op& op = read.op;
    if (read.id != static_cast<int>(i)) throw InputError(jf::join_path(path, "id"), "op ids must equal their index; expected " + std::to_string(i) + ", found " + std::to_string(read.id));
    // Every micro-batch has ops, so an index is below the op count (metrics keep one slot each).
    if (op.microbatch < 0 || static_cast<size_t>(op.microbatch) >= ops.size())
      throw InputError(jf::join_path(path, "microbatch"), "micro-batch " + std::to_string(op.microbatch) + " is not in [0, " + std::to_string(ops.size()) + ")");
    // One size per group: the first op of a group states it, every later one must agree.
    const size_t g = static_cast<size_t>(op.group);
    if (group_first_op[g] < 0) {
      group_first_op[g] = static_cast<int>(i);
      t.group_sizes[g] = read.group_size;
    } else if (read.group_size != t.group_sizes[g]) {
      throw InputError(jf::join_path(path, "group_size"), "is " + std::to_string(read.group_size) + " but " +
                                                              jf::index_path("ops", static_cast<size_t>(group_first_op[g])) + ", the first op of the " +
                                                              std::string(comm_group_name(op.group)) + " group, says " + std::to_string(t.group_sizes[g]));
    }
    t.ops.push_back(op);
  }
  const int num_ops = static_cast<int>(t.ops.size());

  const json& fields = jf::member(j, "interval_fields", "");
  if (fields != json(kIntervalFields)) throw InputError("interval_fields", "expected " + json(kIntervalFields).dump() + ", found " + fields.dump());
  const json& intervals = jf::require_array(jf::member(j, "intervals", ""), "intervals");
  t.intervals.reserve(intervals.size());
  for (size_t i = 0; i < intervals.size(); ++i) {
    const std::string path = jf::index_path("intervals", i);
    const json& row = jf::require_array(intervals[i], path);
    if (row.size() != kIntervalFields.size()) throw InputError(path, "expected " + std::to_string(kIntervalFields.size()) + " values (op, rank, iteration, issue_us, start_us, end_us), found " + std::to_string(row.size()));
    OpInterval iv;
    iv.op = jf::as_int32(row[0], jf::index_path(path, 0));
    const int rank = jf::as_int32(row[1], jf::index_path(path, 1));
    const int iteration = jf::as_int32(row[2], jf::index_path(path, 2));
    iv.issue_us = jf::as_number(row[3], jf::index_path(path, 3));
    iv.start_us = jf::as_number(row[4], jf::index_path(path, 4));
    iv.end_us = jf::as_number(row[5], jf::index_path(path, 5));
    if (iv.op < 0 || iv.op >= num_ops) throw InputError(jf::index_path(path, 0), "op " + std::to_string(iv.op) + " is not in [0, " + std::to_string(num_ops) + ")");
    if (rank < 0 || rank >= t.ranks) throw InputError(jf::index_path(path, 1), "rank " + std::to_string(rank) + " is not in [0, " + std::to_string(t.ranks) + ")");
    if (iteration < 0 || iteration >= t.iterations) throw InputError(jf::index_path(path, 2), "iteration " + std::to_string(iteration) + " is not in [0, " + std::to_string(t.iterations) + ")");
    iv.rank = rank;  // in range of the packed fields: ranks <= kMaxWorldRanks, iterations <= kMaxTimelineIterations
    iv.iteration = iteration;
    // Times count from the step origin: the simulator's 0, or the pass start read on rank 0's
    // clock. So nothing on rank 0 (the only rank a predicted timeline carries) is negative. The
    // other ranks' clocks are aligned to rank 0's only within the alignment error, so their times
    // may all read early by that error (milliseconds on a loaded host); but on every rank an op
    // starts no earlier than it was issued (one clock; an issue time of 0 also reads as "not
    // recorded"). A start before either stretches the step window back past it.
    if (iv.rank == 0 || t.source == "predicted") {
      if (iv.issue_us < 0) throw InputError(jf::index_path(path, 3), "issue time " + number_text(iv.issue_us) + " us is negative, before the step origin");
      if (iv.start_us < 0) throw InputError(jf::index_path(path, 4), "start time " + number_text(iv.start_us) + " us is negative, before the step origin");
    }
    const auto within_span = [&](double us, int field) {
      if (std::abs(us) <= kMaxTimelineUs) return;
      char text[96];
      std::snprintf(text, sizeof text, "%g us is beyond the %g days a timeline may span from its origin", us, kMaxTimelineUs / 86400e6);
      throw InputError(jf::index_path(path, field), text);
    };
    within_span(iv.issue_us, 3);
    within_span(iv.start_us, 4);
    within_span(iv.end_us, 5);
    if (iv.start_us < iv.issue_us) throw InputError(jf::index_path(path, 4), "starts (" + number_text(iv.start_us) + " us) before it is issued (" + number_text(iv.issue_us) + " us)");
    if (iv.end_us < iv.start_us) throw InputError(path, "ends (" + number_text(iv.end_us) + " us) before it starts (" + number_text(iv.start_us) + " us)");
    t.intervals.push_back(iv);
  }
  check_no_duplicate_intervals(t.intervals);

  const json& mfields = jf::member(j, "memory_fields", "");
  if (mfields != json(kMemoryFields)) throw InputError("memory_fields", "expected " + json(kMemoryFields).dump() + ", found " + mfields.dump());
  const auto read_samples = [&](const char* key, std::vector<MemorySample>& out) {
    const json& memory = jf::require_array(jf::member(j, key, ""), key);
    out.reserve(memory.size());
    for (size_t i = 0; i < memory.size(); ++i) {
      const std::string path = jf::index_path(key, i);
      const json& row = jf::require_array(memory[i], path);
      if (row.size() != 2) throw InputError(path, "expected 2 values (time_us, bytes), found " + std::to_string(row.size()));
      MemorySample s;
      s.time_us = jf::as_number(row[0], jf::index_path(path, 0));
      s.bytes = jf::as_int(row[1], jf::index_path(path, 1));
      if (s.bytes < 0) throw InputError(jf::index_path(path, 1), "live bytes must be >= 0");
      if (!out.empty() && s.time_us < out.back().time_us) throw InputError(jf::index_path(path, 0), "memory samples must be in time order");
      out.push_back(s);
    }
  };
  read_samples("memory", t.memory);
  if (j.contains("memory_by_stream")) read_samples("memory_by_stream", t.memory_by_stream);  // optional
  return t;
}

}  // namespace shardline
