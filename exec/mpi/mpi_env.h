// MPI process setup shared by the backends: initialization with MPI_THREAD_MULTIPLE (the
// stream threads call MPI concurrently), MPI error strings, and per-node facts.
#pragma once
#include <string>

#include <mpi.h>

namespace shardline::exec {

// Initializes MPI once with MPI_THREAD_MULTIPLE; throws std::runtime_error naming the level
// the library provides when it is lower.
void mpi_init_thread_multiple();
bool mpi_initialized();
void mpi_finalize();
// "MPI_ERR_...: text" for a return code.
std::string mpi_error_string(int rc);
// Number of ranks of `comm` on this node (MPI_COMM_TYPE_SHARED).
int mpi_local_ranks(MPI_Comm comm);

}  // namespace shardline::exec
