#include "exec/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/units.h"
#include "exec/clock_align.h"
#include "exec/host_comm.h"
#include "exec/verify.h"

namespace shardline::exec {
namespace {

// SIGTERM arrived while a run was watched (see TerminationWatched below).
volatile sig_atomic_t g_terminated = 0;

std::string op_label(const Program& program, const Op& op) {
  std::ostringstream s;
  s << "op " << program.id_of(op) << " \"" << program.name(op) << "\" (" << op_kind_name(op.kind);
  if (is_collective(op.kind)) s << " over the " << comm_group_name(op.group) << " group";
  s << ") on stream " << stream_name(op.stream);
  return s.str();
}

std::string mib(int64_t bytes) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

// Everything the host thread, the watchdog and the fatal handler share.
class Run {
 public:
  Run(const Plan& plan, const ExecOptions& options, Backend& backend, const HostComm& host)
      : plan_(plan), P_(plan.program), options_(options), backend_(backend), host_(host) {
    rank_ = host.rank();
    issue_us_.assign(P_.ops.size(), 0.0);
  }

  ~Run() { stop_watchdog(); }

  void set_alignment(const ClockAlignment& a) { align_ = a; }

  void start_watchdog() {
    watchdog_ = std::thread([this] { watch(); });
  }

  void stop_watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  }

  void progress(const std::string& stage) {
    std::lock_guard<std::mutex> lock(mutex_);
    stage_ = stage;
    ++host_progress_;
  }

  // One pass over the program. `record`: keep intervals for iteration `iteration`.
  void pass(int pass_number, bool serialized, Verifier* verifier, int iteration, std::string* first_failure) {
    const int nops = static_cast<int>(P_.ops.size());
    draw_iteration_ = iteration >= 0 ? iteration : -1 - pass_number;
    backend_.begin_pass(pass_number, nops);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      current_pass_ = pass_number;
      issued_ = 0;
    }
    progress("barrier before pass " + std::to_string(pass_number));
    host_.barrier(HostWait::Polling);
    const double origin = host_.broadcast_from_root(backend_.host_now_us() + align_.offset_us);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last_origin_ = origin;
    }
    progress("issuing pass " + std::to_string(pass_number));
    for (int i = 0; i < nops; ++i) {
      if (rank_ == options_.stall_rank && i == stall_op_) stall(i);
      if (rank_ == options_.kill_rank && i == stall_op_) ::raise(SIGKILL);  // test hook: a rank dies
      issue_us_[i] = backend_.host_now_us();
      issue(i);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        issued_ = i + 1;
      }
      if (serialized) {
        backend_.wait_op_host(i);
        if (verifier) {
          std::string e = verifier->check(i, backend_);
          if (!e.empty() && first_failure->empty()) *first_failure = e;
          progress("verified op " + std::to_string(i));
        }
      }
    }
    progress("waiting for pass " + std::to_string(pass_number) + " to finish");
    backend_.synchronize();
    progress("pass " + std::to_string(pass_number) + " finished");
    if (iteration >= 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int i = 0; i < nops; ++i) intervals_.push_back(interval(i, iteration, origin));
    }
  }

  void set_stall_op(int op) { stall_op_ = op; }

  HugePageVector<OpInterval> intervals() {
    std::lock_guard<std::mutex> lock(mutex_);
    return intervals_;
  }

  // Fatal path: describe, write the partial timeline, abort the job. Runs once.
  [[noreturn]] void fail(const std::string& message) {
    static std::atomic<bool> failing{false};
    if (failing.exchange(true)) {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::cerr << "shardline exec: error: " << message << std::endl;
    if (options_.on_failure) {
      try {
        options_.on_failure(partial_timeline(), message);
      } catch (const std::exception& e) {
        std::cerr << "shardline exec: could not write the partial timeline: " << e.what() << std::endl;
      }
    }
    // Give the other ranks' watchdogs a moment to write their own partial timelines.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    abort_job(3);
    std::_Exit(3);
  }

  Timeline partial_timeline() {
    Timeline t;
    t.source = "measured";
    t.backend = backend_.name();
    t.scenario = P_.scenario;
    t.ranks = 1;
    t.scale = static_cast<double>(plan_.scale);
    set_measured_ops(t, plan_);
    std::lock_guard<std::mutex> lock(mutex_);
    t.intervals = intervals_;
    int iterations = 0;
    for (const auto& iv : t.intervals) iterations = std::max(iterations, iv.iteration + 1);
    // The pass in flight: the ops that finished.
    for (int i = 0; i < issued_; ++i)
      if (backend_.op_done(i)) t.intervals.push_back(interval(i, current_iteration_, last_origin_));
    t.iterations = std::max(1, iterations + 1);
    for (auto& iv : t.intervals) iv.rank = rank_;
    return t;
  }

  void set_iteration(int iteration) {
    std::lock_guard<std::mutex> lock(mutex_);
    current_iteration_ = iteration;
  }

 private:
  void issue(int i) {
    const Op& op = P_.ops[i];
    const OpPlan& o = plan_.ops[i];
    const int s = static_cast<int>(op.stream);
    const int g = static_cast<int>(op.group);
    for (int d : P_.deps(op))
      if (P_.ops[d].stream != op.stream) backend_.wait_op(s, d);
    backend_.begin_op(s, i);
    switch (op.kind) {
      case OpKind::Compute: {
        const double factor = options_.compute_factor ? options_.compute_factor(rank_, draw_iteration_, i) : 1.0;
        backend_.compute(s, op.compute_us() * factor, options_.compute);
        break;
      }
      case OpKind::CopyIn: backend_.copy(s, o.pack); break;
      case OpKind::CopyOut: backend_.copy(s, o.unpack); break;
      case OpKind::Alloc:
      case OpKind::Free: break;
      case OpKind::AllGather:
      case OpKind::ReduceScatter:
      case OpKind::AllReduce: {
        if (!o.pack.empty()) backend_.copy(s, o.pack);
        CollectiveArgs a;
        a.in = o.in;
        a.out = o.out;
        a.count = o.block_count;
        a.width = o.width;
        a.average = op.reduction == Reduction::Avg;
        if (op.kind == OpKind::AllGather) backend_.all_gather(s, g, a);
        else if (op.kind == OpKind::ReduceScatter) backend_.reduce_scatter(s, g, a);
        else backend_.all_reduce(s, g, a);
        if (!o.unpack.empty()) backend_.copy(s, o.unpack);
        break;
      }
    }
    backend_.end_op(s, i);
  }

  OpInterval interval(int i, int iteration, double origin) {
    const OpTimes t = backend_.op_times(i);
    OpInterval iv;
    iv.op = i;
    iv.rank = rank_;
    iv.iteration = iteration;
    iv.issue_us = issue_us_[i] + align_.offset_us - origin;
    iv.start_us = t.start_us + align_.offset_us - origin;
    iv.end_us = t.end_us + align_.offset_us - origin;
    return iv;
  }

  [[noreturn]] void stall(int op) {
    progress("stalled before op " + std::to_string(op) + " (--stall-rank test hook)");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stalled_ = true;
    }
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  void watch() {
    using Clock = std::chrono::steady_clock;
    auto last_change = Clock::now();
    std::string last_sig;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (stopping_) break;
      const int issued = issued_;
      const int pass = current_pass_;
      const int64_t host = host_progress_;
      lock.unlock();
      int done = 0;
      for (int i = 0; i < issued; ++i) done += backend_.op_done(i) ? 1 : 0;
      const std::string sig = std::to_string(pass) + "/" + std::to_string(issued) + "/" + std::to_string(done) + "/" +
                              std::to_string(host);
      if (g_terminated) fail(describe_terminated(issued));
      if (sig != last_sig) {
        last_sig = sig;
        last_change = Clock::now();
      } else if (std::chrono::duration<double>(Clock::now() - last_change).count() > options_.timeout_s) {
        fail(describe_stuck(issued));
      }
      lock.lock();
    }
  }

  // mpirun ends the surviving ranks with SIGTERM (and SIGKILL about a second later) when a rank
  // dies: say where this one was, so the partial timelines show how far each rank got.
  std::string describe_terminated(int issued) {
    return "rank " + std::to_string(rank_) + " was ended by SIGTERM (mpirun sends it when another rank dies, naming " +
           "that rank, or when the run is stopped); this rank was at: " + where_stuck(issued);
  }

  std::string describe_stuck(int issued) {
    std::ostringstream msg;
    msg << "rank " << rank_ << " made no progress for " << options_.timeout_s << " s (--timeout): " << where_stuck(issued);
    return msg.str();
  }

  // The op this rank waits in (the earliest unfinished issued op whose dependencies finished),
  // where its other streams wait, and what the host thread was doing.
  std::string where_stuck(int issued) {
    std::ostringstream msg;
    std::string stage;
    bool stalled;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stage = stage_;
      stalled = stalled_;
    }
    if (stalled) {
      msg << "the host stalled before " << op_label(P_, P_.ops[stall_op_]) << " (--stall-rank test hook)";
      return msg.str();
    }
    // The stuck op: the earliest unfinished issued op whose dependencies all finished.
    int stuck = -1, first_unfinished = -1;
    for (int i = 0; i < issued && stuck < 0; ++i) {
      if (backend_.op_done(i)) continue;
      if (first_unfinished < 0) first_unfinished = i;
      bool ready = true;
      for (int d : P_.deps(P_.ops[i])) ready = ready && backend_.op_done(d);
      if (ready) stuck = i;
    }
    if (stuck < 0) stuck = first_unfinished;
    if (stuck < 0) {
      msg << "every issued op finished; the host is stuck at: " << stage;
      return msg.str();
    }
    msg << op_label(P_, P_.ops[stuck]) << " did not complete";
    // Where the other streams wait.
    bool seen[kNumStreams] = {};
    seen[static_cast<int>(P_.ops[stuck].stream)] = true;
    std::string others;
    for (int i = 0; i < issued; ++i) {
      const int s = static_cast<int>(P_.ops[i].stream);
      if (seen[s] || backend_.op_done(i)) continue;
      seen[s] = true;
      others += (others.empty() ? "" : ", ") + std::string(stream_name(P_.ops[i].stream)) + " at op " +
                std::to_string(i) + " \"" + P_.name(P_.ops[i]) + "\"";
    }
    if (!others.empty()) msg << "; other streams waiting: " << others;
    msg << " (host: " << stage << ")";
    return msg.str();
  }

  const Plan& plan_;
  const Program& P_;
  const ExecOptions& options_;
  Backend& backend_;
  const HostComm& host_;
  int rank_ = 0;
  ClockAlignment align_;
  int stall_op_ = -1;
  std::vector<double> issue_us_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread watchdog_;
  bool stopping_ = false;
  bool stalled_ = false;
  std::string stage_ = "starting";
  int64_t host_progress_ = 0;
  int current_pass_ = -1;
  int current_iteration_ = -1;
  int draw_iteration_ = -1;  // the iteration number variation draws use in this pass
  int issued_ = 0;
  double last_origin_ = 0;
  HugePageVector<OpInterval> intervals_;
};

}  // namespace

void set_measured_ops(Timeline& timeline, const Plan& plan) {
  set_timeline_ops(timeline, plan.program);
  for (size_t i = 0; i < timeline.ops.size(); ++i) {
    Op& op = timeline.ops[i];
    if (is_marker(op.kind)) op.set_bytes((op.bytes() + plan.scale - 1) / plan.scale);
    else if (op.kind != OpKind::Compute) op.set_bytes(plan.ops[i].moved_bytes);
  }
}

void check_timeout(double timeout_s) {
  // A second to a day: below a second the watchdog's own polling decides, and inf never ends.
  if (!(timeout_s >= 1 && timeout_s <= kMaxTimeoutS))
    throw InputError("--timeout", number_text(timeout_s) + " is out of range; expected seconds in [1, 86400] (a day)");
}

namespace {
// Set by the SIGTERM handler while a run's watchdog watches; the watchdog then reports where the
// rank was and writes its partial timeline before mpirun's SIGKILL follows.
volatile sig_atomic_t g_watching = 0;
extern "C" void on_sigterm(int sig) {
  if (g_watching) {
    g_terminated = 1;
    return;
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// SIGTERM goes to the watchdog for the lifetime of one run.
class TerminationWatched {
 public:
  TerminationWatched() {
    struct sigaction action {};
    action.sa_handler = on_sigterm;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGTERM, &action, &previous_);
    g_watching = 1;
  }
  ~TerminationWatched() {
    g_watching = 0;
    ::sigaction(SIGTERM, &previous_, nullptr);
  }

 private:
  struct sigaction previous_ {};
};

// The options a run checks before anything is planned.
void check_run_options(const ExecOptions& options) {
  check_iteration_count(options.iterations, "--iterations");
  check_warmup_count(options.warmup, "--warmup");
  check_timeout(options.timeout_s);
}

// The test hooks' ranks, once the run's world is known to be the Program's (make_plan: a run of
// the wrong size is that error, not a hook's rank missing from it).
void check_hook_ranks(const ExecOptions& options, int world) {
  const auto check = [&](const char* flag, int rank) {
    if (rank >= world) throw InputError(flag, "no rank " + std::to_string(rank) + " in this run's " + std::to_string(world));
  };
  check("--stall-rank", options.stall_rank);
  check("--kill-rank", options.kill_rank);
}

// Every op's element count must fit the int count of one MPI call.
void check_counts_fit_one_mpi_call(const Plan& plan) {
  for (const auto& o : plan.ops)
    if (o.block_count * std::max(1, o.blocks) > INT_MAX)
      throw InputError("--scale", "an op moves " + std::to_string(o.block_count) +
                                      " elements per rank, more than one MPI call can count; use a larger --scale");
}

// Memory: refuse before allocating rather than be killed. Records the largest need and the
// smallest availability over ranks in `result`; InputError("--scale") suggests a scale that fits.
void check_memory_fits(const Plan& plan, int64_t scale, Backend& backend, const HostComm& host, ExecResult& result) {
  const int64_t need = host.max_over_ranks(plan.total_bytes());
  const int64_t avail = host.min_over_ranks(backend.available_bytes());
  result.bytes_per_rank = need;
  result.available_bytes = avail;
  if (need > avail) {
    const double factor = static_cast<double>(need) / std::max<double>(1.0, static_cast<double>(avail));
    const int64_t k = static_cast<int64_t>(std::ceil(static_cast<double>(scale) * factor * 1.25));
    throw InputError("--scale", "needs " + mib(need) + " per rank, " + mib(avail) + " available; try --scale " +
                                    std::to_string(k));
  }
}

// The Program's streams, then one communicator per (stream, group) pair it uses, created in
// the same order on every rank.
void create_streams_and_communicators(const Program& P, Backend& backend) {
  backend.create_streams(P.streams);
  std::set<std::pair<int, int>> pairs;
  for (const auto& op : P.ops)
    if (is_collective(op.kind)) pairs.insert({static_cast<int>(op.stream), static_cast<int>(op.group)});
  for (const auto& [s, g] : pairs) backend.create_communicator(s, g, P.groups[g]);
}

// The op the --stall-rank / --kill-rank test hooks stop before: --stall-op, or the Program's
// first collective; InputError("--stall-op") when there is no such op. Without a hook:
// options.stall_op as given.
int hooked_op(const ExecOptions& options, const Program& P) {
  int stall_op = options.stall_op;
  const bool hooked = options.stall_rank >= 0 || options.kill_rank >= 0;
  if (hooked && stall_op < 0)
    for (const auto& op : P.ops)
      if (is_collective(op.kind)) {
        stall_op = P.id_of(op);
        break;
      }
  if (hooked && (stall_op < 0 || stall_op >= static_cast<int>(P.ops.size())))
    throw InputError("--stall-op", "no such op in the program");
  return stall_op;
}

// Pass `pass` with ops one at a time, the data checked after each. Sets the verdict in `result`
// on every rank; rank 0 also gets the first failure of each failing rank and the elements
// checked over all ranks, the other ranks their own failure.
void run_verification_pass(Run& run, int pass, const Plan& plan, const HostComm& host, ExecResult& result) {
  Verifier verifier(plan);
  std::string failure;
  run.pass(pass, /*serialized=*/true, &verifier, -1, &failure);
  const bool failed = host.max_over_ranks(int64_t{failure.empty() ? 0 : 1}) > 0;
  result.elements_checked = host.sum_on_root(verifier.elements_checked());
  for (std::string& f : host.gather_to_root(failure))
    if (!f.empty()) result.verify_failures.push_back(std::move(f));
  if (host.rank() != 0)
    result.verify_failures = failure.empty() ? std::vector<std::string>{} : std::vector<std::string>{failure};
  result.verify_failed = failed;
  result.verified = !failed;
}

// The warmup passes, then the measured iterations (streams concurrent), numbered from
// `first_pass`.
void run_warmup_and_measured_passes(Run& run, int first_pass, const ExecOptions& options) {
  int pass = first_pass;
  for (int w = 0; w < options.warmup; ++w) run.pass(pass++, false, nullptr, -1, nullptr);
  for (int it = 0; it < options.iterations; ++it) {
    run.set_iteration(it);
    run.pass(pass++, false, nullptr, it, nullptr);
  }
}

// Every rank's intervals on rank 0, in rank order; this rank's own on the others.
HugePageVector<OpInterval> gather_intervals_to_root(const HostComm& host, const HugePageVector<OpInterval>& mine) {
  std::vector<double> packed;
  packed.reserve(mine.size() * 5);
  for (const auto& iv : mine) {
    packed.insert(packed.end(), {static_cast<double>(iv.op), static_cast<double>(iv.iteration), iv.issue_us,
                                 iv.start_us, iv.end_us});
  }
  const std::vector<std::vector<double>> all = host.gather_to_root(packed);
  if (host.rank() != 0) return mine;
  HugePageVector<OpInterval> intervals;
  for (int r = 0; r < host.size(); ++r)
    for (size_t k = 0; k + 4 < all[r].size(); k += 5) {
      const std::vector<double>& v = all[r];
      OpInterval iv;
      iv.op = static_cast<int>(v[k]);
      iv.rank = r;
      iv.iteration = static_cast<int>(v[k + 1]);
      iv.issue_us = v[k + 2];
      iv.start_us = v[k + 3];
      iv.end_us = v[k + 4];
      intervals.push_back(iv);
    }
  return intervals;
}

// Step time per iteration (first issue to last end, over ranks) from the timeline's intervals,
// and the median iteration as the reported one.
void record_step_times(ExecResult& result) {
  result.step_times_us = iteration_step_times_us(result.timeline);
  result.timeline.reported_iteration = median_step_iteration(result.step_times_us);
}

}  // namespace

ExecResult run_program(const Program& program, const ExecOptions& options, Backend& backend, const HostComm& host) {
  ExecResult result;
  result.rank = host.rank();
  result.world = host.size();
  const int rank = result.rank, world = result.world;
  check_run_options(options);

  Plan plan = make_plan(program, options.scale, rank, world, options.corrupt_op);
  check_hook_ranks(options, world);
  const Program& P = plan.program;
  check_counts_fit_one_mpi_call(plan);
  check_memory_fits(plan, options.scale, backend, host, result);
  create_streams_and_communicators(P, backend);

  allocate_plan(plan, backend);
  Run run(plan, options, backend, host);
  backend.on_fatal = [&run, rank](const std::string& what) { run.fail("rank " + std::to_string(rank) + ": " + what); };
  run.set_stall_op(hooked_op(options, P));

  const ClockAlignment align = align_clocks(host, [&backend] { return backend.host_now_us(); });
  run.set_alignment(align);
  result.clock_error_us = host.max_over_ranks(align.error_us);
  const TerminationWatched termination;
  run.start_watchdog();

  int pass = 0;
  if (options.verify) run_verification_pass(run, pass++, plan, host, result);
  if (!result.verify_failed) run_warmup_and_measured_passes(run, pass, options);
  run.stop_watchdog();
  backend.on_fatal = nullptr;

  Timeline& t = result.timeline;
  t.source = "measured";
  t.backend = backend.name();
  t.scenario = P.scenario;
  t.ranks = rank == 0 ? world : 1;
  t.iterations = result.verify_failed ? 0 : options.iterations;
  t.scale = static_cast<double>(plan.scale);
  set_measured_ops(t, plan);
  t.intervals = gather_intervals_to_root(host, run.intervals());
  if (!result.verify_failed && rank == 0) record_step_times(result);
  release_plan(plan, backend);
  return result;
}

}  // namespace shardline::exec
