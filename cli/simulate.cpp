// `shardline simulate SCENARIO [--set path=value ...] [--profile P] [--out DIR] [--json]
// [--ranks one|all [--trace-ranks LIST]]`: schedules the scenario, simulates one step (with the
// analytical cost model, or with a calibrated profile's measured tables) on one representative
// rank or on every rank, prints the summary table (or the metrics JSON) and optionally writes
// the run outputs (metrics.json, program.json, timeline.json, trace.json, report.html, and with
// every rank ranks.json).
#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "core/timeline_profile.h"
#include "reports/every_rank.h"
#include "reports/outputs.h"
#include "sim/simulator.h"

namespace shardline::cli {
namespace {

// "3,17,42" -> {3, 17, 42}; "all" -> keep_all.
std::vector<int> parse_rank_list(const std::string& text, bool& keep_all) {
  keep_all = text == "all";
  std::vector<int> ranks;
  if (keep_all || text.empty()) return ranks;
  // getline drops a last empty item: "1," would read as "1" where ",1" and "1,,2" are refused.
  if (text.back() == ',') throw InputError("--trace-ranks", "\"" + text + "\" ends with a comma; give ranks as 0,5,17 or all");
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    // Digits only, as --straggler takes its rank: no sign, no padding (stoi would skip " 1").
    const bool digits = !item.empty() && item.size() <= 9 &&
                        std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (!digits)
      throw InputError("--trace-ranks", "\"" + item + "\" is not a rank; give ranks as 0,5,17 or all");
    ranks.push_back(std::stoi(item));
  }
  return ranks;
}

int run_simulate(const std::vector<std::string>& args) {
  std::string out_dir, profile_path, ranks_mode = "one", trace_ranks;
  CommandLine cli("shardline simulate SCENARIO [--set PATH=VALUE ...] [--profile P] [--out DIR] [--json]");
  cli.add_scenario("scenarios/llama3-8b-fsdp-h100x8.json");
  cli.add_set_flag("PATH=VALUE override of the scenario JSON, e.g. policy.bucket_bytes=64MiB (repeatable)");
  cli.add_variation_flags();
  cli.flags()("profile", po::value(&profile_path), "a calibrated cluster profile (shardline calibrate): measured collective, copy and issue costs replace the analytical ones")
      ("out", po::value(&out_dir), "write metrics.json, program.json, timeline.json, trace.json and report.html to this folder")
      ("json", "print the metrics as JSON on stdout instead of the summary table")
      ("ranks", po::value(&ranks_mode), "one (a representative rank) or all (every rank, each with its own streams; collectives wait for their slowest member); default: all when the scenario has a variation, else one")
      ("trace-ranks", po::value(&trace_ranks), "--ranks all, with --out: ranks the timeline and trace keep besides rank 0, the slowest, the fastest and the ranks a straggler or slow link names (0,5,17), or all");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (cli.given("out") && out_dir.empty()) throw InputError("--out", "give a folder");
  if (cli.given("trace-ranks") && trace_ranks.empty()) throw InputError("--trace-ranks", "give ranks as 0,5,17, or all");
  if (cli.given("profile") && profile_path.empty()) throw InputError("--profile", "give a profile JSON file written by shardline calibrate");
  if (cli.given("ranks") && ranks_mode != "one" && ranks_mode != "all")
    throw InputError("--ranks", "\"" + ranks_mode + "\" is not one of: one, all");
  bool keep_all = false;
  const std::vector<int> keep_ranks = parse_rank_list(trace_ranks, keep_all);

  Scenario scenario = cli.load_scenario();
  std::optional<ClusterProfile> profile;
  if (!profile_path.empty()) {
    profile.emplace(load_profile(profile_path));
    if (const std::string note = profile_ranks_note(*profile, scenario.mesh.shard * scenario.mesh.replicate); !note.empty())
      std::cerr << "simulate: " << note << "\n";
    // A profile fitted on a real run (calibrate --from-trace) also times the units it measured.
    std::vector<std::string> unmatched;
    const int timed = apply_unit_times(scenario, *profile, &unmatched);
    if (timed > 0 || !profile->units.empty())
      std::cerr << "simulate: " << timed << " of " << scenario.model.units.size() << " units timed by the profile's measurements\n";
    // Measured units that time nothing (another scenario's, a renamed unit) are said, not dropped.
    if (!unmatched.empty()) {
      std::string names;
      for (size_t k = 0; k < std::min<size_t>(unmatched.size(), 4); ++k) names += (k ? ", \"" : "\"") + unmatched[k] + "\"";
      std::cerr << "simulate: " << unmatched.size() << " of the profile's " << profile->units.size() << " measured units (" << names
                << (unmatched.size() > 4 ? ", ..." : "") << ") match no unit of the scenario, and time nothing\n";
    }
  }
  if (!cli.given("ranks")) ranks_mode = scenario.variation.empty() ? "one" : "all";
  const bool every_rank = ranks_mode == "all";
  if (!every_rank && !scenario.variation.empty())
    throw InputError("--ranks", "the scenario's variation (stragglers, rank compute spread, jitter, slow links) needs every rank: leave out --ranks one");
  if (!every_rank && cli.given("trace-ranks")) throw InputError("--trace-ranks", "needs --ranks all");
  if (cli.given("trace-ranks") && out_dir.empty())
    throw InputError("--trace-ranks", "chooses the ranks that --out writes (timeline.json, trace.json, the report); give --out");
  Program program = schedule(scenario);
  if (profile)
    for (const std::string& note : profile_reach_notes(*profile, program)) std::cerr << "simulate: " << note << "\n";
  if (!out_dir.empty()) check_run_outputs_size(scenario, program);  // before simulating, not after
  if (!out_dir.empty() && every_rank) {
    // The timeline and trace hold every kept rank's ops: rank 0, the slowest, the fastest, the
    // varied ranks and what --trace-ranks asks for, within three times the one-rank limit.
    const size_t varied = varied_ranks(scenario, kMaxVariedRanksKept).size();
    const int64_t kept = keep_all ? scenario.mesh.world() : 3 + static_cast<int64_t>(varied + keep_ranks.size());
    const int64_t intervals = std::min<int64_t>(kept, scenario.mesh.world()) * static_cast<int64_t>(program.ops.size());
    // Named after what the user gave: the ranks --trace-ranks adds, else --out, whose automatic
    // ranks (counted at most, before the run says which they are) are what is too many.
    const bool listed = cli.given("trace-ranks");
    if (intervals > kMaxOutputIntervals)
      throw InputError(listed ? "--trace-ranks" : "--out",
                       "keeps " + (listed ? std::string() : std::string("up to ")) +
                           std::to_string(std::min<int64_t>(kept, scenario.mesh.world())) + " ranks" +
                           (listed ? std::string()
                                   : std::string(" (rank 0, the slowest, the fastest and the ") + std::to_string(varied) +
                                         " ranks the variation names, kept by themselves)") +
                           " x " + std::to_string(program.ops.size()) + " ops in the timeline and trace written by --out; at most " +
                           std::to_string(kMaxOutputIntervals) + " op intervals are written: " +
                           (listed ? "keep fewer ranks, or leave out --out" : "name fewer ranks in the variation, or leave out --out"));
  }
  SimOptions options;
  if (profile) options.profile = &*profile;
  std::optional<RankSummary> ranks;
  Timeline timeline;
  Metrics metrics;
  if (every_rank) {
    EveryRankRun run = simulate_every_rank(scenario, program, options, keep_ranks, keep_all);
    timeline = std::move(run.timeline);
    ranks = std::move(run.summary);
    metrics = compute_metrics(timeline);
  } else if (out_dir.empty()) {
    // Nothing to write but the metrics: no Timeline is kept (30% less memory on a million-op
    // Program), and `timeline` is its header.
    metrics = simulate_metrics(scenario, program, options, &timeline);
  } else {
    timeline = simulate(scenario, program, options);
    metrics = compute_metrics(timeline);
  }
  if (!out_dir.empty()) write_run_outputs(out_dir, scenario, program, timeline, metrics, ranks ? &*ranks : nullptr);

  if (cli.given("json")) {
    nlohmann::json j = metrics_to_json(metrics);
    if (ranks) j["ranks"] = rank_summary_to_json(*ranks);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << summary_table(scenario, timeline, metrics);
    if (ranks) std::cout << "\n" << rank_summary_text(*ranks);
    if (!out_dir.empty())
      std::cout << "\noutputs in " << out_dir << "/ (report.html, trace.json for Perfetto, metrics.json, program.json, timeline.json"
                << (ranks ? ", ranks.json" : "") << ")\n";
  }
  return 0;
}

const CommandRegistration registration("simulate", "predict one training step: summary, metrics, trace and HTML report", run_simulate);

}  // namespace
}  // namespace shardline::cli
