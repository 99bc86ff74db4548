// Tests for simulate() under the zero-bubble schedules (zb1p, interleaved-zb, zbv): closed-form step
// times and per-device peaks with unit costs (docs/simulator.md, "Zero bubble"), and what a
// profile without the backward's split gets.
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::test_zero_bubble {
namespace {

// Per device and micro-batch: forward F, input gradient I, weight gradient W (each divisible by
// every v used below); a stage saves S per micro-batch, of which I keeps S_W for W.
constexpr TimeNs kF = 48;
constexpr Bytes kS = 1000;
constexpr Bytes kSW = 400;

struct Shape {
  std::int64_t p;
  std::int64_t m;
  std::int64_t v;
};

std::string describe(const Shape& shape, TimeNs i, TimeNs w) {
  return "p=" + std::to_string(shape.p) + " m=" + std::to_string(shape.m) + " v=" + std::to_string(shape.v) +
         " F=" + std::to_string(kF) + " I=" + std::to_string(i) + " W=" + std::to_string(w);
}

/// p * v one-layer stages of F / v, I / v and W / v (B = I + W), one sample per micro-batch,
/// zero-cost links, checkpoint never.
Prediction run(ScheduleKind kind, const Shape& shape, TimeNs i, TimeNs w) {
  const std::int64_t n = shape.p * shape.v;
  test::LayerCosts costs{kF / shape.v, (i + w) / shape.v, kS, 0, 0, 0};
  costs.split = BackwardSplit{i / shape.v, w / shape.v, kSW};
  const Profile profile = test::uniformProfile(n, costs);
  Candidate candidate = test::makeCandidate(std::vector<std::int64_t>(static_cast<std::size_t>(n), 1), shape.m,
                                            Checkpoint::Never, shape.m);
  candidate.schedule = kind;
  candidate.stagesPerDevice = shape.v;
  return simulate(profile, test::freeCluster(shape.p), candidate).prediction;
}

/// (I, W) pairs: W equal to F and I, cheaper than I, dearer than I, and free.
const std::vector<std::pair<TimeNs, TimeNs>> kSplits{{48, 48}, {48, 24}, {24, 48}, {48, 0}};

// m >= p: step = m (F + I + W) + (p - 1) max(F, F + I - W) / v. 1F1B's bubble is
// (p - 1)(F + I + W): the deferred W's fill all but max(F, F + I - W) of each hop.
TEST(ZeroBubbleClosedForm, TheBubbleIsPMinusOneTimesTheLargerOfFAndFPlusIMinusWOverV) {
  for (const auto& [kind, shapes] : std::vector<std::pair<ScheduleKind, std::vector<Shape>>>{
           {ScheduleKind::ZeroBubble, {{2, 4, 1}, {4, 8, 1}, {3, 5, 1}, {4, 4, 1}, {4, 16, 1}}},
           {ScheduleKind::InterleavedZeroBubble, {{2, 4, 2}, {4, 8, 2}, {2, 8, 2}, {3, 6, 2}, {2, 6, 3}, {4, 4, 2}}}}) {
    for (const Shape& shape : shapes) {
      for (const auto& [i, w] : kSplits) {
        const Prediction p = run(kind, shape, i, w);
        const TimeNs bubble = (shape.p - 1) * std::max(kF, kF + i - w) / shape.v;
        EXPECT_EQ(p.iterationNs, shape.m * (kF + i + w) + bubble) << describe(shape, i, w);
        for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, shape.m * (kF + i + w)) << describe(shape, i, w);
      }
    }
  }
}

// A W that costs nothing leaves nothing to fill: zb1p takes 1F1B's time, interleaved-zb
// interleaved's (B = I).
TEST(ZeroBubbleClosedForm, AFreeWeightGradientGainsNothing) {
  EXPECT_EQ(run(ScheduleKind::ZeroBubble, {4, 8, 1}, 48, 0).iterationNs,
            run(ScheduleKind::OneFOneB, {4, 8, 1}, 48, 0).iterationNs);
  EXPECT_EQ(run(ScheduleKind::InterleavedZeroBubble, {4, 8, 2}, 48, 0).iterationNs,
            run(ScheduleKind::Interleaved, {4, 8, 2}, 48, 0).iterationNs);
}

// Device d runs w_d = (v - 1) p + p - 1 - d warm-up forwards (m a multiple of p): v p - d
// micro-batches' saved bytes are live when its first I starts, and in the steady state, while
// a forward builds the next, the W state of the d I's whose W it defers (an I's end trades its
// S for its S_W at once): peak_d = (v p - d) S + d S_W.
TEST(ZeroBubbleMemory, DeviceDHoldsVPMinusDMicroBatchesAndDWeightStates) {
  for (const Shape& shape : {Shape{2, 4, 1}, Shape{4, 8, 1}, Shape{4, 4, 1}, Shape{2, 4, 2}, Shape{4, 8, 2},
                             Shape{3, 6, 2}, Shape{2, 6, 3}}) {
    const ScheduleKind kind = shape.v == 1 ? ScheduleKind::ZeroBubble : ScheduleKind::InterleavedZeroBubble;
    const Prediction p = run(kind, shape, 48, 48);
    ASSERT_EQ(p.peakBytes.size(), static_cast<std::size_t>(shape.p));
    for (std::int64_t d = 0; d < shape.p; ++d) {
      EXPECT_EQ(p.peakBytes[static_cast<std::size_t>(d)], (shape.v * shape.p - d) * kS + d * kSW)
          << describe(shape, 48, 48) << " device " << d;
    }
  }
}

// ZB-H1 keeps 1F1B's peak when W keeps less than a micro-batch's saved bytes (S_W <= S): device
// 0 holds 1F1B's p S, every other (p - d) S + d S_W <= p S.
TEST(ZeroBubbleMemory, ZbOnePKeepsOneFOneBsPeakWhenWKeepsLessThanAMicroBatch) {
  for (const Shape& shape : {Shape{2, 4, 1}, Shape{4, 8, 1}, Shape{3, 7, 1}, Shape{4, 2, 1}}) {
    const Prediction zb = run(ScheduleKind::ZeroBubble, shape, 48, 48);
    const Prediction oneFOneB = run(ScheduleKind::OneFOneB, shape, 48, 48);
    const Bytes oneFOneBPeak = *std::max_element(oneFOneB.peakBytes.begin(), oneFOneB.peakBytes.end());
    for (Bytes peak : zb.peakBytes) EXPECT_LE(peak, oneFOneBPeak) << describe(shape, 48, 48);
    EXPECT_EQ(zb.peakBytes[0], oneFOneB.peakBytes[0]) << describe(shape, 48, 48);
  }
}

/// p one-layer stages whose W keeps `weightSaved` (S_W) against a forward's kS.
Profile stagesKeepingForW(std::int64_t p, Bytes weightSaved) {
  return test::uniformProfile(p, {kF, 2 * kF, kS, 0, 0, 0, BackwardSplit{kF, kF, weightSaved}});
}

/// The zb1p candidate the search makes of them at m micro-batches, checkpoint never.
Candidate searchedZbOneP(std::int64_t p, std::int64_t m, Bytes weightSaved) {
  SearchSpace space;
  space.batch = m;
  space.devices = p;
  space.schedules = {ScheduleKind::ZeroBubble};
  space.chunks = {m};
  space.modes = {Checkpoint::Never};
  space.enumeration = BalanceEnumeration::Given;
  space.balances = {std::vector<std::int64_t>(static_cast<std::size_t>(p), 1)};
  return search(stagesKeepingForW(p, weightSaved), test::freeCluster(p), space).ranked.at(0).candidate;
}

// The search's zb1p defers on device d the most W's e_d <= d with (e_d + 1) S_W <= (d + 1) S,
// so that after an I the device holds no more than p forwards' state: all of torch's where W keeps
// no more than the forward (the candidate then says nothing), fewer where it keeps more.
TEST(ZeroBubbleDeferral, TheSearchDefersAsManyWsAsKeepEachDeviceWithinPForwards) {
  EXPECT_TRUE(searchedZbOneP(4, 8, kSW).deferredWeights.empty());
  EXPECT_TRUE(searchedZbOneP(4, 8, kS).deferredWeights.empty());
  EXPECT_EQ(searchedZbOneP(2, 4, 2 * kS).deferredWeights, (std::vector<std::int64_t>{0, 0}));
  EXPECT_EQ(searchedZbOneP(4, 8, 2 * kS).deferredWeights, (std::vector<std::int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(searchedZbOneP(4, 8, 3 * kS / 2).deferredWeights, (std::vector<std::int64_t>{0, 0, 1, 1}));
}

// Where W keeps twice the forward (the mlp's Linears: each input and its output's gradient),
// torch's order holds (d + 1) S_W on device d after an I, 2p S on the last device against
// 1F1B's p S on the first; the search's deferral stays within 1F1B's peak on every device and
// still beats 1F1B's step: with no W deferred the bubble is (p - 1)(F + I), 1F1B's less a W a hop.
TEST(ZeroBubbleDeferral, KeepsEveryDeviceWithinOneFOneBsPeakWhereTorchsOrderDoesNot) {
  for (const Shape& shape : {Shape{2, 4, 1}, Shape{4, 8, 1}, Shape{3, 6, 1}}) {
    const Profile profile = stagesKeepingForW(shape.p, 2 * kS);
    const Cluster cluster = test::freeCluster(shape.p);
    const Candidate bounded = searchedZbOneP(shape.p, shape.m, 2 * kS);
    Candidate torchs = bounded;
    torchs.deferredWeights.clear();
    Candidate oneFOneB = torchs;
    oneFOneB.schedule = ScheduleKind::OneFOneB;
    const Prediction ours = simulate(profile, cluster, bounded).prediction;
    const Prediction theirs = simulate(profile, cluster, torchs).prediction;
    const Prediction base = simulate(profile, cluster, oneFOneB).prediction;
    const Bytes basePeak = *std::max_element(base.peakBytes.begin(), base.peakBytes.end());
    EXPECT_EQ(basePeak, shape.p * kS) << describe(shape, kF, kF);
    for (Bytes peak : ours.peakBytes) EXPECT_LE(peak, basePeak) << describe(shape, kF, kF);
    EXPECT_EQ(theirs.peakBytes.back(), 2 * shape.p * kS) << describe(shape, kF, kF);
    EXPECT_LE(theirs.iterationNs, ours.iterationNs) << describe(shape, kF, kF);
    EXPECT_LT(ours.iterationNs, base.iterationNs) << describe(shape, kF, kF);
  }
  // No W deferred anywhere: 1F1B's order with B split, every I's gradient a W sooner upstream.
  Candidate none = searchedZbOneP(4, 8, 4 * kS);
  EXPECT_EQ(none.deferredWeights, (std::vector<std::int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(simulate(stagesKeepingForW(4, 4 * kS), test::freeCluster(4), none).prediction.iterationNs,
            8 * 3 * kF + 3 * (kF + kF));
}

/// Shapes zbv runs in full: m >= 2p - 1 micro-batches (the rounds torch's order is built on).
std::vector<Shape> fullZbvShapes() {
  std::vector<Shape> shapes;
  for (std::int64_t p = 1; p <= 5; ++p) {
    for (std::int64_t m : {2 * p - 1, 2 * p, 3 * p, std::int64_t{13}}) shapes.push_back({p, m, 2});
  }
  return shapes;
}

// ZBV with unit costs (each stage's F, I and W all t = F / 2): torch's order is a lock-step
// grid in which rank d starts at slot d and never idles, so the step is 6 m t + (p - 1) t:
// m (F + I + W) + (p - 1) F / 2, half of ZB-H1's (p - 1) F.
TEST(ZeroBubbleVClosedForm, WithUnitCostsTheBubbleIsPMinusOneStageForwards) {
  for (const Shape& shape : fullZbvShapes()) {
    const Prediction p = run(ScheduleKind::ZeroBubbleV, shape, kF, kF);
    EXPECT_EQ(p.iterationNs, shape.m * 3 * kF + (shape.p - 1) * kF / 2) << describe(shape, kF, kF);
    for (TimeNs busy : p.busyNs) EXPECT_EQ(busy, shape.m * 3 * kF) << describe(shape, kF, kF);
  }
}

// ZBV with any per-stage costs F, I and W (the first stage's I empty, its W the whole backward,
// as the runtime runs them), m >= 2p - 1: the step is 2 m (F + I + W) + b_2 + (p - 2) b_hop,
// b_2 = max(F, I, 2I - 2W, F + I - 2W, 2F - W - I, 2F - 3W) and
// b_hop = max(W, I, 2F - I, 2 max(F, I) - 2W) (docs/simulator.md, "ZBV"). Unit costs t give
// (p - 1) t, the test above.
TEST(ZeroBubbleVClosedForm, AnyForwardInputAndWeightCostsGiveTheBubbleOfTwoDevicesAndOneHop) {
  auto step = [](std::int64_t p, std::int64_t m, TimeNs f, TimeNs i, TimeNs w) {
    test::LayerCosts costs{f, i + w, kS, 0, 0, 0, BackwardSplit{i, w, kSW, 0}};
    Candidate candidate =
        test::makeCandidate(std::vector<std::int64_t>(static_cast<std::size_t>(2 * p), 1), m, Checkpoint::Never, m);
    candidate.schedule = ScheduleKind::ZeroBubbleV;
    candidate.stagesPerDevice = 2;
    return simulate(test::uniformProfile(2 * p, costs), test::freeCluster(p), candidate).prediction.iterationNs;
  };
  for (std::int64_t p = 2; p <= 5; ++p) {
    for (std::int64_t m : {2 * p - 1, 3 * p}) {
      for (TimeNs f : {4, 9, 20}) {
        for (TimeNs i : {0, 2, 5, 9, 14, 20, 30}) {
          for (TimeNs w : {0, 1, 3, 6, 9, 15, 30}) {
            const TimeNs two = std::max({f, i, 2 * i - 2 * w, f + i - 2 * w, 2 * f - w - i, 2 * f - 3 * w});
            const TimeNs hop = std::max({w, i, 2 * f - i, 2 * std::max(f, i) - 2 * w});
            EXPECT_EQ(step(p, m, f, i, w), 2 * m * (f + i + w) + two + (p - 2) * hop)
                << "p=" << p << " m=" << m << " F=" << f << " I=" << i << " W=" << w;
          }
        }
      }
    }
  }
}

// Every device holds 2p micro-batches of one stage's saved bytes at its peak, whatever the
// split (each W runs right after its I until the cool-down): 1F1B's device-0 peak, on every
// device.
TEST(ZeroBubbleVMemory, EveryDeviceHoldsTwoPStageMicroBatches) {
  for (const Shape& shape : fullZbvShapes()) {
    for (const auto& [i, w] : kSplits) {
      const Prediction p = run(ScheduleKind::ZeroBubbleV, shape, i, w);
      ASSERT_EQ(p.peakBytes.size(), static_cast<std::size_t>(shape.p));
      for (Bytes peak : p.peakBytes) EXPECT_EQ(peak, 2 * shape.p * kS) << describe(shape, i, w);
    }
  }
}

TEST(ZeroBubbleTrace, ShowsIAndWAsSuch) {
  const Profile profile = test::uniformProfile(2, {kF, 2 * kF, kS, 0, 0, 0, BackwardSplit{kF, kF, kSW}});
  Candidate candidate = test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2);
  candidate.schedule = ScheduleKind::ZeroBubble;
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result = simulate(profile, test::freeCluster(2), candidate, options);
  std::vector<std::string> names;
  for (const TraceEvent& event : result.trace.events) names.push_back(event.name);
  for (const char* name : {"backward-input(1,0)", "backward-weight(1,0)", "backward-input(0,1)"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_EQ(std::find(names.begin(), names.end(), "backward(0,0)"), names.end());
}

// The first stage's I computes nothing (no input wants a gradient): it takes no time, and its W
// runs the whole backward.
TEST(ZeroBubbleTrace, TheFirstStagesIIsEmptyAndItsWIsTheWholeBackward) {
  const Profile profile = test::uniformProfile(2, {kF, 3 * kF, kS, 0, 0, 0, BackwardSplit{kF, 2 * kF, kSW}});
  Candidate candidate = test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2);
  candidate.schedule = ScheduleKind::ZeroBubble;
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result = simulate(profile, test::freeCluster(2), candidate, options);
  auto durationOf = [&](const std::string& name) {
    for (const TraceEvent& event : result.trace.events) {
      if (event.name == name) return event.durationNs;
    }
    ADD_FAILURE() << "no " << name;
    return TimeNs{-1};
  };
  EXPECT_EQ(durationOf("backward-input(0,0)"), 0);
  EXPECT_EQ(durationOf("backward-weight(0,0)"), 3 * kF);
  EXPECT_EQ(durationOf("backward-input(0,1)"), kF);
  EXPECT_EQ(durationOf("backward-weight(0,1)"), 2 * kF);
}

// At each layer a split backward's I holds its own peak (input_workspace_bytes) over the
// gradients the stage's later layers captured for W (input_kept_bytes). A profile without the
// two fields gets them estimated: B's workspace less W's, and the output's gradient where W keeps
// anything.
constexpr Bytes kOutput = 100;

TEST(ZeroBubbleMemory, IHoldsWhatTheLaterLayersCapturedOverItsOwnPeak) {
  auto lastDevicePeak = [](std::optional<Bytes> workspace, Bytes keptByLastLayer) {
    test::LayerCosts costs{kF, 2 * kF, kS, kOutput, 0, 0, BackwardSplit{kF, kF, kSW, 0}};
    std::vector<test::LayerCosts> layers(4, costs);
    if (workspace) {
      for (test::LayerCosts& layer : layers) {
        layer.split->inputWorkspaceBytes = *workspace;
        layer.split->inputKeptBytes = kOutput;
      }
      layers[3].split->inputKeptBytes = keptByLastLayer;
    }
    Candidate candidate = test::makeCandidate({2, 2}, 1, Checkpoint::Never, 1);
    candidate.schedule = ScheduleKind::ZeroBubble;
    return simulate(test::makeProfile(layers), test::freeCluster(2), candidate).prediction.peakBytes[1];
  };
  EXPECT_EQ(lastDevicePeak(0, kOutput), lastDevicePeak(std::nullopt, 0)) << "the estimates, measured";
  // Layer 2's I peaks 3000 above its start over what layer 3 captured: 5000 more captured, 5000
  // more at the device's peak.
  EXPECT_EQ(lastDevicePeak(3000, kOutput + 5000) - lastDevicePeak(3000, kOutput), 5000);
}

TEST(ZeroBubbleProfile, AProfileWithoutTheSplitIsToldToProfileAgain) {
  const Profile profile = test::uniformProfile(2, {kF, 2 * kF, kS, 0, 0, 0});
  Candidate candidate = test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2);
  candidate.schedule = ScheduleKind::ZeroBubble;
  try {
    simulate(profile, test::freeCluster(2), candidate);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("profile the model again"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace pipeprof::test_zero_bubble
