// The executor's view of a machine: streams, events, buffers, the three collectives, copies,
// compute stand-ins and timestamps, with CUDA-like asynchronous semantics. The runner
// (exec/runner.h) enqueues work on streams; each backend (exec/mpi, exec/nccl) decides what a
// stream is (a worker thread, a CUDA stream). Nothing here knows about FSDP.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/program.h"

namespace shardline::exec {

// How a compute op is stood in for: sleep (frees the core), spin (busy wait), kernel (GPU).
enum class ComputeMode { Sleep, Spin, Kernel };

// One contiguous copy: `bytes` from `src` to `dst` (both backend memory).
struct CopySpan {
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t bytes = 0;
};

// A collective's payload: `count` elements of `width` bytes per rank block (all-gather: the
// input block; reduce-scatter: the output block; all-reduce: the whole buffer). `in == out`
// means in place (all-reduce only).
struct CollectiveArgs {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t count = 0;
  int width = 4;          // 4: float32, 2: bfloat16, 1: int8 (exec/payload.h)
  bool average = false;   // divide the sum by the group size
};

// Where an op's times came from, on this rank's clock (microseconds, arbitrary origin).
struct OpTimes {
  double start_us = 0;
  double end_us = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "mpi" | "nccl"
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // Memory this rank may use for buffers (MemAvailable / local ranks, or free GPU memory).
  virtual int64_t available_bytes() = 0;

  // Buffers: backend memory (host for mpi, device for nccl). Synchronous.
  virtual void* allocate(int64_t bytes) = 0;
  virtual void release(void* ptr) = 0;
  virtual void upload(void* dst, const void* host_src, int64_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, int64_t bytes) = 0;

  // Streams: created once, before anything runs on them, from a table (name, priority; the
  // Program's stream table, or the caller's own). Streams are then named by their index.
  virtual void create_streams(const std::vector<StreamInfo>& streams) = 0;

  // Collective groups: every rank calls this with the same (stream, group) sequence. Creates
  // the communicator that stream `stream` uses for the group `group` (an index the caller
  // chooses, e.g. into the Program's group table), whose members `pattern` says.
  virtual void create_communicator(int stream, int group, const GroupInfo& pattern) = 0;

  // Passes: a pass runs every op once. Ops are numbered 0..num_ops-1 (Program op ids).
  virtual void begin_pass(int pass, int num_ops) = 0;

  // Asynchronous work, in FIFO order per stream.
  virtual void wait_op(int stream, int op) = 0;   // stream waits for `op` of this pass
  virtual void begin_op(int stream, int op) = 0;  // timestamp: op starts
  virtual void end_op(int stream, int op) = 0;    // timestamp: op ends; its event fires
  virtual void copy(int stream, std::vector<CopySpan> spans) = 0;
  virtual void all_gather(int stream, int group, const CollectiveArgs& args) = 0;
  virtual void reduce_scatter(int stream, int group, const CollectiveArgs& args) = 0;
  virtual void all_reduce(int stream, int group, const CollectiveArgs& args) = 0;
  virtual void compute(int stream, double duration_us, ComputeMode mode) = 0;

  // Host side. op_done is safe to call from any thread (the watchdog polls it).
  virtual bool op_done(int op) = 0;
  virtual void wait_op_host(int op) = 0;
  virtual void synchronize() = 0;         // every stream drained
  virtual OpTimes op_times(int op) = 0;   // valid once op_done(op)
  virtual double host_now_us() = 0;       // the host clock the timestamps share

  // Called (from any thread) when the backend hits an error it cannot return from, e.g. a
  // failed MPI call on a stream thread; the runner writes what it can and aborts.
  std::function<void(const std::string&)> on_fatal;
};

}  // namespace shardline::exec
