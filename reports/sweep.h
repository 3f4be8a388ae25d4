// Capacity-planning sweeps, their results: one row per grid point (reports/sweep_grid.h makes
// the points), the objective rows are ranked by (--objective: tokens/s per GPU, step time or the
// reserve needed), the Pareto front (objective vs the reserve needed), the recommendation, and
// the rows' JSON and CSV. Pure logic; running the points lives in sweep/sweep_run.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/metrics.h"
#include "reports/sweep_grid.h"

namespace shardline {

// The outcome of one point.
struct SweepRow {
  size_t index = 0;
  std::vector<std::string> values;  // one value text per axis path (flattened over joint axes)
  bool valid = false;               // false: the combination was rejected; see `error`
  std::string error;                // why it is invalid (the parser's message)
  Metrics metrics;                  // meaningful only when valid
  bool fits_memory = false;         // reserve needed (min_reserved_bytes) <= capacity
  bool fits_with_margin = false;    // reserve needed <= capacity * (1 - margin)
  // A point with a variation (stragglers, jitter, slow links; simulated on every rank): its step
  // with the variation / without it (docs/every-rank.md). Unset without a variation.
  std::optional<double> straggler_cost;
  // How the row's collectives are grouped (collective_grouping_of): the recommendation says when
  // the rows differ in it, since that is a choice of framework, not a setting of one.
  std::string collective_grouping;
};

// The framework scheme a policy's collectives follow (docs/schedule.md), as the stable token
// sweep.json and sweep.csv carry: "fsdp2_groups" (one group per unit), "fsdp1_flat_params",
// "byte_buckets" (ZeRO-3 / DeepSpeed style) or "per_parameter" (comm_fusion false); and in words.
struct PolicySpec;
std::string collective_grouping_of(const PolicySpec& policy);
std::string collective_grouping_text(const std::string& grouping);

// Sets fits_memory / fits_with_margin of a valid row from its metrics' reserve needed.
void mark_memory_fit(SweepRow& row, double memory_margin);

// What a sweep ranks configurations by (--objective; docs/sweep.md).
enum class SweepObjective {
  Throughput,  // tokens/s per GPU, maximised (the default: what a planner buys GPUs for)
  StepTime,    // step time, minimised
  Memory,      // the reserve needed (min_reserved_bytes), minimised
};
// "throughput" | "step_time" | "memory"; anything else throws InputError("--objective", ...).
SweepObjective parse_sweep_objective(const std::string& text);
std::string_view sweep_objective_name(SweepObjective objective);

// The objective the rows are ranked by: the requested one, except that throughput falls back to
// step time when any valid row's tokens/s per GPU is unknown (explicit units without
// model.seq_len / model.micro_batch_size): rows cannot be ranked by a number some lack. `note`
// says so (empty when nothing fell back).
struct RankedBy {
  SweepObjective requested = SweepObjective::Throughput;
  SweepObjective used = SweepObjective::Throughput;
  std::string note;
};
RankedBy resolve_objective(const std::vector<SweepRow>& rows, SweepObjective requested);

// A valid row's value of `objective` in its own unit: tokens/s per GPU (0 when unknown), step
// time in us, reserve needed in bytes.
double objective_value(const SweepRow& row, SweepObjective objective);

// Indices (into `rows`) of the valid rows on the Pareto front of (objective, reserve
// needed), or (reserve needed, step time) for the memory objective: no other valid row is
// at least as good in both and better in one. Sorted best objective first.
std::vector<size_t> pareto_front(const std::vector<SweepRow>& rows, SweepObjective objective);
// The same over the sweep's settings (`paths`: the varied paths, one per row value): where
// environment paths (`variation.*`) are varied, over each setting's deciding row (its worst case
// over the environment points, as `recommend` judges it), so no seed or jitter is on the front as
// a choice; else over every row.
std::vector<size_t> pareto_front(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths, SweepObjective objective);

// The best valid configuration by the objective that fits memory with the margin (ties, and rows
// within 0.05% of the best: the lower reserve needed, or the shorter step for the memory
// objective, then grid order), the
// runner-up, and why the winner is better, in the objective's terms: for throughput, whether
// it carries more tokens per step or takes a shorter step; for step time, which term of
// step time = compute busy + exposed comm shrinks; for memory, how much less it reserves.
struct Recommendation {
  std::optional<size_t> best;       // index into rows; empty when nothing fits
  std::optional<size_t> runner_up;
  std::string text;                 // the human explanation printed last
};
// `memory_margin`: what the rows' fits_with_margin was judged with, for the text (NaN: each
// row's own, run.memory_margin being an axis).
Recommendation recommend(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths,
                         double memory_margin, const RankedBy& ranked_by);

// Serialization of rows (sweep.json and the MPI gather) and the CSV table.
nlohmann::json sweep_row_to_json(const SweepRow& row, const std::vector<std::string>& paths);
SweepRow sweep_row_from_json(const nlohmann::json& j, const std::vector<std::string>& paths);
std::string sweep_csv(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths);

// Everything one sweep produced (what sweep.json, report.html and the recommendation show).
struct SweepResult {
  std::string scenario;
  std::vector<SweepAxis> axes;
  double memory_margin = 0;  // the rows' run.memory_margin (NaN: varied, each row its own)
  RankedBy ranked_by;          // resolve_objective(rows, --objective)
  std::vector<SweepRow> rows;  // in grid order
  std::vector<size_t> pareto;  // pareto_front(rows, paths, ranked_by.used)
  Recommendation recommendation;
};
nlohmann::json sweep_json(const SweepResult& result);

}  // namespace shardline
