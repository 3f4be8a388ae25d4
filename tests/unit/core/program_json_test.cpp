// program.json and timeline.json: round trips, the text listing, and errors that name the path.
#include "core/program_json.h"

#include <cstdint>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/scenario.h"
#include "core/schedule.h"
#include "core/timeline.h"

namespace shardline {
namespace {

using nlohmann::json;

Program sample_program() {
  Program p;
  p.scenario = "tiny";
  p.world_size = 8;
  p.groups = fsdp_group_table(4, 2, 2);
  p.streams = fsdp2_stream_table();
  const int reshard = static_cast<int>(CommGroup::Reshard);
  p.buffers = {{"param_reshard", 2, reshard, 1, BufferInit::Shared},
               {"unsharded_params_reshard", 2, reshard, 2, BufferInit::None}};
  p.param_dtype = DType::bf16;
  p.reduce_dtype = DType::fp32;
  p.micro_batches = 2;
  p.static_memory_bytes = 12345;
  p.units = {"embed", "block0"};
  p.params = {{"embed.weight", 0, 1000, 250}, {"block0.wq", 1, 64, 16}, {"block0.wk", 1, 64, 16}};
  Op ci;
  ci.kind = OpKind::CopyIn;
  ci.stream = StreamId::CopyIn;
  ci.unit = 1;
  ci.bucket = 1;
  ci.set_bytes(64);
  p.set_name(ci, "ci u1");
  ci.link = 1;
  ci.src_buffer = 0;
  Op ag = ci;
  ag.link = -1;
  ag.dst_buffer = 1;
  ag.kind = OpKind::AllGather;
  ag.stream = StreamId::AllGather;
  ag.set_bytes(256);
  ag.group = CommGroup::Reshard;
  p.set_name(ag, "ag u1");
  Op fwd;
  fwd.kind = OpKind::Compute;
  fwd.unit = 1;
  fwd.microbatch = 1;
  fwd.phase = Phase::Backward;
  fwd.set_compute_us(12.5);
  fwd.recompute = true;
  p.set_name(fwd, "bwd u1 mb1");  // a label shared by micro-batches, " mb1" added when printed
  Op free;
  free.kind = OpKind::Free;
  free.memory = MemoryKind::UnshardedParams;
  free.set_bytes(256);
  free.pool = StreamId::AllGather;  // released on the compute stream into the all-gather stream's pool
  free.phase = Phase::Finalize;
  p.set_name(free, "free u1");
  const std::vector<TensorSlice> slices{{1, 0, 16}, {2, 0, 16}};
  p.add_op(ci, {}, slices);
  p.add_op(ag, {0}, slices);
  p.add_op(fwd, {0, 1});
  p.add_op(free, {2});
  return p;
}

int reshard_index() { return static_cast<int>(CommGroup::Reshard); }

template <typename Fn>
std::string error_path(Fn fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.where();
  }
  return "<no error>";
}

TEST(ProgramJson, RoundTripKeepsEveryField) {
  Program p = sample_program();
  json j = program_to_json(p);
  EXPECT_EQ(j["format"], "shardline.program");
  EXPECT_EQ(j["ops"][1]["kind"], "all_gather");
  EXPECT_EQ(j["ops"][1]["stream"], "all_gather");
  EXPECT_EQ(j["ops"][0]["stream"], "ag_copy_in");
  EXPECT_EQ(j["ops"][1]["group"], "reshard");
  EXPECT_EQ(j["ops"][3]["memory"], "unsharded_params");
  EXPECT_EQ(j["ops"][2]["phase"], "backward");

  Program back = program_from_json(json::parse(j.dump()));
  EXPECT_EQ(program_to_json(back), j);
  EXPECT_EQ(back.scenario, "tiny");
  EXPECT_EQ(back.world_size, 8);
  ASSERT_EQ(back.groups.size(), 4u);
  EXPECT_EQ(back.groups[static_cast<int>(CommGroup::Replicate)].stride, 4);
  EXPECT_EQ(back.groups[static_cast<int>(CommGroup::Reshard)].size, 2);
  ASSERT_EQ(back.streams.size(), 5u);
  EXPECT_EQ(back.streams[static_cast<int>(StreamId::AllGather)].priority, -1);
  EXPECT_EQ(back.streams[static_cast<int>(StreamId::AllReduce)].priority, 0);
  EXPECT_EQ(back.ops[0].link, 1);
  ASSERT_EQ(back.buffers.size(), 2u);
  EXPECT_EQ(back.buffers[1].name, "unsharded_params_reshard");
  EXPECT_EQ(back.buffers[1].group, reshard_index());
  EXPECT_EQ(back.buffers[1].blocks, 2);
  EXPECT_EQ(back.buffers[0].init, BufferInit::Shared);
  EXPECT_EQ(back.ops[1].src_buffer, 0);
  EXPECT_EQ(back.ops[1].dst_buffer, 1);
  EXPECT_EQ(back.ops[1].reduction, Reduction::None);
  ASSERT_EQ(back.ops.size(), 4u);
  EXPECT_EQ(back.ops[1].kind, OpKind::AllGather);
  EXPECT_EQ(back.ops[1].group, CommGroup::Reshard);
  EXPECT_EQ(back.slices(back.ops[0]).size(), 2u);
  EXPECT_EQ(back.slices(back.ops[0])[1].param, 2);
  const auto deps = back.deps(back.ops[2]);
  EXPECT_EQ(std::vector<int>(deps.begin(), deps.end()), (std::vector<int>{0, 1}));
  // The copy-in and its all-gather list the same slices: read back, they share one list.
  EXPECT_EQ(back.ops[0].slice_list, back.ops[1].slice_list);
  EXPECT_EQ(back.slice_lists.size(), 2u);
  EXPECT_TRUE(back.ops[2].recompute);
  EXPECT_DOUBLE_EQ(back.ops[2].compute_us(), 12.5);
  EXPECT_EQ(back.ops[3].memory, MemoryKind::UnshardedParams);
  EXPECT_EQ(back.ops[3].pool, StreamId::AllGather);
  EXPECT_EQ(back.params[0].shard_numel, 250);
}

// Each op's launches (the host term's count) round-trip; a Program written before they were
// counted reads with the kind's default (markers 0, every other op 1); a marker that launches
// something, or a negative count, is refused naming the field.
TEST(ProgramJson, HostLaunchesRoundTripDefaultByKindAndAreChecked) {
  Program p = sample_program();
  p.host_launches[2] = 37;
  json j = program_to_json(p);
  EXPECT_EQ(j["ops"][2]["host_launches"], 37);
  EXPECT_EQ(j["ops"][3]["host_launches"], 0);
  EXPECT_EQ(program_from_json(json::parse(j.dump())).host_launches[2], 37u);
  json old = j;
  for (json& op : old["ops"]) op.erase("host_launches");
  const Program defaults = program_from_json(old);
  EXPECT_EQ(std::vector<uint32_t>(defaults.host_launches.begin(), defaults.host_launches.end()),
            (std::vector<uint32_t>{1, 1, 1, 0}));
  json bad = j;
  bad["ops"][3]["host_launches"] = 2;  // the free marker
  EXPECT_EQ(error_path([&] { program_from_json(bad); }), "ops[3].host_launches");
  bad = j;
  bad["ops"][2]["host_launches"] = -1;
  EXPECT_EQ(error_path([&] { program_from_json(bad); }), "ops[2].host_launches");
}

// A free's allocator pool: written for allocs and frees; a Program written before it existed
// reads as the op's own stream; an alloc's is its own stream, or the file is refused.
TEST(ProgramJson, AFreesPoolDefaultsToItsStreamAndAnAllocsIsItsOwn) {
  json j = program_to_json(sample_program());
  json& free = j["ops"][3];
  EXPECT_EQ(free["pool"], "all_gather");
  EXPECT_FALSE(j["ops"][2].contains("pool"));  // a compute op has none
  free.erase("pool");
  EXPECT_EQ(program_from_json(j).ops[3].pool, StreamId::Compute);
  json alloc = free;
  alloc["kind"] = "alloc";
  alloc["pool"] = "reduce_scatter";
  j["ops"][3] = alloc;
  try {
    program_from_json(j);
    FAIL() << "an alloc in another stream's pool was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "ops[3].pool");
  }
}


TEST(ProgramJson, BadFilesNameTheJsonPath) {
  json good = program_to_json(sample_program());
  json j = good;
  j["ops"][1]["kind"] = "all_gahter";
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[1].kind");
  j = good;
  j["ops"][1]["deps"] = {3};
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[1].deps[0]");
  j = good;
  j["ops"][0].erase("bytes");
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].bytes");
  j = good;
  j["ops"][2]["id"] = 7;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[2].id");
  j = good;
  j["ops"][0]["slices"][1]["param"] = 9;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].slices[1].param");
  j = good;
  j["ops"][0]["slices"][1]["shard_numel"] = 17;  // the shard has 16 elements
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].slices[1]");
  // The static bytes must hold the parameters' shards in the master dtype (282 elements x 4 B),
  // which the peak's parts split them into; summed without overflow.
  j = good;
  j["static_memory_bytes"] = 1127;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "static_memory_bytes");
  j["static_memory_bytes"] = 1128;
  EXPECT_NO_THROW(program_from_json(j));
  j["params"][0]["numel"] = j["params"][0]["shard_numel"] = int64_t{1} << 62;  // x 4 B wraps int64
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "static_memory_bytes");
  // An offset whose sum with the count wraps int64 negative was taken (an audit's 2^63 - 1 and 1).
  j = good;
  j["ops"][0]["slices"][1]["shard_offset"] = INT64_MAX;
  j["ops"][0]["slices"][1]["shard_numel"] = 1;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].slices[1]");
  j["ops"][0]["slices"][1]["shard_offset"] = int64_t{1} << 62;
  j["ops"][0]["slices"][1]["shard_numel"] = int64_t{1} << 62;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].slices[1]");
  // What the field table says and the reader now holds to (an audit found them accepted): only
  // collectives name a group, a copy has its collective's dtype, a shard is no larger than its
  // parameter.
  j = good;
  j["ops"][0]["group"] = "shard";
  j["ops"][0]["group_size"] = j["groups"][1]["size"];  // the shard group's own size: only the group is wrong
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].group");
  j = good;
  j["ops"][0]["dtype"] = j["ops"][0]["dtype"] == "fp32" ? "bf16" : "fp32";
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].dtype");
  j = good;
  j["params"][0]["shard_numel"] = j["params"][0]["numel"].get<int64_t>() + 1;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "params[0].shard_numel");
  j = good;
  j["ops"][2]["microbatch"] = 2;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[2].microbatch");
  j = good;
  j["param_dtype"] = "int4";
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "param_dtype");
  j = good;
  j["groups"][2]["stride"] = 3;  // 2 x 3 does not divide 8 ranks
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "groups[2]");
  j = good;
  j["groups"][1]["name"] = "replicate";  // the table is in the op group names' order
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "groups[1].name");
  j = good;
  j["streams"][0]["priority"] = "high";
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "streams[0].priority");
  j = good;
  j["ops"][1]["group_size"] = 4;  // the reshard group has 2 ranks
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[1].group_size");
  j = good;
  j["ops"][0]["group_size"] = 2;  // a copy-in names no group: its size is the none group's 1
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].group_size");
  j = good;
  j["ops"][2]["bytes"] = 8;  // a compute op moves no bytes
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[2].bytes");
  j = good;
  j["ops"][0]["compute_us"] = 1.5;  // only a compute op has a compute time
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].compute_us");
  j = good;
  j["ops"][2]["compute_us"] = -3.0;
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[2].compute_us");
  j = good;
  j["ops"][2]["compute_us"] = 1e308;  // beyond the 10 days a timeline may span
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[2].compute_us");
  j = good;
  j["ops"][3]["bytes"] = uint64_t{1} << 63;  // read as a signed number it would wrap to a negative
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[3].bytes");
  try {
    program_from_json(j);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("9223372036854775808 is out of range"), std::string::npos) << e.what();
  }
  j = good;
  j["ops"][0]["name"] = "ci u1\n\x1b[31mRED";  // printed in tables: no control characters
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].name");
  j = good;
  j["ops"][1]["reduction"] = "avg";  // an all-gather reduces nothing
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[1].reduction");
  j = good;
  j["ops"][0]["link"] = 2;  // op 2 is a compute op, not the collective the copy fills
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].link");
  j = good;
  j["ops"][2]["link"] = 1;  // only copies link
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[2].link");
  j = good;
  j["buffers"][1]["blocks"] = 4;  // 1 or the reshard group's 2
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "buffers[1].blocks");
  j = good;
  j["buffers"][0]["init"] = "random";
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "buffers[0].init");
  j = good;
  j["buffers"][0]["group"] = "world";
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "buffers[0].group");
  j = good;
  j["ops"][1]["dst_buffer"] = -1;  // a collective writes a buffer
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[1].dst_buffer");
  j = good;
  j["ops"][0]["src_buffer"] = 1;  // a copy-in reads its collective's source, buffer 0
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[0].src_buffer");
  j = good;
  j["ops"][2]["src_buffer"] = 0;  // compute moves no data
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "ops[2].src_buffer");
  j = good;
  j["version"] = 1;  // the version before the tables
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "version");
  j = good;
  j["format"] = "shardline.timeline";
  EXPECT_EQ(error_path([&] { program_from_json(j); }), "format");
  EXPECT_EQ(error_path([&] { program_from_json(json::array()); }), "");
}

TEST(ProgramText, OneLinePerOpWithStreamKindAndDeps) {
  std::string text = program_to_text(sample_program());
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u + 4u);  // summary, column header, ops
  EXPECT_NE(lines[0].find("tiny"), std::string::npos);
  EXPECT_NE(lines[0].find("8 ranks"), std::string::npos);
  EXPECT_NE(lines[0].find("replicate 2 (stride 4)"), std::string::npos);
  EXPECT_NE(lines[3].find("all_gather"), std::string::npos);
  EXPECT_NE(lines[3].find("ag u1"), std::string::npos);
  EXPECT_NE(lines[3].find("reshard(2)"), std::string::npos);
  EXPECT_NE(lines[3].find(" 256 "), std::string::npos);
  EXPECT_EQ(lines[4].substr(lines[4].size() - 3), "0,1");
  EXPECT_EQ(lines[2].substr(lines[2].size() - 1), "-");  // no deps
}

Timeline sample_timeline() {
  Timeline t;
  t.source = "measured";
  t.backend = "mpi";
  t.scenario = "tiny";
  t.ranks = 2;
  t.iterations = 3;
  t.reported_iteration = 1;
  t.scale = 4;
  t.memory_capacity_bytes = 1 << 20;
  t.memory_margin = 0.05;
  set_timeline_ops(t, sample_program());
  t.intervals = {{0, 0, 1, 0.5, 1.0, 2.25}, {1, 1, 2, 3.0, 4.0, 9.5}};
  t.memory = {{0, 10}, {2.5, 300}};
  t.workload.gpus = 2;
  t.workload.samples_per_step = 4;
  t.workload.tokens_per_step = 4096;
  t.workload.model_flops_per_step = 3e12;
  t.workload.hardware_flops_per_step = 4e12;
  t.workload.peak_flops_per_gpu = 989e12;
  t.memory_reserve.fixed_bytes = 12345;
  t.memory_reserve.fragmentation = 0.07;
  return t;
}

TEST(TimelineJson, TimelineOpsDropSlicesAndDeps) {
  Timeline t;
  set_timeline_ops(t, sample_program());
  const auto& ops = t.ops;
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].slice_list, 0u);
  EXPECT_EQ(ops[2].deps_begin, 0u);
  EXPECT_EQ(t.name(ops[1]), "ag u1");
  EXPECT_EQ(t.name(ops[2]), "bwd u1 mb1");
  EXPECT_EQ(ops[1].bytes(), 256);
}

TEST(TimelineJson, RoundTripKeepsEveryField) {
  Timeline t = sample_timeline();
  json j = timeline_to_json(t);
  EXPECT_EQ(j["format"], "shardline.timeline");
  EXPECT_EQ(j["intervals"][1], json::parse("[1, 1, 2, 3.0, 4.0, 9.5]"));
  Timeline back = timeline_from_json(json::parse(j.dump()));
  EXPECT_EQ(timeline_to_json(back), j);
  EXPECT_EQ(back.source, "measured");
  EXPECT_EQ(back.backend, "mpi");
  EXPECT_EQ(back.reported_iteration, 1);
  EXPECT_DOUBLE_EQ(back.scale, 4);
  ASSERT_EQ(back.intervals.size(), 2u);
  EXPECT_DOUBLE_EQ(back.intervals[0].end_us, 2.25);
  EXPECT_EQ(back.intervals[1].rank, 1);
  ASSERT_EQ(back.memory.size(), 2u);
  EXPECT_EQ(back.memory[1].bytes, 300);
  EXPECT_EQ(back.ops[1].kind, OpKind::AllGather);
  EXPECT_EQ(back.group_size(back.ops[1]), 2);  // the reshard group's, from the Program's table
  EXPECT_EQ(back.group_size(back.ops[0]), 1);
  EXPECT_EQ(back.workload.gpus, 2);
  EXPECT_DOUBLE_EQ(back.workload.tokens_per_step, 4096);
  EXPECT_DOUBLE_EQ(back.workload.hardware_flops_per_step, 4e12);
  EXPECT_EQ(back.memory_reserve.fixed_bytes, 12345);
  EXPECT_DOUBLE_EQ(back.memory_reserve.fragmentation, 0.07);
  // The Program's launch count: carried, unknown (0) in files written before it, never negative.
  EXPECT_EQ(back.host_launches_per_step, t.host_launches_per_step);
  EXPECT_GT(back.host_launches_per_step, 0);
  json old = j;
  old.erase("host_launches_per_step");
  EXPECT_EQ(timeline_from_json(old).host_launches_per_step, 0);
  json bad = j;
  bad["host_launches_per_step"] = -1;
  EXPECT_THROW(timeline_from_json(bad), InputError);
}

// An imported run's allocator figures round-trip; timelines without them read as unknown, and a
// negative figure is refused at its path.
// The drawn series (live bytes as the streams reach the markers) round-trips, and a file
// without it (a measured run, an older timeline) reads with none.
TEST(TimelineJson, TheMemoryByStreamRoundTripsAndIsOptional) {
  Timeline t = sample_timeline();
  json plain = timeline_to_json(t);
  EXPECT_FALSE(plain.contains("memory_by_stream"));
  EXPECT_TRUE(timeline_from_json(plain).memory_by_stream.empty());
  t.memory_by_stream = {{0, 100}, {7.5, 400}};
  const json j = timeline_to_json(t);
  const Timeline back = timeline_from_json(json::parse(j.dump()));
  ASSERT_EQ(back.memory_by_stream.size(), 2u);
  EXPECT_DOUBLE_EQ(back.memory_by_stream[1].time_us, 7.5);
  EXPECT_EQ(back.memory_by_stream[1].bytes, 400);
  json bad = j;
  bad["memory_by_stream"][1][0] = -1;  // out of time order
  EXPECT_EQ(error_path([&] { timeline_from_json(bad); }), "memory_by_stream[1][0]");
}

TEST(TimelineJson, TheMeasuredAllocatorPeaksRoundTripAndAreOptional) {
  Timeline t = sample_timeline();
  EXPECT_FALSE(timeline_to_json(t).contains("allocator_measured"));
  EXPECT_FALSE(timeline_from_json(timeline_to_json(t)).allocator_measured.has_value());
  t.allocator_measured = AllocatorPeaks{70LL << 30, 82LL << 30};
  json j = timeline_to_json(t);
  const Timeline back = timeline_from_json(json::parse(j.dump()));
  ASSERT_TRUE(back.allocator_measured.has_value());
  EXPECT_EQ(back.allocator_measured->peak_allocated_bytes, 70LL << 30);
  EXPECT_EQ(back.allocator_measured->peak_reserved_bytes, 82LL << 30);
  j["allocator_measured"]["peak_reserved_bytes"] = -1;
  try {
    timeline_from_json(j);
    FAIL() << "a negative reserved peak was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "allocator_measured.peak_reserved_bytes");
  }
}

// The predicted allocator pools' sum round-trips and is optional (timelines before 2026-11-27).
// The peak's parts and the variation a run had round-trip; both are optional (older files,
// measured runs, imported runs), and a file with no variation field reads as not recorded.
TEST(TimelineJson, ThePeaksPartsAndTheVariationRoundTripAndAreOptional) {
  Timeline t = sample_timeline();
  MemoryAtPeak peak;
  peak.sharded_params_bytes = 4;
  peak.bytes_by_kind[static_cast<size_t>(MemoryKind::Activations)] = 9;
  t.memory_at_peak = peak;
  t.variation.stragglers.push_back({RankSelector{RankSelector::Scope::Rank, 1}, 1.5});
  const Timeline back = timeline_from_json(json::parse(timeline_to_json(t).dump()));
  EXPECT_EQ(back.memory_at_peak, t.memory_at_peak);
  EXPECT_TRUE(back.variation_recorded);
  EXPECT_EQ(back.variation, t.variation);
  json older = timeline_to_json(t);
  older.erase("memory_at_peak");
  older.erase("variation");
  const Timeline old = timeline_from_json(older);
  EXPECT_FALSE(old.memory_at_peak.has_value());
  EXPECT_FALSE(old.variation_recorded);
  EXPECT_TRUE(old.variation.empty());
}

TEST(TimelineJson, ThePoolPeaksRoundTripAndAreOptional) {
  Timeline t = sample_timeline();
  EXPECT_FALSE(timeline_from_json(timeline_to_json(t)).allocator_pool_peaks_bytes.has_value());
  t.allocator_pool_peaks_bytes = 1234;
  EXPECT_EQ(timeline_from_json(json::parse(timeline_to_json(t).dump())).allocator_pool_peaks_bytes, 1234);
}

// Timelines written before the workload and the memory reserve existed still read: throughput
// unknown (every per-step count 0), no reserve.
TEST(TimelineJson, FilesWithoutWorkloadOrReserveReadAsUnknown) {
  json j = timeline_to_json(sample_timeline());
  ASSERT_TRUE(j.contains("workload"));
  ASSERT_TRUE(j.contains("memory_reserve"));
  j.erase("workload");
  j.erase("memory_reserve");
  const Timeline back = timeline_from_json(j);
  EXPECT_EQ(back.workload.gpus, 1);
  EXPECT_EQ(back.workload.tokens_per_step, 0);
  EXPECT_EQ(back.workload.model_flops_per_step, 0);
  EXPECT_EQ(back.memory_reserve.fixed_bytes, 0);
  EXPECT_EQ(back.memory_reserve.fragmentation, 0);
  EXPECT_EQ(back.intervals.size(), 2u);
}

// An interval packs its rank and iteration into one word: the largest of each a mesh and a run
// can have read back exactly, and a file naming more is refused (not wrapped to a small rank).
TEST(TimelineJson, IntervalsHoldTheLargestRankAndIterationAndRefuseMore) {
  const json good = timeline_to_json(sample_timeline());
  json j = good;
  j["ranks"] = kMaxWorldRanks;
  j["iterations"] = kMaxTimelineIterations;
  j["reported_iteration"] = kMaxTimelineIterations - 1;
  j["intervals"][1][1] = kMaxWorldRanks - 1;
  j["intervals"][1][2] = kMaxTimelineIterations - 1;
  const Timeline back = timeline_from_json(j);
  EXPECT_EQ(back.intervals[1].rank, kMaxWorldRanks - 1);
  EXPECT_EQ(back.intervals[1].iteration, kMaxTimelineIterations - 1);
  EXPECT_EQ(back.intervals[0].rank, 0);
  EXPECT_EQ(timeline_to_json(back), j);

  j = good;
  j["intervals"][1][1] = (1 << 21) + 1;  // would wrap to rank 1 in 21 bits
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "intervals[1][1]");
  j = good;
  j["intervals"][1][5] = 1e300;  // an end no run reaches: named, not printed with 300 digits
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "intervals[1][5]");
  j = good;
  j["ranks"] = kMaxWorldRanks + 1;
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "ranks");
  j = good;
  j["iterations"] = kMaxTimelineIterations + 1;
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "iterations");
}

TEST(TimelineJson, BadFilesNameTheJsonPath) {
  json good = timeline_to_json(sample_timeline());
  json j = good;
  j["intervals"][1][0] = 4;  // only ops 0..3
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "intervals[1][0]");
  j = good;
  j["intervals"][0][1] = 2;  // ranks 0..1
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "intervals[0][1]");
  j = good;
  j["intervals"][0][5] = 0.0;  // ends before it starts
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "intervals[0]");
  j = good;
  j["intervals"][0] = {1, 2};
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "intervals[0]");
  j = good;
  j["ops"][2]["group_size"] = 3;  // op 0 said the none group has 1 rank
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "ops[2].group_size");
  try {
    timeline_from_json(j);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0], the first op of the none group, says 1"), std::string::npos) << e.what();
  }
  j = good;
  j["intervals"][0][4] = -1e308;  // the message quotes it as a number, not 300 digits
  try {
    timeline_from_json(j);
    ADD_FAILURE() << "a start of -1e308 us was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("-1e+308 us"), std::string::npos) << e.what();
    EXPECT_LT(std::string(e.what()).size(), 200u) << e.what();
  }
  j = good;
  j["memory"][1][0] = -1.0;  // out of time order
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "memory[1][0]");
  j = good;
  j["source"] = "guessed";
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "source");
  j = good;
  j["reported_iteration"] = 3;
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "reported_iteration");
  j = good;
  j["ops"][2]["phase"] = 1;
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "ops[2].phase");
  j = good;
  j["ops"][1]["microbatch"] = -1;  // the metrics keep one slot per micro-batch index
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "ops[1].microbatch");
  j = good;
  j["ops"][1]["microbatch"] = 2000000000;
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "ops[1].microbatch");
  j = good;
  j["workload"]["tokens_per_step"] = -1;
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "workload.tokens_per_step");
  j = good;
  j["memory_reserve"]["fixed_bytes"] = "lots";
  EXPECT_EQ(error_path([&] { timeline_from_json(j); }), "memory_reserve.fixed_bytes");
}

}  // namespace
}  // namespace shardline
