// The GPU backend: one GPU per rank (one process each under mpirun), streams are CUDA streams
// at the priorities of the Program's stream table, events are CUDA events (also
// the timestamps), collectives are NCCL on a per-stream communicator per group (the
// ncclUniqueId is broadcast over MPI), compute stand-ins are a spin kernel calibrated to the
// requested duration. Compiled only with SHARDLINE_CUDA.
#pragma once
#include <memory>

#include <mpi.h>

#include "exec/backend.h"

namespace shardline::exec {

// Throws InputError("--backend", ...) when this rank has no GPU of its own.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm world);
// GPUs visible to this process (0 when the driver or a device is missing).
int nccl_gpu_count();

}  // namespace shardline::exec
