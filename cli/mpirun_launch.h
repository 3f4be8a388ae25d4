// Launching a shardline subcommand under mpirun, for the --np convenience flags of calibrate and
// validate: the same mpirun line `exec --np` uses (--oversubscribe, --bind-to none, and
// --allow-run-as-root as root; SHARDLINE_MPIEXEC overrides the launcher).
#pragma once
#include <string>
#include <vector>

namespace shardline::cli {

// argv of `mpirun ... -n NP <this shardline> SUBCOMMAND ARGS`, with --np N / --np=N removed
// from ARGS.
std::vector<std::string> mpirun_command(int np, const std::string& subcommand, const std::vector<std::string>& args);

// Replaces this process with the mpirun command; throws InputError("--np") when it cannot.
[[noreturn]] void exec_under_mpirun(int np, const std::string& subcommand, const std::vector<std::string>& args);

// Runs the mpirun command as a child and returns its exit code (128 + signal when killed).
int run_under_mpirun(int np, const std::string& subcommand, const std::vector<std::string>& args);

// Runs this shardline binary (no mpirun) with a subcommand, returns its exit code.
int run_self(const std::string& subcommand, const std::vector<std::string>& args);

}  // namespace shardline::cli
