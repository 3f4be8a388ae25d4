// calibrate --from-trace's fit (core/timeline_profile.h): from a measured timeline whose
// durations follow known costs, the profile recovers them: alpha and beta per collective kind
// and group size, copy latency and bandwidth, the issue overhead, and unit times (a recomputing
// unit's backward without its forward).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/timeline_profile.h"

namespace shardline {
namespace {

struct Builder {
  Timeline t;
  double clock = 0;
  Builder() {
    t.source = "measured";
    t.backend = "nccl";
    t.ranks = 1;
    t.iterations = 2;
    t.group_sizes[static_cast<size_t>(CommGroup::Shard)] = 4;
  }
  int op(OpKind kind, int64_t bytes, int unit = -1, Phase phase = Phase::Forward, bool recompute = false, const char* name = "") {
    Op o;
    o.kind = kind;
    if (kind != OpKind::Compute) o.set_bytes(bytes);
    o.unit = unit;
    o.phase = phase;
    o.recompute = recompute;
    if (is_collective(kind)) o.group = CommGroup::Shard;  // a group of 4 (the constructor)
    t.set_name(o, name);
    t.ops.push_back(o);
    return static_cast<int>(t.ops.size() - 1);
  }
  void run(int op, int iteration, double duration_us) {
    t.intervals.push_back(OpInterval{op, 0, iteration, clock, clock, clock + duration_us});
    clock += 7.0;  // every launch 7 us after the previous one
  }
};

TEST(TimelineProfile, RecoversTheCostsTheDurationsFollow) {
  Builder b;
  const double alpha = 25, beta = 1.0 / 200e3;   // 25 us + 200 GB/s
  const double copy_lat = 3, copy_beta = 1.0 / 1e6;  // 3 us + 1,000 GB/s
  const std::vector<int64_t> sizes{int64_t{1} << 20, int64_t{4} << 20, int64_t{16} << 20};
  std::vector<int> ag, cp;
  for (int64_t s : sizes) ag.push_back(b.op(OpKind::AllGather, s));
  for (int64_t s : sizes) cp.push_back(b.op(OpKind::CopyIn, s / 4));
  const int fwd = b.op(OpKind::Compute, 0, 0, Phase::Forward, false, "fwd layers.0 mb0");
  const int bwd = b.op(OpKind::Compute, 0, 0, Phase::Backward, true, "bwd layers.0 mb0");
  b.op(OpKind::Alloc, 64);
  for (int it = 0; it < 2; ++it) {
    for (size_t i = 0; i < sizes.size(); ++i) b.run(ag[i], it, alpha + beta * static_cast<double>(sizes[i]));
    for (size_t i = 0; i < sizes.size(); ++i) b.run(cp[i], it, copy_lat + copy_beta * static_cast<double>(sizes[i] / 4));
    b.run(fwd, it, 100 + it * 10);    // forward 100, 110: median 105
    b.run(bwd, it, 300 + it * 10);    // backward with recompute 300, 310: 305 - 105 = 200
  }
  const ClusterProfile p = profile_from_timeline(b.t, "test machine");
  ASSERT_EQ(p.collectives.size(), 1u);
  const CollectiveTable& table = p.collectives[0];
  EXPECT_EQ(table.kind, CollectiveKind::AllGather);
  EXPECT_EQ(table.group_size, 4);
  EXPECT_EQ(table.sizes_bytes, sizes);
  EXPECT_NEAR(table.fit.alpha_us, alpha, 1e-6);
  EXPECT_NEAR(table.fit.beta_us_per_byte, beta, 1e-12);
  EXPECT_NEAR(p.copy_latency_us, copy_lat, 1e-6);
  EXPECT_NEAR(p.copy_bandwidth_bytes_per_s, 1e12, 1e3);
  EXPECT_DOUBLE_EQ(p.issue_overhead_us, 7.0);
  ASSERT_EQ(p.units.size(), 1u);
  EXPECT_EQ(p.units[0].name, "layers.0");
  EXPECT_DOUBLE_EQ(p.units[0].forward_us, 105);
  EXPECT_DOUBLE_EQ(p.units[0].backward_us, 200);
  EXPECT_EQ(p.backend, "nccl");
  EXPECT_EQ(p.machine, "test machine");

  // The units survive the profile file, and time the scenario's unit of that name.
  const ClusterProfile back = profile_from_json(profile_to_json(p));
  ASSERT_EQ(back.units.size(), 1u);
  EXPECT_DOUBLE_EQ(back.units[0].backward_us, 200);
  Scenario s;
  s.model.units.resize(2);
  s.model.units[0].name = "embedding";
  s.model.units[1].name = "layers.0";
  EXPECT_EQ(apply_unit_times(s, back), 1);
  EXPECT_FALSE(s.model.units[0].forward_time_us.has_value());
  EXPECT_EQ(s.model.units[1].forward_time_us, std::optional<double>(105));
  EXPECT_EQ(s.model.units[1].backward_time_us, std::optional<double>(200));
}

TEST(TimelineProfile, SizesWithinEightTimesGiveABandwidthWithoutALatency) {
  // 2 and 4 MiB cost 1,000 and 1,600 us: a line through them has alpha 400 us, which sizes so
  // close cannot tell from noise; the profile keeps the mean cost per byte and alpha 0.
  Builder b;
  const int small = b.op(OpKind::ReduceScatter, int64_t{2} << 20);
  const int large = b.op(OpKind::ReduceScatter, int64_t{4} << 20);
  b.run(small, 0, 1000);
  b.run(large, 0, 1600);
  b.run(b.op(OpKind::CopyOut, 1 << 20), 0, 5);
  const ClusterProfile p = profile_from_timeline(b.t, "");
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].fit.alpha_us, 0.0);
  EXPECT_DOUBLE_EQ(p.collectives[0].fit.beta_us_per_byte, 2600.0 / static_cast<double>(int64_t{6} << 20));
  EXPECT_DOUBLE_EQ(p.collectives[0].time_us(int64_t{2} << 20), 1000.0);  // measured sizes stay exact
}

TEST(TimelineProfile, RefusesPredictedTimelinesAndRunsWithoutCollectivesButNotWithoutCopies) {
  Builder b;
  b.t.source = "predicted";
  EXPECT_THROW(profile_from_timeline(b.t, ""), InputError);
  Builder c;
  c.run(c.op(OpKind::CopyIn, 1024), 0, 5);
  EXPECT_THROW(profile_from_timeline(c.t, ""), InputError);
  // Collectives without copies (zero-copy): the copy cost is left unmeasured, 0.
  Builder d;
  d.run(d.op(OpKind::AllGather, 1 << 20), 0, 10);
  EXPECT_EQ(profile_from_timeline(d.t, "").copy_bandwidth_bytes_per_s, 0.0);
}

TEST(TimelineProfile, ProfileUnitsWithANegativeTimeAreRefusedWithTheirPath) {
  Builder b;
  b.run(b.op(OpKind::AllGather, 1 << 20), 0, 10);
  b.run(b.op(OpKind::CopyIn, 1 << 18), 0, 5);
  nlohmann::json j = profile_to_json(profile_from_timeline(b.t, ""));
  j["units"] = nlohmann::json::array({{{"name", "x"}, {"forward_us", -1}, {"backward_us", 1}}});
  try {
    profile_from_json(j);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "profile.units[0].forward_us");
  }
}

}  // namespace
}  // namespace shardline
