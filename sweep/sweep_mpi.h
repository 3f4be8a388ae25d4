// Splitting a sweep across MPI ranks: MPI is initialised only when the process was launched
// under mpirun (OMPI_COMM_WORLD_SIZE / PMIX_RANK set); otherwise everything runs in-process as
// rank 0 of 1. Rank r evaluates the grid indices i with i % size == r; rows are gathered on
// rank 0 as JSON text over exec's host communicator (exec/host_comm.h).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "exec/host_comm.h"

namespace shardline {

class SweepMpi {
 public:
  SweepMpi();   // MPI_Init when launched under mpirun
  ~SweepMpi();  // MPI_Finalize when it initialised
  SweepMpi(const SweepMpi&) = delete;
  SweepMpi& operator=(const SweepMpi&) = delete;

  bool active() const { return host_.has_value(); }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_size() const { return local_size_; }  // ranks on this machine (threads share cores)

  // This rank's share of a grid of `total` points.
  std::vector<size_t> my_indices(size_t total) const;
  // Every rank's `payload`, in rank order, on rank 0; empty elsewhere.
  std::vector<std::string> gather_to_root(const std::string& payload) const;
  // Ends the whole job (an internal error on one rank must not leave the others waiting).
  [[noreturn]] void abort(int code) const;

 private:
  std::optional<exec::HostComm> host_;  // set when launched under mpirun
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
};

}  // namespace shardline
