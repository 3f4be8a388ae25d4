#include "core/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_load.h"
#include "core/program.h"
#include "core/statistics.h"
#include "core/suggest.h"
#include "core/units.h"
#include "core/invariant.h"

namespace shardline {

AlphaBeta fit_alpha_beta(const std::vector<int64_t>& sizes_bytes, const std::vector<double>& times_us) {
  SHARDLINE_CHECK(sizes_bytes.size() == times_us.size() && sizes_bytes.size() >= 2, "alpha-beta fit: one time per size, and two sizes at least");
  // Minimize sum w (alpha + beta S - t)^2 with w = 1/t^2: 2x2 normal equations.
  double sw = 0, sws = 0, swss = 0, swt = 0, swst = 0;
  for (size_t i = 0; i < sizes_bytes.size(); ++i) {
    const double s = static_cast<double>(sizes_bytes[i]);
    const double t = times_us[i];
    SHARDLINE_CHECK(t > 0, "alpha-beta fit: a time that is not positive");
    const double w = 1.0 / (t * t);
    sw += w;
    sws += w * s;
    swss += w * s * s;
    swt += w * t;
    swst += w * s * t;
  }
  const double det = sw * swss - sws * sws;
  SHARDLINE_CHECK(det > 0, "alpha-beta fit needs at least two distinct sizes");
  AlphaBeta fit;
  fit.beta_us_per_byte = (sw * swst - sws * swt) / det;
  fit.alpha_us = (swt - fit.beta_us_per_byte * sws) / sw;
  return fit;
}

double CollectiveTable::time_us(int64_t size_bytes) const {
  SHARDLINE_CHECK(!sizes_bytes.empty() && sizes_bytes.size() == times_us.size(), "a collective table without one time per size");
  if (size_bytes > sizes_bytes.back() && !(fit.beta_us_per_byte > 0)) {
    // Above the table only the fit's slope says how time grows with size; without a positive one
    // (a table of latency-bound sizes, or an edited file) the profile has no bandwidth to time
    // this size with. Refused: a larger collective came out faster than a smaller one (0 us).
    const std::string name(collective_traits(kind).name);
    throw InputError("--profile", "its " + name + " table over " + std::to_string(group_size) + " ranks ends at " +
                                      format_bytes(sizes_bytes.back()) +
                                      " and its fitted cost per byte (beta_us_per_byte) is not positive, so it cannot time a " +
                                      format_bytes(size_bytes) + " " + name + "; calibrate again with --max-bytes at least that size");
  }
  if (size_bytes < sizes_bytes.front() || size_bytes > sizes_bytes.back() || sizes_bytes.size() == 1) {
    return std::max(0.0, fit.alpha_us + fit.beta_us_per_byte * static_cast<double>(size_bytes));
  }
  const auto hi = std::lower_bound(sizes_bytes.begin(), sizes_bytes.end(), size_bytes);
  const size_t j = static_cast<size_t>(hi - sizes_bytes.begin());
  if (*hi == size_bytes) return times_us[j];
  const size_t i = j - 1;
  const double x0 = std::log(static_cast<double>(sizes_bytes[i])), x1 = std::log(static_cast<double>(sizes_bytes[j]));
  const double y0 = std::log(times_us[i]), y1 = std::log(times_us[j]);
  const double x = std::log(static_cast<double>(size_bytes));
  return std::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

const CollectiveTable* ClusterProfile::find(CollectiveKind kind, int group_size) const {
  for (const auto& t : collectives)
    if (t.kind == kind && t.group_size == group_size) return &t;
  return nullptr;
}

double ClusterProfile::collective_time_us(CollectiveKind kind, int64_t size_bytes, int group_size) const {
  if (group_size <= 1) return 0.0;
  const CollectiveTable* t = find(kind, group_size);
  if (!t) {
    throw InputError("--profile", "the profile has no " + std::string(collective_traits(kind).name) +
                                      " table for groups of " + std::to_string(group_size) +
                                      " ranks; calibrate with a rank count that forms such groups");
  }
  return t->time_us(size_bytes);
}

namespace {

CollectiveKind kind_from_name(const std::string& name, const std::string& where) {
  for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce})
    if (collective_traits(k).name == name) return k;
  throw InputError(where, "unknown collective \"" + name + "\"; expected all_gather, reduce_scatter or all_reduce");
}

template <typename T>
T get(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw InputError(where + "." + key, "missing");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(where + "." + key, "has the wrong type: " + j.at(key).dump());
  }
}

// A whole number of the profile in [lo, hi], quoted as the file has it when it is not (1e18 read
// as an int had wrapped to -2147483648 in the message).
int int_in(const nlohmann::json& j, const char* key, const std::string& where, int lo, int hi, const std::string& what) {
  if (!j.is_object() || !j.contains(key)) throw InputError(where + "." + key, "missing");
  const nlohmann::json& v = j.at(key);
  const double d = v.is_number() ? v.get<double>() : std::nan("");
  if (!(d >= lo && d <= hi && d == std::floor(d))) throw InputError(where + "." + key, v.dump() + " is not " + what);
  return static_cast<int>(d);
}

// Keys a profile's object may hold: any other is a typo or another file's, named with the closest.
void check_keys(const nlohmann::json& j, const std::string& where, const std::vector<std::string>& known) {
  if (!j.is_object()) return;  // the reader of the object says what it expected
  for (const auto& [key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw InputError(where + "." + key, "is not a key of a cluster profile;" + suggestion_tail(key, known));
}

}  // namespace

std::string profile_created_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double median_relative_spread(const std::vector<CollectiveTable>& tables) {
  std::vector<double> spreads;
  for (const CollectiveTable& t : tables) spreads.insert(spreads.end(), t.relative_spread.begin(), t.relative_spread.end());
  return median(std::move(spreads));
}

ClusterProfile median_of_passes(const std::vector<ClusterProfile>& passes) {
  if (passes.empty()) throw std::logic_error("median_of_passes: no pass");
  ClusterProfile m = passes.front();
  const auto median_over = [&](auto field) {
    std::vector<double> v;
    for (const ClusterProfile& p : passes) v.push_back(field(p));
    return median(std::move(v));
  };
  for (const ClusterProfile& p : passes) {
    bool same = p.collectives.size() == m.collectives.size() && p.units.empty() && m.units.empty();
    for (size_t t = 0; same && t < m.collectives.size(); ++t)
      same = p.collectives[t].kind == m.collectives[t].kind && p.collectives[t].group_size == m.collectives[t].group_size &&
             p.collectives[t].sizes_bytes == m.collectives[t].sizes_bytes &&
             p.collectives[t].relative_spread.size() == m.collectives[t].relative_spread.size();
    if (!same) throw std::logic_error("median_of_passes: the passes measured different tables");
  }
  for (size_t t = 0; t < m.collectives.size(); ++t) {
    CollectiveTable& table = m.collectives[t];
    for (size_t i = 0; i < table.sizes_bytes.size(); ++i)
      table.times_us[i] = median_over([&](const ClusterProfile& p) { return p.collectives[t].times_us[i]; });
    for (size_t i = 0; i < table.relative_spread.size(); ++i)
      table.relative_spread[i] = median_over([&](const ClusterProfile& p) { return p.collectives[t].relative_spread[i]; });
    if (table.sizes_bytes.size() >= 2) table.fit = fit_alpha_beta(table.sizes_bytes, table.times_us);
  }
  m.collective_noise = median_relative_spread(m.collectives);
  for (double ClusterProfile::*field :
       {&ClusterProfile::copy_bandwidth_bytes_per_s, &ClusterProfile::copy_latency_us,
        &ClusterProfile::issue_overhead_us, &ClusterProfile::comm_slowdown_during_compute,
        &ClusterProfile::compute_slowdown_during_comm, &ClusterProfile::copy_slowdown_during_comm,
        &ClusterProfile::comm_slowdown_during_copy, &ClusterProfile::event_latency_us, &ClusterProfile::compute_overhead_us})
    m.*field = median_over([&](const ClusterProfile& p) { return p.*field; });
  return m;
}

nlohmann::json profile_to_json(const ClusterProfile& p) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : p.collectives) {
    tables.push_back({{"collective", collective_traits(t.kind).name},
                      {"group_size", t.group_size},
                      {"sizes_bytes", t.sizes_bytes},
                      {"times_us", t.times_us},
                      {"alpha_us", t.fit.alpha_us},
                      {"beta_us_per_byte", t.fit.beta_us_per_byte}});
    if (!t.relative_spread.empty()) tables.back()["relative_spread"] = t.relative_spread;
  }
  nlohmann::json j = {{"format", "shardline-profile-1"},
          {"backend", p.backend},
          {"machine", p.machine},
          {"created", p.created},
          {"ranks", p.ranks},
          {"copy_bandwidth_bytes_per_s", p.copy_bandwidth_bytes_per_s},
          {"copy_latency_us", p.copy_latency_us},
          {"issue_overhead_us", p.issue_overhead_us},
          {"comm_slowdown_during_compute", p.comm_slowdown_during_compute},
          {"compute_slowdown_during_comm", p.compute_slowdown_during_comm},
          {"copy_slowdown_during_comm", p.copy_slowdown_during_comm},
          {"comm_slowdown_during_copy", p.comm_slowdown_during_copy},
          {"event_latency_us", p.event_latency_us},
          {"compute_overhead_us", p.compute_overhead_us},
          {"collective_noise", p.collective_noise},
          {"collectives", tables}};
  if (!p.units.empty()) {
    j["units"] = nlohmann::json::array();
    for (const UnitTimes& u : p.units) j["units"].push_back({{"name", u.name}, {"forward_us", u.forward_us}, {"backward_us", u.backward_us}});
  }
  return j;
}

namespace {

// Bounds of a profile's numbers: those of a scenario's (docs/scenario.md "Limits"), so that a
// corrupt or hand-edited profile is refused by name instead of running as a step of 1e300 us.
constexpr double kMaxProfileTimeUs = 3.6e9;      // a collective or a unit: an hour
constexpr double kMaxProfileOverheadUs = 1e6;    // latencies and per-op overheads: a second
constexpr double kMaxProfileRate = 1e18;         // bytes/s: 1 EB/s
constexpr double kMaxProfileSlowdown = 100;      // a factor
constexpr double kMaxProfileBetaUsPerByte = 1e6; // 1 B/s
constexpr int kMaxProfileGroupRanks = 1 << 20;

// A number of the profile in [lo, hi] (finite), else InputError naming its path.
double number_in(const nlohmann::json& j, const char* key, const std::string& where, double lo, double hi, const char* what) {
  const double v = get<double>(j, key, where);
  if (!(v >= lo && v <= hi)) throw InputError(where + "." + key, number_text(v) + " is out of range; expected " + what);
  return v;
}

}  // namespace

ClusterProfile profile_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("profile", "expected a JSON object");
  // A file with no format at all is most likely another kind of file (a scenario, a timeline):
  // say what a profile is rather than which of its keys is missing.
  if (!j.contains("format"))
    throw InputError("profile.format", "missing: this is not a cluster profile; expected the profile.json that "
                                       "`shardline calibrate` writes (\"format\": \"shardline-profile-1\")");
  if (get<std::string>(j, "format", "profile") != "shardline-profile-1")
    throw InputError("profile.format", "expected \"shardline-profile-1\"");
  check_keys(j, "profile", {"format", "backend", "machine", "created", "ranks", "copy_bandwidth_bytes_per_s", "copy_latency_us",
                            "issue_overhead_us", "comm_slowdown_during_compute", "compute_slowdown_during_comm",
                            "copy_slowdown_during_comm", "comm_slowdown_during_copy", "event_latency_us", "compute_overhead_us",
                            "collective_noise", "collectives", "units"});
  ClusterProfile p;
  p.backend = get<std::string>(j, "backend", "profile");
  if (p.backend != "mpi" && p.backend != "nccl")
    throw InputError("profile.backend", "\"" + p.backend + "\" is not a backend; expected \"mpi\" or \"nccl\"");
  if (j.contains("machine")) p.machine = get<std::string>(j, "machine", "profile");
  if (j.contains("created")) p.created = get<std::string>(j, "created", "profile");
  // Optional: profiles written before 2026-11-27 (twenty-seventh session) do not know it (0).
  if (j.contains("ranks")) p.ranks = int_in(j, "ranks", "profile", 0, kMaxProfileGroupRanks, "a rank count (0 to 1048576; 0: unknown)");
  // 0: not measured (a profile fitted on a zero-copy run, which copies nothing).
  p.copy_bandwidth_bytes_per_s = get<double>(j, "copy_bandwidth_bytes_per_s", "profile");
  if (p.copy_bandwidth_bytes_per_s != 0 && !(p.copy_bandwidth_bytes_per_s >= 1 && p.copy_bandwidth_bytes_per_s <= kMaxProfileRate))
    throw InputError("profile.copy_bandwidth_bytes_per_s", number_text(p.copy_bandwidth_bytes_per_s) +
                                                               " is out of range; expected a rate in [1, 1e18] bytes/s, or 0 for not measured");
  const char* overhead = "a time in [0, 1e6] us (a second)";
  if (j.contains("copy_latency_us")) p.copy_latency_us = number_in(j, "copy_latency_us", "profile", 0, kMaxProfileOverheadUs, overhead);
  p.issue_overhead_us = number_in(j, "issue_overhead_us", "profile", 0, kMaxProfileOverheadUs, overhead);
  for (auto [key, field] : {std::pair{"event_latency_us", &p.event_latency_us}, std::pair{"compute_overhead_us", &p.compute_overhead_us}})
    if (j.contains(key)) *field = number_in(j, key, "profile", 0, kMaxProfileOverheadUs, overhead);
  if (j.contains("collective_noise")) p.collective_noise = number_in(j, "collective_noise", "profile", 0, 1e6, "a finite number >= 0");
  const char* slowdown = "a slow-down factor in [1, 100] (1 = none)";
  p.comm_slowdown_during_compute = number_in(j, "comm_slowdown_during_compute", "profile", 1, kMaxProfileSlowdown, slowdown);
  p.compute_slowdown_during_comm = number_in(j, "compute_slowdown_during_comm", "profile", 1, kMaxProfileSlowdown, slowdown);
  for (auto [key, field] : {std::pair{"copy_slowdown_during_comm", &p.copy_slowdown_during_comm},
                            std::pair{"comm_slowdown_during_copy", &p.comm_slowdown_during_copy}}) {
    if (!j.contains(key)) {
      if (p.backend != "mpi") continue;  // mpi only: GPU copies keep their own time (stays 1)
      throw InputError(std::string("profile.") + key, "missing: profiles from before copies and collectives were measured side by side "
                                                      "(2026-11-26) lack it; run shardline calibrate again");
    }
    *field = number_in(j, key, "profile", 1, kMaxProfileSlowdown, slowdown);
  }
  const auto& tables = get<nlohmann::json>(j, "collectives", "profile");
  if (!tables.is_array()) throw InputError("profile.collectives", "expected an array");
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string where = "profile.collectives[" + std::to_string(i) + "]";
    check_keys(tables[i], where, {"collective", "group_size", "sizes_bytes", "times_us", "alpha_us", "beta_us_per_byte", "relative_spread"});
    CollectiveTable t;
    t.kind = kind_from_name(get<std::string>(tables[i], "collective", where), where + ".collective");
    t.group_size = int_in(tables[i], "group_size", where, 2, kMaxProfileGroupRanks, "a group of 2 to 1048576 ranks");
    if (const CollectiveTable* same = p.find(t.kind, t.group_size))
      throw InputError(where, "a second " + std::string(collective_traits(t.kind).name) + " table for groups of " + std::to_string(same->group_size) +
                                  " ranks; a profile has one per collective and group size");
    // Read as numbers and checked whole and in range: a float such as 1e30 does not fit an int64.
    for (double b : get<std::vector<double>>(tables[i], "sizes_bytes", where)) {
      if (!(b >= 1 && b <= 0x1p62 && b == std::floor(b)))
        throw InputError(where + ".sizes_bytes[" + std::to_string(t.sizes_bytes.size()) + "]",
                         number_text(b) + " is not a size; expected a whole number of bytes in [1, 2^62]");
      t.sizes_bytes.push_back(static_cast<int64_t>(b));
    }
    t.times_us = get<std::vector<double>>(tables[i], "times_us", where);
    t.fit.alpha_us = number_in(tables[i], "alpha_us", where, -kMaxProfileTimeUs, kMaxProfileTimeUs, "a time in [-3.6e9, 3.6e9] us");
    t.fit.beta_us_per_byte =
        number_in(tables[i], "beta_us_per_byte", where, -kMaxProfileBetaUsPerByte, kMaxProfileBetaUsPerByte, "a number in [-1e6, 1e6] us per byte");
    if (tables[i].contains("relative_spread")) {
      t.relative_spread = get<std::vector<double>>(tables[i], "relative_spread", where);
      if (t.relative_spread.size() != t.sizes_bytes.size())
        throw InputError(where + ".relative_spread", "needs one value per size");
      for (double s : t.relative_spread)
        if (!(s >= 0) || !std::isfinite(s)) throw InputError(where + ".relative_spread", "values must be finite and >= 0");
    }
    if (t.sizes_bytes.empty() || t.sizes_bytes.size() != t.times_us.size())
      throw InputError(where + ".times_us", "needs one time per size, and at least one size");
    for (size_t k = 0; k < t.sizes_bytes.size(); ++k) {
      if (!(t.times_us[k] > 0 && t.times_us[k] <= kMaxProfileTimeUs))
        throw InputError(where + ".times_us[" + std::to_string(k) + "]", number_text(t.times_us[k]) + " is out of range; expected a time in (0, 3.6e9] us");
      if (k > 0 && t.sizes_bytes[k] <= t.sizes_bytes[k - 1])
        throw InputError(where + ".sizes_bytes", "must be strictly ascending");
    }
    p.collectives.push_back(std::move(t));
  }
  if (j.contains("units")) {
    const auto& units = get<nlohmann::json>(j, "units", "profile");
    if (!units.is_array()) throw InputError("profile.units", "expected an array of {name, forward_us, backward_us}");
    for (size_t i = 0; i < units.size(); ++i) {
      const std::string where = "profile.units[" + std::to_string(i) + "]";
      check_keys(units[i], where, {"name", "forward_us", "backward_us"});
      UnitTimes u;
      u.name = get<std::string>(units[i], "name", where);
      const char* unit_time = "a time in [0, 3.6e9] us (an hour)";
      u.forward_us = number_in(units[i], "forward_us", where, 0, kMaxProfileTimeUs, unit_time);
      u.backward_us = number_in(units[i], "backward_us", where, 0, kMaxProfileTimeUs, unit_time);
      p.units.push_back(std::move(u));
    }
  }
  return p;
}

ClusterProfile load_profile(const std::string& path) {
  const nlohmann::json j = load_json_file(path, "--profile", kMaxInputJsonBytes);
  try {
    return profile_from_json(j);
  } catch (const InputError& e) {
    throw InputError("--profile", "\"" + path + "\": " + e.what());
  } catch (const nlohmann::json::exception&) {
    // Every field is read through get<> above; this is the net under it, without nlohmann's text.
    throw InputError("--profile", "\"" + path + "\": a field has the wrong type; expected a profile written by shardline calibrate");
  }
}

std::string profile_ranks_note(const ClusterProfile& profile, int world) {
  if (profile.ranks <= 0 || profile.ranks == world) return "";
  return "note: the profile was measured on " + std::to_string(profile.ranks) + " ranks and this run has " + std::to_string(world) +
         ": its times are those of " + std::to_string(profile.ranks) + " ranks, which can differ from " + std::to_string(world) +
         "'s (by a lot where ranks share a host's cores); a profile measured with " + std::to_string(world) + " ranks times this run";
}

std::vector<std::string> profile_reach_notes(const ClusterProfile& profile, const Program& program) {
  std::map<std::pair<CollectiveKind, int>, int64_t> largest;  // the Program's largest per (kind, group size)
  for (const Op& op : program.ops)
    if (is_collective(op.kind) && program.group_size(op) > 1) {
      int64_t& l = largest[{collective_kind(op.kind), program.group_size(op)}];
      l = std::max(l, op.bytes());
    }
  std::vector<std::string> notes;
  for (const auto& [key, bytes] : largest) {
    const CollectiveTable* table = profile.find(key.first, key.second);
    if (table == nullptr || table->sizes_bytes.empty()) continue;  // refused when simulated, naming the table
    const int64_t measured = table->sizes_bytes.back();
    const double factor = static_cast<double>(bytes) / static_cast<double>(measured);
    if (factor <= kProfileReachFactor) continue;
    char times[32];
    std::snprintf(times, sizeof times, "%.0fx", factor);
    notes.push_back("note: the Program's " + std::string(collective_traits(key.first).name) + "s over " + std::to_string(key.second) +
                    " ranks reach " + format_bytes(bytes) + ", " + times + " the largest size the profile measured (" +
                    format_bytes(measured) + "): their times come from its fit alone; calibrate with --max-bytes at least " +
                    format_bytes(bytes) + " to measure them");
  }
  return notes;
}

}  // namespace shardline
