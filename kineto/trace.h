// One rank's PyTorch profiler (Kineto) trace, reduced to what shardline reads from it: the GPU
// activities (kernels, memcpys, memsets) with their stream and the collective metadata the
// profiler records on NCCL kernels, the CPU ranges that say what launched them (FSDP2's
// `FSDP::...` record_function ranges and `ProfilerStep#N`), and the CPU launch of each GPU
// activity (its correlation id). Times are integer nanoseconds as the profiler writes them
// (microseconds with three decimals), so nothing is lost to rounding. Everything else the trace
// holds is counted by category (docs/import.md), never silently dropped.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardline::kineto {

// The times a kept event may carry (read_trace refuses others, naming the event): a "ts" within
// 4e15 us (126 years) of the clock's zero, a "dur" from 0 to 10 days (a timeline's span,
// kMaxTimelineUs). Sums and differences of such times never overflow int64 nanoseconds.
inline constexpr int64_t kMaxTraceTimeNs = 4'000'000'000'000'000'000;
inline constexpr int64_t kMaxTraceDurationNs = 10LL * 86400 * 1'000'000'000;

// What an NCCL kernel does, from the profiler's "Collective name" or else the kernel's name.
enum class CommKind : uint8_t { AllGather, ReduceScatter, AllReduce, Other };
std::string_view comm_kind_name(CommKind k);  // "all_gather", "reduce_scatter", "all_reduce", "other"

// The collective metadata of one NCCL kernel (absent fields: -1 / empty).
struct CollectiveInfo {
  CommKind kind = CommKind::Other;
  std::string name;             // "Collective name" or the kernel's collective, e.g. "allreduce", "SendRecv"
  int64_t in_nelems = -1;       // "In msg nelems"
  int64_t out_nelems = -1;      // "Out msg nelems"
  int64_t group_size = -1;      // "Group size" (at most the trace's world size: read_trace refuses more)
  std::string dtype;            // "dtype", e.g. "Float", "BFloat16"
  std::string group_name;       // "Process Group Name"
  std::vector<int> group_ranks; // "Process Group Ranks" (a shortened list expanded to `group_size` ranks)
  // Bytes per element of `dtype` (0: unknown dtype or none given).
  int dtype_bytes() const;
};

enum class ActivityKind : uint8_t { Kernel, Memcpy, Memset };

struct GpuActivity {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;  // links it to its CPU launch (-1: none recorded)
  int stream = -1;
  int device = -1;           // args.device, the GPU it ran on (-1: not recorded)
  int name = -1;             // index into KinetoTrace::names
  int collective = -1;       // index into KinetoTrace::collectives, -1: not an NCCL kernel
  ActivityKind kind = ActivityKind::Kernel;
  int64_t end_ns() const { return ts_ns + dur_ns; }
};

// A CPU range the importer reads: `FSDP::...` (with the module FQN FSDP2 appends),
// `ProfilerStep#N`, the optimizer's `Optimizer.step#<class>.step`, or a user range whose name
// holds `clip_grad_norm`.
struct CpuRange {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t tid = 0;
  int name = -1;  // index into KinetoTrace::names
  int64_t end_ns() const { return ts_ns + dur_ns; }
};

// A CUDA runtime (or driver) call carrying a correlation id: the CPU side of a launch.
struct Launch {
  int64_t correlation = -1;
  int64_t ts_ns = 0;
  int64_t tid = 0;
};

// An allocator event (`[memory]`, recorded with profile_memory=True): `bytes` > 0 allocates,
// < 0 frees, at CPU time `ts_ns`. PyTorch's profiler also writes the allocator's totals after
// the event ("Total Allocated", "Total Reserved": what torch.cuda.memory_allocated() and
// memory_reserved() return then) and the device ("Device Type", c10::DeviceType: 0 CPU, 1 CUDA);
// -1 where the event does not carry one.
struct MemoryEvent {
  int64_t ts_ns = 0;
  int64_t bytes = 0;
  int64_t total_allocated = -1;
  int64_t total_reserved = -1;
  int device_type = -1;
  static constexpr int kCudaDeviceType = 1;
};

struct KinetoTrace {
  std::string path;
  int rank = -1;        // distributedInfo.rank (-1: not recorded)
  int world_size = -1;  // distributedInfo.world_size
  std::string device;   // deviceProperties[0].name
  std::vector<std::string> names;  // interned event names
  std::vector<GpuActivity> gpu;    // in file order
  std::vector<CollectiveInfo> collectives;
  std::vector<CpuRange> ranges;    // in file order
  std::vector<Launch> launches;    // in file order
  std::vector<MemoryEvent> memory; // in file order
  int64_t events = 0;              // every entry of traceEvents
  // Events not kept above, by "cat" (or "ph=<ph>" without one): read, counted, not used.
  std::map<std::string, int64_t> skipped_by_category;
  int64_t dropped_gpu_activities = 0;  // of those, GPU activities the profiler could not time

  const std::string& name_of(const GpuActivity& a) const { return names[static_cast<size_t>(a.name)]; }
  const std::string& name_of(const CpuRange& r) const { return names[static_cast<size_t>(r.name)]; }
  const CollectiveInfo* collective_of(const GpuActivity& a) const {
    return a.collective < 0 ? nullptr : &collectives[static_cast<size_t>(a.collective)];
  }
};

// The kind of an NCCL kernel from its name ("ncclDevKernel_AllGather_RING_LL(...)" or the older
// "ncclKernel_AllReduce_RING_LL_Sum_float(...)"), or from the profiler's "Collective name"
// ("allgather", "_allgather_base", "all_gather_into_tensor", "reduce_scatter_tensor", ...).
bool is_nccl_kernel_name(std::string_view name);
CommKind comm_kind_from_kernel_name(std::string_view name);
CommKind comm_kind_from_collective_name(std::string_view name);

// The GPUs the trace's activities ran on (their args.device), sorted; empty where none is recorded.
// One rank's trace holds one GPU's work.
std::vector<int> gpu_devices(const KinetoTrace& trace);

// Throws InputError(trace.path) when the trace kept no GPU activity: profiled without CUDA, or
// every activity dropped as one the profiler could not time (said with their count).
void require_gpu_activity(const KinetoTrace& trace);

}  // namespace shardline::kineto
