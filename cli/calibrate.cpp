// `shardline calibrate --backend mpi|nccl --out profile.json [--np N] [--max-bytes 64MiB] ...`:
// measures this machine through the exec Backend (exec/calibrate.h) on every rank of the
// mpirun job and writes the cluster profile (core/profile.h format) from rank 0. With --np N
// (and not already under mpirun) it launches mpirun itself. docs/calibrate.md.
#include <mpi.h>  // MPI_Get_library_version, for the profile's machine field
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/command_line.h"
#include "cli/mpirun_launch.h"
#include "core/error.h"
#include "core/json_load.h"
#include "core/profile.h"
#include "core/timeline_profile.h"
#include "reports/outputs.h"
#include "core/units.h"
#include "exec/calibrate.h"
#include "exec/exec.h"

namespace shardline::cli {
namespace {

// "host: CPU model, N hardware threads, rank 0 bound to K of them (or: ranks unbound), MPI
// library" for the profile's machine field: a profile measured with bound ranks describes a run
// with bound ranks (docs/exec.md, "Binding").
std::string describe_machine() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string cpu;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<size_t>(len));
  if (const size_t comma = mpi.find(','); comma != std::string::npos) mpi = mpi.substr(0, comma);
  const unsigned threads = std::thread::hardware_concurrency();
  const int usable = usable_cores();
  const std::string binding = usable < static_cast<int>(threads)
                                  ? "rank 0 bound to " + std::to_string(usable) + " of them"
                                  : std::string("ranks unbound");
  return std::string(host) + ": " + (cpu.empty() ? "unknown CPU" : cpu) + ", " + std::to_string(threads) +
         " hardware threads, " + binding + ", " + mpi;
}

// calibrate --from-trace DIR: the profile fitted on DIR/timeline.json (core/timeline_profile.h).
int calibrate_from_run(const std::string& dir, const std::string& out) {
  if (dir.empty()) throw InputError("--from-trace", "give the output folder of `shardline import --scenario ... --out DIR`");
  const std::string timeline_path = (std::filesystem::path(dir) / "timeline.json").string();
  if (!std::filesystem::is_regular_file(timeline_path))
    throw InputError("--from-trace", "\"" + dir + "\" has no timeline.json: give the --out folder of `shardline import --scenario`");
  const std::string summary_path = (std::filesystem::path(dir) / "summary.json").string();
  check_output_file(out, "--out", {timeline_path, summary_path});  // not over the run it reads
  const Timeline timeline = timeline_from_json(load_json_file(timeline_path, timeline_path, kMaxOutputJsonBytes));
  // The GPUs' names from import's summary.json, when there.
  std::string machine = "the measured run in " + dir;
  if (std::filesystem::is_regular_file(summary_path)) {
    const nlohmann::json summary = load_json_file(summary_path, summary_path, kMaxInputJsonBytes);
    if (summary.is_array() && !summary.empty() && summary[0].is_object() && summary[0].value("device", "") != "")
      machine = std::to_string(summary.size()) + " x " + summary[0].value("device", "") + " (profiler traces in " + dir + ")";
  }
  ClusterProfile profile;
  try {
    profile = profile_from_timeline(timeline, machine);
  } catch (const InputError& e) {
    throw InputError("--from-trace", "\"" + timeline_path + "\": " + (e.where() == "timeline" ? e.sentence() : std::string(e.what())));
  }
  write_file_atomically(out, profile_to_json(profile).dump(2) + "\n", "--out");
  std::cout << "profile fitted on the measured run in " << dir << " (" << timeline.iterations << " iterations, " << timeline.ranks
            << " ranks) written to " << out << ":\n";
  for (const CollectiveTable& t : profile.collectives)
    std::cout << "  " << collective_traits(t.kind).name << " over " << t.group_size << " ranks: " << t.sizes_bytes.size()
              << " sizes, alpha " << t.fit.alpha_us << " us, " << 1e-3 / t.fit.beta_us_per_byte << " GB/s (1/beta)\n";
  if (profile.copy_bandwidth_bytes_per_s > 0)
    std::cout << "  copies: latency " << profile.copy_latency_us << " us, " << profile.copy_bandwidth_bytes_per_s / 1e9 << " GB/s;";
  else
    std::cout << "  copies: none in the run (not measured; a scenario with copies is refused with this profile);";
  std::cout << " issue overhead " << profile.issue_overhead_us << " us; " << profile.units.size() << " units timed\n";
  return 0;
}

int run_calibrate(const std::vector<std::string>& args) {
  std::string out, backend = "mpi", compute, max_bytes = "64MiB", min_bytes = "1KiB", from_trace;
  int np = 0;
  exec::CalibrateOptions opt;
  CommandLine cli(
      "shardline calibrate --out profile.json [--backend mpi|nccl] [--np N] [--max-bytes 64MiB] ...\n"
      "  run under mpirun (mpirun -n 4 shardline calibrate ...) or let --np launch it");
  cli.flags()("out", po::value(&out), "the profile file to write (JSON)")
      ("backend", po::value(&backend)->default_value("mpi"), "mpi (CPU processes and threads) or nccl (one GPU per rank)")
      ("np", po::value(&np), "launch mpirun with this many ranks unless already under mpirun")
      ("max-bytes", po::value(&max_bytes)->default_value("64MiB"), "largest collective size measured (lowered to fit memory)")
      ("min-bytes", po::value(&min_bytes)->default_value("1KiB"), "smallest collective size measured")
      ("repetitions", po::value(&opt.repetitions)->default_value(10), "measured repetitions per point (medians are kept)")
      ("warmup", po::value(&opt.warmup)->default_value(2), "unmeasured repetitions before each point")
      ("passes", po::value(&opt.passes)->default_value(1), "whole calibrations in a row; each number is the median of the passes'")
      ("compute", po::value(&compute), "compute stand-in for the slow-down measurements: sleep (default on mpi), spin, kernel (nccl)")
      ("quiet", "no progress lines")
      ("from-trace", po::value(&from_trace), "fit the profile on a measured run instead: the --out folder of `shardline import` (or exec)");
  if (cli.parse(args) == Parsed::help_shown) return 0;
  if (out.empty()) throw InputError("--out", "give the profile file to write, e.g. --out profile.json");
  if (cli.given("from-trace")) {
    // Nothing is measured: a measuring flag would be silently ignored, so it is refused.
    for (const char* flag : {"backend", "np", "max-bytes", "min-bytes", "repetitions", "warmup", "passes", "compute"})
      if (cli.written(flag))
        throw InputError(std::string("--") + flag, "measures nothing with --from-trace (the profile is fitted on the run): leave it out");
    return calibrate_from_run(from_trace, out);
  }
  if (backend != "mpi" && backend != "nccl") throw InputError("--backend", "expected mpi or nccl, got \"" + backend + "\"");
  if (np > 0 && !exec::launched_by_mpirun()) exec::check_backend_usable(backend);  // before mpirun: one message
  opt.compute = exec::compute_mode_of(compute, backend);
  opt.max_bytes = parse_bytes(max_bytes, "--max-bytes");
  opt.min_bytes = parse_bytes(min_bytes, "--min-bytes");
  if (cli.given("np") && np < 2) throw InputError("--np", "calibration needs at least 2 ranks");
  check_output_file(out, "--out");  // fail before measuring, not after, and create nothing
  if (np > 0 && !exec::launched_by_mpirun()) {
    exec::check_calibrate_options(opt, np);  // one message, before mpirun starts
    // A child, not this process replaced: a stopped calibration then says so (exit 130 / 143), where
    // mpirun's own exit 1 said nothing.
    return relaunch_under_mpirun_and_wait(np, "calibrate", args, "");
  }

  exec::init_mpi();
  opt.machine = describe_machine();
  if (!cli.given("quiet")) opt.log = [](const std::string& line) { std::cerr << "calibrate: " << line << std::endl; };
  ClusterProfile profile;
  try {
    profile = exec::calibrate_backend(backend, opt);
  } catch (const InputError&) {
    exec::finalize_mpi();
    throw;
  }
  if (exec::mpi_rank() == 0) {
    write_file_atomically(out, profile_to_json(profile).dump(2) + "\n", "--out");
    std::cout << "profile of " << exec::mpi_world() << " " << profile.backend << " ranks written to " << out << "\n";
  }
  exec::finalize_mpi();
  return 0;
}

const CommandRegistration registration("calibrate", "measure collectives, copies and slow-downs into a cluster profile (--from-trace: fit one on an imported run)",
                                       run_calibrate);

}  // namespace
}  // namespace shardline::cli
