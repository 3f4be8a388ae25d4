// MPI split and gather of sweep rows (see sweep/sweep_mpi.h).
#include "sweep/sweep_mpi.h"

#include <cstdlib>
#include <string>

namespace shardline {

SweepMpi::SweepMpi() {
  if (!exec::launched_by_mpirun()) return;
  exec::init_mpi_host_only();
  host_.emplace(exec::HostComm::duplicate_world());
  rank_ = host_->rank();
  size_ = host_->size();
  local_size_ = host_->ranks_on_this_node();
}

SweepMpi::~SweepMpi() {
  if (!host_) return;
  host_.reset();
  exec::finalize_mpi();
}

std::vector<size_t> SweepMpi::my_indices(size_t total) const {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(size_)) out.push_back(i);
  return out;
}

std::vector<std::string> SweepMpi::gather_to_root(const std::string& payload) const {
  if (!host_) return {payload};
  return host_->gather_to_root(payload);
}

void SweepMpi::abort(int code) const {
  if (host_) exec::abort_job(code);
  std::exit(code);
}

}  // namespace shardline
