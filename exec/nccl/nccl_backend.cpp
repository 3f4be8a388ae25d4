#include "exec/nccl/nccl_backend.h"

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
    int least = 0, greatest = 0;
    cuda_check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    for (int s = 0; s < kNumStreams; ++s) {
      const auto id = static_cast<StreamId>(s);
      const bool high = id == StreamId::AllGather || id == StreamId::ReduceScatter;  // FSDP2's priorities
      cuda_check(cudaStreamCreateWithPriority(&streams_[s], cudaStreamNonBlocking, high ? greatest : least),
                 "cudaStreamCreateWithPriority");
    }
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

  void create_communicator(StreamId stream, CommGroup group, int color, int key, int expected_size) override {
    MPI_Comm sub;
    MPI_Comm_split(world_, color, key, &sub);
    int size = 0, sub_rank = 0;
    MPI_Comm_size(sub, &size);
    MPI_Comm_rank(sub, &sub_rank);
    if (size != expected_size)
      throw std::runtime_error("the " + std::string(comm_group_name(group)) + " group has " + std::to_string(size) +
                               " ranks, expected " + std::to_string(expected_size));
    ncclUniqueId id;
    if (sub_rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId", stream);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, sub);
    ncclComm_t c;
    nccl_check(ncclCommInitRank(&c, size, id, sub_rank), "ncclCommInitRank", stream);
    MPI_Comm_free(&sub);
    comms_[{static_cast<int>(stream), static_cast<int>(group)}] = c;
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
    cuda_check(cudaEventRecord(ref_, streams_[0]), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(ref_), "cudaEventSynchronize");
    ref_host_us_ = now_us();
  }

  void wait_op(StreamId stream, int op) override {
    cuda_check(cudaStreamWaitEvent(s(stream), end_[op], 0), "cudaStreamWaitEvent");
  }
  void begin_op(StreamId stream, int op) override { cuda_check(cudaEventRecord(start_[op], s(stream)), "cudaEventRecord"); }
  void end_op(StreamId stream, int op) override {
    cuda_check(cudaEventRecord(end_[op], s(stream)), "cudaEventRecord");
    recorded_[op].store(pass_);
  }

  void copy(StreamId stream, std::vector<CopySpan> spans) override {
    for (const auto& sp : spans)
      cuda_check(cudaMemcpyAsync(sp.dst, sp.src, sp.bytes, cudaMemcpyDeviceToDevice, s(stream)), "cudaMemcpyAsync");
  }

  void all_gather(StreamId stream, CommGroup group, const CollectiveArgs& a) override {
    nccl_check(ncclAllGather(a.in, a.out, a.count, type(a.width), comm(stream, group), s(stream)), "ncclAllGather", stream);
  }
  void reduce_scatter(StreamId stream, CommGroup group, const CollectiveArgs& a) override {
    nccl_check(ncclReduceScatter(a.in, a.out, a.count, type(a.width), a.average ? ncclAvg : ncclSum, comm(stream, group),
                                 s(stream)),
               "ncclReduceScatter", stream);
  }
  void all_reduce(StreamId stream, CommGroup group, const CollectiveArgs& a) override {
    nccl_check(ncclAllReduce(a.in, a.out, a.count, type(a.width), a.average ? ncclAvg : ncclSum, comm(stream, group),
                             s(stream)),
               "ncclAllReduce", stream);
  }

  void compute(StreamId stream, double duration_us, ComputeMode) override {
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
  cudaStream_t s(StreamId id) const { return streams_[static_cast<int>(id)]; }

  ncclComm_t comm(StreamId stream, CommGroup group) {
    auto it = comms_.find({static_cast<int>(stream), static_cast<int>(group)});
    if (it == comms_.end()) fatal("no NCCL communicator for this stream and group", stream);
    return it->second;
  }

  static ncclDataType_t type(int width) {
    if (width == 4) return ncclFloat32;
    if (width == 2) return ncclBfloat16;
    return ncclInt8;
  }

  void nccl_check(ncclResult_t r, const char* call, StreamId stream) {
    if (r != ncclSuccess) fatal(std::string(call) + " failed: " + ncclGetErrorString(r), stream);
  }

  [[noreturn]] void fatal(const std::string& what, StreamId stream) {
    const std::string msg = what + " (stream " + std::string(stream_name(stream)) + ")";
    if (on_fatal) on_fatal(msg);
    throw std::runtime_error(msg);
  }

  // Cycles of the spin kernel per microsecond, measured once with CUDA events.
  void calibrate() {
    constexpr long long kCycles = 20'000'000;
    cudaEvent_t a, b;
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
    cuda_check(launch_spin_kernel(1000, streams_[0]), "spin kernel warmup");
    cuda_check(cudaEventRecord(a, streams_[0]), "cudaEventRecord");
    cuda_check(launch_spin_kernel(kCycles, streams_[0]), "spin kernel calibration");
    cuda_check(cudaEventRecord(b, streams_[0]), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cycles_per_us_ = ms > 0 ? static_cast<double>(kCycles) / (1000.0 * ms) : 1000.0;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }

  MPI_Comm world_ = MPI_COMM_NULL;
  int rank_ = 0, world_size_ = 1;
  cudaStream_t streams_[kNumStreams] = {};
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
