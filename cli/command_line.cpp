#include "cli/command_line.h"

#include <iostream>

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>

#include "core/error.h"
#include "core/scenario_parse.h"

namespace shardline::cli {

CommandLine::CommandLine(const std::string& usage) : listed_(usage) { listed_.add_options()("help,h", "this help"); }

void CommandLine::add_positional(const char* name, std::string* value, const char* description) {
  positionals_.push_back({name, value, description});
}

void CommandLine::add_scenario(const std::string& example) {
  takes_scenario_ = true;
  scenario_example_ = example;
  add_positional("scenario", &scenario_path_, "scenario JSON file");
}

void CommandLine::add_set_flag(const char* description) {
  listed_.add_options()("set", po::value(&overrides_)->composing(), description);
}

// The first word of `args` past the positional arguments this subcommand takes, named in one
// InputError (boost's own message does not say which word it could not place).
InputError CommandLine::stray_word(const std::vector<std::string>& args) const {
  po::options_description all;
  all.add(listed_).add(hidden_);
  const po::parsed_options parsed = po::command_line_parser(args).options(all).allow_unregistered().run();
  const std::vector<std::string> words = po::collect_unrecognized(parsed.options, po::include_positional);
  std::vector<std::string> positional_words;
  for (const std::string& w : words)
    if (w.empty() || w[0] != '-') positional_words.push_back(w);
  const size_t takes = positionals_.size();
  const std::string word = positional_words.size() > takes ? positional_words[takes] : std::string("?");
  std::string expected = "it takes no positional arguments";
  if (takes > 0) {
    expected = "it takes " + std::to_string(takes) + " (";
    for (size_t i = 0; i < takes; ++i) expected += (i ? ", " : "") + std::string(positionals_[i].name);
    expected += ")";
  }
  return InputError("", "unexpected argument \"" + word + "\": " + expected + "; see --help");
}

Parsed CommandLine::parse(const std::vector<std::string>& args, bool show_help) {
  po::positional_options_description positional;
  for (const Positional& p : positionals_) {
    listed_.add_options()(p.name, po::value(p.value), p.description);
    positional.add(p.name, 1);
  }
  po::options_description all;
  all.add(listed_).add(hidden_);
  po::command_line_parser parser(args);
  parser.options(all);
  // Every subcommand states its positional arguments (possibly none): a stray word is refused
  // (exit 2), never silently ignored.
  parser.positional(positional);
  try {
    po::store(parser.run(), vm_);
  } catch (const po::too_many_positional_options_error&) {
    throw stray_word(args);
  }
  po::notify(vm_);
  if (given("help")) {
    if (show_help) std::cout << listed_ << "\n";
    return Parsed::help_shown;
  }
  if (takes_scenario_ && scenario_path_.empty())
    throw InputError("SCENARIO", "give a scenario JSON file" + (scenario_example_.empty() ? "" : ", e.g. " + scenario_example_));
  return Parsed::run;
}

Scenario CommandLine::load_scenario() const { return shardline::load_scenario(scenario_path_, overrides_); }

}  // namespace shardline::cli
