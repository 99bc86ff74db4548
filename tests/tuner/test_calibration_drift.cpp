// Tests of tuner/calibration_drift: how much slower or faster the reference pipelines ran while the
// candidates were measured than while the machine was calibrated, and the one factor (its square
// root) the sweep scales every predicted time by.
#include <pipeprof/tuner/calibration_drift.h>

#include <gtest/gtest.h>

#include <cmath>

namespace pipeprof::tuner {
namespace {

TEST(CalibrationDrift, IsOneUntilAReferenceHasBothAPredictionAndATimedStep) {
  CalibrationDrift drift;
  EXPECT_DOUBLE_EQ(drift.factor(), 1.0);
  drift.predictedNs[2] = 100;
  EXPECT_DOUBLE_EQ(drift.factor(), 1.0);
  drift.measuredNs[4] = {50};  // no prediction for 4 chunks
  EXPECT_DOUBLE_EQ(drift.factor(), 1.0);
  drift.measuredNs[2] = {121};
  EXPECT_DOUBLE_EQ(drift.referenceRatio(), 1.21);
  EXPECT_DOUBLE_EQ(drift.factor(), 1.1);
}

TEST(CalibrationDrift, IsTheMedianOverChunkCountsOfEachReferencesMedianStepOverItsPrediction) {
  CalibrationDrift drift;
  drift.predictedNs = {{1, 100}, {2, 200}, {4, 400}};
  drift.measuredNs[1] = {90, 300, 80};       // median 90: 0.9 (the slow outlier step is ignored)
  drift.measuredNs[2] = {240, 220};          // median 230: 1.15
  drift.measuredNs[4] = {440, 400, 480, 1};  // median 420: 1.05
  EXPECT_DOUBLE_EQ(drift.referenceRatio(), 1.05);
  drift.measuredNs.erase(4);  // two ratios: their mean
  EXPECT_DOUBLE_EQ(drift.referenceRatio(), (0.9 + 1.15) / 2.0);
}

// Half of the references' drift, in log terms: a sweep's references sample other moments of the
// machine's wandering speed than its candidates, so their ratio is partly noise (scored over 64
// sweeps, bench/drift_shrinkage.py: a half beat the whole ratio and none).
TEST(CalibrationDrift, ScalesByTheSquareRootOfTheReferencesRatio) {
  CalibrationDrift drift;
  drift.predictedNs[1] = 100;
  drift.measuredNs[1] = {64};
  EXPECT_DOUBLE_EQ(drift.factor(), 0.8);
  drift.measuredNs[1] = {144};
  EXPECT_DOUBLE_EQ(drift.factor(), 1.2);
}

TEST(CalibrationDrift, ClampsTheRatioToHalfAndDouble) {
  CalibrationDrift drift;
  drift.predictedNs[1] = 100;
  drift.measuredNs[1] = {1000};
  EXPECT_DOUBLE_EQ(drift.referenceRatio(), 2.0);
  EXPECT_DOUBLE_EQ(drift.factor(), std::sqrt(2.0));
  drift.measuredNs[1] = {10};
  EXPECT_DOUBLE_EQ(drift.referenceRatio(), 0.5);
}

TEST(CalibrationDrift, ScalesEveryPredictedTimeButNotTheMemory) {
  Prediction base;
  base.iterationNs = 1000;
  base.busyNs = {400, 601};
  base.peakBytes = {1 << 20, 2 << 20};
  base.samplesPerS = 8e6;
  const Prediction drifted = driftedPrediction(base, 1.1, 8);
  EXPECT_EQ(drifted.iterationNs, 1100);
  EXPECT_EQ(drifted.busyNs, (std::vector<TimeNs>{440, 661}));
  EXPECT_EQ(drifted.peakBytes, base.peakBytes);
  EXPECT_DOUBLE_EQ(drifted.samplesPerS, 8.0 * 1e9 / 1100.0);
}

TEST(CalibrationDrift, RoundTripsThroughJson) {
  CalibrationDrift drift;
  drift.predictedNs = {{1, 100}, {2, 200}};
  drift.measuredNs[2] = {242, 220, 260};
  const nlohmann::json json = toJson(drift);
  EXPECT_DOUBLE_EQ(json.at("reference_ratio").get<double>(), 1.21);
  EXPECT_DOUBLE_EQ(json.at("factor").get<double>(), 1.1);
  ASSERT_EQ(json.at("references").size(), 2u);
  EXPECT_TRUE(json.at("references")[0].at("step_ns").empty());  // 1 chunk: predicted, never timed
  const CalibrationDrift read = calibrationDriftFromJson(json);
  EXPECT_EQ(read.predictedNs, drift.predictedNs);
  EXPECT_EQ(read.measuredNs, drift.measuredNs);
  EXPECT_DOUBLE_EQ(read.factor(), drift.factor());
  EXPECT_TRUE(calibrationDriftFromJson(nlohmann::json()).predictedNs.empty());
}

TEST(CalibrationDrift, DescribesTheFactorOnceStepsWereTimed) {
  CalibrationDrift drift;
  drift.predictedNs[1] = 100;
  EXPECT_NE(describeCalibrationDrift(drift).find("none measured"), std::string::npos);
  drift.measuredNs[1] = {90, 94};
  const std::string line = describeCalibrationDrift(drift);
  EXPECT_NE(line.find("0.920x"), std::string::npos) << line;
  EXPECT_NE(line.find("(2 steps)"), std::string::npos) << line;
  EXPECT_NE(line.find("scaled by 0.959"), std::string::npos) << line;
}

}  // namespace
}  // namespace pipeprof::tuner
