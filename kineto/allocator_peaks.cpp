#include "kineto/allocator_peaks.h"

#include <algorithm>

namespace shardline::kineto {

std::optional<AllocatorPeaks> allocator_peaks(const std::vector<MemoryEvent>& by_time, int64_t begin_ns, int64_t end_ns) {
  const auto counts = [](const MemoryEvent& m) {
    return m.device_type == MemoryEvent::kCudaDeviceType && m.total_allocated >= 0 && m.total_reserved >= 0;
  };
  const auto before = [](const MemoryEvent& m, int64_t t) { return m.ts_ns < t; };
  const auto first = std::lower_bound(by_time.begin(), by_time.end(), begin_ns, before);
  const auto last = std::lower_bound(first, by_time.end(), end_ns, before);
  std::optional<AllocatorPeaks> peaks;
  const auto add = [&peaks](const MemoryEvent& m) {
    if (!peaks) peaks = AllocatorPeaks{};
    peaks->peak_allocated_bytes = std::max(peaks->peak_allocated_bytes, m.total_allocated);
    peaks->peak_reserved_bytes = std::max(peaks->peak_reserved_bytes, m.total_reserved);
  };
  for (auto it = first; it != by_time.begin();)  // the level the window starts at
    if (counts(*--it)) {
      add(*it);
      break;
    }
  for (auto it = first; it != last; ++it)
    if (counts(*it)) add(*it);
  return peaks;
}

}  // namespace shardline::kineto
