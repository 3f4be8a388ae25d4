#include "exec/mpi/mpi_env.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"

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

namespace {

// The ranks of `comm` on this node (MPI_COMM_TYPE_SHARED), freed when it goes.
struct NodeComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 1;
  explicit NodeComm(MPI_Comm of) {
    MPI_Comm_split_type(of, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &comm);
    MPI_Comm_size(comm, &size);
  }
  ~NodeComm() { MPI_Comm_free(&comm); }
  NodeComm(const NodeComm&) = delete;
  NodeComm& operator=(const NodeComm&) = delete;
};

}  // namespace

int mpi_local_ranks(MPI_Comm comm) { return NodeComm(comm).size; }

int mpi_local_cores(MPI_Comm comm) {
  const NodeComm node(comm);
  cpu_set_t own;
  CPU_ZERO(&own);
  // A mask that cannot be read (a host with more processors than cpu_set_t holds) counts as every
  // processor: no "ranks share cores" note is better than a false one.
  if (::sched_getaffinity(0, sizeof own, &own) != 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &own);
  std::vector<cpu_set_t> all(static_cast<size_t>(node.size));
  MPI_Allgather(&own, sizeof own, MPI_BYTE, all.data(), sizeof own, MPI_BYTE, node.comm);
  cpu_set_t any;
  CPU_ZERO(&any);
  for (cpu_set_t& set : all) CPU_OR(&any, &any, &set);
  return std::max(1, CPU_COUNT(&any));
}

int mpi_poll_us_from_env() {
  const char* text = std::getenv("SHARDLINE_MPI_POLL_US");
  if (text == nullptr || *text == '\0') return kDefaultMpiPollUs;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0')
    throw InputError("SHARDLINE_MPI_POLL_US", std::string("\"") + text + "\" is not a whole number of microseconds (e.g. 100; 0 yields, -1 spins)");
  if (errno == ERANGE || v > 1'000'000 || v < -1)
    throw InputError("SHARDLINE_MPI_POLL_US", std::string("\"") + text + "\" is out of range; expected -1 (spin), 0 (yield) or 1..1000000 microseconds");
  return static_cast<int>(v);
}

int mpi_wait_polling(MPI_Request& request, int poll_us) {
  for (;;) {
    int flag = 0;
    const int rc = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || flag) return rc;
    if (poll_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(poll_us));
    else if (poll_us == 0) std::this_thread::yield();
  }
}

void mpi_barrier_polling(MPI_Comm comm) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  mpi_wait_polling(r, mpi_poll_us_from_env());
}

}  // namespace shardline::exec
