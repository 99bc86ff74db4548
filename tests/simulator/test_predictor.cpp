// Tests of simulator/predictor: the calibrated prediction is simulate() on calibrated inputs plus the step overhead.
#include <pipeprof/simulator/predictor.h>

#include <gtest/gtest.h>

namespace pipeprof::test_predictor {
namespace {

/// Four layers; at micro-batch b each takes 10b ns forward and 20b ns backward.
Profile fourLayerProfile() {
  Profile profile;
  for (const char* name : {"a", "b", "c", "d"}) {
    LayerProfile layer;
    layer.name = name;
    layer.paramBytes = 100;
    for (std::int64_t size : {2, 4, 8}) layer.costs.push_back({size, 10 * size, 20 * size, 8, 8, 0, 0});
    profile.layers.push_back(layer);
  }
  return profile;
}

/// fourLayerProfile with a loss of 100 ns forward at every size.
Profile fourLayerProfileWithLoss() {
  Profile profile = fourLayerProfile();
  for (std::int64_t size : {2, 4, 8}) {
    CostSample loss;
    loss.microBatch = size;
    loss.forwardNs = 100;
    profile.loss.costs.push_back(loss);
  }
  return profile;
}

Cluster twoCpus() { return Cluster::uniform(2, std::nullopt, 0.0, 0, "cpu"); }

Candidate candidate(std::vector<std::int64_t> balance, std::int64_t chunks,
                    ScheduleKind schedule = ScheduleKind::GPipe) {
  Candidate result;
  result.balance = std::move(balance);
  result.chunks = chunks;
  result.batch = 8;
  result.checkpoint = Checkpoint::Never;
  result.schedule = schedule;
  return result;
}

Calibration calibration() {
  Calibration result;
  result.scales[4] = {2.0, 1.5};
  result.deviceSpeeds = {1.0, 0.5};
  result.stepOverheadNs = {{1, 1000}, {2, 3000}};
  return result;
}

TEST(Predictor, WithoutACalibrationItIsTheSimulator) {
  const Predictor predictor(fourLayerProfile(), twoCpus());
  const Candidate c = candidate({2, 2}, 2);
  const SimulationResult predicted = predictor.predict(c);
  const SimulationResult simulated = simulate(fourLayerProfile(), twoCpus(), c);
  EXPECT_EQ(predicted.prediction.iterationNs, simulated.prediction.iterationNs);
  EXPECT_EQ(predicted.prediction.peakBytes, simulated.prediction.peakBytes);
}

TEST(Predictor, AppliesScalesSpeedsAndTheStepOverheadOfTheChunkCount) {
  // Chunks 2 of batch 8: micro-batches of 4, scaled to 80 ns forward and 120 ns backward per
  // layer; device 1 runs at half speed (320 and 480 per micro-batch for its two layers against
  // device 0's 160 and 240). GPipe's step: device 0 forwards (160) then device 1's two
  // forwards (640), device 1's two backwards (960) and then device 0's last (240) -- 2000 --
  // plus the overhead of chunks 2 (3000).
  const Predictor predictor(fourLayerProfile(), twoCpus(), calibration());
  const SimulationResult result = predictor.predict(candidate({2, 2}, 2));
  EXPECT_EQ(result.prediction.iterationNs, 2000 + 3000);
  EXPECT_DOUBLE_EQ(result.prediction.samplesPerS, 8 * 1e9 / 5000);
  EXPECT_EQ(predictor.cluster().devices[1].relativeSpeed, 0.5);
  EXPECT_EQ(predictor.profile().layers[0].costAt(4).forwardNs, 80);
  EXPECT_EQ(predictor.profile().layers[0].costAt(8).forwardNs, 80);  // 8 has no scale
}

TEST(Predictor, ATracedPredictionEndsWithTheStepOverhead) {
  const Predictor predictor(fourLayerProfile(), twoCpus(), calibration());
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result = predictor.predict(candidate({2, 2}, 2), options);
  ASSERT_FALSE(result.trace.events.empty());
  const TraceEvent& last = result.trace.events.back();
  EXPECT_EQ(last.name, "calibration (step overhead)");
  EXPECT_EQ(last.startNs, 2000);
  EXPECT_EQ(last.durationNs, 3000);
}

TEST(Predictor, AForwardOnlyStepPaysNoStepOverhead) {
  const Predictor predictor(fourLayerProfile(), twoCpus(), calibration());
  SimulationOptions options;
  options.training = false;
  const Candidate c = candidate({2, 2}, 2);
  EXPECT_EQ(predictor.predict(c, options).prediction.iterationNs,
            simulate(predictor.profile(), predictor.cluster(), c, options).prediction.iterationNs);
}

TEST(Predictor, SearchGivesEveryCandidateItsPredictionAndRanksWithTheOverhead) {
  // A large overhead at chunks 2 makes chunks 1 win although the pipeline alone is faster at 2.
  Calibration expensive = calibration();
  expensive.scales.clear();
  expensive.deviceSpeeds.clear();
  expensive.stepOverheadNs = {{1, 0}, {2, 100000}};
  const Predictor predictor(fourLayerProfile(), twoCpus(), expensive);
  SearchSpace space;
  space.batch = 8;
  space.devices = 2;
  space.chunks = {1, 2};
  space.modes = {Checkpoint::Never};
  space.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
  const SearchResult result = predictor.search(space);
  ASSERT_FALSE(result.ranked.empty());
  EXPECT_EQ(result.ranked.front().candidate.chunks, 1);
  for (const RankedCandidate& entry : result.ranked) {
    EXPECT_EQ(entry.prediction.iterationNs, predictor.predict(entry.candidate).prediction.iterationNs)
        << entry.candidate.label();
  }
  for (std::size_t k = 1; k < result.ranked.size(); ++k) {
    EXPECT_GE(result.ranked[k - 1].prediction.samplesPerS, result.ranked[k].prediction.samplesPerS);
  }
}

TEST(Predictor, AShapeWithCorrectionsOfItsOwnIsPredictedWithThem) {
  // 1F1B has its own: no scales, speeds 1, overhead 500 (the calibration's own: x2 forward,
  // device 1 at half speed, overhead 3000 at chunks 2); 1F1B always has overhead 50 000.
  // GPipe keeps the calibration's own.
  Calibration byShape = calibration();
  byShape.byShape[{"1f1b", Checkpoint::Never}].stepOverheadNs = {{2, 500}};
  byShape.byShape[{"1f1b", Checkpoint::Always}].stepOverheadNs = {{1, 50'000}};
  const Predictor predictor(fourLayerProfile(), twoCpus(), byShape);
  const Candidate oneFOneB = candidate({2, 2}, 2, ScheduleKind::OneFOneB);
  EXPECT_EQ(predictor.predict(oneFOneB).prediction.iterationNs,
            simulate(fourLayerProfile(), twoCpus(), oneFOneB).prediction.iterationNs + 500);
  EXPECT_EQ(predictor.predict(candidate({2, 2}, 2)).prediction.iterationNs, 2000 + 3000);
  Candidate always = oneFOneB;
  always.checkpoint = Checkpoint::Always;
  EXPECT_EQ(predictor.predict(always).prediction.iterationNs,
            simulate(fourLayerProfile(), twoCpus(), always).prediction.iterationNs + 50'000);

  SearchSpace space;
  space.batch = 8;
  space.devices = 2;
  space.chunks = {1, 2};
  space.modes = {Checkpoint::Never, Checkpoint::Always};
  space.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
  const SearchResult result = predictor.search(space);
  std::int64_t oneFOneBs = 0;
  for (const RankedCandidate& entry : result.ranked) {
    oneFOneBs += entry.candidate.schedule == ScheduleKind::OneFOneB;
    EXPECT_EQ(entry.prediction.iterationNs, predictor.predict(entry.candidate).prediction.iterationNs)
        << entry.candidate.label();
    EXPECT_EQ(entry.prediction.peakBytes, predictor.predict(entry.candidate).prediction.peakBytes)
        << entry.candidate.label();
  }
  EXPECT_GT(oneFOneBs, 0);
  // Unhandicapped, 1F1B without checkpoints ranks first.
  EXPECT_EQ(result.ranked.front().candidate.schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(result.ranked.front().candidate.checkpoint, Checkpoint::Never);
}

TEST(Predictor, EveryShapeIsPredictedWithItsCalibrationForShape) {
  // A hand-written calibration: GPipe and 1F1B without checkpoints have corrections of their own,
  // 1F1B without checkpoints a loss cold start too. 1F1B with checkpoints takes both of 1F1B
  // without; zb1p, which nothing corrects, the calibration's own (not GPipe's entry).
  Profile profile = fourLayerProfileWithLoss();
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) cost.backwardSplit = BackwardSplit{cost.backwardNs / 2, cost.backwardNs / 2};
  }
  Calibration handWritten = calibration();
  handWritten.lossColdStartNs = 60;
  handWritten.byShape[{"gpipe", Checkpoint::Never}].stepOverheadNs = {{1, 7000}};
  handWritten.byShape[{"1f1b", Checkpoint::Never}].stepOverheadNs = {{1, 500}};
  handWritten.lossColdStartByShape[{"1f1b", Checkpoint::Never}] = 30;
  EXPECT_EQ(handWritten.forShape({"1f1b", Checkpoint::Always}).lossColdStartNs, 30);
  EXPECT_EQ(handWritten.forShape({"zb1p", Checkpoint::Never}).stepOverheadNsFor(2), 3000);
  const Predictor predictor(profile, twoCpus(), handWritten);
  for (const ScheduleKind schedule : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubble}) {
    for (const Checkpoint mode : {Checkpoint::Never, Checkpoint::Always}) {
      Candidate one = candidate({2, 2}, 4, schedule);
      one.checkpoint = mode;
      const Calibration own = handWritten.forShape(ReferenceShape::of(one));
      const TimeNs simulatedNs =
          simulate(calibratedProfile(profile, own), calibratedCluster(twoCpus(), own), one).prediction.iterationNs;
      EXPECT_EQ(predictor.predict(one).prediction.iterationNs, simulatedNs + own.stepOverheadNsFor(4)) << one.label();
    }
  }
}

TEST(Predictor, AShapeWithALossColdStartOfItsOwnIsPredictedWithIt) {
  // A loss of 100 ns a call at every size and no other correction. 1F1B's later loss calls cost
  // 30 less, every other shape's the calibration's 60 less: one stage, 4 micro-batches of 2, so
  // the device runs every op in turn and the step is their sum (F 80 and B 160 per micro-batch).
  Profile profile = fourLayerProfileWithLoss();
  Calibration coldStarts;
  coldStarts.lossColdStartNs = 60;
  coldStarts.lossColdStartByShape[{"1f1b", Checkpoint::Never}] = 30;
  const Predictor predictor(profile, twoCpus(), coldStarts);
  auto step = [&](ScheduleKind schedule, Checkpoint mode) {
    Candidate one = candidate({4}, 4, schedule);
    one.checkpoint = mode;
    return predictor.predict(one).prediction.iterationNs;
  };
  EXPECT_EQ(step(ScheduleKind::OneFOneB, Checkpoint::Never), 4 * (80 + 160) + 100 + 3 * 70);
  EXPECT_EQ(step(ScheduleKind::GPipe, Checkpoint::Never), 4 * (80 + 160) + 100 + 3 * 40);
  // 1F1B with checkpoints has no cold start of its own: the calibration's; so does the search.
  EXPECT_EQ(step(ScheduleKind::OneFOneB, Checkpoint::Always), 4 * (80 + 80 + 160) + 100 + 3 * 40 + 4 * 40);
  SearchSpace space;
  space.batch = 8;
  space.devices = 1;
  space.chunks = {4};
  space.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
  for (const RankedCandidate& entry : predictor.search(space).ranked) {
    EXPECT_EQ(entry.prediction.iterationNs, predictor.predict(entry.candidate).prediction.iterationNs)
        << entry.candidate.label();
  }
}

}  // namespace
}  // namespace pipeprof::test_predictor
