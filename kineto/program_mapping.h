// Maps the profiler traces of a run (one per rank) onto the scenario's Program and gives the
// measured Timeline in shardline's own format (so compare, the HTML report and the Perfetto
// export read it), with a report of everything it could not match. The rules (docs/import.md):
// - a profiler step (`ProfilerStep#N`) is one iteration; a GPU activity belongs to the step
//   its CPU launch (correlation id) falls in;
// - NCCL kernels map to the Program's collectives of the same kind and communicator (by the
//   profiler's "Process Group Ranks", else "Group size"), in order; their sizes must agree;
// - GPU work launched inside `FSDP::all_gather_copy_in` is a copy-in, inside
//   `FSDP::all_gather_copy_out (FQN)` a copy-out, inside `FSDP::post_backward_reduce (FQN)`
//   before its reduce-scatter the reduce-scatter's copy-in; one range occurrence is one op;
// - other GPU work launched between `FSDP::pre_forward (FQN)` and `FSDP::post_forward (FQN)`
//   (backward: `FSDP::pre_backward` and the next `FSDP::post_backward_*` of FQN) is that unit's
//   forward (backward) compute; the k-th such window of a step, in time order, is micro-batch k; FQN names the
//   Program's unit exactly or ends with "." + its name;
// - an op spans its GPU activities: issue = first launch, start = first start, end = last end;
// - alloc / free markers (no GPU work) are issued at a `[memory]` event of their signed size not
//   earlier than the previous marker's, when the trace has one, else with the next op; they happen when their stream and dependencies let
//   them (the simulator's stream and event semantics).
// A step where any op has no match, or any count or size disagrees, is left out and named in
// the report; no step matching on every rank is an InputError, and so are more matched steps
// than a timeline holds (kMaxTimelineIterations) unless a window of them is asked for.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/program.h"
#include "core/timeline.h"
#include "kineto/trace.h"

namespace shardline::kineto {

struct ImportOptions {
  double event_latency_us = 0;  // cluster.event_latency of the scenario (markers' dependencies)
  // --steps FIRST..LAST: import only these of the matched steps (1-based, inclusive, counted in
  // rank 0's trace order); 0, 0: every matched step.
  int first_step = 0, last_step = 0;
};

// GPU work the Program has no op for, by what it is: counted with its GPU time.
struct NotInProgram {
  int64_t count = 0;
  double gpu_us = 0;
};

struct ImportReport {
  int ranks = 0;
  std::vector<std::string> steps;            // the imported iterations' step names, in order
  int matched_steps = 0;                     // steps matching on every rank (steps: all, or the --steps window)
  int first_step = 1;                        // steps[0]'s place among them (1-based)
  std::vector<std::string> unmatched_steps;  // "rank 1, ProfilerStep#3: ..." (why it was left out)
  std::map<std::string, NotInProgram> not_in_program;  // in the imported steps
  int64_t gpu_activities_outside_steps = 0;
  int64_t gpu_activities_without_launch = 0;  // no recorded launch names them: placed by their own start
  // The most a collective ended on one member before it started on another (us; 0: never): the
  // ranks' clocks disagree by at least that much. Said above kClockSkewSaidUs, with an example.
  double clock_skew_us = 0;
  std::string clock_skew_example;
  int64_t markers_from_memory_events = 0;
  int64_t markers_from_stream_order = 0;
  int64_t collectives_without_sizes = 0;     // NCCL kernels whose size could not be checked
  // A one-rank run's collectives and all-gather copy-ins (FSDP2 launches no GPU work for them),
  // placed at zero length after their dependencies, every rank and imported step counted.
  int64_t ops_without_gpu_work = 0;
  // The reported iteration's allocator figures (Timeline::allocator_measured): ranks whose traces
  // carry them ([memory] events on a CUDA device with "Total Allocated" and "Total Reserved").
  int allocator_ranks = 0;
  std::optional<AllocatorPeaks> allocator_measured;  // when every rank has them
};

// Below this the skew is clock resolution and launch jitter, not worth a line (us).
inline constexpr double kClockSkewSaidUs = 10.0;

struct ImportResult {
  Timeline timeline;
  ImportReport report;
};

// `traces[r]` is rank r's trace (traces.size() == program.world_size).
ImportResult map_traces_to_program(const std::vector<KinetoTrace>& traces, const Program& program, const ImportOptions& options);

std::string import_report_text(const ImportReport& report);
nlohmann::json import_report_to_json(const ImportReport& report);

}  // namespace shardline::kineto
