// The kernel breakdown of the run outputs: child slices that tile each predicted compute op, and
// the per-part HTML table; nothing for measured timelines or explicit units.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/scenario_parse.h"
#include "core/schedule.h"
#include "reports/kernel_breakdown.h"
#include "reports/trace.h"
#include "reports/trace_time.h"
#include "sim/simulator.h"

namespace shardline {
namespace {

using nlohmann::json;

Scenario transformer(const std::string& checkpointing = "full") {
  json j = json::parse(R"({
    "name": "kb",
    "model": {"transformer": {"layers": 2, "hidden": 512, "ffn_hidden": 2048, "heads": 4, "vocab": 1000,
                              "seq_len": 256, "micro_batch_size": 1}},
    "cluster": {"preset": "a100-80gb-dgx"},
    "mesh": {"shard": 8}
  })");
  j["model"]["transformer"]["activation_checkpointing"] = checkpointing;
  return parse_scenario(j);
}

// The kernel slices of a timeline, collected in the order they are made.
json kernel_trace_events(const Timeline& t, const std::vector<UnitCompute>& kernels) {
  json events = json::array();
  for_each_kernel_trace_event(t, kernels, [&events](json&& e) { events.push_back(std::move(e)); });
  return events;
}

TEST(KernelBreakdown, KernelSlicesTileEveryPredictedComputeOpOfAUnit) {
  const Scenario s = transformer();
  const Program p = schedule(s);
  const Timeline t = simulate(s, p);
  const std::vector<UnitCompute> kernels = unit_breakdowns(s);
  const json events = kernel_trace_events(t, kernels);
  int compute_ops = 0;
  size_t next = 0;
  for (const OpInterval& iv : t.intervals) {
    const Op& op = t.ops[iv.op];
    if (op.kind != OpKind::Compute || op.unit < 0) continue;
    ++compute_ops;
    const UnitCompute& u = kernels[op.unit];
    const auto& list = op.phase == Phase::Backward ? u.backward : u.forward;
    ASSERT_LE(next + list.size(), events.size());
    // On the trace's nanosecond grid (reports/trace_time.h): the first starts where the op starts,
    // each where the one before ended, the last ends where the op ends, as a viewer reads them.
    const auto ns = [](const json& v) { return std::llround(v.get<double>() * 1000.0); };
    int64_t end_ns = trace_ns(iv.start_us);
    for (size_t k = 0; k < list.size(); ++k) {
      const json& e = events[next + k];
      EXPECT_EQ(e["name"], list[k].name);
      EXPECT_EQ(e["cat"], "kernel");
      EXPECT_EQ(e["tid"], static_cast<int>(StreamId::Compute));
      EXPECT_EQ(ns(e["ts"]), end_ns) << t.name(op) << " " << list[k].name;
      EXPECT_GE(ns(e["dur"]), 0) << t.name(op) << " " << list[k].name;
      end_ns = ns(e["ts"]) + ns(e["dur"]);
    }
    EXPECT_EQ(end_ns, trace_ns(iv.end_us)) << t.name(op);
    next += list.size();
  }
  EXPECT_EQ(next, events.size());
  EXPECT_EQ(compute_ops, 2 * 4);  // 4 units, forward and backward
  EXPECT_EQ(kernels[1].backward.front().name, "recompute.attention_norm");

  // The Chrome trace carries them next to the ops; a measured timeline gets none.
  size_t in_trace = 0;
  const json trace = trace_to_json(t, &kernels);
  for (const json& e : trace["traceEvents"]) in_trace += e.value("cat", "") == "kernel";
  EXPECT_EQ(in_trace, events.size());
  // trace.json is written event by event (trace_json_text); its bytes are the whole object's dump.
  EXPECT_EQ(trace_json_text(t, &kernels), trace.dump());
  Timeline measured = t;
  measured.source = "measured";
  EXPECT_TRUE(kernel_trace_events(measured, kernels).empty());
}

TEST(KernelBreakdown, ReportTableListsEachPartsKernelsAndNothingForExplicitUnits) {
  const Scenario s = transformer();
  const std::string html = kernel_breakdown_html(s, unit_breakdowns(s));
  for (const char* text : {"Compute per unit", "each block", "embedding", "norm + output head", "attention.bwd", "qkv.wgrad",
                           "recompute.attention", "A100 SXM4 80GB"}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  EXPECT_NE(html.find("Backward lists the recomputed forward first."), std::string::npos);
  // Nothing recomputed, nothing said of it.
  const Scenario none = transformer("none");
  EXPECT_EQ(kernel_breakdown_html(none, unit_breakdowns(none)).find("recomputed"), std::string::npos);
  Scenario explicit_units = s;
  explicit_units.model.transformer.reset();
  EXPECT_EQ(kernel_breakdown_html(explicit_units, {}), "");
}

// With checkpoint_every the blocks differ: one table for the blocks left uncheckpointed (no
// recompute kernels) and one for the checkpointed ones, and still one per other part.
TEST(KernelBreakdown, CheckpointEveryKthBlockShowsBothKindsOfBlock) {
  json j = json::parse(R"({
    "name": "kb",
    "model": {"transformer": {"layers": 4, "hidden": 512, "ffn_hidden": 2048, "heads": 4, "vocab": 1000,
                              "seq_len": 256, "micro_batch_size": 1, "activation_checkpointing": "full",
                              "checkpoint_every": 2}},
    "cluster": {"preset": "a100-80gb-dgx"},
    "mesh": {"shard": 8}
  })");
  const Scenario s = parse_scenario(j);
  const std::string html = kernel_breakdown_html(s, unit_breakdowns(s));
  size_t tables = 0;
  for (size_t at = html.find("<h3>"); at != std::string::npos; at = html.find("<h3>", at + 1)) ++tables;
  EXPECT_EQ(tables, 4u);
  const size_t plain = html.find("each block not checkpointed");
  const size_t checkpointed = html.find("each checkpointed block (1 in 2)");
  ASSERT_NE(plain, std::string::npos);
  ASSERT_NE(checkpointed, std::string::npos);
  // Block 0 (not checkpointed) comes first; only the checkpointed table lists recompute kernels.
  EXPECT_LT(plain, checkpointed);
  EXPECT_EQ(html.substr(plain, checkpointed - plain).find("recompute."), std::string::npos);
  EXPECT_NE(html.find("recompute.attention", checkpointed), std::string::npos);
}

}  // namespace
}  // namespace shardline
