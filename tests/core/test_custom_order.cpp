// Tests for custom_order.cpp and a custom order's Schedule: PyTorch 2.6's own orders read,
// checked and expanded; every rule an order can break named by rank and action; cyclic waits.
#include <pipeprof/core/custom_order.h>
#include <pipeprof/core/json_file.h>

#include "schedule_test_util.h"
#include "support/fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

std::string fixturePath(const std::string& name) { return test::fixturePath("pytorch-2.6-schedules/" + name); }

/// A spec running `order` on one-layer stages, mode except_last.
ScheduleSpec customSpec(const std::shared_ptr<const CustomOrder>& order) {
  ScheduleSpec spec;
  spec.balance.assign(static_cast<std::size_t>(order->stages()), 1);
  spec.checkpoint = Checkpoint::ExceptLast;
  runCustomOrder(spec, order);
  return spec;
}

std::shared_ptr<const CustomOrder> parse(const std::string& csv) {
  return makeCustomOrder(readScheduleCsv(csv, "order.csv"), "order.csv");
}

std::string problem(const std::string& csv) {
  try {
    Schedule::build(customSpec(parse(csv)));
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

// Every fixture -- looped BFS and ZBV too, which pipeprof reads without generating looped
// BFS -- is read, checked, placed as its rows say and expanded into a Schedule that runs
// exactly its actions.
TEST(CustomOrder, PytorchsOwnOrdersReadCheckAndRunAsWritten) {
  for (const std::string family : {"interleaved_1f1b", "looped_bfs", "interleaved_zero_bubble", "zbv_zero_bubble"}) {
    for (const char* shape : {"_p2_m4_v2.csv", "_p2_m8_v2.csv", "_p4_m8_v2.csv", "_p4_m16_v2.csv"}) {
      const std::string name = family + shape;
      SCOPED_TRACE(name);
      const auto order = readCustomOrder(fixturePath(name));
      const Schedule schedule = Schedule::build(customSpec(order));
      EXPECT_EQ(scheduleActions(schedule), order->ranks);
      EXPECT_EQ(schedule.devices(), order->devices());
      EXPECT_EQ(schedule.stagesPerDevice(), 2);
      const bool v = std::string(name).rfind("zbv", 0) == 0;
      for (std::int64_t j = 0; j < schedule.stages(); ++j) {
        const std::int64_t p = schedule.devices();
        EXPECT_EQ(schedule.deviceOf(j), v && j >= p ? 2 * p - 1 - j : j % p) << "stage " << j;
      }
      EXPECT_EQ(schedule.splitsBackward(), std::string(name).find("zero_bubble") != std::string::npos);
    }
  }
}

// A generated order given as a file is the same schedule, op for op.
TEST(CustomOrder, AGeneratedOrderAsAFileIsTheSameSchedule) {
  for (const auto& [kind, p, m] :
       {std::tuple{ScheduleKind::ZeroBubbleV, 3, 5}, std::tuple{ScheduleKind::Interleaved, 2, 4},
        std::tuple{ScheduleKind::OneFOneB, 3, 4}}) {
    const std::int64_t v = kind == ScheduleKind::OneFOneB ? 1 : 2;
    const Schedule generated = test::uniformSchedule(kind, p, m, v, Checkpoint::ExceptLast);
    const Schedule custom = Schedule::build(customSpec(makeCustomOrder(scheduleActions(generated), "generated")));
    ASSERT_EQ(custom.ops().size(), generated.ops().size()) << scheduleKindName(kind);
    for (OpIndex index = 0; index < custom.ops().size(); ++index) {
      EXPECT_EQ(custom.label(custom.op(index)), generated.label(generated.op(index))) << scheduleKindName(kind);
    }
  }
}

// A micro-batch's backward is B or I then W, each stage and micro-batch its own: an order may
// mix them (torch's may), and the gradient of each goes to the op that takes it.
TEST(CustomOrder, AnOrderMayMixFullAndSplitBackwards) {
  const auto order = makeCustomOrder(readScheduleCsv("0F0,0F1,0B0,0I1,0W1\n1F0,1I0,1F1,1B1,1W0\n", "m.csv"), "m.csv");
  EXPECT_TRUE(order->splitsBackward);
  const Schedule schedule = Schedule::build(customSpec(order));
  EXPECT_EQ(schedule.gradientConsumer(0, 0), schedule.find(OpKind::Backward, 0, 0));
  EXPECT_EQ(schedule.gradientConsumer(1, 0), schedule.find(OpKind::BackwardInput, 1, 0));
  EXPECT_EQ(schedule.gradientConsumer(0, 1), schedule.find(OpKind::BackwardInput, 0, 1));
  EXPECT_EQ(schedule.gradientConsumer(1, 1), schedule.find(OpKind::Backward, 1, 1));
  EXPECT_FALSE(schedule.find(OpKind::BackwardWeight, 0, 0).has_value());
}

// Ranks may hold different numbers of stages: three stages on two ranks, round robin (torch's
// placement of 3 stages on 2 ranks) or the last two on rank 1. p is the ranks, v the most
// stages a rank holds.
TEST(CustomOrder, RanksMayHoldDifferentNumbersOfStages) {
  for (const auto& [csv, placement] :
       {std::pair<std::string, std::vector<std::int64_t>>{"0F0,2F0,2B0,0B0\n1F0,1B0\n", {0, 1, 0}},
        {"0F0,0F1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n", {0, 1, 1}}}) {
    SCOPED_TRACE(csv);
    const auto order = parse(csv);
    const Schedule schedule = Schedule::build(customSpec(order));
    EXPECT_EQ(scheduleActions(schedule), order->ranks);
    EXPECT_EQ(schedule.devices(), 2);
    EXPECT_EQ(schedule.stagesPerDevice(), 2);
    for (std::int64_t j = 0; j < 3; ++j) EXPECT_EQ(schedule.deviceOf(j), placement[static_cast<std::size_t>(j)]) << j;
    EXPECT_EQ(customSpec(order).shapeError(), "");
  }
}

TEST(CustomOrder, EachBrokenRuleNamesTheRankAndTheAction) {
  EXPECT_EQ(problem("0F0,0B0,1F0\n1B0\n"),
            "stage 1 has actions on rank 0 (1F0) and rank 1 (1B0); a stage runs on one rank");
  EXPECT_EQ(problem("0F0,0B0,0I0,0W0\n1F0,1B0\n"),
            "rank 0's 0I0 comes beside its 0B0; a micro-batch's backward is one B, or an I then a W");
  EXPECT_EQ(problem("0F0,0B0,0W0\n1F0,1B0\n"),
            "rank 0's 0W0 has no 0I0 on that rank; a stage runs a micro-batch's forward, then its I, then its W");
  EXPECT_EQ(problem("0F0,0F1,0B0,0B1\n1F0,1B0,1F1\n"),
            "rank 1 has no 1B1; every stage runs each of the 2 micro-batches 0..1 forward and backward once");
  EXPECT_EQ(problem("0F0,0F0,0B0\n1F0,1B0\n"), "rank 0's 0F0 appears twice");
  EXPECT_EQ(problem("0F0,0W0,0I0\n1F0,1I0,1W0\n"),
            "rank 0's 0W0 comes before its 0I0 on that rank; a stage runs a micro-batch's forward, then its I, then "
            "its W");
  EXPECT_EQ(problem("0B0,0F0\n1F0,1B0\n"),
            "rank 0's 0B0 comes before its 0F0 on that rank; a stage runs a micro-batch's forward, then its B");
  EXPECT_EQ(problem("0F0,0B0\n2F0,2B0\n"), "stage 1 has no action, though stage 2 does; stages are numbered 0..n-1");
  EXPECT_EQ(problem("0F0,0B0\n\n1F0,1B0\n"), "rank 1 has no action; every rank runs at least one stage");
}

// Rank 1 starts with micro-batch 1, whose input rank 0 makes only after micro-batch 0's
// backward, which waits for rank 1's.
TEST(CustomOrder, ACyclicWaitNamesTheRanksAndActionsInTheCycle) {
  EXPECT_EQ(problem("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n"),
            "the order cannot run: its ranks wait for each other in a cycle: rank 1 runs 1B0 after 1F1, rank 1's 1F1 "
            "waits for the output of 0F1 on rank 0, rank 0 runs 0F1 after 0B0, rank 0's 0B0 waits for the gradient of "
            "1B0 on rank 1");
}

TEST(CustomOrder, TheShapeCarriesItsOrderThroughJson) {
  PipelineShape shape = customSpec(readCustomOrder(fixturePath("zbv_zero_bubble_p2_m4_v2.csv")));
  const nlohmann::json json = toJson(shape);
  EXPECT_EQ(json.at("schedule"), "custom");
  ASSERT_EQ(json.at("order").size(), 2u);
  EXPECT_EQ(json.at("order")[1].get<std::string>().substr(0, 20), "1F0,2F0,1F1,2F1,2I0,");
  const PipelineShape back = pipelineShapeFromJson(json, "r.json");
  EXPECT_TRUE(back == shape);
  EXPECT_EQ(back.deviceOfStage(3), 0);
  nlohmann::json broken = json;
  broken["order"][1] = "1F0,2F0,2I0,2W0,1I0,1W0,1F1,2F1";
  EXPECT_THAT([&] { pipelineShapeFromJson(broken, "r.json"); },
              ThrowsMessage<FormatError>(HasSubstr("r.json: $.order: rank 1 has no 1I1")));
  EXPECT_EQ(shape.shapeError(3), "the order in " + fixturePath("zbv_zero_bubble_p2_m4_v2.csv") +
                                     " runs 4 micro-batches but the batch splits into 3");
  shape.schedule = ScheduleKind::ZeroBubbleV;
  EXPECT_EQ(shape.shapeError(), "a custom order runs under schedule custom, not zbv");
  shape.schedule = ScheduleKind::Custom;
  shape.order = nullptr;
  EXPECT_EQ(shape.shapeError(), "schedule custom needs its order (a schedule CSV: --schedule-file)");
}

}  // namespace
}  // namespace pipeprof
