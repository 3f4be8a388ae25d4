// Metric definitions (DESIGN.md "Metrics"), per rank and iteration:
// - step: [step start, step end). Step start = the earliest issue_us of the step's ops (never
//   later than any op's start_us); when every issue_us is 0 (a timeline that records no issue
//   times), the earliest start_us. Step end = the latest end_us. Alloc/free markers count.
// - compute busy: union of Compute-kind intervals. comm busy: union of AG/RS/AR intervals.
// - exposed comm = step - compute busy (>= 0 by construction; float noise is clamped, anything
//   else asserts). It includes every wait of the compute stream: exposed collectives, copies,
//   host launch gaps.
// - overlap efficiency = 1 - exposed / comm busy, clamped to [0, 1]: exposed also counts host
//   and copy gaps, so it can exceed comm busy; that clamps to 0 ("nothing hidden"). 1 when there
//   is no communication.
// - forward: per micro-batch m, from the end of micro-batch m-1's last backward compute (the step
//   start for the first) to the end of m's last forward compute; summed. With one micro-batch
//   this is "step start to end of the last forward compute". backward = step - forward.
// - by_kind: every kind except alloc/free (always all six keys): count, bytes, union busy.
// - peak memory (allocated): the largest MemorySample over the whole timeline; 0 when the
//   timeline has no memory samples (e.g. a measured run without an allocator tracker).
// - reserve (estimate_reserved): least = ceil(peak allocated x (1 + fragmentation at capacity))
//   + fixed bytes (context + NCCL per communicator); typical = the same with the typical
//   fragmentation; peak reserved = the typical capped at the capacity when the least fits (cache
//   flushes when it was capped), else the least; its allocator part (what
//   torch.cuda.max_memory_reserved() reports) = peak reserved - fixed bytes. 0 when there are no
//   memory samples.
//   fits: least <= capacity x (1 - margin).
// - throughput, from the timeline's workload (global per-step counts; 0 = unknown) and the
//   step time in seconds, step_s = step_time_us / 1e6; each unknown when its inputs are 0:
//     samples/s            = samples_per_step / step_s
//     tokens/s             = tokens_per_step / step_s
//     tokens/s per GPU     = tokens/s / gpus
//     model TFLOP/s per GPU = model_flops_per_step / step_s / gpus / 1e12
//     MFU                  = model_flops_per_step / step_s / (gpus x peak_flops_per_gpu)
//     HFU                  = hardware_flops_per_step / step_s / (gpus x peak_flops_per_gpu)
//   (model FLOPs count no recomputation; hardware FLOPs add it; docs/outputs.md "Throughput").
// - rank -1: the rank with the largest step time (lowest rank on ties) among the ranks that have
//   intervals in that iteration (a simulated timeline may carry one representative rank). iteration -1: the
//   timeline's reported_iteration.
#include "core/metrics.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/units.h"

namespace shardline {

using nlohmann::json;
namespace jf = json_fields;

namespace {

constexpr OpKind kReportedKinds[] = {OpKind::Compute, OpKind::CopyIn, OpKind::AllGather,
                                     OpKind::CopyOut, OpKind::ReduceScatter, OpKind::AllReduce};

[[noreturn]] void invariant_broken(const char* what) {
  std::fprintf(stderr, "shardline: internal error in compute_metrics: %s\n", what);
  std::abort();
}

// The intervals of one rank and iteration, visited in timeline order without a list of them (a
// million-op step would need 8 bytes per op for one), each with the op it names (which the
// timeline must carry). InputError when the step has none.
template <typename Fn>
void for_each_step_interval(const Timeline& t, int rank, int iteration, Fn&& fn) {
  const int num_ops = static_cast<int>(t.ops.size());
  bool any = false;
  for (const OpInterval& iv : t.intervals) {
    if (iv.rank != rank || iv.iteration != iteration) continue;
    if (iv.op < 0 || iv.op >= num_ops) invariant_broken("interval names an op the timeline does not carry");
    any = true;
    fn(iv, t.ops[iv.op]);
  }
  if (!any) throw InputError("timeline", "no op intervals for rank " + std::to_string(rank) + ", iteration " + std::to_string(iteration));
}

// The accumulated metrics of one rank and iteration.
StepAccumulator accumulate_step(const Timeline& t, int rank, int iteration) {
  StepAccumulator acc;
  for_each_step_interval(t, rank, iteration, [&](const OpInterval& iv, const Op& op) {
    acc.issue(iv.issue_us);
    acc.add(op, iv.start_us, iv.end_us);
  });
  return acc;
}

// The window alone: no per-kind spans gathered (compare and the report ask for it per rank).
StepWindow window_of(const Timeline& t, int rank, int iteration) {
  StepBounds bounds;
  for_each_step_interval(t, rank, iteration, [&](const OpInterval& iv, const Op&) {
    bounds.issue(iv.issue_us);
    bounds.ran(iv.start_us, iv.end_us);
  });
  return StepWindow{rank, iteration, bounds.start_us(), bounds.end_us()};
}

std::optional<int64_t> peak_of(const std::vector<MemorySample>& memory) {
  if (memory.empty()) return std::nullopt;
  int64_t peak = 0;
  for (const MemorySample& s : memory) peak = std::max(peak, s.bytes);
  return peak;
}

Metrics metrics_for(const Timeline& t, int rank, int iteration) { return accumulate_step(t, rank, iteration).finish(t, peak_of(t.memory)); }

int resolve_iteration(const Timeline& t, int iteration) {
  const int it = iteration < 0 ? t.reported_iteration : iteration;
  if (it >= t.iterations) throw InputError("iteration", "iteration " + std::to_string(it) + " is not in [0, " + std::to_string(t.iterations) + ")");
  return it;
}

void check_rank(const Timeline& t, int rank) {
  if (rank >= t.ranks) throw InputError("rank", "rank " + std::to_string(rank) + " is not in [0, " + std::to_string(t.ranks) + ")");
}

// Ranks that ran ops in `iteration` (a simulated timeline may carry one representative rank
// of many), ascending; InputError when there is none.
std::vector<int> ranks_with_intervals(const Timeline& t, int iteration) {
  std::vector<char> seen(std::max(t.ranks, 1), 0);
  for (const OpInterval& iv : t.intervals) {
    if (iv.iteration == iteration && iv.rank >= 0 && iv.rank < t.ranks) seen[iv.rank] = 1;
  }
  std::vector<int> ranks;
  for (int r = 0; r < t.ranks; ++r) {
    if (seen[r]) ranks.push_back(r);
  }
  if (ranks.empty()) throw InputError("timeline", "no op intervals for iteration " + std::to_string(iteration));
  return ranks;
}


// A throughput value in JSON: a number, or null when unknown.
nlohmann::json optional_to_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> optional_from_json(const json& object, const char* key, const std::string& path) {
  const json& v = jf::member(object, key, path);
  if (v.is_null()) return std::nullopt;
  const double x = jf::as_number(v, jf::join_path(path, key));
  if (!(x >= 0) || !std::isfinite(x)) throw InputError(jf::join_path(path, key), "must be a number >= 0 or null (unknown)");
  return x;
}

// A time from a metrics file: in [0, 1e15] us. 1e15 us is 31 years: no step is longer, and a
// file that says so is corrupt (regress would print its ratio as infinite).
// `positive`: 0 refused too (a step time).
double time_from_json(const json& object, const char* key, const std::string& path, bool positive = false) {
  constexpr double kMaxMetricsTimeUs = 1e15;
  const double v = jf::get_number(object, key, path);
  if (!(positive ? v > 0 : v >= 0) || !(v <= kMaxMetricsTimeUs))
    throw InputError(jf::join_path(path, key), std::string("must be a time in ") + (positive ? "(0" : "[0") + ", 1e+15] us (31 years), found " + number_text(v));
  return v;
}

// A count (ops, bytes) from a metrics file: >= 0.
int64_t count_from_json(const json& object, const char* key, const std::string& path) {
  const int64_t v = jf::get_int(object, key, path);
  if (v < 0) throw InputError(jf::join_path(path, key), "must be >= 0, found " + std::to_string(v));
  return v;
}

KindStats kind_stats_from_json(const json& j, const std::string& path) {
  KindStats ks;
  ks.count = jf::get_int32(j, "count", path);
  if (ks.count < 0) throw InputError(jf::join_path(path, "count"), "must be >= 0, found " + std::to_string(ks.count));
  ks.bytes = count_from_json(j, "bytes", path);
  ks.busy_us = time_from_json(j, "busy_us", path);
  return ks;
}

}  // namespace

Throughput throughput_of(const Workload& w, double step_time_us) {
  Throughput tp;
  if (!(step_time_us > 0) || w.gpus < 1) return tp;
  const double step_s = step_time_us / 1e6;
  const double gpus = static_cast<double>(w.gpus);
  if (w.samples_per_step > 0) tp.samples_per_s = w.samples_per_step / step_s;
  if (w.tokens_per_step > 0) {
    tp.tokens_per_s = w.tokens_per_step / step_s;
    tp.tokens_per_s_per_gpu = *tp.tokens_per_s / gpus;
  }
  if (w.model_flops_per_step > 0) {
    tp.model_tflops_per_gpu = w.model_flops_per_step / step_s / gpus / 1e12;
    if (w.peak_flops_per_gpu > 0) tp.mfu = w.model_flops_per_step / step_s / (gpus * w.peak_flops_per_gpu);
  }
  if (w.hardware_flops_per_step > 0 && w.peak_flops_per_gpu > 0)
    tp.hfu = w.hardware_flops_per_step / step_s / (gpus * w.peak_flops_per_gpu);
  return tp;
}

void StepAccumulator::issue(double issue_us) { bounds_.issue(issue_us); }

void StepAccumulator::add(const Op& op, double start_us, double end_us) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  ++count_;
  bounds_.ran(start_us, end_us);
  if (op.kind == OpKind::Compute && (op.phase == Phase::Forward || op.phase == Phase::Backward)) {
    std::vector<double>& last = op.phase == Phase::Forward ? last_fwd_end_us_ : last_bwd_end_us_;
    const size_t mb = static_cast<size_t>(op.microbatch);
    if (last.size() <= mb) last.resize(mb + 1, -kInf);
    last[mb] = std::max(last[mb], end_us);
  }
  if (is_marker(op.kind)) return;
  const size_t k = static_cast<size_t>(op.kind);
  kind_stats_[k].count += 1;
  kind_stats_[k].bytes += op.bytes();
  if (!(end_us > start_us)) return;  // empty: no union counts it
  // Merged into the last span when it starts inside it (or where it ends): a union merges them
  // too, into the same piece with the same start and end, so its sum cannot change.
  std::vector<Span>& spans = spans_[k];
  if (!spans.empty() && start_us >= spans.back().first && start_us <= spans.back().second) {
    spans.back().second = std::max(spans.back().second, end_us);
  } else {
    spans.emplace_back(start_us, end_us);
    ++kept_;
  }
}

void StepAccumulator::settle(double before_us) {
  // Each kind's spans sorted (a kind's ops on one stream come in time order already: then
  // checking is all the sort costs), and those that start before `before_us` summed: every
  // later span starts after them, so each sum still sees its spans in order of start.
  std::array<size_t, kKinds> settled{};
  for (size_t k = 0; k < kKinds; ++k) {
    std::vector<Span>& list = spans_[k];
    if (!std::is_sorted(list.begin(), list.end())) std::sort(list.begin(), list.end());
    settled[k] = static_cast<size_t>(std::lower_bound(list.begin(), list.end(), Span{before_us, -std::numeric_limits<double>::infinity()}) - list.begin());
    for (size_t i = 0; i < settled[k]; ++i) kind_busy_[k].add(list[i].first, list[i].second);
  }
  // Comm busy: the three collective kinds' settled spans, merged in order of start.
  const std::array<size_t, 3> comm{static_cast<size_t>(OpKind::AllGather), static_cast<size_t>(OpKind::ReduceScatter),
                                   static_cast<size_t>(OpKind::AllReduce)};
  std::array<size_t, 3> at{};
  for (;;) {
    const Span* next = nullptr;
    size_t from = 0;
    for (size_t i = 0; i < comm.size(); ++i)
      if (at[i] < settled[comm[i]] && (next == nullptr || spans_[comm[i]][at[i]] < *next)) {
        next = &spans_[comm[i]][at[i]];
        from = i;
      }
    if (next == nullptr) break;
    comm_busy_.add(next->first, next->second);
    ++at[from];
  }
  for (size_t k = 0; k < kKinds; ++k) {
    spans_[k].erase(spans_[k].begin(), spans_[k].begin() + static_cast<std::ptrdiff_t>(settled[k]));
    kept_ -= settled[k];
  }
  settle_at_ = std::max(kSettleSpans, 2 * kept_);
}

Metrics StepAccumulator::finish(const Timeline& t, std::optional<int64_t> peak_memory_bytes) {
  if (count_ == 0) invariant_broken("metrics of a step without ops");
  const double step_start = bounds_.start_us();
  Metrics m;
  m.step_time_us = bounds_.end_us() - step_start;
  m.host_issue_us = bounds_.issue_span_us();
  m.host_launches = t.host_launches_per_step;

  // Every span summed: compute busy is the compute kind's union, comm busy the union of the
  // three collective kinds.
  settle(std::numeric_limits<double>::infinity());
  for (size_t k = 0; k < kKinds; ++k)
    if (kind_stats_[k].count > 0) m.by_kind[std::string(op_kind_name(static_cast<OpKind>(k)))] = kind_stats_[k];
  for (OpKind k : kReportedKinds) m.by_kind[std::string(op_kind_name(k))].busy_us = kind_busy_[static_cast<size_t>(k)].result();
  m.compute_busy_us = kind_busy_[static_cast<size_t>(OpKind::Compute)].result();
  m.comm_busy_us = comm_busy_.result();

  m.exposed_comm_us = m.step_time_us - m.compute_busy_us;
  if (m.exposed_comm_us < 0) {
    const double tolerance = 1e-9 * std::max(1.0, std::fabs(m.step_time_us));
    if (m.exposed_comm_us < -tolerance) invariant_broken("compute busy exceeds the step time");
    m.exposed_comm_us = 0;
  }
  m.overlap_efficiency = m.comm_busy_us > 0 ? std::clamp(1.0 - m.exposed_comm_us / m.comm_busy_us, 0.0, 1.0) : 1.0;

  // Forward / backward split, per micro-batch.
  const size_t micro_batches = std::max(last_fwd_end_us_.size(), last_bwd_end_us_.size());
  last_fwd_end_us_.resize(micro_batches, -std::numeric_limits<double>::infinity());
  last_bwd_end_us_.resize(micro_batches, -std::numeric_limits<double>::infinity());
  double forward = 0;
  double window_start = step_start;
  for (size_t mb = 0; mb < micro_batches; ++mb) {
    if (std::isfinite(last_fwd_end_us_[mb])) forward += std::max(0.0, last_fwd_end_us_[mb] - window_start);
    if (std::isfinite(last_bwd_end_us_[mb])) window_start = last_bwd_end_us_[mb];
  }
  m.forward_us = std::min(forward, m.step_time_us);
  m.backward_us = m.step_time_us - m.forward_us;

  m.memory_recorded = peak_memory_bytes.has_value();
  m.peak_memory_bytes = peak_memory_bytes.value_or(0);
  if (m.memory_recorded) {
    m.allocator_pool_peaks_bytes = t.allocator_pool_peaks_bytes.value_or(m.peak_memory_bytes);
    const ReservedEstimate reserved =
        estimate_reserved(t.memory_reserve, m.peak_memory_bytes, m.allocator_pool_peaks_bytes, t.memory_capacity_bytes);
    m.peak_reserved_bytes = reserved.peak_reserved_bytes;
    m.min_reserved_bytes = reserved.min_reserved_bytes;
    m.peak_allocator_reserved_bytes = reserved.allocator_reserved_bytes;
    m.allocator_cache_flushes = reserved.cache_flushes;
    m.memory_at_peak = t.memory_at_peak;
  } else if (t.allocator_measured) {
    // A measured run without memory samples whose caching allocator reported its peaks (an
    // imported profiler trace): those are its memory, so regress and track judge it. The context
    // and NCCL buffers, which the allocator does not see, are the scenario's (none without one).
    const AllocatorPeaks& a = *t.allocator_measured;
    m.memory_recorded = true;
    m.peak_memory_bytes = m.allocator_pool_peaks_bytes = a.peak_allocated_bytes;
    m.peak_allocator_reserved_bytes = a.peak_reserved_bytes;
    m.peak_reserved_bytes = m.min_reserved_bytes = a.peak_reserved_bytes + t.memory_reserve.fixed_bytes;
  }
  m.memory_capacity_bytes = t.memory_capacity_bytes;
  m.fits_memory = static_cast<double>(m.min_reserved_bytes) <= static_cast<double>(t.memory_capacity_bytes) * (1.0 - t.memory_margin);
  m.throughput = throughput_of(t.workload, m.step_time_us);
  return m;
}

StepWindow step_window(const Timeline& timeline, int rank, int iteration) {
  const int it = resolve_iteration(timeline, iteration);
  check_rank(timeline, rank);
  if (rank >= 0) return window_of(timeline, rank, it);
  StepWindow worst;
  bool have = false;
  for (int r : ranks_with_intervals(timeline, it)) {
    StepWindow w = window_of(timeline, r, it);
    if (!have || w.end_us - w.start_us > worst.end_us - worst.start_us) worst = w;
    have = true;
  }
  return worst;
}

Metrics compute_metrics(const Timeline& timeline, int rank, int iteration) {
  const int it = resolve_iteration(timeline, iteration);
  check_rank(timeline, rank);
  if (rank >= 0) return metrics_for(timeline, rank, it);
  Metrics worst;
  bool have = false;
  for (int r : ranks_with_intervals(timeline, it)) {
    Metrics m = metrics_for(timeline, r, it);
    if (!have || m.step_time_us > worst.step_time_us) worst = std::move(m);
    have = true;
  }
  return worst;
}

json metrics_to_json(const Metrics& m) {
  json j = json::object();
  j["step_time_us"] = m.step_time_us;
  j["compute_busy_us"] = m.compute_busy_us;
  j["comm_busy_us"] = m.comm_busy_us;
  j["exposed_comm_us"] = m.exposed_comm_us;
  j["overlap_efficiency"] = m.overlap_efficiency;
  j["forward_us"] = m.forward_us;
  j["backward_us"] = m.backward_us;
  j["host_issue_us"] = m.host_issue_us;
  j["host_launches"] = m.host_launches;
  j["peak_memory_bytes"] = m.peak_memory_bytes;
  j["peak_reserved_bytes"] = m.peak_reserved_bytes;
  j["min_reserved_bytes"] = m.min_reserved_bytes;
  j["peak_allocator_reserved_bytes"] = m.peak_allocator_reserved_bytes;
  j["allocator_pool_peaks_bytes"] = m.allocator_pool_peaks_bytes;
  j["allocator_cache_flushes"] = m.allocator_cache_flushes;
  if (m.memory_at_peak) j["memory_at_peak"] = memory_at_peak_to_json(*m.memory_at_peak);
  j["memory_capacity_bytes"] = m.memory_capacity_bytes;
  j["fits_memory"] = m.fits_memory;
  const Throughput& tp = m.throughput;
  j["throughput"] = {{"samples_per_s", optional_to_json(tp.samples_per_s)},
                     {"tokens_per_s", optional_to_json(tp.tokens_per_s)},
                     {"tokens_per_s_per_gpu", optional_to_json(tp.tokens_per_s_per_gpu)},
                     {"model_tflops_per_gpu", optional_to_json(tp.model_tflops_per_gpu)},
                     {"mfu", optional_to_json(tp.mfu)},
                     {"hfu", optional_to_json(tp.hfu)}};
  json kinds = json::object();
  for (const auto& [name, ks] : m.by_kind) kinds[name] = {{"count", ks.count}, {"bytes", ks.bytes}, {"busy_us", ks.busy_us}};
  j["by_kind"] = std::move(kinds);
  return j;
}

Metrics metrics_from_json(const json& j) {
  jf::require_object(j, "");
  Metrics m;
  // Values are checked as compute_metrics writes them, so a hand-edited or corrupt file (a
  // negative step time, an efficiency of 2) is refused rather than judged "improved".
  m.step_time_us = time_from_json(j, "step_time_us", "", /*positive=*/true);
  m.compute_busy_us = time_from_json(j, "compute_busy_us", "");
  m.comm_busy_us = time_from_json(j, "comm_busy_us", "");
  m.exposed_comm_us = time_from_json(j, "exposed_comm_us", "");
  m.overlap_efficiency = jf::get_number(j, "overlap_efficiency", "");
  if (!(m.overlap_efficiency >= 0 && m.overlap_efficiency <= 1))
    throw InputError("overlap_efficiency", "must be in [0, 1], found " + number_text(m.overlap_efficiency));
  m.forward_us = time_from_json(j, "forward_us", "");
  m.backward_us = time_from_json(j, "backward_us", "");
  // Files written before it (2026-11-27): unknown, 0.
  m.host_issue_us = jf::has_member(j, "host_issue_us") ? time_from_json(j, "host_issue_us", "") : 0.0;
  m.host_launches = jf::has_member(j, "host_launches") ? count_from_json(j, "host_launches", "") : 0;  // likewise
  m.peak_memory_bytes = count_from_json(j, "peak_memory_bytes", "");
  // Files written before the reserved estimate and throughput existed: the reserve is taken as
  // none (reserved = allocated) and every throughput value as unknown.
  m.memory_recorded = m.peak_memory_bytes > 0;
  m.peak_reserved_bytes = jf::has_member(j, "peak_reserved_bytes") ? count_from_json(j, "peak_reserved_bytes", "") : m.peak_memory_bytes;
  // ... and before the least reserve: the peak reserved was the one estimate, and fits judged it.
  m.min_reserved_bytes = jf::has_member(j, "min_reserved_bytes") ? count_from_json(j, "min_reserved_bytes", "") : m.peak_reserved_bytes;
  // ... and before the allocator's own part was reported: unknown, taken as the whole reserve.
  m.peak_allocator_reserved_bytes = jf::has_member(j, "peak_allocator_reserved_bytes")
                                        ? count_from_json(j, "peak_allocator_reserved_bytes", "")
                                        : m.peak_reserved_bytes;
  // ... and before the allocator's pools (2026-11-27): unknown, taken as the allocated peak.
  m.allocator_pool_peaks_bytes = jf::has_member(j, "allocator_pool_peaks_bytes") ? count_from_json(j, "allocator_pool_peaks_bytes", "")
                                                                                  : m.peak_memory_bytes;
  m.allocator_cache_flushes = jf::has_member(j, "allocator_cache_flushes") && jf::get_bool(j, "allocator_cache_flushes", "");
  // Optional: predictions only, and files written before 2026-11-27 (twenty-seventh session) have none.
  if (jf::has_member(j, "memory_at_peak")) {
    m.memory_at_peak = memory_at_peak_from_json(j.at("memory_at_peak"), "memory_at_peak");
    if (m.memory_at_peak->total_bytes() != m.peak_memory_bytes)
      throw InputError("memory_at_peak", "its parts sum to " + std::to_string(m.memory_at_peak->total_bytes()) +
                                             " B, not the peak_memory_bytes " + std::to_string(m.peak_memory_bytes));
  }
  m.memory_capacity_bytes = count_from_json(j, "memory_capacity_bytes", "");
  m.fits_memory = jf::get_bool(j, "fits_memory", "");
  if (jf::has_member(j, "throughput")) {
    const json& tp = jf::require_object(j.at("throughput"), "throughput");
    m.throughput.samples_per_s = optional_from_json(tp, "samples_per_s", "throughput");
    m.throughput.tokens_per_s = optional_from_json(tp, "tokens_per_s", "throughput");
    m.throughput.tokens_per_s_per_gpu = optional_from_json(tp, "tokens_per_s_per_gpu", "throughput");
    m.throughput.model_tflops_per_gpu = optional_from_json(tp, "model_tflops_per_gpu", "throughput");
    m.throughput.mfu = optional_from_json(tp, "mfu", "throughput");
    m.throughput.hfu = optional_from_json(tp, "hfu", "throughput");
  }
  const json& kinds = jf::require_object(jf::member(j, "by_kind", ""), "by_kind");
  for (const auto& [name, value] : kinds.items()) m.by_kind[name] = kind_stats_from_json(value, jf::join_path("by_kind", name));
  return m;
}

}  // namespace shardline
