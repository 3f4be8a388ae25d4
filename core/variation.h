// What differs between the ranks of a run, as a scenario's `variation` asks: a jitter on every
// compute op (a named distribution with its coefficient of variation), stragglers (a rank, a
// node or one shard / replicate group computing slower) and slow links (a rank's or a node's
// links carrying a fraction of their bandwidth). Deterministic from a seed: each draw is a hash
// of (seed, rank, iteration, op), so the simulator and a real run (exec) get the same factor for
// the same op whatever order they compute in. docs/scenario.md "variation".
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace shardline {

enum class JitterDistribution : uint8_t { LogNormal, Normal, Uniform };
std::string_view jitter_distribution_name(JitterDistribution d);  // "lognormal", "normal", "uniform"

// Which ranks an entry names. Node n: ranks n * gpus_per_node .. +gpus_per_node-1. Shard group k:
// ranks k * shard .. +shard-1 (one HSDP replica); replicate group k: ranks k, k + shard, ...
struct RankSelector {
  enum class Scope : uint8_t { Rank, Node, ShardGroup, ReplicateGroup };
  Scope scope = Scope::Rank;
  int index = 0;
  bool contains(int rank, int shard, int gpus_per_node) const;
};

struct Straggler {
  RankSelector ranks;
  double compute_factor = 1.0;  // > 0: its compute ops take this factor longer
};

struct SlowLink {
  RankSelector ranks;
  double bandwidth_factor = 1.0;  // in (0, 1]: its links carry this fraction of their bandwidth
};

struct VariationSpec {
  uint64_t seed = 0;
  JitterDistribution distribution = JitterDistribution::LogNormal;
  double jitter_cv = 0;  // coefficient of variation of the per-op compute factor (0: none)
  std::vector<Straggler> stragglers;
  std::vector<SlowLink> slow_links;
  bool empty() const { return jitter_cv == 0 && stragglers.empty() && slow_links.empty(); }
};

// Per rank of a shard x replicate mesh: the product of the stragglers' factors naming it (1: none).
std::vector<double> rank_compute_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node);
// Per rank: the product of the slow links' factors naming it (1: none).
std::vector<double> rank_bandwidth_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node);
// The jitter factor of compute op `op` of `iteration` on `rank`: mean 1, coefficient of variation
// v.jitter_cv, from v.distribution; 1 when jitter_cv is 0. Normal draws are clamped at
// kMinJitterFactor (a compute op never takes less than a tenth of its time).
double compute_jitter_factor(const VariationSpec& v, int rank, int iteration, int op);
inline constexpr double kMinJitterFactor = 0.1;
// The largest cv a uniform jitter may have (its factor 1 +- cv * sqrt(3) stays > 0).
inline constexpr double kMaxUniformCv = 0.57;

}  // namespace shardline
