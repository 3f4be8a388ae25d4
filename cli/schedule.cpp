// `shardline schedule SCENARIO [--set path=value ...] [--json]`: prints the shared scheduler's
// Program, one line per op (id, stream, kind, name, unit, bucket, bytes, group, deps), or as JSON
// (the program.json that simulate and exec write beside their timelines, and compare reads back).
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "core/program_json.h"
#include "core/schedule.h"
#include "reports/outputs.h"

namespace shardline::cli {
namespace {

int run_schedule(const std::vector<std::string>& args) {
  CommandLine cli("shardline schedule SCENARIO [--set PATH=VALUE ...] [--json]");
  cli.add_scenario("scenarios/llama3-8b-fsdp-h100x8.json");
  cli.add_set_flag();
  cli.flags()("json", "print the Program as JSON (program.json) instead of one line per op");
  if (cli.parse(args) == Parsed::help_shown) return 0;

  const Scenario scenario = cli.load_scenario();
  const Program program = schedule(scenario);
  if (cli.given("json")) {
    check_program_json_size(scenario, program);
    std::cout << program_to_json(program).dump(1) << "\n";
  } else {
    write_program_text(program, std::cout);
  }
  return 0;
}

const CommandRegistration registration("schedule", "print the shared scheduler's Program (one line per op, or --json)", run_schedule);

}  // namespace
}  // namespace shardline::cli
