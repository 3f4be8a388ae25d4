// `shardline sweep SCENARIO --vary PATH=VALUES ...`: evaluates the cartesian grid of overrides
// with the simulator on all cores (and across ranks under mpirun), writes sweep.csv, sweep.json
// and report.html, and prints the recommendation by --objective (throughput, step_time or
// memory) last. docs/sweep.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/error.h"
#include "core/scenario.h"
#include "core/scenario_parse.h"
#include "reports/outputs.h"
#include "reports/sweep.h"
#include "reports/sweep_html.h"
#include "sweep/sweep_mpi.h"
#include "sweep/sweep_run.h"
#include "core/invariant.h"

namespace fs = std::filesystem;

namespace shardline::cli {
namespace {

// A progress bar on a terminal; a plain line every 10% otherwise.
class Progress {
 public:
  explicit Progress(std::string label) : label_(std::move(label)), tty_(isatty(fileno(stderr)) != 0) {}
  void operator()(size_t done, size_t total) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) {
      const int width = 40;
      const int filled = total ? static_cast<int>(static_cast<double>(done) / static_cast<double>(total) * width) : width;
      std::fprintf(stderr, "\r%s [%s%s] %3d%% %zu/%zu %.1fs", label_.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(width - filled), '.').c_str(),
                   total ? static_cast<int>(100 * done / total) : 100, done, total, secs);
      if (done == total) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    } else {
      const int decile = total ? static_cast<int>(10 * done / total) : 10;
      if (decile > last_decile_) {
        last_decile_ = decile;
        // The line at each tenth says the share done, not the tenth it passed (2/3 is 66%, not 60%).
        std::fprintf(stderr, "%s: %zu/%zu points (%d%%), %.1fs\n", label_.c_str(), done, total,
                     total ? static_cast<int>(100 * done / total) : 100, secs);
      }
    }
  }

 private:
  std::string label_;
  bool tty_;
  int last_decile_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int run_sweep_command(const std::vector<std::string>& args) {
  SweepMpi mpi;
  std::vector<std::string> vary;
  std::string out_dir, objective_text = "throughput";
  int jobs = 0;
  double margin = 0.0;  // --memory-margin, when given
  CommandLine cli("shardline sweep SCENARIO --vary PATH=VALUES [--vary ...] [flags]");
  cli.add_scenario(/*example=*/"");
  cli.flags()("vary", po::value(&vary)->composing(),
              "PATH=VALUES: a..b:xK (geometric), a..b:+K (arithmetic), or v1,v2,... (sizes take units: 1MiB); "
              "P1/P2=v1/w1,v2/w2 varies paths jointly. Repeat for a cartesian grid.");
  cli.add_set_flag("PATH=VALUE override applied to the base scenario");
  cli.flags()("out", po::value(&out_dir), "output folder (default: sweep-<scenario>)")
      ("jobs,j", po::value(&jobs)->default_value(0), "worker threads per process (0: all cores)")
      ("memory-margin", po::value(&margin),
       "extra fraction of GPU memory kept free when judging fit, beyond the reserve needed "
       "(which already counts the CUDA context, NCCL buffers and fragmentation); 0.1 = 10%. "
       "Default: the scenario's run.memory_margin, as simulate judges it")
      ("objective", po::value(&objective_text)->default_value("throughput"),
       "what the recommendation, Pareto front and plots rank by: throughput (tokens/s per GPU, highest), "
       "step_time (shortest) or memory (lowest reserve needed)");
  if (cli.parse(args, /*show_help=*/mpi.rank() == 0) == Parsed::help_shown) return 0;
  if (vary.empty()) throw InputError("--vary", "give at least one --vary PATH=VALUES");
  if (jobs < 0) throw InputError("--jobs", "must be >= 0");
  if (cli.given("memory-margin") && !(margin >= 0 && margin < 1)) throw InputError("--memory-margin", "must be in [0, 1)");
  const SweepObjective objective = parse_sweep_objective(objective_text);

  const std::string& scenario_path = cli.scenario_path();
  nlohmann::json base = load_scenario_json(scenario_path);
  if (!cli.overrides().empty()) apply_overrides(base, cli.overrides());
  // The flag stands for the key.
  if (cli.given("memory-margin")) apply_overrides(base, {"run.memory_margin=" + nlohmann::json(margin).dump()});
  std::vector<SweepAxis> axes;
  for (const auto& v : vary) check_vary_paths(base, parse_vary_paths(v));  // a misspelled path before its values
  for (const auto& v : vary) axes.push_back(parse_vary(v));
  // Twice over two axes, or twice in one joint axis (A/A=1/2 ran one configuration).
  std::set<std::string> varied;
  for (const auto& a : axes)
    for (const auto& p : a.paths)
      if (!varied.insert(p).second) throw InputError("--vary", p + ": varied twice");
  // A --set that a --vary replaces on every row would be dropped without a word.
  for (const std::string& set : cli.overrides()) {
    const std::string set_path = set.substr(0, set.find('='));
    for (const auto& a : axes)
      for (const auto& p : a.paths)
        if (set_path == p || set_path.rfind(p + ".", 0) == 0)
          throw InputError("--set", set_path + " is also varied (--vary " + p + "), which replaces it on every row; give one or the other");
  }
  const size_t total = grid_size(axes);
  validate_vary_paths(base, axes);
  const std::string base_dir = fs::path(scenario_path).parent_path().string();
  check_base_scenario(base, base_dir, axes, total);
  // The margin every row is judged with: the scenario's run.memory_margin (NaN: it is an axis,
  // each row has its own).
  bool margin_varied = false;
  for (const auto& a : axes)
    for (const auto& p : a.paths) margin_varied = margin_varied || p == "run.memory_margin";
  if (margin_varied && cli.given("memory-margin"))
    throw InputError("--memory-margin", "run.memory_margin is also varied (--vary); give one or the other");
  double row_margin = std::numeric_limits<double>::quiet_NaN();
  if (!margin_varied) {
    const nlohmann::json* run = base.contains("run") ? &base["run"] : nullptr;
    row_margin = run != nullptr && run->is_object() && run->contains("memory_margin") && (*run)["memory_margin"].is_number()
                     ? (*run)["memory_margin"].get<double>()
                     : RunSpec{}.memory_margin;
  }
  const std::string stem = fs::path(scenario_path).stem().string();
  if (out_dir.empty()) out_dir = "sweep-" + stem;
  checked_output_folder(out_dir, "--out");  // before the grid runs, not after

  if (jobs == 0) jobs = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, mpi.local_size()));
  const auto mine = mpi.my_indices(total);
  jobs = static_cast<int>(std::min<size_t>(static_cast<size_t>(jobs), std::max<size_t>(mine.size(), 1)));  // as run_sweep_points
  if (mpi.rank() == 0)
    std::cerr << "sweep: " << total << " configurations of " << stem << " on " << mpi.size() << " process"
              << (mpi.size() > 1 ? "es" : "") << " x " << jobs << " thread" << (jobs > 1 ? "s" : "") << "\n";
  Progress progress(mpi.size() > 1 ? "sweep (rank 0 share)" : "sweep");
  SweepProgressFn report;
  if (mpi.rank() == 0) report = [&](size_t d, size_t t) { progress(d, t); };
  std::vector<SweepRow> local;
  const std::vector<std::string> paths = sweep_paths(axes);
  try {
    local = run_sweep_points(base, base_dir, axes, mine, jobs, report);
  } catch (const std::exception& e) {
    if (mpi.size() > 1) {
      std::cerr << "shardline sweep: rank " << mpi.rank() << ": internal error: " << e.what() << "\n";
      mpi.abort(1);
    }
    throw;
  }

  SweepResult result;
  if (mpi.size() > 1) {
    nlohmann::json mine_json = nlohmann::json::array();
    for (const auto& r : local) mine_json.push_back(sweep_row_to_json(r, paths));
    const auto all = mpi.gather_to_root(mine_json.dump());
    if (mpi.rank() != 0) return 0;
    result.rows.resize(total);
    std::vector<bool> filled(total, false);
    for (const auto& text : all)
      for (const auto& j : nlohmann::json::parse(text)) {
        SweepRow r = sweep_row_from_json(j, paths);
        const size_t idx = r.index;
        SHARDLINE_CHECK(idx < total && !filled[idx], "a gathered sweep row outside the grid, or twice");
        filled[idx] = true;
        result.rows[idx] = std::move(r);
      }
    SHARDLINE_CHECK(std::count(filled.begin(), filled.end(), true) == static_cast<std::ptrdiff_t>(total), "a grid point no rank ran");
  } else {
    result.rows = std::move(local);
  }
  result.scenario = stem;
  result.axes = axes;
  result.memory_margin = row_margin;
  result.ranked_by = resolve_objective(result.rows, objective);
  result.pareto = pareto_front(result.rows, paths, result.ranked_by.used);
  result.recommendation = recommend(result.rows, paths, row_margin, result.ranked_by);

  write_output_folder(out_dir,
                      {{"sweep.csv", [&] { return sweep_csv(result.rows, paths); }},
                       {"sweep.json", [&] { return sweep_json(result).dump(1) + "\n"; }},
                       {"report.html", [&] { return sweep_html(result); }}},
                      "--out", kRunOnlyFiles);  // a run's files there would describe another run

  size_t invalid = 0, over = 0;
  for (const auto& r : result.rows) {
    if (!r.valid) ++invalid;
    else if (!r.fits_memory) ++over;
  }
  std::cout << "sweep: " << result.rows.size() << (result.rows.size() == 1 ? " configuration, " : " configurations, ") << over
            << (over == 1 ? " exceeds" : " exceed") << " GPU memory, " << invalid << " invalid; Pareto front " << result.pareto.size()
            << (result.pareto.size() == 1 ? " point\n" : " points\n");
  // The first few invalid reasons, so a bad grid is obvious without opening the files.
  size_t shown = 0;
  for (const auto& r : result.rows) {
    if (r.valid || shown == 3) continue;
    std::string settings;
    for (size_t p = 0; p < paths.size(); ++p) settings += (p ? ", " : "") + paths[p] + "=" + r.values[p];
    std::cout << "  invalid: " << settings << ": " << r.error << "\n";
    ++shown;
  }
  if (invalid > shown) std::cout << "  ... " << invalid - shown << " more invalid rows in sweep.csv\n";
  std::cout << "wrote " << (fs::path(out_dir) / "sweep.csv").string() << ", sweep.json, report.html\n\n";
  std::cout << result.recommendation.text;
  return 0;
}

const CommandRegistration kSweep("sweep", "capacity-planning grid over scenario settings, Pareto front, recommendation",
                                 run_sweep_command);

}  // namespace
}  // namespace shardline::cli
