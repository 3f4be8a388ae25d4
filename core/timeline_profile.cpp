#include "core/timeline_profile.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/statistics.h"

namespace shardline {
namespace {

// A latency (alpha) is only told apart from a bandwidth (beta) by sizes that differ enough: a
// training run's buckets are often within 2-3x of each other, where any alpha fits the noise.
constexpr double kMinSizeSpanForAlpha = 8.0;

// alpha + beta * S through points (medians per distinct size) when the sizes span at least
// kMinSizeSpanForAlpha; else (or when the fit is not physical) the mean cost per byte, alpha 0.
AlphaBeta fit_points(const std::vector<int64_t>& sizes, const std::vector<double>& times) {
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  if (sizes.size() >= 2 && static_cast<double>(*hi) >= kMinSizeSpanForAlpha * static_cast<double>(*lo)) {
    AlphaBeta f = fit_alpha_beta(sizes, times);
    if (f.alpha_us >= 0 && f.beta_us_per_byte > 0) return f;
  }
  // One size, or a fit that is not physical (negative latency): the mean cost per byte.
  double bytes = 0, us = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    bytes += static_cast<double>(sizes[i]);
    us += times[i];
  }
  return AlphaBeta{0.0, us / bytes};
}

}  // namespace

ClusterProfile profile_from_timeline(const Timeline& t, const std::string& machine) {
  if (t.source != "measured") throw InputError("timeline", "is \"" + t.source + "\": calibrate from a measured run (shardline import, or exec)");
  ClusterProfile p;
  p.backend = t.backend;
  p.ranks = t.ranks;
  p.machine = machine;
  p.created = profile_created_now();

  std::map<std::pair<int, int>, std::map<int64_t, std::vector<double>>> collectives;  // (kind, n) -> size -> times
  std::map<int64_t, std::vector<double>> copies;                                       // bytes -> times
  std::map<int, std::vector<double>> forward, backward;                                // unit -> times
  std::map<std::pair<int, int>, std::vector<std::pair<int, double>>> issues;           // (rank, iteration) -> (op, issue)
  for (const OpInterval& iv : t.intervals) {
    const Op& op = t.ops[static_cast<size_t>(iv.op)];
    const double d = iv.end_us - iv.start_us;
    if (op.kind != OpKind::Alloc && op.kind != OpKind::Free) issues[{iv.rank, iv.iteration}].emplace_back(iv.op, iv.issue_us);
    switch (op.kind) {
      case OpKind::AllGather:
      case OpKind::ReduceScatter:
      case OpKind::AllReduce:
        // A group of one moves nothing (the simulator gives it no time): no table for it.
        if (d > 0 && op.bytes() > 0 && t.group_size(op) >= 2) collectives[{static_cast<int>(collective_kind(op.kind)), t.group_size(op)}][op.bytes()].push_back(d);
        break;
      case OpKind::CopyIn:
      case OpKind::CopyOut:
        if (d > 0 && op.bytes() > 0) copies[op.bytes()].push_back(d);
        break;
      case OpKind::Compute:
        if (op.unit < 0 || d <= 0) break;
        if (op.phase == Phase::Forward) forward[op.unit].push_back(d);
        else if (op.phase == Phase::Backward) backward[op.unit].push_back(d);
        break;
      default: break;
    }
  }
  if (collectives.empty())
    throw InputError("timeline", std::string("has no measured collective") +
                                     (t.ranks == 1 ? " (a run on one GPU runs none)" : " with a time") +
                                     ": a profile's collective tables need them, so fit it on a run of two GPUs or more that ran them");

  for (const auto& [key, by_size] : collectives) {
    CollectiveTable table;
    table.kind = static_cast<CollectiveKind>(key.first);
    table.group_size = key.second;
    for (const auto& [bytes, times] : by_size) {
      table.sizes_bytes.push_back(bytes);
      table.times_us.push_back(median(times));
      table.relative_spread.push_back(relative_spread(times));
    }
    table.fit = fit_points(table.sizes_bytes, table.times_us);
    p.collectives.push_back(std::move(table));
  }
  p.collective_noise = median_relative_spread(p.collectives);

  // A run without copies (zero-copy) leaves the copy cost unmeasured: 0, refused when used.
  if (!copies.empty()) {
    std::vector<int64_t> copy_sizes;
    std::vector<double> copy_times;
    for (const auto& [bytes, times] : copies) {
      copy_sizes.push_back(bytes);
      copy_times.push_back(median(times));
    }
    const AlphaBeta copy = fit_points(copy_sizes, copy_times);
    p.copy_latency_us = copy.alpha_us;
    p.copy_bandwidth_bytes_per_s = 1e6 / copy.beta_us_per_byte;
  }

  std::vector<double> gaps;
  for (auto& [key, list] : issues) {
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i) gaps.push_back(list[i].second - list[i - 1].second);
  }
  p.issue_overhead_us = gaps.empty() ? 0.0 : std::max(0.0, median(gaps));

  // Units: the backward op of a recomputing unit ran its forward again first.
  std::map<int, bool> recomputes;
  for (const Op& op : t.ops)
    if (op.kind == OpKind::Compute && op.phase == Phase::Backward && op.recompute && op.unit >= 0) recomputes[op.unit] = true;
  std::map<int, std::string> unit_names;
  for (const Op& op : t.ops)
    if (op.kind == OpKind::Compute && op.unit >= 0 && !unit_names.count(op.unit)) {
      std::string name = t.name(op);
      // "fwd layers.3 mb0" -> "layers.3"
      if (const size_t space = name.find(' '); space != std::string::npos) name = name.substr(space + 1);
      if (const size_t mb = name.rfind(" mb"); mb != std::string::npos) name = name.substr(0, mb);
      unit_names[op.unit] = name;
    }
  for (const auto& [unit, times] : forward) {
    UnitTimes u;
    u.name = unit_names[unit];
    u.forward_us = median(times);
    if (backward.count(unit)) u.backward_us = std::max(0.0, median(backward[unit]) - (recomputes[unit] ? u.forward_us : 0.0));
    p.units.push_back(std::move(u));
  }
  return p;
}

int apply_unit_times(Scenario& scenario, const ClusterProfile& profile, std::vector<std::string>* unmatched) {
  int applied = 0;
  std::vector<bool> used(profile.units.size(), false);
  for (UnitSpec& unit : scenario.model.units) {
    for (size_t k = 0; k < profile.units.size(); ++k) {
      const UnitTimes& u = profile.units[k];
      if (u.name != unit.name) continue;
      unit.forward_time_us = u.forward_us;
      unit.backward_time_us = u.backward_us;
      used[k] = true;
      ++applied;
      break;
    }
  }
  if (unmatched != nullptr)
    for (size_t k = 0; k < profile.units.size(); ++k)
      if (!used[k]) unmatched->push_back(profile.units[k].name);
  return applied;
}

}  // namespace shardline
