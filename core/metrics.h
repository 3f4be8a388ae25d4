// The one definition of the step metrics (DESIGN.md "Metrics"), computed from a Timeline, or
// gathered op by op as a simulation runs (StepAccumulator) without keeping one.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/interval_union.h"
#include "core/timeline.h"

namespace shardline {

struct KindStats {
  int count = 0;
  int64_t bytes = 0;
  double busy_us = 0;  // union of this kind's intervals
};

// What the step achieves (docs/outputs.md "Throughput"; formulas in metrics.cpp). Each value is
// unknown (nullopt; null in metrics.json) when the timeline's workload lacks what it needs
// (tokens, samples, FLOPs or the dense peak are 0) or the step time is 0.
struct Throughput {
  std::optional<double> samples_per_s;         // global
  std::optional<double> tokens_per_s;          // global
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> model_tflops_per_gpu;  // model FLOPs (no recomputation) per second per GPU / 1e12
  std::optional<double> mfu;                   // model FLOPs utilisation, a fraction of the dense peak
  std::optional<double> hfu;                   // hardware FLOPs utilisation: the same with recomputation
};

// The throughput of a step of `step_time_us` processing `workload`.
Throughput throughput_of(const Workload& workload, double step_time_us);

struct Metrics {
  double step_time_us = 0;       // first op issued to last op finished (max over ranks)
  double compute_busy_us = 0;    // union of compute-stream compute intervals
  double comm_busy_us = 0;       // union of collective intervals
  double exposed_comm_us = 0;    // step time - compute busy
  double overlap_efficiency = 1; // 1 - exposed / comm busy (1 when no comm)
  double forward_us = 0;         // step start to end of the last forward compute
  double backward_us = 0;        // the rest of the step
  // Step start to the last op's issue: the host's time to issue the step (about the step where
  // the host sets it; 0 where the timeline records no issue times).
  double host_issue_us = 0;
  // GPU launches the step's Program counts for one rank (Timeline::host_launches_per_step): what
  // cluster.host_launch is charged for; 0: unknown.
  int64_t host_launches = 0;
  int64_t peak_memory_bytes = 0;    // peak allocated (what the memory tracker counts)
  int64_t peak_reserved_bytes = 0;  // estimate (estimate_reserved, core/memory_reserve.h); 0 without samples
  int64_t min_reserved_bytes = 0;   // the least reserve the step needs (at capacity); 0 without samples
  int64_t peak_allocator_reserved_bytes = 0;  // peak reserved without context and NCCL buffers (torch.cuda.max_memory_reserved)
  // The sum of the caching allocator's per-stream pool peaks, the typical reserve's base (the
  // allocated peak where the timeline does not know it); 0 without samples.
  int64_t allocator_pool_peaks_bytes = 0;
  bool allocator_cache_flushes = false;  // fits only by the allocator flushing its cache
  // Predicted: what the peak allocated bytes are made of (its parts sum to peak_memory_bytes);
  // unknown for a measured run.
  std::optional<MemoryAtPeak> memory_at_peak;
  int64_t memory_capacity_bytes = 0;
  bool fits_memory = true;          // min reserved <= capacity * (1 - margin)
  Throughput throughput;
  std::map<std::string, KindStats> by_kind;  // keyed by op_kind_name, collectives and copies
  // Whether the timeline recorded memory (else both peaks are 0: unknown). Not in metrics.json,
  // where a peak of 0 says the same.
  bool memory_recorded = false;
};

// The metrics of one rank's step, gathered op by op in any order: compute_metrics feeds it a
// Timeline's intervals, and the simulator feeds it as ops end, so a summary or a sweep point
// needs no interval per op (sim/simulator.h simulate_metrics). Either way the Metrics are the
// same, bit for bit: a kind's spans are kept merged where they touch or overlap, and summed in
// order of start (UnionSum), which changes neither a union nor the order of its sum.
class StepAccumulator {
 public:
  void issue(double issue_us);                             // an op of the step was issued
  void add(const Op& op, double start_us, double end_us);  // an op of the step ran
  size_t op_count() const { return count_; }               // ops added
  // Optional, for a caller that knows it: every op added from now on starts at or after
  // `before_us`. The spans that start earlier are summed now and dropped, so a simulation keeps
  // only the spans of the ops in flight. settle_due() says when enough are kept to be worth it:
  // twice as many as the last settle kept (a long op still running keeps every later span).
  void settle(double before_us);
  bool settle_due() const { return kept_ >= settle_at_; }
  // The step's metrics: throughput, memory reserve, capacity and margin come from `t`'s
  // scenario fields (set_timeline_scenario); `peak_memory_bytes` is nullopt when no memory
  // was recorded. Needs at least one op added; the accumulator is used up.
  Metrics finish(const Timeline& t, std::optional<int64_t> peak_memory_bytes);

 private:
  using Span = std::pair<double, double>;
  static constexpr size_t kKinds = static_cast<size_t>(OpKind::Free) + 1;
  static constexpr size_t kSettleSpans = 4096;
  size_t count_ = 0;
  StepBounds bounds_;  // the step window
  std::array<KindStats, kKinds> kind_stats_{};  // count and bytes (alloc/free not counted)
  std::vector<double> last_fwd_end_us_, last_bwd_end_us_;  // per micro-batch, -inf when none
  std::array<std::vector<Span>, kKinds> spans_;  // per kind (alloc/free: none), merged as they come, not yet summed
  size_t kept_ = 0;                               // spans in spans_
  size_t settle_at_ = kSettleSpans;               // settle_due() from this many
  std::array<UnionSum, kKinds> kind_busy_;        // each kind's union, of the spans settled
  UnionSum comm_busy_;                            // the three collective kinds' union, likewise
};

// Metrics for one rank and iteration; rank -1: each rank's, combined with the max step time
// (the rank that defines the step) reported.
Metrics compute_metrics(const Timeline& timeline, int rank = -1, int iteration = -1);

// The step window of one rank and iteration, as step_time_us defines it: from the first op
// issued (the first start when the timeline records no issue times) to the last op finished.
// rank -1: the rank with the longest step (lowest on ties) among ranks with intervals;
// iteration -1: reported_iteration.
struct StepWindow {
  int rank = 0;
  int iteration = 0;
  double start_us = 0;
  double end_us = 0;
};
StepWindow step_window(const Timeline& timeline, int rank = -1, int iteration = -1);

nlohmann::json metrics_to_json(const Metrics& m);
Metrics metrics_from_json(const nlohmann::json& j);

}  // namespace shardline
