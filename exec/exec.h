// The executor's entry: `execute` initializes MPI (MPI_THREAD_MULTIPLE), builds the requested
// backend ("mpi" or "nccl") and runs the Program (exec/runner.h). Every rank calls it.
#pragma once
#include <string>

#include "core/program.h"
#include "exec/runner.h"

namespace shardline::exec {

// Throws InputError("--backend", ...) for an unknown backend or one this build lacks.
ExecResult execute(const Program& program, const std::string& backend, const ExecOptions& options);

// MPI lifetime for the CLI: init is idempotent; finalize once at the end.
void init_mpi();
int mpi_rank();
int mpi_world();
void finalize_mpi();
// True when this process runs under mpirun (Open MPI's or a PMI launcher's environment).
bool launched_by_mpirun();
// Whether this build has the NCCL backend, and whether a GPU is visible.
bool have_nccl_backend();
bool have_gpu();

}  // namespace shardline::exec
