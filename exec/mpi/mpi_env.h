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
// Number of processors the ranks of `comm` on this node may run on: the union of their affinity
// masks (what mpirun's binding and a taskset around the launch leave them). Collective over comm.
int mpi_local_cores(MPI_Comm comm);

// How a thread waits for a nonblocking MPI request: MPI_Test, and between tests a sleep of
// `poll_us` microseconds (0: sched_yield, < 0: spin). A spinning waiter (what Open MPI's
// blocking calls do) keeps a core busy that, on a machine with fewer cores than threads, the
// copies, the other stream threads and the other ranks need; sleeping frees it at the price of
// up to poll_us of completion delay. calibrate runs the same waits, so the measured collective
// times include that delay (docs/exec.md).
inline constexpr int kDefaultMpiPollUs = 100;
// SHARDLINE_MPI_POLL_US when set (a whole number), else kDefaultMpiPollUs; InputError otherwise.
int mpi_poll_us_from_env();
// Returns the first error code MPI_Test gave, or MPI_SUCCESS once the request completed.
int mpi_wait_polling(MPI_Request& request, int poll_us);
// MPI_Ibarrier waited for with mpi_wait_polling(mpi_poll_us_from_env()): the runner's and
// calibrate's barriers between passes, so a rank that finished early does not spin on a core
// the others still need for the end of their pass.
void mpi_barrier_polling(MPI_Comm comm);

}  // namespace shardline::exec
