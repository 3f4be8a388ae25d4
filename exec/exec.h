// The executor's entry: `execute` initializes MPI (MPI_THREAD_MULTIPLE), builds the requested
// backend ("mpi" or "nccl", exec/backend_factory.h) and runs the Program (exec/runner.h). Every
// rank calls it. MPI's lifetime for the CLI (init_mpi, finalize_mpi, ...) is in exec/host_comm.h.
#pragma once
#include <string>

#include "core/program.h"
#include "exec/host_comm.h"
#include "exec/runner.h"

namespace shardline::exec {

// Throws InputError("--backend", ...) for an unknown backend or one this build lacks.
ExecResult execute(const Program& program, const std::string& backend, const ExecOptions& options);

// Whether this build has the NCCL backend, and whether a GPU is visible.
bool have_nccl_backend();
bool have_gpu();

}  // namespace shardline::exec
