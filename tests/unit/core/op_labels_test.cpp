// Op names made when printed: one label per bucket or unit, " mb<k>" added per op.
#include <gtest/gtest.h>

#include "core/op_labels.h"
#include "core/program.h"
#include "core/scenario_parse.h"
#include "core/schedule.h"

namespace shardline {
namespace {

TEST(OpLabels, TheSameTextIsStoredOnce) {
  OpLabels labels;
  const int a = labels.add("ag b3");
  EXPECT_EQ(labels.add("fwd u1"), a + 1);
  EXPECT_EQ(labels.add("ag b3"), a);
  EXPECT_EQ(labels.size(), 2u);
}

TEST(OpLabels, NamesAreTheLabelAndTheMicroBatch) {
  OpLabels labels;
  const int a = labels.add("ag b3");
  EXPECT_EQ(labels.name(a, -1, false, 0), "ag b3 mb0");
  EXPECT_EQ(labels.name(a, -1, false, 12), "ag b3 mb12");
  EXPECT_EQ(labels.name(a, -1, true, 12), "ag b3");
  EXPECT_EQ(labels.name(a, 40, false, 2), "ag b340 mb2");  // a label number follows the label
  EXPECT_EQ(labels.name(-1, 7, false, 3), "");  // an op without a name
}

TEST(OpLabels, ANameReadBackSharesItsLabelOnlyWhenItEndsInItsOwnMicroBatch) {
  OpLabels labels;
  const OpLabels::Named mb1 = labels.add_name("bwd u1 mb1", 1);
  EXPECT_FALSE(mb1.whole);
  EXPECT_EQ(labels.texts()[mb1.label], "bwd u1");
  EXPECT_EQ(labels.add_name("bwd u1 mb2", 2).label, mb1.label);
  // " mb1" on an op of micro-batch 0 is part of the name, printed as it was.
  const OpLabels::Named other = labels.add_name("bwd u1 mb1", 0);
  EXPECT_TRUE(other.whole);
  EXPECT_EQ(labels.name(other.label, -1, other.whole, 0), "bwd u1 mb1");
  EXPECT_EQ(labels.add_name("", 0).label, -1);
  EXPECT_EQ(labels.add_name(" mb0", 0).label, labels.add_name(" mb0", 1).label);  // nothing before the suffix: kept whole
}

// Bucket labels are numbered, so small buckets do not add labels: the table stays as small as
// the model's units and parameters.
TEST(OpLabels, AScheduledProgramHasFarFewerLabelsThanOps) {
  const std::string path = std::string(SHARDLINE_SOURCE_DIR) + "/scenarios/llama3-8b-fsdp-h100x8.json";
  const Program p = schedule(load_scenario(path, {"policy.micro_batches=4"}));
  const Program small = schedule(load_scenario(path, {"policy.micro_batches=4", "policy.bucket_bytes=4MiB"}));
  EXPECT_LT(p.labels.size() * 3, p.ops.size());
  EXPECT_GT(small.ops.size(), 10 * p.ops.size());
  EXPECT_LE(small.labels.size(), p.labels.size() + 10);
  for (const Op& op : p.ops) {
    ASSERT_FALSE(op.whole_name);
    const std::string name = p.name(op);
    ASSERT_TRUE(name.ends_with(" mb" + std::to_string(op.microbatch))) << name;
  }
}

}  // namespace
}  // namespace shardline
