// Chrome trace event format (the JSON that Perfetto and chrome://tracing open) for a Timeline:
// one process per rank, one thread per stream plus a host lane of issue instants, one complete
// event per op interval, and a memory counter track.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "core/compute_model.h"
#include "core/timeline.h"

namespace shardline {

// The host lane's thread id (streams use their StreamId index, 0..kNumStreams-1).
inline constexpr int kTraceHostTid = kNumStreams;

// {"traceEvents": [...], "displayTimeUnit": "ms"}. Every interval of every rank and iteration
// becomes one "X" event (ts/dur in microseconds on the nanosecond grid, reports/trace_time.h; args: op, kind, unit, bucket, bytes,
// microbatch, phase, iteration). Issue times become "i" instants on the host lane when the
// timeline records them (any issue_us != 0). Memory samples (rank 0) become a "C" counter.
// `kernels` (optional, core/compute_model.h unit_breakdowns): each compute op of a predicted
// timeline also gets its unit's kernels as child slices (reports/kernel_breakdown.h).
nlohmann::json trace_to_json(const Timeline& timeline, const std::vector<UnitCompute>* kernels = nullptr);
// trace_to_json(...).dump(), byte for byte, made an event at a time: a run's trace.json is written
// from this, so writing it holds the text and one event, not every event's JSON object as well
// (about 6 KB per op interval, which put `--ranks all --trace-ranks all` of 832 ranks at 4.2 GB).
std::string trace_json_text(const Timeline& timeline, const std::vector<UnitCompute>* kernels = nullptr);

}  // namespace shardline
