// Tests for simulate() under every schedule: closed-form step times and per-device activation peaks.
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::test_schedules {
namespace {

// Per device and micro-batch: forward f, backward b (divisible by every v used below).
constexpr TimeNs kF = 40;
constexpr TimeNs kB = 80;
// Saved activations per stage and sample; nothing else is allocated (no outputs, workspaces,
// parameters), so a device's bytes are S times the (stage, micro-batch) pairs it keeps.
constexpr Bytes kS = 1000;

struct Shape {
  std::int64_t p;  ///< pipeline devices
  std::int64_t m;  ///< micro-batches
  std::int64_t v;  ///< stages per device
};

std::string describe(const Shape& shape) {
  return "p=" + std::to_string(shape.p) + " m=" + std::to_string(shape.m) + " v=" + std::to_string(shape.v);
}

/// p * v one-layer stages of f / v and b / v (and kS saved bytes each), one sample per
/// micro-batch, zero-cost links, checkpoint never.
Prediction run(ScheduleKind kind, const Shape& shape, Bytes savedBytes = 0, SimulationOptions options = {}) {
  const std::int64_t n = shape.p * shape.v;
  const Profile profile = test::uniformProfile(n, {kF / shape.v, kB / shape.v, savedBytes, 0, 0, 0});
  Candidate candidate = test::makeCandidate(std::vector<std::int64_t>(static_cast<std::size_t>(n), 1), shape.m,
                                            Checkpoint::Never, shape.m);
  candidate.schedule = kind;
  candidate.stagesPerDevice = shape.v;
  return simulate(profile, test::freeCluster(shape.p), candidate, options).prediction;
}

// GPipe and 1F1B run the same ops with the same dependencies on the critical path:
// step = (m + p - 1)(f + b), whatever the order of the steady state.
TEST(ScheduleClosedForm, GPipeAndOneFOneBTakeMPlusPMinusOneTimesFPlusB) {
  for (const Shape& shape : {Shape{2, 4, 1}, Shape{4, 8, 1}, Shape{4, 2, 1}, Shape{1, 3, 1}, Shape{3, 5, 1}}) {
    for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
      const Prediction p = run(kind, shape);
      EXPECT_EQ(p.iterationNs, (shape.m + shape.p - 1) * (kF + kB)) << scheduleKindName(kind) << " " << describe(shape);
      ASSERT_EQ(p.busyNs.size(), static_cast<std::size_t>(shape.p));
      for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, shape.m * (kF + kB));
    }
  }
}

// Interleaved 1F1B with v stages of f/v and b/v per device, m a multiple of p: the bubble
// shrinks by v: step = m (f + b) + (p - 1)(f + b) / v.
TEST(ScheduleClosedForm, InterleavedDividesTheBubbleByV) {
  for (const Shape& shape : {Shape{2, 4, 2}, Shape{4, 8, 2}, Shape{2, 8, 4}, Shape{2, 2, 2}, Shape{4, 4, 2}}) {
    const Prediction p = run(ScheduleKind::Interleaved, shape);
    EXPECT_EQ(p.iterationNs, shape.m * (kF + kB) + (shape.p - 1) * (kF + kB) / shape.v) << describe(shape);
    // One busy time per pipeline device, not per stage.
    ASSERT_EQ(p.busyNs.size(), static_cast<std::size_t>(shape.p)) << describe(shape);
    for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, shape.m * (kF + kB)) << describe(shape);
    const double idle = 1.0 - static_cast<double>(shape.m * (kF + kB)) / static_cast<double>(p.iterationNs);
    EXPECT_DOUBLE_EQ(p.bubbleFraction, idle) << describe(shape);
  }
}

// The per-device peaks: device 0 holds at most min(p, m) micro-batches' activations under
// 1F1B (its p-th forward runs while p - 1 are saved), m under GPipe; device p - 1 holds one
// under 1F1B (its backward follows each forward).
TEST(ScheduleMemory, OneFOneBKeepsAtMostPMicroBatchesInFlight) {
  for (const Shape& shape : {Shape{2, 4, 1}, Shape{4, 8, 1}, Shape{4, 2, 1}, Shape{3, 7, 1}}) {
    const Prediction gpipe = run(ScheduleKind::GPipe, shape, kS);
    const Prediction oneFOneB = run(ScheduleKind::OneFOneB, shape, kS);
    ASSERT_EQ(oneFOneB.peakBytes.size(), static_cast<std::size_t>(shape.p));
    EXPECT_EQ(gpipe.peakBytes[0], shape.m * kS) << describe(shape);
    EXPECT_EQ(oneFOneB.peakBytes[0], std::min(shape.p, shape.m) * kS) << describe(shape);
    EXPECT_EQ(oneFOneB.peakOp[0], "forward(" + std::to_string(std::min(shape.p, shape.m) - 1) + ",0)");
    for (std::int64_t d = 0; d < shape.p; ++d) {
      EXPECT_EQ(oneFOneB.peakBytes[static_cast<std::size_t>(d)], std::min(shape.p - d, shape.m) * kS)
          << describe(shape) << " device " << d;
    }
  }
}

// Interleaved (p 2, m 4, v 2), schedule.h's diagram. Counting the (stage, micro-batch) pairs
// whose activations are saved, a forward adding one as it starts and a backward freeing one
// as it ends:
//   device 0   F0.0 F1.0 F0.2 F1.2 F2.0 B0.2 F3.0 B1.2 F2.2 B0.0 F3.2 B1.0 B2.2 ...
//              1    2    3    4    5    4    5    4    5    4    5    4    3 ...
//   device 1   F0.1 F1.1 F0.3 L0 B0.3 F1.3 L1 B1.3 F2.1 B0.1 F3.1 B1.1 F2.3 L2 B2.3 ...
//              1    2    3       2    3       2    3    2    3    2    3       2 ...
// so device 0 peaks at 5 S, first during forward(2,0), and device 1 at 3 S during forward(0,3)
// (GPipe over the same 2 devices would hold all 4 micro-batches of both its stages: 8 S).
TEST(ScheduleMemory, InterleavedPeakIsWhatItsOrderKeepsInFlight) {
  const Prediction p = run(ScheduleKind::Interleaved, {2, 4, 2}, kS);
  ASSERT_EQ(p.peakBytes.size(), 2u);
  EXPECT_EQ(p.peakBytes[0], 5 * kS);
  EXPECT_EQ(p.peakOp[0], "forward(2,0)");
  EXPECT_EQ(p.peakBytes[1], 3 * kS);
  EXPECT_EQ(p.peakOp[1], "forward(0,3)");

  // GPipe with the same four stages as two per device: every micro-batch of both stages.
  const Profile profile = test::uniformProfile(4, {kF / 2, kB / 2, kS, 0, 0, 0});
  const Prediction gpipe =
      simulate(profile, test::freeCluster(2), test::makeCandidate({2, 2}, 4, Checkpoint::Never, 4)).prediction;
  EXPECT_EQ(gpipe.peakBytes[0], 8 * kS);
}

// Static bytes (parameters and gradients) of all a device's stages count on it.
TEST(ScheduleMemory, StaticBytesOfEveryStageOfADeviceCount) {
  const Profile profile =
      test::makeProfile({{10, 20, 0, 0, 0, 1}, {10, 20, 0, 0, 0, 2}, {10, 20, 0, 0, 0, 4}, {10, 20, 0, 0, 0, 8}});
  Candidate candidate = test::makeCandidate({1, 1, 1, 1}, 2, Checkpoint::Never, 2);
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  const Prediction p = simulate(profile, test::freeCluster(2), candidate).prediction;
  // Stages 0 and 2 on device 0, 1 and 3 on device 1; params + grads: 2 x.
  EXPECT_EQ(p.peakBytes, (std::vector<Bytes>{2 * (1 + 4), 2 * (2 + 8)}));
}

// Two pipeline devices placed on one cluster device contend for it: 1F1B's lanes are then
// serialised, and the step is the total work.
TEST(ScheduleEngine, LanesOnOneClusterDeviceShareIt) {
  const Profile profile = test::uniformProfile(2, {kF, kB, 0, 0, 0, 0});
  Candidate candidate = test::makeCandidate({1, 1}, 4, Checkpoint::Never, 4);
  candidate.schedule = ScheduleKind::OneFOneB;
  candidate.devices = {0, 0};
  const Prediction p = simulate(profile, test::freeCluster(1), candidate).prediction;
  EXPECT_EQ(p.iterationNs, 2 * 4 * (kF + kB));
  EXPECT_EQ(p.busyNs, (std::vector<TimeNs>{4 * (kF + kB), 4 * (kF + kB)}));
}

// The predicted trace has every op, the losses included (zero-length), under every schedule.
TEST(ScheduleEngine, TraceHasEveryOpOfEverySchedule) {
  SimulationOptions options;
  options.recordTrace = true;
  const std::int64_t n = 4;
  const Profile profile = test::uniformProfile(n, {kF, kB, 0, 0, 0, 0});
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved}) {
    Candidate candidate = test::makeCandidate({1, 1, 1, 1}, 4, Checkpoint::ExceptLast, 4);
    candidate.schedule = kind;
    candidate.stagesPerDevice = kind == ScheduleKind::Interleaved ? 2 : 1;
    const Cluster cluster = test::freeCluster(candidate.pipelineDevices());
    const SimulationResult result = simulate(profile, cluster, candidate, options);
    int losses = 0;
    int compute = 0;
    for (const TraceEvent& e : result.trace.events) {
      if (e.kind != EventKind::Span) continue;
      if (e.name.rfind("loss(", 0) == 0) {
        ++losses;
        EXPECT_EQ(e.durationNs, 0) << e.name;
      }
      if (e.phase == Phase::Forward || e.phase == Phase::Backward || e.phase == Phase::Recompute) ++compute;
    }
    EXPECT_EQ(losses, 4) << scheduleKindName(kind);
    // 4 stages x 4 micro-batches x (forward + backward) + 3 recomputed micro-batches x 4 stages.
    EXPECT_EQ(compute, 4 * 4 * 2 + 3 * 4) << scheduleKindName(kind);
  }
}

TEST(ScheduleEngine, RejectsAnInvalidShapeWithItsReason) {
  const Profile profile = test::uniformProfile(8, {kF, kB, 0, 0, 0, 0});
  Candidate candidate = test::makeCandidate(std::vector<std::int64_t>(8, 1), 6, Checkpoint::Never, 6);
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  try {
    simulate(profile, test::freeCluster(4), candidate);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()),
              "interleaved needs chunks a multiple of devices (chunks: 6, devices: 4, stages per device: 2)");
  }
  candidate.chunks = 8;
  candidate.batch = 8;
  candidate.devices = {0, 1, 2, 3, 0, 1, 2, 3};  // one per stage: it needs one per pipeline device
  EXPECT_THROW(simulate(profile, test::freeCluster(4), candidate), std::invalid_argument);
  candidate.devices = {3, 2, 1, 0};
  EXPECT_NO_THROW(simulate(profile, test::freeCluster(4), candidate));
}

}  // namespace
}  // namespace pipeprof::test_schedules
