// Sweep results: ranking, Pareto front, recommendation, JSON and CSV (see reports/sweep.h).
#include "reports/sweep.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/scenario.h"
#include "core/units.h"
#include "reports/memory_text.h"
#include "reports/throughput_text.h"
#include "core/invariant.h"
#include "core/suggest.h"

namespace shardline {

void mark_memory_fit(SweepRow& row, double memory_margin) {
  if (!row.valid) {
    row.fits_memory = row.fits_with_margin = false;
    return;
  }
  const double reserved = static_cast<double>(row.metrics.min_reserved_bytes);  // what must fit
  const double cap = static_cast<double>(row.metrics.memory_capacity_bytes);
  row.fits_memory = reserved <= cap;
  row.fits_with_margin = reserved <= cap * (1.0 - memory_margin);
}

SweepObjective parse_sweep_objective(const std::string& text) {
  if (text == "throughput") return SweepObjective::Throughput;
  if (text == "step_time") return SweepObjective::StepTime;
  if (text == "memory") return SweepObjective::Memory;
  throw InputError("--objective", "unknown objective \"" + text + "\";" + choice_tail(text, {"throughput", "step_time", "memory"}));
}

std::string_view sweep_objective_name(SweepObjective objective) {
  switch (objective) {
    case SweepObjective::Throughput: return "throughput";
    case SweepObjective::StepTime: return "step_time";
    case SweepObjective::Memory: return "memory";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

RankedBy resolve_objective(const std::vector<SweepRow>& rows, SweepObjective requested) {
  RankedBy by{requested, requested, ""};
  if (requested != SweepObjective::Throughput) return by;
  size_t unknown = 0, valid = 0;
  for (const auto& r : rows) {
    if (!r.valid) continue;
    ++valid;
    if (!r.metrics.throughput.tokens_per_s_per_gpu) ++unknown;
  }
  if (unknown == 0) return by;
  by.used = SweepObjective::StepTime;
  by.note = "tokens/s is unknown for " + std::string(unknown == valid ? "every" : std::to_string(unknown) + " of " + std::to_string(valid)) +
            " valid configuration" + (unknown == valid ? "" : "s") +
            " (the scenario gives no model.seq_len / model.micro_batch_size), so they are ranked by step time instead; "
            "give both to rank by throughput.";
  return by;
}

double objective_value(const SweepRow& row, SweepObjective objective) {
  switch (objective) {
    case SweepObjective::Throughput: return row.metrics.throughput.tokens_per_s_per_gpu.value_or(0.0);
    case SweepObjective::StepTime: return row.metrics.step_time_us;
    case SweepObjective::Memory: return static_cast<double>(row.metrics.min_reserved_bytes);
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

namespace {

// The two ranking keys of a row under an objective, both lower-is-better: the objective itself,
// then peak reserved memory (step time for the memory objective).
double primary_key(const SweepRow& r, SweepObjective o) {
  return o == SweepObjective::Throughput ? -objective_value(r, o) : objective_value(r, o);
}
double secondary_key(const SweepRow& r, SweepObjective o) {
  return o == SweepObjective::Memory ? r.metrics.step_time_us : static_cast<double>(r.metrics.min_reserved_bytes);
}

}  // namespace

std::vector<size_t> pareto_front(const std::vector<SweepRow>& rows, SweepObjective objective) {
  std::vector<size_t> order;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].valid) order.push_back(i);
  auto first = [&](size_t i) { return primary_key(rows[i], objective); };
  auto second = [&](size_t i) { return secondary_key(rows[i], objective); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (first(a) != first(b)) return first(a) < first(b);
    if (second(a) != second(b)) return second(a) < second(b);
    return a < b;
  });
  std::vector<size_t> front;
  bool have_best = false;
  double best_second = 0;  // lowest second key among rows with a strictly better first key
  for (size_t g = 0; g < order.size();) {
    size_t end = g;
    while (end < order.size() && first(order[end]) == first(order[g])) ++end;
    const double group_min = second(order[g]);  // sorted by the second key within an equal first
    if (!have_best || group_min < best_second)
      for (size_t k = g; k < end && second(order[k]) == group_min; ++k) front.push_back(order[k]);
    if (!have_best || group_min < best_second) best_second = group_min;
    have_best = true;
    g = end;
  }
  return front;
}

namespace {

std::string settings_text(const std::vector<std::string>& values, const std::vector<std::string>& paths) {
  std::string out;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string value = values[i];
    if (path_takes_bytes(paths[i])) {
      // A size's value is a plain byte count (the grammar converted it), or a word ("unit").
      int64_t bytes = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bytes);
      if (ec == std::errc() && end == value.data() + value.size()) value = format_bytes(bytes);
    }
    out += (out.empty() ? "" : ", ") + paths[i] + "=" + value;
  }
  return out.empty() ? "(base scenario)" : out;
}
std::string settings_text(const SweepRow& row, const std::vector<std::string>& paths) { return settings_text(row.values, paths); }

std::string signed_time(double us) {
  std::string out = us < 0 ? "-" : "+";  // appended, not const char* + string: GCC 12 warns falsely (-Wrestrict) on that
  return out += format_time_us(std::abs(us));
}

// "12.3%"; below 1%, two significant digits ("0.058%"), so a small gain never reads "0.0%".
std::string percent_text(double fraction) {
  char buf[32];
  const double pct = 100.0 * fraction;
  std::snprintf(buf, sizeof buf, std::fabs(pct) >= 1 || pct == 0 ? "%.1f%%" : "%.2g%%", pct);
  return buf;
}

std::string ratio_text(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", ratio);
  return buf;
}

// The objective's value of a row as the recommendation prints it.
std::string objective_text(const SweepRow& r, SweepObjective o) {
  switch (o) {
    case SweepObjective::Throughput: return format_or_na(r.metrics.throughput.tokens_per_s_per_gpu, format_per_s) + " tokens/s per GPU";
    case SweepObjective::StepTime: return format_time_us(r.metrics.step_time_us);
    case SweepObjective::Memory: return format_bytes(r.metrics.min_reserved_bytes) + " reserve needed";
  }
  return "";
}

// Step time = compute busy + exposed comm: which term makes the winner's step shorter.
std::string step_gain_text(const Metrics& mb, const Metrics& ms) {
  const double d_exposed = ms.exposed_comm_us - mb.exposed_comm_us;
  const double d_compute = ms.compute_busy_us - mb.compute_busy_us;
  std::ostringstream out;
  out << "Step time = compute busy + exposed comm;";
  if (d_exposed >= d_compute) {
    out << " the gain is mostly exposed communication: " << format_time_us(ms.exposed_comm_us) << " -> "
        << format_time_us(mb.exposed_comm_us) << " (" << signed_time(-d_exposed) << "), while compute busy changes by "
        << signed_time(-d_compute) << ".";
  } else {
    out << " the gain is mostly compute busy time: " << format_time_us(ms.compute_busy_us) << " -> "
        << format_time_us(mb.compute_busy_us) << " (" << signed_time(-d_compute) << "), while exposed comm changes by "
        << signed_time(-d_exposed) << ".";
  }
  char effs[128];
  std::snprintf(effs, sizeof effs, " Overlap efficiency %.3f vs %.3f; comm busy %s vs %s.", mb.overlap_efficiency,
                ms.overlap_efficiency, format_time_us(mb.comm_busy_us).c_str(), format_time_us(ms.comm_busy_us).c_str());
  return out.str() + effs;
}

// Rows closer than this (relative) on the objective are reported as a tie in effect: their
// printed figures would read the same ("788 vs 788").
constexpr double kNearTie = 5e-4;

// Why the best row beats the runner-up, in the objective's terms (one "why: ..." line).
std::string why_text(const Metrics& mb, const Metrics& ms, SweepObjective o) {
  std::ostringstream out;
  out << "  why: ";
  // Memory is the reserve each needs (the allocator at capacity): the typical reserve is capped at
  // the GPU, where rows that need different amounts would tie.
  const std::string peak_b = format_bytes(mb.min_reserved_bytes), peak_s = format_bytes(ms.min_reserved_bytes);
  const bool same_peak = mb.min_reserved_bytes == ms.min_reserved_bytes;
  switch (o) {
    case SweepObjective::StepTime: {
      const double d_step = ms.step_time_us - mb.step_time_us;
      if (d_step == 0 && same_peak) {
        out << "it ties with the runner-up on step time and on peak memory (" << peak_b
            << " reserve needed); it comes first in grid order, and either serves.";
      } else if (d_step == 0) {
        out << "it ties with the runner-up on step time and is chosen for its lower peak memory (" << peak_b << " vs " << peak_s
            << " reserve needed).";
      } else if (d_step < 0) {
        out << "it is within " << percent_text(kNearTie) << " of the runner-up's step time (" << format_time_us(mb.step_time_us)
            << " vs " << format_time_us(ms.step_time_us) << "), in effect a tie, and is chosen for its lower peak memory ("
            << peak_b << " vs " << peak_s << " reserve needed).";
      } else if (d_step < kNearTie * ms.step_time_us) {
        out << "it is within " << percent_text(kNearTie) << " of the runner-up's step time (" << format_time_us(mb.step_time_us)
            << " vs " << format_time_us(ms.step_time_us) << "): in effect a tie, and either serves.";
      } else {
        out << "it is " << format_time_us(d_step) << " (" << percent_text(d_step / ms.step_time_us) << ") faster. "
            << step_gain_text(mb, ms);
      }
      break;
    }
    case SweepObjective::Throughput: {
      const double tb = mb.throughput.tokens_per_s_per_gpu.value_or(0), ts = ms.throughput.tokens_per_s_per_gpu.value_or(0);
      if (tb == ts && same_peak) {
        out << "it ties with the runner-up on tokens/s per GPU and on peak memory (" << peak_b
            << " reserve needed); it comes first in grid order, and either serves.";
      } else if (tb == ts) {
        out << "it ties with the runner-up on tokens/s per GPU and is chosen for its lower peak memory (" << peak_b << " vs "
            << peak_s << " reserve needed).";
      } else if (tb < ts) {
        out << "it is within " << percent_text(kNearTie) << " of the runner-up's tokens/s per GPU (" << format_per_s(tb) << " vs "
            << format_per_s(ts) << "), in effect a tie, and is chosen for its lower peak memory (" << peak_b << " vs " << peak_s
            << " reserve needed).";
      } else if (tb < ts * (1 + kNearTie)) {
        out << "it is within " << percent_text(kNearTie) << " of the runner-up's tokens/s per GPU (" << format_per_s(tb) << " vs "
            << format_per_s(ts) << "): in effect a tie, and either serves.";
      } else {
        // Tokens/s per GPU = tokens per GPU per step / step time.
        const double step_b = mb.step_time_us / 1e6, step_s = ms.step_time_us / 1e6;
        const double tokens_b = tb * step_b, tokens_s = ts * step_s;
        out << "it moves " << percent_text(tb / ts - 1) << " more tokens/s per GPU (" << format_per_s(tb) << " vs "
            << format_per_s(ts) << "). Tokens/s per GPU = tokens per GPU per step / step time;";
        if (std::abs(tokens_b - tokens_s) <= 1e-9 * std::max(tokens_b, tokens_s)) {
          out << " both carry " << format_per_s(tokens_b) << " tokens per GPU per step, so the gain is the shorter step ("
              << format_time_us(mb.step_time_us) << " vs " << format_time_us(ms.step_time_us) << "). " << step_gain_text(mb, ms);
        } else {
          out << " it carries " << ratio_text(tokens_b / tokens_s) << " the tokens per GPU per step (" << format_per_s(tokens_b)
              << " vs " << format_per_s(tokens_s) << ") in " << ratio_text(step_b / step_s) << " the step time ("
              << format_time_us(mb.step_time_us) << " vs " << format_time_us(ms.step_time_us) << ").";
          if (mb.step_time_us > ms.step_time_us)
            out << " Its step is longer, but each token costs less: a shorter step is not a higher throughput.";
        }
      }
      break;
    }
    case SweepObjective::Memory: {
      if (same_peak && mb.step_time_us == ms.step_time_us) {
        out << "it ties with the runner-up on peak memory (" << peak_b
            << " reserve needed) and on step time; it comes first in grid order, and either serves.";
      } else if (same_peak) {
        out << "it ties with the runner-up on peak memory (" << peak_b << " reserve needed) and is chosen for its shorter step ("
            << format_time_us(mb.step_time_us) << " vs " << format_time_us(ms.step_time_us) << ").";
      } else if (mb.min_reserved_bytes > ms.min_reserved_bytes) {
        out << "it is within " << percent_text(kNearTie) << " of the runner-up's reserve needed (" << peak_b << " vs " << peak_s
            << "), in effect a tie, and is chosen for its shorter step (" << format_time_us(mb.step_time_us) << " vs "
            << format_time_us(ms.step_time_us) << ").";
      } else {
        out << "it needs " << format_bytes(ms.min_reserved_bytes - mb.min_reserved_bytes) << " less peak memory (reserve needed "
            << peak_b << " vs " << peak_s << "; allocated " << format_bytes(mb.peak_memory_bytes) << " vs "
            << format_bytes(ms.peak_memory_bytes) << "), at a step time of " << format_time_us(mb.step_time_us) << " vs "
            << format_time_us(ms.step_time_us) << ".";
      }
      break;
    }
  }
  return out.str() + "\n";
}

// When the best and the runner-up do different work, the objective compares unlike things: say
// so (one "note: ..." line, or nothing). Throughput: different model FLOPs per token (the varied
// axis changed the model); step time: different tokens per step, or, where tokens are unknown
// (explicit units), a different number of compute ops per step.
std::string work_note(const Metrics& mb, const Metrics& ms, SweepObjective o) {
  const Throughput &tb = mb.throughput, &ts = ms.throughput;
  const auto differ = [](double a, double b) { return std::abs(a - b) > 1e-6 * std::max(std::abs(a), std::abs(b)); };
  std::ostringstream out;
  if (o == SweepObjective::Throughput) {
    if (!tb.model_tflops_per_gpu || !ts.model_tflops_per_gpu || !tb.tokens_per_s_per_gpu || !ts.tokens_per_s_per_gpu ||
        !(*tb.tokens_per_s_per_gpu > 0) || !(*ts.tokens_per_s_per_gpu > 0))
      return "";
    const double flops_b = *tb.model_tflops_per_gpu * 1e12 / *tb.tokens_per_s_per_gpu;
    const double flops_s = *ts.model_tflops_per_gpu * 1e12 / *ts.tokens_per_s_per_gpu;
    if (!differ(flops_b, flops_s)) return "";
    char gflops[96];
    std::snprintf(gflops, sizeof gflops, "%.3g vs %.3g GFLOP", flops_b / 1e9, flops_s / 1e9);
    out << "  note: the two differ in model FLOPs per token (" << gflops
        << "): they are different models, so tokens/s compares different work; MFU (" << format_or_na(tb.mfu, format_utilisation)
        << " vs " << format_or_na(ts.mfu, format_utilisation) << ") says which uses the GPU better.\n";
    return out.str();
  }
  if (o != SweepObjective::StepTime) return "";
  if (tb.tokens_per_s && ts.tokens_per_s) {
    const double tokens_b = *tb.tokens_per_s * mb.step_time_us / 1e6, tokens_s = *ts.tokens_per_s * ms.step_time_us / 1e6;
    if (!differ(tokens_b, tokens_s)) return "";
    out << "  note: the runner-up carries " << ratio_text(tokens_s / tokens_b) << " the tokens per step ("
        << format_per_s(tokens_s) << " vs " << format_per_s(tokens_b)
        << "): a shorter step is not a higher throughput (--objective throughput ranks by tokens/s per GPU).\n";
    return out.str();
  }
  const auto compute_ops = [](const Metrics& m) {
    const auto it = m.by_kind.find("compute");
    return it == m.by_kind.end() ? 0 : it->second.count;
  };
  const int ops_b = compute_ops(mb), ops_s = compute_ops(ms);
  if (ops_b == ops_s || ops_b == 0) return "";
  out << "  note: the runner-up runs " << ratio_text(static_cast<double>(ops_s) / ops_b) << " the compute ops per step (" << ops_s
      << " vs " << ops_b << "): the two do different work per step, so a shorter step is not more work done per second.\n";
  return out.str();
}

// Where nothing fits: the valid configuration that needs the least reserve, and what its peak holds.
std::string closest_text(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths) {
  const SweepRow* closest = nullptr;
  for (const SweepRow& r : rows)
    if (r.valid && (closest == nullptr || r.metrics.min_reserved_bytes < closest->metrics.min_reserved_bytes)) closest = &r;
  if (closest == nullptr) return "";
  const Metrics& m = closest->metrics;
  std::ostringstream out;
  out << "  closest: " << settings_text(*closest, paths) << " needs " << format_bytes(m.min_reserved_bytes)
      << " reserved (the allocator at capacity) of " << format_bytes(m.memory_capacity_bytes);
  if (m.min_reserved_bytes > m.memory_capacity_bytes)
    out << ", " << format_bytes(m.min_reserved_bytes - m.memory_capacity_bytes) << " over the GPU";
  else
    out << ": it fits the GPU, not the margin";
  out << "\n";
  if (m.memory_at_peak) out << "  its allocated peak (" << format_bytes(m.peak_memory_bytes) << "): " << memory_parts_text(*m.memory_at_peak) << "\n";
  return out.str();
}

Recommendation recommend_settings(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths, double memory_margin,
                                  const RankedBy& ranked_by);

// A varied path that describes the run's environment (what differs between ranks: a seed, a
// jitter, a straggler), not a setting a planner chooses.
bool environment_path(const std::string& path) { return path.rfind("variation.", 0) == 0; }

// The varied paths split into settings and environment, and each setting's rows (the values of its
// setting paths; grid order of first appearance) with the row that decides it: an invalid one,
// else the one that fits worst if any does not fit with the margin, else the worst by the
// objective. Without environment paths every row is its own setting, and nothing is grouped.
struct SettingCases {
  std::vector<size_t> setting_at, environment_at;  // indices into the paths
  std::vector<size_t> deciding;                     // per setting, an index into the rows (environment paths only)
  size_t fewest_points = 1, most_points = 1;        // rows per setting
};
std::vector<std::string> values_at(const SweepRow& r, const std::vector<size_t>& at) {
  std::vector<std::string> v;
  for (size_t i : at) v.push_back(r.values[i]);
  return v;
}
SettingCases setting_cases(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths, SweepObjective o) {
  SettingCases cases;
  for (size_t i = 0; i < paths.size(); ++i) (environment_path(paths[i]) ? cases.environment_at : cases.setting_at).push_back(i);
  if (cases.environment_at.empty()) return cases;
  std::map<std::vector<std::string>, std::vector<size_t>> by_setting;
  std::vector<std::vector<std::string>> order;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [it, added] = by_setting.try_emplace(values_at(rows[i], cases.setting_at));
    if (added) order.push_back(it->first);
    it->second.push_back(i);
  }
  const auto rank = [&](size_t i) {
    const SweepRow& r = rows[i];
    if (!r.valid) return std::pair<int, double>{3, 0};
    if (!r.fits_memory) return std::pair<int, double>{2, static_cast<double>(r.metrics.min_reserved_bytes)};
    if (!r.fits_with_margin) return std::pair<int, double>{1, static_cast<double>(r.metrics.min_reserved_bytes)};
    return std::pair<int, double>{0, primary_key(r, o)};
  };
  cases.fewest_points = rows.size();
  cases.most_points = 0;
  for (const auto& key : order) {
    const std::vector<size_t>& members = by_setting.at(key);
    cases.fewest_points = std::min(cases.fewest_points, members.size());
    cases.most_points = std::max(cases.most_points, members.size());
    size_t pick = members.front();
    for (size_t i : members)
      if (rank(i) > rank(pick)) pick = i;
    cases.deciding.push_back(pick);
  }
  return cases;
}

// The recommendation of a sweep that varies environment paths: no choice among them. With setting
// paths besides, each setting is judged by its worst case over the environment's points (a
// setting that fails or does not fit in one of them does not fit), and the best of those worst
// cases is recommended; with none, nothing is recommended and the objective's range is stated.
Recommendation recommend_over_environment(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths,
                                          const SettingCases& cases, double memory_margin, const RankedBy& ranked_by) {
  const SweepObjective o = ranked_by.used;
  std::vector<std::string> env_paths, setting_paths;
  for (size_t i : cases.environment_at) env_paths.push_back(paths[i]);
  for (size_t i : cases.setting_at) setting_paths.push_back(paths[i]);
  std::string env_list;
  for (const std::string& p : env_paths) env_list += (env_list.empty() ? "" : ", ") + p;
  const auto env_text = [&](const SweepRow& r) { return settings_text(values_at(r, cases.environment_at), env_paths); };
  if (cases.setting_at.empty()) {
    Recommendation rec;
    std::ostringstream out;
    out << "Recommendation: none. Every varied path describes the run's environment (" << env_list
        << "), not a setting to choose: the table compares them.\n";
    if (!ranked_by.note.empty()) out << "  note: " << ranked_by.note << "\n";
    const SweepRow *lo = nullptr, *hi = nullptr;
    size_t fit = 0;
    for (const SweepRow& r : rows) {
      if (!r.valid) continue;
      fit += r.fits_with_margin ? 1 : 0;
      if (lo == nullptr || primary_key(r, o) < primary_key(*lo, o)) lo = &r;
      if (hi == nullptr || primary_key(r, o) > primary_key(*hi, o)) hi = &r;
    }
    if (lo != nullptr)
      out << "  over the " << rows.size() << " points: best " << objective_text(*lo, o) << " (" << env_text(*lo) << "), worst "
          << objective_text(*hi, o) << " (" << env_text(*hi) << "); " << fit << " of them fit memory with the margin\n";
    rec.text = out.str();
    return rec;
  }
  std::vector<SweepRow> worst;
  for (size_t i : cases.deciding) {
    worst.push_back(rows[i]);
    worst.back().values = values_at(rows[i], cases.setting_at);  // shown with the setting paths only
  }
  Recommendation rec = recommend_settings(worst, setting_paths, memory_margin, ranked_by);
  const size_t fewest = cases.fewest_points, most = cases.most_points;
  std::string note = "  note: " + env_list + " describe" + (env_paths.size() == 1 ? "s" : "") +
                     " the run's environment, not a setting: each setting is judged by its worst case over the " +
                     (fewest == most ? std::to_string(most) : std::to_string(fewest) + " to " + std::to_string(most)) +
                     " environment points it ran in (one that does not fit in one of them does not fit), and the figures below "
                     "are those worst cases";
  if (rec.best) note += "; the recommended setting's is at " + env_text(rows[cases.deciding[*rec.best]]);
  note += ".\n";
  if (rec.best) rec.best = cases.deciding[*rec.best];
  if (rec.runner_up) rec.runner_up = cases.deciding[*rec.runner_up];
  const size_t first_line = rec.text.find('\n');
  rec.text.insert(first_line == std::string::npos ? rec.text.size() : first_line + 1, note);
  return rec;
}

}  // namespace

Recommendation recommend(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths, double memory_margin,
                         const RankedBy& ranked_by) {
  const SettingCases cases = setting_cases(rows, paths, ranked_by.used);
  if (cases.environment_at.empty()) return recommend_settings(rows, paths, memory_margin, ranked_by);
  return recommend_over_environment(rows, paths, cases, memory_margin, ranked_by);
}

std::vector<size_t> pareto_front(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths, SweepObjective objective) {
  const SettingCases cases = setting_cases(rows, paths, objective);
  if (cases.environment_at.empty()) return pareto_front(rows, objective);
  std::vector<SweepRow> deciding;
  for (size_t i : cases.deciding) deciding.push_back(rows[i]);
  std::vector<size_t> front = pareto_front(deciding, objective);
  for (size_t& i : front) i = cases.deciding[i];
  return front;
}

namespace {

Recommendation recommend_settings(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths,
                                  double memory_margin, const RankedBy& ranked_by) {
  const SweepObjective o = ranked_by.used;
  Recommendation rec;
  std::vector<size_t> fitting;
  size_t invalid = 0, over_capacity = 0, over_margin = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (!r.valid) ++invalid;
    else if (!r.fits_memory) ++over_capacity;
    else if (!r.fits_with_margin) ++over_margin;
    else fitting.push_back(i);
  }
  // A configuration whose typical reserve exceeds the GPU fits only by the caching allocator
  // flushing its cache, a cost the model does not charge (a flushing run's step was predicted
  // 12.9% short of the measured one, docs/benchmarks.md): those rank after every configuration
  // that fits without.
  const auto flushes = [&](size_t i) { return rows[i].metrics.allocator_cache_flushes; };
  std::sort(fitting.begin(), fitting.end(), [&](size_t a, size_t b) {
    if (flushes(a) != flushes(b)) return flushes(b);
    const double pa = primary_key(rows[a], o), pb = primary_key(rows[b], o);
    if (pa != pb) return pa < pb;
    const double sa = secondary_key(rows[a], o), sb = secondary_key(rows[b], o);
    if (sa != sb) return sa < sb;
    return a < b;
  });
  // The configurations the recommendation chooses among: those that fit without flushing when
  // there are any (the flushing ones after them, `flushing`), else the flushing ones.
  const auto flushing_begin = std::find_if(fitting.begin(), fitting.end(), flushes);
  const std::vector<size_t> flushing(flushing_begin == fitting.begin() ? fitting.end() : flushing_begin, fitting.end());
  fitting.resize(fitting.size() - flushing.size());
  // Rows within kNearTie of the best on the objective are a tie in effect (the model cannot tell
  // them apart): of those, the one with the better second key (the lower reserve; for the memory
  // objective the shorter step) is recommended, and the best by the objective is its runner-up.
  if (fitting.size() >= 2) {
    const double best_value = objective_value(rows[fitting[0]], o);
    const auto near_best = [&](size_t i) {
      const double v = objective_value(rows[i], o);
      return o == SweepObjective::Throughput ? v >= best_value * (1 - kNearTie) : v <= best_value * (1 + kNearTie);
    };
    size_t pick = 0;
    for (size_t k = 1; k < fitting.size() && near_best(fitting[k]); ++k)
      if (secondary_key(rows[fitting[k]], o) < secondary_key(rows[fitting[pick]], o)) pick = k;
    std::rotate(fitting.begin(), fitting.begin() + static_cast<std::ptrdiff_t>(pick), fitting.begin() + static_cast<std::ptrdiff_t>(pick) + 1);
  }
  std::ostringstream out;
  char margin[32];
  std::snprintf(margin, sizeof margin, "a %g%%", memory_margin * 100);
  const char* goal = o == SweepObjective::Throughput ? "highest tokens/s per GPU"
                     : o == SweepObjective::StepTime ? "fastest configuration"
                                                     : "lowest reserve needed";
  out << "Recommendation (" << goal << " that fits memory with "
      << (std::isnan(memory_margin) ? std::string("its own run.memory_margin") : std::string(margin) + " margin") << "):\n";
  if (!ranked_by.note.empty()) out << "  note: " << ranked_by.note << "\n";
  if (fitting.empty()) {
    out << "  none: no valid configuration fits memory with the margin (" << invalid << " invalid, " << over_capacity
        << " over capacity, " << over_margin << " within capacity but inside the margin).\n";
    out << closest_text(rows, paths);
    rec.text = out.str();
    return rec;
  }
  rec.best = fitting[0];
  const auto& best = rows[fitting[0]];
  const auto& mb = best.metrics;
  const Throughput& tp = mb.throughput;
  out << "  " << settings_text(best, paths) << "\n";
  if (tp.tokens_per_s_per_gpu)
    out << "  " << format_per_s(*tp.tokens_per_s_per_gpu) << " tokens/s per GPU (" << format_or_na(tp.tokens_per_s, format_per_s)
        << " tokens/s, " << format_or_na(tp.samples_per_s, format_per_s) << " samples/s), MFU "
        << format_or_na(tp.mfu, format_utilisation) << ", HFU " << format_or_na(tp.hfu, format_utilisation) << "\n";
  else if (tp.mfu)  // FLOPs known without tokens (explicit units): ranked by step time, the GPU's use still shown
    out << "  MFU " << format_utilisation(*tp.mfu) << ", HFU " << format_or_na(tp.hfu, format_utilisation) << "\n";
  char eff[64];
  std::snprintf(eff, sizeof eff, "%.3f", mb.overlap_efficiency);
  out << "  step time " << format_time_us(mb.step_time_us) << " (compute busy " << format_time_us(mb.compute_busy_us)
      << " + exposed comm " << format_time_us(mb.exposed_comm_us) << "), overlap efficiency " << eff << ", peak memory "
      << format_bytes(mb.peak_memory_bytes) << " allocated, " << format_bytes(mb.peak_reserved_bytes) << " reserved (estimate) of "
      << format_bytes(mb.memory_capacity_bytes) << ", " << format_bytes(mb.min_reserved_bytes) << " needed"
      << (mb.allocator_cache_flushes ? " (fits by the allocator flushing its cache: slower steps)" : "") << "\n";
  if (fitting.size() < 2) {
    out << "  it is the only configuration that fits" << (flushing.empty() ? "" : " without the allocator flushing its cache")
        << "; no runner-up to compare with.\n";
  } else {
    rec.runner_up = fitting[1];
    const auto& second = rows[fitting[1]];
    out << "  runner-up: " << settings_text(second, paths) << " at " << objective_text(second, o) << "\n";
    out << why_text(mb, second.metrics, o) << work_note(mb, second.metrics, o);
  }
  // Rows that group their collectives otherwise than the recommendation (byte buckets, one per
  // parameter) model another framework: the best of each such grouping (of those that fit without
  // flushing) is named. Rows of an unknown grouping (none recorded) are not compared.
  if (!best.collective_grouping.empty()) {
    std::vector<std::string> groupings_named = {best.collective_grouping};
    for (size_t i : fitting) {
      const SweepRow& r = rows[i];
      if (r.collective_grouping.empty() ||
          std::find(groupings_named.begin(), groupings_named.end(), r.collective_grouping) != groupings_named.end())
        continue;
      groupings_named.push_back(r.collective_grouping);
      if (groupings_named.size() == 2)
        out << "  note: the configurations group their collectives differently, a choice of framework (docs/schedule.md): "
               "the recommended one runs "
            << collective_grouping_text(best.collective_grouping) << "\n";
      out << "  the best that runs " << collective_grouping_text(r.collective_grouping) << ": "
          << (rec.runner_up == i ? std::string("the runner-up") : settings_text(r, paths) + " at " + objective_text(r, o)) << "\n";
    }
  }
  // The configurations ranked after the recommendation only because they flush, when one of them
  // is better by the objective: the best of those, named.
  if (!flushing.empty() && primary_key(rows[flushing[0]], o) < primary_key(best, o)) {
    const SweepRow& first = rows[flushing[0]];
    out << "  ranked after it: " << flushing.size() << (flushing.size() == 1 ? " configuration that fits" : " configurations that fit")
        << " only by the allocator flushing its cache (a cost the model does not charge); the best of them, "
        << settings_text(first, paths) << ", at " << objective_text(first, o) << " (its typical reserve is over the GPU's "
        << format_bytes(first.metrics.memory_capacity_bytes) << ")\n";
  }
  out << "  (" << fitting.size() + flushing.size() << " of " << rows.size() << " configurations fit with the margin; " << over_capacity
      << (over_capacity == 1 ? " exceeds" : " exceed") << " GPU memory, " << over_margin
      << (over_margin == 1 ? " fits" : " fit") << " only without the margin, " << invalid << " invalid)\n";
  rec.text = out.str();
  return rec;
}

}  // namespace

std::string collective_grouping_of(const PolicySpec& policy) {
  if (!policy.comm_fusion) return "per_parameter";
  if (policy.bucket_bytes > 0) return "byte_buckets";
  if (policy.fsdp1_record_stream()) return "fsdp1_flat_params";
  return "fsdp2_groups";
}

std::string collective_grouping_text(const std::string& grouping) {
  if (grouping == "per_parameter") return "one collective per parameter (comm_fusion false)";
  if (grouping == "byte_buckets") return "byte buckets (ZeRO-3 / DeepSpeed style)";
  if (grouping == "fsdp1_flat_params") return "FSDP1 flat parameters (one per unit)";
  if (grouping == "fsdp2_groups") return "FSDP2 groups (one per unit)";
  return grouping;
}

nlohmann::json sweep_row_to_json(const SweepRow& row, const std::vector<std::string>& paths) {
  SHARDLINE_CHECK(row.values.size() == paths.size(), "a sweep row without one value per varied path");
  nlohmann::json settings = nlohmann::json::object();
  for (size_t i = 0; i < paths.size(); ++i) {
    auto parsed = nlohmann::json::parse(row.values[i], nullptr, /*allow_exceptions=*/false);
    settings[paths[i]] = parsed.is_discarded() ? nlohmann::json(row.values[i]) : parsed;
  }
  nlohmann::json j = {{"index", row.index}, {"settings", settings}, {"valid", row.valid}};
  if (row.valid) {
    j["fits_memory"] = row.fits_memory;
    j["fits_with_margin"] = row.fits_with_margin;
    j["metrics"] = metrics_to_json(row.metrics);
    if (row.straggler_cost) j["straggler_cost"] = *row.straggler_cost;
    j["collective_grouping"] = row.collective_grouping;
  } else {
    j["error"] = row.error;
  }
  return j;
}

SweepRow sweep_row_from_json(const nlohmann::json& j, const std::vector<std::string>& paths) {
  SweepRow row;
  row.index = j.at("index").get<size_t>();
  const auto& settings = j.at("settings");
  for (const auto& p : paths) {
    const auto& v = settings.at(p);
    row.values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  row.valid = j.at("valid").get<bool>();
  if (row.valid) {
    row.fits_memory = j.at("fits_memory").get<bool>();
    row.fits_with_margin = j.at("fits_with_margin").get<bool>();
    row.metrics = metrics_from_json(j.at("metrics"));
    if (j.contains("straggler_cost")) row.straggler_cost = j.at("straggler_cost").get<double>();
    if (j.contains("collective_grouping")) row.collective_grouping = j.at("collective_grouping").get<std::string>();
  } else {
    row.error = j.at("error").get<std::string>();
  }
  return row;
}

namespace {

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string num(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  SHARDLINE_CHECK(ec == std::errc(), "a number that does not fit its text buffer");
  return std::string(buf, ptr);
}

}  // namespace

std::string sweep_csv(const std::vector<SweepRow>& rows, const std::vector<std::string>& paths) {
  std::set<std::string> kinds;
  for (const auto& r : rows)
    if (r.valid)
      for (const auto& [k, v] : r.metrics.by_kind) kinds.insert(k);
  std::ostringstream out;
  out << "index";
  for (const auto& p : paths) out << "," << csv_cell(p);
  out << ",valid,fits_memory,fits_with_margin,step_time_us,compute_busy_us,comm_busy_us,exposed_comm_us,"
         "overlap_efficiency,forward_us,backward_us,peak_memory_bytes,peak_reserved_bytes,min_reserved_bytes,allocator_cache_flushes,"
         "memory_capacity_bytes,"
         "samples_per_s,tokens_per_s,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,hfu,straggler_cost,collective_grouping";
  // "_op_": per op kind; keeps these names apart from the metrics' (compute_op_busy_us, the compute
  // kind's union, is the same number as compute_busy_us).
  for (const auto& k : kinds) out << "," << k << "_op_count," << k << "_op_bytes," << k << "_op_busy_us";
  out << ",error\n";
  for (const auto& r : rows) {
    out << r.index;
    for (const auto& v : r.values) out << "," << csv_cell(v);
    out << "," << (r.valid ? "true" : "false");
    if (r.valid) {
      const auto& m = r.metrics;
      out << "," << (r.fits_memory ? "true" : "false") << "," << (r.fits_with_margin ? "true" : "false") << ","
          << num(m.step_time_us) << "," << num(m.compute_busy_us) << "," << num(m.comm_busy_us) << ","
          << num(m.exposed_comm_us) << "," << num(m.overlap_efficiency) << "," << num(m.forward_us) << ","
          << num(m.backward_us) << "," << m.peak_memory_bytes << "," << m.peak_reserved_bytes << "," << m.min_reserved_bytes << ","
          << (m.allocator_cache_flushes ? "true" : "false") << "," << m.memory_capacity_bytes;
      const Throughput& tp = m.throughput;
      for (const auto* v : {&tp.samples_per_s, &tp.tokens_per_s, &tp.tokens_per_s_per_gpu, &tp.model_tflops_per_gpu, &tp.mfu, &tp.hfu})
        out << "," << (*v ? num(**v) : std::string());  // empty: unknown
      out << "," << (r.straggler_cost ? num(*r.straggler_cost) : std::string());  // empty: no variation
      out << "," << csv_cell(r.collective_grouping);
      for (const auto& k : kinds) {
        auto it = m.by_kind.find(k);
        if (it == m.by_kind.end()) out << ",0,0,0";
        else out << "," << it->second.count << "," << it->second.bytes << "," << num(it->second.busy_us);
      }
      out << ",";
    } else {
      for (int i = 0; i < 22; ++i) out << ",";  // fits_memory, fits_with_margin, 12 metrics, 6 throughput values, straggler cost, grouping
      for (size_t i = 0; i < kinds.size() * 3; ++i) out << ",";
      out << "," << csv_cell(r.error);
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::json sweep_json(const SweepResult& result) {
  const auto paths = sweep_paths(result.axes);
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : result.axes) axes.push_back({{"paths", a.paths}, {"values", a.values}});
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : result.rows) rows.push_back(sweep_row_to_json(r, paths));
  nlohmann::json rec = {{"text", result.recommendation.text}};
  rec["best"] = result.recommendation.best ? nlohmann::json(result.rows[*result.recommendation.best].index) : nlohmann::json();
  rec["runner_up"] =
      result.recommendation.runner_up ? nlohmann::json(result.rows[*result.recommendation.runner_up].index) : nlohmann::json();
  nlohmann::json pareto = nlohmann::json::array();
  for (size_t i : result.pareto) pareto.push_back(result.rows[i].index);
  return {{"scenario", result.scenario},
          {"memory_margin", std::isnan(result.memory_margin) ? nlohmann::json(nullptr) : nlohmann::json(result.memory_margin)},
          {"objective", std::string(sweep_objective_name(result.ranked_by.requested))},
          {"ranked_by", std::string(sweep_objective_name(result.ranked_by.used))}, {"ranked_by_note", result.ranked_by.note}, {"axes", axes},
          {"points", result.rows.size()}, {"pareto_front", pareto}, {"recommendation", rec}, {"rows", rows}};
}

}  // namespace shardline
