// Arrays of millions of records (a Program's ops, a Timeline's intervals) on transparent huge
// pages. A 1 MiB-bucket Program touches about 1 GB; on 4 KiB pages that is a quarter of a
// million page faults and a TLB miss on nearly every op of every pass. Where the kernel gives
// huge pages only on request (transparent_hugepage=madvise, the common default), this allocator
// asks for them: blocks of at least kHugePageBytes are aligned to a huge page and advised with
// MADV_HUGEPAGE before their first touch. Smaller blocks, and other systems, get std::allocator.
// The advice changes where memory sits, never what it holds (docs/benchmarks.md measures it).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace shardline {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Advises [p, p + bytes) to be backed by huge pages (Linux; elsewhere nothing). `p` is
// kHugePageBytes-aligned.
void advise_huge_pages(void* p, size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(n);
    const size_t size = rounded(bytes);
    void* p = ::operator new(size, std::align_val_t{kHugePageBytes});
    advise_huge_pages(p, size);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().deallocate(p, n);
    ::operator delete(p, rounded(bytes), std::align_val_t{kHugePageBytes});
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }

 private:
  static size_t rounded(size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }
};

template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace shardline
