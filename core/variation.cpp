#include "core/variation.h"
#include "core/invariant.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace shardline {
namespace {

// SplitMix64: a well-mixed 64-bit hash; chained over the draw's coordinates.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw in (0, 1) for (seed, rank, iteration, op, stream k).
double uniform(uint64_t seed, int rank, int iteration, int op, int k) {
  uint64_t h = mix(seed);
  for (int64_t part : {int64_t{rank}, int64_t{iteration}, int64_t{op}, int64_t{k}}) h = mix(h ^ static_cast<uint64_t>(part));
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

// A factor from `spread` at (seed, rank, iteration, op): mean 1, coefficient of variation spread.cv.
double draw(const Spread& spread, uint64_t seed, int rank, int iteration, int op) {
  if (spread.cv == 0) return 1.0;
  const double cv = spread.cv;
  const double u1 = uniform(seed, rank, iteration, op, 0);
  switch (spread.distribution) {
    case JitterDistribution::Uniform:
      return 1.0 + cv * std::sqrt(3.0) * (2.0 * u1 - 1.0);
    case JitterDistribution::Normal:
    case JitterDistribution::LogNormal: {
      // Box-Muller: a standard normal from two uniforms.
      const double u2 = uniform(seed, rank, iteration, op, 1);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      if (spread.distribution == JitterDistribution::Normal) return std::max(kMinJitterFactor, 1.0 + cv * z);
      // Mean 1 and coefficient of variation cv: sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2.
      const double sigma2 = std::log1p(cv * cv);
      return std::exp(-0.5 * sigma2 + std::sqrt(sigma2) * z);
    }
  }
  return 1.0;
}

template <typename Entry, typename Field>
std::vector<double> per_rank(const std::vector<Entry>& entries, Field field, int shard, int replicate, int gpus_per_node) {
  std::vector<double> factors(static_cast<size_t>(shard) * static_cast<size_t>(replicate), 1.0);
  for (size_t r = 0; r < factors.size(); ++r)
    for (const Entry& e : entries)
      if (e.ranks.contains(static_cast<int>(r), shard, gpus_per_node)) factors[r] *= e.*field;
  return factors;
}

}  // namespace

std::string_view jitter_distribution_name(JitterDistribution d) {
  switch (d) {
    case JitterDistribution::LogNormal: return "lognormal";
    case JitterDistribution::Normal: return "normal";
    case JitterDistribution::Uniform: return "uniform";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

bool RankSelector::contains(int rank, int shard, int gpus_per_node) const {
  switch (scope) {
    case Scope::Rank: return rank == index;
    case Scope::Node: return rank / gpus_per_node == index;
    case Scope::ShardGroup: return rank / shard == index;
    case Scope::ReplicateGroup: return rank % shard == index;
  }
  return false;
}

std::vector<double> rank_straggler_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node) {
  return per_rank(v.stragglers, &Straggler::compute_factor, shard, replicate, gpus_per_node);
}

std::vector<double> rank_compute_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node) {
  std::vector<double> factors = rank_straggler_factors(v, shard, replicate, gpus_per_node);
  if (v.rank_compute_spread.cv > 0)
    for (size_t r = 0; r < factors.size(); ++r) factors[r] *= rank_compute_spread_factor(v, static_cast<int>(r));
  return factors;
}

std::vector<double> rank_bandwidth_factors(const VariationSpec& v, int shard, int replicate, int gpus_per_node) {
  return per_rank(v.slow_links, &SlowLink::bandwidth_factor, shard, replicate, gpus_per_node);
}

double compute_jitter_factor(const VariationSpec& v, int rank, int iteration, int op) {
  return draw(v.jitter, v.seed, rank, iteration, op);
}

double rank_compute_spread_factor(const VariationSpec& v, int rank) { return draw(v.rank_compute_spread, v.seed, rank, 0, -1); }

}  // namespace shardline
