// Tests for schedule.cpp: GPipe clock tables and op lists with dependencies, written out literally.
#include <pipeprof/core/schedule.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

using ::testing::ElementsAre;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

using Table = std::vector<std::vector<Cell>>;

TEST(ClockCycles, OneByOne) { EXPECT_EQ(clockCycles(1, 1), (Table{{{0, 0}}})); }

TEST(ClockCycles, OneMicroBatchThreePartitions) { EXPECT_EQ(clockCycles(1, 3), (Table{{{0, 0}}, {{0, 1}}, {{0, 2}}})); }

TEST(ClockCycles, ThreeMicroBatchesOnePartition) {
  EXPECT_EQ(clockCycles(3, 1), (Table{{{0, 0}}, {{1, 0}}, {{2, 0}}}));
}

TEST(ClockCycles, ThreeByThree) {
  EXPECT_EQ(clockCycles(3, 3),
            (Table{{{0, 0}}, {{1, 0}, {0, 1}}, {{2, 0}, {1, 1}, {0, 2}}, {{2, 1}, {1, 2}}, {{2, 2}}}));
}

TEST(ClockCycles, FourByTwo) {
  EXPECT_EQ(clockCycles(4, 2), (Table{{{0, 0}}, {{1, 0}, {0, 1}}, {{2, 0}, {1, 1}}, {{3, 0}, {2, 1}}, {{3, 1}}}));
}

TEST(ClockCycles, RejectsNonPositive) {
  EXPECT_THAT([] { clockCycles(0, 2); },
              ThrowsMessage<std::invalid_argument>(StrEq("clock cycles need positive m and n (m: 0, n: 2)")));
  EXPECT_THROW(clockCycles(2, -1), std::invalid_argument);
}

/// "label <- dep dep ..." for every op, in ops() order.
std::vector<std::string> describe(const Schedule& schedule) {
  std::vector<std::string> lines;
  for (const Op& op : schedule.ops()) {
    std::string line = schedule.label(op) + " <-";
    for (OpIndex dep : op.deps) line += " " + schedule.label(schedule.op(dep));
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> order(const Schedule& schedule, std::int64_t j) {
  std::vector<std::string> labels;
  for (OpIndex index : schedule.stageOrder(j)) labels.push_back(schedule.label(schedule.op(index)));
  return labels;
}

ScheduleSpec spec(std::vector<std::int64_t> balance, std::int64_t chunks, Checkpoint checkpoint, bool training = true) {
  ScheduleSpec result;
  result.balance = std::move(balance);
  result.chunks = chunks;
  result.checkpoint = checkpoint;
  result.training = training;
  return result;
}

TEST(Schedule, TwoByTwoAlways) {
  Schedule schedule = Schedule::build(spec({1, 1}, 2, Checkpoint::Always));
  EXPECT_THAT(describe(schedule),
              ElementsAre("forward(0,0) <-", "copy(0,0->1) <- forward(0,0)", "forward(1,0) <- forward(0,0)",
                          "copy(1,0->1) <- forward(1,0)", "forward(0,1) <- copy(0,0->1)", "loss(0) <- forward(0,1)",
                          "forward(1,1) <- copy(1,0->1) loss(0)", "loss(1) <- forward(1,1)",
                          "recompute(1,1) <- loss(1)", "backward(1,1) <- loss(1) recompute(1,1)",
                          "grad-copy(1,1->0) <- backward(1,1)", "recompute(0,1) <- backward(1,1)",
                          "backward(0,1) <- loss(0) recompute(0,1)", "grad-copy(0,1->0) <- backward(0,1)",
                          "recompute(1,0) <- forward(1,0) loss(1)", "backward(1,0) <- grad-copy(1,1->0) recompute(1,0)",
                          "recompute(0,0) <- backward(1,0)", "backward(0,0) <- grad-copy(0,1->0) recompute(0,0)"));
  EXPECT_THAT(order(schedule, 0), ElementsAre("forward(0,0)", "forward(1,0)", "recompute(1,0)", "backward(1,0)",
                                              "recompute(0,0)", "backward(0,0)"));
  EXPECT_THAT(order(schedule, 1), ElementsAre("forward(0,1)", "loss(0)", "forward(1,1)", "loss(1)", "recompute(1,1)",
                                              "backward(1,1)", "recompute(0,1)", "backward(0,1)"));
  EXPECT_TRUE(schedule.checkpointed(0));
  EXPECT_TRUE(schedule.checkpointed(1));
}

TEST(Schedule, EachStagesFirstOpOfAKindInTheStepIsMarkedLossesAndCopiesNever) {
  Schedule schedule = Schedule::build(spec({1, 1}, 2, Checkpoint::Always));
  const std::vector<bool> first = schedule.firstOfKindOnStage();
  ASSERT_EQ(first.size(), schedule.ops().size());
  std::vector<std::string> labels;
  for (OpIndex index = 0; index < first.size(); ++index) {
    if (first[index]) labels.push_back(schedule.label(schedule.op(index)));
  }
  EXPECT_THAT(labels, ElementsAre("forward(0,0)", "forward(0,1)", "recompute(1,1)", "backward(1,1)", "recompute(1,0)",
                                  "backward(1,0)"));
}

TEST(Schedule, TwoByTwoExceptLast) {
  Schedule schedule = Schedule::build(spec({1, 1}, 2, Checkpoint::ExceptLast));
  EXPECT_THAT(describe(schedule),
              ElementsAre("forward(0,0) <-", "copy(0,0->1) <- forward(0,0)", "forward(1,0) <- forward(0,0)",
                          "copy(1,0->1) <- forward(1,0)", "forward(0,1) <- copy(0,0->1)", "loss(0) <- forward(0,1)",
                          "forward(1,1) <- copy(1,0->1) loss(0)", "loss(1) <- forward(1,1)", "backward(1,1) <- loss(1)",
                          "grad-copy(1,1->0) <- backward(1,1)", "recompute(0,1) <- backward(1,1)",
                          "backward(0,1) <- loss(0) recompute(0,1)", "grad-copy(0,1->0) <- backward(0,1)",
                          "backward(1,0) <- forward(1,0) loss(1) grad-copy(1,1->0)", "recompute(0,0) <- backward(1,0)",
                          "backward(0,0) <- grad-copy(0,1->0) recompute(0,0)"));
  EXPECT_TRUE(schedule.checkpointed(0));
  EXPECT_FALSE(schedule.checkpointed(1));
  EXPECT_FALSE(schedule.find(OpKind::Recompute, 1, 0).has_value());
  ASSERT_TRUE(schedule.find(OpKind::Recompute, 0, 1).has_value());
  EXPECT_EQ(schedule.label(schedule.op(*schedule.find(OpKind::Recompute, 0, 1))), "recompute(0,1)");
}

TEST(Schedule, TwoByTwoNever) {
  Schedule schedule = Schedule::build(spec({1, 1}, 2, Checkpoint::Never));
  EXPECT_THAT(describe(schedule),
              ElementsAre("forward(0,0) <-", "copy(0,0->1) <- forward(0,0)", "forward(1,0) <- forward(0,0)",
                          "copy(1,0->1) <- forward(1,0)", "forward(0,1) <- copy(0,0->1)", "loss(0) <- forward(0,1)",
                          "forward(1,1) <- copy(1,0->1) loss(0)", "loss(1) <- forward(1,1)", "backward(1,1) <- loss(1)",
                          "grad-copy(1,1->0) <- backward(1,1)", "backward(0,1) <- loss(0) backward(1,1)",
                          "grad-copy(0,1->0) <- backward(0,1)",
                          "backward(1,0) <- forward(1,0) loss(1) grad-copy(1,1->0)",
                          "backward(0,0) <- grad-copy(0,1->0) backward(1,0)"));
  EXPECT_FALSE(schedule.checkpointed(0));
}

TEST(Schedule, TwoByTwoEvalHasForwardOnly) {
  Schedule schedule = Schedule::build(spec({1, 1}, 2, Checkpoint::Always, false));
  EXPECT_THAT(describe(schedule),
              ElementsAre("forward(0,0) <-", "copy(0,0->1) <- forward(0,0)", "forward(1,0) <- forward(0,0)",
                          "copy(1,0->1) <- forward(1,0)", "forward(0,1) <- copy(0,0->1)",
                          "forward(1,1) <- copy(1,0->1) forward(0,1)"));
  EXPECT_FALSE(schedule.checkpointed(0));
}

TEST(Schedule, SkipRouteAcrossPartitions) {
  ScheduleSpec withSkip = spec({1, 1, 1}, 1, Checkpoint::Never);
  withSkip.skips = {{"enc1", 0, 2}};
  Schedule schedule = Schedule::build(withSkip);
  EXPECT_THAT(describe(schedule),
              ElementsAre("forward(0,0) <-", "copy(0,0->1) <- forward(0,0)", "skip-copy(enc1,0,0->2) <- forward(0,0)",
                          "forward(0,1) <- copy(0,0->1)", "copy(0,1->2) <- forward(0,1)",
                          "forward(0,2) <- skip-copy(enc1,0,0->2) copy(0,1->2)", "loss(0) <- forward(0,2)",
                          "backward(0,2) <- loss(0)", "grad-copy(0,2->1) <- backward(0,2)",
                          "skip-grad-copy(enc1,0,2->0) <- backward(0,2)",
                          "backward(0,1) <- forward(0,1) loss(0) grad-copy(0,2->1)",
                          "grad-copy(0,1->0) <- backward(0,1)",
                          "backward(0,0) <- forward(0,0) loss(0) skip-grad-copy(enc1,0,2->0) grad-copy(0,1->0)"));
  const Op& skipCopy = schedule.op(2);
  EXPECT_EQ(skipCopy.kind, OpKind::SkipCopy);
  EXPECT_EQ(skipCopy.skip, 0);
  EXPECT_EQ(skipCopy.j, 0);
  EXPECT_EQ(skipCopy.toJ, 2);
  EXPECT_FALSE(skipCopy.gradient);
  EXPECT_TRUE(schedule.op(9).gradient);
  EXPECT_TRUE(schedule.op(9).isCopy());
}

TEST(Schedule, SkipRouteInsideOnePartitionNeedsNoCopy) {
  ScheduleSpec withSkip = spec({2, 1}, 1, Checkpoint::Never, false);
  withSkip.skips = {{"inner", 0, 1}};
  Schedule schedule = Schedule::build(withSkip);
  EXPECT_THAT(describe(schedule),
              ElementsAre("forward(0,0) <-", "copy(0,0->1) <- forward(0,0)", "forward(0,1) <- copy(0,0->1)"));
}

TEST(Schedule, LayersAndPartitions) {
  Schedule schedule = Schedule::build(spec({2, 3, 1}, 4, Checkpoint::ExceptLast));
  EXPECT_EQ(schedule.layers(), 6);
  EXPECT_EQ(schedule.stages(), 3);
  EXPECT_EQ(schedule.chunks(), 4);
  EXPECT_EQ(schedule.firstLayer(0), 0);
  EXPECT_EQ(schedule.firstLayer(1), 2);
  EXPECT_EQ(schedule.firstLayer(2), 5);
  EXPECT_EQ(schedule.stageOfLayer(0), 0);
  EXPECT_EQ(schedule.stageOfLayer(1), 0);
  EXPECT_EQ(schedule.stageOfLayer(2), 1);
  EXPECT_EQ(schedule.stageOfLayer(4), 1);
  EXPECT_EQ(schedule.stageOfLayer(5), 2);
  EXPECT_THROW(schedule.stageOfLayer(6), std::out_of_range);
  EXPECT_THROW(schedule.firstLayer(3), std::out_of_range);
  // 12 forward + 4 losses + 12 backward + 9 recompute + 8 copies + 8 grad copies.
  EXPECT_EQ(schedule.ops().size(), 53u);
  for (OpIndex index = 0; index < schedule.ops().size(); ++index) {
    for (OpIndex dep : schedule.op(index).deps) EXPECT_LT(dep, index) << schedule.label(schedule.op(index));
  }
}

TEST(Schedule, ComputeOpsDependOnThePreviousOpOfTheirPartition) {
  Schedule schedule = Schedule::build(spec({1, 2, 1}, 3, Checkpoint::Always));
  for (std::int64_t j = 0; j < 3; ++j) {
    const auto& stageOrder = schedule.stageOrder(j);
    for (std::size_t position = 1; position < stageOrder.size(); ++position) {
      const auto& deps = schedule.op(stageOrder[position]).deps;
      EXPECT_NE(std::find(deps.begin(), deps.end(), stageOrder[position - 1]), deps.end());
    }
  }
}

TEST(Schedule, ValidationNamesTheValues) {
  EXPECT_THAT(
      [] {
        Schedule::build(spec({2, 0}, 2, Checkpoint::Never));
      },
      ThrowsMessage<std::invalid_argument>(StrEq("all balance numbers must be positive integer (balance: [2, 0])")));
  EXPECT_THAT([] { Schedule::build(spec({}, 2, Checkpoint::Never)); },
              ThrowsMessage<std::invalid_argument>(StrEq("balance must have at least one partition (balance: [])")));
  EXPECT_THAT(
      [] {
        Schedule::build(spec({1, 1}, 0, Checkpoint::Never));
      },
      ThrowsMessage<std::invalid_argument>(StrEq("number of chunks must be positive integer (chunks: 0)")));
  ScheduleSpec bad = spec({1, 1}, 1, Checkpoint::Never);
  bad.skips = {{"enc1", 0, 2}};
  EXPECT_THAT([&] { Schedule::build(bad); },
              ThrowsMessage<std::invalid_argument>(
                  StrEq("skip route 'enc1': pop layer 2 is outside the model (layers: 0..1)")));
  bad.skips = {{"enc1", -1, 1}};
  EXPECT_THAT([&] { Schedule::build(bad); },
              ThrowsMessage<std::invalid_argument>(
                  StrEq("skip route 'enc1': stash layer -1 is outside the model (layers: 0..1)")));
  bad.skips = {{"enc1", 1, 1}};
  EXPECT_THAT([&] { Schedule::build(bad); }, ThrowsMessage<std::invalid_argument>(StrEq(
                                                 "skip route 'enc1': stash layer 1 must come before pop layer 1")));
  bad.skips = {{"a", 0, 1}, {"a", 0, 1}};
  EXPECT_THAT([&] { Schedule::build(bad); },
              ThrowsMessage<std::invalid_argument>(StrEq("duplicate skip route 'a': skip names must be distinct")));
}

TEST(ScheduleKind, NamesAndParsing) {
  EXPECT_EQ(scheduleKindName(ScheduleKind::GPipe), "gpipe");
  EXPECT_EQ(parseScheduleKind("gpipe"), ScheduleKind::GPipe);
  EXPECT_EQ(scheduleKindName(ScheduleKind::OneFOneB), "1f1b");
  EXPECT_EQ(scheduleKindName(ScheduleKind::Interleaved), "interleaved");
  EXPECT_EQ(parseScheduleKind("1f1b"), ScheduleKind::OneFOneB);
  EXPECT_EQ(parseScheduleKind("interleaved"), ScheduleKind::Interleaved);
  EXPECT_THAT([] { parseScheduleKind("zb"); },
              ThrowsMessage<std::invalid_argument>(
                  StrEq("invalid schedule 'zb': expected gpipe, 1f1b, interleaved, zb1p, interleaved-zb or zbv")));
  EXPECT_EQ(parseScheduleKindList("interleaved,gpipe,interleaved"),
            (std::vector<ScheduleKind>{ScheduleKind::Interleaved, ScheduleKind::GPipe}));
  EXPECT_THROW(parseScheduleKindList("gpipe,"), std::invalid_argument);
  EXPECT_EQ(opKindName(OpKind::Loss), "loss");
  EXPECT_EQ(opKindName(OpKind::SkipCopy), "skip-copy");
  EXPECT_EQ(opKindName(OpKind::Recompute), "recompute");
}

}  // namespace
}  // namespace pipeprof
