// `shardline compare PREDICTED_DIR MEASURED_DIR [--tolerance 0.10] [--out DIR]`: joins the
// timeline.json of a simulate run and of an exec run op by op (reports/compare.h), prints the
// error table, writes compare.json and compare.html (into --out, default MEASURED_DIR), and
// exits 1 when the step-time error exceeds the tolerance. docs/calibrate.md.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/error.h"
#include "core/units.h"
#include "reports/compare.h"
#include "reports/outputs.h"

namespace shardline::cli {
namespace {

// A failed exec into an existing folder leaves its partial timelines beside the earlier run's
// complete files: the first partial timeline newer than timeline.json, or "" when none is.
std::string newer_partial_timeline(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto complete = fs::last_write_time(fs::path(dir) / "timeline.json", ec);
  if (ec) return "";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_partial_timeline_file(name)) continue;
    std::error_code e;
    if (fs::last_write_time(entry.path(), e) > complete && !e) return name;
  }
  return "";
}

int run_compare(const std::vector<std::string>& args) {
  std::string predicted_dir, measured_dir, out_dir;
  double tolerance = 0.10;
  CommandLine cli("shardline compare PREDICTED_DIR MEASURED_DIR [--tolerance 0.10] [--out DIR]");
  cli.flags()("tolerance", po::value(&tolerance)->default_value(0.10, "0.1"), "allowed relative step-time error; exit 1 above it")
      ("out", po::value(&out_dir), "write compare.json and compare.html here (default: MEASURED_DIR)");
  cli.add_positional("predicted", &predicted_dir, "output folder of `shardline simulate --out`");
  cli.add_positional("measured", &measured_dir, "output folder of `shardline exec --out`");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (predicted_dir.empty()) throw InputError("PREDICTED_DIR", "give the output folder of `shardline simulate --out`");
  if (measured_dir.empty()) throw InputError("MEASURED_DIR", "give the output folder of `shardline exec --out`");
  check_tolerance(tolerance);
  if (out_dir.empty()) out_dir = measured_dir;
  if (const std::string partial = newer_partial_timeline(measured_dir); !partial.empty())
    std::cerr << "shardline compare: note: " << measured_dir << " holds " << partial
              << ", newer than its timeline.json: a later exec there failed, and timeline.json is an earlier run's\n";
  const Comparison c = compare_run_dirs(predicted_dir, measured_dir, out_dir, tolerance);
  std::cout << comparison_table(c) << "\noutputs in " << out_dir << "/ (compare.json, compare.html)\n";
  return c.within_tolerance ? 0 : 1;
}

const CommandRegistration registration("compare",
                                       "predicted vs measured, op by op; exit 1 when the step-time error exceeds --tolerance",
                                       run_compare);

}  // namespace
}  // namespace shardline::cli
