// Calibrated profiles: alpha-beta fitting, interpolation, and the profile file format.
#include <functional>
#include <stdexcept>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/profile.h"
#include "core/program.h"
#include "core/schedule.h"

namespace shardline {
namespace {

std::vector<int64_t> log_sizes() {
  std::vector<int64_t> s;
  for (int64_t b = 1024; b <= (int64_t{1} << 26); b *= 4) s.push_back(b);
  return s;
}

TEST(Profile, FitRecoversKnownAlphaAndBetaFromSyntheticTable) {
  const double alpha = 12.5, beta = 1.0 / 3000.0;  // 12.5 us + 3 GB/s
  std::vector<double> t;
  for (int64_t s : log_sizes()) t.push_back(alpha + beta * static_cast<double>(s));
  const AlphaBeta fit = fit_alpha_beta(log_sizes(), t);
  EXPECT_NEAR(fit.alpha_us, alpha, 1e-6);
  EXPECT_NEAR(fit.beta_us_per_byte, beta, 1e-12);
}

TEST(Profile, FitWeighsSmallAndLargeSizesAlike) {
  // 5% noise alternating in sign: alpha stays within 10%, which an unweighted fit misses.
  const double alpha = 20, beta = 1e-4;
  std::vector<double> t;
  int k = 0;
  for (int64_t s : log_sizes()) t.push_back((alpha + beta * static_cast<double>(s)) * (k++ % 2 ? 1.05 : 0.95));
  const AlphaBeta fit = fit_alpha_beta(log_sizes(), t);
  EXPECT_NEAR(fit.alpha_us, alpha, 2.0);
  EXPECT_NEAR(fit.beta_us_per_byte, beta, 1e-5);
}

CollectiveTable table() {
  CollectiveTable t;
  t.kind = CollectiveKind::AllReduce;
  t.group_size = 4;
  t.sizes_bytes = {1024, 4096, 16384, 65536};
  t.times_us = {10, 12, 30, 100};
  t.fit = {8.0, 0.0015};
  return t;
}

// calibrate --passes: one pass's slow spell moves nothing; every number is the passes' median
// and the fit follows the median times.
TEST(Profile, MedianOfPassesTakesEachNumbersMedianAndRefitsTheTables) {
  std::vector<ClusterProfile> passes(3);
  const std::vector<double> scale = {1.0, 3.0, 1.1};  // the second pass ran in a slow spell
  for (size_t i = 0; i < passes.size(); ++i) {
    ClusterProfile& p = passes[i];
    p.backend = "mpi";
    p.machine = "pass " + std::to_string(i);
    CollectiveTable t = table();
    for (double& us : t.times_us) us *= scale[i];
    t.relative_spread = {0.1 * scale[i], 0.2, 0.3, 0.4};
    p.collectives = {t};
    p.collective_noise = 0.05 * scale[i];
    p.copy_bandwidth_bytes_per_s = 5e9 / scale[i];
    p.compute_overhead_us = 60 * scale[i];
    p.copy_slowdown_during_comm = 2.0 * scale[i];
  }
  const ClusterProfile m = median_of_passes(passes);
  EXPECT_EQ(m.machine, "pass 0");
  const std::vector<double> expected = {11, 13.2, 33, 110};  // table() x 1.1, the middle pass
  ASSERT_EQ(m.collectives.size(), 1u);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(m.collectives[0].times_us[i], expected[i], 1e-9) << i;
  EXPECT_NEAR(m.collectives[0].relative_spread[0], 0.11, 1e-12);
  const AlphaBeta refit = fit_alpha_beta(m.collectives[0].sizes_bytes, expected);
  EXPECT_NEAR(m.collectives[0].fit.alpha_us, refit.alpha_us, 1e-9);
  EXPECT_NEAR(m.collectives[0].fit.beta_us_per_byte, refit.beta_us_per_byte, 1e-15);
  // The noise follows from the median spreads {0.11, 0.2, 0.3, 0.4}, not from the passes' own.
  EXPECT_NEAR(m.collective_noise, 0.25, 1e-12);
  EXPECT_NEAR(m.copy_bandwidth_bytes_per_s, 5e9 / 1.1, 1);
  EXPECT_NEAR(m.compute_overhead_us, 66, 1e-9);
  EXPECT_NEAR(m.copy_slowdown_during_comm, 2.2, 1e-12);

  passes[1].collectives[0].sizes_bytes.back() *= 2;  // not the same measurement: a bug
  EXPECT_THROW(median_of_passes(passes), std::logic_error);
  EXPECT_THROW(median_of_passes({}), std::logic_error);
}

TEST(Profile, InterpolationIsExactOnTablePoints) {
  const CollectiveTable t = table();
  for (size_t i = 0; i < t.sizes_bytes.size(); ++i) EXPECT_DOUBLE_EQ(t.time_us(t.sizes_bytes[i]), t.times_us[i]);
}

TEST(Profile, InterpolationIsLogLogAndMonotoneBetweenPoints) {
  const CollectiveTable t = table();
  // Geometric midpoint of 4096 and 16384 -> geometric mean of 12 and 30.
  EXPECT_NEAR(t.time_us(8192), std::sqrt(12.0 * 30.0), 1e-9);
  double prev = 0;
  for (int64_t s = 1024; s <= 65536; s += 512) {
    const double v = t.time_us(s);
    EXPECT_GE(v, prev) << s;
    prev = v;
  }
}

TEST(Profile, AlphaBetaOutsideTheTable) {
  const CollectiveTable t = table();
  EXPECT_DOUBLE_EQ(t.time_us(1 << 20), 8.0 + 0.0015 * (1 << 20));
  EXPECT_DOUBLE_EQ(t.time_us(100), 8.0 + 0.0015 * 100);
}

// Above the table a fit without a positive slope cannot time anything (it had made a larger
// collective take 0 us): refused, naming the profile and what to calibrate. Inside the table and
// below it the measured points and the fit still serve.
TEST(Profile, AFitWithoutAPositiveSlopeCannotTimeSizesAboveTheTable) {
  CollectiveTable t = table();
  t.fit.beta_us_per_byte = -1;
  EXPECT_DOUBLE_EQ(t.time_us(t.sizes_bytes.back()), t.times_us.back());
  try {
    t.time_us(t.sizes_bytes.back() + 1);
    FAIL() << "timed a size above the table";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--profile");
    EXPECT_NE(std::string(e.what()).find("calibrate again with --max-bytes"), std::string::npos) << e.what();
  }
}

// An mpi profile with copies measured at `copy_bandwidth_bytes_per_s` and table() as its one table.
ClusterProfile mpi_profile(double copy_bandwidth_bytes_per_s = 5e9) {
  ClusterProfile p;
  p.backend = "mpi";
  p.copy_bandwidth_bytes_per_s = copy_bandwidth_bytes_per_s;
  p.collectives.push_back(table());
  return p;
}

TEST(Profile, JsonRoundTripAndMissingGroupIsAnInputError) {
  ClusterProfile p = mpi_profile();
  p.issue_overhead_us = 3;
  p.event_latency_us = 7;
  p.compute_overhead_us = 11;
  const ClusterProfile q = profile_from_json(profile_to_json(p));
  EXPECT_DOUBLE_EQ(q.event_latency_us, 7);
  EXPECT_DOUBLE_EQ(q.compute_overhead_us, 11);
  ASSERT_EQ(q.collectives.size(), 1u);
  EXPECT_EQ(q.collectives[0].times_us, table().times_us);
  EXPECT_DOUBLE_EQ(q.collective_time_us(CollectiveKind::AllReduce, 4096, 4), 12.0);
  EXPECT_DOUBLE_EQ(q.collective_time_us(CollectiveKind::AllReduce, 4096, 1), 0.0);
  try {
    q.collective_time_us(CollectiveKind::AllGather, 4096, 4);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--profile");
    EXPECT_NE(std::string(e.what()).find("all_gather"), std::string::npos);
  }
}

// calibrate's noise travels with the profile; a profile written before it had none reads as 0.
TEST(Profile, NoiseRoundTripsAndBadNoiseNamesThePath) {
  ClusterProfile p = mpi_profile();
  p.collectives[0].relative_spread.assign(p.collectives[0].sizes_bytes.size(), 0.05);
  p.collective_noise = 0.05;
  nlohmann::json j = profile_to_json(p);
  const ClusterProfile q = profile_from_json(j);
  EXPECT_DOUBLE_EQ(q.collective_noise, 0.05);
  EXPECT_EQ(q.collectives[0].relative_spread, p.collectives[0].relative_spread);
  nlohmann::json old = j;
  old.erase("collective_noise");
  old["collectives"][0].erase("relative_spread");
  EXPECT_EQ(profile_from_json(old).collective_noise, 0.0);
  EXPECT_TRUE(profile_from_json(old).collectives[0].relative_spread.empty());
  for (auto [mutate, path] : std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>>{
           {[](nlohmann::json& b) { b["collective_noise"] = -1; }, "profile.collective_noise"},
           {[](nlohmann::json& b) { b["collectives"][0]["relative_spread"] = {0.1}; }, "profile.collectives[0].relative_spread"}}) {
    nlohmann::json bad = j;
    mutate(bad);
    try {
      profile_from_json(bad);
      ADD_FAILURE() << path;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), path);
    }
  }
}

// The ranks a profile was measured on travel with it (older profiles: unknown, 0), and a run of
// another rank count is told that the profile's times are those of that many ranks.
TEST(Profile, TheRanksItWasMeasuredOnRoundTripAndANoteSaysWhenARunDiffers) {
  ClusterProfile p = mpi_profile();
  p.ranks = 4;
  nlohmann::json j = profile_to_json(p);
  EXPECT_EQ(profile_from_json(j).ranks, 4);
  EXPECT_EQ(profile_ranks_note(p, 4), "");
  EXPECT_EQ(profile_ranks_note(p, 2),
            "note: the profile was measured on 4 ranks and this run has 2: its times are those of 4 ranks, which can differ from 2's "
            "(by a lot where ranks share a host's cores); a profile measured with 2 ranks times this run");
  j.erase("ranks");
  EXPECT_EQ(profile_from_json(j).ranks, 0);
  EXPECT_EQ(profile_ranks_note(profile_from_json(j), 2), "");  // unknown: nothing to say
  j["ranks"] = -1;
  try {
    profile_from_json(j);
    ADD_FAILURE() << "accepted -1 ranks";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "profile.ranks");
  }
}

// A collective far beyond the largest size the profile measured is timed by its fit alone: a note
// says so, once per kind and group size, and names the --max-bytes that would measure it. Within
// 16x of the table, or without a table (refused when simulated), nothing is said.
TEST(Profile, CollectivesFarBeyondTheMeasuredSizesAreNoted) {
  const ClusterProfile profile = mpi_profile();  // all_reduce over 4 ranks, measured up to 64 KiB
  Program program;
  program.groups = fsdp_group_table(4, 4, 0);  // shard groups of 4, replicate groups of 4
  const auto add = [&](OpKind kind, CommGroup group, int64_t bytes) {
    Op op;
    op.kind = kind;
    op.group = group;
    op.set_bytes(bytes);
    program.ops.push_back(op);
  };
  add(OpKind::AllReduce, CommGroup::Replicate, 65536 * 16);  // 16x: within reach
  EXPECT_TRUE(profile_reach_notes(profile, program).empty());
  add(OpKind::AllReduce, CommGroup::Replicate, 65536 * 17);
  add(OpKind::AllReduce, CommGroup::Replicate, 65536 * 20);
  add(OpKind::AllGather, CommGroup::Shard, int64_t{1} << 30);  // no table: refused when simulated, not noted
  const std::vector<std::string> notes = profile_reach_notes(profile, program);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "note: the Program's all_reduces over 4 ranks reach 1.2 MiB, 20x the largest size the profile measured (64.0 KiB): "
                      "their times come from its fit alone; calibrate with --max-bytes at least 1.2 MiB to measure them");
}

// The copy slow-downs travel with the profile; a profile from before calibrate measured them is
// refused naming the missing key and saying what to do (its copies would otherwise change
// behaviour silently: they shared the collectives' link then).
TEST(Profile, CopySlowdownsRoundTripAndAreRequired) {
  ClusterProfile p = mpi_profile();
  p.copy_slowdown_during_comm = 2.4;
  p.comm_slowdown_during_copy = 1.3;
  const nlohmann::json j = profile_to_json(p);
  const ClusterProfile q = profile_from_json(j);
  EXPECT_DOUBLE_EQ(q.copy_slowdown_during_comm, 2.4);
  EXPECT_DOUBLE_EQ(q.comm_slowdown_during_copy, 1.3);
  for (const char* key : {"copy_slowdown_during_comm", "comm_slowdown_during_copy"}) {
    nlohmann::json old = j;
    old.erase(key);
    try {
      profile_from_json(old);
      ADD_FAILURE() << key;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), std::string("profile.") + key);
      EXPECT_NE(std::string(e.what()).find("calibrate again"), std::string::npos) << e.what();
    }
  }
  // A GPU (nccl) profile does not use them (its copies keep their own time): absent is 1.
  nlohmann::json gpu = j;
  gpu["backend"] = "nccl";
  gpu.erase("copy_slowdown_during_comm");
  gpu.erase("comm_slowdown_during_copy");
  EXPECT_DOUBLE_EQ(profile_from_json(gpu).copy_slowdown_during_comm, 1.0);
  EXPECT_DOUBLE_EQ(profile_from_json(gpu).comm_slowdown_during_copy, 1.0);
}

TEST(Profile, BadFilesNameThePath) {
  nlohmann::json j = profile_to_json(mpi_profile(1e9));
  j["collectives"][0]["sizes_bytes"] = {4096, 1024, 16384, 65536};
  try {
    profile_from_json(j);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "profile.collectives[0].sizes_bytes");
  }
  j.erase("collectives");
  EXPECT_THROW(profile_from_json(j), InputError);
  // Optional text fields of the wrong type are an InputError naming them (a number as
  // "created" aborted the program, found by tests/fuzz/fuzz_cli.py).
  for (const char* key : {"created", "machine"}) {
    nlohmann::json k = profile_to_json(ClusterProfile{"mpi", "", "", {}, 1e9});
    k[key] = 181.7;
    try {
      profile_from_json(k);
      FAIL() << key;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), std::string("profile.") + key);
    }
  }
  // A file with no format at all (a scenario given as --profile) is said to be no profile.
  try {
    profile_from_json(nlohmann::json{{"name", "a scenario"}, {"model", nlohmann::json::object()}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "profile.format");
    EXPECT_NE(std::string(e.what()).find("this is not a cluster profile"), std::string::npos) << e.what();
  }
  j = profile_to_json(ClusterProfile{"mpi", "", "", {}, 1e9});
  j["event_latency_us"] = -1;
  try {
    profile_from_json(j);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "profile.event_latency_us");
  }
}

// Values a calibration never writes, hand-edited or corrupt, are refused by their path within
// the scenario's limits: 1e308 as an overhead aborted the simulator's engine, a copy bandwidth
// of 1e-300 its network, and 1e15 ran as a step of two years (found by a new-user tour).
TEST(Profile, OutOfRangeValuesNameTheirPath) {
  const ClusterProfile good = mpi_profile(1e9);
  const nlohmann::json base = profile_to_json(good);
  ASSERT_NO_THROW(profile_from_json(base));
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* path;
  };
  const std::vector<Case> cases = {
      {"/issue_overhead_us", 1e308, "profile.issue_overhead_us"},
      {"/issue_overhead_us", 1e15, "profile.issue_overhead_us"},
      {"/event_latency_us", 1e300, "profile.event_latency_us"},
      {"/compute_overhead_us", 1e12, "profile.compute_overhead_us"},
      {"/copy_latency_us", 2e6, "profile.copy_latency_us"},
      {"/copy_bandwidth_bytes_per_s", 1e-300, "profile.copy_bandwidth_bytes_per_s"},
      {"/comm_slowdown_during_compute", 0.5, "profile.comm_slowdown_during_compute"},
      {"/compute_slowdown_during_comm", 1e9, "profile.compute_slowdown_during_comm"},
      {"/copy_slowdown_during_comm", 0.9, "profile.copy_slowdown_during_comm"},
      {"/comm_slowdown_during_copy", 101, "profile.comm_slowdown_during_copy"},
      {"/backend", "foo", "profile.backend"},
      {"/collectives/0/group_size", 0, "profile.collectives[0].group_size"},
      {"/collectives/0/group_size", 1, "profile.collectives[0].group_size"},
      {"/collectives/0/times_us/1", 1e300, "profile.collectives[0].times_us[1]"},
      {"/collectives/0/alpha_us", 1e300, "profile.collectives[0].alpha_us"},
      {"/collectives/0/beta_us_per_byte", -1e300, "profile.collectives[0].beta_us_per_byte"},
      {"/collectives/0/sizes_bytes/0", 0, "profile.collectives[0].sizes_bytes[0]"},
      // Whole numbers too large for their type: named and quoted as written, not wrapped.
      {"/ranks", 1e18, "profile.ranks"},
      {"/ranks", 2.5, "profile.ranks"},
      {"/collectives/0/group_size", 1e18, "profile.collectives[0].group_size"},
      {"/collectives/0/sizes_bytes/0", 1e30, "profile.collectives[0].sizes_bytes[0]"},
      // Keys of no profile: a typo is named with the closest key.
      {"/isue_overhead_us", 1, "profile.isue_overhead_us"},
      {"/collectives/0/alpha", 1, "profile.collectives[0].alpha"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = base;
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    try {
      profile_from_json(j);
      ADD_FAILURE() << c.pointer << " = " << c.value.dump() << " was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), c.path) << c.pointer;
      EXPECT_EQ(std::string(e.what()).find("-2147483648"), std::string::npos) << e.what();
    }
  }
  nlohmann::json typo = base;
  typo["isue_overhead_us"] = 1;
  try {
    profile_from_json(typo);
    ADD_FAILURE() << "a misspelt key was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean \"issue_overhead_us\""), std::string::npos) << e.what();
  }
  // A second table for the same collective and group size.
  nlohmann::json twice = base;
  twice["collectives"].push_back(base["collectives"][0]);
  try {
    profile_from_json(twice);
    ADD_FAILURE() << "a duplicate table was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "profile.collectives[1]");
  }
}

}  // namespace
}  // namespace shardline
