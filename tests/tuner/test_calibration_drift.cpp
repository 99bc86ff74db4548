// Tests of tuner/calibration_drift: how much slower or faster the reference pipelines ran while the
// candidates were measured than while the machine was calibrated, and the one factor (the share
// of it their agreement earns) the sweep scales every predicted time by.
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

// Without two timed runs the references' noise is unknown: half of their drift, in log terms.
TEST(CalibrationDrift, ScalesByTheSquareRootOfTheRatioWhereItsNoiseIsUnknown) {
  CalibrationDrift drift;
  drift.predictedNs[1] = 100;
  drift.measuredNs[1] = {64};
  EXPECT_DOUBLE_EQ(drift.factor(), 0.8);
  drift.measuredNs[1] = {144};
  EXPECT_DOUBLE_EQ(drift.factor(), 1.2);
}

// References whose runs agree exactly: the machine moved, and the whole of it is corrected.
TEST(CalibrationDrift, TakesTheWholeRatioWhereTheReferencesRunsAgree) {
  CalibrationDrift drift;
  drift.predictedNs = {{1, 100}, {4, 400}};
  drift.add(1, 1.0, {120, 121, 119});
  drift.add(4, 2.0, {480});
  drift.add(1, 3.0, {119, 120, 122});
  drift.add(4, 4.0, {480, 470, 490});
  ASSERT_TRUE(drift.referenceNoise().has_value());
  EXPECT_DOUBLE_EQ(*drift.referenceNoise(), 0.0);
  EXPECT_DOUBLE_EQ(drift.share(), 1.0);
  EXPECT_DOUBLE_EQ(drift.factor(), 1.2);
}

// The closed form: two runs of one chunk count at log ratios +d and -d, two of another at 0.2.
TEST(CalibrationDrift, TakesLessOfTheRatioTheMoreTheReferencesScatter) {
  CalibrationDrift drift;
  drift.predictedNs = {{1, 1000000}, {2, 1000000}};
  const double d = 0.1;
  const auto at = [](double logRatio) { return static_cast<TimeNs>(std::llround(1e6 * std::exp(logRatio))); };
  drift.add(1, 0.0, {at(d)});
  drift.add(1, 1.0, {at(-d)});
  drift.add(2, 2.0, {at(0.2)});
  drift.add(2, 3.0, {at(0.2)});
  // Chunk count 1: mean 0, within-squares 2d^2; chunk count 2: mean 0.2, none. Within: 2d^2 / (4 - 2);
  // between: the variance of {0, 0.2} = 0.02; noise^2 = 0.02 / 2 + d^2 / 4.
  const double noise2 = 0.02 / 2.0 + d * d / 4.0;
  ASSERT_TRUE(drift.referenceNoise().has_value());
  EXPECT_NEAR(*drift.referenceNoise(), std::sqrt(noise2), 1e-6);
  const double prior = kMachineDriftSd * kMachineDriftSd;
  EXPECT_NEAR(drift.share(), prior / (prior + noise2), 1e-6);
  EXPECT_NEAR(drift.factor(), std::pow(drift.referenceRatio(), prior / (prior + noise2)), 1e-6);
  // More scatter within chunk count 1, less of the ratio taken.
  const double before = drift.share();
  drift.add(1, 4.0, {at(3 * d)});
  drift.add(1, 5.0, {at(-3 * d)});
  EXPECT_LT(drift.share(), before);
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
  EXPECT_TRUE(json.at("reference_noise").is_null());  // no timed runs
  EXPECT_DOUBLE_EQ(json.at("share").get<double>(), 0.5);
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
  EXPECT_NE(line.find("scaled by 0.959, 50% of that"), std::string::npos) << line;
  EXPECT_NE(line.find("too few reference runs"), std::string::npos) << line;
  drift.add(1, 0.0, {90});
  drift.add(1, 1.0, {90});
  const std::string agreeing = describeCalibrationDrift(drift);
  EXPECT_NE(agreeing.find("100% of that"), std::string::npos) << agreeing;
  EXPECT_NE(agreeing.find("uncertain by 0.0%"), std::string::npos) << agreeing;
}

}  // namespace
}  // namespace pipeprof::tuner
