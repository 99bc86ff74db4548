// Tests for the frees another device makes, seen late (simulator/src/late_releases.h).
#include "late_releases.h"

#include <pipeprof/core/schedule.h>
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace pipeprof::test_late_releases {
namespace {

// Two one-layer stages, one sample per micro-batch: stage 0's backward takes 40, stage 1's 20;
// each output is 10 bytes, stage 1 saves its output (10) and nothing else is held.
const test::LayerCosts kSlowBackward{10, 40, 0, 10, 0, 0};
const test::LayerCosts kFastBackward{10, 20, 10, 10, 0, 0};

SimulationResult traced(std::int64_t chunks, Checkpoint mode) {
  SimulationOptions options;
  options.recordTrace = true;
  return simulate(test::makeProfile({kSlowBackward, kFastBackward}), test::freeCluster(2),
                  test::makeCandidate({1, 1}, chunks, mode, chunks), options);
}

/// The counter's value at timeNs (it is a step function), or 0 before its first sample.
double at(const std::map<TimeNs, double>& counter, TimeNs timeNs) {
  auto sample = counter.upper_bound(timeNs);
  return sample == counter.begin() ? 0.0 : std::prev(sample)->second;
}

// GPipe, never, two micro-batches: backward(1,1) makes the gradient of stage 1's input (10
// bytes, counted on device 1) and backward(1,0) frees it. Device 1 does not wait for device 0
// after backward(1,0) began (it waited for device 1 then), so device 1 sees the free late by
// kFreeSkew of the time since: at E + kFreeSkew * (E - S). backward(0,0)'s free would be due
// after the step ends; it goes with the step's end.
TEST(LateReleases, AnotherDevicesFreeIsSeenLateByTheSkewOfTheTimeSinceTheyLastWaited) {
  const SimulationResult result = traced(2, Checkpoint::Never);
  const TimeNs start = test::startOf(result.trace, "backward(1,0)");
  const TimeNs end = test::endOf(result.trace, "backward(1,0)");
  ASSERT_EQ(start, test::endOf(result.trace, "backward(1,1)"));  // it waited for the gradient
  const auto due = end + static_cast<TimeNs>(sim::kFreeSkew * static_cast<double>(end - start));
  ASSERT_GT(due, end);
  const std::map<TimeNs, double> device1 = test::counterOf(result.trace, "dev:1");
  EXPECT_EQ(at(device1, due) - at(device1, due - 1), -10.0);
  EXPECT_EQ(at(device1, end), at(device1, due - 1));
  const TimeNs stepEnd = test::endOf(result.trace, "backward(0,0)");
  EXPECT_EQ(std::prev(device1.end())->first, stepEnd);
  EXPECT_EQ(std::prev(device1.end())->second, 0.0);
  EXPECT_EQ(result.prediction.iterationNs, stepEnd);
}

// GPipe, always, one micro-batch: stage 0 keeps its output (10, on device 0) for stage 1's
// recompute, and backward(0,1) frees it. Device 0's backward waits for backward(0,1)'s
// gradient, so device 0 sees the free at that backward's start at the latest, however long
// ago the two devices last waited for each other.
TEST(LateReleases, ADeviceWaitingForTheFreeingOpSeesItAtOnce) {
  const SimulationResult result = traced(1, Checkpoint::Always);
  const TimeNs freed = test::endOf(result.trace, "backward(0,1)");
  ASSERT_GT(freed, 0);
  const std::map<TimeNs, double> device0 = test::counterOf(result.trace, "dev:0");
  EXPECT_EQ(at(device0, freed) - at(device0, freed - 1), -10.0);
}

// GPipe, never, two micro-batches (times in units of 100 ns); stage 0's output is 10 bytes,
// stage 1's 5, and stage 1 keeps its output until its backward. At backward(1,1)'s end (50)
// device 1 holds both outputs and the gradient of its input for micro-batch 1: 20. Device 0's
// backward(1,0), which began at 50 when that gradient came, frees it; at backward(0,1)'s end
// (70) device 1 makes micro-batch 0's. With stage 0's backward of 17 the free ends at 67 and is
// seen at 68.7, so device 1 then holds 5 + 10 = 15. With 19 it ends at 69, before 70, but is
// seen at 70.9: 5 + 10 + 10 = 25, as in the steps whose device 0 runs a little late.
TEST(LateReleases, AFreePredictedJustBeforeTheOwnersAllocationCountsInItsPeak) {
  auto peakOfDevice1 = [](TimeNs stage0BackwardNs) {
    const test::LayerCosts stage0{1000, stage0BackwardNs, 0, 10, 0, 0};
    const test::LayerCosts stage1{1000, 2000, 0, 5, 0, 0};
    return simulate(test::makeProfile({stage0, stage1}), test::freeCluster(2),
                    test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2))
        .prediction.peakBytes[1];
  };
  EXPECT_EQ(peakOfDevice1(1700), 20);
  EXPECT_EQ(peakOfDevice1(1900), 25);
}

// The same two stages: the late peak holds each free another device makes until its owner
// starts an op that waits for the freeing one, so device 1 counts the gradient device 0's
// backward(1,0) frees whichever side of device 1's allocation at 70 the free is predicted: the
// 25 bytes of the steps whose device 0 runs late. Nothing frees another device's tensors with
// one process per device, where the two peaks are one.
TEST(LateReleases, TheLatePeakHoldsAFreeAnotherDeviceMakesUntilItsOwnerWaitsForIt) {
  auto prediction = [](TimeNs stage0BackwardNs, bool processPerDevice) {
    const test::LayerCosts stage0{1000, stage0BackwardNs, 0, 10, 0, 0};
    const test::LayerCosts stage1{1000, 2000, 0, 5, 0, 0};
    Cluster cluster = test::freeCluster(2);
    cluster.processPerDevice = processPerDevice;
    return simulate(test::makeProfile({stage0, stage1}), cluster, test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2))
        .prediction;
  };
  const Prediction early = prediction(1700, false);
  EXPECT_EQ(early.peakBytes[1], 20);
  EXPECT_EQ(early.latePeakBytes[1], 25);
  EXPECT_EQ(early.latePeakBytes[0], early.peakBytes[0]);
  const Prediction late = prediction(1900, false);
  EXPECT_EQ(late.peakBytes[1], 25);
  EXPECT_EQ(late.latePeakBytes[1], 25);
  const Prediction ranks = prediction(1700, true);
  EXPECT_EQ(ranks.latePeakBytes, ranks.peakBytes);

  SimulationOptions withoutLatePeaks;
  withoutLatePeaks.latePeaks = false;
  const SimulationResult plain = simulate(test::makeProfile({kSlowBackward, kFastBackward}), test::freeCluster(2),
                                          test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2), withoutLatePeaks);
  EXPECT_TRUE(plain.prediction.latePeakBytes.empty());
}

// Interleaved zero bubble over four one-layer stages, two micro-batches: stage 2's output (10
// bytes, device 0's) is saved by its own layer and by stage 3's (W's input), so the later of
// I(i,2) on device 0 and W(i,3) on device 1 frees it. With I(i,2) at 40 and W(i,3) at 10, W
// ends first in the timeline and I frees it; but device 0 has not waited for W(i,3) then, and in
// a step whose device 1 runs late W frees it after I: the late peak holds it until device 0 waits
// for W, where the typical one let it go.
TEST(LateReleases, TheLatePeakHoldsWhatTwoLanesFreeUntilTheLaneWaitsForTheOther) {
  std::vector<test::LayerCosts> layers;
  for (const TimeNs inputNs : {10'000, 5'000, 40'000, 10'000}) {
    test::LayerCosts layer{10'000, 20'000, 10, 10, 0, 0};
    layer.split = BackwardSplit{inputNs, inputNs == 40'000 ? 1'000 : 10'000, 10};
    layers.push_back(layer);
  }
  Candidate candidate = test::makeCandidate({1, 1, 1, 1}, 2, Checkpoint::Never, 2);
  candidate.schedule = ScheduleKind::InterleavedZeroBubble;
  candidate.stagesPerDevice = 2;
  Profile profile = test::makeProfile(layers);
  for (LayerProfile& layer : profile.layers) {
    layer.costs[0].backwardSplit->inputWorkspaceBytes = 0;  // the two come together (docs/formats.md)
    layer.costs[0].backwardSplit->inputKeptBytes = 0;
  }
  const Prediction p = simulate(profile, test::freeCluster(2), candidate).prediction;
  EXPECT_EQ(p.peakBytes, (std::vector<Bytes>{50, 50}));
  EXPECT_EQ(p.latePeakBytes, (std::vector<Bytes>{60, 50}));
}

/// Ops that wait for `op` (through dependencies and the lanes' orders), `op` excluded.
std::vector<bool> waitingFor(const sim::CompiledSchedule& compiled, std::uint32_t op) {
  std::vector<bool> waits(compiled.ops.size(), false);
  std::vector<std::uint32_t> stack{op};
  while (!stack.empty()) {
    const std::uint32_t at = stack.back();
    stack.pop_back();
    std::vector<std::uint32_t> next;
    const sim::CompiledOp& c = compiled.ops[at];
    for (std::uint32_t s = c.successors.begin; s < c.successors.end; ++s) next.push_back(compiled.successors[s]);
    if (c.isCompute() && compiled.nextInLane(at) != sim::kNoOp) next.push_back(compiled.nextInLane(at));
    for (std::uint32_t n : next) {
      if (!waits[n]) {
        waits[n] = true;
        stack.push_back(n);
      }
    }
  }
  return waits;
}

// Every schedule family, both extreme modes: an op's endRelease keeps its own lane's tensors,
// its late releases are another lane's, and each late release (an effect, or a hold that an op
// of another lane ends) is seen by exactly the first op of its tensor's lane that waits for the
// releasing op. Holds are what zero-bubble schedules add when a micro-batch is not checkpointed.
// Holding them all to then (the late peak) never lowers a device's peak.
TEST(LateReleases, EachIsSeenByTheFirstOpOfItsLaneThatWaitsForItsRelease) {
  struct Shape {
    ScheduleKind schedule;
    std::vector<std::int64_t> balance;
    std::int64_t stagesPerDevice;
  };
  std::int64_t holdsEndingLate = 0;
  for (const Shape& shape :
       {Shape{ScheduleKind::GPipe, {1, 1}, 1}, Shape{ScheduleKind::OneFOneB, {1, 1, 1}, 1},
        Shape{ScheduleKind::ZeroBubble, {1, 1}, 1}, Shape{ScheduleKind::Interleaved, {1, 1, 1, 1}, 2},
        Shape{ScheduleKind::InterleavedZeroBubble, {1, 1, 1, 1}, 2},
        Shape{ScheduleKind::ZeroBubbleV, {1, 1, 1, 1}, 2}}) {
    for (Checkpoint mode : {Checkpoint::Never, Checkpoint::Always}) {
      Candidate candidate = test::makeCandidate(shape.balance, 4, mode, 4);
      candidate.schedule = shape.schedule;
      candidate.stagesPerDevice = shape.stagesPerDevice;
      const sim::CompiledSchedule compiled = sim::compileSchedule(Schedule::build(candidate.scheduleSpec({})));
      const std::string name = candidate.label();
      ASSERT_FALSE(compiled.opLate.empty()) << name;
      test::LayerCosts layer = kFastBackward;
      layer.split = BackwardSplit{10, 10, 10};
      const Prediction predicted =
          simulate(test::makeProfile(std::vector<test::LayerCosts>(shape.balance.size(), layer)),
                   test::freeCluster(candidate.pipelineDevices()), candidate)
              .prediction;
      for (std::size_t d = 0; d < predicted.peakBytes.size(); ++d) {
        EXPECT_GE(predicted.latePeakBytes[d], predicted.peakBytes[d]) << name << " device " << d;
      }
      auto laneOf = [&](const sim::MemoryEffect& e) { return compiled.stageLane[static_cast<std::size_t>(e.j)]; };
      const auto effects = static_cast<std::uint32_t>(compiled.effects.size());
      std::map<std::uint32_t, std::uint32_t> seer;  // late release -> the op that sees it
      for (std::uint32_t op = 0; op < compiled.ops.size(); ++op) {
        const sim::CompiledOp& c = compiled.ops[op];
        for (std::uint32_t e = c.endRelease.begin; e < c.endRelease.end && c.isCompute(); ++e) {
          EXPECT_EQ(laneOf(compiled.effects[e]), c.lane) << name;
        }
        const sim::Range seen = compiled.opLate[op].seen;
        for (std::uint32_t k = seen.begin; k < seen.end; ++k) seer[compiled.lateSeenEffects[k]] = op;
      }
      auto expectSeenByFirstWaiting = [&](std::uint32_t releasing, const sim::MemoryEffect& effect,
                                          std::uint32_t index) {
        const std::int32_t lane = laneOf(effect);
        EXPECT_NE(lane, compiled.ops[releasing].lane) << name;
        const std::vector<bool> waits = waitingFor(compiled, releasing);
        std::int64_t first = -1;
        for (std::uint32_t k = compiled.orderStart[static_cast<std::size_t>(lane)];
             k < compiled.orderStart[static_cast<std::size_t>(lane) + 1] && first < 0; ++k) {
          if (waits[compiled.orderOps[k]]) first = compiled.orderOps[k];
        }
        const auto found = seer.find(index);
        if (first < 0) {
          EXPECT_EQ(found, seer.end()) << name;
        } else {
          ASSERT_NE(found, seer.end()) << name << " " << compiled.labels[releasing];
          EXPECT_EQ(found->second, static_cast<std::uint32_t>(first)) << name << " " << compiled.labels[releasing];
        }
      };
      for (std::uint32_t op = 0; op < compiled.ops.size(); ++op) {
        const sim::Range late = compiled.opLate[op].release;
        for (std::uint32_t e = late.begin; e < late.end; ++e) expectSeenByFirstWaiting(op, compiled.effects[e], e);
      }
      for (std::uint32_t h = 0; h < compiled.holds.size(); ++h) {
        const sim::CompiledSchedule::Hold& hold = compiled.holds[h];
        if (!sim::endsLate(compiled, hold)) continue;
        ++holdsEndingLate;
        expectSeenByFirstWaiting(hold.untilOp, hold.effect, effects + h);
      }
    }
  }
  EXPECT_GT(holdsEndingLate, 0);
}

}  // namespace
}  // namespace pipeprof::test_late_releases
