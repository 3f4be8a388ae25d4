#include "core/collective.h"
#include "core/invariant.h"


namespace shardline {

int64_t CollectiveTraits::input_bytes(int64_t size_bytes, int n) const {
  return kind == CollectiveKind::AllGather ? size_bytes / n : size_bytes;
}

int64_t CollectiveTraits::output_bytes(int64_t size_bytes, int n) const {
  return kind == CollectiveKind::ReduceScatter ? size_bytes / n : size_bytes;
}

double CollectiveTraits::busbw_factor(int n) const {
  SHARDLINE_CHECK(n >= 1, "a collective over fewer than one rank");
  const double ring = static_cast<double>(n - 1) / n;
  return kind == CollectiveKind::AllReduce ? 2.0 * ring : ring;
}

double CollectiveTraits::ring_hops(int n) const {
  return kind == CollectiveKind::AllReduce ? 2.0 * (n - 1) : static_cast<double>(n - 1);
}

double CollectiveTraits::ring_bytes_fraction(int n) const { return busbw_factor(n); }

const CollectiveTraits& collective_traits(CollectiveKind kind) {
  static const CollectiveTraits table[] = {
      {CollectiveKind::AllGather, "all_gather"},
      {CollectiveKind::ReduceScatter, "reduce_scatter"},
      {CollectiveKind::AllReduce, "all_reduce"},
  };
  return table[static_cast<int>(kind)];
}

double ring_time_us(CollectiveKind kind, int64_t size_bytes, int n, double alpha_us, double bandwidth_bytes_per_s) {
  if (n <= 1) return 0.0;
  const CollectiveTraits& t = collective_traits(kind);
  return t.ring_hops(n) * alpha_us + t.ring_bytes_fraction(n) * static_cast<double>(size_bytes) / bandwidth_bytes_per_s * 1e6;
}

double algbw_gbps(int64_t size_bytes, double time_us) { return static_cast<double>(size_bytes) / (time_us * 1e-6) / 1e9; }

double busbw_gbps(CollectiveKind kind, int64_t size_bytes, int n, double time_us) {
  return algbw_gbps(size_bytes, time_us) * collective_traits(kind).busbw_factor(n);
}

}  // namespace shardline
