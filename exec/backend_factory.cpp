// Backends by name (see exec/backend_factory.h).
#include "exec/backend_factory.h"

#include <cstdlib>

#include "core/error.h"
#include "exec/mpi/mpi_backend.h"
#include "exec/mpi/mpi_env.h"
#ifdef SHARDLINE_HAVE_NCCL
#include "exec/nccl/nccl_backend.h"
#endif

namespace shardline::exec {

BackendMaker backend_maker(const std::string& name, MpiStreamWait mpi_wait) {
  if (name == "mpi") {
    return [mpi_wait] {
      const bool spin = mpi_wait == MpiStreamWait::Spin && std::getenv("SHARDLINE_MPI_POLL_US") == nullptr;
      return make_mpi_backend(MPI_COMM_WORLD, spin ? -1 : mpi_poll_us_from_env());
    };
  }
  if (name == "nccl") {
#ifdef SHARDLINE_HAVE_NCCL
    return [] { return make_nccl_backend(MPI_COMM_WORLD); };
#else
    throw InputError("--backend", "this shardline was built without CUDA/NCCL; rebuild with -DSHARDLINE_CUDA=ON");
#endif
  }
  throw InputError("--backend", "unknown backend \"" + name + "\"; expected mpi or nccl");
}

std::unique_ptr<Backend> make_backend(const std::string& name, MpiStreamWait mpi_wait) {
  return backend_maker(name, mpi_wait)();
}

}  // namespace shardline::exec
