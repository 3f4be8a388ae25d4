// Subcommand registry of the `shardline` command. Each cli/<name>.cpp defines one subcommand
// and registers it with a static `CommandRegistration`. A subcommand gets its arguments (after
// the subcommand name) and returns the exit code; it may throw InputError (exit 2).
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace shardline::cli {

using CommandFn = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string name;
  std::string summary;  // one line for `shardline --help`
  CommandFn run;
};

std::vector<Command>& commands();

struct CommandRegistration {
  CommandRegistration(std::string name, std::string summary, CommandFn run) {
    commands().push_back({std::move(name), std::move(summary), std::move(run)});
  }
};

}  // namespace shardline::cli
