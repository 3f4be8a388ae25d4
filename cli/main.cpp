// Entry point of `shardline`: dispatches to a registered subcommand and turns user-input
// errors into exit code 2 with one clear message.
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <new>
#include <iostream>

#include <boost/program_options/errors.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "core/suggest.h"

namespace shardline::cli {
std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}
}  // namespace shardline::cli

namespace {

void print_usage(std::ostream& out) {
  auto cmds = shardline::cli::commands();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  out << "usage: shardline <command> [args...]   (shardline <command> --help for its flags)\n\ncommands:\n";
  for (const auto& c : cmds) out << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ') << c.summary << "\n";
}

// Under mpirun every rank reads the same input and finds the same error: only rank 0 says it
// (Open MPI sets OMPI_COMM_WORLD_RANK in each rank's environment).
void report_once(const std::string& command, const char* what) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr && std::string(rank) != "0") return;
  std::cerr << "shardline " << command << ": error: " << what << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shardline;
  if (argc < 2) {
    print_usage(std::cerr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(std::cout);
    return 0;
  }
  const auto& cmds = cli::commands();
  auto it = std::find_if(cmds.begin(), cmds.end(), [&](const cli::Command& c) { return c.name == name; });
  if (it == cmds.end()) {
    std::vector<std::string> names;
    for (const cli::Command& c : cmds) names.push_back(c.name);
    const std::string close = closest_match(name, names);
    std::cerr << "shardline: error: unknown command \"" << name << "\""
              << (close.empty() ? std::string() : "; did you mean \"" + close + "\"?") << " (shardline --help lists them)\n";
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    const int rc = it->run(args);
    // What the command printed must have reached its file: a full disk under `> out.json` would
    // otherwise leave a truncated file behind exit 0.
    std::cout.flush();
    if (!std::cout) {
      report_once(name, "writing the standard output failed (a full disk, or a closed pipe?); what was written is incomplete");
      return rc == 0 ? 1 : rc;
    }
    return rc;
  } catch (const InputError& e) {
    report_once(name, e.what());
    return 2;
  } catch (const boost::program_options::error& e) {
    report_once(name, e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // The op and rank limits keep shipped-scale work in a few GB; a smaller machine or a memory
    // limit (ulimit -v, a container) can still run out: say so instead of aborting.
    report_once(name, "out of memory: this run needs more memory than this process may use");
    return 1;
  }
}
