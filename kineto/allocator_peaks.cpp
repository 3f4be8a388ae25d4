#include "kineto/allocator_peaks.h"

#include <algorithm>

namespace shardline::kineto {

std::vector<MemoryEvent> gpu_allocator_events(const std::vector<MemoryEvent>& events) {
  std::vector<MemoryEvent> out;
  for (const MemoryEvent& m : events)
    if (m.device_type == MemoryEvent::kCudaDeviceType && m.total_allocated >= 0 && m.total_reserved >= 0) out.push_back(m);
  std::stable_sort(out.begin(), out.end(), [](const MemoryEvent& a, const MemoryEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

std::optional<AllocatorPeaks> allocator_peaks(const std::vector<MemoryEvent>& gpu_events, int64_t begin_ns, int64_t end_ns) {
  const auto before = [](const MemoryEvent& m, int64_t t) { return m.ts_ns < t; };
  const auto first = std::lower_bound(gpu_events.begin(), gpu_events.end(), begin_ns, before);
  const auto last = std::lower_bound(first, gpu_events.end(), end_ns, before);
  // From the last event before the window (the level it starts at) to the last inside it.
  const auto from = first == gpu_events.begin() ? first : first - 1;
  if (from == last) return std::nullopt;
  AllocatorPeaks peaks;
  for (auto it = from; it != last; ++it) {
    peaks.peak_allocated_bytes = std::max(peaks.peak_allocated_bytes, it->total_allocated);
    peaks.peak_reserved_bytes = std::max(peaks.peak_reserved_bytes, it->total_reserved);
  }
  return peaks;
}

}  // namespace shardline::kineto
