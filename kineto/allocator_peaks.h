// What a trace's [memory] events say the caching allocator held over a window of CPU time: the
// largest "Total Allocated" and "Total Reserved" on the GPU (the events on a CUDA device that carry
// both totals), counting the level the window starts at (the last such event before it). Used by
// the import's measured run (Timeline::allocator_measured) and the per-step trace summary.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/timeline.h"
#include "kineto/trace.h"

namespace shardline::kineto {

// `by_time`: the trace's memory events sorted by ts_ns. nullopt when no event on a CUDA device
// carries the totals before `end_ns`.
std::optional<AllocatorPeaks> allocator_peaks(const std::vector<MemoryEvent>& by_time, int64_t begin_ns, int64_t end_ns);

}  // namespace shardline::kineto
