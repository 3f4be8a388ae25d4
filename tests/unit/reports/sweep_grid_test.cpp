// reports/sweep_grid: the --vary grammar (ranges, lists, joint axes, errors) and the grid
// expansion, the points `shardline sweep` runs.
#include "reports/sweep_grid.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace shardline {
namespace {

using Strings = std::vector<std::string>;

// Expects expand_vary_values to fail with an InputError naming --vary, the path and `needle`.
void expect_vary_error(const std::string& path, const std::string& expr, const std::string& needle) {
  try {
    expand_vary_values(path, expr);
    FAIL() << "expected an error for " << path << "=" << expr;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--vary");
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SweepRange, GeometricSizesWithUnits) {
  EXPECT_EQ(expand_vary_values("policy.bucket_bytes", "1MiB..8MiB:x2"),
            (Strings{"1048576", "2097152", "4194304", "8388608"}));
}

TEST(SweepRange, GeometricStopsAtOrBelowEnd) {
  EXPECT_EQ(expand_vary_values("policy.forward_prefetch", "1..10:x3"), (Strings{"1", "3", "9"}));
}

TEST(SweepRange, ArithmeticIntegersAndSizes) {
  EXPECT_EQ(expand_vary_values("mesh.shard", "8..32:+8"), (Strings{"8", "16", "24", "32"}));
  EXPECT_EQ(expand_vary_values("policy.bucket_bytes", "0..2MiB:+1MiB"), (Strings{"0", "1048576", "2097152"}));
}

TEST(SweepRange, ArithmeticFractions) {
  EXPECT_EQ(expand_vary_values("run.memory_margin", "0.5..1:+0.25"), (Strings{"0.5", "0.75", "1"}));
  // Steps in binary floating point leave a residue (0 + 3 x 0.1): the values are the decimals meant.
  EXPECT_EQ(expand_vary_values("run.memory_margin", "0..0.3:+0.1"), (Strings{"0", "0.1", "0.2", "0.3"}));
  // Whole endpoints with a fractional increment: the fractions asked for, not rounded away.
  EXPECT_EQ(expand_vary_values("policy.forward_prefetch", "0..2:+0.5"), (Strings{"0", "0.5", "1", "1.5", "2"}));
  // A geometric step over whole endpoints is rounded to whole numbers.
  EXPECT_EQ(expand_vary_values("policy.micro_batches", "1..10:x1.5"), (Strings{"1", "2", "3", "5", "8"}));
}

TEST(SweepRange, SingleValueRange) {
  EXPECT_EQ(expand_vary_values("mesh.shard", "8..8:x2"), (Strings{"8"}));
}

TEST(SweepList, ValuesAreKeptAsJsonTextExceptSizes) {
  EXPECT_EQ(expand_vary_values("mesh.shard", "8,16,32"), (Strings{"8", "16", "32"}));
  EXPECT_EQ(expand_vary_values("policy.comm_fusion", "true, false"), (Strings{"true", "false"}));
  EXPECT_EQ(expand_vary_values("policy.param_dtype", "bf16,fp32"), (Strings{"bf16", "fp32"}));
  EXPECT_EQ(expand_vary_values("policy.bucket_bytes", "25MiB,1048576,1MiB..2MiB:x2"),
            (Strings{"26214400", "1048576", "1048576", "2097152"}));
  // A size path also takes a word the parser knows ("unit": one bucket per unit).
  EXPECT_EQ(expand_vary_values("policy.bucket_bytes", "unit,1MiB"), (Strings{"unit", "1048576"}));
}

TEST(SweepRange, Errors) {
  expect_vary_error("policy.bucket_bytes", "512MiB..1MiB:x2", "empty range");
  expect_vary_error("mesh.shard", "8..32:x1", "x1");
  expect_vary_error("mesh.shard", "8..32:x0.5", "more than 1");
  expect_vary_error("mesh.shard", "8..32:+0", "+0");
  expect_vary_error("mesh.shard", "8..32", "needs a step");
  expect_vary_error("mesh.shard", "8..32:*2", "step must be");
  expect_vary_error("mesh.shard", "a..32:+1", "not a number");
  expect_vary_error("policy.bucket_bytes", "1MiB..4Mfoo:x2", "bad size");
  expect_vary_error("policy.bucket_bytes", "0..4MiB:x2", "start above 0");
  expect_vary_error("policy.bucket_bytes", "-5", "non-negative");
  expect_vary_error("mesh.shard", "8,,16", "empty value");
  expect_vary_error("mesh.shard", "", "no values");
}

TEST(SweepVary, ParsesPathAndValues) {
  const SweepAxis a = parse_vary("policy.forward_prefetch=0,1,2");
  EXPECT_EQ(a.paths, Strings{"policy.forward_prefetch"});
  ASSERT_EQ(a.values.size(), 3u);
  EXPECT_EQ(a.values[2], Strings{"2"});
}

TEST(SweepVary, JointAxisZipsPaths) {
  const SweepAxis a = parse_vary("mesh.shard/mesh.replicate=8/4,16/2,32/1");
  EXPECT_EQ(a.paths, (Strings{"mesh.shard", "mesh.replicate"}));
  ASSERT_EQ(a.values.size(), 3u);
  EXPECT_EQ(a.values[1], (Strings{"16", "2"}));
  EXPECT_EQ(a.label(), "mesh.shard/mesh.replicate");
  const SweepAxis b = parse_vary("policy.bucket_bytes/mesh.shard=1MiB/8");
  EXPECT_EQ(b.values[0], (Strings{"1048576", "8"}));
}

TEST(SweepVary, MalformedSpecsNameVary) {
  for (const std::string spec : {"policy.bucket_bytes", "=1,2", "mesh.shard/mesh.replicate=8/4,16",
                                 "mesh.shard/mesh.replicate=8..16:x2/1", "mesh.shard//x=1/2/3",
                                 // A value given twice (the same point simulated and listed twice).
                                 "policy.micro_batches=1,1", "policy.bucket_bytes=1MiB,1048576",
                                 "mesh.shard/mesh.replicate=8/1,8/1"}) {
    try {
      parse_vary(spec);
      FAIL() << "expected an error for " << spec;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "--vary") << spec;
    }
  }
}

TEST(SweepGrid, CartesianProductLastAxisFastest) {
  const std::vector<SweepAxis> axes = {parse_vary("policy.bucket_bytes=1MiB..4MiB:x2"), parse_vary("mesh.shard=8,16")};
  ASSERT_EQ(grid_size(axes), 6u);
  EXPECT_EQ(grid_point(axes, 0).overrides, (Strings{"policy.bucket_bytes=1048576", "mesh.shard=8"}));
  EXPECT_EQ(grid_point(axes, 1).overrides, (Strings{"policy.bucket_bytes=1048576", "mesh.shard=16"}));
  EXPECT_EQ(grid_point(axes, 5).overrides, (Strings{"policy.bucket_bytes=4194304", "mesh.shard=16"}));
  EXPECT_EQ(grid_coordinates(axes, 3), (std::vector<size_t>{1, 1}));
  EXPECT_EQ(sweep_paths(axes), (Strings{"policy.bucket_bytes", "mesh.shard"}));
  // Every point distinct.
  std::vector<Strings> seen;
  for (size_t i = 0; i < 6; ++i) seen.push_back(grid_point(axes, i).overrides);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
}

TEST(SweepGrid, JointAxisCountsOnce) {
  const std::vector<SweepAxis> axes = {parse_vary("mesh.shard/mesh.replicate=8/4,16/2"), parse_vary("policy.forward_prefetch=0,1,2")};
  EXPECT_EQ(grid_size(axes), 6u);
  EXPECT_EQ(grid_point(axes, 4).overrides, (Strings{"mesh.shard=16", "mesh.replicate=2", "policy.forward_prefetch=1"}));
}

TEST(SweepGrid, TooLargeGridIsAnError) {
  const std::vector<SweepAxis> axes = {parse_vary("mesh.shard=1..1000:+1"), parse_vary("mesh.replicate=1..1000:+1")};
  EXPECT_THROW(grid_size(axes, 100'000), InputError);
  EXPECT_EQ(grid_size(axes, 1'000'000), 1'000'000u);
}

}  // namespace
}  // namespace shardline
