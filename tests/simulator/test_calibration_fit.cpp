// Tests of simulator/calibration_fit: scales, device speeds and step overheads fitted to reference pipeline traces.
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/simulator/simulator.h>

#include "two_layer_profile.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>

namespace pipeprof::test_calibration_fit {
namespace {

using test::fourLayerProfile;
using test::fourLayerProfileInMicroseconds;
using test::twoLayerProfile;

TraceEvent span(Phase phase, TimeNs startNs, TimeNs durationNs, std::int64_t i = -1, std::int64_t j = -1) {
  TraceEvent event;
  event.kind = EventKind::Span;
  event.phase = phase;
  event.startNs = startNs;
  event.durationNs = durationNs;
  event.microBatch = i;
  event.partition = j;
  return event;
}

/// One timed step at startNs lasting stepNs, in which every stage runs, for micro-batch i
/// of sizes[i] samples, a forward of forwardPerSampleNs x sizes[i] and a backward of
/// backwardPerSampleNs x sizes[i].
void addStep(Trace& trace, TimeNs startNs, TimeNs stepNs, const std::vector<std::int64_t>& sizes, std::int64_t stages,
             TimeNs forwardPerSampleNs, TimeNs backwardPerSampleNs) {
  trace.events.push_back(span(Phase::Step, startNs, stepNs));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (std::int64_t j = 0; j < stages; ++j) {
      const auto microBatch = static_cast<std::int64_t>(i);
      trace.events.push_back(span(Phase::Forward, startNs + 1, forwardPerSampleNs * sizes[i], microBatch, j));
      trace.events.push_back(span(Phase::Backward, startNs + 2, backwardPerSampleNs * sizes[i], microBatch, j));
    }
  }
}

ReferenceRun reference(std::vector<std::int64_t> balance, std::int64_t chunks, std::int64_t batch) {
  ReferenceRun run;
  run.candidate.balance = std::move(balance);
  run.candidate.chunks = chunks;
  run.candidate.checkpoint = Checkpoint::Never;
  run.candidate.batch = batch;
  return run;
}

Cluster twoCpus() { return Cluster::uniform(2, std::nullopt, 0.0, 0, "cpu"); }

/// `profile` with a loss profiled at `forwardNs` forward at twoLayerProfile's sizes (2, 3, 4 and 8).
Profile withLoss(Profile profile, TimeNs forwardNs) {
  for (std::int64_t size : {2, 3, 4, 8}) {
    CostSample loss;
    loss.microBatch = size;
    loss.forwardNs = forwardNs;
    profile.loss.costs.push_back(loss);
  }
  return profile;
}

TEST(CalibrationFit, ScalesEachMicroBatchSizeAndFitsTheOverheadPerChunkCount) {
  // Batch 8 over [1,1], chunks 2: two micro-batches of 4. Each stage's forward takes
  // 3 x 4 = 12 (whole model 24 against 2 x 4 = 8 profiled: x3) and its backward 5 x 4 = 20
  // (40 against 16: x2.5). With the calibrated profile the simulator predicts GPipe's 3
  // forward clocks of 12 and 3 backward clocks of 20; the median step of both rounds is 110.
  ReferenceRun two = reference({1, 1}, 2, 8);
  addStep(two.trace, 0, 100, {4, 4}, 2, 3, 5);
  addStep(two.trace, 1000, 120, {4, 4}, 2, 3, 5);
  two.trace.events.push_back(span(Phase::Forward, 5000, 999, 0, 0));  // warm-up: outside every step
  ReferenceRun twoAgain = reference({1, 1}, 2, 8);                    // a second round of the same reference
  addStep(twoAgain.trace, 0, 110, {4, 4}, 2, 3, 5);
  // Chunks 3 gives 3, 3, 2 (torch::chunk): the remainder micro-batch is its own size, here at
  // the same scales as size 4.
  ReferenceRun three = reference({1, 1}, 3, 8);
  addStep(three.trace, 0, 500, {3, 3, 2}, 2, 3, 5);

  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(), {two, three, twoAgain});
  ASSERT_EQ(calibration.scales.size(), 3U);
  for (const std::int64_t size : {4, 3, 2}) {
    EXPECT_NEAR(calibration.scales.at(size).forward, 3.0, 1e-12) << size;
    EXPECT_NEAR(calibration.scales.at(size).backward, 2.5, 1e-12) << size;
  }
  EXPECT_EQ(calibration.stepOverheadNs.at(2), 110 - (3 * 12 + 3 * 20));
  EXPECT_EQ(calibration.deviceSpeeds, (std::vector<double>{1.0, 1.0}));  // the stages ran alike
  ASSERT_EQ(calibration.provenance.references.size(), 2U);               // chunks 2 (both rounds pooled), chunks 3
  EXPECT_EQ(calibration.provenance.references[0].chunks, 2);
  EXPECT_EQ(calibration.provenance.references[0].steps, 3);
  EXPECT_EQ(calibration.provenance.references[0].stepNsMedian, 110);
  EXPECT_EQ(calibration.provenance.references[0].balance, (std::vector<std::int64_t>{1, 1}));
}

TEST(CalibrationFit, EveryShapesRunsAreSamplesOfTheSameCorrections) {
  // A step of the GPipe reference of the test above, and a 1F1B reference whose forwards take
  // 2 per sample (x2 the profile's) and backwards 4 (x2). Two shapes: each size's scale is the
  // median of their cells, sqrt(3 x 2) forward and sqrt(2.5 x 2) backward, for every candidate
  // alike (and the devices' speed 1: the calibrated layers' 10 + 18 per micro-batch and stage
  // are what both steps measured on average).
  ReferenceRun two = reference({1, 1}, 2, 8);
  addStep(two.trace, 0, 110, {4, 4}, 2, 3, 5);
  ReferenceRun oneFOneB = reference({1, 1}, 2, 8);
  oneFOneB.candidate.schedule = ScheduleKind::OneFOneB;
  addStep(oneFOneB.trace, 0, 90, {4, 4}, 2, 2, 4);

  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(), {oneFOneB, two});
  EXPECT_DOUBLE_EQ(calibration.scales.at(4).forward, std::sqrt(6.0));
  EXPECT_DOUBLE_EQ(calibration.scales.at(4).backward, std::sqrt(5.0));
  EXPECT_TRUE(calibration.byShape.empty()) << "no shape has corrections of its own";
  ASSERT_EQ(calibration.provenance.references.size(), 2U);  // gpipe first
  EXPECT_EQ(calibration.provenance.references[0].shape, ReferenceShape{});
  EXPECT_EQ(calibration.provenance.references[0].stepNsMedian, 110);
  EXPECT_EQ(calibration.provenance.references[1].shape.label(), "1f1b never");
  EXPECT_EQ(calibration.provenance.references[1].stepNsMedian, 90);
  EXPECT_EQ(calibration.deviceSpeeds, (std::vector<double>{1.0, 1.0}));
  // The step overhead at chunks 2 is the median (of two: the mean) of what each shape's step
  // took beyond the simulated one: 3 forward clocks of 10 and 3 backward of 18 for both.
  EXPECT_EQ(calibration.stepOverheadNs.at(2), ((110 - 84) + (90 - 84)) / 2);

  // Without GPipe runs the other shapes' references are the samples.
  const Calibration onlyOneFOneB = calibrationFromRuns(twoLayerProfile(), twoCpus(), {oneFOneB});
  EXPECT_DOUBLE_EQ(onlyOneFOneB.scales.at(4).forward, 2.0);
  EXPECT_EQ(onlyOneFOneB.stepOverheadNs.at(2), 90 - 72);
  EXPECT_TRUE(onlyOneFOneB.byShape.empty());
}

/// A reference of `schedule` and `mode` over [1,1], batch 8 in `chunks` micro-batches, whose
/// forward takes forwardPerSample x the profile's per sample (the two-layer profile's forward
/// is 1 ns per sample and layer, its backward 2).
ReferenceRun shapeReference(ScheduleKind schedule, Checkpoint mode, std::int64_t chunks, TimeNs forwardPerSample) {
  ReferenceRun run = reference({1, 1}, chunks, 8);
  run.candidate.schedule = schedule;
  run.candidate.checkpoint = mode;
  const std::vector<std::int64_t> sizes =
      chunks == 2 ? std::vector<std::int64_t>{4, 4} : std::vector<std::int64_t>{3, 3, 2};
  addStep(run.trace, 0, 1000, sizes, 2, forwardPerSample, 2);
  return run;
}

TEST(CalibrationFit, AReferenceTimedInASlowSpellIsOneShapeAmongThree) {
  // Forward scales as measured, by shape and size (chunks 2 gives size 4, chunks 3 sizes 3, 2):
  //                   4   3   2
  //   gpipe never     6   2   2    <- its chunks-2 reference timed in a slow spell (truly 2)
  //   1f1b never      2   3   3
  //   gpipe always    2   2   2
  // Each size's scale is the median over the shapes: 2 at size 4, whatever the spell did to
  // GPipe's reference, and 2 at sizes 3 and 2 however 1F1B's reference at chunks 3 ran.
  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(),
                                                      {shapeReference(ScheduleKind::GPipe, Checkpoint::Never, 2, 6),
                                                       shapeReference(ScheduleKind::GPipe, Checkpoint::Never, 3, 2),
                                                       shapeReference(ScheduleKind::OneFOneB, Checkpoint::Never, 2, 2),
                                                       shapeReference(ScheduleKind::OneFOneB, Checkpoint::Never, 3, 3),
                                                       shapeReference(ScheduleKind::GPipe, Checkpoint::Always, 2, 2),
                                                       shapeReference(ScheduleKind::GPipe, Checkpoint::Always, 3, 2)});
  for (const std::int64_t size : {4, 3, 2}) {
    EXPECT_NEAR(calibration.scales.at(size).forward, 2.0, 1e-12) << size;
    EXPECT_NEAR(calibration.scales.at(size).backward, 1.0, 1e-12) << size;  // 2 per sample, as profiled
  }
  EXPECT_TRUE(calibration.byShape.empty());
}

TEST(CalibrationFit, ACheckpointedMicroBatchsForwardIsTimedAgainstTheForwardWithoutAGraph) {
  // The profile's forward without a graph takes half its forward. Both shapes ran their forwards
  // at twice the profile: never's at 2 per sample (its forwards keep their graph), always's at
  // 1 (none does). One scale of 2 fits both; against the forward with a graph always's cell
  // would read 1.
  Profile profile = twoLayerProfile();
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) cost.forwardNoGradNs = cost.forwardNs / 2;
  }
  const Calibration calibration = calibrationFromRuns(profile, twoCpus(),
                                                      {shapeReference(ScheduleKind::GPipe, Checkpoint::Never, 2, 2),
                                                       shapeReference(ScheduleKind::GPipe, Checkpoint::Always, 2, 1)});
  EXPECT_NEAR(calibration.scales.at(4).forward, 2.0, 1e-12);
  EXPECT_EQ(calibration.deviceSpeeds, (std::vector<double>{1.0, 1.0})) << "each forward against its own kind";
  const CostSample calibrated = calibratedProfile(profile, calibration).layers[0].costAt(4);
  EXPECT_EQ(calibrated.forwardNs, 8);
  EXPECT_EQ(calibrated.forwardNoGradNs, 4) << "the forward's scale";
}

TEST(CalibrationFit, ASizeOnlySomeShapesTimedIsDrawnTowardTheOthersByTheShapesDisagreement) {
  // A calibration whose budget timed GPipe at chunks 2 and 3 and 1F1B at chunks 2 only:
  //                   4   3   2
  //   gpipe never     2   1   1
  //   1f1b never      8   -   -
  // Size 4's median is sqrt(2 x 8) = 4, sizes 3 and 2 read 1, the median over the sizes. The
  // two shapes disagree at size 4 by a factor 4: the cells' pooled variance (one degree of
  // freedom) is 2 (log 2)^2, so size 4 keeps tau^2 / (tau^2 + 2 (log 2)^2) of its deviation,
  // tau = kSizeScaleSd: a few percent. The step overhead at chunks 3 is GPipe's alone; at
  // chunks 2 the median over both shapes.
  const Calibration calibration =
      calibrationFromRuns(twoLayerProfile(), twoCpus(),
                          {shapeReference(ScheduleKind::GPipe, Checkpoint::Never, 2, 2),
                           shapeReference(ScheduleKind::GPipe, Checkpoint::Never, 3, 1),
                           shapeReference(ScheduleKind::OneFOneB, Checkpoint::Never, 2, 8)});
  const double tau2 = kSizeScaleSd * kSizeScaleSd;
  const double share = tau2 / (tau2 + 2.0 * std::log(2.0) * std::log(2.0));
  EXPECT_NEAR(calibration.scales.at(4).forward, std::pow(4.0, share), 1e-12);
  EXPECT_LT(calibration.scales.at(4).forward, 1.05);
  for (const std::int64_t size : {3, 2}) EXPECT_NEAR(calibration.scales.at(size).forward, 1.0, 1e-12) << size;
  ASSERT_EQ(calibration.stepOverheadNs.size(), 2U);
  EXPECT_EQ(calibration.provenance.references.size(), 3U) << "every reference timed";
}

/// A reference of `schedule` over [1,1], batch 8 in `chunks` micro-batches of equal size
/// (chunks 1, 2 or 4), whose whole model runs its forward at `forwardScale` x the profile's.
ReferenceRun evenReference(ScheduleKind schedule, std::int64_t chunks, TimeNs forwardScale) {
  ReferenceRun run = reference({1, 1}, chunks, 8);
  run.candidate.schedule = schedule;
  addStep(run.trace, 0, 1000, std::vector<std::int64_t>(static_cast<std::size_t>(chunks), 8 / chunks), 2, forwardScale,
          2);
  return run;
}

/// GPipe's and 1F1B's references at chunks 4, 2 and 1 (2, 4 and 8 samples), their forwards at
/// `gpipeScales` and `oneFOneBScales` x the profile's at those sizes.
std::vector<ReferenceRun> twoShapes(const std::array<TimeNs, 3>& gpipeScales,
                                    const std::array<TimeNs, 3>& oneFOneBScales) {
  std::vector<ReferenceRun> runs;
  for (std::size_t k = 0; k < 3; ++k) {
    runs.push_back(evenReference(ScheduleKind::GPipe, std::int64_t{4} >> k, gpipeScales[k]));
    runs.push_back(evenReference(ScheduleKind::OneFOneB, std::int64_t{4} >> k, oneFOneBScales[k]));
  }
  return runs;
}

TEST(CalibrationFit, SizesTheShapesAgreeOnKeepTheirOwnScales) {
  // Both shapes read 1 at 2 samples, 2 at 4 and 4 at 8: no disagreement, so no size is drawn
  // toward the others however far they lie apart.
  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(), twoShapes({1, 2, 4}, {1, 2, 4}));
  EXPECT_NEAR(calibration.scales.at(2).forward, 1.0, 1e-12);
  EXPECT_NEAR(calibration.scales.at(4).forward, 2.0, 1e-12);
  EXPECT_NEAR(calibration.scales.at(8).forward, 4.0, 1e-12);
}

TEST(CalibrationFit, ASizeTheShapesDisagreeOnIsDrawnTowardTheOthers) {
  // At 4 samples GPipe read 4 and 1F1B 2 (a slow spell over one shape's reference, or over all
  // of that size's); at 2 and 8 both read 2. Size 4's median is sqrt 8, the sizes' median 2; the
  // cells' pooled variance is (log 2)^2 / 2 over 3 degrees of freedom, and size 4 keeps
  // tau^2 / (tau^2 + (log 2)^2 / 6) of its deviation, half of log 2 in log terms.
  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(), twoShapes({2, 4, 2}, {2, 2, 2}));
  const double tau2 = kSizeScaleSd * kSizeScaleSd;
  const double share = tau2 / (tau2 + std::log(2.0) * std::log(2.0) / 6.0);
  EXPECT_NEAR(calibration.scales.at(4).forward, 2.0 * std::pow(2.0, share / 2.0), 1e-12);
  EXPECT_LT(calibration.scales.at(4).forward, 2.3) << "not sqrt 8 = 2.83";
  EXPECT_NEAR(calibration.scales.at(2).forward, 2.0, 1e-12);
  EXPECT_NEAR(calibration.scales.at(8).forward, 2.0, 1e-12);
  EXPECT_NEAR(calibration.scales.at(4).backward, 1.0, 1e-12) << "2 per sample, as profiled";
}

TEST(CalibrationFit, TheStepOverheadIsOneLineOverTheChunkCounts) {
  // 100 + 50 m measured with deviations (20, -30, 10, 0) at m = 1, 2, 4, 8, which no line
  // explains (they sum to zero and so do they times m): least squares finds the line itself.
  EXPECT_EQ(overheadLine({{1, 170}, {2, 170}, {4, 310}, {8, 500}}),
            (std::map<std::int64_t, TimeNs>{{1, 150}, {2, 200}, {4, 300}, {8, 500}}));
  // Two chunk counts: the points themselves; one: its own; never negative.
  EXPECT_EQ(overheadLine({{2, 30}, {4, 10}}), (std::map<std::int64_t, TimeNs>{{2, 30}, {4, 10}}));
  EXPECT_EQ(overheadLine({{4, 70}}), (std::map<std::int64_t, TimeNs>{{4, 70}}));
  EXPECT_EQ(overheadLine({{1, -100}, {2, 100}}), (std::map<std::int64_t, TimeNs>{{1, 0}, {2, 100}}));
  EXPECT_TRUE(overheadLine({}).empty());
}

TEST(CalibrationFit, AnInterleavedReferenceTimesEachDeviceOverItsStages) {
  // Four layers of the two-layer profile's costs, interleaved v2 over 2 devices: stages 0 and 2
  // on device 0, 1 and 3 on device 1. Chunks 2 of batch 4 (micro-batches of 2, 2 ns forward and
  // 4 backward per layer as profiled). Device 0's stages take the profile's time, device 1's
  // three times it: the whole model is x2 (16 and 32 against 8 and 16), so each layer is
  // calibrated to 4 + 8 and device 0 (6 of 12 predicted per micro-batch) gets speed 2, device 1
  // (18 of 12) 2/3.
  const Profile profile = fourLayerProfile();
  const Candidate candidate = referenceCandidate(4, 2, 2, 4, ScheduleKind::Interleaved, 2);
  EXPECT_EQ(candidate.balance, (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(candidate.stagesPerDevice, 2);
  ReferenceRun run;
  run.candidate = candidate;
  run.trace.events.push_back(span(Phase::Step, 0, 1000));
  for (std::int64_t i = 0; i < 2; ++i) {
    for (std::int64_t j = 0; j < 4; ++j) {
      const TimeNs factor = j % 2 == 0 ? 1 : 3;
      run.trace.events.push_back(span(Phase::Forward, 1, 2 * factor, i, j));
      run.trace.events.push_back(span(Phase::Backward, 2, 4 * factor, i, j));
    }
  }
  const Calibration calibration = calibrationFromRuns(profile, twoCpus(), {run});
  EXPECT_DOUBLE_EQ(calibration.scales.at(2).forward, 2.0);
  EXPECT_DOUBLE_EQ(calibration.scales.at(2).backward, 2.0);
  ASSERT_EQ(calibration.deviceSpeeds.size(), 2U);
  EXPECT_DOUBLE_EQ(calibration.deviceSpeeds[0], 2.0);
  EXPECT_DOUBLE_EQ(calibration.deviceSpeeds[1], 2.0 / 3.0);
  EXPECT_TRUE(calibration.byShape.empty());
  EXPECT_EQ(calibration.provenance.references.front().shape.schedule, "interleaved v2");
}

TEST(CalibrationFit, AZeroBubbleReferenceTimesIAndWAgainstTheirOwnProfiledHalves) {
  // zb1p over the two layers (one per device), chunks 2 of batch 4: micro-batches of 2, each
  // layer profiled at 2 ns forward and 4 backward, split 2 + 2. Device 0 runs at the profile's
  // speed; device 1's spans take twice as long. An I span is worth the profile's I, not its B.
  Profile profile = twoLayerProfile();
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) cost.backwardSplit = BackwardSplit{cost.microBatch, cost.microBatch, 0};
  }
  const Candidate candidate = referenceCandidate(2, 2, 2, 4, ScheduleKind::ZeroBubble, 1);
  ReferenceRun run;
  run.candidate = candidate;
  run.trace.events.push_back(span(Phase::Step, 0, 1000));
  for (std::int64_t i = 0; i < 2; ++i) {
    for (std::int64_t j = 0; j < 2; ++j) {
      const TimeNs factor = j == 0 ? 1 : 2;
      run.trace.events.push_back(span(Phase::Forward, 1, 2 * factor, i, j));
      TraceEvent input = span(Phase::Backward, 2, 2 * factor, i, j);
      input.name = "backward-input(" + std::to_string(i) + "," + std::to_string(j) + ")";
      TraceEvent weight = span(Phase::Backward, 3, 2 * factor, i, j);
      weight.name = "backward-weight(" + std::to_string(i) + "," + std::to_string(j) + ")";
      run.trace.events.push_back(input);
      run.trace.events.push_back(weight);
    }
  }
  const Calibration calibration = calibrationFromRuns(profile, twoCpus(), {run});
  const ScheduleCorrections& zb = calibration;
  // The whole model (both devices) took 1.5x the profile: forward 6 of 4, backward 12 of 8.
  EXPECT_DOUBLE_EQ(zb.scales.at(2).forward, 1.5);
  EXPECT_DOUBLE_EQ(zb.scales.at(2).backward, 1.5);
  ASSERT_EQ(zb.deviceSpeeds.size(), 2U);
  EXPECT_DOUBLE_EQ(zb.deviceSpeeds[0], 1.5);
  EXPECT_DOUBLE_EQ(zb.deviceSpeeds[1], 0.75);
}

/// A reference run whose trace is the simulator's own step of `candidate` on `profile`, in one
/// step span: what a pipeline running exactly as predicted would measure.
ReferenceRun simulatedRun(const Profile& profile, const Candidate& candidate) {
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result = simulate(profile, twoCpus(), candidate, options);
  ReferenceRun run;
  run.candidate = candidate;
  run.trace = result.trace;
  run.trace.events.push_back(span(Phase::Step, 0, result.prediction.iterationNs));
  return run;
}

TEST(CalibrationFit, AnOpAfterAnotherStagesOpOnItsDeviceGetsTheStageSwitchScale) {
  // Interleaved v2 over two devices, a layer a stage, chunks 4 of batch 8 (micro-batches of 2),
  // as the simulator runs it where every op after another stage's op on its device takes 1.25x:
  // the fit finds that scale and leaves the layers' at 1; GPipe alone switches no stage. (The
  // layers' times x1000, so that rounding to whole nanoseconds moves no ratio.)
  const Profile profile = fourLayerProfileInMicroseconds();
  Profile truth = profile;
  truth.stageSwitchScales[2] = 1.25;
  const ReferenceRun interleaved = simulatedRun(truth, referenceCandidate(4, 2, 4, 8, ScheduleKind::Interleaved, 2));
  const ReferenceRun gpipe = simulatedRun(truth, referenceCandidate(4, 2, 4, 8));
  const Calibration calibration = calibrationFromRuns(profile, twoCpus(), {gpipe, interleaved});
  ASSERT_EQ(calibration.scales.count(2), 1U);
  EXPECT_NEAR(calibration.scales.at(2).afterStageSwitch, 1.25, 0.01);
  EXPECT_NEAR(calibration.scales.at(2).forward, 1.0, 0.01);
  EXPECT_NEAR(calibration.scales.at(2).backward, 1.0, 0.01);
  EXPECT_NEAR(calibration.deviceSpeeds.at(0), 1.0, 0.01);
  EXPECT_NEAR(calibration.deviceSpeeds.at(1), 1.0, 0.01);
  const Profile calibrated = calibratedProfile(profile, calibration);
  EXPECT_NEAR(static_cast<double>(simulate(calibrated, twoCpus(), interleaved.candidate).prediction.iterationNs),
              static_cast<double>(simulate(truth, twoCpus(), interleaved.candidate).prediction.iterationNs),
              0.02 * static_cast<double>(simulate(truth, twoCpus(), interleaved.candidate).prediction.iterationNs));
  EXPECT_EQ(calibrationFromRuns(profile, twoCpus(), {gpipe}).scales.at(2).afterStageSwitch, 1.0);
}

TEST(CalibrationFit, AnOpAfterAnotherStagesOpIsSetAgainstTheOpsOfADeviceHoldingOneStage) {
  // Interleaved v2 as the simulator runs it where every layer takes 1.2x -- the ops after their
  // own stage's too, as where a device's caches hold two stages' weights whatever ran last --
  // and GPipe at the profile's time: set against the interleaved run's own other ops, an op
  // after another stage's would read 1.0; against GPipe's, which switch no stage, it reads 1.2.
  const Profile profile = fourLayerProfileInMicroseconds();
  Profile slower = profile;
  for (LayerProfile& layer : slower.layers) {
    for (CostSample& cost : layer.costs) {
      cost.forwardNs = cost.forwardNs * 6 / 5;
      cost.backwardNs = cost.backwardNs * 6 / 5;
    }
  }
  const ReferenceRun interleaved = simulatedRun(slower, referenceCandidate(4, 2, 4, 8, ScheduleKind::Interleaved, 2));
  const ReferenceRun gpipe = simulatedRun(profile, referenceCandidate(4, 2, 4, 8));
  EXPECT_NEAR(calibrationFromRuns(profile, twoCpus(), {gpipe, interleaved}).scales.at(2).afterStageSwitch, 1.2, 0.01);
  // Without a reference of one stage per device, the run's own ops are what it is set against.
  EXPECT_NEAR(calibrationFromRuns(profile, twoCpus(), {interleaved}).scales.at(2).afterStageSwitch, 1.0, 0.01);
}

TEST(CalibrationFit, AStagesFirstOpOfAKindInTheStepGetsTheFirstInStepScale) {
  // GPipe and 1F1B, a layer a stage on two devices, and interleaved v2, chunks 4 of batch 8, as
  // the simulator runs them where each stage's first op of a kind in the step takes 1.2x and,
  // interleaved, an op after another stage's 1.1x: the fit finds both scales and leaves the
  // layers' at 1, and predicts the truth's steps.
  const Profile profile = fourLayerProfileInMicroseconds();
  Profile truth = profile;
  truth.firstInStepScales[2] = 1.2;
  truth.stageSwitchScales[2] = 1.1;
  const ReferenceRun gpipe = simulatedRun(truth, referenceCandidate(4, 2, 4, 8));
  const ReferenceRun oneFOneB = simulatedRun(truth, referenceCandidate(4, 2, 4, 8, ScheduleKind::OneFOneB));
  const ReferenceRun interleaved = simulatedRun(truth, referenceCandidate(4, 2, 4, 8, ScheduleKind::Interleaved, 2));
  const Calibration calibration = calibrationFromRuns(profile, twoCpus(), {gpipe, oneFOneB, interleaved});
  ASSERT_EQ(calibration.scales.count(2), 1U);
  EXPECT_NEAR(calibration.scales.at(2).firstInStep, 1.2, 0.01);
  EXPECT_NEAR(calibration.scales.at(2).afterStageSwitch, 1.1, 0.01);
  EXPECT_NEAR(calibration.scales.at(2).forward, 1.0, 0.01);
  EXPECT_NEAR(calibration.scales.at(2).backward, 1.0, 0.01);
  const Profile calibrated = calibratedProfile(profile, calibration);
  for (const ReferenceRun* run : {&gpipe, &interleaved}) {
    const auto truthNs = static_cast<double>(simulate(truth, twoCpus(), run->candidate).prediction.iterationNs);
    EXPECT_NEAR(static_cast<double>(simulate(calibrated, twoCpus(), run->candidate).prediction.iterationNs), truthNs,
                0.02 * truthNs);
  }
  // Where every op runs alike the scale stays 1.
  EXPECT_EQ(calibrationFromRuns(profile, twoCpus(), {simulatedRun(profile, gpipe.candidate)}).scales.at(2).firstInStep,
            1.0);
}

TEST(CalibrationFit, ReferencePipelinesSplitEvenlyOverEveryDevice) {
  EXPECT_EQ(evenBalance(7, 3), (std::vector<std::int64_t>{3, 2, 2}));
  const Candidate reference = referenceCandidate(2, 4, 8, 64);  // more devices than layers
  EXPECT_EQ(reference.balance, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(reference.checkpoint, Checkpoint::Never);
  EXPECT_EQ(reference.schedule, ScheduleKind::GPipe);
  EXPECT_EQ(reference.chunks, 8);
  EXPECT_EQ(reference.batch, 64);
  const Candidate interleaved = referenceCandidate(15, 2, 4, 64, ScheduleKind::Interleaved, 2);
  EXPECT_EQ(interleaved.balance, (std::vector<std::int64_t>{4, 4, 4, 3}));
  EXPECT_EQ(interleaved.stagesPerDevice, 2);
  EXPECT_EQ(interleaved.scheduleLabel(), "interleaved v2");
  const Candidate oneFOneB = referenceCandidate(15, 2, 4, 64, ScheduleKind::OneFOneB, 2,  // v is interleaved's
                                                Checkpoint::ExceptLast);
  EXPECT_EQ(oneFOneB.balance, (std::vector<std::int64_t>{8, 7}));
  EXPECT_EQ(oneFOneB.stagesPerDevice, 1);
  EXPECT_EQ(oneFOneB.checkpoint, Checkpoint::ExceptLast);
}

/// Chunks 1 of batch 8 over [1,1], one step of 100 ns in which stage j's forward takes
/// forwardNs[j] and its backward twice that.
ReferenceRun twoStagesOneStep(std::array<TimeNs, 2> forwardNs) {
  ReferenceRun run = reference({1, 1}, 1, 8);
  run.trace.events.push_back(span(Phase::Step, 0, 100));
  run.trace.events.push_back(span(Phase::Forward, 1, forwardNs[0], 0, 0));
  run.trace.events.push_back(span(Phase::Forward, 1, forwardNs[1], 0, 1));
  run.trace.events.push_back(span(Phase::Backward, 2, 2 * forwardNs[1], 0, 1));
  run.trace.events.push_back(span(Phase::Backward, 2, 2 * forwardNs[0], 0, 0));
  return run;
}

/// Stage 1 takes twice stage 0's time: forwards 8 and 16, backwards 16 and 32.
ReferenceRun unevenStages() { return twoStagesOneStep({8, 16}); }

TEST(CalibrationFit, StagesThatRunSlowerThanTheAverageGetTheirOwnDeviceSpeed) {
  // Whole model: forward 24 against 16 profiled, backward 48 against 32 (x1.5 both), so each
  // layer is calibrated to 12 + 24 = 36; stage 0 measured 24 (speed 1.5), stage 1 48
  // (speed 0.75). At those speeds the (sequential) step is 8 + 16 + 32 + 16 = 72 of the
  // measured 100.
  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(), {unevenStages()});
  EXPECT_EQ(calibration.deviceSpeeds, (std::vector<double>{1.5, 0.75}));
  EXPECT_EQ(calibration.stepOverheadNs.at(1), 28);
  const Cluster cluster = calibratedCluster(twoCpus(), calibration);
  EXPECT_EQ(cluster.devices[0].relativeSpeed, 1.5);
  EXPECT_EQ(cluster.devices[1].relativeSpeed, 0.75);
}

TEST(CalibrationFit, RunsThatAgreeOnTheDevicesSplitKeepItWhole) {
  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(), {unevenStages(), unevenStages()});
  EXPECT_EQ(calibration.deviceSpeeds, (std::vector<double>{1.5, 0.75}));
}

TEST(CalibrationFit, ASplitOfTheDevicesTheRunsDisagreeOnIsDrawnTowardTheirMean) {
  // unevenStages (device 0's layer 24 of 36 calibrated, device 1's 48) and a run whose whole
  // model took the same but split 30 and 42: the layers keep their x1.5 scale, and the pooled
  // speeds 72/54 and 72/90 split log(4/3) and log(0.8) about their mean by +-0.2554, where the
  // runs split +-0.3466 and +-0.1682.
  const Calibration calibration =
      calibrationFromRuns(twoLayerProfile(), twoCpus(), {unevenStages(), twoStagesOneStep({10, 14})});
  EXPECT_DOUBLE_EQ(calibration.scales.at(8).forward, 1.5);

  const double mean = (std::log(72.0 / 54.0) + std::log(72.0 / 90.0)) / 2;
  const double split = std::log(72.0 / 54.0) - mean;
  const std::array<double, 2> runSplits{(std::log(1.5) - std::log(0.75)) / 2,
                                        (std::log(36.0 / 30.0) - std::log(36.0 / 42.0)) / 2};
  double variance = 0;  // each run's split about the pooled one: two devices' squares over (2 - 1) x 2
  for (double runSplit : runSplits) variance += std::pow(runSplit - split, 2);
  const double share = kDeviceSplitSd * kDeviceSplitSd / (kDeviceSplitSd * kDeviceSplitSd + variance);
  EXPECT_NEAR(share, 0.136, 0.001);
  ASSERT_EQ(calibration.deviceSpeeds.size(), 2U);
  EXPECT_NEAR(calibration.deviceSpeeds[0], std::exp(mean + share * split), 1e-12);
  EXPECT_NEAR(calibration.deviceSpeeds[1], std::exp(mean - share * split), 1e-12);
  // The devices' mean speed is the pooled one's.
  EXPECT_NEAR(calibration.deviceSpeeds[0] * calibration.deviceSpeeds[1], 72.0 / 54.0 * 72.0 / 90.0, 1e-12);
}

TEST(CalibrationFit, TheLossIsScaledByWhatItsOpsTookInThePipelineAtTheirDevicesSpeed) {
  // The GPipe reference of the first test (batch 8 over [1,1], chunks 2 of 4 samples; layers
  // x3 forward, x2.5 backward, both stages alike) with a loss profiled at 10 ns forward.
  // Its loss ops on stage 1 took 50, 70 and 60 ns: median 60, scale 6 -- past the layers'
  // clamp of 4. On device 1's critical path (F(0,1) loss(0) F(1,1) loss(1) B(1,1) B(0,1)) each
  // of the two losses now takes 50 ns more, so the step overhead fitted is 100 ns less.
  const Profile profile = withLoss(twoLayerProfile(), 10);
  auto run = [](std::vector<TimeNs> lossNs) {
    ReferenceRun two = reference({1, 1}, 2, 8);
    addStep(two.trace, 0, 1000, {4, 4}, 2, 3, 5);
    for (std::size_t k = 0; k < lossNs.size(); ++k) {
      two.trace.events.push_back(span(Phase::Loss, 3, lossNs[k], static_cast<std::int64_t>(k % 2), 1));
    }
    two.trace.events.push_back(span(Phase::Loss, 5000, 999, 0, 1));  // warm-up: outside every step
    return two;
  };
  const Calibration slow = calibrationFromRuns(profile, twoCpus(), {run({50, 70, 60})});
  EXPECT_DOUBLE_EQ(slow.scales.at(4).loss, 6.0);
  EXPECT_DOUBLE_EQ(slow.scales.at(4).forward, 3.0);  // the loss is no layer's
  const Calibration asProfiled = calibrationFromRuns(profile, twoCpus(), {run({10, 10})});
  EXPECT_DOUBLE_EQ(asProfiled.scales.at(4).loss, 1.0);
  EXPECT_EQ(asProfiled.stepOverheadNs.at(2) - slow.stepOverheadNs.at(2), 100);
  // Without loss spans, or without a profiled loss, the loss keeps its profiled time.
  EXPECT_DOUBLE_EQ(calibrationFromRuns(profile, twoCpus(), {run({})}).scales.at(4).loss, 1.0);
  EXPECT_DOUBLE_EQ(calibrationFromRuns(twoLayerProfile(), twoCpus(), {run({50})}).scales.at(4).loss, 1.0);

  // On a device of speed 0.75 the simulator stretches the loss by 1 / 0.75: the scale is what
  // the op took times that speed.
  ReferenceRun slower = unevenStages();
  slower.trace.events.push_back(span(Phase::Loss, 2, 40, 0, 1));
  const Calibration atSpeed = calibrationFromRuns(profile, twoCpus(), {slower});
  EXPECT_EQ(atSpeed.deviceSpeeds, (std::vector<double>{1.5, 0.75}));
  EXPECT_DOUBLE_EQ(atSpeed.scales.at(8).loss, 3.0);
}

TEST(CalibrationFit, AStepsFirstLossCostsTheColdStartMoreThanItsLaterOnes) {
  // Batch 16 over [1,1], chunks 4 of 4 samples, a loss profiled at 100 ns forward. In each step
  // the first loss op took 100 ns and the later ones 40, 45 and 35: cold start 100 - 40 = 60,
  // and the later calls plus it read 1.0 of the profile, as the first does.
  const Profile profile = withLoss(twoLayerProfile(), 100);
  auto run = [](std::int64_t steps, std::vector<TimeNs> lossNs, ScheduleKind schedule = ScheduleKind::GPipe) {
    ReferenceRun four = reference({1, 1}, 4, 16);
    four.candidate.schedule = schedule;
    for (std::int64_t s = 0; s < steps; ++s) {
      const TimeNs start = s * 10'000;
      addStep(four.trace, start, 5000, {4, 4, 4, 4}, 2, 3, 5);
      // Listed last first: a step's first call is its earliest.
      for (std::size_t k = lossNs.size(); k-- > 0;) {
        const TimeNs at = start + 10 + 100 * static_cast<TimeNs>(k);
        four.trace.events.push_back(span(Phase::Loss, at, lossNs[k], static_cast<std::int64_t>(k), 1));
      }
    }
    return four;
  };
  const Calibration fitted = calibrationFromRuns(profile, twoCpus(), {run(3, {100, 40, 45, 35})});
  const ReferenceShape gpipe{"gpipe", Checkpoint::Never};
  EXPECT_EQ(fitted.lossColdStartByShape, (std::map<ReferenceShape, TimeNs>{{gpipe, 60}}));
  EXPECT_EQ(fitted.lossColdStartNs, 60);  // a shape not timed: the median over the shapes'
  EXPECT_DOUBLE_EQ(fitted.scales.at(4).loss, 1.0);
  // Each shape its own: 1F1B's later calls found the loss colder (80: cold start 20), and its
  // later calls plus 20 read 1.0 as well. A shape timed neither way takes the median, 40.
  const Calibration shapes = calibrationFromRuns(
      profile, twoCpus(), {run(3, {100, 40, 45, 35}), run(3, {100, 80, 80, 80}, ScheduleKind::OneFOneB)});
  const ReferenceShape oneFOneB{"1f1b", Checkpoint::Never};
  EXPECT_EQ(shapes.lossColdStartByShape, (std::map<ReferenceShape, TimeNs>{{gpipe, 60}, {oneFOneB, 20}}));
  EXPECT_EQ(shapes.lossColdStartNs, 40);
  EXPECT_EQ(shapes.lossColdStartNsFor(oneFOneB), 20);
  EXPECT_EQ(shapes.lossColdStartNsFor({"zb1p", Checkpoint::Never}), 40);
  EXPECT_DOUBLE_EQ(shapes.scales.at(4).loss, 1.0);
  // Each call alike: no cold start, and no scale moved.
  const Calibration alike = calibrationFromRuns(profile, twoCpus(), {run(3, {70, 70, 70, 70})});
  EXPECT_EQ(alike.lossColdStartNs, 0);
  EXPECT_DOUBLE_EQ(alike.scales.at(4).loss, 0.7);
  // A first call faster than the later ones: never negative.
  EXPECT_EQ(calibrationFromRuns(profile, twoCpus(), {run(3, {40, 100, 100, 100})}).lossColdStartNs, 0);
  // Fewer than three steps with a later call, or a profile without a loss: not fitted.
  EXPECT_FALSE(calibrationFromRuns(profile, twoCpus(), {run(2, {100, 40, 45, 35})}).lossColdStartNs.has_value());
  EXPECT_FALSE(calibrationFromRuns(profile, twoCpus(), {run(3, {100})}).lossColdStartNs.has_value());
  EXPECT_FALSE(
      calibrationFromRuns(twoLayerProfile(), twoCpus(), {run(3, {100, 40, 45, 35})}).lossColdStartNs.has_value());
}

TEST(CalibrationFit, NoRunsCorrectNothing) {
  EXPECT_TRUE(calibrationFromRuns(twoLayerProfile(), twoCpus(), {}).empty());
}

TEST(CalibrationFit, OverheadIsNeverNegative) {
  ReferenceRun run = reference({1, 1}, 1, 8);
  addStep(run.trace, 0, 10, {8}, 2, 1, 1);  // a step shorter than its simulated compute
  EXPECT_EQ(calibrationFromRuns(twoLayerProfile(), twoCpus(), {run}).stepOverheadNs.at(1), 0);
}

TEST(CalibrationFit, ScalesAreClampedAndMissingDataKeepsOne) {
  ReferenceRun run = reference({1, 1}, 1, 8);
  addStep(run.trace, 0, 100000, {8}, 2, 100, 0);  // forward 1600 against 16 profiled; no backward time
  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), twoCpus(), {run});
  EXPECT_DOUBLE_EQ(calibration.scales.at(8).forward, 4.0);
  EXPECT_DOUBLE_EQ(calibration.scales.at(8).backward, 1.0);
}

/// A message of a multi-process run as the stage runtime traces it: a send span on the
/// sender's lane "send", a receive span on the receiver's lane "receive", a flow from the send's
/// start to the receive's end.
void addMessage(Trace& trace, std::int64_t id, int from, int to, TimeNs sendStartNs, TimeNs receiveStartNs,
                TimeNs receiveEndNs, Bytes bytes) {
  const std::string sender = "rank " + std::to_string(from);
  const std::string receiver = "rank " + std::to_string(to);
  TraceEvent send = span(Phase::Copy, sendStartNs, 30);
  send.device = sender;
  send.lane = "send";
  send.bytes = bytes;
  send.args["to_rank"] = std::to_string(to);
  TraceEvent receive = span(Phase::Copy, receiveStartNs, receiveEndNs - receiveStartNs);
  receive.device = receiver;
  receive.lane = "receive";
  receive.bytes = bytes;
  receive.args["from_rank"] = std::to_string(from);
  TraceEvent leaves;
  leaves.kind = EventKind::FlowStart;
  leaves.device = sender;
  leaves.lane = "send";
  leaves.startNs = sendStartNs;
  leaves.correlationId = id;
  TraceEvent lands = leaves;
  lands.kind = EventKind::FlowEnd;
  lands.device = receiver;
  lands.lane = "receive";
  lands.startNs = receiveEndNs;
  trace.events.insert(trace.events.end(), {send, receive, leaves, lands});
}

TEST(CalibrationFit, MessageLatencyIsTimedOnMessagesWhoseReceiverWasWaiting) {
  // Links of 10 us and 1 GB/s: 2000 bytes drain in 2 us. Rank 1's clock runs 5 us behind rank
  // 0's, so messages 0 -> 1 read 5 us short and 1 -> 0 5 us long; their medians (43, 53)
  // average to the true 48 us.
  ReferenceRun run = reference({1, 1}, 2, 8);
  addStep(run.trace, 0, 1'000'000, {4, 4}, 2, 3, 5);
  addMessage(run.trace, 1, 0, 1, 1'000, 900, 1'000 + 45'000, 2'000);          // 45 - 2 = 43
  addMessage(run.trace, 2, 0, 1, 100'000, 100'000, 100'000 + 40'000, 2'000);  // 38 (ends tie the wait)
  addMessage(run.trace, 3, 0, 1, 200'000, 150'000, 200'000 + 50'000, 2'000);  // 48
  addMessage(run.trace, 4, 1, 0, 300'000, 250'000, 300'000 + 55'000, 2'000);  // 53
  // The receiver came late: the data was waiting, the span says nothing of the message.
  addMessage(run.trace, 5, 1, 0, 400'000, 480'000, 480'003, 2'000);
  // Outside the timed step (warm-up): ignored.
  addMessage(run.trace, 6, 0, 1, 2'000'000, 1'900'000, 2'900'000, 2'000);
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 1e9, 10'000, "cpu");
  const Calibration calibration = calibrationFromRuns(twoLayerProfile(), cluster, {run});
  ASSERT_TRUE(calibration.messageLatencyNs.has_value());
  EXPECT_EQ(*calibration.messageLatencyNs, (43'000 + 53'000) / 2);
}

TEST(CalibrationFit, MessageLatencyNeedsThreeWaitingReceiversAndIsNeverNegative) {
  ReferenceRun few = reference({1, 1}, 2, 8);
  addStep(few.trace, 0, 1'000'000, {4, 4}, 2, 3, 5);
  addMessage(few.trace, 1, 0, 1, 1'000, 900, 50'000, 2'000);
  addMessage(few.trace, 2, 1, 0, 100'000, 90'000, 150'000, 2'000);
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 1e9, 10'000, "cpu");
  EXPECT_FALSE(calibrationFromRuns(twoLayerProfile(), cluster, {few}).messageLatencyNs.has_value());
  // A threaded run's trace has no messages at all.
  EXPECT_FALSE(calibrationFromRuns(twoLayerProfile(), twoCpus(), {reference({1, 1}, 2, 8)}).messageLatencyNs);

  // Messages faster than the link's drain time (a clock far off) give 0, not less.
  ReferenceRun fast = reference({1, 1}, 2, 8);
  addStep(fast.trace, 0, 1'000'000, {4, 4}, 2, 3, 5);
  for (int k = 0; k < 3; ++k) addMessage(fast.trace, k, 0, 1, 1'000 * (k + 1), 500, 1'000 * (k + 1) + 100, 2'000);
  EXPECT_EQ(calibrationFromRuns(twoLayerProfile(), cluster, {fast}).messageLatencyNs, 0);
}

TEST(CalibrationFit, TheFittedMessageLatencyEntersTheOverhead) {
  // Every layer's output is 1 byte, so each copy holds its link for the latency L (a link
  // without hosts moves one copy at a time). GPipe over [1,1] with 2 micro-batches (forward 12,
  // backward 20 per stage once calibrated) with L above 12: the second activation copy
  // waits for the first, the second gradient copy for the first, so the step is
  // 12 + 2L + 12 + 20 + 20 + 2L = 64 + 4L. The overhead is what the step measured beyond
  // that, so fitting L = 70 us instead of the link's 1 us takes 4 x 69 us off it.
  Profile profile = twoLayerProfile();
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) cost.outputBytes = 1;
  }
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, 1'000, "cpu");
  ReferenceRun plain = reference({1, 1}, 2, 8);
  addStep(plain.trace, 0, 1'000'000, {4, 4}, 2, 3, 5);
  ReferenceRun withMessages = plain;
  for (int k = 0; k < 4; ++k) {
    addMessage(withMessages.trace, k, k % 2, 1 - k % 2, 10'000 * k, 10'000 * k, 10'000 * k + 70'000, 1);
  }
  const Calibration unfitted = calibrationFromRuns(profile, cluster, {plain});
  const Calibration fitted = calibrationFromRuns(profile, cluster, {withMessages});
  ASSERT_EQ(fitted.messageLatencyNs, 70'000);
  EXPECT_EQ(unfitted.stepOverheadNs.at(2), 1'000'000 - (64 + 4 * 1'000));
  EXPECT_EQ(fitted.stepOverheadNs.at(2), 1'000'000 - (64 + 4 * 70'000));
}

TEST(CalibrationFit, TheWakeLatencyIsHowLateAnIdleWorkerStartedAndEntersTheOverhead) {
  // GPipe over [1,1], 2 micro-batches, traced by the simulator with workers that wake 7 us
  // after their data, two rounds: the fit reads the 7 us back from their four wake-ups (two
  // would be too few).
  const Profile profile = twoLayerProfile();
  Cluster slowToWake = twoCpus();
  slowToWake.wakeLatencyNs = 7'000;
  ReferenceRun run = reference({1, 1}, 2, 8);
  SimulationOptions options;
  options.recordTrace = true;
  run.trace = simulate(profile, slowToWake, run.candidate, options).trace;
  const TimeNs predictedNs = simulate(profile, twoCpus(), run.candidate).prediction.iterationNs;
  EXPECT_EQ(calibrationFromRuns(profile, twoCpus(), {run, run}).wakeLatencyNs, 7'000);
  EXPECT_FALSE(calibrationFromRuns(profile, twoCpus(), {run}).wakeLatencyNs.has_value());
  // With one process per device a message's latency holds its receiver's wake-up.
  Cluster ranks = twoCpus();
  ranks.processPerDevice = true;
  EXPECT_FALSE(calibrationFromRuns(profile, ranks, {run, run}).wakeLatencyNs.has_value());
  // Spans the schedule does not name give no wake-up.
  EXPECT_FALSE(calibrationFromRuns(profile, twoCpus(), {reference({1, 1}, 2, 8)}).wakeLatencyNs.has_value());

  // A step of the same reference 1 ms long: the overhead is what it took beyond the simulated
  // step with both wake-ups in it.
  run.trace.events.push_back(span(Phase::Step, 0, 1'000'000));
  EXPECT_EQ(calibrationFromRuns(profile, twoCpus(), {run, run}).stepOverheadNs.at(2),
            1'000'000 - predictedNs - 2 * 7'000);
}

}  // namespace
}  // namespace pipeprof::test_calibration_fit
