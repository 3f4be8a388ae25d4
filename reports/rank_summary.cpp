#include "reports/rank_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "core/metrics.h"
#include "core/units.h"
#include "reports/compare.h"
#include "reports/svg_timeline.h"
#include "core/statistics.h"

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

RankSummary summarize_ranks(const RankReport& report, const Timeline& timeline, double symmetric_step_us,
                            const std::vector<double>& compute_factors, const std::vector<double>& link_factors) {
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
  s.wait_by_rank_us = wait;
  s.compute_factor = spread_of(compute_factors);
  s.compute_factor_ranks = static_cast<int>(compute_factors.size());
  s.link_factor = spread_of(link_factors);
  s.link_factor_ranks = static_cast<int>(link_factors.size());
  s.symmetric_step_us = symmetric_step_us;
  s.straggler_cost = symmetric_step_us > 0 ? s.step_us.max / symmetric_step_us : 1.0;
  const auto op_name = [&](int op) {
    return op >= 0 && static_cast<size_t>(op) < timeline.ops.size() ? timeline.name(timeline.ops[static_cast<size_t>(op)]) : std::string();
  };
  std::map<int, double> on_rank;
  for (const PathSegment& seg : report.critical_path) {
    on_rank[seg.rank] += seg.to_us - seg.from_us;
    s.path_us += seg.to_us - seg.from_us;
    if (seg.held_up_op >= 0 && seg.held_up_wait_us > s.path_op_wait_us) {
      s.path_op_wait_us = seg.held_up_wait_us;
      s.path_op = seg.held_up_op;
    }
  }
  s.path_hops = report.critical_path.empty() ? 0 : static_cast<int>(report.critical_path.size()) - 1;
  for (const auto& [rank, us] : on_rank)
    if (us > s.path_rank_us) s.path_rank_us = us, s.path_rank = rank;  // ascending ranks: the lowest on ties
  s.path_op_name = op_name(s.path_op);
  for (size_t op = 0; op < report.wait_at_op_us.size(); ++op) {
    s.total_wait_us += report.wait_at_op_us[op];
    if (report.wait_at_op_us[op] > s.most_waiting_op_us) {
      s.most_waiting_op_us = report.wait_at_op_us[op];
      s.most_waiting_op = static_cast<int>(op);
    }
  }
  s.most_waiting_op_name = op_name(s.most_waiting_op);
  return s;
}

std::vector<int> ranks_that_matter(const RankSummary& summary) {
  std::vector<int> ranks{0, summary.step_us.max_rank, summary.step_us.min_rank};
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::string rank_summary_text(const RankSummary& s) {
  std::string out = "every rank               " + std::to_string(s.ranks) + (s.ranks == 1 ? " rank" : " ranks") + " simulated\n";
  out += spread_line("  step time              ", s.step_us);
  out += spread_line("  exposed comm           ", s.exposed_comm_us);
  out += spread_line("  waiting in collectives ", s.collective_wait_us);
  char line[200];
  const auto factor_line = [&](const char* what, const RankSpread& f) {
    std::snprintf(line, sizeof line, "  %-22s min %.3f (rank %d), p10 %.3f, median %.3f, p90 %.3f, max %.3f (rank %d)\n", what, f.min,
                  f.min_rank, f.p10, f.median, f.p90, f.max, f.max_rank);
    out += line;
  };
  if (s.compute_factor_ranks > 0) factor_line("compute factor", s.compute_factor);
  if (s.link_factor_ranks > 0) factor_line("link bandwidth factor", s.link_factor);
  std::snprintf(line, sizeof line, "  straggler cost         %.3f  (slowest step %s / %s without variation)\n", s.straggler_cost,
                format_time_us(s.step_us.max).c_str(), format_time_us(s.symmetric_step_us).c_str());
  out += line;
  if (s.path_rank >= 0) {
    std::snprintf(line, sizeof line, "  critical path          %.0f%% on rank %d (%s of %s), crossing %d time%s between ranks\n",
                  s.path_us > 0 ? 100.0 * s.path_rank_us / s.path_us : 0.0, s.path_rank, format_time_us(s.path_rank_us).c_str(),
                  format_time_us(s.path_us).c_str(), s.path_hops, s.path_hops == 1 ? "" : "s");
    out += line;
    if (s.path_op >= 0)
      out += "    longest wait on it   op " + std::to_string(s.path_op) + " \"" + s.path_op_name + "\": " +
             format_time_us(s.path_op_wait_us) + " for the last member\n";
  }
  if (s.most_waiting_op < 0) {
    out += "  most waiting at        nowhere: no rank waited for another\n";
    return out;
  }
  out += "  most waiting at        op " + std::to_string(s.most_waiting_op) + " \"" + s.most_waiting_op_name + "\": " +
         format_time_us(s.most_waiting_op_us) + " summed over members (all collectives: " + format_time_us(s.total_wait_us) + ")\n";
  return out;
}

std::string rank_summary_html(const RankSummary& s) {
  std::string out = "<h2>Every rank</h2>\n<pre class=\"summary\">" + html_escape(rank_summary_text(s)) + "</pre>\n";
  const size_t n = s.wait_by_rank_us.size();
  if (n == 0) return out;
  const size_t cells = std::min<size_t>(n, 1024);
  const size_t per_cell = (n + cells - 1) / cells;
  const double most = s.collective_wait_us.max;
  const double cell_w = 1000.0 / static_cast<double>((n + per_cell - 1) / per_cell);
  char buf[256];
  // Above 1,024 ranks a cell holds a block of ranks: its top half shows the block's most waiting,
  // its bottom half its least, so a straggler (the rank the others wait for, which itself waits
  // least) stays visible as a white lower half among red ones.
  const bool blocks = per_cell > 1;
  out += "<p>Waiting inside collectives per rank (white: none, dark red: the most, " + html_escape(format_time_us(most)) + ")" +
         (blocks ? "; each cell is a block of " + std::to_string(per_cell) + " ranks, its upper half the block's most waiting, "
                   "its lower half its least (a straggler waits least)"
                 : std::string()) +
         ":</p>\n<div class=\"scroll\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"24\">";
  const auto shade_of = [&](double w) { return most > 0 ? static_cast<int>(std::lround(255.0 * (1.0 - w / most))) : 255; };
  const auto rect = [&](double x, double y, double h, double w) {
    const int shade = shade_of(w);
    std::snprintf(buf, sizeof buf, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"rgb(%d,%d,%d)\" stroke=\"#ddd\" stroke-width=\"0.2\">",
                  x, y, cell_w, h, 160 + shade * 95 / 255, shade, shade);
    out += buf;
  };
  for (size_t first = 0, k = 0; first < n; first += per_cell, ++k) {
    const size_t last = std::min(n, first + per_cell) - 1;
    size_t hi = first, lo = first;
    for (size_t r = first; r <= last; ++r) {
      if (s.wait_by_rank_us[r] > s.wait_by_rank_us[hi]) hi = r;
      if (s.wait_by_rank_us[r] < s.wait_by_rank_us[lo]) lo = r;
    }
    const double x = static_cast<double>(k) * cell_w;
    if (!blocks) {
      rect(x, 0, 24, s.wait_by_rank_us[first]);
      out += "<title>" + html_escape("rank " + std::to_string(first) + ": waited " + format_time_us(s.wait_by_rank_us[first])) +
             "</title></rect>";
      continue;
    }
    const std::string who = "ranks " + std::to_string(first) + "-" + std::to_string(last);
    rect(x, 0, 12, s.wait_by_rank_us[hi]);
    out += "<title>" + html_escape(who + ": waited up to " + format_time_us(s.wait_by_rank_us[hi]) + " (rank " + std::to_string(hi) + ")") +
           "</title></rect>";
    rect(x, 12, 12, s.wait_by_rank_us[lo]);
    out += "<title>" + html_escape(who + ": waited at least " + format_time_us(s.wait_by_rank_us[lo]) + " (rank " + std::to_string(lo) + ")") +
           "</title></rect>";
  }
  out += "</svg></div>\n";
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
  j["compute_factor"] = s.compute_factor_ranks > 0 ? spread_json(s.compute_factor) : nlohmann::json(nullptr);
  j["link_factor"] = s.link_factor_ranks > 0 ? spread_json(s.link_factor) : nlohmann::json(nullptr);
  j["critical_path"] = s.path_rank < 0 ? nlohmann::json(nullptr)
                                        : nlohmann::json{{"rank", s.path_rank},
                                                         {"rank_us", s.path_rank_us},
                                                         {"path_us", s.path_us},
                                                         {"hops", s.path_hops},
                                                         {"longest_wait_op", s.path_op},
                                                         {"longest_wait_op_name", s.path_op_name},
                                                         {"longest_wait_us", s.path_op_wait_us}};
  j["most_waiting"] = s.most_waiting_op < 0 ? nlohmann::json(nullptr)
                                            : nlohmann::json{{"op", s.most_waiting_op},
                                                             {"op_name", s.most_waiting_op_name},
                                                             {"wait_us", s.most_waiting_op_us}};
  return j;
}

std::string measured_ranks_text(const Timeline& measured, const std::vector<GroupInfo>& groups) {
  if (measured.ranks < 2) return "";
  const int iteration = measured.reported_iteration;
  std::vector<double> step, exposed;
  for (int r = 0; r < measured.ranks; ++r) {
    const Metrics m = compute_metrics(measured, r, iteration);
    step.push_back(m.step_time_us);
    exposed.push_back(m.exposed_comm_us);
  }
  std::string out = "every rank (measured, iteration " + std::to_string(iteration) + "):\n";
  out += spread_line("  step time              ", spread_of(step));
  out += spread_line("  exposed comm           ", spread_of(exposed));
  out += spread_line("  waiting in collectives ", spread_of(collective_wait_per_rank_us(measured, groups, iteration)));
  return out;
}

}  // namespace shardline
