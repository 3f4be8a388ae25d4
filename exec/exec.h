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

// The compute stand-in a `--compute` value names on `backend` ("" = the backend's default: kernel
// on nccl, sleep on mpi). InputError("--compute") for an unknown name, and (check_compute_mode)
// for kernel stand-ins on a backend other than nccl: exec and calibrate check it before mpirun
// starts, and execute and calibrate_backend again for callers of the library.
ComputeMode compute_mode_of(const std::string& compute, const std::string& backend);
void check_compute_mode(ComputeMode mode, const std::string& backend);

// Whether this build has the NCCL backend, and whether a GPU is visible.
bool have_nccl_backend();
bool have_gpu();

// A --backend value that can run here: InputError("--backend", ...) for a name other than mpi
// or nccl, for nccl in a build without CUDA/NCCL, and for nccl on a machine without a GPU.
// exec, calibrate and validate check it before mpirun starts: one message, not one per rank.
void check_backend_usable(const std::string& backend);

}  // namespace shardline::exec
