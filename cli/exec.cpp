// `shardline exec SCENARIO --backend mpi|nccl --out DIR [--np N] ...`: runs the scenario's
// Program for real (exec/): every rank a process under mpirun, every op executed on stream
// threads (mpi) or CUDA streams (nccl), data checked, per-op times measured and aligned; writes
// the measured timeline, metrics, trace and report like `simulate`. With --np N (and not
// already under mpirun) it launches mpirun itself, waits for it, and names a rank that died
// without a report.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "cli/mpirun_launch.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/schedule.h"
#include "core/timeline.h"
#include "core/variation.h"
#include "exec/exec.h"
#include "exec/mpi/mpi_env.h"
#include "reports/outputs.h"
#include "reports/rank_summary.h"

namespace shardline::cli {
namespace {

void write_partial(const std::string& dir, const Timeline& partial, const std::string& message) {
  std::filesystem::create_directories(dir);
  const int rank = exec::mpi_rank();
  const std::string partial_file = dir + "/" + partial_timeline_file(rank);
  std::ofstream(partial_file) << timeline_to_json(partial).dump(1) << "\n";
  std::ofstream(dir + "/" + rank_report_file(rank)) << message << "\n";
  std::cerr << "shardline exec: partial timeline of rank " << rank << " written to " << partial_file << std::endl;
}

int run_exec(const std::vector<std::string>& args) {
  std::string out_dir, backend = "mpi", compute;
  int np = 0, iterations = -1, warmup = -1;
  int64_t scale = 1;
  exec::ExecOptions opt;
  CommandLine cli(
      "shardline exec SCENARIO [--backend mpi|nccl] [--out DIR] [--np N] [--iterations N] [--warmup W] [--scale K] ...\n"
      "  run under mpirun (mpirun -n 4 shardline exec ...) or let --np launch it");
  cli.add_scenario("scenarios/host-tiny-fsdp.json");
  cli.add_set_flag();
  cli.add_variation_flags();
  cli.flags()("backend", po::value(&backend)->default_value("mpi"), "mpi (CPU processes and threads) or nccl (one GPU per rank)")
      ("out", po::value(&out_dir), "write timeline.json (measured), metrics.json, program.json, trace.json, report.html here")
      ("np", po::value(&np), "launch mpirun with this many ranks (the mesh's world size) unless already under mpirun")
      ("iterations", po::value(&iterations), "measured iterations (default: the scenario's run.iterations); the median is reported")
      ("warmup", po::value(&warmup), "unmeasured warmup iterations (default: the scenario's run.warmup)")
      ("compute", po::value(&compute), "compute stand-in: sleep (default on mpi), spin, kernel (default on nccl)")
      ("scale", po::value(&scale)->default_value(1), "divide every buffer by K so a large model fits this machine")
      ("timeout", po::value(&opt.timeout_s)->default_value(60), "seconds without progress before the run is ended with an error")
      ("no-verify", "skip the data check pass");
  cli.hidden_flags()("stall-rank", po::value(&opt.stall_rank), "this rank stops before --stall-op")
      ("stall-op", po::value(&opt.stall_op), "op id (default: the first collective)")
      ("kill-rank", po::value(&opt.kill_rank), "this rank kills itself with SIGKILL before --stall-op")
      ("corrupt-op", po::value(&opt.corrupt_op), "read this op's source one element off");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (cli.given("out") && out_dir.empty()) throw InputError("--out", "give a folder");
  if (!out_dir.empty()) checked_output_folder(out_dir, "--out");  // before the run, not after it
  exec::check_backend_usable(backend);
  opt.compute = exec::compute_mode_of(compute, backend);
  if (scale < 1) throw InputError("--scale", "must be a positive integer, got " + std::to_string(scale));
  if (cli.given("np") && np < 1) throw InputError("--np", "must be at least 1");
  // Checked here, before mpirun starts, so a bad flag is one message and not one per rank.
  if (cli.given("iterations")) check_iteration_count(iterations, "--iterations");
  if (cli.given("warmup")) check_warmup_count(warmup, "--warmup");
  exec::check_timeout(opt.timeout_s);
  if (backend == "mpi") exec::mpi_poll_us_from_env();

  const Scenario scenario = cli.load_scenario();
  const Program program = schedule(scenario);
  if (!out_dir.empty()) check_run_outputs_size(scenario, program);
  const int world = scenario.mesh.world();
  // The test hooks, checked before mpirun starts too (one message; -1 is "none", their default).
  const auto hook_rank = [&](const char* flag, int rank) {
    if (cli.given(flag + 2) && (rank < 0 || rank >= world))
      throw InputError(flag, "no rank " + std::to_string(rank) + " in the scenario's " + std::to_string(world) + " ranks");
  };
  hook_rank("--stall-rank", opt.stall_rank);
  hook_rank("--kill-rank", opt.kill_rank);
  const auto hook_op = [&](const char* flag, int64_t op) {
    if (cli.given(flag + 2) && (op < 0 || op >= static_cast<int64_t>(program.ops.size())))
      throw InputError(flag, "no op " + std::to_string(op) + " in the program of " + std::to_string(program.ops.size()) + " ops");
  };
  hook_op("--stall-op", opt.stall_op);
  hook_op("--corrupt-op", opt.corrupt_op);
  if (exec::launched_by_mpirun()) np = 0;  // the world is mpirun's (docs/exec.md: --np is ignored under mpirun)
  if (np > 0 && np != world)
    throw InputError("--np", "the scenario's mesh has " + std::to_string(world) + " ranks (shard " +
                                 std::to_string(scenario.mesh.shard) + " x replicate " +
                                 std::to_string(scenario.mesh.replicate) + "), not " + std::to_string(np) +
                                 "; use --np " + std::to_string(world) + ", or a mesh of " + std::to_string(np) +
                                 " ranks on as many GPUs, e.g. --set mesh.shard=" + std::to_string(np) +
                                 " --set mesh.replicate=1 --set cluster.nodes=1 --set cluster.gpus_per_node=" + std::to_string(np));
  if (np > 0 && !exec::launched_by_mpirun()) return relaunch_under_mpirun_and_wait(np, "exec", args, out_dir);

  opt.iterations = iterations >= 0 ? iterations : scenario.run.iterations;
  opt.warmup = warmup >= 0 ? warmup : scenario.run.warmup;
  opt.scale = scale;
  opt.verify = !cli.given("no-verify");
  const VariationSpec& variation = scenario.variation;
  if (variation.varies_compute()) {
    const std::vector<double> factors =
        rank_compute_factors(variation, scenario.mesh.shard, scenario.mesh.replicate, scenario.cluster.gpus_per_node);
    opt.compute_factor = [factors, variation](int rank, int iteration, int op) {
      return factors[static_cast<size_t>(rank)] * compute_jitter_factor(variation, rank, iteration, op);
    };
  }
  if (!out_dir.empty())
    opt.on_failure = [out_dir](const Timeline& partial, const std::string& message) { write_partial(out_dir, partial, message); };

  exec::init_mpi();
  // With variation injected, how many ranks share this host's processors (the note below).
  // Collective; the variation, and so the condition, is the same on every rank.
  const int ranks_on_host = opt.compute_factor ? exec::mpi_local_ranks(MPI_COMM_WORLD) : 0;
  const int cores_on_host = opt.compute_factor ? exec::mpi_local_cores(MPI_COMM_WORLD) : 0;
  exec::ExecResult r;
  try {
    r = exec::execute(program, backend, opt);
  } catch (const InputError&) {
    exec::finalize_mpi();
    throw;
  }
  int rc = 0;
  if (r.rank == 0) {
    if (r.verify_failed) {
      std::cerr << "shardline exec: error: the data check failed:\n";
      for (const auto& f : r.verify_failures) std::cerr << "  " << f << "\n";
      rc = 1;
    } else {
      Timeline timeline = r.timeline;
      set_timeline_scenario(timeline, scenario);
      // What was injected: a real link cannot be slowed, so the scenario's slow links did not act.
      timeline.variation.slow_links.clear();
      const Metrics metrics = compute_metrics(timeline);
      if (!out_dir.empty()) write_run_outputs(out_dir, scenario, program, timeline, metrics);
      std::ostringstream head;
      head << "measured with " << r.timeline.backend << " on " << r.world << " ranks";
      if (scale > 1) head << ", buffers scaled 1/" << scale << " (--scale " << scale << ")";
      head << "; " << opt.iterations << (opt.iterations == 1 ? " iteration" : " iterations") << " after " << opt.warmup << " warmup, reported iteration "
           << timeline.reported_iteration << " (median step)\n";
      head << "step times (us):";
      for (double s : r.step_times_us) head << " " << static_cast<int64_t>(s);
      char clock[32];
      std::snprintf(clock, sizeof clock, "%.3g", r.clock_error_us);  // a bound, not six digits of noise
      head << "\nclock alignment error <= " << clock << " us; data check: ";
      if (r.verified) head << "passed (" << r.elements_checked << " elements on all ranks)";
      else head << "skipped (--no-verify)";
      head << "; buffers " << r.bytes_per_rank / (1024 * 1024) << " MiB per rank\n";
      if (opt.compute_factor) {
        head << "variation injected: compute stand-ins slowed per rank and op (the stragglers, rank compute spread and jitter of the scenario and of --straggler / --jitter)\n";
        // The processors the ranks may run on (their affinity: mpirun's binding, a taskset around
        // the launch), not the host's count.
        if (ranks_on_host > cores_on_host)
          head << "ranks share cores (" << ranks_on_host << " ranks on " << cores_on_host << " processors of this host): a slowed "
               << "rank's longer compute stand-ins leave its core to the ranks beside it, which the simulator, with a core per "
               << "rank, does not model: measured straggler costs come out lower than predicted (docs/exec.md, Binding)\n";
      }
      if (variation.has_slow_links())
        head << "variation.slow_links: not injected (exec cannot slow a real link); the simulation plays them\n";
      head << "\n";
      std::cout << head.str() << summary_table(scenario, timeline, metrics);
      // Each rank's step and waiting, as `simulate --ranks all` states them for a prediction.
      if (r.world > 1) std::cout << "\n" << measured_ranks_text(timeline, program.groups);
      if (!out_dir.empty())
        std::cout << "\noutputs in " << out_dir << "/ (report.html, trace.json, metrics.json, program.json, timeline.json)\n";
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  exec::finalize_mpi();
  return rc;
}

const CommandRegistration registration("exec", "run the scenario for real over MPI (or NCCL) and measure it", run_exec);

}  // namespace
}  // namespace shardline::cli
