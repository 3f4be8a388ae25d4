// Making an execution Backend by name: "mpi" (exec/mpi: processes, stream threads) or "nccl"
// (exec/nccl: one GPU per rank; in builds with CUDA). Both span MPI_COMM_WORLD, so MPI must be
// initialized (exec/host_comm.h) before a backend is made; naming one needs no MPI.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "exec/backend.h"

namespace shardline::exec {

// How the mpi backend's stream threads wait for their collectives when SHARDLINE_MPI_POLL_US
// is unset (when it is set, it decides; exec/mpi/mpi_env.h).
enum class MpiStreamWait {
  Poll,  // every kDefaultMpiPollUs: what exec and calibrate do
  Spin,  // the collective benchmarks, which measure collectives alone
};

using BackendMaker = std::function<std::unique_ptr<Backend>()>;

// Checks `name` now: InputError("--backend", ...) for an unknown name, or for nccl in a build
// without CUDA/NCCL. The maker builds a fresh backend of that kind on every call.
BackendMaker backend_maker(const std::string& name, MpiStreamWait mpi_wait = MpiStreamWait::Poll);

// One backend: backend_maker(name, mpi_wait)().
std::unique_ptr<Backend> make_backend(const std::string& name, MpiStreamWait mpi_wait = MpiStreamWait::Poll);

}  // namespace shardline::exec
