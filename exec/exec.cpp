#include "exec/exec.h"

#include <cstdlib>

#include "core/error.h"
#include "exec/mpi/mpi_backend.h"
#include "exec/mpi/mpi_env.h"
#ifdef SHARDLINE_HAVE_NCCL
#include "exec/nccl/nccl_backend.h"
#endif

namespace shardline::exec {

void init_mpi() { mpi_init_thread_multiple(); }

int mpi_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int mpi_world() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

void finalize_mpi() { mpi_finalize(); }

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

bool have_nccl_backend() {
#ifdef SHARDLINE_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

bool have_gpu() {
#ifdef SHARDLINE_HAVE_NCCL
  return nccl_gpu_count() > 0;
#else
  return false;
#endif
}

ExecResult execute(const Program& program, const std::string& backend_name, const ExecOptions& options) {
  init_mpi();
  MPI_Comm host;
  MPI_Comm_dup(MPI_COMM_WORLD, &host);
  std::unique_ptr<Backend> backend;
  if (backend_name == "mpi") {
    backend = make_mpi_backend(MPI_COMM_WORLD);
  } else if (backend_name == "nccl") {
#ifdef SHARDLINE_HAVE_NCCL
    backend = make_nccl_backend(MPI_COMM_WORLD);
#else
    MPI_Comm_free(&host);
    throw InputError("--backend", "this shardline was built without CUDA/NCCL; rebuild with -DSHARDLINE_CUDA=ON");
#endif
  } else {
    MPI_Comm_free(&host);
    throw InputError("--backend", "unknown backend \"" + backend_name + "\"; expected mpi or nccl");
  }
  if (options.compute == ComputeMode::Kernel && backend_name != "nccl")
    throw InputError("--compute", "kernel stand-ins need --backend nccl; use sleep or spin");
  ExecResult r;
  try {
    r = run_program(program, options, *backend, host);
  } catch (...) {
    backend.reset();
    MPI_Comm_free(&host);
    throw;
  }
  backend.reset();
  MPI_Comm_free(&host);
  return r;
}

}  // namespace shardline::exec
