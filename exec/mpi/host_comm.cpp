// Host coordination over MPI (see exec/host_comm.h).
#include "exec/host_comm.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "exec/mpi/host_comm_mpi.h"
#include "exec/mpi/mpi_env.h"

namespace shardline::exec {

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

void init_mpi() { mpi_init_thread_multiple(); }

void init_mpi_host_only() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
}

int mpi_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int mpi_world() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

void finalize_mpi() { mpi_finalize(); }

void abort_job(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

HostComm HostComm::duplicate_world() {
  auto mpi = std::make_unique<Mpi>();
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi->comm);
  return HostComm(std::move(mpi));
}

HostComm::HostComm(std::unique_ptr<Mpi> mpi) : mpi_(std::move(mpi)) {
  MPI_Comm_rank(mpi_->comm, &rank_);
  MPI_Comm_size(mpi_->comm, &size_);
}

HostComm::HostComm(HostComm&& other) noexcept = default;

HostComm::~HostComm() {
  if (mpi_ && mpi_->comm != MPI_COMM_NULL) MPI_Comm_free(&mpi_->comm);
}

int HostComm::ranks_on_this_node() const { return mpi_local_ranks(mpi_->comm); }

void HostComm::barrier(HostWait wait) const {
  if (wait == HostWait::Polling) mpi_barrier_polling(mpi_->comm);
  else MPI_Barrier(mpi_->comm);
}

double HostComm::broadcast_from_root(double value) const {
  MPI_Bcast(&value, 1, MPI_DOUBLE, 0, mpi_->comm);
  return value;
}

double HostComm::max_over_ranks(double value, HostWait wait) const {
  double worst = 0;
  if (wait == HostWait::Polling) {
    MPI_Request request;
    MPI_Iallreduce(&value, &worst, 1, MPI_DOUBLE, MPI_MAX, mpi_->comm, &request);
    mpi_wait_polling(request, mpi_poll_us_from_env());
  } else {
    MPI_Allreduce(&value, &worst, 1, MPI_DOUBLE, MPI_MAX, mpi_->comm);
  }
  return worst;
}

int64_t HostComm::max_over_ranks(int64_t value) const {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MAX, mpi_->comm);
  return value;
}

void HostComm::max_over_ranks(std::span<double> values) const {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX, mpi_->comm);
}

int64_t HostComm::min_over_ranks(int64_t value) const {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MIN, mpi_->comm);
  return value;
}

int64_t HostComm::sum_on_root(int64_t value) const {
  int64_t sum = 0;
  MPI_Reduce(&value, &sum, 1, MPI_INT64_T, MPI_SUM, 0, mpi_->comm);
  return sum;
}

std::vector<std::string> HostComm::gather_to_root(const std::string& text) const {
  const long long mine = static_cast<long long>(text.size());
  std::vector<long long> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Gather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, mpi_->comm);
  // Large texts go in chunks below INT_MAX via point-to-point, so no count overflows.
  std::vector<std::string> out;
  constexpr long long kChunk = 1LL << 30;
  if (rank_ == 0) {
    out.resize(static_cast<size_t>(size_));
    out[0] = text;
    for (int r = 1; r < size_; ++r) {
      std::string& buf = out[static_cast<size_t>(r)];
      buf.resize(static_cast<size_t>(sizes[static_cast<size_t>(r)]));
      for (long long off = 0; off < static_cast<long long>(buf.size()); off += kChunk) {
        const int n = static_cast<int>(std::min(kChunk, static_cast<long long>(buf.size()) - off));
        MPI_Recv(buf.data() + off, n, MPI_CHAR, r, 0, mpi_->comm, MPI_STATUS_IGNORE);
      }
    }
  } else {
    for (long long off = 0; off < mine; off += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, mine - off));
      MPI_Send(text.data() + off, n, MPI_CHAR, 0, 0, mpi_->comm);
    }
  }
  return out;
}

std::vector<std::vector<double>> HostComm::gather_to_root(const std::vector<double>& values) const {
  int count = static_cast<int>(values.size());
  std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, mpi_->comm);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<double> all(static_cast<size_t>(std::max(total, 1)));
  MPI_Gatherv(values.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, mpi_->comm);
  std::vector<std::vector<double>> out;
  if (rank_ != 0) return out;
  out.reserve(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const auto first = all.begin() + displs[static_cast<size_t>(r)];
    out.emplace_back(first, first + counts[static_cast<size_t>(r)]);
  }
  return out;
}

}  // namespace shardline::exec
