#include "core/huge_page_vector.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace shardline {

void advise_huge_pages(void* p, size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Only advice: where the kernel has no huge pages to give (or THP is off) the block stays on
  // small pages, so the result is not checked.
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace shardline
