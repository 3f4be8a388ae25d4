// Quantities with units as users write them in scenarios and flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"
#include "core_test_support.h"

namespace shardline {
namespace {

using ::testing::HasSubstr;

using coretest::expect_input_error;

TEST(ParseBytes, BinaryAndDecimalUnits) {
  EXPECT_EQ(parse_bytes("25MiB", "x"), 25LL * 1024 * 1024);
  EXPECT_EQ(parse_bytes("64KiB", "x"), 65536);
  EXPECT_EQ(parse_bytes("1.5GB", "x"), 1500000000LL);
  EXPECT_EQ(parse_bytes("2KB", "x"), 2000);
  EXPECT_EQ(parse_bytes("1TiB", "x"), 1099511627776LL);
  EXPECT_EQ(parse_bytes("80GiB", "x"), 80LL << 30);
  EXPECT_EQ(parse_bytes("1.5KiB", "x"), 1536);
}

TEST(ParseBytes, BareNumbersAreBytesAndOneSpaceIsAllowed) {
  EXPECT_EQ(parse_bytes("4096", "x"), 4096);
  EXPECT_EQ(parse_bytes("0", "x"), 0);
  EXPECT_EQ(parse_bytes("17B", "x"), 17);
  EXPECT_EQ(parse_bytes("1 GiB", "x"), 1LL << 30);
  EXPECT_EQ(parse_bytes("  8MiB ", "x"), 8LL << 20);
  EXPECT_EQ(parse_bytes("1e6", "x"), 1000000);
}

TEST(ParseBytes, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "abc", "12XB", "1  GiB", "MiB", "64MB/s", "inf", "nan", "0x10", "1Gb"}) {
    expect_input_error([&] { parse_bytes(bad, "policy.bucket_bytes"); }, "policy.bucket_bytes",
                       {"\"" + std::string(bad) + "\"", "KiB", "MB"});
  }
  expect_input_error([] { parse_bytes("-1MiB", "p"); }, "p", {"\"-1MiB\"", "negative"});
  expect_input_error([] { parse_bytes("1.5B", "p"); }, "p", {"\"1.5B\"", "whole number"});
}

TEST(ParseRate, BitsAndBytesPerSecond) {
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("400Gbps", "x"), 5e10);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("200Gb/s", "x"), 2.5e10);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("450GB/s", "x"), 4.5e11);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("50 GB/s", "x"), 5e10);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("1.6TB/s", "x"), 1.6e12);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("1GiB/s", "x"), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("25GBps", "x"), 2.5e10);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s("100Gbit/s", "x"), 1.25e10);
}

TEST(ParseRate, RejectsSizesBareNumbersAndZero) {
  for (const char* bad : {"450GB", "450", "fast", "450 GB / s"}) {
    expect_input_error([&] { parse_rate_bytes_per_s(bad, "cluster.intra_node.bandwidth"); },
                       "cluster.intra_node.bandwidth", {"\"" + std::string(bad) + "\"", "GB/s", "Gbps"});
  }
  expect_input_error([] { parse_rate_bytes_per_s("0GB/s", "r"); }, "r", {"\"0GB/s\"", "positive"});
}

TEST(ParseTime, AllUnitsToMicroseconds) {
  EXPECT_DOUBLE_EQ(parse_time_us("2.5us", "x"), 2.5);
  EXPECT_DOUBLE_EQ(parse_time_us("3ms", "x"), 3000);
  EXPECT_DOUBLE_EQ(parse_time_us("1s", "x"), 1e6);
  EXPECT_DOUBLE_EQ(parse_time_us("800ns", "x"), 0.8);
  EXPECT_DOUBLE_EQ(parse_time_us("5 us", "x"), 5);
  EXPECT_DOUBLE_EQ(parse_time_us("7\xC2\xB5s", "x"), 7);
}

TEST(ParseTime, RequiresAUnit) {
  for (const char* bad : {"5", "3 hours", "ms", "2.5 u s"}) {
    expect_input_error([&] { parse_time_us(bad, "cluster.launch_overhead"); }, "cluster.launch_overhead",
                       {"\"" + std::string(bad) + "\"", "ns, us, ms, s"});
  }
  expect_input_error([] { parse_time_us("-1us", "t"); }, "t", {"\"-1us\"", "negative"});
}

TEST(ParseFlops, PrefixesAndSuffixes) {
  EXPECT_DOUBLE_EQ(parse_flops("1.2T", "x"), 1.2e12);
  EXPECT_DOUBLE_EQ(parse_flops("3e12", "x"), 3e12);
  EXPECT_DOUBLE_EQ(parse_flops("989TFLOP", "x"), 989e12);
  EXPECT_DOUBLE_EQ(parse_flops("5 GFLOPs", "x"), 5e9);
  EXPECT_DOUBLE_EQ(parse_flops("20M", "x"), 2e7);
  EXPECT_DOUBLE_EQ(parse_flops("100", "x"), 100);
}

TEST(ParseFlops, RejectsOtherSuffixesAndNegatives) {
  expect_input_error([] { parse_flops("1.2X", "model.units.0.forward_flops"); }, "model.units.0.forward_flops",
                     {"\"1.2X\"", "FLOP"});
  expect_input_error([] { parse_flops("1TFLOP/s", "f"); }, "f", {"\"1TFLOP/s\""});
  expect_input_error([] { parse_flops("-3", "f"); }, "f", {"\"-3\"", "negative"});
}

TEST(Format, HumanReadable) {
  EXPECT_EQ(format_bytes(67108864), "64.0 MiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(80LL << 30), "80.0 GiB");
  EXPECT_EQ(format_time_us(1230), "1.23 ms");
  EXPECT_EQ(format_time_us(0.8), "800 ns");
  EXPECT_EQ(format_time_us(12.5), "12.50 us");
  EXPECT_EQ(format_time_us(2.5e6), "2.500 s");
  EXPECT_EQ(format_rate(4.5e11), "450.0 GB/s");
  EXPECT_EQ(format_rate(5e10), "50.0 GB/s");
  EXPECT_EQ(format_rate(1.6e12), "1.6 TB/s");
}

TEST(Format, RoundTripsThroughParse) {
  EXPECT_EQ(parse_bytes(format_bytes(64LL << 20), "x"), 64LL << 20);
  EXPECT_DOUBLE_EQ(parse_rate_bytes_per_s(format_rate(4.5e11), "x"), 4.5e11);
  EXPECT_DOUBLE_EQ(parse_time_us(format_time_us(1230), "x"), 1230);
}

TEST(Suggest, ClosestKnownWord) {
  EXPECT_EQ(edit_distance("bucket_byte", "bucket_bytes"), 1);
  EXPECT_EQ(edit_distance("", "abc"), 3);
  EXPECT_EQ(closest_match("bucket_byte", {"comm_fusion", "bucket_bytes", "zero_copy"}), "bucket_bytes");
  EXPECT_EQ(closest_match("shrad", {"shard", "replicate"}), "shard");
  EXPECT_EQ(closest_match("xyzzy", {"shard", "replicate"}), "");
  EXPECT_THAT(suggestion_tail("xyzzy", {"shard", "replicate"}), HasSubstr("shard, replicate"));
}

// An audit's near misses: the last part of a name finds it ("complex" for "eager_complex"), as
// its first part does; case is ignored.
TEST(Suggest, SuffixesFindTheName) {
  const std::vector<std::string> rope_impls = {"fused", "eager_complex", "eager_rotation"};
  EXPECT_EQ(closest_match("complex", rope_impls), "eager_complex");
  EXPECT_EQ(closest_match("rotation", rope_impls), "eager_rotation");
  const std::vector<std::string> positions = {"rope", "alibi", "learned"};
  EXPECT_EQ(closest_match("learn", positions), "learned");
  EXPECT_EQ(closest_match("tope", positions), "rope");
  EXPECT_EQ(closest_match("ROPE", positions), "rope");
  EXPECT_EQ(closest_match("alibii", positions), "alibi");
  EXPECT_EQ(closest_match("THROUGHPUT", {"throughput", "step_time", "memory"}), "throughput");
}

// "none" or "off" where the option list has no such word asks for something not offered: no
// option is suggested (an audit got "position none: did you mean rope?"), and the list follows.
TEST(Suggest, AWordThatSwitchesOffSuggestsNoOption) {
  const std::vector<std::string> positions = {"rope", "alibi", "learned"};
  EXPECT_EQ(closest_match("none", positions), "");
  EXPECT_EQ(closest_match("Off", positions), "");
  EXPECT_EQ(choice_tail("none", positions), " expected one of: rope, alibi, learned.");
  EXPECT_EQ(closest_match("NONE", {"full", "none", "selective"}), "none");  // offered: found
  EXPECT_EQ(closest_match("nne", {"full", "none", "selective"}), "none");   // a typo of it still is
}

// Another tool's name for a key finds this project's key, where spelling alone found a different
// parameter (an audit: "num_heads" got "kv_heads", "memory_bandwidth" got "copy_bandwidth"); the
// mapping applies only where its key is a candidate.
TEST(Suggest, OtherToolsNamesFindTheKeyNotTheNearestSpelling) {
  const std::vector<std::string> transformer = {"layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len"};
  EXPECT_EQ(closest_match("num_heads", transformer), "heads");
  EXPECT_EQ(closest_match("num_attention_heads", transformer), "heads");
  EXPECT_EQ(closest_match("num_key_value_heads", transformer), "kv_heads");
  EXPECT_EQ(closest_match("intermediate_size", transformer), "ffn_hidden");
  EXPECT_EQ(closest_match("Hidden_Size", transformer), "hidden");
  EXPECT_EQ(closest_match("memory_bandwidth", {"copy_bandwidth", "hbm_bandwidth"}), "hbm_bandwidth");
  EXPECT_EQ(closest_match("num_heads", {"shard", "replicate"}), "");  // not a candidate here: no hint
  EXPECT_EQ(closest_match("heads_", transformer), "heads");          // spelling still works
}

}  // namespace
}  // namespace shardline
