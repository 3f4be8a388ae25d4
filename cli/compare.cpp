// `shardline compare PREDICTED_DIR MEASURED_DIR [--tolerance 0.10] [--out DIR]`: joins the
// timeline.json of a simulate run and of an exec run op by op (reports/compare.h), prints the
// error table, writes compare.json and compare.html (into --out, default MEASURED_DIR), and
// exits 1 when the step-time error exceeds the tolerance. docs/calibrate.md.
#include <cmath>
#include <iostream>

#include <boost/program_options.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "reports/compare.h"

namespace po = boost::program_options;

namespace shardline::cli {
namespace {

int run_compare(const std::vector<std::string>& args) {
  std::string predicted_dir, measured_dir, out_dir;
  double tolerance = 0.10;
  po::options_description flags("shardline compare PREDICTED_DIR MEASURED_DIR [--tolerance 0.10] [--out DIR]");
  flags.add_options()("help,h", "this help")
      ("tolerance", po::value(&tolerance)->default_value(0.10), "allowed relative step-time error; exit 1 above it")
      ("out", po::value(&out_dir), "write compare.json and compare.html here (default: MEASURED_DIR)")
      ("predicted", po::value(&predicted_dir), "output folder of `shardline simulate --out`")
      ("measured", po::value(&measured_dir), "output folder of `shardline exec --out`");
  po::positional_options_description positional;
  positional.add("predicted", 1).add("measured", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(flags).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << flags << "\n";
    return 0;
  }
  if (predicted_dir.empty()) throw InputError("PREDICTED_DIR", "give the output folder of `shardline simulate --out`");
  if (measured_dir.empty()) throw InputError("MEASURED_DIR", "give the output folder of `shardline exec --out`");
  if (!(tolerance >= 0) || !std::isfinite(tolerance))
    throw InputError("--tolerance", "must be a finite relative error >= 0, e.g. 0.10");
  if (out_dir.empty()) out_dir = measured_dir;
  const Comparison c = compare_run_dirs(predicted_dir, measured_dir, out_dir, tolerance);
  std::cout << comparison_table(c) << "\noutputs in " << out_dir << "/ (compare.json, compare.html)\n";
  return c.within_tolerance ? 0 : 1;
}

const CommandRegistration registration("compare",
                                       "predicted vs measured, op by op; exit 1 when the step-time error exceeds --tolerance",
                                       run_compare);

}  // namespace
}  // namespace shardline::cli
