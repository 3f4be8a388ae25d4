// A timeline: when each op of a Program ran, per rank and iteration, predicted (simulator) or
// measured (executor), with one schema so every tool reads both. Self-contained: it carries
// the ops' metadata, and the workload and memory reserve of its scenario, so reports (metrics,
// throughput, reserved memory) need neither the Program nor the Scenario.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/memory_at_peak.h"
#include "core/memory_reserve.h"
#include "core/program.h"
#include "core/variation.h"
#include "core/workload.h"

namespace shardline {

struct Scenario;

// The most iterations a timeline holds (a measured run's; a prediction has one).
inline constexpr int kMaxTimelineIterations = 1024;
// Refuses a run's measured iteration count outside [1, kMaxTimelineIterations]:
// InputError(flag, "must be in [1, 1024], got N").
void check_iteration_count(int iterations, const std::string& flag);
// Unmeasured warm-up passes: InputError(flag) outside [0, kMaxTimelineIterations].
void check_warmup_count(int warmup, const std::string& flag);
// The furthest any time in a timeline may lie from its origin: 10 days, in us.
inline constexpr double kMaxTimelineUs = 10 * 86400e6;

// When one op ran on one rank in one iteration. Rank and iteration share one word, so an
// interval is 32 bytes: a timeline holds one per op and rank, millions of them.
struct OpInterval {
  int op = -1;
  int rank : 21 = 0;       // < kMaxWorldRanks (2^20)
  int iteration : 11 = 0;  // < kMaxTimelineIterations
  double issue_us = 0;     // when the host issued it
  double start_us = 0;
  double end_us = 0;
};
static_assert(sizeof(OpInterval) == 32, "an interval per op and rank: keep it 32 bytes");

struct MemorySample {
  double time_us = 0;
  int64_t bytes = 0;  // live bytes on the device of rank 0
};

// What a real run's caching allocator itself reported over the reported iteration, the largest
// of any rank: imported profiler traces carry it (the [memory] events' "Total Allocated" and
// "Total Reserved", as torch.cuda.max_memory_allocated / max_memory_reserved would give).
struct AllocatorPeaks {
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
};

struct Timeline {
  std::string source = "predicted";  // "predicted" | "measured"
  std::string backend = "sim";        // "sim" | "mpi" | "nccl"
  std::string scenario;
  int ranks = 1;
  int iterations = 1;
  int reported_iteration = 0;         // the median iteration when measured
  double scale = 1.0;                 // buffer divisor used by exec --scale
  int64_t memory_capacity_bytes = 0;  // the GPU's memory
  double memory_margin = 0.1;
  Workload workload;                  // tokens, samples and FLOPs per step (default: unknown)
  // The variation the run ran with, what of it acts (core/variation_record.h): the scenario's and
  // the --straggler / --jitter / --seed flags' (simulate, exec). Not recorded (unknown): an
  // imported real run, whose variation nobody injected, and a timeline written before 2026-11-27's
  // twenty-seventh session.
  VariationSpec variation;
  bool variation_recorded = true;
  MemoryReserve memory_reserve;       // allocated -> reserved estimate (default: none)
  // GPU launches the Program counts for one rank's step (Program::host_launches summed; the
  // same for a measured run of that Program); 0: unknown (a timeline written before it).
  int64_t host_launches_per_step = 0;
  HugePageVector<Op> ops;             // metadata (slices and deps dropped)
  OpLabels labels;                    // the ops' names (Op::label)
  std::array<int, kNumCommGroups> group_sizes{1, 1, 1, 1};  // ranks in each CommGroup's group
  HugePageVector<OpInterval> intervals;
  std::vector<MemorySample> memory;   // in time order
  // Predicted, where memory is counted in the host's order (FSDP2, the caching allocator's): the
  // same live bytes with each alloc and free applied when its stream reaches it, in time order,
  // for drawing over the streams (the host issues a whole step in its first moments, so `memory`
  // has no shape on the step's clock). The peak is `memory`'s. Empty otherwise.
  std::vector<MemorySample> memory_by_stream;
  // The series drawn on the step's clock (the report's memory panel, the trace's counter).
  const std::vector<MemorySample>& drawn_memory() const { return memory_by_stream.empty() ? memory : memory_by_stream; }
  std::optional<AllocatorPeaks> allocator_measured;  // a measured run's allocator figures, when known
  // Predicted: the sum over the caching allocator's pools (one per stream) of the most each held
  // at once (sim/memory.h), the base of the typical reserve; unknown: the allocated peak's.
  std::optional<int64_t> allocator_pool_peaks_bytes;
  // Predicted: what the peak allocated bytes are made of (core/memory_at_peak.h); unknown otherwise.
  std::optional<MemoryAtPeak> memory_at_peak;

  std::string name(const Op& op) const { return op_name(labels, op); }
  void set_name(Op& op, std::string_view name) { set_op_name(labels, op, name); }
  int id_of(const Op& op) const { return op_index(ops, op); }
  int group_size(const Op& op) const { return group_sizes[static_cast<size_t>(op.group)]; }
};

// One rank's step window, the metrics' definition (DESIGN.md "Metrics"), fed op by op in any
// order: from the earliest issue (the earliest start when every issue time is 0, a timeline
// that records none) to the latest end. The one place that rule is written.
class StepBounds {
 public:
  void issue(double issue_us) {
    if (issue_us != 0) has_issue_ = true;
    min_issue_us_ = std::min(min_issue_us_, issue_us);
    max_issue_us_ = std::max(max_issue_us_, issue_us);
  }
  void ran(double start_us, double end_us) {
    ran_ = true;
    min_start_us_ = std::min(min_start_us_, start_us);
    end_us_ = std::max(end_us_, end_us);
  }
  bool empty() const { return !ran_; }
  double start_us() const { return has_issue_ ? std::min(min_issue_us_, min_start_us_) : min_start_us_; }
  double end_us() const { return end_us_; }
  // The step's start to its last op's issue: how long the host took to issue the step (0 for a
  // timeline that records no issue times).
  double issue_span_us() const { return has_issue_ ? max_issue_us_ - start_us() : 0.0; }

 private:
  bool ran_ = false, has_issue_ = false;
  double min_issue_us_ = std::numeric_limits<double>::infinity();
  double max_issue_us_ = -std::numeric_limits<double>::infinity();
  double min_start_us_ = std::numeric_limits<double>::infinity();
  double end_us_ = -std::numeric_limits<double>::infinity();
};

// Step time of each iteration: the longest of its ranks' steps, each a StepBounds (the rank's
// first issue to its last end), so the reported iteration's step is the metrics'.
std::vector<double> iteration_step_times_us(const Timeline& timeline);
// The iteration a measured run reports: the median step (of an even count the lower middle;
// of equal steps the earlier iteration).
int median_step_iteration(const std::vector<double>& step_times_us);

// Gives the Timeline what it carries of its scenario: the GPU's memory capacity, the workload
// (tokens, samples, FLOPs per step), the memory reserve estimate and the memory margin.
void set_timeline_scenario(Timeline& timeline, const Scenario& scenario);

// Gives the Timeline the op metadata (without slices and deps) and the op names of `program`.
void set_timeline_ops(Timeline& timeline, const Program& program);
// The same, taking the ops of a Program that is no longer needed (no copy of millions of ops).
void set_timeline_ops(Timeline& timeline, Program&& program);

// "sim", "mpi" or "nccl": the backends a timeline (and a history record) may name.
bool is_backend_name(std::string_view name);

nlohmann::json timeline_to_json(const Timeline& timeline);
// {peak_allocated_bytes, peak_reserved_bytes}: timeline.json's allocator_measured, import.json's too.
nlohmann::json allocator_peaks_to_json(const AllocatorPeaks& peaks);
// Throws InputError naming the JSON path on bad files: besides types and ranges, an unknown
// backend, a negative time on rank 0 (or in a predicted timeline), an op that starts before it
// is issued, and an op recorded twice for one rank and iteration.
Timeline timeline_from_json(const nlohmann::json& j);

}  // namespace shardline
