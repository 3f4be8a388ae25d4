// `shardline import TRACE [TRACE ...] [--scenario S.json [--set PATH=VALUE ...] [--steps FIRST..LAST]] [--out DIR] [--json]`:
// reads PyTorch profiler traces (one per rank, plain or gzip JSON, streamed; kineto/). Without
// a scenario it prints what each trace says (step time, compute, comm per kind, exposed comm,
// overlap efficiency per profiler step); with one it maps the traces onto the scenario's
// Program and writes the measured run in shardline's format (timeline.json, metrics.json,
// report.html, trace.json, program.json) plus import.json, the report of what did not match.
// docs/import.md.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <map>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/schedule.h"
#include "kineto/program_mapping.h"
#include "kineto/trace_reader.h"
#include "kineto/trace_summary.h"
#include "reports/outputs.h"

namespace shardline::cli {
namespace {

// One file given twice as two ranks' traces (under any spelling, a symlink or a hard link: the same
// device and inode), refused before any is read; its rank, where recorded, would also be caught
// as a rank named twice, but a trace without distributedInfo would have been mapped twice.
void refuse_a_file_given_twice(const std::vector<std::string>& paths) {
  std::map<std::pair<dev_t, ino_t>, std::string> files;  // -> the path as given first
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;  // the reader names a missing file
    const auto [it, added] = files.emplace(std::pair{st.st_dev, st.st_ino}, path);
    if (!added) throw InputError("TRACE", path + ": given twice (also as " + it->second + "): give one trace per rank");
  }
}

// The traces in rank order: by distributedInfo.rank when every trace names a distinct one, else
// in the order given. `one_run` (the traces are mapped onto a Program's ranks): every trace names
// its rank or none does (a mix cannot be put in order: the file without one is refused), and
// what a trace says of its rank must fit the traces given, a world size of their count, a rank
// below it, no rank twice (a trace of another run, or the same file twice).
std::vector<kineto::KinetoTrace> in_rank_order(std::vector<kineto::KinetoTrace> traces, bool one_run) {
  const int n = static_cast<int>(traces.size());
  std::map<int, std::string> ranks;  // rank -> the trace that names it
  const auto with_rank = std::find_if(traces.begin(), traces.end(), [](const auto& t) { return t.rank >= 0; });
  if (one_run) {
    // One rank's trace holds one GPU's work: a trace of several would be mapped as one rank.
    for (const auto& t : traces)
      if (const std::vector<int> devices = kineto::gpu_devices(t); devices.size() > 1)
        throw InputError("TRACE", t.path + ": holds GPU work of " + std::to_string(devices.size()) + " devices (" +
                                      std::to_string(devices[0]) + ", " + std::to_string(devices[1]) + (devices.size() > 2 ? ", ..." : "") +
                                      "), where one rank's trace holds one GPU's: give each rank's own trace");
  }
  for (const auto& t : traces) {
    if (!one_run) {
      if (t.rank >= 0 && t.rank < n) ranks.emplace(t.rank, t.path);
      continue;
    }
    if (t.rank < 0 && with_rank != traces.end())
      throw InputError("TRACE", t.path + ": has no distributedInfo.rank but " + with_rank->path + " names its rank (" +
                                    std::to_string(with_rank->rank) + "): give traces that all record their rank, or none (then taken in the order given)");
    if (t.world_size >= 0 && t.world_size != n)
      throw InputError("TRACE", t.path + ": distributedInfo.world_size is " + std::to_string(t.world_size) + " but " + std::to_string(n) +
                                    " traces were given (one per rank)");
    if (t.rank < 0) continue;
    if (t.rank >= n)
      throw InputError("TRACE", t.path + ": distributedInfo.rank is " + std::to_string(t.rank) + ", not a rank of the " + std::to_string(n) +
                                    " traces given");
    const auto [it, added] = ranks.emplace(t.rank, t.path);
    if (!added) throw InputError("TRACE", t.path + ": distributedInfo.rank " + std::to_string(t.rank) + " is also " + it->second + "'s");
  }
  if (ranks.size() != traces.size()) return traces;
  std::sort(traces.begin(), traces.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return traces;
}

constexpr int kDrawnSteps = 8;

// --steps FIRST..LAST: 1-based, inclusive, at most a timeline's iterations.
std::pair<int, int> parse_steps(const std::string& text) {
  const auto bad = [&](const std::string& why) { return InputError("--steps", why + ", got \"" + text + "\""); };
  const size_t dots = text.find("..");
  const auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad("expects FIRST..LAST, step numbers from 1 (e.g. 1..1024)");
    return std::stoi(s);
  };
  if (dots == std::string::npos) throw bad("expects FIRST..LAST, step numbers from 1 (e.g. 1..1024)");
  const int first = number(text.substr(0, dots)), last = number(text.substr(dots + 2));
  if (first < 1 || last < first) throw bad("expects 1 <= FIRST <= LAST");
  if (last - first + 1 > kMaxTimelineIterations)
    throw bad("is " + std::to_string(last - first + 1) + " steps; a timeline holds at most " + std::to_string(kMaxTimelineIterations));
  return {first, last};
}

// Files an earlier run may have left in --out that a summary-only import does not write: a run's
// (simulate, exec, an import with --scenario), its report.html and import.json, a sweep's. They
// would describe another run (docs/outputs.md).
std::vector<std::string> files_of_other_runs(const std::string& dir) {
  std::vector<std::string> stale = kRunOnlyFiles;
  stale.insert(stale.end(), kSweepOnlyFiles.begin(), kSweepOnlyFiles.end());
  stale.push_back("report.html");
  stale.push_back("import.json");
  const std::vector<std::string> earlier = earlier_run_files_in(dir);
  stale.insert(stale.end(), earlier.begin(), earlier.end());
  return stale;
}

// An input trace inside --out under a name the outputs write or clear (PyTorch's examples export
// "trace.json") would be overwritten or removed: refused before anything is read.
void check_inputs_outside_outputs(const std::vector<std::string>& traces, const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(out_dir, ec)) return;
  std::vector<std::string> outputs = files_of_other_runs(out_dir);
  outputs.push_back("summary.json");
  for (const std::string& trace : traces) {
    const fs::path p(trace);
    const std::string name = p.filename().string();
    if (std::find(outputs.begin(), outputs.end(), name) == outputs.end()) continue;
    if (fs::equivalent(p.has_parent_path() ? p.parent_path() : fs::path("."), out_dir, ec))
      throw InputError("--out", "\"" + out_dir + "\" holds the input " + trace + ", which the outputs would overwrite or remove; "
                                "write the outputs to another folder, or rename the trace");
  }
}

// The timeline's steps [first, first + count) around the reported one, renumbered from 0.
Timeline steps_around_reported(const Timeline& t, int count) {
  const int first = std::clamp(t.reported_iteration - count / 2, 0, t.iterations - count);
  Timeline out = t;
  out.intervals.clear();
  for (OpInterval iv : t.intervals) {
    if (iv.iteration < first || iv.iteration >= first + count) continue;
    iv.iteration -= first;
    out.intervals.push_back(iv);
  }
  out.iterations = count;
  out.reported_iteration = t.reported_iteration - first;
  return out;
}

int run_import(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  std::string out_dir, steps_text;
  CommandLine cli("shardline import TRACE [TRACE ...] [--scenario S.json [--set PATH=VALUE ...] [--steps FIRST..LAST]] [--out DIR] [--json]");
  cli.add_scenario_flag("map the traces (one per rank) onto this scenario's Program: a measured timeline");
  cli.add_set_flag();
  cli.flags()("steps", po::value(&steps_text),
              "with --scenario: import only these of the profiler steps that match on every rank (1-based, inclusive, in trace order; "
              "at most 1024), e.g. 1..1024")
      ("out", po::value(&out_dir), "write the outputs here (summary.json; with --scenario also timeline.json, import.json, ...)")
      ("json", "print one JSON document on stdout and nothing else: the trace summaries; with --scenario "
               "{\"summaries\", \"import\", \"metrics\"}");
  cli.add_positional_list("trace", &paths, "PyTorch profiler trace (.json or .json.gz), one per rank");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (paths.empty()) throw InputError("TRACE", "give at least one PyTorch profiler trace (.json or .json.gz)");
  if (!cli.given("scenario") && !cli.overrides().empty()) throw InputError("--set", "needs --scenario");
  if (!cli.given("scenario") && cli.given("steps")) throw InputError("--steps", "needs --scenario (a summary reads every step)");
  kineto::ImportOptions options;
  if (cli.given("steps")) std::tie(options.first_step, options.last_step) = parse_steps(steps_text);
  const bool json = cli.given("json");

  if (cli.given("out") && out_dir.empty()) throw InputError("--out", "give a folder");
  if (!out_dir.empty()) {  // before the traces are read, not after
    checked_output_folder(out_dir, "--out");
    check_inputs_outside_outputs(paths, out_dir);
  }
  if (cli.given("scenario")) refuse_a_file_given_twice(paths);
  std::vector<kineto::KinetoTrace> traces = in_rank_order(kineto::read_traces(paths), cli.given("scenario"));
  nlohmann::json summaries = nlohmann::json::array();
  std::string summary_lines, digest_lines;
  size_t fewest_steps = SIZE_MAX;  // the profiler steps of the rank with the fewest
  for (const auto& t : traces) {
    const kineto::TraceSummary s = kineto::summarize_trace(t);
    fewest_steps = std::min(fewest_steps, s.steps.size());
    summaries.push_back(kineto::summary_to_json(s));
    summary_lines += kineto::summary_text(s);
    digest_lines += kineto::summary_digest(s);
  }

  if (!cli.given("scenario")) {
    if (!out_dir.empty()) {
      const std::string text = summaries.dump(2) + "\n";
      write_output_folder(out_dir, {{"summary.json", [&text] { return text; }}}, "--out", files_of_other_runs(out_dir));
    }
    if (json) {
      std::cout << summaries.dump(2) << "\n";
    } else {
      std::cout << summary_lines;
      if (!out_dir.empty()) std::cout << "outputs in " << out_dir << "/ (summary.json)\n";
    }
    return 0;
  }

  const Scenario scenario = cli.load_scenario();
  const Program program = schedule(scenario);
  if (!out_dir.empty()) {
    // As simulate --out: the Program's ops, then the op intervals drawn into trace.json (at most
    // kDrawnSteps steps of every rank), each bounded before the traces are mapped (6 steps of a
    // 135,000-op Program on 2 ranks had taken 51 s and 2.5 GB, and written a 601 MB trace.json).
    check_run_outputs_size(scenario, program);
    size_t steps = fewest_steps;
    if (options.first_step > 0) steps = std::min<size_t>(steps, static_cast<size_t>(options.last_step - options.first_step + 1));
    const int64_t drawn = static_cast<int64_t>(std::min<size_t>(steps, static_cast<size_t>(kDrawnSteps))) *
                          static_cast<int64_t>(traces.size()) * static_cast<int64_t>(program.ops.size());
    if (drawn > kMaxOutputIntervals)
      throw InputError(cli.given("steps") ? "--steps" : "--out",
                       "draws up to " + std::to_string(std::min<size_t>(steps, static_cast<size_t>(kDrawnSteps))) + " steps x " +
                           std::to_string(traces.size()) + (traces.size() == 1 ? " rank x " : " ranks x ") +
                           std::to_string(program.ops.size()) + " ops into trace.json; at most " + std::to_string(kMaxOutputIntervals) +
                           " op intervals are written: import fewer steps (--steps FIRST..LAST), or leave out --out");
  }
  options.event_latency_us = scenario.cluster.event_latency_us;
  kineto::ImportResult r = kineto::map_traces_to_program(traces, program, options);
  Timeline& timeline = r.timeline;
  set_timeline_scenario(timeline, scenario);
  // A real run's variation is its hardware's, not the scenario's: nobody injected it, it is unknown.
  timeline.variation = {};
  timeline.variation_recorded = false;
  const Metrics metrics = compute_metrics(timeline);
  // With a scenario the per-trace tables (one per rank) give way to one line each; --json and
  // summary.json keep them whole.
  if (!json) std::cout << digest_lines << "\n" << kineto::import_report_text(r.report) << "\n" << summary_table(scenario, timeline, metrics);
  if (!out_dir.empty()) {
    // The Perfetto trace and the HTML report draw at most kDrawnSteps steps around the reported
    // (median) one; timeline.json keeps every imported step.
    std::optional<Timeline> drawn;
    if (timeline.iterations > kDrawnSteps) drawn = steps_around_reported(timeline, kDrawnSteps);
    write_run_outputs(out_dir, scenario, program, timeline, metrics, nullptr, drawn ? &*drawn : nullptr);
    if (drawn && !json) {
      const int first = timeline.reported_iteration - drawn->reported_iteration;
      std::cout << "\ntrace.json and report.html draw imported steps " << first << " to " << first + kDrawnSteps - 1 << " of "
                << timeline.iterations << " (the median step and its neighbours; timeline.json has every step)\n";
    }
    write_file_atomically(out_dir + "/import.json", kineto::import_report_to_json(r.report).dump(2) + "\n", "--out");
    write_file_atomically(out_dir + "/summary.json", summaries.dump(2) + "\n", "--out");
    if (!json)
      std::cout << "\noutputs in " << out_dir
                << "/ (report.html, trace.json, metrics.json, program.json, timeline.json, import.json, summary.json)\n";
  }
  if (json) {
    const nlohmann::json doc{{"summaries", summaries}, {"import", kineto::import_report_to_json(r.report)}, {"metrics", metrics_to_json(metrics)}};
    std::cout << doc.dump(2) << "\n";
  }
  return 0;
}

const CommandRegistration registration("import",
                                       "read PyTorch profiler traces: a summary, or with --scenario the measured timeline of its Program",
                                       run_import);

}  // namespace
}  // namespace shardline::cli
