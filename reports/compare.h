// Predicted vs measured: joins two Timelines of the same Program op by op and reports how far
// the prediction is off (step time, overlap efficiency, exposed comm, tokens/s per GPU and MFU,
// per-kind duration and start-time errors, the ops that disagree most), as a terminal table, compare.json and
// compare.html (the predicted timeline drawn directly above the measured one, same time axis).
//
// Which measured intervals: the step that metrics define (core/metrics.h step_window with
// rank -1): the reported iteration of the rank with the longest step. Each op's measured
// interval is that rank's interval in that iteration; start times on both sides are relative
// to their own step start (the first op issued). Errors are predicted minus measured.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/metrics.h"
#include "core/program.h"
#include "core/timeline.h"

namespace shardline {

struct OpComparison {
  int op = -1;
  std::string name;
  OpKind kind = OpKind::Compute;
  double predicted_start_us = 0;  // relative to the predicted step start
  double predicted_duration_us = 0;
  double measured_start_us = 0;   // relative to the measured step start
  double measured_duration_us = 0;
  double start_error_us() const { return predicted_start_us - measured_start_us; }
  double duration_error_us() const { return predicted_duration_us - measured_duration_us; }
  double end_error_us() const { return start_error_us() + duration_error_us(); }
  // How much the op disagrees: max(|start error|, |end error|).
  double disagreement_us() const;
};

// Absolute errors of one op kind. Percentiles interpolate linearly between order statistics
// (the p-quantile of sorted x[0..n-1] is at position p * (n - 1)).
struct KindErrors {
  std::string kind;  // op_kind_name
  int count = 0;
  double duration_median_abs_error_us = 0;
  double duration_p90_abs_error_us = 0;
  double start_median_abs_error_us = 0;
  double start_p90_abs_error_us = 0;
};

// The measured run's step over its iterations (each iteration's slowest rank), and whether the
// prediction falls inside that run-to-run spread.
struct MeasuredSpread {
  int iterations = 0;
  double median_us = 0;         // of an even count the lower middle: the reported iteration's step
  double p10_us = 0, p90_us = 0;  // interpolated as KindErrors says
  double median_error = 0;                       // (predicted - median) / median
  bool prediction_inside = false;                // p10 <= predicted step <= p90
};

// How far the machine's speed moved while a validate ran: the step predicted from a calibration
// made right after the measured run against the one from the calibration before it (validate's
// drift check, docs/calibrate.md). A move over the tolerance makes the step error no clean test
// of the model.
struct MachineDrift {
  double predicted_step_us = 0;            // from the calibration before the run
  double after_run_predicted_step_us = 0;  // from the calibration after it
  double relative_change = 0;              // after / before - 1
  bool drifted = false;                    // |after - before| > the comparison's tolerance x before
};
MachineDrift drift_between(double predicted_step_us, double after_run_predicted_step_us, double tolerance);

// --tolerance of compare, validate and regress: a relative error in [0, kMaxTolerance], else
// InputError quoting it (1e308 was taken and printed as "within inf%").
inline constexpr double kMaxTolerance = 1e6;
void check_tolerance(double tolerance);

// One rank's step: predicted (that rank of an every-rank prediction, else the representative
// rank) and measured (that rank, the reported iteration).
struct RankComparison {
  int rank = 0;
  double predicted_step_us = 0, measured_step_us = 0;
  double error = 0;  // (predicted - measured) / measured
  // Measured, the reported iteration: the time this rank spent inside collectives waiting for the
  // last member of its group to get there (summed over collectives). Known when the measured
  // Program's group table is (the folder's program.json): a rank that drifts behind makes the
  // others wait, which a one-rank prediction cannot show.
  std::optional<double> measured_wait_us;
  // The same, predicted: known when the prediction holds every rank (`simulate --ranks all
  // --trace-ranks all`) and the group table is known.
  std::optional<double> predicted_wait_us;
};

// The predicted peak memory against what the real run's caching allocator reported (a measured
// timeline that carries Timeline::allocator_measured: imported profiler traces). Reserved is the
// allocator's own (torch.cuda.max_memory_reserved), without the CUDA context and NCCL buffers.
struct AllocatorMemoryComparison {
  int64_t predicted_allocated_bytes = 0, measured_allocated_bytes = 0;
  int64_t predicted_reserved_bytes = 0, measured_reserved_bytes = 0;
  double allocated_error = 0, reserved_error = 0;  // (predicted - measured) / measured; 0 when measured is 0
};

struct Comparison {
  std::string scenario;
  std::string measured_backend;
  // MEASURED_DIR holds a prediction (simulate's folder, e.g. two predictions compared op by op):
  // the table says so, since its "measured" column is then another prediction.
  bool measured_is_prediction = false;
  int measured_rank = 0;       // the rank that defines the measured step
  int measured_iteration = 0;  // its reported iteration
  // With compute jitter each iteration draws its own factors (docs/scenario.md): the prediction
  // played iteration 0's, so where the reported measured iteration is another one, the per-rank
  // and per-op rows compare different draws (the step, a sample of the same distribution).
  bool jitter_draws_differ = false;
  // The predicted rank the ops are compared on: the measured rank when an every-rank prediction
  // holds it, else the prediction's own slowest rank (0 for a one-rank prediction).
  int predicted_rank = 0;
  bool predicted_every_rank = false;  // the prediction simulated every rank (`--ranks all`)
  Metrics predicted, measured;
  double step_error = 0;       // (predicted - measured) / measured step time
  double tolerance = 0.10;
  bool within_tolerance = true;  // |step_error| <= tolerance
  MeasuredSpread measured_spread;
  std::vector<RankComparison> by_rank;  // every measured rank, rank order
  // Throughput errors; unknown when either side's value is (the timeline carries no workload).
  // Rates relative, (predicted - measured) / measured; MFU and HFU absolute (they are fractions).
  std::optional<double> samples_per_s_error, tokens_per_s_error, tokens_per_s_per_gpu_error, model_tflops_per_gpu_error;
  std::optional<double> mfu_error, hfu_error;
  // What differs between the two timelines' workloads (GPUs, tokens, samples or model FLOPs per
  // step) where both are known, e.g. "65,536 vs 131,072 tokens per step"; empty when nothing does.
  // When something does, the step-time error compares different work, the throughput rows rates.
  std::string workload_difference;
  bool workloads_differ() const { return !workload_difference.empty(); }
  // The two runs' variation (Timeline::variation) when it differs, "predicted: none; measured:
  // straggler rank 1 computes x1.5"; empty when both ran with the same. The step-time error then
  // compares different inputs (validate passes its variation to both sides).
  std::string variation_difference;
  std::vector<KindErrors> by_kind;   // compute, copies and collectives (markers left out), kind order
  std::vector<OpComparison> ops;     // every op but alloc/free markers, op order
  std::vector<OpComparison> worst;   // up to ten, largest disagreement first (ties: lower op id); none that agree exactly
  std::optional<MachineDrift> machine_drift;  // validate's drift check, when it ran
  std::optional<AllocatorMemoryComparison> allocator_memory;  // when the measured side knows it and the prediction recorded memory
};

// Throws InputError("timelines", ...) when the two timelines do not describe the same Program
// (op count, kinds and names must match), or when either is incomplete: compare needs every op
// recorded once per rank and iteration (ranks x iterations x ops intervals).
// `groups`: the measured Program's group table (Program::groups), for each rank's waiting inside
// collectives; null: not known.
Comparison compare_timelines(const Timeline& predicted, const Timeline& measured, double tolerance = 0.10,
                             const std::vector<GroupInfo>* groups = nullptr);

// Per rank of `t`, in `iteration`: the time it waited inside collectives for the last member of
// its group (Op::group indexes `groups`) to start the same collective. Ranks whose group has a
// member without an interval are given what the members it has say.
std::vector<double> collective_wait_per_rank_us(const Timeline& t, const std::vector<GroupInfo>& groups, int iteration);

nlohmann::json comparison_to_json(const Comparison& c);
// The terminal report.
std::string comparison_table(const Comparison& c);
// The self-contained HTML page: summary, per-kind errors, worst ops, predicted over measured.
std::string comparison_html(const Comparison& c, const Timeline& predicted, const Timeline& measured);

// Reads DIR/timeline.json of both folders (and MEASURED_DIR/program.json's group table when it
// is there: exec writes it), compares, writes OUT_DIR/compare.json and
// OUT_DIR/compare.html (OUT_DIR is created when missing). Throws InputError naming the folder,
// the file and the JSON key (an incomplete timeline names "iterations", "ranks" or "intervals").
// `drift`: validate's drift check, stated in all three outputs.
Comparison compare_run_dirs(const std::string& predicted_dir, const std::string& measured_dir, const std::string& out_dir,
                            double tolerance, std::optional<MachineDrift> drift = std::nullopt);

}  // namespace shardline
