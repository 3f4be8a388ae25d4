// Chrome trace event format (the JSON that Perfetto and chrome://tracing open) for a Timeline:
// one process per rank, one thread per stream plus a host lane of issue instants, one complete
// event per op interval, and a memory counter track.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <vector>

#include "core/compute_model.h"
#include "core/timeline.h"

namespace shardline {

// The host lane's thread id (streams use their StreamId index, 0..kNumStreams-1).
inline constexpr int kTraceHostTid = kNumStreams;

// {"traceEvents": [...], "displayTimeUnit": "ms"}. Every interval of every rank and iteration
// becomes one "X" event (ts/dur in microseconds, args: op, kind, unit, bucket, bytes,
// microbatch, phase, iteration). Issue times become "i" instants on the host lane when the
// timeline records them (any issue_us != 0). Memory samples (rank 0) become a "C" counter.
// `kernels` (optional, core/compute_model.h unit_breakdowns): each compute op of a predicted
// timeline also gets its unit's kernels as child slices (reports/kernel_breakdown.h).
nlohmann::json trace_to_json(const Timeline& timeline, const std::vector<UnitCompute>* kernels = nullptr);

}  // namespace shardline
