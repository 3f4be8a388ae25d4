#include "exec/exec.h"

#include "core/error.h"
#include "exec/backend_factory.h"
#ifdef SHARDLINE_HAVE_NCCL
#include "exec/nccl/nccl_backend.h"
#endif

namespace shardline::exec {

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
  const HostComm host = HostComm::duplicate_world();
  const std::unique_ptr<Backend> backend = make_backend(backend_name);
  if (options.compute == ComputeMode::Kernel && backend_name != "nccl")
    throw InputError("--compute", "kernel stand-ins need --backend nccl; use sleep or spin");
  return run_program(program, options, *backend, host);
}

}  // namespace shardline::exec
