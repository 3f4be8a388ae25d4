// What differs between the ranks of a run, as a scenario's `variation` asks: a jitter on every
// compute op and a spread of the ranks' own compute speeds (each a named distribution with its
// coefficient of variation), stragglers (a rank, a node or one shard / replicate group computing
// slower) and slow links (a rank's or a node's links carrying a fraction of their bandwidth).
// Deterministic from a seed: each draw is a hash of (seed, rank, iteration, op), so the simulator
// and a real run (exec) get the same factor for the same op whatever order they compute in.
// docs/scenario.md "variation".
#pragma once
#include <algorithm>
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
  bool operator==(const RankSelector&) const = default;
};

struct Straggler {
  RankSelector ranks;
  double compute_factor = 1.0;  // > 0: its compute ops take this factor longer
  bool operator==(const Straggler&) const = default;
};

struct SlowLink {
  RankSelector ranks;
  double bandwidth_factor = 1.0;  // in (0, 1]: its links carry this fraction of their bandwidth
  bool operator==(const SlowLink&) const = default;
};

// A factor drawn with mean 1 and coefficient of variation `cv` (0: always 1).
struct Spread {
  JitterDistribution distribution = JitterDistribution::LogNormal;
  double cv = 0;
  bool operator==(const Spread&) const = default;
};

struct VariationSpec {
  uint64_t seed = 0;
  Spread jitter;       // each compute op's factor, drawn per (rank, iteration, op)
  Spread rank_compute_spread;  // each rank's compute factor, drawn once per rank (chip-to-chip speed)
  std::vector<Straggler> stragglers;
  std::vector<SlowLink> slow_links;
  // Whether a straggler or a slow link acts: a factor of 1 does not (it is not recorded either).
  bool has_stragglers() const {
    return std::any_of(stragglers.begin(), stragglers.end(), [](const Straggler& s) { return s.compute_factor != 1.0; });
  }
  bool has_slow_links() const {
    return std::any_of(slow_links.begin(), slow_links.end(), [](const SlowLink& s) { return s.bandwidth_factor != 1.0; });
  }
  // Whether ranks get compute factors of their own (rank_compute_factors not all 1 by construction).
  bool sets_rank_compute_factors() const { return has_stragglers() || rank_compute_spread.cv > 0; }
  bool varies_compute() const { return jitter.cv > 0 || sets_rank_compute_factors(); }
  bool empty() const { return !varies_compute() && !has_slow_links(); }
  bool operator==(const VariationSpec&) const = default;
};

// Per rank of a shard x replicate mesh: the product of the stragglers' factors naming it (1: none).
std::vector<double> rank_straggler_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node);
// Per rank: its straggler factor times its own draw of v.rank_compute_spread (rank_compute_spread_factor).
std::vector<double> rank_compute_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node);
// Per rank: the product of the slow links' factors naming it (1: none).
std::vector<double> rank_bandwidth_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node);
// The jitter factor of compute op `op` of `iteration` on `rank`: mean 1, coefficient of variation
// v.jitter.cv, from v.jitter.distribution; 1 when that cv is 0. Normal draws are clamped at
// kMinJitterFactor (a compute op never takes less than a tenth of its time).
double compute_jitter_factor(const VariationSpec& v, int rank, int iteration, int op);
// `rank`'s own compute factor from v.rank_compute_spread, the same for every op and iteration: drawn
// like a jitter factor (same clamp), at coordinates no op's jitter uses (op -1).
double rank_compute_spread_factor(const VariationSpec& v, int rank);
inline constexpr double kMinJitterFactor = 0.1;
// The largest cv a uniform jitter may have (its factor 1 +- cv * sqrt(3) stays > 0).
inline constexpr double kMaxUniformCv = 0.57;
// The largest cv a normal jitter may have: the clamp at kMinJitterFactor raises the mean by
// cv x (phi(a) - a x Q(a)), a = 0.9 / cv: 0.7% at 0.5, 10% at 1, 43% at 2, where a "straggler
// cost" would mostly be the larger mean. Wider spreads are lognormal's (mean 1 at any cv).
inline constexpr double kMaxNormalCv = 0.5;

}  // namespace shardline
