#include "reports/rank_summary.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "reports/compare.h"

namespace shardline {
namespace {

RankSpread spread_of(const std::vector<double>& values) {
  RankSpread s;
  if (values.empty()) return s;
  // min_element and max_element name the first of equals: the lowest rank.
  const auto lo = std::min_element(values.begin(), values.end());
  const auto hi = std::max_element(values.begin(), values.end());
  s.min = *lo;
  s.min_rank = static_cast<int>(lo - values.begin());
  s.max = *hi;
  s.max_rank = static_cast<int>(hi - values.begin());
  s.p10 = quantile(values, 0.10);
  s.median = quantile(values, 0.50);
  s.p90 = quantile(values, 0.90);
  return s;
}

std::string spread_line(const char* what, const RankSpread& s) {
  return std::string(what) + "min " + format_time_us(s.min) + " (rank " + std::to_string(s.min_rank) + "), p10 " +
         format_time_us(s.p10) + ", median " + format_time_us(s.median) + ", p90 " + format_time_us(s.p90) + ", max " +
         format_time_us(s.max) + " (rank " + std::to_string(s.max_rank) + ")\n";
}

nlohmann::json spread_json(const RankSpread& s) {
  return {{"min", s.min}, {"min_rank", s.min_rank}, {"p10", s.p10}, {"median", s.median},
          {"p90", s.p90}, {"max", s.max},           {"max_rank", s.max_rank}};
}

}  // namespace

RankSummary summarize_ranks(const RankReport& report, const Timeline& timeline, double symmetric_step_us) {
  RankSummary s;
  s.ranks = static_cast<int>(report.ranks.size());
  std::vector<double> step, exposed, wait;
  for (const RankStats& r : report.ranks) {
    step.push_back(r.step_us);
    exposed.push_back(std::max(0.0, r.step_us - r.compute_busy_us));
    wait.push_back(r.collective_wait_us);
  }
  s.step_us = spread_of(step);
  s.exposed_comm_us = spread_of(exposed);
  s.collective_wait_us = spread_of(wait);
  s.symmetric_step_us = symmetric_step_us;
  s.straggler_cost = symmetric_step_us > 0 ? s.step_us.max / symmetric_step_us : 1.0;
  for (size_t r = 0; r < report.wait_caused_us.size(); ++r) {
    s.total_wait_us += report.wait_caused_us[r];
    if (report.wait_caused_us[r] > s.critical_rank_wait_us) {
      s.critical_rank_wait_us = report.wait_caused_us[r];
      s.critical_rank = static_cast<int>(r);
    }
  }
  for (size_t op = 0; op < report.wait_at_op_us.size(); ++op) {
    if (report.wait_at_op_us[op] > s.critical_op_wait_us) {
      s.critical_op_wait_us = report.wait_at_op_us[op];
      s.critical_op = static_cast<int>(op);
    }
  }
  if (s.critical_op >= 0 && static_cast<size_t>(s.critical_op) < timeline.ops.size())
    s.critical_op_name = timeline.name(timeline.ops[static_cast<size_t>(s.critical_op)]);
  return s;
}

std::vector<int> ranks_that_matter(const RankSummary& summary) {
  std::vector<int> ranks{0, summary.step_us.max_rank, summary.step_us.min_rank};
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::string rank_summary_text(const RankSummary& s) {
  std::string out = "every rank               " + std::to_string(s.ranks) + " ranks simulated\n";
  out += spread_line("  step time              ", s.step_us);
  out += spread_line("  exposed comm           ", s.exposed_comm_us);
  out += spread_line("  waiting in collectives ", s.collective_wait_us);
  char line[160];
  std::snprintf(line, sizeof line, "  straggler cost         %.3f  (slowest step %s / %s without variation)\n", s.straggler_cost,
                format_time_us(s.step_us.max).c_str(), format_time_us(s.symmetric_step_us).c_str());
  out += line;
  if (s.critical_rank < 0) {
    out += "  critical path          no rank waited for another\n";
    return out;
  }
  std::snprintf(line, sizeof line, "  critical path          rank %d: its late arrivals cost the others %s of waiting (%.0f%% of all)\n",
                s.critical_rank, format_time_us(s.critical_rank_wait_us).c_str(),
                s.total_wait_us > 0 ? 100.0 * s.critical_rank_wait_us / s.total_wait_us : 0.0);
  out += line;
  out += "  most waiting at        op " + std::to_string(s.critical_op) + " \"" + s.critical_op_name + "\": " +
         format_time_us(s.critical_op_wait_us) + " summed over members\n";
  return out;
}

nlohmann::json rank_summary_to_json(const RankSummary& s) {
  nlohmann::json j = {{"ranks", s.ranks},
                      {"step_us", spread_json(s.step_us)},
                      {"exposed_comm_us", spread_json(s.exposed_comm_us)},
                      {"collective_wait_us", spread_json(s.collective_wait_us)},
                      {"symmetric_step_us", s.symmetric_step_us},
                      {"straggler_cost", s.straggler_cost},
                      {"total_wait_us", s.total_wait_us}};
  j["critical_path"] = s.critical_rank < 0 ? nlohmann::json(nullptr)
                                           : nlohmann::json{{"rank", s.critical_rank},
                                                            {"rank_wait_caused_us", s.critical_rank_wait_us},
                                                            {"op", s.critical_op},
                                                            {"op_name", s.critical_op_name},
                                                            {"op_wait_us", s.critical_op_wait_us}};
  return j;
}

}  // namespace shardline
