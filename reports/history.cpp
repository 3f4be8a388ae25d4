// JSON-lines metrics history and its trend page (see reports/history.h).
#include "reports/history.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/json_load.h"
#include "core/timeline.h"
#include "core/units.h"
#include "reports/svg_chart.h"

namespace shardline {

namespace fs = std::filesystem;

std::string history_record_to_line(const HistoryRecord& r) {
  const nlohmann::json j = {{"scenario", r.scenario}, {"commit", r.commit}, {"time", r.time_utc},
                            {"backend", r.backend}, {"metrics", metrics_to_json(r.metrics)}};
  return j.dump();
}

namespace {

// A history is a regular file (or not there yet): a directory, a FIFO or a device is refused.
void check_history_path(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) throw InputError("--history", "\"" + path + "\" is a directory; expected a JSON-lines history file");
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError("--history", "\"" + path + "\" is not a regular file; expected a JSON-lines history file");
}

// Whether a non-empty file lacks its final newline (a line cut short, or written by hand).
bool lacks_final_newline(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() <= 0) return false;
  in.seekg(-1, std::ios::end);
  return in.get() != '\n';
}

}  // namespace

void append_history(const std::string& path, const HistoryRecord& record) {
  check_history_path(path);
  // Every existing line must read back: appending to a damaged history would bury the damage
  // (read_history names the file and the line, and nothing is written).
  if (fs::exists(path)) read_history(path);
  const bool newline_first = lacks_final_newline(path);
  std::ofstream out(path, std::ios::app);
  if (!out) throw InputError("--history", "cannot open \"" + path + "\" for appending");
  if (newline_first) out << "\n";
  out << history_record_to_line(record) << "\n";
  out.flush();
  if (!out) throw InputError("--history", "writing \"" + path + "\" failed");
}

std::vector<HistoryRecord> read_history(const std::string& path) {
  check_history_path(path);
  std::ifstream in(path);
  if (!in) throw InputError("--history", "cannot open \"" + path + "\"");
  std::vector<HistoryRecord> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    try {
      const nlohmann::json j = parse_json_text(line, "");
      json_fields::require_object(j, "");
      HistoryRecord r;
      r.scenario = json_fields::get_string(j, "scenario", "");
      r.commit = json_fields::get_string(j, "commit", "");
      r.time_utc = json_fields::get_string(j, "time", "");
      r.backend = json_fields::get_string(j, "backend", "");
      if (!is_backend_name(r.backend))  // track --backend refuses the same value
        throw InputError("backend", nlohmann::json(r.backend).dump() + " is not a backend; expected sim, mpi or nccl");
      r.metrics = metrics_from_json(json_fields::member(j, "metrics", ""));
      out.push_back(std::move(r));
    } catch (const InputError& e) {
      throw InputError(where, std::string("is not a history record: ") + e.what());
    }
  }
  return out;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string history_html(const std::vector<HistoryRecord>& records) {
  std::map<std::string, std::vector<const HistoryRecord*>> by_scenario;
  for (const auto& r : records) by_scenario[r.scenario].push_back(&r);
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>shardline history</title>\n"
       "<style>body{font-family:sans-serif;margin:24px}.pair{display:flex;flex-wrap:wrap;gap:12px}"
       ".note{color:#666;font-size:12px}</style></head><body>\n<h1>Overlap efficiency, step time and peak memory over time</h1>\n<p>"
    << records.size() << " records, " << by_scenario.size()
    << " scenarios. x axis: record number per scenario (hover a point for its commit, time and backend).</p>\n";
  for (const auto& [name, recs] : by_scenario) {
    // One series per backend: predicted and measured trends are not mixed on one line.
    struct BackendSeries {
      ChartSeries eff, step, peak;
    };
    std::map<std::string, BackendSeries> series;
    for (size_t i = 0; i < recs.size(); ++i) {
      const auto& r = *recs[i];
      auto& [eff, step, peak] = series[r.backend];
      eff.name = step.name = peak.name = r.backend;
      const std::string title = r.commit.substr(0, 12) + " " + r.time_utc + " (" + r.backend + ")";
      char e[32];
      std::snprintf(e, sizeof e, "%.4f", r.metrics.overlap_efficiency);
      eff.x.push_back(static_cast<double>(i + 1));
      eff.y.push_back(r.metrics.overlap_efficiency);
      eff.titles.push_back(title + ": overlap efficiency " + e);
      step.x.push_back(static_cast<double>(i + 1));
      step.y.push_back(r.metrics.step_time_us);
      step.titles.push_back(title + ": step time " + format_time_us(r.metrics.step_time_us));
      if (r.metrics.memory_recorded) {  // a record without memory (peak 0: unknown) leaves a gap in x, not a 0
        peak.x.push_back(static_cast<double>(i + 1));
        peak.y.push_back(static_cast<double>(r.metrics.peak_memory_bytes));
        peak.titles.push_back(title + ": peak allocated " + format_bytes(r.metrics.peak_memory_bytes) +
                              (r.metrics.fits_memory ? ", fits" : ", does NOT fit"));
      }
    }
    Chart eff_chart, step_chart, peak_chart;
    eff_chart.title = name + ": overlap efficiency";
    step_chart.title = name + ": step time";
    eff_chart.x_label = step_chart.x_label = "record";
    eff_chart.y_label = "overlap efficiency";
    step_chart.y_label = "step time (ms)";
    step_chart.y_format = [](double us) {
      char b[32];
      std::snprintf(b, sizeof b, "%.4g", us / 1000);
      return std::string(b);
    };
    eff_chart.width = step_chart.width = 560;
    eff_chart.height = step_chart.height = 320;
    const auto& last = *recs.back();
    peak_chart.title = name + ": peak memory (allocated)";
    peak_chart.x_label = "record";
    peak_chart.y_label = "peak allocated (GiB)";
    peak_chart.y_format = [](double bytes) {
      char b[32];
      std::snprintf(b, sizeof b, "%.4g", bytes / static_cast<double>(1LL << 30));
      return std::string(b);
    };
    peak_chart.width = 560;
    peak_chart.height = 320;
    if (last.metrics.memory_recorded && last.metrics.memory_capacity_bytes > 0) {
      peak_chart.y_reference = static_cast<double>(last.metrics.memory_capacity_bytes);
      peak_chart.y_reference_label = "GPU memory (latest record)";
    }
    bool any_peak = false;
    for (auto& [backend, s] : series) {
      eff_chart.series.push_back(s.eff);
      step_chart.series.push_back(s.step);
      if (!s.peak.x.empty()) peak_chart.series.push_back(s.peak);
      any_peak = any_peak || !s.peak.x.empty();
    }
    h << "<h2>" << html_escape(name) << "</h2>\n<div class=\"pair\">" << render_svg_chart(eff_chart)
      << render_svg_chart(step_chart) << (any_peak ? render_svg_chart(peak_chart) : std::string()) << "</div>\n";
    h << "<p class=\"note\">latest: commit " << html_escape(last.commit) << " at " << html_escape(last.time_utc) << "</p>\n";
  }
  h << "</body></html>\n";
  return h.str();
}

}  // namespace shardline
