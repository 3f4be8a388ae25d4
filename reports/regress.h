// Regression check of metrics files against a baseline: one file each, or two directories
// matched by scenario name (<name>.json, or <name>/metrics.json run folders). A scenario
// regresses when its step time or its peak allocated memory grows by more than `tolerance`
// RELATIVE to the baseline, when its overlap efficiency drops by more than `tolerance` ABSOLUTE
// (efficiency is already a fraction), or when it fitted its GPU memory and no longer does.
// A scenario present on only one side fails the check too.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/metrics.h"

namespace shardline {

// Reads one metrics file: metrics_to_json's object, or an object with a "metrics" member.
// Throws InputError(path, ...) on a missing or malformed file.
Metrics read_metrics_file(const std::string& path);

struct RegressEntry {
  std::string name;
  std::optional<Metrics> baseline;
  std::optional<Metrics> current;
  bool step_time_regressed = false;
  bool efficiency_regressed = false;
  // The tokens per step or the GPU count differ (micro-batch size, sequence, micro-batches, GPUs
  // changed): the step time is not the same work per GPU, so tokens/s per GPU is judged instead
  // of it. `work_difference` says what differs (empty: neither).
  bool judged_on_throughput = false;
  std::string work_difference;
  bool throughput_regressed = false;
  // Peak allocated memory (judged like step time, only while the work per GPU is the same: more
  // tokens per micro-batch hold more), and the fit (judged always: the run would not start).
  bool memory_regressed = false;
  bool fit_lost = false;
  bool failed() const {
    return !baseline || !current || step_time_regressed || efficiency_regressed || throughput_regressed || memory_regressed ||
           fit_lost;
  }
  std::string status() const;  // "ok", "improved", "REGRESSED (...)", "MISSING current", "NO BASELINE"
};

struct RegressReport {
  double tolerance = 0;
  std::vector<RegressEntry> entries;  // sorted by name
  bool failed() const;
};

// The comparison rule for one scenario (see the file comment).
// Tokens per step (global tokens/s x step time) of each side, when both carry throughput, and
// whether they differ (beyond rounding).
bool tokens_per_step_changed(const Metrics& baseline, const Metrics& current);
// Whether the GPU count (global tokens/s over tokens/s per GPU) differs, when both carry it.
bool gpu_count_changed(const Metrics& baseline, const Metrics& current);
// What makes the step different work per GPU (tokens per step, GPUs), as a clause; empty: nothing.
std::string work_difference(const Metrics& baseline, const Metrics& current);
bool throughput_regressed(const Metrics& baseline, const Metrics& current, double tolerance);
bool step_time_regressed(const Metrics& baseline, const Metrics& current, double tolerance);
bool efficiency_regressed(const Metrics& baseline, const Metrics& current, double tolerance);
// Both sides recorded memory (a peak of 0 is unknown: metrics of a run that tracked none) and the
// current peak allocated exceeds the baseline's by more than `tolerance` relative.
bool peak_memory_regressed(const Metrics& baseline, const Metrics& current, double tolerance);
// Both sides recorded memory, the baseline fitted its GPU memory and the current does not.
bool fit_lost(const Metrics& baseline, const Metrics& current);

// Throws InputError("--baseline"/"--current", ...) when a path does not exist, when one is a
// file and the other a directory, or when two directories hold no metrics file at all (nothing
// would be compared). A metrics file with impossible values (metrics_from_json: step time <= 0,
// overlap efficiency outside [0, 1], a negative time) is an InputError naming the file and key.
RegressReport regress_compare(const std::string& baseline, const std::string& current, double tolerance);

// The table printed by `shardline regress`: step time, tokens/s per GPU (shown, not judged: for a
// fixed scenario it is the step time's inverse; "n/a" for metrics files written before
// throughput existed), exposed comm, overlap efficiency and peak allocated memory, each
// baseline -> current with its delta, whether it fits, and the status per scenario.
std::string regress_table(const RegressReport& report);

// Rewrites the baseline from the current metrics (a file, or <baseline>/<name>.json per
// current scenario; the baseline folder is created when missing). Returns the files written.
std::vector<std::string> update_baseline(const std::string& baseline, const std::string& current);

}  // namespace shardline
