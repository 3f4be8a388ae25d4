// `shardline schedule SCENARIO [--set path=value ...] [--json]`: prints the shared scheduler's
// Program, one line per op (id, stream, kind, name, unit, bucket, bytes, group, deps), or as JSON
// (the program.json that sim and exec read).
#include <iostream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "core/program_json.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"

namespace po = boost::program_options;

namespace shardline::cli {
namespace {

int run_schedule(const std::vector<std::string>& args) {
  std::string scenario_path;
  std::vector<std::string> sets;
  po::options_description flags("shardline schedule SCENARIO [--set PATH=VALUE ...] [--json]");
  flags.add_options()("help,h", "this help")
      ("set", po::value(&sets)->composing(), "PATH=VALUE override of the scenario JSON (repeatable)")
      ("json", "print the Program as JSON (program.json) instead of one line per op")
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

  const Program program = schedule(load_scenario(scenario_path, sets));
  if (vm.count("json")) {
    std::cout << program_to_json(program).dump(1) << "\n";
  } else {
    std::cout << program_to_text(program);
  }
  return 0;
}

const CommandRegistration registration("schedule", "print the shared scheduler's Program (one line per op, or --json)", run_schedule);

}  // namespace
}  // namespace shardline::cli
