#include "exec/nccl/nccl_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "core/error.h"
#include "exec/mpi/mpi_env.h"

namespace shardline::exec {

cudaError_t launch_spin_kernel(long long cycles, cudaStream_t stream);  // spin_kernel.cu

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(MPI_Comm world) {
    MPI_Comm_dup(world, &world_);
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &world_size_);
    const int gpus = nccl_gpu_count();
    const int local = mpi_local_ranks(world_);
    if (gpus == 0) throw InputError("--backend", "nccl needs one GPU per rank, and this machine has none; use --backend mpi");
    if (local > gpus)
      throw InputError("--backend", "nccl needs one GPU per rank: " + std::to_string(local) + " ranks on this node, " +
                                        std::to_string(gpus) + " GPUs");
    MPI_Comm node;
    MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local_rank = 0;
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    cuda_check(cudaSetDevice(local_rank), "cudaSetDevice");
    // The backend's own stream: the spin-kernel calibration and each pass's time origin.
    cuda_check(cudaStreamCreateWithFlags(&timing_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    cuda_check(cudaEventCreate(&ref_), "cudaEventCreate");
    calibrate();
  }

  ~NcclBackend() override {
    cudaDeviceSynchronize();
    for (auto& [key, c] : comms_) ncclCommDestroy(c);
    for (auto e : start_) cudaEventDestroy(e);
    for (auto e : end_) cudaEventDestroy(e);
    cudaEventDestroy(ref_);
    for (auto s : streams_) cudaStreamDestroy(s);
    cudaStreamDestroy(timing_stream_);
    MPI_Comm_free(&world_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int world() const override { return world_size_; }

  int64_t available_bytes() override {
    size_t free_b = 0, total = 0;
    cuda_check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
    return static_cast<int64_t>(free_b);
  }

  void* allocate(int64_t bytes) override {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1))), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, int64_t bytes) override {
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  void download(void* dst, const void* src, int64_t bytes) override {
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }

  // Each stream at its table priority (CUDA's convention, lower runs first), clamped to the
  // device's range.
  void create_streams(const std::vector<StreamInfo>& streams) override {
    if (!streams_.empty()) throw std::logic_error("nccl backend: streams created twice");
    int least = 0, greatest = 0;
    cuda_check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    for (const StreamInfo& info : streams) {
      cudaStream_t st = nullptr;
      const int priority = std::clamp(info.priority, greatest, least);
      cuda_check(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, priority), "cudaStreamCreateWithPriority");
      streams_.push_back(st);
      stream_names_.push_back(info.name);
    }
  }

  void create_communicator(int stream, int group, const GroupInfo& pattern) override {
    MPI_Comm sub;
    MPI_Comm_split(world_, pattern.color(rank_), pattern.index(rank_), &sub);
    int size = 0, sub_rank = 0;
    MPI_Comm_size(sub, &size);
    MPI_Comm_rank(sub, &sub_rank);
    if (size != pattern.size)
      throw std::runtime_error("the " + pattern.name + " group has " + std::to_string(size) + " ranks, expected " +
                               std::to_string(pattern.size));
    ncclUniqueId id;
    if (sub_rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId", stream);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, sub);
    ncclComm_t c;
    nccl_check(ncclCommInitRank(&c, size, id, sub_rank), "ncclCommInitRank", stream);
    MPI_Comm_free(&sub);
    comms_[{stream, group}] = c;
  }

  void begin_pass(int pass, int num_ops) override {
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (static_cast<int>(start_.size()) != num_ops) {
      for (auto e : start_) cudaEventDestroy(e);
      for (auto e : end_) cudaEventDestroy(e);
      start_.assign(num_ops, nullptr);
      end_.assign(num_ops, nullptr);
      for (int i = 0; i < num_ops; ++i) {
        cuda_check(cudaEventCreate(&start_[i]), "cudaEventCreate");
        cuda_check(cudaEventCreate(&end_[i]), "cudaEventCreate");
      }
      recorded_ = std::vector<std::atomic<int>>(num_ops);
      for (auto& r : recorded_) r.store(-1);
    }
    pass_ = pass;
    cuda_check(cudaEventRecord(ref_, timing_stream_), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(ref_), "cudaEventSynchronize");
    ref_host_us_ = now_us();
  }

  void wait_op(int stream, int op) override {
    cuda_check(cudaStreamWaitEvent(s(stream), end_[op], 0), "cudaStreamWaitEvent");
  }
  void begin_op(int stream, int op) override { cuda_check(cudaEventRecord(start_[op], s(stream)), "cudaEventRecord"); }
  void end_op(int stream, int op) override {
    cuda_check(cudaEventRecord(end_[op], s(stream)), "cudaEventRecord");
    recorded_[op].store(pass_);
  }

  void copy(int stream, std::vector<CopySpan> spans) override {
    for (const auto& sp : spans)
      cuda_check(cudaMemcpyAsync(sp.dst, sp.src, sp.bytes, cudaMemcpyDeviceToDevice, s(stream)), "cudaMemcpyAsync");
  }

  void all_gather(int stream, int group, const CollectiveArgs& a) override {
    nccl_check(ncclAllGather(a.in, a.out, a.count, type(a.width), comm(stream, group), s(stream)), "ncclAllGather", stream);
  }
  void reduce_scatter(int stream, int group, const CollectiveArgs& a) override {
    nccl_check(ncclReduceScatter(a.in, a.out, a.count, type(a.width), a.average ? ncclAvg : ncclSum, comm(stream, group),
                                 s(stream)),
               "ncclReduceScatter", stream);
  }
  void all_reduce(int stream, int group, const CollectiveArgs& a) override {
    nccl_check(ncclAllReduce(a.in, a.out, a.count, type(a.width), a.average ? ncclAvg : ncclSum, comm(stream, group),
                             s(stream)),
               "ncclAllReduce", stream);
  }

  void compute(int stream, double duration_us, ComputeMode) override {
    const auto cycles = static_cast<long long>(duration_us * cycles_per_us_);
    if (cycles > 0) cuda_check(launch_spin_kernel(cycles, s(stream)), "spin kernel launch");
  }

  bool op_done(int op) override {
    if (op >= static_cast<int>(recorded_.size()) || recorded_[op].load() != pass_) return false;
    return cudaEventQuery(end_[op]) == cudaSuccess;
  }
  void wait_op_host(int op) override { cuda_check(cudaEventSynchronize(end_[op]), "cudaEventSynchronize"); }
  void synchronize() override { cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  OpTimes op_times(int op) override {
    float a = 0, b = 0;
    cudaEventElapsedTime(&a, ref_, start_[op]);
    cudaEventElapsedTime(&b, ref_, end_[op]);
    return OpTimes{ref_host_us_ + 1000.0 * a, ref_host_us_ + 1000.0 * b};
  }
  double host_now_us() override { return now_us(); }

 private:
  cudaStream_t s(int id) {
    if (id < 0 || id >= static_cast<int>(streams_.size())) fatal("no such stream (create_streams first)", id);
    return streams_[id];
  }

  ncclComm_t comm(int stream, int group) {
    auto it = comms_.find({stream, group});
    if (it == comms_.end()) fatal("no NCCL communicator for this stream and group", stream);
    return it->second;
  }

  static ncclDataType_t type(int width) {
    if (width == 4) return ncclFloat32;
    if (width == 2) return ncclBfloat16;
    return ncclInt8;
  }

  void nccl_check(ncclResult_t r, const char* call, int stream) {
    if (r != ncclSuccess) fatal(std::string(call) + " failed: " + ncclGetErrorString(r), stream);
  }

  [[noreturn]] void fatal(const std::string& what, int stream) {
    const std::string name = stream >= 0 && stream < static_cast<int>(stream_names_.size()) ? stream_names_[stream]
                                                                                            : std::to_string(stream);
    const std::string msg = what + " (stream " + name + ")";
    if (on_fatal) on_fatal(msg);
    throw std::runtime_error(msg);
  }

  // Cycles of the spin kernel per microsecond, measured once with CUDA events.
  void calibrate() {
    constexpr long long kCycles = 20'000'000;
    cudaEvent_t a, b;
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
    cuda_check(launch_spin_kernel(1000, timing_stream_), "spin kernel warmup");
    cuda_check(cudaEventRecord(a, timing_stream_), "cudaEventRecord");
    cuda_check(launch_spin_kernel(kCycles, timing_stream_), "spin kernel calibration");
    cuda_check(cudaEventRecord(b, timing_stream_), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cycles_per_us_ = ms > 0 ? static_cast<double>(kCycles) / (1000.0 * ms) : 1000.0;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }

  MPI_Comm world_ = MPI_COMM_NULL;
  int rank_ = 0, world_size_ = 1;
  cudaStream_t timing_stream_ = nullptr;
  std::vector<cudaStream_t> streams_;
  std::vector<std::string> stream_names_;
  std::map<std::pair<int, int>, ncclComm_t> comms_;
  std::vector<cudaEvent_t> start_, end_;
  std::vector<std::atomic<int>> recorded_;
  cudaEvent_t ref_ = nullptr;
  double ref_host_us_ = 0;
  std::atomic<int> pass_{0};
  double cycles_per_us_ = 1000;
};

}  // namespace

int nccl_gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm world) { return std::make_unique<NcclBackend>(world); }

}  // namespace shardline::exec
