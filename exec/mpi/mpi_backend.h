// The CPU backend: ranks are MPI processes, each stream is a worker thread with a FIFO queue,
// events are per-op completion flags with a condition variable, buffers are host memory, and
// collectives are MPI calls on a per-stream communicator for each group (MPI_Comm_split).
// MPI must run with MPI_THREAD_MULTIPLE (exec/mpi/mpi_env.h checks it).
#pragma once
#include <memory>

#include <mpi.h>

#include "exec/backend.h"
#include "exec/mpi/mpi_env.h"

namespace shardline::exec {

// `world` is duplicated; the backend's communicators are split from it. Stream threads wait
// for their nonblocking collectives with mpi_wait_polling(poll_us) (exec/mpi/mpi_env.h).
std::unique_ptr<Backend> make_mpi_backend(MPI_Comm world, int poll_us = mpi_poll_us_from_env());

}  // namespace shardline::exec
