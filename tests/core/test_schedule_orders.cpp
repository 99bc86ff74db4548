// Tests for schedule.cpp's device orders: every family's per-device tables, literally.
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/schedule_csv.h>

#include "schedule_test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof {
namespace {

using ::testing::ElementsAre;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

/// One line per device: "F0.1" forward(0,1), "L0" loss(0), "R0.1" recompute(0,1), "B0.1" backward(0,1),
/// "I0.1" backward-input(0,1), "W0.1" backward-weight(0,1).
std::vector<std::string> table(const Schedule& schedule) {
  std::vector<std::string> lines;
  for (std::int64_t d = 0; d < schedule.devices(); ++d) {
    std::string line;
    for (OpIndex index : schedule.deviceOrder(d)) {
      const Op& op = schedule.op(index);
      std::string cell = std::to_string(op.i) + "." + std::to_string(op.j);
      switch (op.kind) {
        case OpKind::Forward: cell = "F" + cell; break;
        case OpKind::Recompute: cell = "R" + cell; break;
        case OpKind::Backward: cell = "B" + cell; break;
        case OpKind::BackwardInput: cell = "I" + cell; break;
        case OpKind::BackwardWeight: cell = "W" + cell; break;
        case OpKind::Loss: cell = "L" + std::to_string(op.i); break;
        default: cell = schedule.label(op); break;
      }
      line += (line.empty() ? "" : " ") + cell;
    }
    lines.push_back(line);
  }
  return lines;
}

Schedule build(ScheduleKind kind, std::int64_t p, std::int64_t m, std::int64_t v,
               Checkpoint checkpoint = Checkpoint::Never, bool training = true) {
  return test::uniformSchedule(kind, p, m, v, checkpoint, training);
}

TEST(OneFOneB, TwoDevicesFourMicroBatches) {
  EXPECT_THAT(
      table(build(ScheduleKind::OneFOneB, 2, 4, 1)),
      ElementsAre("F0.0 F1.0 B0.0 F2.0 B1.0 F3.0 B2.0 B3.0", "F0.1 L0 B0.1 F1.1 L1 B1.1 F2.1 L2 B2.1 F3.1 L3 B3.1"));
}

TEST(OneFOneB, FourDevicesEightMicroBatches) {
  EXPECT_THAT(table(build(ScheduleKind::OneFOneB, 4, 8, 1)),
              ElementsAre("F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 F6.0 B3.0 F7.0 B4.0 B5.0 B6.0 B7.0",
                          "F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B4.1 F7.1 B5.1 B6.1 B7.1",
                          "F0.2 F1.2 B0.2 F2.2 B1.2 F3.2 B2.2 F4.2 B3.2 F5.2 B4.2 F6.2 B5.2 F7.2 B6.2 B7.2",
                          "F0.3 L0 B0.3 F1.3 L1 B1.3 F2.3 L2 B2.3 F3.3 L3 B3.3 F4.3 L4 B4.3 F5.3 L5 B5.3 "
                          "F6.3 L6 B6.3 F7.3 L7 B7.3"));
}

TEST(OneFOneB, ThreeDevicesThreeMicroBatches) {
  EXPECT_THAT(table(build(ScheduleKind::OneFOneB, 3, 3, 1)),
              ElementsAre("F0.0 F1.0 F2.0 B0.0 B1.0 B2.0", "F0.1 F1.1 B0.1 F2.1 B1.1 B2.1",
                          "F0.2 L0 B0.2 F1.2 L1 B1.2 F2.2 L2 B2.2"));
}

TEST(OneFOneB, FewerMicroBatchesThanDevicesWarmUpOnAll) {
  EXPECT_THAT(
      table(build(ScheduleKind::OneFOneB, 4, 2, 1)),
      ElementsAre("F0.0 F1.0 B0.0 B1.0", "F0.1 F1.1 B0.1 B1.1", "F0.2 F1.2 B0.2 B1.2", "F0.3 L0 B0.3 F1.3 L1 B1.3"));
}

TEST(OneFOneB, RecomputesRightBeforeTheirBackward) {
  EXPECT_THAT(
      table(build(ScheduleKind::OneFOneB, 2, 3, 1, Checkpoint::ExceptLast)),
      ElementsAre("F0.0 F1.0 R0.0 B0.0 F2.0 R1.0 B1.0 B2.0", "F0.1 L0 R0.1 B0.1 F1.1 L1 R1.1 B1.1 F2.1 L2 B2.1"));
}

TEST(OneFOneB, ForwardOnlyRunsTheForwardsInOrder) {
  EXPECT_THAT(table(build(ScheduleKind::OneFOneB, 2, 3, 1, Checkpoint::Always, false)),
              ElementsAre("F0.0 F1.0 F2.0", "F0.1 F1.1 F2.1"));
}

TEST(Interleaved, TwoDevicesFourMicroBatchesTwoStagesEach) {
  EXPECT_THAT(table(build(ScheduleKind::Interleaved, 2, 4, 2)),
              ElementsAre("F0.0 F1.0 F0.2 F1.2 F2.0 B0.2 F3.0 B1.2 F2.2 B0.0 F3.2 B1.0 B2.2 B3.2 B2.0 B3.0",
                          "F0.1 F1.1 F0.3 L0 B0.3 F1.3 L1 B1.3 F2.1 B0.1 F3.1 B1.1 F2.3 L2 B2.3 F3.3 L3 B3.3 "
                          "B2.1 B3.1"));
}

TEST(Interleaved, FourDevicesEightMicroBatchesTwoStagesEach) {
  EXPECT_THAT(
      table(build(ScheduleKind::Interleaved, 4, 8, 2)),
      ElementsAre("F0.0 F1.0 F2.0 F3.0 F0.4 F1.4 F2.4 F3.4 F4.0 F5.0 F6.0 B0.4 F7.0 B1.4 F4.4 B2.4 F5.4 B3.4 F6.4 "
                  "B0.0 F7.4 B1.0 B2.0 B3.0 B4.4 B5.4 B6.4 B7.4 B4.0 B5.0 B6.0 B7.0",
                  "F0.1 F1.1 F2.1 F3.1 F0.5 F1.5 F2.5 F3.5 F4.1 B0.5 F5.1 B1.5 F6.1 B2.5 F7.1 B3.5 F4.5 B0.1 F5.5 "
                  "B1.1 F6.5 B2.1 F7.5 B3.1 B4.5 B5.5 B6.5 B7.5 B4.1 B5.1 B6.1 B7.1",
                  "F0.2 F1.2 F2.2 F3.2 F0.6 F1.6 F2.6 B0.6 F3.6 B1.6 F4.2 B2.6 F5.2 B3.6 F6.2 B0.2 F7.2 B1.2 F4.6 "
                  "B2.2 F5.6 B3.2 F6.6 B4.6 F7.6 B5.6 B6.6 B7.6 B4.2 B5.2 B6.2 B7.2",
                  "F0.3 F1.3 F2.3 F3.3 F0.7 L0 B0.7 F1.7 L1 B1.7 F2.7 L2 B2.7 F3.7 L3 B3.7 F4.3 B0.3 F5.3 B1.3 "
                  "F6.3 B2.3 F7.3 B3.3 F4.7 L4 B4.7 F5.7 L5 B5.7 F6.7 L6 B6.7 F7.7 L7 B7.7 B4.3 B5.3 B6.3 B7.3"));
}

TEST(Interleaved, AsManyMicroBatchesAsDevicesWarmsUpDeviceZeroFully) {
  EXPECT_THAT(table(build(ScheduleKind::Interleaved, 2, 2, 2)),
              ElementsAre("F0.0 F1.0 F0.2 F1.2 B0.2 B1.2 B0.0 B1.0", "F0.1 F1.1 F0.3 L0 B0.3 F1.3 L1 B1.3 B0.1 B1.1"));
}

TEST(Interleaved, OneDeviceRunsItsStagesInTurn) {
  EXPECT_THAT(table(build(ScheduleKind::Interleaved, 1, 2, 2)),
              ElementsAre("F0.0 F0.1 L0 B0.1 F1.0 B0.0 F1.1 L1 B1.1 B1.0"));
}

TEST(Interleaved, StagesLoopOverTheDevices) {
  Schedule schedule = build(ScheduleKind::Interleaved, 2, 4, 3);
  EXPECT_EQ(schedule.stages(), 6);
  EXPECT_EQ(schedule.devices(), 2);
  EXPECT_EQ(schedule.stagesPerDevice(), 3);
  EXPECT_EQ(schedule.deviceOf(0), 0);
  EXPECT_EQ(schedule.deviceOf(3), 1);
  EXPECT_EQ(schedule.deviceOf(4), 0);
  // A copy between consecutive stages always crosses devices; each device runs 4 * 3 forwards
  // and as many backwards, and the last device the 4 losses.
  for (const Op& op : schedule.ops()) {
    if (op.kind == OpKind::Copy) {
      EXPECT_NE(schedule.deviceOf(op.j), schedule.deviceOf(op.toJ));
    }
  }
  EXPECT_EQ(schedule.deviceOrder(0).size(), 24u);
  EXPECT_EQ(schedule.deviceOrder(1).size(), 28u);
}

// ZB-H1 as torch's ScheduleInterleavedZeroBubble runs it with one stage per rank (PyTorch 2.6,
// tests/fixtures/pytorch-2.6-schedules/README.md): 1F1B with I in B's place, device d deferring
// its W's by d; "I0.1" backward-input(0,1), "W0.1" backward-weight(0,1).
TEST(ZeroBubble, TwoDevicesFourMicroBatches) {
  EXPECT_THAT(table(build(ScheduleKind::ZeroBubble, 2, 4, 1)),
              ElementsAre("F0.0 F1.0 I0.0 W0.0 F2.0 I1.0 W1.0 F3.0 I2.0 W2.0 I3.0 W3.0",
                          "F0.1 L0 I0.1 F1.1 L1 I1.1 W0.1 F2.1 L2 I2.1 W1.1 F3.1 L3 I3.1 W2.1 W3.1"));
}

TEST(ZeroBubble, FourDevicesEightMicroBatches) {
  EXPECT_THAT(
      table(build(ScheduleKind::ZeroBubble, 4, 8, 1)),
      ElementsAre(
          "F0.0 F1.0 F2.0 F3.0 I0.0 W0.0 F4.0 I1.0 W1.0 F5.0 I2.0 W2.0 F6.0 I3.0 W3.0 F7.0 I4.0 W4.0 I5.0 W5.0 I6.0 "
          "W6.0 I7.0 W7.0",
          "F0.1 F1.1 F2.1 I0.1 F3.1 I1.1 W0.1 F4.1 I2.1 W1.1 F5.1 I3.1 W2.1 F6.1 I4.1 W3.1 F7.1 I5.1 W4.1 I6.1 W5.1 "
          "I7.1 W6.1 W7.1",
          "F0.2 F1.2 I0.2 F2.2 I1.2 F3.2 I2.2 W0.2 F4.2 I3.2 W1.2 F5.2 I4.2 W2.2 F6.2 I5.2 W3.2 F7.2 I6.2 W4.2 I7.2 "
          "W5.2 W6.2 W7.2",
          "F0.3 L0 I0.3 F1.3 L1 I1.3 F2.3 L2 I2.3 F3.3 L3 I3.3 W0.3 F4.3 L4 I4.3 W1.3 F5.3 L5 I5.3 W2.3 F6.3 L6 I6.3 "
          "W3.3 F7.3 L7 I7.3 W4.3 W5.3 W6.3 W7.3"));
}

TEST(ZeroBubble, FewerMicroBatchesThanDevicesAndRecomputeBeforeI) {
  EXPECT_THAT(table(build(ScheduleKind::ZeroBubble, 4, 2, 1, Checkpoint::ExceptLast)),
              ElementsAre("F0.0 F1.0 R0.0 I0.0 W0.0 I1.0 W1.0", "F0.1 F1.1 R0.1 I0.1 I1.1 W0.1 W1.1",
                          "F0.2 F1.2 R0.2 I0.2 I1.2 W0.2 W1.2", "F0.3 L0 R0.3 I0.3 F1.3 L1 I1.3 W0.3 W1.3"));
}

// zb1p deferring fewer W's than torch (PipelineShape::deferredWeights): device d runs the W of
// its k-th backward right after its (k + e_d)-th I; e = (0, 0) is 1F1B with each B split in two.
TEST(ZeroBubble, DeferringFewerWeightsRunsEachWThatManyIsAfterItsI) {
  auto deferring = [](std::int64_t p, std::int64_t m, std::vector<std::int64_t> deferred) {
    ScheduleSpec spec;
    spec.schedule = ScheduleKind::ZeroBubble;
    spec.balance.assign(static_cast<std::size_t>(p), 1);
    spec.chunks = m;
    spec.checkpoint = Checkpoint::Never;
    spec.deferredWeights = std::move(deferred);
    return table(Schedule::build(spec));
  };
  EXPECT_THAT(deferring(2, 4, {0, 0}),
              ElementsAre("F0.0 F1.0 I0.0 W0.0 F2.0 I1.0 W1.0 F3.0 I2.0 W2.0 I3.0 W3.0",
                          "F0.1 L0 I0.1 W0.1 F1.1 L1 I1.1 W1.1 F2.1 L2 I2.1 W2.1 F3.1 L3 I3.1 W3.1"));
  EXPECT_THAT(deferring(3, 4, {0, 1, 1}),
              ElementsAre("F0.0 F1.0 F2.0 I0.0 W0.0 F3.0 I1.0 W1.0 I2.0 W2.0 I3.0 W3.0",
                          "F0.1 F1.1 I0.1 F2.1 I1.1 W0.1 F3.1 I2.1 W1.1 I3.1 W2.1 W3.1",
                          "F0.2 L0 I0.2 F1.2 L1 I1.2 W0.2 F2.2 L2 I2.2 W1.2 F3.2 L3 I3.2 W2.2 W3.2"));
  // Each device's own count is torch's order on that device.
  EXPECT_EQ(deferring(3, 4, {0, 1, 2}), table(build(ScheduleKind::ZeroBubble, 3, 4, 1)));
  EXPECT_EQ(deviceSteps(ScheduleKind::ZeroBubble, 3, 4, 1, {0, 1, 1})[1],
            deviceSteps(ScheduleKind::ZeroBubble, 3, 4, 1)[1]);
}

TEST(ZeroBubble, RefusesDeferredWeightsOutOfRangeOrForAnotherSchedule) {
  EXPECT_THAT(
      [] {
        deviceSteps(ScheduleKind::ZeroBubble, 2, 4, 1, {0, 2});
      },
      ThrowsMessage<std::invalid_argument>(
          StrEq("device 1 defers at most 1 of its W's (torch's order), not 2 (deferred weights: [0, 2])")));
  EXPECT_THAT([] { deviceSteps(ScheduleKind::ZeroBubble, 2, 4, 1, {0}); },
              ThrowsMessage<std::invalid_argument>(
                  StrEq("deferred weights [0] name 1 devices but the pipeline has 2: give one count per device")));
  EXPECT_THAT(
      [] {
        deviceSteps(ScheduleKind::OneFOneB, 2, 4, 1, {0, 0});
      },
      ThrowsMessage<std::invalid_argument>(
          StrEq("deferred weights go with zb1p, not 1f1b (deferred weights: [0, 0])")));
}

TEST(ZeroBubble, WaitsForItsIAndIForTheGradients) {
  const Schedule schedule = build(ScheduleKind::ZeroBubble, 2, 2, 1);
  const Op& weight = schedule.op(*schedule.find(OpKind::BackwardWeight, 1, 0));
  EXPECT_THAT(weight.deps, ::testing::Contains(*schedule.find(OpKind::BackwardInput, 1, 0)));
  const Op& input = schedule.op(*schedule.find(OpKind::BackwardInput, 1, 0));
  bool waitsForGradient = false;
  for (OpIndex dep : input.deps) {
    const Op& copy = schedule.op(dep);
    waitsForGradient = waitsForGradient || (copy.kind == OpKind::Copy && copy.gradient && copy.j == 1);
  }
  EXPECT_TRUE(waitsForGradient);
  EXPECT_EQ(schedule.gradientConsumer(1, 0), schedule.find(OpKind::BackwardInput, 1, 0));
  EXPECT_EQ(schedule.label(weight), "backward-weight(1,0)");
}

// ZBV as torch's ScheduleZBVZeroBubble runs it (PyTorch 2.6, in torch's CSV: rank r's row; the
// fixtures hold m >= 2p - 1 at p = 2, 4): fewer micro-batches than the 2p - 1 its rounds need
// (their steps dropped), one, and an odd count.
TEST(ZeroBubbleV, OrdersEqualPytorchsAtShapesTheFixturesLack) {
  const auto csv = [](std::int64_t p, std::int64_t m) {
    return writeScheduleCsv(scheduleActions(build(ScheduleKind::ZeroBubbleV, p, m, 2, Checkpoint::ExceptLast)));
  };
  EXPECT_EQ(csv(3, 2), "0F0,0F1,5F0,5I0,5W0,5F1,5I1,5W1,0I0,0W0,0I1,0W1\n"
                       "1F0,1F1,4F0,4F1,4I0,4W0,4I1,4W1,1I0,1W0,1I1,1W1\n"
                       "2F0,3F0,2F1,3F1,3I0,3W0,2I0,2W0,3I1,3W1,2I1,2W1\n");
  EXPECT_EQ(csv(2, 1), "0F0,3F0,3I0,3W0,0I0,0W0\n1F0,2F0,2I0,2W0,1I0,1W0\n");
  EXPECT_EQ(csv(3, 7),
            "0F0,0F1,0F2,0F3,0F4,5F0,5I0,5W0,5F1,5I1,5W1,5F2,5I2,5W2,0F5,0I0,0W0,5F3,5I3,5W3,0F6,0I1,0W1,5F4,5I4,5W4,"
            "0I2,0W2,5F5,5I5,5W5,0I3,0W3,5F6,5I6,5W6,0I4,0W4,0I5,0W5,0I6,0W6\n"
            "1F0,1F1,1F2,4F0,1F3,4F1,4I0,4W0,4F2,4I1,4W1,1F4,1I0,1W0,4F3,4I2,4W2,1F5,1I1,1W1,4F4,4I3,4W3,1F6,1I2,1W2,"
            "4F5,4I4,4W4,1I3,1W3,4F6,4I5,4W5,1I4,4I6,1I5,1W4,1I6,1W5,4W6,1W6\n"
            "2F0,3F0,2F1,3F1,2F2,3F2,3I0,3W0,2F3,2I0,2W0,3F3,3I1,3W1,2F4,2I1,2W1,3F4,3I2,3W2,2F5,2I2,2W2,3F5,3I3,3W3,"
            "2F6,2I3,2W3,3F6,3I4,3W4,2I4,3I5,2I5,3I6,2I6,2W4,3W5,3W6,2W5,2W6\n");
  EXPECT_EQ(csv(4, 3), "0F0,0F1,0F2,7F0,7I0,7W0,7F1,7I1,7W1,7F2,7I2,7W2,0I0,0W0,0I1,0W1,0I2,0W2\n"
                       "1F0,1F1,1F2,6F0,6F1,6I0,6W0,6F2,6I1,6W1,6I2,6W2,1I0,1W0,1I1,1W1,1I2,1W2\n"
                       "2F0,2F1,2F2,5F0,5F1,5F2,5I0,5W0,5I1,5W1,2I0,2W0,5I2,5W2,2I1,2W1,2I2,2W2\n"
                       "3F0,4F0,3F1,4F1,3F2,4F2,4I0,4W0,3I0,3W0,4I1,4W1,3I1,3W1,4I2,4W2,3I2,3W2\n");
}

TEST(ZeroBubbleV, PlacesStagesInAVWithTheLossOnDeviceZero) {
  const Schedule schedule = build(ScheduleKind::ZeroBubbleV, 3, 2, 2, Checkpoint::ExceptLast);
  std::vector<std::int64_t> devices;
  for (std::int64_t j = 0; j < schedule.stages(); ++j) devices.push_back(schedule.deviceOf(j));
  EXPECT_EQ(devices, (std::vector<std::int64_t>{0, 1, 2, 2, 1, 0}));
  // Device 0 runs the last stage's losses, each right after its forward, and the recompute of
  // a checkpointed micro-batch right before its I.
  EXPECT_THAT(table(schedule)[0], StrEq("F0.0 F1.0 F0.5 L0 R0.5 I0.5 W0.5 F1.5 L1 I1.5 W1.5 R0.0 I0.0 W0.0 I1.0 W1.0"));
  // Stages 2 and 3 share device 2: the activation between them is a copy within the device.
  const Op& turn = schedule.op(*schedule.find(OpKind::Forward, 0, 3));
  bool waitsForStage2 = false;
  for (OpIndex dep : turn.deps) {
    const Op& copy = schedule.op(dep);
    waitsForStage2 = waitsForStage2 || (copy.kind == OpKind::Copy && copy.j == 2 && copy.toJ == 3);
  }
  EXPECT_TRUE(waitsForStage2);
}

TEST(DeviceSteps, GPipeIsForwardsThenBackwardsInReverse) {
  EXPECT_EQ(
      deviceSteps(ScheduleKind::GPipe, 2, 2, 1),
      (std::vector<std::vector<OrderStep>>{
          {{OpKind::Forward, 0, 0}, {OpKind::Forward, 1, 0}, {OpKind::Backward, 1, 0}, {OpKind::Backward, 0, 0}},
          {{OpKind::Forward, 0, 1}, {OpKind::Forward, 1, 1}, {OpKind::Backward, 1, 1}, {OpKind::Backward, 0, 1}}}));
}

TEST(DeviceSteps, EveryForwardAndBackwardOnceOnItsDevice) {
  for (auto [kind, p, m, v] :
       std::vector<std::tuple<ScheduleKind, int, int, int>>{{ScheduleKind::GPipe, 3, 5, 1},
                                                            {ScheduleKind::OneFOneB, 3, 5, 1},
                                                            {ScheduleKind::OneFOneB, 5, 2, 1},
                                                            {ScheduleKind::Interleaved, 3, 6, 2},
                                                            {ScheduleKind::Interleaved, 2, 6, 4},
                                                            {ScheduleKind::ZeroBubble, 3, 5, 1},
                                                            {ScheduleKind::ZeroBubble, 4, 2, 1},
                                                            {ScheduleKind::ZeroBubble, 1, 3, 1},
                                                            {ScheduleKind::InterleavedZeroBubble, 3, 6, 2},
                                                            {ScheduleKind::InterleavedZeroBubble, 4, 2, 2},
                                                            {ScheduleKind::InterleavedZeroBubble, 2, 6, 3},
                                                            {ScheduleKind::InterleavedZeroBubble, 3, 5, 2},
                                                            {ScheduleKind::ZeroBubbleV, 3, 5, 2},
                                                            {ScheduleKind::ZeroBubbleV, 4, 2, 2},
                                                            {ScheduleKind::ZeroBubbleV, 1, 3, 2}}) {
    const auto devices = deviceSteps(kind, p * v, m, v);
    ASSERT_EQ(devices.size(), static_cast<std::size_t>(p));
    // Every (kind, i, j) once: B for the others, I and W for the zero-bubble families.
    std::vector<int> seen(static_cast<std::size_t>(3 * m * p * v), 0);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      for (const OrderStep& step : devices[d]) {
        EXPECT_EQ(placedDevice(stagePlacement(kind), step.j, p), static_cast<std::int64_t>(d));
        const int pass = step.kind == OpKind::Forward ? 0 : step.kind == OpKind::BackwardWeight ? 2 : 1;
        if (step.kind != OpKind::Forward) {
          EXPECT_EQ(step.kind == OpKind::Backward, !splitsBackward(kind));
        }
        ++seen[static_cast<std::size_t>(pass * m * p * v + step.i * p * v + step.j)];
      }
    }
    for (std::size_t k = 0; k < seen.size(); ++k) {
      const bool expected = splitsBackward(kind) || k < static_cast<std::size_t>(2 * m * p * v);
      EXPECT_EQ(seen[k], expected ? 1 : 0) << scheduleKindName(kind) << " p " << p << " m " << m << " v " << v;
    }
    // Every schedule is free of deadlock: building it sorts its ops topologically.
    EXPECT_NO_THROW(build(kind, p, m, v, Checkpoint::ExceptLast));
  }
}

TEST(ScheduleLabel, NamesTheScheduleAndTheStagesPerDeviceOfInterleaved) {
  EXPECT_EQ(scheduleLabel(ScheduleKind::GPipe, 1), "gpipe");
  EXPECT_EQ(scheduleLabel(ScheduleKind::OneFOneB, 1), "1f1b");
  EXPECT_EQ(scheduleLabel(ScheduleKind::Interleaved, 2), "interleaved v2");
  EXPECT_EQ(scheduleLabel(ScheduleKind::ZeroBubble, 1), "zb1p");
  EXPECT_EQ(scheduleLabel(ScheduleKind::InterleavedZeroBubble, 2), "interleaved-zb v2");
  EXPECT_EQ(scheduleLabel(ScheduleKind::ZeroBubbleV, 2), "zbv");
  EXPECT_EQ(parseScheduleKindList("zb1p,interleaved-zb"),
            (std::vector<ScheduleKind>{ScheduleKind::ZeroBubble, ScheduleKind::InterleavedZeroBubble}));
}

TEST(ScheduleShape, RejectsWhatItCannotScheduleNamingMPAndV) {
  EXPECT_EQ(scheduleShapeError(ScheduleKind::Interleaved, 2, 8, 6),
            "interleaved needs chunks a multiple of devices (chunks: 6, devices: 4, stages per device: 2)");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::Interleaved, 1, 4, 4),
            "interleaved needs at least 2 stages per device (stages per device: 1)");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::OneFOneB, 2, 4, 4),
            "1f1b runs one stage per device (stages per device: 2); use the interleaved or interleaved-zb schedule "
            "for more");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::InterleavedZeroBubble, 2, 8, 9),
            "interleaved-zb runs the chunks in max(1, chunks / devices) rounds of equal size: 9 chunks do not split "
            "into 2 (devices: 4)");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::InterleavedZeroBubble, 2, 8, 6), "");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::ZeroBubbleV, 3, 6, 4),
            "zbv runs exactly 2 stages per device, device d holding stages d and 2p - 1 - d (stages per device: 3)");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::ZeroBubbleV, 1, 2, 4),
            "zbv runs exactly 2 stages per device, device d holding stages d and 2p - 1 - d (stages per device: 1)");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::ZeroBubbleV, 2, 6, 1), "");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::Interleaved, 2, 5, 4),
            "the stages must split evenly over the devices: 5 stages is not a multiple of 2 stages per device");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::GPipe, 0, 4, 4),
            "stages per device must be positive (stages per device: 0)");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::Interleaved, 2, 8, 8), "");
  EXPECT_EQ(scheduleShapeError(ScheduleKind::OneFOneB, 1, 4, 2), "");
  EXPECT_THAT([] { build(ScheduleKind::Interleaved, 4, 6, 2); },
              ThrowsMessage<std::invalid_argument>(StrEq(
                  "interleaved needs chunks a multiple of devices (chunks: 6, devices: 4, stages per device: 2)")));
  EXPECT_THROW(deviceSteps(ScheduleKind::OneFOneB, 0, 2, 1), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
