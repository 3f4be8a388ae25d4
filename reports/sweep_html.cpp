// Sweep report.html rendering (see reports/sweep_html.h).
#include "reports/sweep_html.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/units.h"
#include "reports/svg_chart.h"
#include "reports/throughput_text.h"

namespace shardline {
namespace {

constexpr size_t kMaxSeries = 12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::optional<double> as_number(const std::string& text) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// The flattened path used as the x axis (docs/sweep.md): a numeric path of an axis that varies one
// path, before any path of a joint axis (whose other paths move with it, so that a line along it
// may change more than x); within each kind, a bucket size, else a size, else the first numeric
// path. -1 when nothing numeric varies.
int choose_x_path(const std::vector<SweepAxis>& axes, const std::vector<std::string>& paths, const std::vector<SweepRow>& rows) {
  auto numeric = [&](size_t p) {  // at least two distinct numbers (words such as "unit" are skipped)
    std::optional<double> first;
    for (const auto& r : rows)
      if (auto v = as_number(r.values[p])) {
        if (first && *first != *v) return true;
        first = v;
      }
    return false;
  };
  std::vector<bool> joint;  // per flattened path: its axis varies several paths
  for (const SweepAxis& axis : axes) joint.insert(joint.end(), axis.paths.size(), axis.paths.size() > 1);
  joint.resize(paths.size(), false);
  for (const bool of_joint : {false, true}) {
    auto candidate = [&](size_t p) { return joint[p] == of_joint && numeric(p); };
    for (size_t p = 0; p < paths.size(); ++p)
      if (path_takes_bytes(paths[p]) && paths[p].find("bucket") != std::string::npos && candidate(p)) return static_cast<int>(p);
    for (size_t p = 0; p < paths.size(); ++p)
      if (path_takes_bytes(paths[p]) && candidate(p)) return static_cast<int>(p);
    for (size_t p = 0; p < paths.size(); ++p)
      if (candidate(p)) return static_cast<int>(p);
  }
  return -1;
}

// Whether a number's text is written as a whole number ("4"; not "4.0", "0.5" or "1e3").
bool integer_text(const std::string& text) { return text.find_first_of(".eE") == std::string::npos; }

// A row's overlap efficiency as the report prints it ("0.771").
std::string efficiency_text(const SweepRow& r) {
  char e[32];
  std::snprintf(e, sizeof e, "%.3f", r.metrics.overlap_efficiency);
  return e;
}

// `skip` (optional): the paths left out, one flag per path.
std::string settings(const SweepRow& r, const std::vector<std::string>& paths, const std::vector<bool>* skip = nullptr) {
  std::string out;
  for (size_t p = 0; p < paths.size(); ++p) {
    if (skip != nullptr && (*skip)[p]) continue;
    std::string v = r.values[p];
    if (path_takes_bytes(paths[p]))
      if (auto n = as_number(v)) v = format_bytes(static_cast<int64_t>(*n));
    out += (out.empty() ? "" : ", ") + paths[p] + "=" + v;
  }
  return out;
}

// How the objective is drawn: its name, axis label, and a row's value in the axis unit.
struct ObjectiveAxis {
  std::string name;   // "Tokens/s per GPU"
  std::string label;  // "tokens/s per GPU"
  double (*value)(const SweepRow&);
  std::string (*text)(const SweepRow&);
};

ObjectiveAxis objective_axis(SweepObjective o) {
  switch (o) {
    case SweepObjective::Throughput:
      return {"Tokens/s per GPU", "tokens/s per GPU", [](const SweepRow& r) { return objective_value(r, SweepObjective::Throughput); },
              [](const SweepRow& r) { return format_or_na(r.metrics.throughput.tokens_per_s_per_gpu, format_per_s) + " tokens/s per GPU"; }};
    case SweepObjective::Memory:
      return {"Reserve needed", "reserve needed (GiB)",
              [](const SweepRow& r) { return static_cast<double>(r.metrics.min_reserved_bytes) / kGiB; },
              [](const SweepRow& r) { return format_bytes(r.metrics.min_reserved_bytes) + " reserve needed"; }};
    case SweepObjective::StepTime: break;
  }
  return {"Step time", "step time (ms)", [](const SweepRow& r) { return r.metrics.step_time_us / 1000.0; },
          [](const SweepRow& r) { return format_time_us(r.metrics.step_time_us); }};
}

// The objective and overlap efficiency against the x path, one series per setting of the others,
// so that no two configurations of a series share an x. A path of x's own joint axis that x
// determines (mesh.replicate along mesh.shard=8/8,16/4,32/2) moves with x and is left out of the
// key, or each series would hold one point; one that x does not determine (activation_checkpointing
// along checkpoint_every=none/1,full/1,full/2) is in it, as any other axis.
std::string line_plots(const SweepResult& res, const std::vector<std::string>& paths, int xp) {
  std::vector<bool> x_axis(paths.size(), false);  // the paths left out of the series key
  size_t flat = 0;
  for (const SweepAxis& axis : res.axes) {
    const size_t begin = flat;
    flat += axis.paths.size();
    if (static_cast<size_t>(xp) < begin || static_cast<size_t>(xp) >= flat) continue;
    const size_t x_in_axis = static_cast<size_t>(xp) - begin;
    for (size_t q = 0; q < axis.paths.size() && begin + q < paths.size(); ++q) {
      std::map<std::string, std::string> along_x;  // x's value -> q's value
      bool determined = true;
      for (const auto& tuple : axis.values) {
        const auto [it, added] = along_x.emplace(tuple[x_in_axis], tuple[q]);
        if (!added && it->second != tuple[q]) determined = false;
      }
      x_axis[begin + q] = determined;
    }
  }
  x_axis[static_cast<size_t>(xp)] = true;
  std::map<std::string, std::vector<size_t>> groups;  // setting label -> rows
  std::vector<std::string> order;
  for (size_t i = 0; i < res.rows.size(); ++i) {
    const auto& r = res.rows[i];
    if (!r.valid || !as_number(r.values[static_cast<size_t>(xp)])) continue;
    const std::string key = settings(r, paths, &x_axis);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(i);
  }
  const bool sizes = path_takes_bytes(paths[static_cast<size_t>(xp)]);
  double xmin = INFINITY, xmax = -INFINITY;
  bool integers = true;  // every x is written as a whole number: a count, ticked at whole numbers
  for (const auto& r : res.rows)
    if (auto x = as_number(r.values[static_cast<size_t>(xp)]); r.valid && x) {
      xmin = std::min(xmin, *x);
      xmax = std::max(xmax, *x);
      integers = integers && integer_text(r.values[static_cast<size_t>(xp)]);
    }
  const ObjectiveAxis axis = objective_axis(res.ranked_by.used);
  Chart step, eff;
  step.title = axis.name + " against " + paths[static_cast<size_t>(xp)];
  eff.title = "Overlap efficiency against " + paths[static_cast<size_t>(xp)];
  step.x_label = eff.x_label = paths[static_cast<size_t>(xp)];
  step.y_label = axis.label;
  eff.y_label = "overlap efficiency";
  // Sizes read best on a log-2 axis (ticks at powers of two).
  step.log_x = eff.log_x = xmin > 0 && xmax / xmin >= (sizes ? 2 : 16);
  step.integer_x = eff.integer_x = integers;
  if (sizes) step.x_format = eff.x_format = [](double v) { return format_bytes(static_cast<int64_t>(std::llround(v))); };
  std::string note;
  for (size_t s = 0; s < order.size(); ++s) {
    if (s == kMaxSeries) {
      note = "<p class=\"note\">Showing the first " + std::to_string(kMaxSeries) + " of " + std::to_string(order.size()) +
             " settings; every row is in sweep.csv.</p>\n";
      break;
    }
    std::vector<size_t> idx = groups[order[s]];
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return *as_number(res.rows[a].values[static_cast<size_t>(xp)]) < *as_number(res.rows[b].values[static_cast<size_t>(xp)]);
    });
    ChartSeries a, b;
    a.name = b.name = order[s].empty() ? "all" : order[s];
    for (size_t i : idx) {
      const auto& r = res.rows[i];
      const double x = *as_number(r.values[static_cast<size_t>(xp)]);
      const std::string title = settings(r, paths) + (r.fits_memory ? "" : " (does not fit memory)");
      a.x.push_back(x);
      a.y.push_back(axis.value(r));
      a.titles.push_back(title + ": " + axis.text(r));
      b.x.push_back(x);
      b.y.push_back(r.metrics.overlap_efficiency);
      b.titles.push_back(title + ": " + efficiency_text(r));
    }
    step.series.push_back(std::move(a));
    eff.series.push_back(std::move(b));
  }
  // Rows whose x is a word ("unit": one bucket per unit) have no place on a numeric axis: named
  // under the plots with their values, so the best configuration is never silently missing.
  std::vector<size_t> off_axis;
  for (size_t i = 0; i < res.rows.size(); ++i)
    if (res.rows[i].valid && !as_number(res.rows[i].values[static_cast<size_t>(xp)])) off_axis.push_back(i);
  if (!off_axis.empty()) {
    note += "<p class=\"note\">Not on these axes (" + html_escape(paths[static_cast<size_t>(xp)]) + " is not a number): ";
    const size_t shown = std::min<size_t>(off_axis.size(), 5);
    for (size_t k = 0; k < shown; ++k) {
      const SweepRow& r = res.rows[off_axis[k]];
      note += (k ? "; " : "") + html_escape(settings(r, paths)) + ": " + html_escape(axis.text(r)) + ", overlap efficiency " + efficiency_text(r);
    }
    if (off_axis.size() > shown)
      note += "; and " + std::to_string(off_axis.size() - shown) + (off_axis.size() - shown == 1 ? " more row" : " more rows") + " in sweep.csv";
    note += ".</p>\n";
  }
  return render_svg_chart(step) + note + render_svg_chart(eff) + note;
}

std::string pareto_plot(const SweepResult& res, const std::vector<std::string>& paths) {
  // x: the objective (step time for the memory objective, whose value is already on y); y: the
  // reserve needed (what must fit; the typical reserve is capped at the GPU).
  const ObjectiveAxis axis = objective_axis(res.ranked_by.used == SweepObjective::Memory ? SweepObjective::StepTime : res.ranked_by.used);
  Chart c;
  c.title = "Reserve needed against " + (res.ranked_by.used == SweepObjective::Throughput ? std::string("tokens/s per GPU")
                                                                                                 : std::string("step time")) +
            " (Pareto front marked)";
  c.x_label = axis.label;
  // GiB, or MiB where every configuration needs less than a GiB (a host scenario's tens of MiB
  // read as ticks of 0.034 GiB).
  int64_t most_needed = 0;
  for (const auto& r : res.rows)
    if (r.valid) most_needed = std::max(most_needed, r.metrics.min_reserved_bytes);
  const bool in_mib = most_needed < (int64_t{1} << 30);
  const double unit_bytes = in_mib ? kGiB / 1024.0 : kGiB;
  c.y_label = in_mib ? "reserve needed (MiB)" : "reserve needed (GiB)";
  ChartSeries fit, tight, over, front;
  fit.name = "fits with margin";
  tight.name = "fits, inside the margin";
  over.name = "exceeds GPU memory";
  front.name = "Pareto front";
  fit.line = tight.line = over.line = false;
  fit.color = "#2ca02c";
  tight.color = "#ff7f0e";
  over.color = "#d62728";
  front.color = "#222";
  front.marker_radius = 5;
  auto title = [&](const SweepRow& r) { return settings(r, paths) + ": " + axis.text(r) + ", " + format_bytes(r.metrics.min_reserved_bytes) + " reserve needed"; };
  int64_t capacity = 0;
  for (const auto& r : res.rows) {
    if (!r.valid) continue;
    capacity = std::max(capacity, r.metrics.memory_capacity_bytes);
    ChartSeries& s = !r.fits_memory ? over : (r.fits_with_margin ? fit : tight);
    s.x.push_back(axis.value(r));
    s.y.push_back(static_cast<double>(r.metrics.min_reserved_bytes) / unit_bytes);
    s.titles.push_back(title(r));
  }
  for (size_t i : res.pareto) {
    const auto& r = res.rows[i];
    front.x.push_back(axis.value(r));
    front.y.push_back(static_cast<double>(r.metrics.min_reserved_bytes) / unit_bytes);
    front.titles.push_back("Pareto: " + title(r));
  }
  for (auto* s : {&fit, &tight, &over, &front})
    if (!s->x.empty()) c.series.push_back(*s);
  // The capacity line, unless it would squash every point to the bottom of the plot, or the rows
  // have different GPUs (a varied preset): one line would misplace the others' limit, so the
  // note under the plot lists the capacities and the colours say which points fit their own.
  // The capacity goes in the note, not the title: a title is one line, and a long one is cut off.
  int64_t max_peak = 0;
  std::set<int64_t> capacities;
  for (const auto& r : res.rows)
    if (r.valid) {
      max_peak = std::max(max_peak, r.metrics.min_reserved_bytes);
      capacities.insert(r.metrics.memory_capacity_bytes);
    }
  if (capacities.size() > 1) {
    std::string list;
    for (const int64_t cap : capacities) list += (list.empty() ? "" : ", ") + format_bytes(cap);
    c.note = "GPU memory per configuration: " + list;
  } else if (capacity > 0 && max_peak * 4 >= capacity) {
    c.y_reference = static_cast<double>(capacity) / unit_bytes;
    c.y_reference_label = "GPU memory " + format_bytes(capacity);
  } else if (capacity > 0) {
    c.note = "GPU memory " + format_bytes(capacity);
  }
  return render_svg_chart(c);
}

}  // namespace

std::string sweep_html(const SweepResult& res) {
  const auto paths = sweep_paths(res.axes);
  size_t invalid = 0, over = 0;
  std::map<std::string, size_t> reasons;
  for (const auto& r : res.rows) {
    if (!r.valid) {
      ++invalid;
      ++reasons[r.error];
    } else if (!r.fits_memory) {
      ++over;
    }
  }
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>shardline sweep: " << html_escape(res.scenario)
    << "</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1100px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}pre{background:#f6f6f6;padding:10px;"
       "white-space:pre-wrap}.note{color:#666;font-size:12px}</style></head><body>\n";
  h << "<h1>Sweep: " << html_escape(res.scenario) << "</h1>\n<p>" << res.rows.size() << " configurations over ";
  for (size_t a = 0; a < res.axes.size(); ++a)
    h << (a ? ", " : "") << "<code>" << html_escape(res.axes[a].label()) << "</code> (" << res.axes[a].values.size() << ")";
  h << "; " << over << (over == 1 ? " exceeds" : " exceed") << " GPU memory, " << invalid << " invalid. Memory margin ";
  if (std::isnan(res.memory_margin)) h << "per configuration (run.memory_margin is varied)";
  else h << res.memory_margin * 100 << "%";
  h << ". Ranked by <b>" << html_escape(objective_axis(res.ranked_by.used).label) << "</b> (--objective "
    << sweep_objective_name(res.ranked_by.requested) << ").</p>\n";
  if (!res.ranked_by.note.empty()) h << "<p class=\"note\">" << html_escape(res.ranked_by.note) << "</p>\n";
  h << "<h2>Recommendation</h2>\n<pre>" << html_escape(res.recommendation.text) << "</pre>\n";
  const int xp = choose_x_path(res.axes, paths, res.rows);
  if (xp >= 0) h << "<h2>" << html_escape(objective_axis(res.ranked_by.used).name) << " and overlap</h2>\n" << line_plots(res, paths, xp);
  h << "<h2>Memory against " << (res.ranked_by.used == SweepObjective::Throughput ? "throughput" : "speed") << "</h2>\n"
    << pareto_plot(res, paths);
  // With a variation (points simulated on every rank), what it cost each point: step with it /
  // step without (docs/every-rank.md).
  const bool stragglers = std::any_of(res.rows.begin(), res.rows.end(), [](const SweepRow& r) { return r.straggler_cost.has_value(); });
  h << "<h2>Pareto front</h2>\n<table><tr><th>#</th><th>settings</th><th>tokens/s per GPU</th><th>MFU</th><th>step time</th>"
    << (stragglers ? "<th>straggler cost</th>" : "")
    << "<th>exposed comm</th><th>overlap efficiency</th><th>peak allocated</th><th>peak reserved (estimate)</th><th>reserve needed</th><th>fits</th></tr>\n";
  for (size_t i : res.pareto) {
    const auto& r = res.rows[i];
    char cost[32] = "";
    if (stragglers) std::snprintf(cost, sizeof cost, r.straggler_cost ? "%.3f" : "-", r.straggler_cost.value_or(0));
    h << "<tr><td>" << r.index << "</td><td>" << html_escape(settings(r, paths)) << "</td><td>"
      << format_or_na(r.metrics.throughput.tokens_per_s_per_gpu, format_per_s) << "</td><td>"
      << format_or_na(r.metrics.throughput.mfu, format_utilisation) << "</td><td>" << format_time_us(r.metrics.step_time_us)
      << (stragglers ? "</td><td>" + std::string(cost) : std::string()) << "</td><td>" << format_time_us(r.metrics.exposed_comm_us) << "</td><td>" << efficiency_text(r) << "</td><td>"
      << format_bytes(r.metrics.peak_memory_bytes) << "</td><td>" << format_bytes(r.metrics.peak_reserved_bytes) << "</td><td>" << format_bytes(r.metrics.min_reserved_bytes) << "</td><td>"
      << (r.fits_with_margin ? "yes" : r.fits_memory ? "inside margin" : "no") << "</td></tr>\n";
  }
  h << "</table>\n";
  if (invalid > 0) {
    h << "<h2>Invalid configurations</h2>\n<table><tr><th>rows</th><th>reason</th></tr>\n";
    for (const auto& [reason, n] : reasons) h << "<tr><td>" << n << "</td><td>" << html_escape(reason) << "</td></tr>\n";
    h << "</table>\n";
  }
  h << "<p class=\"note\">Every configuration, with every metric, is in sweep.csv and sweep.json.</p>\n</body></html>\n";
  return h.str();
}

}  // namespace shardline
