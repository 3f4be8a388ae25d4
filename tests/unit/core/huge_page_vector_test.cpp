// HugePageVector: large arrays start on a huge-page boundary (so the advice covers all of them),
// small ones come from the ordinary allocator, and contents survive growth, copies and moves.
#include "core/huge_page_vector.h"

#include <cstdint>
#include <numeric>

#include <gtest/gtest.h>

namespace shardline {
namespace {

TEST(HugePageVector, LargeArraysStartOnAHugePage) {
  HugePageVector<double> v(kHugePageBytes / sizeof(double) + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePageBytes, 0u);
  HugePageVector<int> grown;
  grown.reserve(3 * kHugePageBytes / sizeof(int));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(grown.data()) % kHugePageBytes, 0u);
}

TEST(HugePageVector, ContentsSurviveGrowthCopiesAndMoves) {
  HugePageVector<int64_t> v;
  const int64_t n = static_cast<int64_t>(kHugePageBytes / sizeof(int64_t)) * 3;  // small, then large blocks
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  const HugePageVector<int64_t> copy = v;
  const HugePageVector<int64_t> moved = std::move(v);
  ASSERT_EQ(copy.size(), static_cast<size_t>(n));
  ASSERT_EQ(moved.size(), static_cast<size_t>(n));
  EXPECT_EQ(std::accumulate(copy.begin(), copy.end(), int64_t{0}), n * (n - 1) / 2);
  EXPECT_EQ(copy, moved);
  HugePageVector<int64_t> small{1, 2, 3};
  small.shrink_to_fit();
  EXPECT_EQ(small, (HugePageVector<int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace shardline
