// Metrics regression check (see reports/regress.h).
#include "reports/regress.h"

#include "reports/compare.h"
#include "reports/outputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_load.h"
#include "core/units.h"
#include "reports/throughput_text.h"

namespace fs = std::filesystem;

namespace shardline {
namespace {

nlohmann::json read_json_file(const std::string& path) { return load_json_file(path, path, kMaxOutputJsonBytes); }

// name -> metrics file inside a directory. `flag` names the directory in errors.
std::map<std::string, std::string> metrics_files(const fs::path& dir, const char* flag) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw InputError(flag, "cannot list \"" + dir.string() + "\": " + ec.message());
  // Two files of one name (NAME.json and NAME/metrics.json) would be judged by whichever the
  // folder listed last: refused, naming both.
  const auto add = [&](const std::string& name, const std::string& file) {
    const auto [at, fresh] = out.emplace(name, file);
    if (!fresh)
      throw InputError(flag, "\"" + at->second + "\" and \"" + file + "\" are both the metrics of \"" + name +
                                 "\": keep one of them in " + dir.string());
  };
  for (const auto& entry : it) {
    const fs::path p = entry.path();
    if (entry.is_regular_file() && p.extension() == ".json") {
      add(p.stem().string(), p.string());
    } else if (entry.is_directory() && fs::is_regular_file(p / "metrics.json")) {
      add(p.filename().string(), (p / "metrics.json").string());
    }
  }
  return out;
}

std::string pct(double base, double cur) {
  if (base == 0) return cur == 0 ? "+0.00%" : "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", 100.0 * (cur - base) / base);
  return std::string(buf) == "-0.00%" ? "+0.00%" : buf;  // a change that rounds away has no sign
}

// `better` is past `worse` by more than rounding (a time through text and nanoseconds moves by
// about 1e-9 of itself): what "improved" needs, so that an exact round trip reads "ok".
bool beyond_rounding(double better, double worse) { return worse - better > 1e-9 * std::max(std::abs(better), std::abs(worse)); }

// A difference that rounds to zero prints as "+0 ns", not "-0 ns".
std::string signed_us(double d) {
  const std::string magnitude = format_time_us(std::abs(d));
  return (d < 0 && magnitude != format_time_us(0) ? "-" : "+") + magnitude;
}

// Global tokens per step, when the metrics carry throughput.
std::optional<double> tokens_per_step(const Metrics& m) {
  if (!m.throughput.tokens_per_s) return std::nullopt;
  return *m.throughput.tokens_per_s * m.step_time_us / 1e6;
}

// GPUs (ranks): global tokens/s over tokens/s per GPU, when the metrics carry both.
std::optional<double> gpu_count(const Metrics& m) {
  const auto &all = m.throughput.tokens_per_s, &per_gpu = m.throughput.tokens_per_s_per_gpu;
  if (!all || !per_gpu || !(*per_gpu > 0)) return std::nullopt;
  return std::round(*all / *per_gpu);
}

// Both known and apart by more than `relative` of the larger.
bool differ(const std::optional<double>& b, const std::optional<double>& c, double relative) {
  return b && c && std::abs(*c - *b) > relative * std::max(*b, *c);
}

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

// A run's output folder (simulate / exec --out, as `track` takes: a folder holding a metrics.json
// itself) stands for that file, on either side; any other path is itself.
std::string metrics_file_of(const std::string& path) {
  const fs::path file = fs::path(path) / "metrics.json";
  return fs::is_directory(path) && fs::is_regular_file(file) ? file.string() : path;
}

}  // namespace

Metrics read_metrics_file(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  const nlohmann::json& m = j.is_object() && j.contains("metrics") && j["metrics"].is_object() ? j["metrics"] : j;
  Metrics metrics;
  try {
    metrics = metrics_from_json(m);
  } catch (const InputError& e) {
    throw InputError(path, std::string("is not a metrics file: ") + e.what());
  }
  // The work per step is read back as tokens/s x step time, a whole number of tokens in any file
  // shardline wrote (to about 1e-16 of itself). A step time edited apart from its throughput would
  // read as other work, and the step time would go unjudged (a hand-made slower baseline passed
  // that way). The tolerance is absolute: a relative one would pass anything at a million tokens.
  // An edit that happens to give a whole number (a doubled step) is not caught.
  if (const std::optional<double> tokens = tokens_per_step(metrics);
      tokens && *tokens > 0 && std::abs(*tokens - std::round(*tokens)) > std::max(1e-6, 1e-12 * *tokens)) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3f", *tokens);
    throw InputError(path, std::string("throughput.tokens_per_s x step_time_us is ") + text +
                               " tokens per step, not a whole number: the step time and the throughput disagree (edited apart?); "
                               "correct both, or remove \"throughput\"");
  }
  return metrics;
}

bool tokens_per_step_changed(const Metrics& baseline, const Metrics& current) {
  return differ(tokens_per_step(baseline), tokens_per_step(current), 1e-9);
}

bool gpu_count_changed(const Metrics& baseline, const Metrics& current) {
  return differ(gpu_count(baseline), gpu_count(current), 1e-6);
}

std::string work_difference(const Metrics& baseline, const Metrics& current) {
  std::string why;
  if (tokens_per_step_changed(baseline, current))
    why = "the tokens per step differ (" + format_per_s(*tokens_per_step(baseline)) + " -> " + format_per_s(*tokens_per_step(current)) + ")";
  if (gpu_count_changed(baseline, current))
    why += std::string(why.empty() ? "" : " and ") + "the GPUs differ (" + format_per_s(*gpu_count(baseline)) + " -> " +
           format_per_s(*gpu_count(current)) + ")";
  return why;
}

bool throughput_regressed(const Metrics& baseline, const Metrics& current, double tolerance) {
  const auto &b = baseline.throughput.tokens_per_s_per_gpu, &c = current.throughput.tokens_per_s_per_gpu;
  return b && c && *c < *b * (1.0 - tolerance);
}

bool step_time_regressed(const Metrics& baseline, const Metrics& current, double tolerance) {
  return current.step_time_us > baseline.step_time_us * (1.0 + tolerance);
}

bool efficiency_regressed(const Metrics& baseline, const Metrics& current, double tolerance) {
  return current.overlap_efficiency < baseline.overlap_efficiency - tolerance;
}

bool peak_memory_regressed(const Metrics& baseline, const Metrics& current, double tolerance) {
  return baseline.memory_recorded && current.memory_recorded &&
         static_cast<double>(current.peak_memory_bytes) > static_cast<double>(baseline.peak_memory_bytes) * (1.0 + tolerance);
}

bool fit_lost(const Metrics& baseline, const Metrics& current) {
  return baseline.memory_recorded && current.memory_recorded && baseline.fits_memory && !current.fits_memory;
}

std::string RegressEntry::status() const {
  if (!baseline) return "NO BASELINE";
  if (!current) return "MISSING current";
  if (failed()) {
    std::string why;
    auto add = [&why](const char* what) { why += (why.empty() ? "" : ", ") + std::string(what); };
    if (step_time_regressed) add("step time");
    if (throughput_regressed) add("tokens/s per GPU");
    if (efficiency_regressed) add("overlap efficiency");
    if (memory_regressed) add("peak memory");
    if (fit_lost) add("no longer fits");
    return "REGRESSED (" + why + ")";
  }
  const Metrics &b = *baseline, &c = *current;
  const bool faster = judged_on_throughput ? beyond_rounding(-*c.throughput.tokens_per_s_per_gpu, -*b.throughput.tokens_per_s_per_gpu)
                                           : beyond_rounding(c.step_time_us, b.step_time_us);
  // Bytes are whole numbers, exact through JSON: any drop is one.
  const bool less_memory = !judged_on_throughput && b.memory_recorded && c.memory_recorded && c.peak_memory_bytes < b.peak_memory_bytes;
  const bool fits_now = b.memory_recorded && c.memory_recorded && !b.fits_memory && c.fits_memory;
  if (faster || beyond_rounding(-c.overlap_efficiency, -b.overlap_efficiency) || less_memory || fits_now) return "improved";
  return "ok";
}

bool RegressReport::failed() const {
  return std::any_of(entries.begin(), entries.end(), [](const RegressEntry& e) { return e.failed(); });
}

RegressReport regress_compare(const std::string& baseline, const std::string& current, double tolerance) {
  check_tolerance(tolerance);
  if (!fs::exists(baseline)) throw InputError("--baseline", "\"" + baseline + "\" does not exist");
  if (!fs::exists(current)) throw InputError("--current", "\"" + current + "\" does not exist");
  const std::string baseline_file = metrics_file_of(baseline), current_file = metrics_file_of(current);
  const bool base_dir = fs::is_directory(baseline_file), cur_dir = fs::is_directory(current_file);
  if (base_dir != cur_dir)
    throw InputError("--current", "\"" + current + "\" is a " + (cur_dir ? "directory" : "file") + " but the baseline \"" +
                                      baseline + "\" is a " + (base_dir ? "directory" : "file") +
                                      "; give two files, two directories, or a file and a run's output folder (with its metrics.json)");
  RegressReport report;
  report.tolerance = tolerance;
  auto judge = [&](RegressEntry& e) {
    if (e.baseline && e.current) {
      e.work_difference = work_difference(*e.baseline, *e.current);
      e.judged_on_throughput = !e.work_difference.empty();
      if (e.judged_on_throughput) e.throughput_regressed = throughput_regressed(*e.baseline, *e.current, tolerance);
      else e.step_time_regressed = step_time_regressed(*e.baseline, *e.current, tolerance);
      e.efficiency_regressed = efficiency_regressed(*e.baseline, *e.current, tolerance);
      if (!e.judged_on_throughput) e.memory_regressed = peak_memory_regressed(*e.baseline, *e.current, tolerance);
      e.fit_lost = fit_lost(*e.baseline, *e.current);
    }
  };
  if (!base_dir) {
    RegressEntry e;
    e.name = fs::path(current_file).stem().string();
    if (e.name == "metrics") e.name = fs::path(current_file).parent_path().filename().string();
    e.baseline = read_metrics_file(baseline_file);
    e.current = read_metrics_file(current_file);
    judge(e);
    report.entries.push_back(std::move(e));
    return report;
  }
  const auto base_files = metrics_files(baseline, "--baseline");
  const auto cur_files = metrics_files(current, "--current");
  if (base_files.empty() && cur_files.empty())
    throw InputError("--current", "neither \"" + baseline + "\" nor \"" + current +
                                      "\" holds a metrics file (<scenario>.json or <scenario>/metrics.json); nothing was compared");
  std::map<std::string, RegressEntry> by_name;
  for (const auto& [name, path] : base_files) {
    by_name[name].name = name;
    by_name[name].baseline = read_metrics_file(path);
  }
  for (const auto& [name, path] : cur_files) {
    by_name[name].name = name;
    by_name[name].current = read_metrics_file(path);
  }
  for (auto& [name, e] : by_name) {
    judge(e);
    report.entries.push_back(std::move(e));
  }
  return report;
}

std::string regress_table(const RegressReport& report) {
  std::vector<std::vector<std::string>> rows = {
      {"scenario", "step time", "delta", "tokens/s/GPU", "delta", "MFU", "delta", "exposed comm", "delta", "overlap eff", "delta",
       "peak memory", "delta", "fits", "status"}};
  auto tokens = [](const Metrics& m) { return format_or_na(m.throughput.tokens_per_s_per_gpu, format_per_s); };
  auto mfu = [](const Metrics& m) { return format_or_na(m.throughput.mfu, format_utilisation); };
  auto peak = [](const Metrics& m) { return m.memory_recorded ? format_bytes(m.peak_memory_bytes) : std::string("n/a"); };
  auto fits = [](const Metrics& m) { return m.memory_recorded ? std::string(m.fits_memory ? "yes" : "no") : std::string("n/a"); };
  for (const auto& e : report.entries) {
    std::vector<std::string> r = {e.name};
    if (e.baseline && e.current) {
      const auto &b = *e.baseline, &c = *e.current;
      char eff[64], deff[32];
      std::snprintf(eff, sizeof eff, "%.4f -> %.4f", b.overlap_efficiency, c.overlap_efficiency);
      const double efficiency_delta = c.overlap_efficiency - b.overlap_efficiency;
      std::snprintf(deff, sizeof deff, "%+.4f", std::abs(efficiency_delta) < 5e-5 ? 0.0 : efficiency_delta);  // no "-0.0000"
      const auto &bt = b.throughput.tokens_per_s_per_gpu, &ct = c.throughput.tokens_per_s_per_gpu;
      const auto &bm = b.throughput.mfu, &cm = c.throughput.mfu;
      char dmfu[32] = "";
      if (bm && cm) std::snprintf(dmfu, sizeof dmfu, "%+.1f pp", std::abs(*cm - *bm) < 5e-4 ? 0.0 : 100.0 * (*cm - *bm));
      r.insert(r.end(), {format_time_us(b.step_time_us) + " -> " + format_time_us(c.step_time_us), pct(b.step_time_us, c.step_time_us),
                         tokens(b) + " -> " + tokens(c), bt && ct ? pct(*bt, *ct) : std::string(), mfu(b) + " -> " + mfu(c), dmfu,
                         format_time_us(b.exposed_comm_us) + " -> " + format_time_us(c.exposed_comm_us),
                         signed_us(c.exposed_comm_us - b.exposed_comm_us), eff, deff, peak(b) + " -> " + peak(c),
                         b.memory_recorded && c.memory_recorded ? pct(static_cast<double>(b.peak_memory_bytes), static_cast<double>(c.peak_memory_bytes))
                                                                : std::string(),
                         fits(b) == fits(c) ? fits(c) : fits(b) + " -> " + fits(c)});
    } else {
      const Metrics& m = e.baseline ? *e.baseline : *e.current;
      char eff[32];
      std::snprintf(eff, sizeof eff, "%.4f", m.overlap_efficiency);
      r.insert(r.end(), {format_time_us(m.step_time_us), "", tokens(m), "", mfu(m), "", format_time_us(m.exposed_comm_us), "", eff, "",
                         peak(m), "", fits(m)});
    }
    r.push_back(e.status());
    rows.push_back(std::move(r));
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::ostringstream out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += (i ? "  " : "") + pad(r[i], i + 1 == r.size() ? 0 : width[i]);
    out << line << "\n";
  }
  size_t failed = 0;
  for (const auto& e : report.entries) failed += e.failed() ? 1 : 0;
  char tol[64];
  std::snprintf(tol, sizeof tol, "%g", report.tolerance);
  const size_t n = report.entries.size();
  out << (failed ? std::to_string(failed) + " of " + std::to_string(n) + (n == 1 ? " scenario fails" : " scenarios fail")
                 : (n == 1 ? std::string("the scenario passes") : "all " + std::to_string(n) + " scenarios pass"))
      << " (tolerance " << tol << ": relative for step time and peak memory, absolute for overlap efficiency; a scenario "
      << "that fitted its GPU memory and no longer does fails at any tolerance; tokens/s per GPU is shown, not judged, where the "
      << "tokens per step and the GPUs are the same: there it is the step time's inverse; MFU is shown, never judged)\n";
  for (const auto& e : report.entries)
    if (e.judged_on_throughput)
      out << e.name << ": " << e.work_difference << ", so the step time is not the same work per GPU: judged on tokens/s per GPU "
          << "(relative, the same tolerance) instead, and its peak memory is shown, not judged\n";
  return out.str();
}

std::vector<std::string> update_baseline(const std::string& baseline_as_given, const std::string& current_as_given) {
  if (!fs::exists(current_as_given)) throw InputError("--current", "\"" + current_as_given + "\" does not exist");
  // A run's output folder is its metrics.json here too, as when comparing: on the current side
  // it is one file to copy, on the baseline side the file to rewrite.
  const std::string current = metrics_file_of(current_as_given), baseline = metrics_file_of(baseline_as_given);
  std::vector<std::string> written;
  auto copy_metrics = [&](const std::string& from, const fs::path& to) {
    read_metrics_file(from);  // never write a baseline from a file that is not metrics
    const nlohmann::json j = read_json_file(from);
    if (to.has_parent_path()) {
      std::error_code ec;
      fs::create_directories(to.parent_path(), ec);
      if (ec) throw InputError("--baseline", "cannot create the folder \"" + to.parent_path().string() + "\": " + ec.message());
    }
    write_file_atomically(to.string(), j.dump(2) + "\n", "--baseline");
    written.push_back(to.string());
  };
  if (!fs::is_directory(current)) {
    if (fs::is_directory(baseline)) throw InputError("--baseline", "\"" + baseline + "\" is a directory but --current is a file");
    copy_metrics(current, baseline);
    return written;
  }
  if (fs::exists(baseline) && !fs::is_directory(baseline))
    throw InputError("--baseline", "\"" + baseline + "\" is a file but --current is a directory");
  const auto files = metrics_files(current, "--current");
  // Every file checked before any is written: a bad one leaves the baseline as it was.
  for (const auto& entry : files) read_metrics_file(entry.second);
  // A baseline already kept as NAME/metrics.json is updated there: a NAME.json beside it would
  // make the folder one that regress refuses (two metrics of one name).
  const std::map<std::string, std::string> existing =
      fs::is_directory(baseline) ? metrics_files(baseline, "--baseline") : std::map<std::string, std::string>{};
  for (const auto& [name, path] : files) {
    const auto kept = existing.find(name);
    copy_metrics(path, kept != existing.end() ? fs::path(kept->second) : fs::path(baseline) / (name + ".json"));
  }
  return written;
}

}  // namespace shardline
