#include "cli/command_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>

#include "core/error.h"
#include "core/suggest.h"
#include "core/scenario_parse.h"

namespace shardline::cli {

CommandLine::CommandLine(const std::string& usage) : listed_(usage) { listed_.add_options()("help,h", "this help"); }

void CommandLine::add_positional(const char* name, std::string* value, const char* description) {
  positionals_.push_back({name, value, description});
}

void CommandLine::add_positional_list(const char* name, std::vector<std::string>* values, const char* description) {
  list_name_ = name;
  list_values_ = values;
  list_description_ = description;
}

void CommandLine::add_scenario_flag(const char* description) {
  scenario_file_flag_ = true;
  listed_.add_options()("scenario", po::value(&scenario_path_), description);
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

namespace {

bool all_digits(const std::string& t) {
  return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A plain decimal number: digits with at most one point, then an optional exponent (1.5, 2, .5,
// 3., 1e-2). Not a sign, hex, nan or inf, which std::stod would also take.
bool plain_decimal(const std::string& t) {
  const size_t e = t.find_first_of("eE");
  std::string mantissa = t.substr(0, e);
  if (std::count(mantissa.begin(), mantissa.end(), '.') > 1) return false;
  mantissa.erase(std::remove(mantissa.begin(), mantissa.end(), '.'), mantissa.end());
  if (!all_digits(mantissa)) return false;
  if (e == std::string::npos) return true;
  std::string exponent = t.substr(e + 1);
  if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) exponent.erase(0, 1);
  return all_digits(exponent);
}

// The value given to a flag in `args` under any of its spellings ("--jobs V", "--jobs=V", "-j V",
// "-jV"), for an error message; "" when not found.
std::string vm_value_text(const std::vector<std::string>& args, const std::vector<std::string>& spellings) {
  for (size_t i = 0; i < args.size(); ++i)
    for (const std::string& flag : spellings) {
      if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
      if (args[i].rfind(flag + "=", 0) == 0) return args[i].substr(flag.size() + 1);
      if (flag.size() == 2 && args[i].size() > 2 && args[i].rfind(flag, 0) == 0) return args[i].substr(2);  // "-jabc"
    }
  return "";
}

}  // namespace

Parsed CommandLine::parse(const std::vector<std::string>& args, bool show_help) {
  po::positional_options_description positional;
  for (const Positional& p : positionals_) {
    listed_.add_options()(p.name, po::value(p.value), p.description);
    positional.add(p.name, 1);
  }
  if (list_values_) {
    listed_.add_options()(list_name_, po::value(list_values_)->composing(), list_description_);
    positional.add(list_name_, -1);
  }
  po::options_description all;
  all.add(listed_).add(hidden_);
  // A flag that takes a value followed by another flag ("--objective --out x"): Boost takes the
  // second flag as the value and reports the stray word after it. Say what is missing instead.
  const auto takes_value = [&](const std::string& word) -> const po::option_description* {
    if (word.rfind("--", 0) != 0) return nullptr;
    const po::option_description* d = all.find_nothrow(word.substr(2, word.find('=') - 2), false);
    return d != nullptr && d->semantic()->max_tokens() > 0 ? d : nullptr;
  };
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i].find('=') == std::string::npos && takes_value(args[i]) && args[i + 1].rfind("--", 0) == 0 &&
        all.find_nothrow(args[i + 1].substr(2, args[i + 1].find('=') - 2), false) != nullptr)
      throw InputError(args[i], "needs a value; the next word, \"" + args[i + 1] + "\", is a flag; see --help");
  po::command_line_parser parser(args);
  parser.options(all);
  // Every subcommand states its positional arguments (possibly none): a stray word is refused
  // (exit 2), never silently ignored.
  parser.positional(positional);
  try {
    po::store(parser.run(), vm_);
  } catch (const po::too_many_positional_options_error&) {
    throw stray_word(args);
  } catch (const po::unknown_option& e) {
    // The closest flag of this command, as scenario keys get the closest key.
    std::vector<std::string> flags;
    for (const auto& option : listed_.options())
      if (!option->long_name().empty()) flags.push_back("--" + option->long_name());
    const std::string close = closest_match(e.get_option_name(), flags);
    throw InputError(e.get_option_name(), close.empty() ? std::string("unknown flag; see --help") : "unknown flag; did you mean " + close + "?");
  } catch (const po::invalid_option_value& e) {
    // Boost says only "is invalid": say what the flag takes (a value that reads as a number
    // but is refused can only be a fraction given to a whole-number flag).
    std::vector<std::string> spellings{e.get_option_name()};
    for (const auto& option : listed_.options())
      if ("--" + option->long_name() == e.get_option_name()) {
        const std::string short_name = option->canonical_display_name(po::command_line_style::allow_dash_for_short);
        if (short_name.size() == 2 && short_name[0] == '-') spellings.push_back(short_name);
      }
    const std::string value = e.get_option_name().empty() ? std::string() : vm_value_text(args, spellings);
    // A plain decimal (a sign allowed) that is still refused is too large for the flag when it
    // overflows or has no fraction or exponent, else a fraction given to a whole-number flag.
    const std::string digits = !value.empty() && (value[0] == '-' || value[0] == '+') ? value.substr(1) : value;
    const bool number = plain_decimal(digits);
    const bool overflows = number && !std::isfinite(std::strtod(value.c_str(), nullptr));
    const bool integral = number && value.find_first_of(".eE") == std::string::npos;
    throw InputError(e.get_option_name(), "\"" + value + "\" is " +
                                              (overflows || integral ? "out of range" : number ? "not a whole number" : "not a number") +
                                              "; see --help");
  } catch (const po::multiple_occurrences& e) {
    // The positional SCENARIO is the option --scenario: given both ways, say so in those words.
    if (takes_scenario_ && e.get_option_name() == "--scenario")
      throw InputError("SCENARIO", "given twice (as SCENARIO and as --scenario, or twice); give one scenario file");
    // Other positional arguments are options too (compare's --predicted, track's --metrics):
    // given both ways, or twice, say it in those words rather than Boost's.
    const bool positional_too = std::any_of(positionals_.begin(), positionals_.end(), [&](const Positional& p) {
      return e.get_option_name() == "--" + std::string(p.name);
    }) || (list_values_ != nullptr && e.get_option_name() == "--" + std::string(list_name_));
    throw InputError(e.get_option_name(), positional_too ? "given twice (as a positional argument and as the flag, or twice); give it once"
                                                         : "given twice; give it once");
  }
  po::notify(vm_);
  if (given("help")) {
    if (show_help) std::cout << listed_ << "\n";
    return Parsed::help_shown;
  }
  if (takes_scenario_ && scenario_path_.empty())
    throw InputError("SCENARIO", "give a scenario JSON file" + (scenario_example_.empty() ? "" : ", e.g. " + scenario_example_));
  if ((takes_scenario_ || scenario_file_flag_) && given("scenario") && scenario_path_.empty())
    throw InputError("--scenario", "is empty; give a scenario JSON file");
  return Parsed::run;
}

void CommandLine::add_variation_flags() {
  listed_.add_options()("straggler", po::value(&stragglers_)->composing(),
                        "RANK=FACTOR: this rank computes FACTOR times slower (repeatable; adds to the scenario's variation.stragglers)")
      ("jitter", po::value(&jitter_cv_), "CV: per-op compute jitter with this coefficient of variation (variation.compute_jitter.cv; lognormal unless the scenario names another distribution)")
      ("seed", po::value(&seed_), "N: the seed of the draws of the jitter and of the rank compute spread (variation.seed)");
}

std::vector<std::string> CommandLine::variation_args() const {
  std::vector<std::string> out;
  for (const std::string& s : stragglers_) out.insert(out.end(), {"--straggler", s});
  if (given("jitter")) {
    // The shortest text that reads back as the same double ("0.2", not "0.20000000000000001").
    char cv[32];
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(cv, sizeof cv, "%.*g", digits, jitter_cv_);
      if (std::strtod(cv, nullptr) == jitter_cv_) break;
    }
    out.insert(out.end(), {"--jitter", cv});
  }
  if (given("seed")) out.insert(out.end(), {"--seed", std::to_string(seed_)});
  return out;
}

Scenario CommandLine::load_scenario() const {
  nlohmann::json j = load_scenario_json(scenario_path_);
  apply_overrides(j, overrides_);
  if (stragglers_.empty() && !given("jitter") && !given("seed")) {
    const auto parent = std::filesystem::path(scenario_path_).parent_path();
    return parse_scenario(j, parent.empty() ? "." : parent.string());
  }
  if (!j.is_object()) return parse_scenario(j);  // the parser names what is wrong
  nlohmann::json& variation = j["variation"];
  if (variation.is_null()) variation = nlohmann::json::object();
  if (!variation.is_object()) return parse_scenario(j);
  // Each flag becomes the JSON it stands for; an error at one of those paths names the flag.
  std::vector<std::pair<std::string, std::string>> flag_paths;
  if (!stragglers_.empty()) {
    nlohmann::json& list = variation["stragglers"];
    if (list.is_null()) list = nlohmann::json::array();
    for (const std::string& s : stragglers_) {
      // RANK: decimal digits; FACTOR: a plain decimal number (1.5, 2, .5, 1e-2), not hex, signed,
      // nan or inf, which std::stod would take.
      const auto eq = s.find('=');
      const std::string rank_text = s.substr(0, eq == std::string::npos ? 0 : eq);
      const std::string factor_text = eq == std::string::npos ? "" : s.substr(eq + 1);
      // nan and inf (any case) read whole as non-finite: refused below as not finite, not as malformed.
      char* end = nullptr;
      const double factor = std::strtod(factor_text.c_str(), &end);  // 1e999: inf, refused below
      const bool not_finite_word = !factor_text.empty() && *end == '\0' && !std::isfinite(factor);
      // A signed factor is a number, only not one in range: said as such (the scenario's range).
      if (all_digits(rank_text) && factor_text.size() > 1 && (factor_text[0] == '-' || factor_text[0] == '+') &&
          plain_decimal(factor_text.substr(1)))
        throw InputError("--straggler", "\"" + s + "\": the factor must be a number in [0.001, 1000], written without a sign");
      if (!all_digits(rank_text) || !(plain_decimal(factor_text) || not_finite_word))
        throw InputError("--straggler", "\"" + s + "\" is not RANK=FACTOR, e.g. 3=1.5 (rank 3 computes 50% slower)");
      if (rank_text.size() > 9) throw InputError("--straggler", "\"" + s + "\": rank " + rank_text + " is out of range");
      const int rank = std::stoi(rank_text);
      if (!std::isfinite(factor))  // JSON has no NaN or infinity: it would read back as null
        throw InputError("--straggler", "\"" + s + "\": the factor must be a finite number in [0.001, 1000]");
      if (list.is_array()) flag_paths.emplace_back("variation.stragglers." + std::to_string(list.size()), "--straggler " + s);
      // A whole factor stays a JSON integer, so a message quotes it as given ("0", not "0.0").
      const nlohmann::json factor_json = all_digits(factor_text) && factor_text.size() <= 15
                                             ? nlohmann::json(std::stoll(factor_text))
                                             : nlohmann::json(factor);
      if (list.is_array()) list.push_back({{"rank", rank}, {"compute_factor", factor_json}});
    }
  }
  if (given("jitter")) {
    if (!std::isfinite(jitter_cv_)) throw InputError("--jitter", "the coefficient of variation must be a finite number");
    nlohmann::json& jitter = variation["compute_jitter"];
    if (jitter.is_null()) jitter = nlohmann::json::object();
    // A whole cv stays a JSON integer, so a message quotes it as given ("3", not "3.0").
    const bool whole = std::floor(jitter_cv_) == jitter_cv_ && std::fabs(jitter_cv_) < 1e15;
    if (jitter.is_object()) jitter["cv"] = whole ? nlohmann::json(static_cast<int64_t>(jitter_cv_)) : nlohmann::json(jitter_cv_);
    flag_paths.emplace_back("variation.compute_jitter.cv", "--jitter");
  }
  if (given("seed")) {
    variation["seed"] = seed_;
    flag_paths.emplace_back("variation.seed", "--seed");
  }
  // A seed with nothing to draw asked for anywhere is a mistake; with a cv of 0 (--jitter 0, or the
  // scenario's cv 0, as a sweep over the cv has) it is harmless, as in the scenario itself.
  const bool draws_asked = variation.contains("compute_jitter") || variation.contains("rank_compute_spread");
  Scenario scenario;
  try {
    const auto parent = std::filesystem::path(scenario_path_).parent_path();
    scenario = parse_scenario(j, parent.empty() ? "." : parent.string());
  } catch (const InputError& e) {
    for (const auto& [path, flag] : flag_paths)
      if (e.where() == path || e.where().rfind(path + ".", 0) == 0) throw InputError(flag, e.what());
    // An error of the whole list (factors naming one rank multiply out of range) with flags among
    // its entries is the flags' too.
    if (!stragglers_.empty() && e.where() == "variation.stragglers") throw InputError("--straggler", e.what());
    throw;
  }
  if (given("seed") && !draws_asked)
    throw InputError("--seed", "seeds the draws of a jitter or a rank compute spread, and neither is asked for (give --jitter CV, or the "
                               "scenario's variation.compute_jitter or variation.rank_compute_spread)");
  return scenario;
}

}  // namespace shardline::cli
