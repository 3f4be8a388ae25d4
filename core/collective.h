// The one table of collective traits (nccl-tests conventions), read by the scheduler, the
// simulator, the executors and the benchmarks alike. Nobody re-derives (n-1)/n elsewhere.
//
// S ("size") is the nccl-tests size: the output of an all-gather, the input of a
// reduce-scatter, the input (= output) of an all-reduce.
#pragma once
#include <cstdint>
#include <string_view>

namespace shardline {

enum class CollectiveKind { AllGather, ReduceScatter, AllReduce };

struct CollectiveTraits {
  CollectiveKind kind;
  std::string_view name;  // "all_gather", "reduce_scatter", "all_reduce"
  // Bytes each rank sends in / receives out for size S over n ranks.
  int64_t input_bytes(int64_t size_bytes, int n) const;
  int64_t output_bytes(int64_t size_bytes, int n) const;
  // nccl-tests bus-bandwidth factor: busbw = algbw * busbw_factor(n).
  double busbw_factor(int n) const;
  // Ring algorithm: number of latency hops and the fraction of S each rank moves over its link.
  double ring_hops(int n) const;
  double ring_bytes_fraction(int n) const;
};

const CollectiveTraits& collective_traits(CollectiveKind kind);

// Analytical ring cost (reference formulas): hops * alpha + fraction * S / B, in microseconds.
double ring_time_us(CollectiveKind kind, int64_t size_bytes, int n, double alpha_us, double bandwidth_bytes_per_s);

// nccl-tests bandwidths in GB/s (1e9 bytes/s) for a measured time.
double algbw_gbps(int64_t size_bytes, double time_us);
double busbw_gbps(CollectiveKind kind, int64_t size_bytes, int n, double time_us);

}  // namespace shardline
