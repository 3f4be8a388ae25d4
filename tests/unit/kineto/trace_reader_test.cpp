// The profiler-trace reader: real traces (Holistic Trace Analysis test data) parse with every
// event and every NCCL kernel counted; plain and gzip files read alike; bad files fail with
// the file named; times keep their nanoseconds.
#include <gtest/gtest.h>

#include <zlib.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "kineto/trace_reader.h"
#include "kineto/trace_summary.h"

namespace shardline::kineto {
namespace {

const std::string kHta = std::string(SHARDLINE_SOURCE_DIR) + "/tests/data/hta/";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("shardline_kineto_" + std::to_string(::getpid()) + "_" + name)).string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
}

std::map<std::string, int> nccl_by_name(const KinetoTrace& t) {
  std::map<std::string, int> out;
  for (const GpuActivity& a : t.gpu)
    if (t.collective_of(a)) {
      const std::string& n = t.name_of(a);
      const size_t u = n.find('_');
      out[n.substr(u + 1, n.find_first_of("_(", u + 1) - u - 1)]++;
    }
  return out;
}

struct HtaCase {
  const char* file;
  int64_t events;
  size_t gpu;
  std::map<std::string, int> nccl;
  int rank, world;
};

// Expected counts from Python's json module (tests/data/hta/README.md), not from this reader.
TEST(TraceReader, EveryHtaTraceParsesWithItsEventsAndNcclKernelsCounted) {
  const std::vector<HtaCase> cases = {
      {"nccl_parser_config-nccl_data.json.gz", 40573, 3774, {{"AllReduce", 15}, {"Broadcast", 6}}, 0, 2},
      {"negative_queue_length_values_check-rank0.json.gz", 108936, 7747, {{"SendRecv", 80}}, 0, 16},
      {"trace_diff-control.json.gz", 109123, 9450, {{"AllReduce", 18}, {"SendRecv", 42}}, 3, 8},
      {"trace_filter-sampled_rank-0.json.gz", 4855, 1204, {{"SendRecv", 10}}, 0, 128},
      {"trace_filter-sampled_rank-1.json.gz", 4720, 1154, {{"SendRecv", 10}}, 1, 128},
  };
  for (const HtaCase& c : cases) {
    SCOPED_TRACE(c.file);
    const KinetoTrace t = read_trace(kHta + c.file);
    EXPECT_EQ(t.events, c.events);
    EXPECT_EQ(t.gpu.size(), c.gpu);
    EXPECT_EQ(nccl_by_name(t), c.nccl);
    EXPECT_EQ(t.rank, c.rank);
    EXPECT_EQ(t.world_size, c.world);
  }
}

TEST(TraceReader, ReadsTheCollectiveMetadataTheProfilerRecordsOnNcclKernels) {
  const KinetoTrace t = read_trace(kHta + "nccl_parser_config-nccl_data.json.gz");
  int all_reduce = 0;
  for (const GpuActivity& a : t.gpu) {
    const CollectiveInfo* c = t.collective_of(a);
    if (!c || c->kind != CommKind::AllReduce) continue;
    ++all_reduce;
    EXPECT_EQ(c->name, "allreduce");
    EXPECT_EQ(c->dtype, "Float");
    EXPECT_EQ(c->dtype_bytes(), 4);
    EXPECT_EQ(c->group_size, 2);
    EXPECT_EQ(c->group_ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(c->group_name, "0");
    EXPECT_GT(c->in_nelems, 0);
    EXPECT_EQ(c->in_nelems, c->out_nelems);
  }
  EXPECT_EQ(all_reduce, 15);
  // The first all-reduce kernel of the file: ts 4458677009853.422, dur 2636.669 (microseconds).
  for (const GpuActivity& a : t.gpu) {
    if (a.collective < 0) continue;
    EXPECT_EQ(a.ts_ns, 4458677009853422);
    EXPECT_EQ(a.dur_ns, 2636669);
    EXPECT_EQ(a.stream, 40);
    EXPECT_EQ(t.collectives[static_cast<size_t>(a.collective)].in_nelems, 6637568);
    break;
  }
}

const char* kSmallTrace = R"TRACE({"schemaVersion": 1, "distributedInfo": {"rank": 1, "world_size": 2},
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 9, "ts": 100, "dur": 1000},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 9, "ts": 110.5, "dur": 2, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120.25, "dur": 30, "args": {"stream": 7, "correlation": 7}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 9, "ts": 130, "dur": 2, "args": {"correlation": 8}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(x)", "pid": 0, "tid": 20, "ts": 140, "dur": 50,
   "args": {"stream": 20, "correlation": 8, "Collective name": "_allgather_base", "In msg nelems": 4, "Out msg nelems": 8,
            "Group size": 2, "dtype": "BFloat16", "Process Group Ranks": [0, 1]}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 9, "ts": 111, "args": {"Bytes": -64}},
  {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}
 ]})TRACE";

TEST(TraceReader, AShortenedRankListIsTheGroupSizeAtTheStrideOfItsFirstTwo) {
  const std::string path = temp_path("ranks.json");
  write_text(path, R"TRACE({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)",
    "ts": 1, "dur": 2, "args": {"stream": 9, "Collective name": "allreduce", "Group size": 5,
    "Process Group Ranks": "[3, 11, 19, ...]", "In msg nelems": 8, "dtype": "BFloat16"}}]})TRACE");
  const KinetoTrace t = read_trace(path);
  std::remove(path.c_str());
  ASSERT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.collective_of(t.gpu[0])->group_ranks, (std::vector<int>{3, 11, 19, 27, 35}));
}

// PyTorch 1.8-1.10 wrote "Kernel", "Runtime", "Memcpy" instead of "kernel", "cuda_runtime",
// "gpu_memcpy" (e.g. HTA's trace_file_list/inference_rank_1.json.gz).
TEST(TraceReader, ReadsTheCategoryNamesOfOlderProfilers) {
  const std::string path = temp_path("old.json");
  write_text(path, R"TRACE({"traceEvents": [
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "tid": 3, "ts": 10, "dur": 2, "args": {"correlation": 5}},
    {"ph": "X", "cat": "Kernel", "name": "gemm", "tid": 7, "ts": 20, "dur": 4, "args": {"stream": 7, "correlation": 5}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "tid": 7, "ts": 30, "dur": 1, "args": {"stream": 7}}]})TRACE");
  const KinetoTrace t = read_trace(path);
  std::remove(path.c_str());
  ASSERT_EQ(t.gpu.size(), 2u);
  EXPECT_EQ(t.gpu[0].kind, ActivityKind::Kernel);
  EXPECT_EQ(t.gpu[1].kind, ActivityKind::Memcpy);
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].correlation, 5);
}

TEST(TraceReader, PlainAndGzipFilesReadAlike) {
  const std::string plain = temp_path("small.json"), gz = temp_path("small.json.gz");
  write_text(plain, kSmallTrace);
  write_gzip(gz, kSmallTrace);
  for (const std::string& path : {plain, gz}) {
    SCOPED_TRACE(path);
    const KinetoTrace t = read_trace(path);
    EXPECT_EQ(t.events, 7);
    EXPECT_EQ(t.rank, 1);
    ASSERT_EQ(t.gpu.size(), 2u);
    EXPECT_EQ(t.gpu[0].ts_ns, 120250);
    EXPECT_EQ(t.gpu[0].dur_ns, 30000);
    EXPECT_EQ(t.gpu[0].collective, -1);
    const CollectiveInfo* c = t.collective_of(t.gpu[1]);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->kind, CommKind::AllGather);
    EXPECT_EQ(c->group_ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(c->dtype_bytes(), 2);
    ASSERT_EQ(t.launches.size(), 2u);
    EXPECT_EQ(t.launches[0].ts_ns, 110500);
    ASSERT_EQ(t.ranges.size(), 1u);
    EXPECT_EQ(t.name_of(t.ranges[0]), "ProfilerStep#3");
    ASSERT_EQ(t.memory.size(), 1u);
    EXPECT_EQ(t.memory[0].bytes, -64);
    EXPECT_EQ(t.memory[0].total_allocated, -1);  // this event carries no totals
    EXPECT_EQ(t.memory[0].device_type, -1);
    EXPECT_EQ(t.skipped_by_category.at("ph=M"), 1);
  }
  std::remove(plain.c_str());
  std::remove(gz.c_str());
}

// PyTorch's profiler writes the allocator's totals after each [memory] event, and its device;
// a total it writes as -1 (none) reads as none.
TEST(TraceReader, MemoryEventsKeepTheAllocatorsTotalsAndDevice) {
  const std::string path = temp_path("memory.json");
  write_text(path, R"TRACE({"traceEvents": [
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "tid": 9, "ts": 5,
     "args": {"Device Type": 1, "Device Id": 0, "Addr": 140000, "Bytes": 4096, "Total Allocated": 8192, "Total Reserved": 2097152}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "tid": 9, "ts": 6,
     "args": {"Device Type": 0, "Bytes": -64, "Total Allocated": -1, "Total Reserved": -1}}]})TRACE");
  const KinetoTrace t = read_trace(path);
  std::remove(path.c_str());
  ASSERT_EQ(t.memory.size(), 2u);
  EXPECT_EQ(t.memory[0].bytes, 4096);
  EXPECT_EQ(t.memory[0].total_allocated, 8192);
  EXPECT_EQ(t.memory[0].total_reserved, 2097152);
  EXPECT_EQ(t.memory[0].device_type, MemoryEvent::kCudaDeviceType);
  EXPECT_EQ(t.memory[1].device_type, 0);
  EXPECT_EQ(t.memory[1].total_allocated, -1);
  EXPECT_EQ(t.memory[1].total_reserved, -1);
}

TEST(TraceReader, SummaryAppliesTheProjectMetricsToOneStep) {
  const std::string plain = temp_path("summary.json");
  write_text(plain, kSmallTrace);
  const TraceSummary s = summarize_trace(read_trace(plain));
  std::remove(plain.c_str());
  ASSERT_EQ(s.steps.size(), 1u);
  const StepSummary& st = s.steps[0];
  EXPECT_EQ(st.name, "ProfilerStep#3");
  EXPECT_EQ(st.activities, 2);
  EXPECT_DOUBLE_EQ(st.step_time_us, 190.0 - 110.5);  // first launch to last end
  EXPECT_DOUBLE_EQ(st.compute_busy_us, 30.0);
  EXPECT_DOUBLE_EQ(st.comm_busy_us, 50.0);
  EXPECT_DOUBLE_EQ(st.exposed_comm_us, 79.5 - 30.0);
  EXPECT_DOUBLE_EQ(st.overlap_efficiency, 1.0 - 49.5 / 50.0);
  EXPECT_DOUBLE_EQ(st.gpu_idle_us, 79.5 - (190.0 - 120.25));  // before the gemm starts: the launch's lead
  EXPECT_EQ(st.collectives_by_kind[static_cast<int>(CommKind::AllGather)], 1);
}

// The summary gives each step what the allocator held at most, when the trace carries the
// totals, and says "-" (null in JSON) when it does not.
TEST(TraceReader, SummaryGivesEachStepTheAllocatorsPeaks) {
  KinetoTrace t;
  t.path = "mem.json";
  t.names = {"gemm", "ProfilerStep#1", "ProfilerStep#2"};
  t.ranges = {CpuRange{0, 1000, 1, 1}, CpuRange{1000, 1000, 1, 2}};
  for (int s = 0; s < 2; ++s) {
    GpuActivity a;
    a.ts_ns = 1000 * s + 100;
    a.dur_ns = 100;
    a.stream = 7;
    a.name = 0;
    t.gpu.push_back(a);
  }
  t.memory = {MemoryEvent{1500, 64, int64_t{3} << 30, int64_t{4} << 30, MemoryEvent::kCudaDeviceType},
              MemoryEvent{200, 64, int64_t{1} << 30, int64_t{2} << 30, MemoryEvent::kCudaDeviceType}};  // out of time order
  const TraceSummary s = summarize_trace(t);
  ASSERT_EQ(s.steps.size(), 2u);
  ASSERT_TRUE(s.steps[0].allocator.has_value());
  EXPECT_EQ(s.steps[0].allocator->peak_allocated_bytes, int64_t{1} << 30);
  EXPECT_EQ(s.steps[1].allocator->peak_allocated_bytes, int64_t{3} << 30);  // with the 1 GiB it starts at
  EXPECT_EQ(s.steps[1].allocator->peak_reserved_bytes, int64_t{4} << 30);
  const std::string text = summary_text(s);
  EXPECT_NE(text.find("alloc_GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("3.00       4.00"), std::string::npos) << text;
  EXPECT_EQ(summary_to_json(s)["steps"][0]["allocator"]["peak_reserved_bytes"], int64_t{2} << 30);
  t.memory.clear();
  const TraceSummary none = summarize_trace(t);
  EXPECT_FALSE(none.steps[0].allocator.has_value());
  EXPECT_TRUE(summary_to_json(none)["steps"][0]["allocator"].is_null());
}

void expect_input_error(const std::string& path, const std::string& needle) {
  try {
    read_trace(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TraceReader, BadFilesFailNamingTheFile) {
  const std::string not_json = temp_path("not.json"), no_events = temp_path("none.json"), truncated = temp_path("cut.json.gz");
  write_text(not_json, "this is not a trace");
  write_text(no_events, R"({"schemaVersion": 1})");
  const std::string full = temp_path("full.json.gz");
  std::string big = kSmallTrace;
  for (int i = 0; i < 200; ++i) big.insert(big.size() - 3, R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1})");
  write_gzip(full, big);
  {
    std::ifstream in(full, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_text(truncated, bytes.substr(0, bytes.size() / 2));
  }
  expect_input_error(not_json, "not JSON at byte");
  expect_input_error(no_events, "no \"traceEvents\"");
  expect_input_error(truncated, "truncated");
  expect_input_error(temp_path("missing.json"), "no such file");
  for (const auto& p : {not_json, no_events, truncated, full}) std::remove(p.c_str());
}

// The error read_trace(path) throws, "" for none.
std::string read_error(const std::string& path) {
  try {
    read_trace(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// One step, one kernel launched in it, one NCCL kernel: `kernel` and `nccl` are spliced into the
// kernel's and the NCCL kernel's fields, `info` into the file's head.
std::string one_step_trace(const std::string& info, const std::string& kernel, const std::string& nccl) {
  return R"J({)J" + info + R"J("traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "tid": 1, "ts": 1000, "dur": 500},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1010, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "tid": 7, )J" + kernel + R"J(, "args": {"stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", "tid": 20, "ts": 1040, "dur": 50,
   "args": {"stream": 20, "Collective name": "allreduce", "In msg nelems": 1024, "dtype": "Float", )J" + nccl + R"J(}}]})J";
}

// A "Group size" larger than the world, with a shortened rank list, once made the reader expand
// it without bound (GBs, then "out of memory"): refused, naming the file and the field.
TEST(TraceReader, AGroupSizeBeyondTheWorldIsRefusedNotExpanded) {
  const std::string path = temp_path("group_size.json");
  const auto error = [&](const std::string& info, const std::string& nccl) {
    write_text(path, one_step_trace(info, R"("ts": 1020, "dur": 100)", nccl));
    return read_error(path);
  };
  const std::string world2 = R"("distributedInfo": {"rank": 0, "world_size": 2}, )";
  std::string e = error(world2, R"("Group size": 1073741824, "Process Group Ranks": "[0, 1, ...]")");
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("traceEvents[3]"), std::string::npos) << e;
  EXPECT_NE(e.find("\"Group size\" is 1073741824, more than the trace's world size 2"), std::string::npos) << e;
  // Without distributedInfo the bound is the most ranks a world may have.
  e = error("", R"("Group size": 2000000, "Process Group Ranks": "[0, 1, ...]")");
  EXPECT_NE(e.find("\"Group size\" is 2000000, more than the 1048576 ranks a world may have"), std::string::npos) << e;
  // A shortened list whose stride leaves the world.
  e = error(world2, R"("Group size": 2, "Process Group Ranks": "[0, 8, ...]")");
  EXPECT_NE(e.find("reaches rank 8, beyond the trace's world size 2"), std::string::npos) << e;
  // Within the world it is read, expanded.
  write_text(path, one_step_trace(world2, R"("ts": 1020, "dur": 100)", R"("Group size": 2, "Process Group Ranks": "[0, 1, ...]")"));
  const KinetoTrace t = read_trace(path);
  std::remove(path.c_str());
  EXPECT_EQ(t.collective_of(t.gpu[1])->group_ranks, (std::vector<int>{0, 1}));
}

// A collective's size fields and the trace's rank that cannot be counts (negative, zero ranks,
// fractions, strings) were once read as absent: "sizes not checked", exit 0, or "has no rank".
// Refused, naming the file, the event and the value as written.
TEST(TraceReader, CorruptCountsAndRanksAreRefusedNotReadAsAbsent) {
  const std::string path = temp_path("counts.json");
  const std::string world2 = R"("distributedInfo": {"rank": 0, "world_size": 2}, )";
  for (const auto& [nccl, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"("Out msg nelems": -131072, "Group size": 2)", "\"Out msg nelems\" is -131072, negative"},
           {R"("Out msg nelems": 131072.5, "Group size": 2)", "\"Out msg nelems\" is 131072.5, not a whole number"},
           {R"("Out msg nelems": "131072", "Group size": 2)", "\"Out msg nelems\" is the string \"131072\", not a number"},
           {R"("Group size": 0)", "\"Group size\" is 0, not a group of ranks"},
           {R"("Group size": -3)", "\"Group size\" is -3, not a group of ranks"},
           {R"("Group size": null)", "\"Group size\" is null"},
           // Ranks that are none, once dropped from the list (an array) or emptying it (text).
           {R"("Group size": 2, "Process Group Ranks": [0, 2000000])", "\"Process Group Ranks\" holds 2000000, not a rank"},
           {R"("Group size": 2, "Process Group Ranks": [0, -1])", "\"Process Group Ranks\" holds -1, not a rank"},
           {R"("Group size": 2, "Process Group Ranks": "[0, 99999999999]")", "\"Process Group Ranks\" holds a number above 1048575"},
           // Values of the wrong JSON kind, once dropped without a word.
           {R"("Group size": [])", "\"Group size\" is an array"},
           {R"("Group size": {})", "\"Group size\" is an object"},
           {R"("In msg nelems": [1], "Group size": 2)", "\"In msg nelems\" is an array"},
           {R"("Group size": 2, "Process Group Ranks": -1)", "\"Process Group Ranks\" is -1, not a list of ranks"},
           {R"("Group size": 2, "Process Group Ranks": {})", "\"Process Group Ranks\" is an object, not a list of ranks"},
           {R"("Group size": 2, "Process Group Ranks": [0, "a"])", "\"Process Group Ranks\" holds the string \"a\", not a rank"}}) {
    write_text(path, one_step_trace(world2, R"("ts": 1020, "dur": 100)", nccl));
    const std::string e = read_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("traceEvents[3]"), std::string::npos) << nccl << ": " << e;
    EXPECT_NE(e.find(expected), std::string::npos) << nccl << ": " << e;
  }
  for (const auto& [rank, expected] : std::vector<std::pair<std::string, std::string>>{
           {"-1", "distributedInfo.rank is -1, negative"}, {R"("1")", "distributedInfo.rank is the string \"1\", not a number"},
           {"1.5", "distributedInfo.rank is 1.5, not a whole number"}}) {
    write_text(path, one_step_trace(R"("distributedInfo": {"rank": )" + rank + R"(, "world_size": 2}, )", R"("ts": 1020, "dur": 100)",
                                    R"("Group size": 2)"));
    EXPECT_NE(read_error(path).find(expected), std::string::npos) << rank << ": " << read_error(path);
  }
  // A world size that is no number of ranks was once clamped and read as "unknown".
  // So was one of another JSON kind, or no whole number: read as unknown ("rank 0 of ?").
  for (const auto& [world, shown] : std::vector<std::pair<std::string, std::string>>{
           {"0", "0"}, {"-2", "-2"}, {"2000000", "2000000"}, {"2.5", "2.5, not a whole number"},
           {R"("x")", "the string \"x\", not a number"}, {"null", "null"}, {"1e308", "1e308, out of range"}, {"[2]", "an array"}}) {
    write_text(path, one_step_trace(R"("distributedInfo": {"rank": 0, "world_size": )" + world + "}, ", R"("ts": 1020, "dur": 100)",
                                    R"("Group size": 2)"));
    EXPECT_NE(read_error(path).find("distributedInfo.world_size is " + shown + "; expected the number of ranks (1 to 1048576)"),
              std::string::npos)
        << world << ": " << read_error(path);
  }
  // The same fields as counts are read.
  write_text(path, one_step_trace(world2, R"("ts": 1020, "dur": 100)", R"("Out msg nelems": 1024.0, "Group size": 2)"));
  const KinetoTrace t = read_trace(path);
  EXPECT_EQ(t.collective_of(t.gpu[1])->out_nelems, 1024);
  // A kind the import does not map (a broadcast) is not refused for fields it never reads.
  std::string broadcast = one_step_trace(world2, R"("ts": 1020, "dur": 100)", R"("Group size": -3)");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"AllReduce_Sum_f32", "Broadcast_RING_LL"},
                                 std::pair<std::string, std::string>{"\"allreduce\"", "\"broadcast\""}})
    broadcast.replace(broadcast.find(from), from.size(), to);
  write_text(path, broadcast);
  EXPECT_EQ(read_error(path), "");
  std::remove(path.c_str());
}

// A time that cannot be one (out of range, negative, not a number, missing) on an event the
// import uses was once dropped silently, or overflowed, and the summary exited 0: refused by the
// reader, so with or without a scenario, naming the file, the event and the value as written.
TEST(TraceReader, CorruptTimesOfUsedEventsAreRefusedNamingTheFileAndTheEvent) {
  const std::string path = temp_path("times.json");
  struct Case {
    std::string kernel, needle;
  };
  const std::vector<Case> cases = {
      {R"("ts": 1e300, "dur": 100)", R"(traceEvents[2] (kernel "gemm"): "ts" is 1e300 us)"},
      {R"("ts": 1020, "dur": 1e300)", R"(traceEvents[2] (kernel "gemm"): "dur" is 1e300 us, more than the 10 days)"},
      {R"("ts": "1020.0", "dur": 100)", R"("ts" is the string "1020.0", not a number)"},
      {R"("ts": -9223372036854775, "dur": 100)", R"("ts" is -9223372036854775 us)"},
      {R"("ts": 9223372036854775, "dur": 9223372036854775)", R"("ts" is 9223372036854775 us)"},
      {R"("ts": 18446744073709551615, "dur": 1)", R"("ts" is 18446744073709551615 us)"},
      {R"("ts": null, "dur": 1)", R"("ts" is null)"},
      {R"("ts": 0, "dur": "soon")", R"("dur" is the string "soon", not a number)"},  // not the untimed 0 / 0 below
      {R"("dur": 100)", R"(traceEvents[2] (kernel "gemm"): has no "ts")"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.kernel);
    write_text(path, one_step_trace("", c.kernel, R"("Group size": 1)"));
    const std::string e = read_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find(c.needle), std::string::npos) << e;
  }
  // A ProfilerStep's, too: its steps are windows in time.
  std::string text = one_step_trace("", R"("ts": 1020, "dur": 100)", R"("Group size": 1)");
  text.replace(text.find(R"("dur": 500)"), 10, R"("dur": 1e300)");
  write_text(path, text);
  const std::string e = read_error(path);
  EXPECT_NE(e.find(R"(traceEvents[0] (user_annotation "ProfilerStep#1"): "dur" is 1e300 us)"), std::string::npos) << e;
  // Known profiler output is no corruption: GPU activities with "ts" 0 and "dur" 0
  // (pytorch/kineto#109) or a negative "dur" (pytorch/kineto#646) are dropped and counted.
  write_text(path, one_step_trace("", R"("ts": 1020, "dur": 100)", R"("Group size": 1)"));
  const size_t clean_activities = read_trace(path).gpu.size();
  for (const auto& [kernel, key] : {std::pair{R"("ts": 0, "dur": 0)", "kernel (ts 0 and dur 0, dropped)"},
                                    std::pair{R"("ts": 1020, "dur": -5)", "kernel (negative dur, dropped)"}}) {
    write_text(path, one_step_trace("", kernel, R"("Group size": 1)"));
    const KinetoTrace t = read_trace(path);
    EXPECT_EQ(t.skipped_by_category.at(key), 1) << kernel;
    EXPECT_EQ(t.gpu.size(), clean_activities - 1) << kernel;
  }
  // An event the import does not use keeps whatever it holds: read, counted.
  text = one_step_trace("", R"("ts": 1020, "dur": 100)", R"("Group size": 1)");
  text.insert(text.size() - 2, R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "soon", "dur": -1})");
  write_text(path, text);
  EXPECT_EQ(read_trace(path).skipped_by_category.at("cpu_op"), 1);
  // In range but 20 days from its step's launch: the summary refuses it, as the import onto a
  // Program does.
  write_text(path, one_step_trace("", R"("ts": 1728000001020, "dur": 100)", R"("Group size": 1)"));
  try {
    summarize_trace(read_trace(path));
    ADD_FAILURE() << "no error";
  } catch (const InputError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find(path + ": ProfilerStep#1: GPU activity \"gemm\""), std::string::npos) << what;
    EXPECT_NE(what.find("beyond the 10 days a step may span"), std::string::npos) << what;
  }
  std::remove(path.c_str());
}

// Busy times are unions of integer nanoseconds: at epoch-scale microseconds a double keeps only
// about 256 ns, and the union came out wrong by up to microseconds.
TEST(TraceReader, SummaryBusyTimesAreExactToTheNanosecondAtEpochScaleTimes) {
  const std::string path = temp_path("epoch.json");
  write_text(path, R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "tid": 1, "ts": 1700000000000000.001, "dur": 100},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1700000000000000.001, "dur": 1, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1700000000000001.001, "dur": 1, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "a", "tid": 7, "ts": 1700000000000010.125, "dur": 0.250, "args": {"stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "b", "tid": 7, "ts": 1700000000000010.500, "dur": 0.125, "args": {"stream": 7, "correlation": 2}}]})");
  const TraceSummary s = summarize_trace(read_trace(path));
  std::remove(path.c_str());
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(s.steps[0].compute_busy_us, 0.375);  // 250 ns + 125 ns, disjoint
  EXPECT_DOUBLE_EQ(s.steps[0].step_time_us, 10.624);
}

// summary.json says what its busy times count (they are not metrics.json's: a trace alone cannot
// tell FSDP's copies from compute).
TEST(TraceReader, SummaryJsonSaysWhatItsBusyTimesCount) {
  const std::string path = temp_path("defs.json");
  write_text(path, kSmallTrace);
  const nlohmann::json j = summary_to_json(summarize_trace(read_trace(path)));
  std::remove(path.c_str());
  EXPECT_NE(j.at("definitions").at("compute_busy_us").get<std::string>().find("copy-ins and copy-outs included"), std::string::npos);
}

TEST(TraceReader, ManyTracesReadOnThreadsKeepTheirOrderAndTheFirstErrorInOrder) {
  const std::vector<std::string> paths = {kHta + "trace_filter-sampled_rank-1.json.gz", kHta + "trace_filter-sampled_rank-0.json.gz",
                                          kHta + "nccl_parser_config-nccl_data.json.gz"};
  const std::vector<KinetoTrace> traces = read_traces(paths, 3);
  ASSERT_EQ(traces.size(), 3u);
  EXPECT_EQ(traces[0].events, 4720);
  EXPECT_EQ(traces[1].events, 4855);
  EXPECT_EQ(traces[2].events, 40573);
  const std::string missing_a = temp_path("missing-a.json"), missing_b = temp_path("missing-b.json");
  try {
    read_traces({paths[0], missing_a, missing_b}, 2);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), missing_a);
  }
}

TEST(TraceReader, MicrosecondTextBecomesExactNanoseconds) {
  EXPECT_EQ(microseconds_text_to_ns("4458677009853.422", 4458677009853.422), 4458677009853422);
  EXPECT_EQ(microseconds_text_to_ns("1.5", 1.5), 1500);
  EXPECT_EQ(microseconds_text_to_ns("2.0004", 2.0004), 2000);
  EXPECT_EQ(microseconds_text_to_ns("2.0005", 2.0005), 2001);
  EXPECT_EQ(microseconds_text_to_ns("-3.25", -3.25), -3250);
  EXPECT_EQ(microseconds_text_to_ns("1.5e3", 1500.0), 1500000);
  // Microseconds since the epoch, as the profiler writes them, with nanoseconds.
  EXPECT_EQ(microseconds_text_to_ns("1661203463042907.125", 1661203463042907.125), 1661203463042907125);
}

}  // namespace
}  // namespace shardline::kineto
