#include "exec/clock_align.h"

#include <limits>

#include "exec/mpi/host_comm_mpi.h"

namespace shardline::exec {

ClockAlignment align_clocks(const HostComm& host, const std::function<double()>& now_us, int rounds) {
  const MPI_Comm comm = host.mpi().comm;
  const int rank = host.rank(), size = host.size();
  ClockAlignment a;
  constexpr int kTag = 7301;
  for (int peer = 1; peer < size; ++peer) {
    MPI_Barrier(comm);
    if (rank == 0) {
      for (int i = 0; i < rounds; ++i) {
        char ping = 0;
        MPI_Recv(&ping, 1, MPI_CHAR, peer, kTag, comm, MPI_STATUS_IGNORE);
        const double t = now_us();
        MPI_Send(&t, 1, MPI_DOUBLE, peer, kTag, comm);
      }
    } else if (rank == peer) {
      double best_rtt = std::numeric_limits<double>::infinity();
      for (int i = 0; i < rounds; ++i) {
        char ping = 0;
        const double t0 = now_us();
        MPI_Send(&ping, 1, MPI_CHAR, 0, kTag, comm);
        double remote = 0;
        MPI_Recv(&remote, 1, MPI_DOUBLE, 0, kTag, comm, MPI_STATUS_IGNORE);
        const double t1 = now_us();
        if (t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          a.offset_us = remote - 0.5 * (t0 + t1);
          a.error_us = 0.5 * best_rtt;
        }
      }
    }
  }
  return a;
}

}  // namespace shardline::exec
