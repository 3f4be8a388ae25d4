// The CPU backend: ranks are MPI processes, each stream is a worker thread with a FIFO queue,
// events are per-op completion flags with a condition variable, buffers are host memory, and
// collectives are MPI calls on a per-stream communicator for each group (MPI_Comm_split).
// MPI must run with MPI_THREAD_MULTIPLE (exec/mpi/mpi_env.h checks it).
#pragma once
#include <memory>

#include <mpi.h>

#include "exec/backend.h"

namespace shardline::exec {

// How a stream thread waits for its nonblocking collective: it calls MPI_Test, and between
// tests sleeps `poll_us` microseconds (0: sched_yield, < 0: spins). A spinning waiter keeps a
// core busy that, on a machine with fewer cores than threads, the copies and the other ranks
// need; sleeping frees it at the price of up to poll_us of completion delay, which calibrate
// measures along with the collective since it runs the same backend (docs/exec.md).
inline constexpr int kDefaultMpiPollUs = 100;
// SHARDLINE_MPI_POLL_US when set (an integer), else kDefaultMpiPollUs.
int mpi_poll_us_from_env();

// `world` is duplicated; the backend's communicators are split from it.
std::unique_ptr<Backend> make_mpi_backend(MPI_Comm world, int poll_us = mpi_poll_us_from_env());

}  // namespace shardline::exec
