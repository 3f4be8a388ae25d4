// Launching a shardline subcommand under mpirun: the --np convenience flags of calibrate and
// exec re-run their own command line under it, and validate runs calibrate and exec as steps.
// One mpirun line for all: `mpirun --oversubscribe --bind-to BINDING -n N <this shardline>
// SUBCOMMAND ARGS`, with --allow-run-as-root as root, --np N / --np=N dropped from ARGS, and
// SHARDLINE_MPIEXEC in place of mpirun when set.
#pragma once
#include <string>
#include <vector>

namespace shardline::cli {

// The processors this process may run on (its affinity mask), at least 1.
int usable_cores();

// `--bind-to` for N ranks on a machine whose processes may run on `cores` processors: "core"
// when every rank can own a core, as a rank owns its GPU (each rank's stream threads then share
// that one core, which is what a calibrated mpi profile models); "core:overload-allowed" when
// there are more ranks than cores (Open MPI then places them round-robin, several to a core).
// Unbound ranks on a 2-core machine time-slice each other's threads, and a rank's copy lost
// about half its speed whenever the other rank's threads were busy (docs/exec.md, "Binding").
std::string mpirun_binding(int np, int cores);

// Runs the mpirun command as a child and waits for it (exec --np, calibrate --np). Meanwhile Ctrl-C is left to
// mpirun and the ranks (one process group), and a SIGTERM sent to this process alone is passed
// on to mpirun. Returns mpirun's exit code (128 + N when it ended by signal N); throws
// InputError("--np") when mpirun cannot be started. After a failure other than exit 2 (bad
// input), names the ranks that left no rank_report_file (reports/outputs.h) in `reports_dir` while others did:
// they died without a word (killed, crashed), which mpirun's own text makes easy to miss.
// An empty `reports_dir` names none.
int relaunch_under_mpirun_and_wait(int np, const std::string& subcommand, const std::vector<std::string>& args,
                                   const std::string& reports_dir);

// Runs the mpirun command as a child and returns its exit code (128 + signal when killed, 127
// when mpirun could not be run): one step of validate. Signals as relaunch_under_mpirun_and_wait:
// a SIGTERM to this process is passed on to mpirun, Ctrl-C is left to mpirun and the ranks.
int run_under_mpirun(int np, const std::string& subcommand, const std::vector<std::string>& args);

}  // namespace shardline::cli
