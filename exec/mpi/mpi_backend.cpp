#include "exec/mpi/mpi_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "exec/mpi/mpi_env.h"
#include "exec/payload.h"

namespace shardline::exec {
namespace {

using Clock = std::chrono::steady_clock;

// Copies run in chunks of this size with a yield between them. A memcpy of megabytes holds
// its core without a pause, and on a machine with fewer cores than stream threads a woken
// stream thread then waits for the scheduler's next tick (4 ms here) before it runs: measured
// steps clustered at multiples of 4 ms, and the compute stream lost 5-8 ms per step starting
// ops it was ready to run. With 256 KiB chunks (about 40 us each) that fell to about 1.5 ms.
constexpr int64_t kCopyChunkBytes = int64_t{256} << 10;

double now_us() {
  return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

// MPI_SUM for bfloat16 payloads (MPI has no bfloat16 type).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) { add_values(inout, in, *len, 2); }

int64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

class MpiBackend final : public Backend {
 public:
  MpiBackend(MPI_Comm world, int poll_us) : poll_us_(poll_us) {
    MPI_Comm_dup(world, &world_);
    MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &world_size_);
    MPI_Op_create(&bf16_sum, 1, &bf16_sum_op_);
  }

  ~MpiBackend() override {
    for (auto& st : streams_) {
      {
        std::lock_guard<std::mutex> lock(st->mutex);
        st->stop = true;
      }
      st->cv.notify_all();
    }
    for (auto& st : streams_) st->thread.join();
    for (auto& [key, comm] : comms_) MPI_Comm_free(&comm);
    MPI_Op_free(&bf16_sum_op_);
    MPI_Comm_free(&world_);
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world() const override { return world_size_; }

  int64_t available_bytes() override { return mem_available_bytes() / std::max(1, mpi_local_ranks(world_)); }

  void* allocate(int64_t bytes) override {
    void* p = std::malloc(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* ptr) override { std::free(ptr); }
  void upload(void* dst, const void* src, int64_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, int64_t bytes) override { std::memcpy(dst, src, bytes); }

  // Priorities are not modelled by threads: every stream is one worker thread.
  void create_streams(const std::vector<StreamInfo>& streams) override {
    if (!streams_.empty()) throw std::logic_error("mpi backend: streams created twice");
    for (const StreamInfo& info : streams) {
      streams_.push_back(std::make_unique<Stream>());
      streams_.back()->name = info.name;
    }
    for (size_t s = 0; s < streams_.size(); ++s) streams_[s]->thread = std::thread([this, s] { worker(static_cast<int>(s)); });
  }

  void create_communicator(int stream, int group, const GroupInfo& pattern) override {
    MPI_Comm c;
    check(MPI_Comm_split(world_, pattern.color(rank_), pattern.index(rank_), &c), "MPI_Comm_split", -1, stream);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int size = 0;
    MPI_Comm_size(c, &size);
    if (size != pattern.size)
      throw std::runtime_error("communicator for the " + pattern.name + " group has " + std::to_string(size) +
                               " ranks, expected " + std::to_string(pattern.size));
    comms_[{stream, group}] = c;
    group_names_[group] = pattern.name;
  }

  void begin_pass(int pass, int num_ops) override {
    if (static_cast<int>(done_.size()) != num_ops) {
      done_ = std::vector<std::atomic<int>>(num_ops);
      for (auto& d : done_) d.store(-1);
      times_.assign(num_ops, OpTimes{});
    }
    pass_.store(pass);
  }

  void wait_op(int stream, int op) override {
    const int pass = pass_.load();
    enqueue(stream, [this, op, pass] { wait_for(op, pass); });
  }

  void begin_op(int stream, int op) override {
    enqueue(stream, [this, op, stream] {
      streams_[stream]->current_op.store(op);
      times_[op].start_us = now_us();
    });
  }

  void end_op(int stream, int op) override {
    const int pass = pass_.load();
    enqueue(stream, [this, op, pass] {
      times_[op].end_us = now_us();
      std::lock_guard<std::mutex> lock(done_mutex_);
      done_[op].store(pass, std::memory_order_release);
      for (OpWaiter* w : waiting_)
        if (w->op == op) w->cv.notify_one();
    });
  }

  void copy(int stream, std::vector<CopySpan> spans) override {
    enqueue(stream, [spans = std::move(spans)] {
      for (const auto& s : spans) {
        for (int64_t at = 0; at < s.bytes; at += kCopyChunkBytes) {
          std::memcpy(static_cast<char*>(s.dst) + at, static_cast<const char*>(s.src) + at,
                      static_cast<size_t>(std::min(kCopyChunkBytes, s.bytes - at)));
          std::this_thread::yield();
        }
      }
    });
  }

  void all_gather(int stream, int group, const CollectiveArgs& a) override {
    enqueue(stream, [this, stream, group, a] {
      MPI_Comm c = comm(stream, group);
      MPI_Request r;
      check(MPI_Iallgather(a.in, count(a), type(a.width), a.out, count(a), type(a.width), c, &r), "MPI_Iallgather", -1, stream);
      wait(r, "MPI_Iallgather", stream);
    });
  }

  void reduce_scatter(int stream, int group, const CollectiveArgs& a) override {
    enqueue(stream, [this, stream, group, a] {
      MPI_Comm c = comm(stream, group);
      ring_reduce_scatter(stream, c, a);
      if (a.average) scale_values(a.out, a.count, a.width, 1.0 / size(c));
    });
  }

  void all_reduce(int stream, int group, const CollectiveArgs& a) override {
    enqueue(stream, [this, stream, group, a] {
      MPI_Comm c = comm(stream, group);
      const void* in = a.in == a.out ? MPI_IN_PLACE : a.in;
      MPI_Request r;
      check(MPI_Iallreduce(in, a.out, count(a), type(a.width), sum(a.width), c, &r), "MPI_Iallreduce", -1, stream);
      wait(r, "MPI_Iallreduce", stream);
      if (a.average) scale_values(a.out, a.count, a.width, 1.0 / size(c));
    });
  }

  void compute(int stream, double duration_us, ComputeMode mode) override {
    enqueue(stream, [duration_us, mode] {
      const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double, std::micro>(duration_us));
      if (mode == ComputeMode::Spin) {
        while (Clock::now() < until) {
        }
      } else {
        std::this_thread::sleep_until(until);
      }
    });
  }

  bool op_done(int op) override { return done_[op].load(std::memory_order_acquire) >= pass_.load(); }

  void wait_op_host(int op) override {
    wait_for(op, pass_.load());
  }

  void synchronize() override {
    for (auto& st : streams_) {
      std::unique_lock<std::mutex> lock(st->mutex);
      st->idle_cv.wait(lock, [&] { return st->queue.empty() && !st->busy; });
    }
  }

  OpTimes op_times(int op) override { return times_[op]; }
  double host_now_us() override { return now_us(); }

 private:
  struct Stream {
    std::string name;
    std::thread thread;
    std::mutex mutex;
    std::condition_variable cv, idle_cv;
    std::deque<std::function<void()>> queue;
    bool busy = false;
    bool stop = false;
    std::atomic<int> current_op{-1};
    std::vector<char> scratch;  // the stream's reduce-scatter blocks in flight (two, alternating)
  };

  // A thread waiting for an op to end (a stream's event wait, the host's wait): it gets its own
  // condition variable, and an op's end wakes only the threads waiting for that op. One condition
  // variable for all woke every waiting thread at every op's end; with a rank's threads bound to
  // one core each of those wake-ups is a context switch the next op on the stream waits behind.
  struct OpWaiter {
    int op = -1;
    std::condition_variable cv;
  };

  void wait_for(int op, int pass) {
    std::unique_lock<std::mutex> lock(done_mutex_);
    if (done_[op].load(std::memory_order_acquire) >= pass) return;
    OpWaiter waiter;
    waiter.op = op;
    waiting_.push_back(&waiter);
    waiter.cv.wait(lock, [&] { return done_[op].load(std::memory_order_acquire) >= pass; });
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &waiter));
  }

  // Reduce-scatter as a ring, as NCCL runs it: in n - 1 steps each rank passes a partly reduced
  // block to the next rank, receives one from the previous, and adds its own contribution, so every
  // rank sends, receives and reduces the same amount. Open MPI 4.1's MPI_Ireduce_scatter_block
  // (libnbc, ompi/mca/coll/libnbc/nbc_ireduce_scatter_block.c) reduces everything on rank 0 and
  // then scatters, a load no NCCL rank carries; on the 2-vCPU development VM it took 390 us for
  // 1 KiB over 2 ranks (the ring: 195) and 84-91 ms for 16 MiB (the ring: 4.1 ms), and
  // `validate scenarios/host-tiny-fsdp.json --np 2` measured steps 12% slower with it
  // (docs/exec.md "Reduce-scatter"). Block k of the input is the sum's block k; rank r ends with
  // block r in `a.out`.
  void ring_reduce_scatter(int stream, MPI_Comm c, const CollectiveArgs& a) {
    const int n = size(c);
    int r = 0;
    MPI_Comm_rank(c, &r);
    const int64_t block_bytes = a.count * a.width;
    const auto* in = static_cast<const char*>(a.in);
    auto* out = static_cast<char*>(a.out);
    if (n == 1) {
      std::memcpy(out, in, static_cast<size_t>(block_bytes));
      return;
    }
    std::vector<char>& scratch = streams_[static_cast<size_t>(stream)]->scratch;
    if (scratch.size() < static_cast<size_t>(2 * block_bytes)) scratch.resize(static_cast<size_t>(2 * block_bytes));
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    const auto block = [&](int k) { return in + static_cast<int64_t>(((k % n) + n) % n) * block_bytes; };
    const char* send = block(r - 1);
    for (int step = 0; step < n - 1; ++step) {
      // Step s receives block r - s - 2 (the previous rank's partial sum of it), adds this rank's
      // own block, and passes it on next step; the last step's block is r, straight into `out`.
      const bool last = step == n - 2;
      char* recv = last ? out : scratch.data() + (step % 2) * block_bytes;
      MPI_Request requests[2];
      check(MPI_Irecv(recv, count(a), type(a.width), prev, 0, c, &requests[0]), "MPI_Irecv", -1, stream);
      check(MPI_Isend(send, count(a), type(a.width), next, 0, c, &requests[1]), "MPI_Isend", -1, stream);
      wait(requests[0], "MPI_Irecv", stream);
      wait(requests[1], "MPI_Isend", stream);
      add_values(recv, block(r - step - 2), a.count, a.width);
      send = recv;
    }
  }

  void enqueue(int stream, std::function<void()> fn) {
    Stream& st = stream_at(stream);
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      st.queue.push_back(std::move(fn));
    }
    st.cv.notify_one();
  }

  void worker(int s) {
    Stream& st = *streams_[s];
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(st.mutex);
        st.cv.wait(lock, [&] { return st.stop || !st.queue.empty(); });
        if (st.queue.empty()) return;
        fn = std::move(st.queue.front());
        st.queue.pop_front();
        st.busy = true;
      }
      fn();
      bool idle = false;
      {
        std::lock_guard<std::mutex> lock(st.mutex);
        st.busy = false;
        idle = st.queue.empty();
      }
      // Only synchronize() waits on idle_cv, for an empty queue: waking it after every item would
      // take the rank's core from this stream three times per op while the host waits.
      if (idle) st.idle_cv.notify_all();
    }
  }

  Stream& stream_at(int stream) {
    if (stream < 0 || stream >= static_cast<int>(streams_.size()))
      throw std::logic_error("mpi backend: no stream " + std::to_string(stream) + " (create_streams first)");
    return *streams_[stream];
  }

  MPI_Comm comm(int stream, int group) {
    auto it = comms_.find({stream, group});
    if (it == comms_.end())
      fatal("no communicator was created for stream " + stream_at(stream).name + " and group " +
                (group_names_.count(group) ? group_names_.at(group) : std::to_string(group)), stream);
    return it->second;
  }

  static int size(MPI_Comm c) {
    int n = 1;
    MPI_Comm_size(c, &n);
    return n;
  }

  static int count(const CollectiveArgs& a) {
    // The runner refuses ops above INT_MAX elements before any pass.
    return static_cast<int>(a.count);
  }

  static MPI_Datatype type(int width) {
    if (width == 4) return MPI_FLOAT;
    if (width == 2) return MPI_UINT16_T;
    return MPI_INT8_T;
  }

  MPI_Op sum(int width) const { return width == 2 ? bf16_sum_op_ : MPI_SUM; }

  void wait(MPI_Request& r, const char* call, int stream) { check(mpi_wait_polling(r, poll_us_), call, -1, stream); }

  void check(int rc, const char* call, int /*op*/, int stream) {
    if (rc == MPI_SUCCESS) return;
    fatal(std::string(call) + " failed: " + mpi_error_string(rc), stream);
  }

  [[noreturn]] void fatal(const std::string& what, int stream) {
    std::ostringstream msg;
    msg << what << " (stream " << stream_at(stream).name << ", op " << stream_at(stream).current_op.load() << ")";
    if (on_fatal) on_fatal(msg.str());
    throw std::runtime_error(msg.str());  // on_fatal aborts; this is the fallback for tests
  }

  MPI_Comm world_ = MPI_COMM_NULL;
  int rank_ = 0, world_size_ = 1;
  MPI_Op bf16_sum_op_ = MPI_OP_NULL;
  std::map<std::pair<int, int>, MPI_Comm> comms_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::map<int, std::string> group_names_;
  const int poll_us_;
  std::atomic<int> pass_{0};
  std::vector<std::atomic<int>> done_;
  std::vector<OpTimes> times_;
  std::mutex done_mutex_;
  std::vector<OpWaiter*> waiting_;  // guarded by done_mutex_
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(MPI_Comm world, int poll_us) { return std::make_unique<MpiBackend>(world, poll_us); }

}  // namespace shardline::exec
