#include "core/variation_record.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/units.h"

namespace shardline {
namespace jf = json_fields;

namespace {

nlohmann::json selector_to_json(const RankSelector& s) {
  switch (s.scope) {
    case RankSelector::Scope::Rank: return {{"rank", s.index}};
    case RankSelector::Scope::Node: return {{"node", s.index}};
    case RankSelector::Scope::ShardGroup: return {{"group", "shard"}, {"index", s.index}};
    case RankSelector::Scope::ReplicateGroup: return {{"group", "replicate"}, {"index", s.index}};
  }
  return {};
}

RankSelector selector_from_json(const nlohmann::json& j, const std::string& path) {
  RankSelector s;
  if (jf::has_member(j, "rank")) {
    s.index = jf::get_int32(j, "rank", path);
  } else if (jf::has_member(j, "node")) {
    s.scope = RankSelector::Scope::Node;
    s.index = jf::get_int32(j, "node", path);
  } else {
    const std::string group = jf::get_string(j, "group", path);
    if (group != "shard" && group != "replicate")
      throw InputError(jf::join_path(path, "group"), "expected \"shard\" or \"replicate\", found \"" + group + "\"");
    s.scope = group == "shard" ? RankSelector::Scope::ShardGroup : RankSelector::Scope::ReplicateGroup;
    s.index = jf::get_int32(j, "index", path);
  }
  if (s.index < 0) throw InputError(path, "names a negative index");
  return s;
}

std::string selector_text(const RankSelector& s) {
  switch (s.scope) {
    case RankSelector::Scope::Rank: return "rank " + std::to_string(s.index);
    case RankSelector::Scope::Node: return "node " + std::to_string(s.index);
    case RankSelector::Scope::ShardGroup: return "shard group " + std::to_string(s.index);
    case RankSelector::Scope::ReplicateGroup: return "replicate group " + std::to_string(s.index);
  }
  return "";
}

nlohmann::json spread_to_json(const Spread& s) {
  return {{"distribution", std::string(jitter_distribution_name(s.distribution))}, {"cv", s.cv}};
}

Spread spread_from_json(const nlohmann::json& j, const std::string& path) {
  Spread s;
  const std::string name = jf::get_string(j, "distribution", path);
  bool known = false;
  for (JitterDistribution d : {JitterDistribution::LogNormal, JitterDistribution::Normal, JitterDistribution::Uniform})
    if (name == jitter_distribution_name(d)) s.distribution = d, known = true;
  if (!known) throw InputError(jf::join_path(path, "distribution"), "unknown distribution \"" + name + "\"");
  s.cv = jf::get_number(j, "cv", path);
  if (!(s.cv > 0)) throw InputError(jf::join_path(path, "cv"), "must be > 0 (a spread of 0 is not recorded)");
  return s;
}

// Stragglers or slow links as the scenario writes them: each entry's ranks and its factor.
template <typename Entry>
nlohmann::json entries_to_json(const std::vector<Entry>& entries, const char* factor_key, double Entry::*factor) {
  nlohmann::json list = nlohmann::json::array();
  for (const Entry& e : entries) {
    nlohmann::json item = selector_to_json(e.ranks);
    item[factor_key] = e.*factor;
    list.push_back(std::move(item));
  }
  return list;
}

}  // namespace

VariationSpec acting_variation(const VariationSpec& v) {
  VariationSpec a;
  a.jitter = v.jitter.cv > 0 ? v.jitter : Spread{};
  a.rank_compute_spread = v.rank_compute_spread.cv > 0 ? v.rank_compute_spread : Spread{};
  a.seed = a.jitter.cv > 0 || a.rank_compute_spread.cv > 0 ? v.seed : 0;
  // A factor of 1 changes nothing.
  for (const Straggler& s : v.stragglers)
    if (s.compute_factor != 1.0) a.stragglers.push_back(s);
  for (const SlowLink& s : v.slow_links)
    if (s.bandwidth_factor != 1.0) a.slow_links.push_back(s);
  return a;
}

nlohmann::json variation_to_json(const VariationSpec& v) {
  const VariationSpec a = acting_variation(v);
  nlohmann::json j = nlohmann::json::object();
  if (a.jitter.cv > 0) j["compute_jitter"] = spread_to_json(a.jitter);
  if (a.rank_compute_spread.cv > 0) j["rank_compute_spread"] = spread_to_json(a.rank_compute_spread);
  if (a.jitter.cv > 0 || a.rank_compute_spread.cv > 0) j["seed"] = a.seed;
  if (!a.stragglers.empty()) j["stragglers"] = entries_to_json(a.stragglers, "compute_factor", &Straggler::compute_factor);
  if (!a.slow_links.empty()) j["slow_links"] = entries_to_json(a.slow_links, "bandwidth_factor", &SlowLink::bandwidth_factor);
  return j;
}

VariationSpec variation_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  VariationSpec v;
  if (jf::has_member(j, "compute_jitter")) v.jitter = spread_from_json(j.at("compute_jitter"), jf::join_path(path, "compute_jitter"));
  if (jf::has_member(j, "rank_compute_spread"))
    v.rank_compute_spread = spread_from_json(j.at("rank_compute_spread"), jf::join_path(path, "rank_compute_spread"));
  if (jf::has_member(j, "seed")) {
    const int64_t seed = jf::get_int(j, "seed", path);
    if (seed < 0) throw InputError(jf::join_path(path, "seed"), "must be >= 0");
    v.seed = static_cast<uint64_t>(seed);
  }
  const auto entries = [&](const char* key, auto add) {
    if (!jf::has_member(j, key)) return;
    const std::string list_path = jf::join_path(path, key);
    const nlohmann::json& list = jf::require_array(j.at(key), list_path);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string entry = jf::index_path(list_path, i);
      jf::require_object(list[i], entry);
      add(list[i], entry);
    }
  };
  entries("stragglers", [&](const nlohmann::json& e, const std::string& p) {
    const double f = jf::get_number(e, "compute_factor", p);
    if (!(f > 0)) throw InputError(jf::join_path(p, "compute_factor"), "must be > 0");
    v.stragglers.push_back({selector_from_json(e, p), f});
  });
  entries("slow_links", [&](const nlohmann::json& e, const std::string& p) {
    const double f = jf::get_number(e, "bandwidth_factor", p);
    if (!(f > 0 && f <= 1)) throw InputError(jf::join_path(p, "bandwidth_factor"), "must be in (0, 1]");
    v.slow_links.push_back({selector_from_json(e, p), f});
  });
  return v;
}

std::string variation_text(const VariationSpec& v) {
  const VariationSpec a = acting_variation(v);
  std::string out;
  const auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  for (const Straggler& s : a.stragglers) add("straggler " + selector_text(s.ranks) + " computes x" + number_text(s.compute_factor));
  for (const SlowLink& s : a.slow_links) add("slow links " + selector_text(s.ranks) + " at x" + number_text(s.bandwidth_factor) + " bandwidth");
  if (a.rank_compute_spread.cv > 0)
    add("rank compute spread " + std::string(jitter_distribution_name(a.rank_compute_spread.distribution)) + " cv " +
        number_text(a.rank_compute_spread.cv));
  if (a.jitter.cv > 0) add("jitter " + std::string(jitter_distribution_name(a.jitter.distribution)) + " cv " + number_text(a.jitter.cv));
  if (a.jitter.cv > 0 || a.rank_compute_spread.cv > 0) out += " (seed " + std::to_string(a.seed) + ")";
  return out.empty() ? "none" : out;
}

}  // namespace shardline
