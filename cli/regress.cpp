// `shardline regress --baseline FILE|DIR --current FILE|DIR [--tolerance 0.01]
// [--update-baseline]`: compares metrics against a baseline; exit 1 on a regression or a
// scenario missing on either side. docs/regress.md.
#include <iostream>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/error.h"
#include "reports/regress.h"

namespace shardline::cli {
namespace {

int run_regress(const std::vector<std::string>& args) {
  std::string baseline, current;
  double tolerance = 0.01;
  CommandLine cli("shardline regress --baseline FILE|DIR --current FILE|DIR [flags]");
  cli.flags()("baseline", po::value(&baseline), "baseline metrics file, or a directory of <scenario>.json")
      ("current", po::value(&current), "current metrics file, or a directory (<scenario>.json or <scenario>/metrics.json)")
      ("tolerance", po::value(&tolerance)->default_value(0.01, "0.01"),
       "allowed growth of step time and peak memory (relative) and drop of overlap efficiency (absolute); a lost fit fails at any tolerance")
      ("update-baseline", "rewrite the baseline from the current metrics instead of comparing");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (baseline.empty()) throw InputError("--baseline", "is required");
  if (current.empty()) throw InputError("--current", "is required");
  if (cli.given("update-baseline")) {
    for (const auto& f : update_baseline(baseline, current)) std::cout << "updated " << f << "\n";
    return 0;
  }
  const RegressReport report = regress_compare(baseline, current, tolerance);
  std::cout << regress_table(report);
  for (const auto& e : report.entries) {
    if (!e.baseline) std::cout << e.name << ": no baseline in " << baseline << " (a new scenario? run with --update-baseline)\n";
    if (!e.current) std::cout << e.name << ": no current metrics in " << current << "\n";
  }
  return report.failed() ? 1 : 0;
}

const CommandRegistration kRegress("regress", "compare metrics with a baseline; exit 1 on a regression", run_regress);

}  // namespace
}  // namespace shardline::cli
