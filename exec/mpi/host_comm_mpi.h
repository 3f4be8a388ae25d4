// The MPI communicator inside a HostComm (exec/host_comm.h), for exec's own MPI code that runs
// over the host communicator itself (clock alignment's ping-pong).
#pragma once
#include <mpi.h>

#include "exec/host_comm.h"

namespace shardline::exec {

struct HostComm::Mpi {
  MPI_Comm comm = MPI_COMM_NULL;
};

}  // namespace shardline::exec
