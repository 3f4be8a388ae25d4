// MPI split and gather of sweep rows (see sweep/sweep_mpi.h).
#include "sweep/sweep_mpi.h"

#include <cstdlib>
#include <string>

#define OMPI_SKIP_MPICXX 1  // C bindings only
#include <mpi.h>

namespace shardline {
namespace {

bool launched_under_mpirun() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size == nullptr) size = std::getenv("PMI_SIZE");
  return size != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace

SweepMpi::SweepMpi() {
  if (!launched_under_mpirun()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  active_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
}

SweepMpi::~SweepMpi() {
  if (!active_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::vector<size_t> SweepMpi::my_indices(size_t total) const {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(size_)) out.push_back(i);
  return out;
}

std::vector<std::string> SweepMpi::gather_to_root(const std::string& payload) const {
  if (!active_) return {payload};
  const long long mine = static_cast<long long>(payload.size());
  std::vector<long long> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Gather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  // Large payloads go in chunks below INT_MAX via point-to-point, so one Gatherv count never
  // overflows.
  std::vector<std::string> out;
  constexpr long long kChunk = 1LL << 30;
  if (rank_ == 0) {
    out.resize(static_cast<size_t>(size_));
    out[0] = payload;
    for (int r = 1; r < size_; ++r) {
      std::string& buf = out[static_cast<size_t>(r)];
      buf.resize(static_cast<size_t>(sizes[static_cast<size_t>(r)]));
      for (long long off = 0; off < static_cast<long long>(buf.size()); off += kChunk) {
        const int n = static_cast<int>(std::min(kChunk, static_cast<long long>(buf.size()) - off));
        MPI_Recv(buf.data() + off, n, MPI_CHAR, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
  } else {
    for (long long off = 0; off < mine; off += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, mine - off));
      MPI_Send(payload.data() + off, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  return out;
}

void SweepMpi::abort(int code) const {
  if (active_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace shardline
