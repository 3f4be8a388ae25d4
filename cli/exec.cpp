// `shardline exec SCENARIO --backend mpi|nccl --out DIR [--np N] ...`: runs the scenario's
// Program for real (exec/): every rank a process under mpirun, every op executed on stream
// threads (mpi) or CUDA streams (nccl), data checked, per-op times measured and aligned; writes
// the measured timeline, metrics, trace and report like `simulate`. With --np N (and not
// already under mpirun) it launches mpirun itself.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "core/timeline.h"
#include "exec/exec.h"
#include "exec/mpi/mpi_env.h"
#include "reports/outputs.h"

namespace po = boost::program_options;

namespace shardline::cli {
namespace {

// Re-runs this command under mpirun with N ranks, adding the flags a newcomer would not know.
[[noreturn]] void launch_mpirun(int np, const std::vector<std::string>& args) {
  const char* env = std::getenv("SHARDLINE_MPIEXEC");
  std::vector<std::string> cmd{env && *env ? env : "mpirun"};
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  cmd.insert(cmd.end(), {"--oversubscribe", "--bind-to", "none", "-n", std::to_string(np)});
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw std::runtime_error("cannot find the shardline executable to launch under mpirun");
  self[n] = 0;
  cmd.push_back(self);
  cmd.push_back("exec");
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--np") {
      ++i;
      continue;
    }
    if (args[i].rfind("--np=", 0) == 0) continue;
    cmd.push_back(args[i]);
  }
  std::string line;
  for (const auto& c : cmd) line += (line.empty() ? "" : " ") + c;
  std::cerr << "shardline exec: launching: " << line << std::endl;
  std::vector<char*> argv;
  for (auto& c : cmd) argv.push_back(c.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  throw InputError("--np", "could not run " + cmd[0] + " (" + std::strerror(errno) +
                               "); install Open MPI or set SHARDLINE_MPIEXEC");
}

void write_partial(const std::string& dir, const Timeline& partial, const std::string& message) {
  std::filesystem::create_directories(dir);
  const std::string rank = std::to_string(exec::mpi_rank());
  std::ofstream(dir + "/timeline.partial.rank" + rank + ".json") << timeline_to_json(partial).dump(1) << "\n";
  std::ofstream(dir + "/error.rank" + rank + ".txt") << message << "\n";
  std::cerr << "shardline exec: partial timeline of rank " << rank << " written to " << dir << "/timeline.partial.rank"
            << rank << ".json" << std::endl;
}

int run_exec(const std::vector<std::string>& args) {
  std::string scenario_path, out_dir, backend = "mpi", compute;
  std::vector<std::string> sets;
  int np = 0, iterations = -1, warmup = -1;
  int64_t scale = 1;
  exec::ExecOptions opt;
  po::options_description flags(
      "shardline exec SCENARIO [--backend mpi|nccl] [--out DIR] [--np N] [--iterations N] [--warmup W] [--scale K] ...\n"
      "  run under mpirun (mpirun -n 4 shardline exec ...) or let --np launch it");
  flags.add_options()("help,h", "this help")
      ("set", po::value(&sets)->composing(), "PATH=VALUE override of the scenario JSON (repeatable)")
      ("backend", po::value(&backend)->default_value("mpi"), "mpi (CPU processes and threads) or nccl (one GPU per rank)")
      ("out", po::value(&out_dir), "write timeline.json (measured), metrics.json, program.json, trace.json, report.html here")
      ("np", po::value(&np), "launch mpirun with this many ranks (the mesh's world size) unless already under mpirun")
      ("iterations", po::value(&iterations), "measured iterations (default: the scenario's run.iterations); the median is reported")
      ("warmup", po::value(&warmup), "unmeasured warmup iterations (default: the scenario's run.warmup)")
      ("compute", po::value(&compute), "compute stand-in: sleep (default on mpi), spin, kernel (default on nccl)")
      ("scale", po::value(&scale)->default_value(1), "divide every buffer by K so a large model fits this machine")
      ("timeout", po::value(&opt.timeout_s)->default_value(60), "seconds without progress before the run is ended with an error")
      ("no-verify", "skip the data check pass")
      ("scenario", po::value(&scenario_path), "scenario JSON file");
  po::options_description hidden("test hooks");
  hidden.add_options()("stall-rank", po::value(&opt.stall_rank), "this rank stops before --stall-op")
      ("stall-op", po::value(&opt.stall_op), "op id (default: the first collective)")
      ("kill-rank", po::value(&opt.kill_rank), "this rank kills itself with SIGKILL before --stall-op")
      ("corrupt-op", po::value(&opt.corrupt_op), "read this op's source one element off");
  po::options_description all;
  all.add(flags).add(hidden);
  po::positional_options_description positional;
  positional.add("scenario", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << flags << "\n";
    return 0;
  }
  if (scenario_path.empty()) throw InputError("SCENARIO", "give a scenario JSON file, e.g. scenarios/host-tiny-fsdp.json");
  if (vm.count("out") && out_dir.empty()) throw InputError("--out", "give a folder");
  if (backend != "mpi" && backend != "nccl") throw InputError("--backend", "expected mpi or nccl, got \"" + backend + "\"");
  if (compute.empty()) compute = backend == "nccl" ? "kernel" : "sleep";
  if (compute == "sleep") opt.compute = exec::ComputeMode::Sleep;
  else if (compute == "spin") opt.compute = exec::ComputeMode::Spin;
  else if (compute == "kernel") opt.compute = exec::ComputeMode::Kernel;
  else throw InputError("--compute", "expected sleep, spin or kernel, got \"" + compute + "\"");
  if (opt.compute == exec::ComputeMode::Kernel && backend != "nccl")
    throw InputError("--compute", "kernel stand-ins need --backend nccl; use sleep or spin");
  if (scale < 1) throw InputError("--scale", "must be a positive integer, got " + std::to_string(scale));
  if (vm.count("np") && np < 1) throw InputError("--np", "must be at least 1");
  // Checked here, before mpirun starts, so a bad flag is one message and not one per rank.
  if (vm.count("iterations") && iterations < 1) throw InputError("--iterations", "must be at least 1, got " + std::to_string(iterations));
  if (vm.count("warmup") && warmup < 0) throw InputError("--warmup", "must be 0 or more, got " + std::to_string(warmup));
  if (!(opt.timeout_s > 0)) throw InputError("--timeout", "must be a positive number of seconds");
  if (backend == "mpi") exec::mpi_poll_us_from_env();
  if (backend == "nccl" && !exec::have_nccl_backend())
    throw InputError("--backend", "this shardline was built without CUDA/NCCL; rebuild with -DSHARDLINE_CUDA=ON");
  if (backend == "nccl" && !exec::have_gpu())
    throw InputError("--backend", "nccl needs one GPU per rank, and this machine has none; use --backend mpi");

  const Scenario scenario = load_scenario(scenario_path, sets);
  const Program program = schedule(scenario);
  if (!out_dir.empty()) check_run_outputs_size(scenario, program);
  const int world = scenario.mesh.world();
  if (np > 0 && np != world)
    throw InputError("--np", "the scenario's mesh has " + std::to_string(world) + " ranks (shard " +
                                 std::to_string(scenario.mesh.shard) + " x replicate " +
                                 std::to_string(scenario.mesh.replicate) + "), not " + std::to_string(np) +
                                 "; use --np " + std::to_string(world) + " or --set mesh.shard=...");
  if (np > 0 && !exec::launched_by_mpirun()) launch_mpirun(np, args);

  opt.iterations = iterations >= 0 ? iterations : scenario.run.iterations;
  opt.warmup = warmup >= 0 ? warmup : scenario.run.warmup;
  opt.scale = scale;
  opt.verify = vm.count("no-verify") == 0;
  if (!out_dir.empty())
    opt.on_failure = [out_dir](const Timeline& partial, const std::string& message) { write_partial(out_dir, partial, message); };

  exec::init_mpi();
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
      timeline.memory_capacity_bytes = scenario.cluster.gpu.memory_bytes;
      timeline.workload = workload_of(scenario);
      timeline.memory_reserve = memory_reserve_of(scenario);
      timeline.memory_margin = scenario.run.memory_margin;
      const Metrics metrics = compute_metrics(timeline);
      if (!out_dir.empty()) write_run_outputs(out_dir, scenario, program, timeline, metrics);
      std::ostringstream head;
      head << "measured with " << r.timeline.backend << " on " << r.world << " ranks";
      if (scale > 1) head << ", buffers scaled 1/" << scale << " (--scale " << scale << ")";
      head << "; " << opt.iterations << " iterations after " << opt.warmup << " warmup, reported iteration "
           << timeline.reported_iteration << " (median step)\n";
      head << "step times (us):";
      for (double s : r.step_times_us) head << " " << static_cast<int64_t>(s);
      head << "\nclock alignment error <= " << r.clock_error_us << " us; data check: ";
      if (r.verified) head << "passed (" << r.elements_checked << " elements on all ranks)";
      else head << "skipped (--no-verify)";
      head << "; buffers " << r.bytes_per_rank / (1024 * 1024) << " MiB per rank\n\n";
      std::cout << head.str() << summary_table(scenario, timeline, metrics);
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
