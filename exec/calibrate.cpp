#include "exec/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/statistics.h"
#include "core/timeline.h"
#include "exec/exec.h"
#include "exec/host_comm.h"

namespace shardline::exec {
namespace {


// The streams calibrate measures on: compute, copies, and one per collective kind, at the
// priorities a training step gives them (copies and the all-gather / reduce-scatter streams
// ahead of compute), so measured costs are those of a step's streams.
enum CalibrationStream { kComputeStream, kCopyStream, kAllGatherStream, kReduceScatterStream, kAllReduceStream };
const std::vector<StreamInfo> kCalibrationStreams = {
    {"compute", 0}, {"copy", -1}, {"all_gather", -1}, {"reduce_scatter", -1}, {"all_reduce", 0}};
constexpr int kMeasuredGroup = 0;  // the one communicator pattern: contiguous groups of group_size

int stream_of(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather: return kAllGatherStream;
    case CollectiveKind::ReduceScatter: return kReduceScatterStream;
    case CollectiveKind::AllReduce: return kAllReduceStream;
  }
  return kAllReduceStream;
}

constexpr int kWidth = 4;  // float32 payloads

// Each measured copy reads and writes the next unused stretch of two pools of at least this many
// bytes, so a repetition never finds its data in cache from the previous one. A real step's
// ops touch distinct buffers (exec/plan.h); cache-hot repetitions measured copies about twice
// as fast as a step runs them on this project's 2-core machine.
constexpr int64_t kColdPoolBytes = int64_t{64} << 20;

// Collectives cycle over at most this many fixed slots of the pools, and every slot is used once
// unmeasured before a point is measured. A step runs each collective on the same buffers every
// iteration, after warm-up iterations; a buffer that a collective has never used can cost far
// more: on a 2-vCPU AMD EPYC VM with Open MPI 4.1 (shared memory with CMA single copy), a 3 MiB
// all-gather over 2 ranks took 2.3-2.9 ms on a buffer's first use and 0.45-0.7 ms on its later
// uses, also with 128 MiB of slots (no cache reuse), while a step ran it in 0.6-1.1 ms.
// Calibrating on never-used stretches predicted that step 2x too slow.
constexpr int64_t kCollectiveSlots = 16;

// The copy measured beside all-gathers (measure_copy_slowdowns): the size of a step's larger
// copy-ins and copy-outs on the host scenarios, about a millisecond on the 2-vCPU VM.
constexpr int64_t kCopySlowdownBytes = int64_t{8} << 20;

// One backend with a communicator per collective stream for contiguous groups of `group_size`,
// and an input and an output pool of max(`buffer_bytes`, kColdPoolBytes) each.
class Bench {
 public:
  Bench(std::unique_ptr<Backend> backend, const HostComm& host, int group_size, int64_t buffer_bytes, int warmup, int reps)
      : b_(std::move(backend)), host_(host), group_size_(group_size), warmup_(warmup), reps_(reps) {
    buffer_bytes = std::max(buffer_bytes, kColdPoolBytes);
    pool_bytes_ = buffer_bytes;
    b_->create_streams(kCalibrationStreams);
    for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce})
      b_->create_communicator(stream_of(k), kMeasuredGroup, GroupInfo{"measured", group_size, 1});
    in_ = b_->allocate(buffer_bytes);
    out_ = b_->allocate(buffer_bytes);
    const std::vector<char> zeros(static_cast<size_t>(buffer_bytes), 0);  // no NaNs or denormals in sums
    b_->upload(in_, zeros.data(), buffer_bytes);
    b_->upload(out_, zeros.data(), buffer_bytes);
  }
  ~Bench() {
    b_->synchronize();
    b_->release(in_);
    b_->release(out_);
  }
  Backend& backend() { return *b_; }
  int warmup() const { return warmup_; }
  // Copies of up to `copy_bytes` from now on use the pools from `floor` on, clear of the
  // collectives' slots below it (measure_copy_slowdowns runs both at once: a step's copies and
  // collectives touch different buffers), where the pools have room above it; 0: the whole pools.
  void set_copy_floor(int64_t floor, int64_t copy_bytes = 0) {
    copy_floor_ = floor + page_aligned(copy_bytes) <= pool_bytes_ ? floor : 0;
  }
  int64_t collective_region_bytes(int64_t bytes) const { return collective_slots(bytes) * page_aligned(bytes); }
  // How many slots collectives of `bytes` cycle over (kCollectiveSlots at most, as many as the
  // pools hold): the unmeasured uses a point needs first.
  int collective_slots(int64_t bytes) const {
    return static_cast<int>(std::clamp<int64_t>(pool_bytes_ / page_aligned(bytes), 1, kCollectiveSlots));
  }

  // Repetitions of one pass of `nops` ops: `enqueue` issues them, `measure` reads this rank's
  // value once the streams drained; each repetition keeps the max over ranks.
  // `warmup`: unmeasured repetitions (default: the --warmup option).
  std::vector<double> repeat(int nops, const std::function<void()>& enqueue, const std::function<double()>& measure,
                             int warmup = -1) {
    if (warmup < 0) warmup = warmup_;
    std::vector<double> values;
    for (int r = 0; r < warmup + reps_; ++r) {
      const double worst = one_pass(nops, enqueue, measure);
      if (r >= warmup) values.push_back(worst);
    }
    return values;
  }

  // Repetitions of two passes back to back, `a` then `b`, each as `repeat` runs one: pairs
  // measured moments apart, so a drift of the machine's speed during calibration (other tenants,
  // clock frequency) falls on both sides of a pair instead of into a ratio of separate medians.
  std::vector<std::pair<double, double>> repeat_pairs(int nops_a, const std::function<void()>& enqueue_a,
                                                      const std::function<double()>& measure_a, int nops_b,
                                                      const std::function<void()>& enqueue_b,
                                                      const std::function<double()>& measure_b) {
    std::vector<std::pair<double, double>> pairs;
    for (int r = 0; r < warmup_ + reps_; ++r) {
      const double a = one_pass(nops_a, enqueue_a, measure_a);
      const double b = one_pass(nops_b, enqueue_b, measure_b);
      if (r >= warmup_) pairs.emplace_back(a, b);
    }
    return pairs;
  }

  // One pass: barrier, enqueue, drain; this rank's value, maxed over ranks.
  double one_pass(int nops, const std::function<void()>& enqueue, const std::function<double()>& measure) {
    b_->begin_pass(++pass_, nops);
    host_.barrier(HostWait::Polling);
    enqueue();
    b_->synchronize();
    return host_.max_over_ranks(measure(), HostWait::Polling);
  }

  double duration_us(int op) {
    const OpTimes t = b_->op_times(op);
    return t.end_us - t.start_us;
  }

  void collective(int op, CollectiveKind kind, int64_t size_bytes) {
    const int s = stream_of(kind);
    const int n = group_size_;
    CollectiveArgs a;
    const int64_t at = next_collective_offset(size_bytes);
    a.in = static_cast<char*>(in_) + at;
    a.out = static_cast<char*>(out_) + at;
    a.width = kWidth;
    b_->begin_op(s, op);
    switch (kind) {
      case CollectiveKind::AllGather:
        a.count = size_bytes / n / kWidth;
        b_->all_gather(s, kMeasuredGroup, a);
        break;
      case CollectiveKind::ReduceScatter:
        a.count = size_bytes / n / kWidth;
        b_->reduce_scatter(s, kMeasuredGroup, a);
        break;
      case CollectiveKind::AllReduce:
        a.count = size_bytes / kWidth;
        b_->all_reduce(s, kMeasuredGroup, a);
        break;
    }
    b_->end_op(s, op);
  }

  void copy(int op, int64_t bytes) {
    b_->begin_op(kCopyStream, op);
    const int64_t at = next_offset(bytes);
    b_->copy(kCopyStream, {CopySpan{static_cast<char*>(out_) + at, static_cast<char*>(in_) + at, bytes}});
    b_->end_op(kCopyStream, op);
  }

  void compute(int op, double us, ComputeMode mode) {
    b_->begin_op(kComputeStream, op);
    b_->compute(kComputeStream, us, mode);
    b_->end_op(kComputeStream, op);
  }

 private:
  // Where the next op's `bytes` start in both pools: just past the previous op's, page
  // aligned, wrapping to copy_floor_ when the rest of the pool is too short.
  int64_t next_offset(int64_t bytes) {
    if (cursor_ < copy_floor_ || cursor_ + bytes > pool_bytes_) cursor_ = copy_floor_;
    const int64_t at = cursor_;
    cursor_ += page_aligned(bytes);
    return at;
  }

  // The slot the next collective of `bytes` uses: its size's slots in turn, page aligned.
  int64_t next_collective_offset(int64_t bytes) {
    if (bytes != slot_bytes_) {
      slot_bytes_ = bytes;
      slot_ = 0;
    }
    return (slot_++ % collective_slots(bytes)) * page_aligned(bytes);
  }
  static int64_t page_aligned(int64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

 private:
  std::unique_ptr<Backend> b_;
  int64_t pool_bytes_ = 0;
  int64_t cursor_ = 0;
  int64_t copy_floor_ = 0;  // copies stay at or above this offset (set_copy_floor)
  int64_t slot_bytes_ = -1;
  int64_t slot_ = 0;
  const HostComm& host_;
  int group_size_;
  int warmup_, reps_;
  int pass_ = 0;
  void* in_ = nullptr;
  void* out_ = nullptr;
};

std::string fmt_bytes(int64_t b) {
  std::ostringstream o;
  if (b >= (1 << 20) && b % (1 << 20) == 0) o << b / (1 << 20) << " MiB";
  else if (b >= 1024 && b % 1024 == 0) o << b / 1024 << " KiB";
  else o << b << " B";
  return o.str();
}

// Rank 0's progress lines (CalibrateOptions::log); nothing on the other ranks.
using ProgressLog = std::function<void(const std::string&)>;

}  // namespace

void check_calibrate_options(const CalibrateOptions& opt, int world) {
  if (opt.min_bytes < 1) throw InputError("--min-bytes", "must be at least 1 byte");
  if (opt.max_bytes < opt.min_bytes) throw InputError("--max-bytes", "must be at least --min-bytes");
  // Bounded so that a typo cannot start a calibration that runs for days (10^8 repetitions did):
  // the defaults are 10 repetitions and 1 pass (validate: 3).
  check_count_in(opt.repetitions, 1, kMaxCalibrateRepetitions, "--repetitions");
  check_warmup_count(opt.warmup, "--warmup");
  check_count_in(opt.passes, 1, kMaxCalibratePasses, "--passes");
  if (calibration_group_sizes(world).empty())
    throw InputError("--np", "this run has " + std::to_string(world) + (world == 1 ? " rank" : " ranks") +
                                 "; calibration needs at least 2 (collectives over groups of >= 2): give --np 2 or more, or run it "
                                 "under mpirun -n 2 or more");
  // Before memory lowers the largest size: sizes are multiples of world x element width.
  const int64_t granularity = static_cast<int64_t>(world) * kWidth;
  const int64_t max_bytes = std::max(opt.max_bytes, granularity);
  if (calibration_sizes(std::min(opt.min_bytes, max_bytes), max_bytes, granularity).size() < 2)
    throw InputError("--max-bytes", "leaves fewer than two sizes to measure; raise it");
}

namespace {

// The collective sizes to measure, multiples of `granularity`: --min-bytes up to --max-bytes,
// the largest lowered to what the smallest rank's memory allows.
std::vector<int64_t> collective_sizes_that_fit(Backend& backend, const HostComm& host, const CalibrateOptions& opt,
                                               int64_t granularity, const ProgressLog& log) {
  int64_t max_bytes = std::max(opt.max_bytes, granularity);
  // Two buffers of S bytes per rank, and a margin: lower the largest size to what fits.
  const int64_t avail = host.min_over_ranks(backend.available_bytes() / 4);
  if (avail > 0 && max_bytes > avail) {
    log("lowering --max-bytes to " + fmt_bytes(avail) + " (memory)");
    max_bytes = avail;
  }
  std::vector<int64_t> sizes = calibration_sizes(std::min(opt.min_bytes, max_bytes), max_bytes, granularity);
  if (sizes.size() < 2 && max_bytes < opt.max_bytes)  // memory lowered it: raising it cannot help
    throw InputError("--min-bytes", "leaves fewer than two sizes below the " + fmt_bytes(max_bytes) + " memory allows; lower it");
  if (sizes.size() < 2) throw InputError("--max-bytes", "leaves fewer than two sizes to measure; raise it");
  return sizes;
}

// One collective over the bench's groups at every size: median times and their alpha-beta fit.
CollectiveTable measure_collective_table(Bench& bench, CollectiveKind kind, int group_size,
                                         const std::vector<int64_t>& sizes) {
  CollectiveTable t;
  t.kind = kind;
  t.group_size = group_size;
  for (int64_t s : sizes) {
    // Every slot once unmeasured (and at least --warmup repetitions), as a step's warm-up
    // iterations use its buffers before the measured ones.
    std::vector<double> samples = bench.repeat(
        1, [&] { bench.collective(0, kind, s); }, [&] { return bench.duration_us(0); },
        std::max(bench.warmup(), bench.collective_slots(s)));
    const double us = median(samples);
    t.sizes_bytes.push_back(s);
    t.times_us.push_back(std::max(us, 1e-3));
    t.relative_spread.push_back(relative_spread(std::move(samples)));
  }
  t.fit = fit_alpha_beta(t.sizes_bytes, t.times_us);
  return t;
}

// The progress line of a measured table: sizes, first and last time, the fit.
std::string describe_collective_table(const CollectiveTable& t) {
  std::ostringstream line;
  line << collective_traits(t.kind).name << " over " << t.group_size << " ranks: " << t.sizes_bytes.size() << " sizes, "
       << fmt_bytes(t.sizes_bytes.front()) << " " << t.times_us.front() << " us .. " << fmt_bytes(t.sizes_bytes.back())
       << " " << t.times_us.back() << " us; alpha " << t.fit.alpha_us << " us, "
       << (t.fit.beta_us_per_byte > 0 ? 1.0 / t.fit.beta_us_per_byte / 1e3 : 0) << " GB/s";
  // Latency-bound sizes only (a small --max-bytes on a noisy machine): the fit has no bandwidth,
  // and a run's larger collectives cannot be timed with the profile (core/profile.cpp refuses).
  if (!(t.fit.beta_us_per_byte > 0))
    line << " (no positive cost per byte: every size was latency-bound; collectives above " << fmt_bytes(t.sizes_bytes.back())
         << " cannot be timed with this profile: raise --max-bytes)";
  return line.str();
}

// Copy latency and bandwidth: copies from max(min_bytes, 4 KiB) up to max_bytes, fitted.
void measure_copy_cost(Bench& bench, int64_t min_bytes, int64_t max_bytes, ClusterProfile& p, const ProgressLog& log) {
  std::vector<int64_t> copy_sizes;
  std::vector<double> copy_us;
  for (int64_t s : calibration_sizes(std::max<int64_t>(min_bytes, 4096), max_bytes, kWidth)) {
    copy_sizes.push_back(s);
    copy_us.push_back(
        std::max(1e-3, median(bench.repeat(1, [&] { bench.copy(0, s); }, [&] { return bench.duration_us(0); }))));
  }
  const AlphaBeta fit = copy_sizes.size() >= 2 ? fit_alpha_beta(copy_sizes, copy_us)
                                               : AlphaBeta{0, copy_us.back() / static_cast<double>(copy_sizes.back())};
  p.copy_latency_us = std::max(0.0, fit.alpha_us);
  p.copy_bandwidth_bytes_per_s = fit.beta_us_per_byte > 0 ? 1e6 / fit.beta_us_per_byte
                                                          : static_cast<double>(copy_sizes.back()) / copy_us.back() * 1e6;
  // Said when the fit was not used as it came out (docs/calibrate.md, "The α-β fit"): a reader of the
  // profile otherwise cannot tell a measured 0 us latency from a clamped one.
  const std::string adjusted = copy_sizes.size() < 2   ? " (one size: latency 0, bandwidth = size / time)"
                               : fit.beta_us_per_byte <= 0 ? " (the fit's bandwidth was not positive: largest size / its time)"
                               : fit.alpha_us < 0          ? " (the fit's latency was negative: set to 0)"
                                                           : "";
  log("copy: latency " + std::to_string(p.copy_latency_us) + " us, " +
      std::to_string(p.copy_bandwidth_bytes_per_s / 1e9) + " GB/s" + adjusted);
}

// Host issue cost per op, as the runner issues one: a cross-stream wait, begin, end.
void measure_issue_overhead(Bench& bench, ClusterProfile& p, const ProgressLog& log) {
  const int k = 200;
  double host_us = 0;
  const std::vector<double> per_op = bench.repeat(
      k,
      [&] {
        Backend& b = bench.backend();
        const double t0 = b.host_now_us();
        for (int i = 0; i < k; ++i) {
          const int s = i % 2 ? kCopyStream : kComputeStream;
          if (i > 0) b.wait_op(s, i - 1);
          b.begin_op(s, i);
          b.end_op(s, i);
        }
        host_us = b.host_now_us() - t0;
      },
      [&] { return host_us / k; });
  p.issue_overhead_us = median(per_op);
  log("issue overhead: " + std::to_string(p.issue_overhead_us) + " us per op");
}

// A short compute stand-in: what it takes beyond the request (a sleep's wake-up, a kernel's
// launch); then an op on another stream that waits for it: how long after the event it starts
// (a worker thread's wake-up, cudaStreamWaitEvent).
void measure_compute_overhead_and_event_latency(Bench& bench, ComputeMode mode, ClusterProfile& p,
                                                const ProgressLog& log) {
  constexpr double kShortComputeUs = 200;
  Backend& b = bench.backend();
  const auto compute_then_wait = [&] {
    bench.compute(0, kShortComputeUs, mode);
    b.wait_op(kCopyStream, 0);
    b.begin_op(kCopyStream, 1);
    b.end_op(kCopyStream, 1);
  };
  p.compute_overhead_us = std::max(
      0.0, median(bench.repeat(2, compute_then_wait, [&] { return bench.duration_us(0) - kShortComputeUs; })));
  p.event_latency_us = std::max(0.0, median(bench.repeat(2, compute_then_wait, [&] {
                                  return b.op_times(1).start_us - b.op_times(0).end_us;
                                })));
  log("compute overhead: " + std::to_string(p.compute_overhead_us) + " us per op; event latency: " +
      std::to_string(p.event_latency_us) + " us");
}

// The median of per-pair ratios beside / alone (repeat_pairs), with each side's median.
double paired_ratio(const std::vector<std::pair<double, double>>& pairs, double& alone, double& beside) {
  std::vector<double> a, b, r;
  for (const auto& [x, y] : pairs) {
    a.push_back(x);
    b.push_back(y);
    r.push_back(y / std::max(x, 1e-3));
  }
  alone = median(a);
  beside = median(b);
  return median(r);
}

// `measured` (op 0) beside a chain of `chain` ops of `other` (ops 1..chain, enqueued first, so
// they run from its start) against `measured` alone, in paired passes: the median ratio, with
// each side's median in `alone` and `beside`.
double beside_ratio(Bench& bench, const std::function<void(int)>& measured, const std::function<void(int)>& other, int chain,
                    double& alone, double& beside) {
  const auto op0 = [&] { return bench.duration_us(0); };
  return paired_ratio(bench.repeat_pairs(
                          1, [&] { measured(0); }, op0, chain + 1,
                          [&] {
                            for (int i = 1; i <= chain; ++i) other(i);
                            measured(0);
                          },
                          op0),
                      alone, beside);
}

// A slow-down factor as stored (>= 1 by definition, sim/compute.h asserts it), with a measured
// ratio below 1 shown beside the 1 it became: noise.
std::string slowdown_text(double ratio) {
  std::ostringstream f;
  f << "x" << std::max(1.0, ratio);
  if (ratio < 1) f << ", measured x" << ratio << ": noise, stored as 1";
  return f.str();
}

// The mutual slow-down of compute stand-ins and collectives: an all-reduce of `bytes` alone and
// beside a compute stand-in, and a compute stand-in alone and beside a chain of all-reduces. Each
// factor is the median of per-repetition ratios of an alone pass and a beside pass run back to
// back (repeat_pairs): on a 2-vCPU VM, separate medians of the two sides, taken seconds apart,
// gave comm factors of 1.00-1.18 over ten calibrations of a sleeping stand-in that uses no CPU.
void measure_slowdowns(Bench& bench, const CalibrateOptions& opt, int64_t bytes, ClusterProfile& p,
                       const ProgressLog& log) {
  const auto comm = [&](int op) { bench.collective(op, CollectiveKind::AllReduce, bytes); };
  // The stand-in's length d: several all-reduces long, from a first estimate of one.
  const double d = std::max(opt.interference_compute_us,
                            3 * median(bench.repeat(1, [&] { comm(0); }, [&] { return bench.duration_us(0); })));
  const auto compute = [&](int op) { bench.compute(op, d, opt.compute); };
  double comm_alone = 0, comm_busy = 0, compute_alone = 0, compute_busy = 0;
  const double comm_ratio = beside_ratio(bench, comm, compute, 1, comm_alone, comm_busy);
  const int chain = static_cast<int>(std::ceil(1.5 * d / std::max(comm_alone, 1.0))) + 1;
  const double compute_ratio = beside_ratio(bench, compute, comm, chain, compute_alone, compute_busy);
  // Slow-down factors are >= 1 by definition (sim/compute.h asserts it); a measured ratio
  // below 1 is noise and is recorded as 1.
  p.comm_slowdown_during_compute = std::max(1.0, comm_ratio);
  p.compute_slowdown_during_comm = std::max(1.0, compute_ratio);
  std::ostringstream line;
  line << "slow-downs (medians of paired ratios): all_reduce " << fmt_bytes(bytes) << " " << comm_alone << " us alone, "
       << comm_busy << " us beside compute (" << slowdown_text(comm_ratio) << "); compute " << compute_alone << " us alone, "
       << compute_busy << " us beside collectives (" << slowdown_text(compute_ratio) << ")";
  log(line.str());
}

// The mutual slow-down of copies and collectives on one rank (mpi: the rank's cores run both):
// a copy of `copy_bytes` alone and beside a chain of all-gathers of `ag_bytes` over the group,
// and the all-gather alone and beside a chain of copies, as paired ratios like
// measure_slowdowns. On a 2-vCPU VM the copy took 1.8-2.3x as long beside all-gathers over 2
// ranks (18 of 19 calibrations) and 2.5-3.3x over 4, while the all-gather did not slow down beside
// copies (1.00-1.14x): a copy yields its core every 256 KiB, and the MPI progress it yields to is
// not slowed (docs/calibrate.md).
void measure_copy_slowdowns(Bench& bench, int64_t ag_bytes, int64_t copy_bytes, ClusterProfile& p, const ProgressLog& log) {
  const auto op0 = [&] { return bench.duration_us(0); };
  const auto copy = [&](int op) { bench.copy(op, copy_bytes); };
  const auto ag = [&](int op) { bench.collective(op, CollectiveKind::AllGather, ag_bytes); };
  bench.set_copy_floor(bench.collective_region_bytes(ag_bytes), copy_bytes);
  // Each chain outlasts the measured op by half again, from a first estimate of both.
  const double copy_us = median(bench.repeat(1, [&] { copy(0); }, op0));
  const double ag_us = median(bench.repeat(1, [&] { ag(0); }, op0));
  const int ag_chain = static_cast<int>(std::ceil(1.5 * copy_us / std::max(ag_us, 1.0))) + 1;
  const int copy_chain = static_cast<int>(std::ceil(1.5 * ag_us / std::max(copy_us, 1.0))) + 1;
  double copy_a = 0, copy_b = 0, ag_a = 0, ag_b = 0;
  const double copy_ratio = beside_ratio(bench, copy, ag, ag_chain, copy_a, copy_b);
  const double ag_ratio = beside_ratio(bench, ag, copy, copy_chain, ag_a, ag_b);
  bench.set_copy_floor(0);
  p.copy_slowdown_during_comm = std::max(1.0, copy_ratio);
  p.comm_slowdown_during_copy = std::max(1.0, ag_ratio);
  std::ostringstream line;
  line << "copy slow-downs (medians of paired ratios): copy " << fmt_bytes(copy_bytes) << " " << copy_a << " us alone, " << copy_b
       << " us beside all_gathers (" << slowdown_text(copy_ratio) << "); all_gather " << fmt_bytes(ag_bytes) << " " << ag_a
       << " us alone, " << ag_b << " us beside copies (" << slowdown_text(ag_ratio) << ")";
  log(line.str());
}

}  // namespace

std::vector<int> calibration_group_sizes(int world) {
  std::vector<int> sizes;
  for (int d = 2; d <= world; ++d)
    if (world % d == 0) sizes.push_back(d);
  return sizes;
}

std::vector<int64_t> calibration_sizes(int64_t min_bytes, int64_t max_bytes, int64_t granularity_bytes) {
  std::vector<int64_t> sizes;
  auto add = [&](int64_t s) {
    s = std::max(granularity_bytes, s / granularity_bytes * granularity_bytes);
    if (s <= max_bytes && (sizes.empty() || s > sizes.back())) sizes.push_back(s);
  };
  for (int64_t s = min_bytes; s < max_bytes; s *= 2) add(s);
  add(max_bytes);
  return sizes;
}

namespace {

// One whole calibration: every table and factor measured once (calibrate repeats it --passes times).
ClusterProfile calibration_pass(const BackendMaker& make_backend, const HostComm& host, const CalibrateOptions& opt,
                                const ProgressLog& log) {
  const int world = host.size();
  const std::vector<int> groups = calibration_group_sizes(world);
  ClusterProfile p;
  p.machine = opt.machine;
  p.created = profile_created_now();
  const int64_t granularity = static_cast<int64_t>(world) * kWidth;
  std::vector<int64_t> sizes;

  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const int n = groups[gi];
    std::unique_ptr<Backend> backend = make_backend();
    p.backend = backend->name();
    if (gi == 0) sizes = collective_sizes_that_fit(*backend, host, opt, granularity, log);
    Bench bench(std::move(backend), host, n, sizes.back(), opt.warmup, opt.repetitions);
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
      p.collectives.push_back(measure_collective_table(bench, kind, n, sizes));
      log(describe_collective_table(p.collectives.back()));
    }
    if (gi + 1 < groups.size()) continue;

    // The rest uses the backend of the largest group.
    measure_copy_cost(bench, opt.min_bytes, sizes.back(), p, log);
    measure_issue_overhead(bench, p, log);
    measure_compute_overhead_and_event_latency(bench, opt.compute, p, log);
    const int64_t interference_bytes =
        std::min(sizes.back(), std::max(granularity, opt.interference_bytes / granularity * granularity));
    measure_slowdowns(bench, opt, interference_bytes, p, log);
    if (p.backend == "mpi") measure_copy_slowdowns(bench, interference_bytes, kCopySlowdownBytes, p, log);
  }
  // calibrate's own noise, stated so a user can weigh a prediction made from this profile.
  p.collective_noise = median_relative_spread(p.collectives);
  return p;
}

// How far the passes' collective times lie apart: per table and size, (max - min) / median over
// the passes; the median of that over every table and size.
double spread_between_passes(const std::vector<ClusterProfile>& passes) {
  std::vector<double> spreads;
  for (size_t t = 0; t < passes.front().collectives.size(); ++t)
    for (size_t i = 0; i < passes.front().collectives[t].times_us.size(); ++i) {
      std::vector<double> v;
      for (const ClusterProfile& p : passes) v.push_back(p.collectives[t].times_us[i]);
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      spreads.push_back((*hi - *lo) / std::max(median(v), 1e-9));
    }
  return median(spreads);
}

}  // namespace

ClusterProfile calibrate(const BackendMaker& make_backend, const HostComm& host, const CalibrateOptions& opt) {
  check_calibrate_options(opt, host.size());
  const int rank = host.rank();
  const ProgressLog log = [&](const std::string& line) {
    if (rank == 0 && opt.log) opt.log(line);
  };
  std::vector<ClusterProfile> passes;
  for (int i = 0; i < opt.passes; ++i) {
    if (opt.passes > 1) log("pass " + std::to_string(i + 1) + " of " + std::to_string(opt.passes));
    passes.push_back(calibration_pass(make_backend, host, opt, log));
  }
  ClusterProfile p = median_of_passes(passes);
  p.ranks = host.size();
  std::ostringstream noise;
  noise << "noise: collective times vary by a median " << 100.0 * p.collective_noise
        << "% between repetitions ((p90 - p10) / median, over every size)";
  if (opt.passes > 1)
    noise << "; the " << opt.passes << " passes' medians lie a median " << 100.0 * spread_between_passes(passes)
          << "% apart ((max - min) / median), their medians kept";
  log(noise.str());
  return p;
}

ClusterProfile calibrate_backend(const std::string& backend, const CalibrateOptions& options) {
  const BackendMaker make = backend_maker(backend);
  check_compute_mode(options.compute, backend);
  init_mpi();
  const HostComm host = HostComm::duplicate_world();
  return calibrate(make, host, options);
}

}  // namespace shardline::exec
