// A candidate as PyTorch's pipelining runtime takes it: torchtitan's settings, pipeline()'s
// split_spec, and what PyTorch cannot express.
#include <pipeprof/core/pytorch_export.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kLayers{"wte", "wpe", "h.0", "h.1", "h.2", "h.3", "ln_f", "lm_head"};

Candidate candidate(std::vector<std::int64_t> balance, ScheduleKind schedule, std::int64_t v, Checkpoint checkpoint) {
  Candidate c;
  c.balance = std::move(balance);
  c.schedule = schedule;
  c.stagesPerDevice = v;
  c.chunks = 4;
  c.batch = 8;
  c.checkpoint = checkpoint;
  return c;
}

TEST(PytorchExport, OneFOneBGivesEachStagesModulePathsAndItsFirstLayerAsASplitPoint) {
  const nlohmann::json config =
      pytorchConfiguration(candidate({3, 5}, ScheduleKind::OneFOneB, 1, Checkpoint::Never), kLayers);
  EXPECT_EQ(config.at("module_fqns_per_model_part"),
            nlohmann::json::parse(R"([["wte", "wpe", "h.0"], ["h.1", "h.2", "h.3", "ln_f", "lm_head"]])"));
  EXPECT_EQ(config.at("split_spec"), nlohmann::json::parse(R"({"h.1": "BEGINNING"})"));
  EXPECT_EQ(config.at("pipeline_parallel_schedule"), "1F1B");
  EXPECT_EQ(config.at("pytorch_schedule_class"), "Schedule1F1B");
  EXPECT_EQ(config.at("num_pp_microbatches"), 4);
  EXPECT_EQ(config.at("pipeline_parallel_degree"), 2);
  EXPECT_EQ(config.at("activation_checkpoint"), "none");
  EXPECT_EQ(config.at("placement"), "loop");
  EXPECT_EQ(config.at("pipeline_parallel_schedule_csv").size(), 2u);
  EXPECT_EQ(config.at("not_expressible"), nlohmann::json::array());
}

TEST(PytorchExport, InterleavedAndZbvPlaceTheirStagesAsTorchDoes) {
  nlohmann::json config =
      pytorchConfiguration(candidate({2, 2, 2, 2}, ScheduleKind::Interleaved, 2, Checkpoint::Always), kLayers);
  EXPECT_EQ(config.at("pipeline_parallel_schedule"), "Interleaved1F1B");
  EXPECT_EQ(config.at("stage_to_rank"), nlohmann::json::parse("[0, 1, 0, 1]"));
  EXPECT_EQ(config.at("split_spec").size(), 3u);
  EXPECT_EQ(config.at("activation_checkpoint"), "full");
  config = pytorchConfiguration(candidate({2, 2, 2, 2}, ScheduleKind::ZeroBubbleV, 2, Checkpoint::Never), kLayers);
  EXPECT_EQ(config.at("pipeline_parallel_schedule"), "ZBVZeroBubble");
  EXPECT_EQ(config.at("stage_to_rank"), nlohmann::json::parse("[0, 1, 1, 0]"));
  EXPECT_EQ(config.at("placement"), "v");
  EXPECT_EQ(config.at("pipeline_parallel_schedule_csv")[0],
            "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,0I2,0W2,0I3,0W3")
      << "one row per rank, torch's CSV";
}

TEST(PytorchExport, WhatPytorchCannotExpressIsNamedAndLeftNull) {
  Candidate deferred = candidate({4, 4}, ScheduleKind::ZeroBubble, 1, Checkpoint::ExceptLast);
  deferred.deferredWeights = {0, 0};  // torch's own order defers W by d on device d
  const nlohmann::json config = pytorchConfiguration(deferred, kLayers);
  EXPECT_TRUE(config.at("pipeline_parallel_schedule").is_null()) << "the CSV holds the order";
  EXPECT_FALSE(config.at("pipeline_parallel_schedule_csv").empty());
  EXPECT_TRUE(config.at("activation_checkpoint").is_null());
  ASSERT_EQ(config.at("not_expressible").size(), 1u);
  EXPECT_THAT(config.at("not_expressible")[0].get<std::string>(), HasSubstr("checkpoint except_last"));
  const std::vector<std::string> twice{"embed", "block", "block#2", "head"};
  const nlohmann::json again =
      pytorchConfiguration(candidate({2, 2}, ScheduleKind::GPipe, 1, Checkpoint::Never), twice);
  EXPECT_THAT(again.at("not_expressible")[0].get<std::string>(), HasSubstr("'block#2', a second call of a module"));
  EXPECT_EQ(again.at("split_spec"), nlohmann::json::object());
  EXPECT_THROW(pytorchConfiguration(candidate({2, 2}, ScheduleKind::GPipe, 1, Checkpoint::Never), kLayers),
               std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
