#include "reports/compare.h"

#include "core/statistics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_load.h"
#include "core/program_json.h"
#include "core/scenario.h"
#include "core/units.h"
#include "core/variation_record.h"
#include "reports/html.h"
#include "reports/outputs.h"
#include "reports/svg_timeline.h"
#include "reports/throughput_text.h"

namespace shardline {
namespace {

// Compare reads complete timelines: the simulator and the executors record every op once per
// rank and iteration, so ranks x iterations x ops must equal the rows present. Checked in O(1)
// before the metrics allocate anything per rank, so a file claiming 2147483647 ranks or
// iterations is refused instead of exhausting memory. The reader has already refused rows that
// repeat an (op, rank, iteration) or fall outside the claimed ranges, so fewer rows than claimed
// means some are missing. Throws InputError naming the JSON key.
// The ranks a timeline holds intervals of, ascending (a predicted every-rank timeline keeps some
// of its ranks: rank 0, the slowest, the fastest, any asked for). Bounded by the intervals, not
// by the ranks the file claims.
std::vector<int> ranks_held(const Timeline& t) {
  std::vector<int> ranks;
  for (const OpInterval& iv : t.intervals) ranks.push_back(iv.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

// Every op once per rank and iteration; `subset_ok`: of the ranks the timeline holds, which may
// be fewer than its world (a predicted every-rank timeline).
void check_complete(const Timeline& t, bool subset_ok = false) {
  if (t.ops.empty()) throw InputError("ops", "the timeline has no ops");
  const double ops = static_cast<double>(t.ops.size());
  const double rows = static_cast<double>(t.intervals.size());
  const int ranks_kept = subset_ok ? static_cast<int>(ranks_held(t).size()) : t.ranks;
  if (subset_ok && ranks_kept >= 1 && ranks_kept < t.ranks && t.ranks <= kMaxWorldRanks) {
    if (static_cast<double>(ranks_kept) * static_cast<double>(t.iterations) * ops != rows)
      throw InputError("intervals", std::to_string(ranks_kept) + " ranks held x " + std::to_string(t.iterations) + " iterations x " +
                                        std::to_string(t.ops.size()) + " ops need one interval each, but the file holds " +
                                        std::to_string(t.intervals.size()) + " intervals");
    return;
  }
  const std::string held = "but the file holds " + std::to_string(t.intervals.size()) + " intervals";
  if (static_cast<double>(t.iterations) * ops > rows)
    throw InputError("iterations", std::to_string(t.iterations) + " iterations of " + std::to_string(t.ops.size()) + " ops claimed, " + held);
  if (static_cast<double>(t.ranks) * ops > rows)
    throw InputError("ranks", std::to_string(t.ranks) + " ranks running " + std::to_string(t.ops.size()) + " ops claimed, " + held);
  if (static_cast<double>(t.ranks) * static_cast<double>(t.iterations) * ops != rows)
    throw InputError("intervals", std::to_string(t.ranks) + " ranks x " + std::to_string(t.iterations) + " iterations x " +
                                      std::to_string(t.ops.size()) + " ops need one interval each, " + held);
}

void check_complete(const Timeline& t, const char* which, bool subset_ok) {
  try {
    check_complete(t, subset_ok);
  } catch (const InputError& e) {
    throw InputError("timelines", std::string("the ") + which + " timeline: " + e.what());
  }
}

// op id -> interval of (rank, iteration); nullptr where the op did not run there.
std::vector<const OpInterval*> intervals_by_op(const Timeline& t, int rank, int iteration) {
  std::vector<const OpInterval*> by_op(t.ops.size(), nullptr);
  for (const auto& iv : t.intervals)
    if (iv.rank == rank && iv.iteration == iteration && iv.op >= 0 && iv.op < static_cast<int>(by_op.size()))
      by_op[iv.op] = &iv;
  return by_op;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  // A value that rounds to zero never prints as "-0.000": +0.000 where the format shows a sign,
  // else 0.000.
  if (buf[0] == '-' && std::strspn(buf + 1, "0.") == std::strcspn(buf + 1, " %p"))
    return std::strchr(f, '+') != nullptr ? "+" + std::string(buf + 1) : std::string(buf + 1);
  return buf;
}
std::string us(double v) { return fmt("%.1f", v); }
std::string pct(double v) { return fmt("%+.1f%%", 100.0 * v); }

nlohmann::json op_json(const OpComparison& o) {
  return {{"op", o.op},
          {"name", o.name},
          {"kind", op_kind_name(o.kind)},
          {"predicted_start_us", o.predicted_start_us},
          {"predicted_duration_us", o.predicted_duration_us},
          {"measured_start_us", o.measured_start_us},
          {"measured_duration_us", o.measured_duration_us},
          {"start_error_us", o.start_error_us()},
          {"duration_error_us", o.duration_error_us()},
          {"disagreement_us", o.disagreement_us()}};
}

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }

nlohmann::json optional_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// The six throughput values, in table order: the compare.json key, the table label, the value,
// its error in the Comparison, how it prints, and whether its error is relative (rates) or
// absolute (MFU and HFU, fractions: percentage points).
struct ThroughputField {
  const char* key;
  const char* label;
  std::optional<double> Throughput::*value;
  std::optional<double> Comparison::*error;
  std::string (*format)(double);
  bool relative;
};
const ThroughputField kThroughputFields[] = {
    {"tokens_per_s", "tokens/s", &Throughput::tokens_per_s, &Comparison::tokens_per_s_error, format_per_s, true},
    {"tokens_per_s_per_gpu", "tokens/s per GPU", &Throughput::tokens_per_s_per_gpu, &Comparison::tokens_per_s_per_gpu_error,
     format_per_s, true},
    {"samples_per_s", "samples/s", &Throughput::samples_per_s, &Comparison::samples_per_s_error, format_per_s, true},
    {"model_tflops_per_gpu", "model TFLOP/s / GPU", &Throughput::model_tflops_per_gpu, &Comparison::model_tflops_per_gpu_error,
     format_tflops, true},
    {"mfu", "MFU", &Throughput::mfu, &Comparison::mfu_error, format_utilisation, false},
    {"hfu", "HFU", &Throughput::hfu, &Comparison::hfu_error, format_utilisation, false}};

// The rows under step time, overlap and exposed comm in the table and the page: the host's issue
// time where both sides recorded issue times, throughput, then peak memory against the real
// allocator when known. {label, predicted, measured, error}.
std::vector<std::vector<std::string>> summary_rows(const Comparison& c) {
  std::vector<std::vector<std::string>> rows;
  // The host's time to issue the step: where the measured one is far above the predicted one,
  // the host set the measured step (cluster.host_launch, docs/compute-model.md "The host"). A
  // timeline without issue times (every issue 0) has none, and no row is shown.
  if (c.measured.host_issue_us > 0 && c.predicted.host_issue_us > 0)
    rows.push_back({"host issue (us)", us(c.predicted.host_issue_us), us(c.measured.host_issue_us),
                    pct(c.predicted.host_issue_us / c.measured.host_issue_us - 1)});
  for (const ThroughputField& f : kThroughputFields) {
    const std::optional<double>& e = c.*f.error;
    rows.push_back({f.label, format_or_na(c.predicted.throughput.*f.value, f.format), format_or_na(c.measured.throughput.*f.value, f.format),
                    !e ? std::string("n/a") : f.relative ? pct(*e) : fmt("%+.1f pp", 100.0 * *e)});
  }
  // The real allocator's peaks, when the measured side carries them (imported traces).
  if (const auto& a = c.allocator_memory) {
    rows.push_back({"peak allocated", format_bytes(a->predicted_allocated_bytes), format_bytes(a->measured_allocated_bytes), pct(a->allocated_error)});
    rows.push_back({"peak reserved", format_bytes(a->predicted_reserved_bytes), format_bytes(a->measured_reserved_bytes), pct(a->reserved_error)});
  }
  return rows;
}

// What differs between the two workloads where both sides know it, the first of GPUs, tokens,
// samples and model FLOPs per step ("65,536 vs 131,072 tokens per step"); empty when nothing does.
std::string workload_difference(const Workload& p, const Workload& m) {
  const auto differ = [](double a, double b) { return a > 0 && b > 0 && std::abs(a - b) > 1e-9 * std::max(a, b); };
  const auto known = [](const Workload& w) { return w.tokens_per_step > 0 || w.samples_per_step > 0 || w.model_flops_per_step > 0; };
  if (known(p) && known(m) && p.gpus != m.gpus) return std::to_string(p.gpus) + " vs " + std::to_string(m.gpus) + " GPUs";
  if (differ(p.tokens_per_step, m.tokens_per_step))
    return format_per_s(p.tokens_per_step) + " vs " + format_per_s(m.tokens_per_step) + " tokens per step";
  if (differ(p.samples_per_step, m.samples_per_step))
    return format_per_s(p.samples_per_step) + " vs " + format_per_s(m.samples_per_step) + " samples per step";
  if (differ(p.model_flops_per_step, m.model_flops_per_step)) return "different model FLOPs per step";
  return "";
}

// Said under the table when the two sides ran with different variation.
std::string variation_note(const Comparison& c) {
  return "note: the two runs had different variation (" + c.variation_difference +
         "): the step-time and per-rank errors compare different inputs";
}

// Said under the table when the reported measured iteration drew other jitter than the prediction.
std::string jitter_note(const Comparison& c) {
  return "note: with compute jitter every iteration draws its own factors; the prediction played iteration 0's, the "
         "measured step reported is iteration " +
         std::to_string(c.measured_iteration) +
         "'s: the per-rank and per-op rows compare different draws, the step a sample of the same distribution";
}

// Said under the table when the two sides did not process the same work per step.
std::string workload_note(const Comparison& c) {
  return "note: the two runs do not process the same work per step (" + c.workload_difference +
         "): the step-time and per-op errors compare different work; the throughput rows compare rates";
}

}  // namespace

double OpComparison::disagreement_us() const { return std::max(std::abs(start_error_us()), std::abs(end_error_us())); }

namespace {
MeasuredSpread measured_spread(const Timeline& measured, double predicted_step_us) {
  MeasuredSpread s;
  std::vector<double> steps;
  for (int i = 0; i < measured.iterations; ++i) steps.push_back(compute_metrics(measured, -1, i).step_time_us);
  s.iterations = static_cast<int>(steps.size());
  // The median of an even count is the lower middle: the reported iteration's step (exec reports
  // that one, median_step_iteration), so the step row and this line state the same number.
  s.median_us = steps.empty() ? 0 : steps[static_cast<size_t>(median_step_iteration(steps))];
  // Interpolated, and never past the median: with two iterations the interpolated p10 lies above
  // the lower middle, and a band that leaves out its own median reads as a contradiction.
  s.p10_us = std::min(quantile(steps, 0.1), s.median_us);
  s.p90_us = std::max(quantile(steps, 0.9), s.median_us);
  s.median_error = s.median_us > 0 ? (predicted_step_us - s.median_us) / s.median_us : 0;
  // Inside up to rounding: a timeline's times pass through text and microsecond arithmetic, and
  // an imported one through the profiler's whole nanoseconds, so a prediction equal to the
  // measurement may differ from it by up to a nanosecond (0.3 ns on an import round trip).
  const double rounding_us = std::max(1e-3, 1e-9 * std::fabs(s.p90_us));
  s.prediction_inside = s.p10_us - rounding_us <= predicted_step_us && predicted_step_us <= s.p90_us + rounding_us;
  return s;
}
}  // namespace

std::vector<double> collective_wait_per_rank_us(const Timeline& t, const std::vector<GroupInfo>& groups, int iteration) {
  const size_t n = t.ops.size();
  // start[rank * n + op]: NaN where the rank has no interval for it.
  std::vector<double> start(static_cast<size_t>(t.ranks) * n, std::numeric_limits<double>::quiet_NaN());
  for (const OpInterval& iv : t.intervals)
    if (iv.iteration == iteration && iv.rank >= 0 && iv.rank < t.ranks && iv.op >= 0 && static_cast<size_t>(iv.op) < n)
      start[static_cast<size_t>(iv.rank) * n + static_cast<size_t>(iv.op)] = iv.start_us;
  std::vector<double> wait(static_cast<size_t>(t.ranks), 0.0);
  for (size_t op = 0; op < n; ++op) {
    if (!is_collective(t.ops[op].kind)) continue;
    const size_t g = static_cast<size_t>(t.ops[op].group);
    if (g >= groups.size()) throw InputError("program.groups", "op " + std::to_string(op) + " names group " + std::to_string(g) + ", which the table does not have");
    const GroupInfo& group = groups[g];
    if (group.size <= 1) continue;
    if (t.ranks % group.block() != 0)
      throw InputError("program.groups", "group \"" + group.name + "\" (" + std::to_string(group.size) + " ranks, stride " +
                                             std::to_string(group.stride) + ") does not tile the timeline's " + std::to_string(t.ranks) + " ranks");
    for (int r = 0; r < t.ranks; ++r) {
      const double mine = start[static_cast<size_t>(r) * n + op];
      if (std::isnan(mine)) continue;
      double last = mine;
      for (int k = 0; k < group.size; ++k) {
        const double theirs = start[static_cast<size_t>(group.member(r, k)) * n + op];
        if (!std::isnan(theirs)) last = std::max(last, theirs);
      }
      wait[static_cast<size_t>(r)] += last - mine;
    }
  }
  return wait;
}

Comparison compare_timelines(const Timeline& predicted, const Timeline& measured, double tolerance, const std::vector<GroupInfo>* groups) {
  check_complete(predicted, "predicted", /*subset_ok=*/true);
  check_complete(measured, "measured", false);
  if (predicted.ops.size() != measured.ops.size())
    throw InputError("timelines", "the predicted timeline has " + std::to_string(predicted.ops.size()) +
                                      " ops and the measured one " + std::to_string(measured.ops.size()) +
                                      "; compare needs two runs of the same Program");
  // A run with smaller buffers (exec --scale K) moves 1/K of the bytes in times that are not the
  // Program's, and ops of other sizes (another dtype, bucket or shape) are another Program.
  if (predicted.scale != measured.scale)
    throw InputError("timelines", "the measured run divided every buffer by " + number_text(measured.scale) + " (exec --scale) and the prediction by " +
                                      number_text(predicted.scale) + ": their times are not the same Program's; compare a run without --scale");
  for (size_t i = 0; i < predicted.ops.size(); ++i) {
    const Op& a = predicted.ops[i];
    const Op& b = measured.ops[i];
    if (a.kind != b.kind || predicted.name(a) != measured.name(b))
      throw InputError("timelines", "op " + std::to_string(i) + " is " + std::string(op_kind_name(a.kind)) + " \"" + predicted.name(a) +
                                        "\" when predicted but " + std::string(op_kind_name(b.kind)) + " \"" + measured.name(b) +
                                        "\" when measured; compare needs two runs of the same Program");
    if ((is_collective(a.kind) || a.kind == OpKind::CopyIn || a.kind == OpKind::CopyOut) && a.bytes() != b.bytes())
      throw InputError("timelines", "op " + std::to_string(i) + " \"" + predicted.name(a) + "\" moves " + std::to_string(a.bytes()) +
                                        " bytes when predicted but " + std::to_string(b.bytes()) +
                                        " when measured (another dtype, bucket size or shape?); compare needs two runs of the same Program");
  }
  Comparison c;
  c.scenario = measured.scenario.empty() ? predicted.scenario : measured.scenario;
  c.measured_backend = measured.backend;
  c.measured_is_prediction = measured.source == "predicted";
  c.tolerance = tolerance;
  c.measured = compute_metrics(measured);
  const StepWindow mw = step_window(measured);
  // The ops are compared on one rank: the measured side's slowest. An every-rank prediction that
  // holds that rank is read on it too (with an injected straggler, its slowest rank may tie with
  // one that waited for it, and a prediction of another rank would show the straggler's compute
  // as errors); otherwise the prediction's own slowest rank.
  const std::vector<int> predicted_holds = ranks_held(predicted);
  const bool same_rank = predicted.ranks > 1 && std::binary_search(predicted_holds.begin(), predicted_holds.end(), mw.rank);
  const StepWindow slowest = step_window(predicted);
  const StepWindow pw = same_rank ? step_window(predicted, mw.rank) : slowest;
  // The predicted metrics are the slowest rank's; where the measured rank ties for slowest, its
  // own (the step time is the same, the overlap and exposed comm are that rank's).
  const bool ties = same_rank && pw.end_us - pw.start_us == slowest.end_us - slowest.start_us;
  c.predicted = ties ? compute_metrics(predicted, mw.rank) : compute_metrics(predicted);
  c.predicted_rank = pw.rank;
  c.predicted_every_rank = predicted.ranks > 1;
  c.measured_rank = mw.rank;
  c.measured_iteration = mw.iteration;
  if (!(c.measured.step_time_us > 0)) throw InputError("timelines", "the measured step time is zero");
  if (measured.allocator_measured && c.predicted.memory_recorded) {
    const auto error = [](int64_t p, int64_t m) { return m > 0 ? static_cast<double>(p - m) / static_cast<double>(m) : 0.0; };
    AllocatorMemoryComparison a;
    a.predicted_allocated_bytes = c.predicted.peak_memory_bytes;
    a.measured_allocated_bytes = measured.allocator_measured->peak_allocated_bytes;
    a.predicted_reserved_bytes = c.predicted.peak_allocator_reserved_bytes;
    a.measured_reserved_bytes = measured.allocator_measured->peak_reserved_bytes;
    a.allocated_error = error(a.predicted_allocated_bytes, a.measured_allocated_bytes);
    a.reserved_error = error(a.predicted_reserved_bytes, a.measured_reserved_bytes);
    c.allocator_memory = a;
  }
  c.step_error = (c.predicted.step_time_us - c.measured.step_time_us) / c.measured.step_time_us;
  c.within_tolerance = std::abs(c.step_error) <= tolerance;
  c.measured_spread = measured_spread(measured, c.predicted.step_time_us);
  // A representative prediction stands for every rank; an every-rank one for the ranks it holds.
  std::vector<double> waits, predicted_waits;
  if (groups != nullptr) waits = collective_wait_per_rank_us(measured, *groups, mw.iteration);
  // An every-rank prediction that kept every rank knows each rank's waiting too.
  if (groups != nullptr && predicted.ranks == measured.ranks && predicted.ranks > 1 &&
      predicted_holds.size() == static_cast<size_t>(predicted.ranks))
    predicted_waits = collective_wait_per_rank_us(predicted, *groups, pw.iteration);
  for (int r = 0; r < measured.ranks; ++r) {
    const int pr = predicted.ranks == 1 ? 0 : r;
    if (!std::binary_search(predicted_holds.begin(), predicted_holds.end(), pr)) continue;
    RankComparison rc;
    rc.rank = r;
    rc.predicted_step_us = compute_metrics(predicted, pr, pw.iteration).step_time_us;
    rc.measured_step_us = compute_metrics(measured, r, mw.iteration).step_time_us;
    rc.error = rc.measured_step_us > 0 ? (rc.predicted_step_us - rc.measured_step_us) / rc.measured_step_us : 0;
    if (!waits.empty()) rc.measured_wait_us = waits[static_cast<size_t>(r)];
    if (!predicted_waits.empty()) rc.predicted_wait_us = predicted_waits[static_cast<size_t>(r)];
    c.by_rank.push_back(rc);
  }
  for (const ThroughputField& f : kThroughputFields) {
    const std::optional<double>&p = c.predicted.throughput.*f.value, &m = c.measured.throughput.*f.value;
    if (p && m && (!f.relative || *m > 0)) c.*f.error = f.relative ? (*p - *m) / *m : *p - *m;
  }
  c.workload_difference = workload_difference(predicted.workload, measured.workload);
  // Only where the prediction played the same jitter: otherwise the variation note says it all.
  c.jitter_draws_differ = measured.variation_recorded && predicted.variation_recorded && measured.variation.jitter.cv > 0 &&
                          predicted.variation == measured.variation && mw.iteration != 0;
  if (predicted.variation_recorded && measured.variation_recorded && !(predicted.variation == measured.variation))
    c.variation_difference = "predicted: " + variation_text(predicted.variation) + "; measured: " + variation_text(measured.variation);

  const auto pivs = intervals_by_op(predicted, pw.rank, pw.iteration);
  const auto mivs = intervals_by_op(measured, mw.rank, mw.iteration);
  std::map<int, std::vector<const OpComparison*>> per_kind;
  for (size_t i = 0; i < predicted.ops.size(); ++i) {
    const Op& op = predicted.ops[i];
    if (is_marker(op.kind)) continue;
    if (!pivs[i] || !mivs[i])
      throw InputError("timelines", "op " + std::to_string(i) + " \"" + predicted.name(op) + "\" has no interval in the " +
                                        (pivs[i] ? "measured" : "predicted") + " step");
    OpComparison o;
    o.op = static_cast<int>(i);
    o.name = predicted.name(op);
    o.kind = op.kind;
    o.predicted_start_us = pivs[i]->start_us - pw.start_us;
    o.predicted_duration_us = pivs[i]->end_us - pivs[i]->start_us;
    o.measured_start_us = mivs[i]->start_us - mw.start_us;
    o.measured_duration_us = mivs[i]->end_us - mivs[i]->start_us;
    c.ops.push_back(o);
  }
  for (const auto& o : c.ops) per_kind[static_cast<int>(o.kind)].push_back(&o);
  for (const auto& [kind, list] : per_kind) {
    std::vector<double> d, s;
    for (const OpComparison* o : list) {
      d.push_back(std::abs(o->duration_error_us()));
      s.push_back(std::abs(o->start_error_us()));
    }
    KindErrors k;
    k.kind = std::string(op_kind_name(static_cast<OpKind>(kind)));
    k.count = static_cast<int>(list.size());
    k.duration_median_abs_error_us = quantile(d, 0.5);
    k.duration_p90_abs_error_us = quantile(d, 0.9);
    k.start_median_abs_error_us = quantile(s, 0.5);
    k.start_p90_abs_error_us = quantile(s, 0.9);
    c.by_kind.push_back(k);
  }
  // Ops that agree exactly are not "disagreeing": two identical timelines list none.
  for (const auto& o : c.ops)
    if (o.disagreement_us() > 0) c.worst.push_back(o);
  std::stable_sort(c.worst.begin(), c.worst.end(),
                   [](const OpComparison& a, const OpComparison& b) { return a.disagreement_us() > b.disagreement_us(); });
  if (c.worst.size() > 10) c.worst.resize(10);
  return c;
}

namespace {
nlohmann::json by_rank_json(const Comparison& c) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankComparison& r : c.by_rank) {
    ranks.push_back({{"rank", r.rank}, {"predicted_step_time_us", r.predicted_step_us},
                     {"measured_step_time_us", r.measured_step_us}, {"step_error", r.error}});
    if (r.measured_wait_us) ranks.back()["measured_collective_wait_us"] = *r.measured_wait_us;
    if (r.predicted_wait_us) ranks.back()["predicted_collective_wait_us"] = *r.predicted_wait_us;
  }
  return ranks;
}
}  // namespace

void check_tolerance(double tolerance) {
  if (!(tolerance >= 0 && tolerance <= kMaxTolerance))
    throw InputError("--tolerance", number_text(tolerance) + ": must be a relative error in [0, 1e6], e.g. 0.10");
}

MachineDrift drift_between(double predicted_step_us, double after_run_predicted_step_us, double tolerance) {
  MachineDrift d;
  d.predicted_step_us = predicted_step_us;
  d.after_run_predicted_step_us = after_run_predicted_step_us;
  d.relative_change = after_run_predicted_step_us / predicted_step_us - 1;
  // As a difference of times, so that a move of exactly the tolerance is not over it by a rounding.
  d.drifted = std::abs(after_run_predicted_step_us - predicted_step_us) > tolerance * predicted_step_us;
  return d;
}

nlohmann::json comparison_to_json(const Comparison& c) {
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& k : c.by_kind)
    kinds.push_back({{"kind", k.kind},
                     {"count", k.count},
                     {"duration_median_abs_error_us", k.duration_median_abs_error_us},
                     {"duration_p90_abs_error_us", k.duration_p90_abs_error_us},
                     {"start_median_abs_error_us", k.start_median_abs_error_us},
                     {"start_p90_abs_error_us", k.start_p90_abs_error_us}});
  nlohmann::json worst = nlohmann::json::array();
  for (const auto& o : c.worst) worst.push_back(op_json(o));
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& o : c.ops) ops.push_back(op_json(o));
  nlohmann::json out = {{"scenario", c.scenario},
          {"measured_backend", c.measured_backend},
          {"measured_is_prediction", c.measured_is_prediction},
          {"measured_rank", c.measured_rank},
          {"measured_iteration", c.measured_iteration},
          {"predicted_rank", c.predicted_rank},
          {"predicted_step_time_us", c.predicted.step_time_us},
          {"measured_step_time_us", c.measured.step_time_us},
          {"step_error", c.step_error},
          {"tolerance", c.tolerance},
          {"within_tolerance", c.within_tolerance},
          {"by_rank", by_rank_json(c)},
          {"measured_spread", {{"iterations", c.measured_spread.iterations},
                               {"median_step_time_us", c.measured_spread.median_us},
                               {"p10_step_time_us", c.measured_spread.p10_us},
                               {"p90_step_time_us", c.measured_spread.p90_us},
                               {"median_error", c.measured_spread.median_error},
                               {"prediction_inside", c.measured_spread.prediction_inside}}},
          {"predicted_overlap_efficiency", c.predicted.overlap_efficiency},
          {"measured_overlap_efficiency", c.measured.overlap_efficiency},
          {"predicted_exposed_comm_us", c.predicted.exposed_comm_us},
          {"measured_exposed_comm_us", c.measured.exposed_comm_us},
          {"workloads_differ", c.workloads_differ()},
          {"variation_difference", c.variation_difference},
          {"jitter_draws_differ", c.jitter_draws_differ},
          {"predicted", metrics_to_json(c.predicted)},
          {"measured", metrics_to_json(c.measured)},
          {"by_kind", kinds},
          {"worst_ops", worst},
          {"ops", ops}};
  // Each throughput value as predicted_<key>, measured_<key> and <key>_error (null: unknown).
  for (const ThroughputField& f : kThroughputFields) {
    out[std::string("predicted_") + f.key] = optional_json(c.predicted.throughput.*f.value);
    out[std::string("measured_") + f.key] = optional_json(c.measured.throughput.*f.value);
    out[std::string(f.key) + "_error"] = optional_json(c.*f.error);
  }
  out["allocator_memory"] = nullptr;
  if (const auto& a = c.allocator_memory)
    out["allocator_memory"] = {{"predicted_peak_allocated_bytes", a->predicted_allocated_bytes},
                               {"measured_peak_allocated_bytes", a->measured_allocated_bytes},
                               {"peak_allocated_error", a->allocated_error},
                               {"predicted_peak_allocator_reserved_bytes", a->predicted_reserved_bytes},
                               {"measured_peak_reserved_bytes", a->measured_reserved_bytes},
                               {"peak_reserved_error", a->reserved_error}};
  out["machine_drift"] = nullptr;
  if (const auto& d = c.machine_drift)
    out["machine_drift"] = {{"predicted_step_time_us", d->predicted_step_us},
                            {"after_run_predicted_step_time_us", d->after_run_predicted_step_us},
                            {"relative_change", d->relative_change},
                            {"drifted", d->drifted}};
  return out;
}

// "measured step over 20 iterations: median 25.66 ms, p10 .. p90 25.4 .. 27.0 ms; the prediction
// (23.1 ms, -10.0% from the median) is outside that run-to-run spread"
namespace {
std::string spread_line(const Comparison& c) {
  const MeasuredSpread& s = c.measured_spread;
  if (s.iterations == 1)
    return "measured step from 1 iteration: " + format_time_us(s.median_us) +
           "; one iteration has no run-to-run spread to place the prediction in (measure more iterations)";
  // With an even count the median is the lower of the two middle steps, a step that ran (the
  // reported iteration's), not their mean.
  const std::string which = s.iterations % 2 == 0 ? "(the lower of the two middle steps) " : "";
  return "measured step over " + std::to_string(s.iterations) + " iteration" + (s.iterations == 1 ? "" : "s") + ": median " + which +
         format_time_us(s.median_us) + ", p10 .. p90 " + format_time_us(s.p10_us) + " .. " + format_time_us(s.p90_us) +
         "; the prediction (" + format_time_us(c.predicted.step_time_us) + ", " + pct(s.median_error) +
         " from the median) is " + (s.prediction_inside ? "inside" : "outside") + " that run-to-run spread";
}

// "machine drift: the calibration after the run predicts the step at 25.53 ms, +11.3% from the
// 22.94 ms of the calibration before it, more than the tolerance: ..."
std::string drift_line(const MachineDrift& d) {
  return "machine drift: the calibration after the run predicts the step at " + format_time_us(d.after_run_predicted_step_us) +
         ", " + pct(d.relative_change) + " from the " + format_time_us(d.predicted_step_us) + " of the calibration before it, " +
         (d.drifted ? "more than the tolerance: the machine changed speed while validate ran, so the step error is not a "
                      "clean test of the model, whichever way it came out; run validate again on an idle machine"
                    : "within the tolerance: the machine kept its speed");
}

// The per-rank rows are shown when there is more than one, or when the prediction simulated every
// rank (it may hold only some of them: rank 0, the slowest, the fastest, the ones asked for).
bool shows_per_rank(const Comparison& c) { return c.by_rank.size() > 1 || (c.predicted_every_rank && !c.by_rank.empty()); }
}  // namespace

std::string comparison_table(const Comparison& c) {
  std::ostringstream o;
  o << "compare: " << c.scenario << " (measured: " << c.measured_backend << ", rank " << c.measured_rank << ", iteration "
    << c.measured_iteration << (c.predicted_every_rank ? "; predicted: rank " + std::to_string(c.predicted_rank) : "") << ")\n";
  if (c.measured_is_prediction)
    o << "note: MEASURED_DIR holds a prediction (" << c.measured_backend << "), not a measured run: this compares two predictions\n";
  o << "\n";
  o << pad("", 22) << pad("predicted", 14) << pad("measured", 14) << "error\n";
  o << pad("step time (us)", 22) << pad(us(c.predicted.step_time_us), 14) << pad(us(c.measured.step_time_us), 14)
    << pct(c.step_error) << (c.within_tolerance ? "  (within " : "  (OVER ") << fmt("%.3g%%", 100 * c.tolerance) << ")\n";
  o << pad("overlap efficiency", 22) << pad(fmt("%.3f", c.predicted.overlap_efficiency), 14)
    << pad(fmt("%.3f", c.measured.overlap_efficiency), 14)
    << fmt("%+.3f", c.predicted.overlap_efficiency - c.measured.overlap_efficiency) << "\n";
  o << pad("exposed comm (us)", 22) << pad(us(c.predicted.exposed_comm_us), 14) << pad(us(c.measured.exposed_comm_us), 14)
    << fmt("%+.1f", c.predicted.exposed_comm_us - c.measured.exposed_comm_us) << "\n";
  for (const auto& row : summary_rows(c)) o << pad(row[0], 22) << pad(row[1], 14) << pad(row[2], 14) << row[3] << "\n";
  if (c.workloads_differ()) o << "\n" << workload_note(c) << "\n";
  if (!c.variation_difference.empty()) o << "\n" << variation_note(c) << "\n";
  if (c.jitter_draws_differ) o << "\n" << jitter_note(c) << "\n";
  o << "\n" << spread_line(c) << "\n";
  if (c.machine_drift) o << drift_line(*c.machine_drift) << "\n";
  o << "\n";
  if (shows_per_rank(c)) {
    const bool waits = c.by_rank.front().measured_wait_us.has_value();
    const bool predicted_waits = c.by_rank.front().predicted_wait_us.has_value();
    o << "step time per rank (us):\n" << pad("rank", 8) << pad("predicted", 14) << pad("measured", 14)
      << (waits ? pad("error", 10) + (predicted_waits ? "waiting in collectives (for the last member): predicted, measured"
                                                      : "measured waiting in collectives (for the last member)")
                : "error")
      << "\n";
    for (size_t k = 0; k < c.by_rank.size() && k < 16; ++k) {
      const RankComparison& r = c.by_rank[k];
      o << pad(std::to_string(r.rank), 8) << pad(us(r.predicted_step_us), 14) << pad(us(r.measured_step_us), 14)
        << (r.measured_wait_us ? pad(pct(r.error), 10) + (r.predicted_wait_us ? pad(us(*r.predicted_wait_us), 14) : "") +
                                     us(*r.measured_wait_us)
                               : pct(r.error))
        << "\n";
    }
    if (c.by_rank.size() > 16) o << "  ... " << c.by_rank.size() - 16 << " more ranks in compare.json\n";
    o << "\n";
  }
  o << "absolute errors per op kind (us):\n"
    << pad("kind", 16) << pad("ops", 6) << pad("dur median", 12) << pad("dur p90", 12) << pad("start median", 14)
    << "start p90\n";
  for (const auto& k : c.by_kind)
    o << pad(k.kind, 16) << pad(std::to_string(k.count), 6) << pad(us(k.duration_median_abs_error_us), 12)
      << pad(us(k.duration_p90_abs_error_us), 12) << pad(us(k.start_median_abs_error_us), 14) << us(k.start_p90_abs_error_us)
      << "\n";
  o << "\nops that disagree most (start / duration, predicted vs measured, us):\n";
  if (c.worst.empty()) o << "  none: every op starts and ends as predicted\n";
  // The name column is as wide as the longest name shown, so long unit names keep the columns aligned.
  size_t name_width = 18;
  for (const auto& w : c.worst) name_width = std::max(name_width, w.name.size() + 1);
  for (const auto& w : c.worst)
    o << "  " << pad('#' + std::to_string(w.op), 7) << pad(w.name, name_width) << pad(std::string(op_kind_name(w.kind)), 15)
      << "start " << us(w.predicted_start_us) << " / " << us(w.measured_start_us) << "  dur "
      << us(w.predicted_duration_us) << " / " << us(w.measured_duration_us) << "\n";
  return o.str();
}

std::string comparison_html(const Comparison& c, const Timeline& predicted, const Timeline& measured) {
  std::ostringstream b;
  b << "<h1>" << html_escape("compare: " + c.scenario) << "</h1>\n<table>\n"
    << "<tr><th></th><th>predicted</th><th>measured</th><th>error</th></tr>\n"
    << "<tr><td>step time (us)</td><td>" << us(c.predicted.step_time_us) << "</td><td>" << us(c.measured.step_time_us)
    << "</td><td>" << html_escape(pct(c.step_error)) << (c.within_tolerance ? " (within " : " (OVER ")
    << html_escape(fmt("%.3g%%", 100 * c.tolerance)) << ")</td></tr>\n"
    << "<tr><td>overlap efficiency</td><td>" << fmt("%.3f", c.predicted.overlap_efficiency) << "</td><td>"
    << fmt("%.3f", c.measured.overlap_efficiency) << "</td><td>"
    << fmt("%+.3f", c.predicted.overlap_efficiency - c.measured.overlap_efficiency) << "</td></tr>\n"
    << "<tr><td>exposed comm (us)</td><td>" << us(c.predicted.exposed_comm_us) << "</td><td>"
    << us(c.measured.exposed_comm_us) << "</td><td>" << fmt("%+.1f", c.predicted.exposed_comm_us - c.measured.exposed_comm_us)
    << "</td></tr>\n";
  for (const auto& row : summary_rows(c))
    b << "<tr><td>" << html_escape(row[0]) << "</td><td>" << html_escape(row[1]) << "</td><td>" << html_escape(row[2])
      << "</td><td>" << html_escape(row[3]) << "</td></tr>\n";
  b << "</table>\n";
  if (c.workloads_differ()) b << "<p>" << html_escape(workload_note(c)) << "</p>\n";
  if (!c.variation_difference.empty()) b << "<p>" << html_escape(variation_note(c)) << "</p>\n";
  if (c.jitter_draws_differ) b << "<p>" << html_escape(jitter_note(c)) << "</p>\n";
  b << "<p>" << html_escape(spread_line(c)) << "</p>\n";
  if (c.machine_drift) b << "<p>" << html_escape(drift_line(*c.machine_drift)) << "</p>\n";
  if (shows_per_rank(c)) {
    const bool waits = c.by_rank.front().measured_wait_us.has_value();
    const bool predicted_waits = c.by_rank.front().predicted_wait_us.has_value();
    b << "<h2>Step time per rank (us)</h2>\n<table>\n<tr><th>rank</th><th>predicted</th><th>measured</th><th>error</th>"
      << (predicted_waits ? "<th>predicted waiting in collectives (for the last member)</th>" : "")
      << (waits ? "<th>measured waiting in collectives (for the last member)</th>" : "") << "</tr>\n";
    for (const RankComparison& r : c.by_rank)
      b << "<tr><td>" << r.rank << "</td><td>" << us(r.predicted_step_us) << "</td><td>" << us(r.measured_step_us) << "</td><td>"
        << html_escape(pct(r.error)) << "</td>" << (r.predicted_wait_us ? "<td>" + us(*r.predicted_wait_us) + "</td>" : "")
        << (r.measured_wait_us ? "<td>" + us(*r.measured_wait_us) + "</td>" : "") << "</tr>\n";
    b << "</table>\n";
  }
  b << "<h2>Absolute errors per op kind (us)</h2>\n<table>\n<tr><th>kind</th><th>ops</th><th>duration median</th>"
       "<th>duration p90</th><th>start median</th><th>start p90</th></tr>\n";
  for (const auto& k : c.by_kind)
    b << "<tr><td>" << html_escape(k.kind) << "</td><td>" << k.count << "</td><td>" << us(k.duration_median_abs_error_us)
      << "</td><td>" << us(k.duration_p90_abs_error_us) << "</td><td>" << us(k.start_median_abs_error_us) << "</td><td>"
      << us(k.start_p90_abs_error_us) << "</td></tr>\n";
  b << "</table>\n<h2>Ops that disagree most</h2>\n<table>\n<tr><th>op</th><th>name</th><th>kind</th>"
       "<th>start predicted</th><th>start measured</th><th>duration predicted</th><th>duration measured</th></tr>\n";
  for (const auto& w : c.worst)
    b << "<tr><td>" << w.op << "</td><td>" << html_escape(w.name) << "</td><td>" << op_kind_name(w.kind) << "</td><td>"
      << us(w.predicted_start_us) << "</td><td>" << us(w.measured_start_us) << "</td><td>" << us(w.predicted_duration_us)
      << "</td><td>" << us(w.measured_duration_us) << "</td></tr>\n";
  b << "</table>\n<h2>Timelines (same time axis, each from its own step start)</h2>\n";
  const StepWindow pw = step_window(predicted, c.predicted_rank);
  const StepWindow mw = step_window(measured, c.measured_rank);
  const SvgAxis axis = shared_axis({pw, mw});
  SvgTimelineOptions po;
  po.title = "predicted (" + predicted.backend + ")" + (c.predicted_every_rank ? ", rank " + std::to_string(pw.rank) : "");
  SvgTimelineOptions mo;
  mo.title = "measured (" + measured.backend + "), rank " + std::to_string(mw.rank) + ", iteration " +
             std::to_string(mw.iteration);
  b << svg_legend() << "\n<div>" << svg_timeline(predicted, pw, axis, po) << "</div>\n<div>"
    << svg_timeline(measured, mw, axis, mo) << "</div>\n";
  return html_page("compare: " + c.scenario, b.str());
}

namespace {

Timeline read_timeline_dir(const std::string& dir, const char* which) {
  const std::string path = (std::filesystem::path(dir) / "timeline.json").string();
  if (!std::filesystem::exists(path)) {
    // A failed exec leaves its ranks' partial timelines there instead (docs/exec.md, "Faults").
    bool partial = false;
    std::error_code ec;
    if (std::filesystem::is_directory(dir, ec))
      for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (const std::string name = entry.path().filename().string();
            name.rfind("timeline.partial.rank", 0) == 0 || name.rfind("error.rank", 0) == 0) {
          partial = true;
          break;
        }
    throw InputError(which, "cannot open \"" + path + "\" " +
                                (partial ? std::string("(the folder holds what a failed run left, timeline.partial.rank*.json or "
                                                       "error.rank*.txt: exec did not finish; run it again)")
                                         : std::string("(expected an output folder of simulate or exec)")));
  }
  const nlohmann::json j = load_json_file(path, which, kMaxOutputJsonBytes);
  try {
    Timeline t = timeline_from_json(j);
    const bool predicted_dir = std::string(which) == "PREDICTED_DIR";
    if (!predicted_dir && t.source == "predicted" && ranks_held(t).size() < static_cast<size_t>(t.ranks))
      throw InputError("source", "a prediction that keeps " + std::to_string(ranks_held(t).size()) + " of its " +
                                     std::to_string(t.ranks) + " ranks (simulate --ranks all keeps the ranks that matter); " +
                                     which + " needs every rank's ops: the output folder of exec or import");
    check_complete(t, predicted_dir);
    return t;
  } catch (const InputError& e) {
    throw InputError(which, "\"" + path + "\": " + e.what());
  }
}

// The measured folder's program.json must be the Program its timeline.json ran: the same ops
// (kind, stream, group) and the same group sizes. Else the waits inside collectives would be
// read against another Program's communicators.
void check_program_matches_timeline(const Program& program, const Timeline& measured, const std::string& path) {
  const auto refuse = [&](const std::string& why) {
    throw InputError("MEASURED_DIR", "\"" + path + "\" is not the Program of the folder's timeline.json: " + why);
  };
  if (program.ops.size() != measured.ops.size())
    refuse("it has " + std::to_string(program.ops.size()) + " ops, the timeline " + std::to_string(measured.ops.size()));
  const auto what = [](const Op& op) {
    return std::string(op_kind_name(op.kind)) + " on " + std::string(stream_name(op.stream)) + " (group " + std::string(comm_group_name(op.group)) + ")";
  };
  std::array<bool, kNumCommGroups> used{};
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& a = program.ops[i];
    const Op& b = measured.ops[i];
    if (a.kind != b.kind || a.stream != b.stream || a.group != b.group)
      refuse("ops[" + std::to_string(i) + "] is a " + what(a) + " there and a " + what(b) + " in the timeline");
    used[static_cast<size_t>(a.group)] = true;
  }
  for (size_t g = 0; g < used.size(); ++g)
    if (used[g] && program.groups[g].size != measured.group_sizes[g])
      refuse("its " + program.groups[g].name + " group has " + std::to_string(program.groups[g].size) + " ranks, the timeline's ops " +
             std::to_string(measured.group_sizes[g]));
}

}  // namespace

Comparison compare_run_dirs(const std::string& predicted_dir, const std::string& measured_dir, const std::string& out_dir,
                            double tolerance, std::optional<MachineDrift> drift) {
  const Timeline predicted = read_timeline_dir(predicted_dir, "PREDICTED_DIR");
  const Timeline measured = read_timeline_dir(measured_dir, "MEASURED_DIR");
  if (predicted.source == "measured")
    throw InputError("PREDICTED_DIR", "\"" + predicted_dir + "\" holds a measured run (" + predicted.backend +
                                          "): give the prediction first, compare PREDICTED_DIR MEASURED_DIR");
  // The measured run's group table, for each rank's waiting inside collectives (exec writes
  // program.json beside its timeline). Stated only when the timeline holds the Program's whole
  // world: a folder without program.json, or one rank of a prediction, compares without it.
  std::optional<std::vector<GroupInfo>> groups;
  const std::filesystem::path program_path = std::filesystem::path(measured_dir) / "program.json";
  std::error_code ec;
  if (std::filesystem::exists(program_path, ec) && !std::filesystem::is_regular_file(program_path, ec))
    throw InputError("MEASURED_DIR", "\"" + program_path.string() + "\" is not a file; expected the run's program.json");
  if (std::filesystem::is_regular_file(program_path, ec)) {
    // load_json_file names the file in its own errors; program_from_json's get the path here.
    const nlohmann::json document = load_json_file(program_path.string(), "MEASURED_DIR", kMaxOutputJsonBytes);
    Program program;
    try {
      program = program_from_json(document);
    } catch (const InputError& e) {
      throw InputError("MEASURED_DIR", "\"" + program_path.string() + "\": " + e.what());
    }
    check_program_matches_timeline(program, measured, program_path.string());
    if (program.world_size == measured.ranks) groups = std::move(program.groups);
  }
  Comparison c = compare_timelines(predicted, measured, tolerance, groups ? &*groups : nullptr);
  c.machine_drift = drift;
  write_output_folder(out_dir,
                      {{"compare.json", [&] { return comparison_to_json(c).dump(2) + "\n"; }},
                       {"compare.html", [&] { return comparison_html(c, predicted, measured); }}},
                      "--out");
  return c;
}

}  // namespace shardline
