// The host side of an mpirun job: MPI's lifetime, and the coordination between ranks that the
// runner, calibrate, the collective benchmarks and the sweep's split do on the host (barriers,
// broadcasts from rank 0, max / min / sum over ranks, gathers to rank 0). The streams' own
// collectives are the Backend's (exec/backend.h). <mpi.h> stays in the .cpp files; MPI code
// that needs the communicator itself reads it from exec/mpi/host_comm_mpi.h.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace shardline::exec {

// True when this process runs under mpirun (Open MPI's or a PMI launcher's environment).
bool launched_by_mpirun();
// MPI for the executor: initialized once with MPI_THREAD_MULTIPLE (stream threads call MPI);
// throws std::runtime_error naming the level the library provides when it is lower.
void init_mpi();
// MPI for host coordination from one thread only (the sweep): MPI_Init unless MPI is already
// initialized.
void init_mpi_host_only();
// MPI_COMM_WORLD's rank and size.
int mpi_rank();
int mpi_world();
// MPI_Finalize, once, when MPI is initialized and not yet finalized.
void finalize_mpi();
// Ends every process of the job with exit code `code` (MPI_Abort on MPI_COMM_WORLD).
void abort_job(int code);

// How the calling thread waits for a host collective: inside MPI (Open MPI spins), or by
// polling per SHARDLINE_MPI_POLL_US (mpi_wait_polling, exec/mpi/mpi_env.h), which leaves the
// core to the stream threads and the other ranks between tests.
enum class HostWait { Blocking, Polling };

// A communicator over every rank of the job, for the host thread. Every rank makes the same
// calls in the same order.
class HostComm {
 public:
  struct Mpi;  // the MPI communicator: exec/mpi/host_comm_mpi.h

  // A duplicate of MPI_COMM_WORLD (collective; MPI must be initialized).
  static HostComm duplicate_world();
  HostComm(HostComm&& other) noexcept;
  HostComm& operator=(HostComm&& other) = delete;
  ~HostComm();  // frees the communicator; destroy it before finalize_mpi()

  int rank() const { return rank_; }
  int size() const { return size_; }
  int ranks_on_this_node() const;
  const Mpi& mpi() const { return *mpi_; }

  void barrier(HostWait wait) const;
  // Rank 0's value, on every rank.
  double broadcast_from_root(double value) const;
  // The maximum / minimum over ranks, on every rank; the span form works element by element,
  // in place.
  double max_over_ranks(double value, HostWait wait = HostWait::Blocking) const;
  int64_t max_over_ranks(int64_t value) const;
  void max_over_ranks(std::span<double> values) const;
  int64_t min_over_ranks(int64_t value) const;
  // The sum over ranks on rank 0; 0 elsewhere.
  int64_t sum_on_root(int64_t value) const;
  // Every rank's `text` / `values`, in rank order, on rank 0; empty elsewhere. Texts of any
  // length (sent in chunks below INT_MAX).
  std::vector<std::string> gather_to_root(const std::string& text) const;
  std::vector<std::vector<double>> gather_to_root(const std::vector<double>& values) const;

 private:
  explicit HostComm(std::unique_ptr<Mpi> mpi);
  std::unique_ptr<Mpi> mpi_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace shardline::exec
