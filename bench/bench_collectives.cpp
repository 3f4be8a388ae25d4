// Fused vs unfused vs zero-copy collectives (all-gather, reduce-scatter, all-reduce) over the
// exec Backend, nccl-tests style: per benchmark a parameter set scaled to one bucket size, run
//   unfused    one collective per parameter,
//   fused      copy-in into one flat buffer + one collective + copy-out (FSDP2's layout),
//   zero_copy  the parameters already live in the flat buffer: one collective.
// Counters: bytes (nccl-tests size S), collectives issued, algbw / busbw (GB/s, core/collective.h)
// and the copy time share. MPI-safe: fixed iteration counts, manual time = max over ranks,
// only rank 0 reports (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/error.h"
#include "core/units.h"
#include "exec/backend.h"
#include "exec/backend_factory.h"
#include "exec/host_comm.h"

namespace {

using namespace shardline;
using exec::Backend;
using exec::CollectiveArgs;
using exec::CopySpan;
using exec::HostWait;

constexpr int kWidth = 4;  // float32 payloads, as nccl-tests' default

// A parameter set: relative parameter sizes (element counts), scaled to each bucket size.
struct ParamSet {
  std::string name;
  std::vector<double> numel;
};

std::vector<ParamSet> param_sets() {
  // Transformer block shapes: q, k, v, o, gate, up, down, attention norm, MLP norm.
  auto block = [](const std::string& name, double hidden, double kv_dim, double ffn) {
    return ParamSet{name, {hidden * hidden, kv_dim * hidden, kv_dim * hidden, hidden * hidden, ffn * hidden,
                           ffn * hidden, hidden * ffn, hidden, hidden}};
  };
  return {block("llama3-8b", 4096, 1024, 14336),   // 32 heads, 8 KV heads of 128
          block("llama3-70b", 8192, 1024, 28672),  // 64 heads, 8 KV heads of 128
          ParamSet{"equal16", std::vector<double>(16, 1.0)}};
}

// Per-rank shard elements of each parameter for bucket size S over n ranks: the shards sum to
// T = floor(S / (width * n)), every parameter keeps at least one element per rank, and the
// rounding remainder goes to the largest parameter. So S_used = T * width * n.
std::vector<int64_t> shard_elements(const ParamSet& set, int64_t bucket_bytes, int n) {
  const int64_t total = bucket_bytes / (kWidth * n);
  double weight = 0;
  for (double w : set.numel) weight += w;
  std::vector<int64_t> shard(set.numel.size());
  int64_t sum = 0;
  size_t largest = 0;
  for (size_t i = 0; i < shard.size(); ++i) {
    shard[i] = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(total) * set.numel[i] / weight));
    sum += shard[i];
    if (set.numel[i] > set.numel[largest]) largest = i;
  }
  shard[largest] += total - sum;
  if (shard[largest] < 1) throw std::logic_error("bucket too small for parameter set " + set.name);
  return shard;
}

enum class Variant { Unfused, Fused, ZeroCopy };
const char* variant_name(Variant v) {
  return v == Variant::Unfused ? "unfused" : v == Variant::Fused ? "fused" : "zero_copy";
}

// One stream per collective kind (each pass runs on one), default priority; one communicator
// pattern: every rank.
const std::vector<StreamInfo> kBenchStreams = {{"all_gather", 0}, {"reduce_scatter", 0}, {"all_reduce", 0}};
constexpr int kWorldGroup = 0;

int stream_of(CollectiveKind k) {
  return k == CollectiveKind::AllGather ? 0 : k == CollectiveKind::ReduceScatter ? 1 : 2;
}

// Peak bytes one rank allocates for a benchmark (separate tensors + flat buffers).
int64_t bytes_needed(CollectiveKind k, Variant v, int64_t s_used, int n) {
  const int64_t shard = s_used / n;
  const bool ar = k == CollectiveKind::AllReduce;
  const int64_t tensors = ar ? s_used : s_used + shard;  // AG: shards + full; RS: full + shards
  if (v == Variant::Unfused) return tensors;
  if (v == Variant::ZeroCopy) return tensors;            // the flat buffers are the tensors
  return 2 * tensors;
}

struct BenchContext {
  Backend* backend = nullptr;
  std::optional<exec::HostComm> host;  // host-side barrier and max-reduction of times
  int pass = 0;
  bool smoke = false;
};
BenchContext g;

// Frees the host communicator and finalizes MPI; returns `exit_code`.
int finish(int exit_code) {
  g.host.reset();
  exec::finalize_mpi();
  return exit_code;
}

// Backend memory, zero-filled (zeros keep in-place sums finite), released on scope exit.
class Buffer {
 public:
  Buffer(Backend& b, int64_t bytes) : b_(b), p_(b.allocate(bytes)) {
    static const std::vector<char> zeros(1 << 22, 0);
    for (int64_t off = 0; off < bytes; off += static_cast<int64_t>(zeros.size()))
      b.upload(static_cast<char*>(p_) + off, zeros.data(), std::min<int64_t>(zeros.size(), bytes - off));
  }
  ~Buffer() { b_.release(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  Backend& b_;
  void* p_;
};

// One pass of ops on one stream: an optional copy-in, the collectives, an optional copy-out.
struct Pass {
  std::vector<CopySpan> copy_in, copy_out;
  std::vector<CollectiveArgs> collectives;
};

void enqueue(Backend& b, CollectiveKind kind, const Pass& p) {
  const int s = stream_of(kind);
  int op = 0;
  if (!p.copy_in.empty()) {
    b.begin_op(s, op);
    b.copy(s, p.copy_in);
    b.end_op(s, op++);
  }
  for (const CollectiveArgs& a : p.collectives) {
    b.begin_op(s, op);
    if (kind == CollectiveKind::AllGather) b.all_gather(s, kWorldGroup, a);
    else if (kind == CollectiveKind::ReduceScatter) b.reduce_scatter(s, kWorldGroup, a);
    else b.all_reduce(s, kWorldGroup, a);
    b.end_op(s, op++);
  }
  if (!p.copy_out.empty()) {
    b.begin_op(s, op);
    b.copy(s, p.copy_out);
    b.end_op(s, op++);
  }
}

int num_ops(const Pass& p) {
  return static_cast<int>(p.collectives.size()) + (p.copy_in.empty() ? 0 : 1) + (p.copy_out.empty() ? 0 : 1);
}

// Runs one pass; returns {this rank's time first op start -> last op end, copy time} in us.
std::pair<double, double> run_pass(Backend& b, CollectiveKind kind, const Pass& p) {
  const int n_ops = num_ops(p);
  b.begin_pass(g.pass++, n_ops);
  enqueue(b, kind, p);
  b.wait_op_host(n_ops - 1);
  const double total = b.op_times(n_ops - 1).end_us - b.op_times(0).start_us;
  double copy = 0;
  if (!p.copy_in.empty()) copy += b.op_times(0).end_us - b.op_times(0).start_us;
  if (!p.copy_out.empty()) copy += b.op_times(n_ops - 1).end_us - b.op_times(n_ops - 1).start_us;
  return {total, copy};
}

void bm_collective(benchmark::State& state, CollectiveKind kind, Variant variant, const ParamSet& set,
                   int64_t bucket_bytes) {
  Backend& b = *g.backend;
  const int n = b.world();
  const std::vector<int64_t> shard = shard_elements(set, bucket_bytes, n);
  const int P = static_cast<int>(shard.size());
  int64_t T = 0;
  std::vector<int64_t> off(P);  // element offset of each parameter inside a rank block
  for (int i = 0; i < P; ++i) off[i] = T, T += shard[i];
  const int64_t s_used = T * kWidth * n;
  const int64_t w = kWidth;

  // Separate tensors: `small` holds per-rank shards, `big` unsharded tensors (n * shard).
  // AG: small -> big; RS: big -> small; AR: big in place.
  const bool ag = kind == CollectiveKind::AllGather, rs = kind == CollectiveKind::ReduceScatter;
  const bool ar = !ag && !rs;
  Pass p;
  std::unique_ptr<Buffer> small, big, flat_in, flat_out;
  if (variant != Variant::ZeroCopy) {
    big = std::make_unique<Buffer>(b, s_used);
    if (!ar) small = std::make_unique<Buffer>(b, s_used / n);
  }
  auto small_at = [&](int i) { return small->get() + off[i] * w; };
  auto big_at = [&](int i, int r) { return big->get() + (n * off[i] + r * shard[i]) * w; };  // chunk r of param i
  if (variant == Variant::Unfused) {
    for (int i = 0; i < P; ++i) {
      CollectiveArgs a;
      a.width = kWidth;
      if (ag) a.in = small_at(i), a.out = big_at(i, 0), a.count = shard[i];
      if (rs) a.in = big_at(i, 0), a.out = small_at(i), a.count = shard[i];
      if (ar) a.in = a.out = big_at(i, 0), a.count = n * shard[i];
      p.collectives.push_back(a);
    }
  } else {
    // Flat buffers: a rank block is the parameters' shards back to back (FSDP2's layout).
    const int64_t in_bytes = ag ? s_used / n : s_used, out_bytes = rs ? s_used / n : s_used;
    flat_in = std::make_unique<Buffer>(b, in_bytes);
    if (!ar) flat_out = std::make_unique<Buffer>(b, out_bytes);
    CollectiveArgs a;
    a.width = kWidth;
    a.in = flat_in->get();
    a.out = ar ? flat_in->get() : flat_out->get();
    a.count = ar ? n * T : T;
    p.collectives.push_back(a);
    if (variant == Variant::Fused) {
      for (int i = 0; i < P; ++i) {
        if (ag) p.copy_in.push_back({flat_in->get() + off[i] * w, small_at(i), shard[i] * w});
        if (rs) p.copy_out.push_back({small_at(i), flat_out->get() + off[i] * w, shard[i] * w});
        if (ar) {
          p.copy_in.push_back({flat_in->get() + n * off[i] * w, big_at(i, 0), n * shard[i] * w});
          p.copy_out.push_back({big_at(i, 0), flat_in->get() + n * off[i] * w, n * shard[i] * w});
        }
      }
      for (int r = 0; r < n && !ar; ++r)
        for (int i = 0; i < P; ++i) {
          char* flat = (ag ? flat_out : flat_in)->get() + (r * T + off[i]) * w;
          if (ag) p.copy_out.push_back({big_at(i, r), flat, shard[i] * w});
          if (rs) p.copy_in.push_back({flat, big_at(i, r), shard[i] * w});
        }
    }
  }

  g.host->barrier(HostWait::Blocking);
  run_pass(b, kind, p);  // warm-up: first touch of MPI's paths, not timed
  double sum_total_us = 0, sum_copy_us = 0;
  for (auto _ : state) {
    g.host->barrier(HostWait::Blocking);
    const auto [total_us, copy_us] = run_pass(b, kind, p);
    double slowest[2] = {total_us, copy_us};
    g.host->max_over_ranks(slowest);
    state.SetIterationTime(slowest[0] * 1e-6);
    sum_total_us += slowest[0];
    sum_copy_us += slowest[1];
  }
  const double mean_us = sum_total_us / static_cast<double>(state.iterations());
  state.counters["bytes"] = static_cast<double>(s_used);
  state.counters["collectives"] = static_cast<double>(p.collectives.size());
  state.counters["params"] = P;
  state.counters["ranks"] = n;
  state.counters["algbw_GBps"] = algbw_gbps(s_used, mean_us);
  state.counters["busbw_GBps"] = busbw_gbps(kind, s_used, n, mean_us);
  state.counters["copy_share"] = sum_total_us > 0 ? sum_copy_us / sum_total_us : 0.0;
}

// Fixed iteration count (every rank runs the same number): about 1 GiB moved, 5..200.
int iterations_for(int64_t bucket_bytes) {
  if (g.smoke) return 2;
  return static_cast<int>(std::clamp<int64_t>((int64_t{1} << 30) / bucket_bytes, 5, 200));
}

// Non-zero ranks report nothing.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  exec::init_mpi();
  g.host.emplace(exec::HostComm::duplicate_world());
  const int rank = g.host->rank();

  // Non-zero ranks must never open --benchmark_out (it would truncate rank 0's file): the last
  // flag wins in Google Benchmark's parser, so they get an empty one appended.
  std::vector<char*> args(argv, argv + argc);
  std::string no_out = "--benchmark_out=";
  if (rank != 0) args.push_back(no_out.data());
  int n_args = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n_args, args.data());

  namespace po = boost::program_options;
  po::options_description desc("shardline_bench options (besides Google Benchmark's --benchmark_*)");
  std::string min_text = "64KiB", max_text = "256MiB", backend_name = "mpi";
  desc.add_options()("help", "this text")(
      "smoke", "one bucket size (64 KiB) and 2 iterations per benchmark: a quick check, not a measurement")(
      "min-bucket", po::value(&min_text), "smallest bucket size (default 64KiB)")(
      "max-bucket", po::value(&max_text), "largest bucket size (default 256MiB); sizes are powers of two")(
      "backend", po::value(&backend_name), "mpi (default: CPU processes) or nccl (one GPU per rank; times from CUDA events)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(n_args, args.data(), desc), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << "shardline_bench: " << e.what() << "\n" << desc;
    return finish(2);
  }
  if (vm.count("help")) {
    if (rank == 0) std::cout << desc;
    return finish(0);
  }
  g.smoke = vm.count("smoke") > 0;
  const char* smoke_env = std::getenv("SHARDLINE_BENCH_SMOKE");
  if (smoke_env != nullptr && std::string(smoke_env) == "1") g.smoke = true;
  int64_t min_bucket = 0, max_bucket = 0;
  try {
    min_bucket = parse_bytes(min_text, "--min-bucket");
    max_bucket = parse_bytes(max_text, "--max-bucket");
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << "shardline_bench: " << e.what() << "\n";
    return finish(2);
  }
  if (g.smoke) min_bucket = max_bucket = 64 << 10;
  // The sizes measured: 64 KiB times powers of two within [min, max]. None is a mistake, not an
  // empty run (Google Benchmark would only say that no benchmark matched ".").
  std::vector<int64_t> buckets;
  for (int64_t bucket = 64 << 10; bucket <= max_bucket; bucket *= 2)
    if (bucket >= min_bucket) buckets.push_back(bucket);
  if (buckets.empty()) {
    if (rank == 0)
      std::cerr << "shardline_bench: --max-bucket: no bucket size (64 KiB times a power of two) lies in [" << min_text << ", "
                << max_text << "]; give --max-bucket at least --min-bucket and at least 64KiB\n";
    return finish(2);
  }

  {
    // Collectives measured alone: their waiters spin (no polling delay in the figures) unless
    // SHARDLINE_MPI_POLL_US asks for what `shardline exec` does.
    std::unique_ptr<Backend> backend;
    try {
      backend = exec::make_backend(backend_name, exec::MpiStreamWait::Spin);
    } catch (const InputError& e) {
      if (rank == 0) std::cerr << "shardline_bench: " << e.what() << "\n";
      return finish(2);
    }
    backend->on_fatal = [](const std::string& what) {
      std::cerr << "shardline_bench: " << what << std::endl;
      exec::abort_job(3);
    };
    g.backend = backend.get();
    const int n = backend->world();
    backend->create_streams(kBenchStreams);
    for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce})
      backend->create_communicator(stream_of(k), kWorldGroup, GroupInfo{"world", n, 1});

    // Every rank registers the same list: sizes that fit the smallest rank's memory, with half
    // of MemAvailable (per local rank) kept free for MPI and the system.
    const int64_t budget = g.host->min_over_ranks(backend->available_bytes()) / 2;
    std::vector<std::string> left_out;
    static const std::vector<ParamSet> sets = param_sets();
    for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce})
      for (Variant v : {Variant::Unfused, Variant::Fused, Variant::ZeroCopy})
        for (const ParamSet& set : sets)
          for (const int64_t bucket : buckets) {
            const std::string name = backend->name() + "/" + std::string(collective_traits(k).name) + "/" +
                                     variant_name(v) + "/" + set.name + "/" + std::to_string(bucket);
            const int64_t s_used = bucket / (kWidth * n) * kWidth * n;
            if (bytes_needed(k, v, s_used, n) > budget) {
              left_out.push_back(name);
              continue;
            }
            benchmark::RegisterBenchmark(name.c_str(), bm_collective, k, v, set, bucket)
                ->Iterations(iterations_for(bucket))
                ->UseManualTime()
                ->Unit(benchmark::kMicrosecond);
          }
    if (rank == 0) {
      std::cout << "shardline_bench: backend " << backend->name() << ", " << n << " ranks, memory budget "
                << format_bytes(budget) << " per rank (half of the smallest MemAvailable share)\n";
      if (!left_out.empty()) {
        std::cout << "shardline_bench: " << left_out.size() << " benchmarks left out (do not fit the budget):";
        for (const auto& s : left_out) std::cout << ' ' << s;
        std::cout << "\n";
      }
      std::cout << std::flush;
    }
    // Their messages too ("Failed to match any benchmarks ..." is the display reporter's error
    // stream's): rank 0 says it once.
    NullReporter null_reporter;
    std::ostream nowhere(nullptr);
    null_reporter.SetOutputStream(&nowhere);
    null_reporter.SetErrorStream(&nowhere);
    if (rank == 0) benchmark::RunSpecifiedBenchmarks();
    else benchmark::RunSpecifiedBenchmarks(&null_reporter);
    benchmark::Shutdown();
    g.host->barrier(HostWait::Blocking);
  }
  return finish(0);
}
