// The command line of one subcommand, so that each cli/<name>.cpp states only its own flags and
// its own work: the usage line and -h/--help, the flags in --help order, positional arguments,
// and for a subcommand that takes a scenario the positional SCENARIO, its repeated
// --set PATH=VALUE overrides and loading the two. Bad flags throw boost::program_options errors,
// a missing SCENARIO InputError; cli/main.cpp turns both into exit code 2.
#pragma once
#include <string>
#include <vector>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include "core/error.h"

namespace shardline {
struct Scenario;
}

namespace shardline::cli {

namespace po = boost::program_options;

enum class Parsed { run, help_shown };

class CommandLine {
 public:
  // `usage`: the head of --help, e.g. "shardline schedule SCENARIO [--set PATH=VALUE ...] [--json]".
  explicit CommandLine(const std::string& usage);
  CommandLine(const CommandLine&) = delete;  // the flags point into it
  CommandLine& operator=(const CommandLine&) = delete;

  // The subcommand's own flags, listed in --help in the order added, after -h/--help.
  po::options_description_easy_init flags() { return listed_.add_options(); }
  // Test hooks: accepted, never listed in --help.
  po::options_description_easy_init hidden_flags() { return hidden_.add_options(); }
  // A positional argument, also accepted as --NAME; listed in --help after every flag.
  void add_positional(const char* name, std::string* value, const char* description);
  // Every positional word after those of add_positional (call it last), also accepted as --NAME.
  void add_positional_list(const char* name, std::vector<std::string>* values, const char* description);

  // The positional SCENARIO, the scenario JSON file. Required: parse() throws InputError("SCENARIO")
  // without it, suggesting `example` (a shipped scenario; "" suggests none).
  void add_scenario(const std::string& example);
  // The scenario as an optional --scenario flag instead (load_scenario() only when given()).
  void add_scenario_flag(const char* description);
  // Repeated --set PATH=VALUE overrides of the scenario JSON, listed in --help at this point.
  void add_set_flag(const char* description = "PATH=VALUE override of the scenario JSON (repeatable)");
  // --straggler RANK=FACTOR (repeatable), --jitter CV, --seed N: added to the scenario's
  // `variation` by load_scenario() (after --set), checked like the JSON, errors naming the flag.
  void add_variation_flags();
  // The variation flags as given, to pass on to a command run under mpirun.
  std::vector<std::string> variation_args() const;

  // Parses the subcommand's arguments, once. With --help, prints the help on stdout when
  // `show_help` (false on MPI ranks other than 0) and returns help_shown: the subcommand then
  // exits 0 without checking anything else.
  [[nodiscard]] Parsed parse(const std::vector<std::string>& args, bool show_help = true);

  // Whether the flag was given on the command line (or has a default value).
  bool given(const char* flag) const { return vm_.count(flag) > 0; }
  // Whether the user wrote the flag (a default value does not count).
  bool written(const char* flag) const { return vm_.count(flag) > 0 && !vm_[flag].defaulted(); }
  const std::string& scenario_path() const { return scenario_path_; }
  const std::vector<std::string>& overrides() const { return overrides_; }
  // The scenario file with the --set overrides applied, validated (core/scenario_parse.h).
  Scenario load_scenario() const;

 private:
  InputError stray_word(const std::vector<std::string>& args) const;
  struct Positional {
    const char* name;
    std::string* value;
    const char* description;
  };
  po::options_description listed_;
  po::options_description hidden_;
  std::vector<Positional> positionals_;
  const char* list_name_ = nullptr;
  std::vector<std::string>* list_values_ = nullptr;
  const char* list_description_ = nullptr;
  bool takes_scenario_ = false;
  bool scenario_file_flag_ = false;  // --scenario is a scenario file (add_scenario_flag), not a command's own option
  std::string scenario_example_;
  std::string scenario_path_;
  std::vector<std::string> overrides_;
  std::vector<std::string> stragglers_;
  double jitter_cv_ = -1;
  int64_t seed_ = -1;
  po::variables_map vm_;
};

}  // namespace shardline::cli
