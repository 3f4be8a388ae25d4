// `shardline simulate SCENARIO [--set path=value ...] [--profile P] [--out DIR] [--json]`:
// schedules the scenario, simulates one step (with the analytical cost model, or with a
// calibrated profile's measured tables), prints the summary table (or the metrics JSON) and
// optionally writes the run outputs (metrics.json, program.json, timeline.json, trace.json,
// report.html).
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "reports/outputs.h"
#include "sim/simulator.h"

namespace shardline::cli {
namespace {

int run_simulate(const std::vector<std::string>& args) {
  std::string out_dir, profile_path;
  CommandLine cli("shardline simulate SCENARIO [--set PATH=VALUE ...] [--profile P] [--out DIR] [--json]");
  cli.add_scenario("scenarios/llama3-8b-fsdp-h100x8.json");
  cli.add_set_flag("PATH=VALUE override of the scenario JSON, e.g. policy.bucket_bytes=64MiB (repeatable)");
  cli.flags()("profile", po::value(&profile_path), "a calibrated cluster profile (shardline calibrate): measured collective, copy and issue costs replace the analytical ones")
      ("out", po::value(&out_dir), "write metrics.json, program.json, timeline.json, trace.json and report.html to this folder")
      ("json", "print the metrics as JSON on stdout instead of the summary table");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (cli.given("out") && out_dir.empty()) throw InputError("--out", "give a folder");
  if (cli.given("profile") && profile_path.empty()) throw InputError("--profile", "give a profile JSON file written by shardline calibrate");

  const Scenario scenario = cli.load_scenario();
  Program program = schedule(scenario);
  if (!out_dir.empty()) check_run_outputs_size(scenario, program);  // before simulating, not after
  SimOptions options;
  std::optional<ClusterProfile> profile;
  if (!profile_path.empty()) options.profile = &profile.emplace(load_profile(profile_path));
  // Without outputs to write, the Program is not needed after simulating: its ops move into the
  // Timeline instead of being copied (half the memory of a million-op Program).
  const Timeline timeline = out_dir.empty() ? simulate(scenario, std::move(program), options) : simulate(scenario, program, options);
  const Metrics metrics = compute_metrics(timeline);
  if (!out_dir.empty()) write_run_outputs(out_dir, scenario, program, timeline, metrics);

  if (cli.given("json")) {
    std::cout << metrics_to_json(metrics).dump(2) << "\n";
  } else {
    std::cout << summary_table(scenario, timeline, metrics);
    if (!out_dir.empty()) std::cout << "\noutputs in " << out_dir << "/ (report.html, trace.json for Perfetto, metrics.json, program.json, timeline.json)\n";
  }
  return 0;
}

const CommandRegistration registration("simulate", "predict one training step: summary, metrics, trace and HTML report", run_simulate);

}  // namespace
}  // namespace shardline::cli
