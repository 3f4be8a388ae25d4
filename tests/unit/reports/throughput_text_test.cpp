// Throughput formatting and the reasons printed for unknown values.
#include "reports/throughput_text.h"

#include <gtest/gtest.h>

namespace shardline {
namespace {

TEST(ThroughputText, RatesAreWholeWithSeparatorsFromOneHundredUp) {
  EXPECT_EQ(format_per_s(1234567.4), "1,234,567");
  EXPECT_EQ(format_per_s(100), "100");
  EXPECT_EQ(format_per_s(7976.4), "7,976");
  EXPECT_EQ(format_per_s(99.94), "99.9");
  EXPECT_EQ(format_per_s(0.5234), "0.523");
  EXPECT_EQ(format_tflops(427.66), "427.7");
  EXPECT_EQ(format_tflops(0.02904), "0.029");
  EXPECT_EQ(format_utilisation(0.4321), "43.2%");
  EXPECT_EQ(format_or_na(std::nullopt, format_utilisation), "n/a");
  EXPECT_EQ(format_or_na(0.5, format_utilisation), "50.0%");
}

TEST(ThroughputText, ReasonNamesTheMissingKey) {
  Workload w;
  w.gpus = 8;
  w.model_flops_per_step = 1e15;
  w.hardware_flops_per_step = 1e15;
  EXPECT_EQ(throughput_unknown_reason(w, 10, ThroughputValue::Tokens), "give model.seq_len and model.micro_batch_size");
  EXPECT_EQ(throughput_unknown_reason(w, 10, ThroughputValue::Samples), "give model.micro_batch_size");
  w.seq_len = 2048;  // given: only the micro-batch size is missing
  EXPECT_EQ(throughput_unknown_reason(w, 10, ThroughputValue::Tokens), "give model.micro_batch_size");
  w.samples_per_step = 8;
  EXPECT_EQ(throughput_unknown_reason(w, 10, ThroughputValue::Tokens), "give model.seq_len");
  EXPECT_EQ(throughput_unknown_reason(w, 10, ThroughputValue::Samples), "");
  EXPECT_EQ(throughput_unknown_reason(w, 10, ThroughputValue::ModelFlops), "");
  EXPECT_NE(throughput_unknown_reason(w, 10, ThroughputValue::Mfu).find("peak_tflops"), std::string::npos);
  w.peak_flops_per_gpu = 1e15;
  EXPECT_EQ(throughput_unknown_reason(w, 10, ThroughputValue::Hfu), "");
  w.model_flops_per_step = 0;
  EXPECT_NE(throughput_unknown_reason(w, 10, ThroughputValue::Mfu).find("forward_flops"), std::string::npos);
  EXPECT_EQ(throughput_unknown_reason(w, 0, ThroughputValue::Samples), "the step time is 0");
}

}  // namespace
}  // namespace shardline
