// `shardline simulate SCENARIO [--set path=value ...] [--profile P] [--out DIR] [--json]`:
// schedules the scenario, simulates one step (with the analytical cost model, or with a
// calibrated profile's measured tables), prints the summary table (or the metrics JSON) and
// optionally writes the run outputs (metrics.json, program.json, timeline.json, trace.json,
// report.html).
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/profile.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "reports/outputs.h"
#include "sim/simulator.h"

namespace po = boost::program_options;

namespace shardline::cli {
namespace {

int run_simulate(const std::vector<std::string>& args) {
  std::string scenario_path, out_dir, profile_path;
  std::vector<std::string> sets;
  po::options_description flags("shardline simulate SCENARIO [--set PATH=VALUE ...] [--profile P] [--out DIR] [--json]");
  flags.add_options()("help,h", "this help")
      ("set", po::value(&sets)->composing(), "PATH=VALUE override of the scenario JSON, e.g. policy.bucket_bytes=64MiB (repeatable)")
      ("profile", po::value(&profile_path), "a calibrated cluster profile (shardline calibrate): measured collective, copy and issue costs replace the analytical ones")
      ("out", po::value(&out_dir), "write metrics.json, program.json, timeline.json, trace.json and report.html to this folder")
      ("json", "print the metrics as JSON on stdout instead of the summary table")
      ("scenario", po::value(&scenario_path), "scenario JSON file");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(flags).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << flags << "\n";
    return 0;
  }
  if (scenario_path.empty()) throw InputError("SCENARIO", "give a scenario JSON file, e.g. scenarios/llama3-8b-fsdp-h100x8.json");
  if (vm.count("out") && out_dir.empty()) throw InputError("--out", "give a folder");
  if (vm.count("profile") && profile_path.empty()) throw InputError("--profile", "give a profile JSON file written by shardline calibrate");

  const Scenario scenario = load_scenario(scenario_path, sets);
  const Program program = schedule(scenario);
  if (!out_dir.empty()) check_run_outputs_size(scenario, program);  // before simulating, not after
  SimOptions options;
  std::optional<ClusterProfile> profile;
  if (!profile_path.empty()) options.profile = &profile.emplace(load_profile(profile_path));
  const Timeline timeline = simulate(scenario, program, options);
  const Metrics metrics = compute_metrics(timeline);
  if (!out_dir.empty()) write_run_outputs(out_dir, scenario, program, timeline, metrics);

  if (vm.count("json")) {
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
