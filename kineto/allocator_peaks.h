// What a trace's [memory] events say the caching allocator held over a window of CPU time: the
// largest "Total Allocated" and "Total Reserved" on the GPU, counting the level the window starts
// at (the last event before it). Used by the import's measured run (Timeline::allocator_measured)
// and the per-step trace summary.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/timeline.h"
#include "kineto/trace.h"

namespace shardline::kineto {

// The events that carry the allocator's totals on a CUDA device, in time order (stable): what
// allocator_peaks reads.
std::vector<MemoryEvent> gpu_allocator_events(const std::vector<MemoryEvent>& events);

// `gpu_events`: gpu_allocator_events' result. nullopt when none lies before `end_ns`.
std::optional<AllocatorPeaks> allocator_peaks(const std::vector<MemoryEvent>& gpu_events, int64_t begin_ns, int64_t end_ns);

}  // namespace shardline::kineto
