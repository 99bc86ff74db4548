// Tests of tuner/sweep: a whole sweep through a fake measurer -- one prediction, the drift, the report.
#include <pipeprof/tuner/sweep.h>

#include <pipeprof/simulator/predictor.h>
#include <pipeprof/tuner/reference_calibration.h>
#include <pipeprof/tuner/sweep_predictions.h>

#include "four_layer_profile.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

using test::fourLayerProfile;

Calibration calibration() {
  Calibration result;
  result.scales[4] = {1.25, 1.5};
  result.deviceSpeeds = {1.0, 0.8};
  result.stepOverheadNs = {{1, 2000}, {4, 5000}};
  return result;
}

/// Measures every candidate at `slowdown` x its calibrated prediction (so the references' ratio is
/// `slowdown` and the drift factor its square root), and records what it was asked to run.
class FakeMeasurer : public CandidateMeasurer {
 public:
  FakeMeasurer(Predictor predictor, double slowdown) : predictor_(std::move(predictor)), slowdown_(slowdown) {}

  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override {
    requests.push_back(candidate);
    const Prediction predicted = predictor_.predict(candidate).prediction;
    MeasuredRun run;
    const auto stepNs = static_cast<TimeNs>(std::llround(static_cast<double>(predicted.iterationNs) * slowdown_));
    run.measurement.addRound(std::vector<TimeNs>(static_cast<std::size_t>(request.steps), stepNs), predicted.peakBytes,
                             candidate.batch);
    if (request.traced) run.trace.metadata["source"] = "fake";
    return run;
  }

  std::vector<Candidate> requests;

 private:
  Predictor predictor_;
  double slowdown_;
};

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pipeprof_tuner_sweep_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    config_.model.name = "fake";
    config_.model.threads = 1;
    config_.devices = {DeviceDesc{}, DeviceDesc{}};
    config_.batch = 8;
    config_.chunks = {1, 4};
    config_.modes = {Checkpoint::Never, Checkpoint::Always};
    config_.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
    config_.measure.count = 4;
    config_.warmupSteps = 1;
    config_.steps = 2;
    config_.rounds = 2;
    config_.reportPath = (dir_ / "report.json").string();
    config_.tracesDir = (dir_ / "traces").string();
    config_.calibrationPath = "given.json";
    inputs_.cachedProfile = fourLayerProfile();
    inputs_.calibration = calibration();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  SweepConfig config_;
  SweepInputs inputs_;
};

TEST_F(SweepTest, EveryPredictionIsThePredictorsAndTheDriftIsKeptApart) {
  const Predictor predictor(fourLayerProfile(), sweepCluster(config_.devices, std::nullopt), calibration());
  FakeMeasurer measurer(predictor, 1.44);
  SilentProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());

  ASSERT_TRUE(report.complete);
  std::int64_t measured = 0;
  for (const CandidateResult& result : report.candidates) {
    ASSERT_TRUE(result.predictionBeforeDrift) << result.candidate.label();
    EXPECT_EQ(result.predictionBeforeDrift->iterationNs, predictor.predict(result.candidate).prediction.iterationNs)
        << result.candidate.label();
    EXPECT_NEAR(static_cast<double>(result.prediction.iterationNs),
                1.2 * static_cast<double>(result.predictionBeforeDrift->iterationNs), 1.0);
    if (result.status != CandidateStatus::Measured) continue;
    ++measured;
    EXPECT_EQ(result.measurement->stepNs.size(), 2U);                           // two rounds of one step each
    EXPECT_NEAR(*result.stepTimeErrorPct(), 100.0 * 1.2 / 1.44 - 100.0, 0.01);  // half the drift, in log terms
    EXPECT_NEAR(*result.stepTimeErrorBeforeDriftPct(), 100.0 / 1.44 - 100.0, 0.01);
  }
  EXPECT_EQ(measured, 4);
  // The references of the drift correction (chunks 1 and 4, an even balance, never) went
  // through the same measurer, once per round each.
  std::int64_t references = 0;
  for (const Candidate& candidate : measurer.requests) {
    references += candidate.balance == std::vector<std::int64_t>{2, 2} && candidate.checkpoint == Checkpoint::Never &&
                  candidate.schedule == ScheduleKind::GPipe;
  }
  EXPECT_GE(references, 4);
  EXPECT_NEAR(calibrationDriftFromJson(report.calibrationDrift).referenceRatio(), 1.44, 1e-6);
  EXPECT_NEAR(calibrationDriftFromJson(report.calibrationDrift).factor(), 1.2, 1e-6);
  // The report holds the raw profile and the calibration: predicting from them again gives
  // the same numbers (what simulate --calibration and the GUI do).
  const Report reread = readReport(config_.reportPath);
  const Predictor again(*reread.profile, *reread.cluster, reportCalibration(reread, config_.reportPath));
  for (const CandidateResult& result : reread.candidates) {
    EXPECT_EQ(again.predict(result.candidate).prediction.iterationNs, result.predictionBeforeDrift->iterationNs);
  }
}

TEST_F(SweepTest, StopsBetweenCandidatesWithTheReportOnDisk) {
  const Predictor predictor(fourLayerProfile(), sweepCluster(config_.devices, std::nullopt), calibration());
  FakeMeasurer measurer(predictor, 1.0);
  SilentProgress progress;
  StopSource stop;
  stop.requestStop();
  EXPECT_THROW(runSweep(config_, inputs_, measurer, progress, stop.token()), SweepInterrupted);
  const Report onDisk = readReport(config_.reportPath);
  EXPECT_FALSE(onDisk.complete);
  EXPECT_FALSE(onDisk.candidates.empty());
  EXPECT_TRUE(measurer.requests.empty());
}

}  // namespace
}  // namespace pipeprof::tuner
