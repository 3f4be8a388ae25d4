#include "exec/mpi/mpi_env.h"

#include <stdexcept>

namespace shardline::exec {

void mpi_init_thread_multiple() {
  if (mpi_initialized()) {
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE)
      throw std::runtime_error("MPI was initialized without MPI_THREAD_MULTIPLE, which shardline exec needs");
    return;
  }
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    const char* names[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED"};
    throw std::runtime_error(std::string("the MPI library provides only ") +
                             (provided >= 0 && provided < 3 ? names[provided] : "an unknown thread level") +
                             "; shardline exec runs collectives from several stream threads and needs "
                             "MPI_THREAD_MULTIPLE (build Open MPI with thread support)");
  }
}

bool mpi_initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

void mpi_finalize() {
  if (mpi_initialized()) MPI_Finalize();
}

std::string mpi_error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, len);
}

int mpi_local_ranks(MPI_Comm comm) {
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int n = 1;
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  return n;
}

}  // namespace shardline::exec
