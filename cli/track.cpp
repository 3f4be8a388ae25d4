// `shardline track METRICS --history FILE` appends a record (scenario, metrics, commit, UTC time,
// backend) to a JSON-lines history; `shardline track --history FILE --html OUT` renders the
// trend page. docs/regress.md.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/error.h"
#include "core/timeline.h"
#include "reports/history.h"
#include "reports/outputs.h"
#include "reports/regress.h"

namespace fs = std::filesystem;

namespace shardline::cli {
namespace {

// `git rev-parse HEAD` in the current directory; empty when git or a repository is missing.
std::string git_head() {
  FILE* pipe = popen("git rev-parse HEAD 2>/dev/null", "r");
  if (pipe == nullptr) return "";
  std::array<char, 128> buf{};
  std::string out;
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  const int rc = pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return rc == 0 ? out : "";
}

// "scenario" / "backend" strings from a JSON file, when present. A file that exists but is not a
// JSON object is an error naming it (it was read for the labels, and would be reported missing).
void read_labels(const fs::path& file, std::string& scenario, std::string& backend) {
  std::ifstream in(file);
  if (!in) return;
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    throw InputError("METRICS", "\"" + file.string() + "\" is not a JSON object (malformed or cut short); it is read for the "
                                "run's scenario and backend");
  if (scenario.empty() && j.contains("scenario") && j["scenario"].is_string()) scenario = j["scenario"];
  if (backend.empty() && j.contains("backend") && j["backend"].is_string()) backend = j["backend"];
}

int run_track(const std::vector<std::string>& args) {
  std::string metrics_path, history, html, commit, scenario, backend;
  CommandLine cli("shardline track [METRICS] --history FILE [--html OUT] [flags]");
  cli.flags()("history", po::value(&history), "JSON-lines history file (appended to; created when missing)")
      ("html", po::value(&html), "write the trend page (self-contained HTML) here")
      ("commit", po::value(&commit), "commit to record (default: git rev-parse HEAD)")
      ("scenario", po::value(&scenario), "scenario name (default: from the run folder, else the file name)")
      ("backend", po::value(&backend), "sim | mpi | nccl (default: from the run folder's timeline.json)");
  cli.add_positional("metrics", &metrics_path, "metrics.json (or a run folder holding one)");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (history.empty()) throw InputError("--history", "is required");
  if (cli.given("commit") && commit.empty()) throw InputError("--commit", "is empty; give the commit to record, or leave the flag out for git's HEAD");
  if (cli.given("scenario") && scenario.find_first_not_of(" \t") == std::string::npos)
    throw InputError("--scenario", "is blank; give the scenario's name, or leave the flag out to read it from the run");
  // Labels are printed one record per line on the page and in tables: no newline or escape.
  for (const auto& [flag, text] : {std::pair<const char*, const std::string*>{"--commit", &commit}, {"--scenario", &scenario}})
    for (const char c : *text)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw InputError(flag, "contains a control character (byte " + std::to_string(static_cast<int>(static_cast<unsigned char>(c))) +
                                   "); expected printable text");
  if (metrics_path.empty() && html.empty()) throw InputError("METRICS", "give a metrics file to record, or --html OUT to render");
  // Before anything is appended: the history must not be recorded into and then fail to render,
  // nor be overwritten by the page.
  // The metrics file as it will be read (a run folder's metrics.json), so that --html cannot name it.
  fs::path metrics_file = metrics_path;
  if (!metrics_path.empty() && fs::is_directory(metrics_file)) metrics_file /= "metrics.json";
  if (!html.empty()) check_output_file(html, "--html", {history, metrics_file.string()});

  std::optional<HistoryRecord> recorded;
  const auto report_recorded = [&] {
    if (recorded)
      std::cout << "recorded " << recorded->scenario << " (" << recorded->backend << ", " << recorded->commit.substr(0, 12) << ") in "
                << history << "\n";
  };
  if (!metrics_path.empty()) {
    const fs::path& file = metrics_file;
    if (!fs::exists(file)) throw InputError("METRICS", "\"" + file.string() + "\" does not exist");
    HistoryRecord rec;
    rec.metrics = read_metrics_file(file.string());
    rec.scenario = scenario;
    rec.backend = backend;
    read_labels(file, rec.scenario, rec.backend);
    read_labels(file.parent_path() / "timeline.json", rec.scenario, rec.backend);
    if (rec.scenario.empty()) {
      rec.scenario = file.stem().string();
      if (rec.scenario == "metrics" && file.has_parent_path()) rec.scenario = fs::absolute(file).parent_path().filename().string();
    }
    if (rec.backend.empty())
      throw InputError("--backend", "cannot tell the backend from \"" + file.string() + "\" (no timeline.json beside it); give --backend");
    if (!is_backend_name(rec.backend))
      throw InputError("--backend", nlohmann::json(rec.backend).dump() + " is not a backend; expected sim, mpi or nccl" +
                                        (backend.empty() ? " (read from \"" + file.string() + "\" or the timeline.json beside it)" : ""));
    rec.commit = commit.empty() ? git_head() : commit;
    if (rec.commit.empty()) throw InputError("--commit", "not in a git repository (git rev-parse HEAD failed); give --commit");
    rec.time_utc = utc_now_iso8601();
    recorded = std::move(rec);
  }
  // The page is written beside its place first, the record appended next, and only then does the
  // page replace the old one: a page that cannot be written leaves the history as it was (so a
  // second attempt records the run once), and a record that cannot be appended leaves the old
  // page, so the page never shows a record the history lacks.
  if (!html.empty()) {
    std::vector<HistoryRecord> records = metrics_path.empty() || fs::exists(history) ? read_history(history) : std::vector<HistoryRecord>{};
    if (recorded) records.push_back(*recorded);
    write_file_atomically(html, history_html(records), "--html", [&] {
      if (recorded) append_history(history, *recorded);
    });
    report_recorded();
    std::cout << "wrote " << html << " (" << records.size() << (records.size() == 1 ? " record" : " records") << ")\n";
  } else if (recorded) {
    append_history(history, *recorded);
    report_recorded();
  }
  return 0;
}

const CommandRegistration kTrack("track", "append metrics to a history file; render its trend as HTML", run_track);

}  // namespace
}  // namespace shardline::cli
