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

void check_backend_usable(const std::string& backend) {
  if (backend != "mpi" && backend != "nccl") throw InputError("--backend", "expected mpi or nccl, got \"" + backend + "\"");
  if (backend == "nccl" && !have_nccl_backend())
    throw InputError("--backend", "this shardline was built without CUDA/NCCL; rebuild with -DSHARDLINE_CUDA=ON");
  if (backend == "nccl" && !have_gpu())
    throw InputError("--backend", "nccl needs one GPU per rank, and this machine has none; use --backend mpi");
}

ExecResult execute(const Program& program, const std::string& backend_name, const ExecOptions& options) {
  init_mpi();
  const HostComm host = HostComm::duplicate_world();
  const std::unique_ptr<Backend> backend = make_backend(backend_name);
  check_compute_mode(options.compute, backend_name);
  return run_program(program, options, *backend, host);
}

void check_compute_mode(ComputeMode mode, const std::string& backend) {
  if (mode == ComputeMode::Kernel && backend != "nccl")
    throw InputError("--compute", "kernel stand-ins need --backend nccl; use sleep or spin");
}

ComputeMode compute_mode_of(const std::string& compute, const std::string& backend) {
  const std::string name = compute.empty() ? (backend == "nccl" ? "kernel" : "sleep") : compute;
  ComputeMode mode = ComputeMode::Sleep;
  if (name == "spin") mode = ComputeMode::Spin;
  else if (name == "kernel") mode = ComputeMode::Kernel;
  else if (name != "sleep") throw InputError("--compute", "expected sleep, spin or kernel, got \"" + name + "\"");
  check_compute_mode(mode, backend);
  return mode;
}

}  // namespace shardline::exec
