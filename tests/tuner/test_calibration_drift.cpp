// Tests of tuner/calibration_drift: how much slower or faster the reference pipelines ran while the
// candidates were measured than while the machine was calibrated, and the one factor (the share
// of it their agreement earns) the sweep scales every predicted time by; and how fast the machine
// ran at each moment, which each measured candidate's own factor takes from its rounds.
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

/// One step of `1e6 * exp(logRatio)` ns: a run whose middle is `startS` + 0.5 ms.
std::vector<TimeNs> stepAt(double logRatio) { return {static_cast<TimeNs>(std::llround(1e6 * std::exp(logRatio)))}; }

TEST(CalibrationDrift, KnowsNothingOfAMomentWithoutTwoTimedRuns) {
  CalibrationDrift drift;
  drift.predictedNs[1] = 1000000;
  EXPECT_DOUBLE_EQ(drift.localRatioAt(0.0), 1.0);
  drift.add(1, 0.0, stepAt(0.3));
  EXPECT_DOUBLE_EQ(drift.localRatioAt(0.0), 1.0);
  drift.add(2, 1.0, stepAt(0.3));  // no prediction for 2 chunks
  EXPECT_DOUBLE_EQ(drift.localRatioAt(0.0), 1.0);
}

// Two runs of one chunk count, 20 s apart, at log ratios +d and -d (their mean 0): at the first
// run's moment its weight is 1, the other's exp(-(20 / 10)^2 / 2).
TEST(CalibrationDrift, TheMachinesSpeedAtAMomentIsTheNearbyRunsDeviationWeightedByTime) {
  CalibrationDrift drift;
  drift.predictedNs[1] = 1000000;
  const double d = 0.1;
  drift.add(1, 0.0, stepAt(d));
  drift.add(1, 20.0, stepAt(-d));
  const double far = std::exp(-0.5 * 4.0);
  EXPECT_NEAR(std::log(drift.localRatioAt(0.0005)), (d - far * d) / (1.0 + far), 1e-6);
  EXPECT_NEAR(std::log(drift.localRatioAt(20.0005)), (far * d - d) / (1.0 + far), 1e-6);
  EXPECT_NEAR(drift.localRatioAt(10.0005), 1.0, 1e-6) << "halfway: the two weigh alike";
  EXPECT_DOUBLE_EQ(drift.localRatioAt(1e6), 1.0) << "far from every run";
}

// A reference predicted 10% long ran 0.9x its prediction all along, another 1.1x: that is each
// one's own error, not the machine's speed at any moment.
TEST(CalibrationDrift, EachReferencesOwnOffsetIsNotAMomentsSpeed) {
  CalibrationDrift drift;
  drift.predictedNs = {{1, 1000000}, {2, 1000000}};
  for (int k = 0; k < 6; ++k) drift.add(k % 2 == 0 ? 1 : 2, 5.0 * k, stepAt(k % 2 == 0 ? -0.1 : 0.1));
  for (double at : {0.0, 7.0, 12.5, 25.0}) EXPECT_NEAR(drift.localRatioAt(at), 1.0, 1e-9) << at;
}

// References every 5 s over 100 s, 25% slow (in log terms) from 40 s to 60 s: a candidate
// measured in that spell takes more of it than one measured before it, and the sweep's factor
// stays the one for candidates not measured.
TEST(CalibrationDrift, AMeasuredCandidatesFactorIsTheMachinesSpeedDuringItsRounds) {
  CalibrationDrift drift;
  drift.predictedNs = {{1, 1000000}, {4, 1000000}};
  for (int k = 0; k <= 20; ++k) {
    const double at = 5.0 * k;
    drift.add(k % 2 == 0 ? 1 : 4, at, stepAt(at >= 40.0 && at <= 60.0 ? 0.25 : 0.0));
  }
  Measurement slow;
  slow.addRound({1000000, 1000000}, {}, 1, 45.0);
  slow.addRound({1000000}, {}, 1, 52.0);
  Measurement early;
  early.addRound({1000000, 1000000}, {}, 1, 5.0);
  EXPECT_GT(drift.localRatioAt(50.0), 1.1);
  EXPECT_LT(drift.localRatioAt(5.0), 0.99);
  // The rounds' middles (45.001 s, 52.0005 s), weighted by their steps.
  const double local =
      std::exp((2.0 * std::log(drift.localRatioAt(45.001)) + std::log(drift.localRatioAt(52.0005))) / 3.0);
  ASSERT_TRUE(drift.localRatioWhile(slow).has_value());
  EXPECT_NEAR(*drift.localRatioWhile(slow), local, 1e-9);
  EXPECT_NEAR(drift.factorFor(slow), std::pow(drift.referenceRatio() * local, drift.share()), 1e-9);
  EXPECT_GT(drift.factorFor(slow), drift.factor());
  EXPECT_LT(drift.factorFor(early), drift.factor());
  // Rounds whose moments were not recorded (an older report) take the sweep's factor.
  Measurement unrecorded;
  unrecorded.stepNs = {1000000};
  EXPECT_FALSE(drift.localRatioWhile(unrecorded).has_value());
  EXPECT_DOUBLE_EQ(drift.factorFor(unrecorded), drift.factor());
  CandidateResult predictedOnly;
  EXPECT_DOUBLE_EQ(driftFactorOf(predictedOnly, drift), drift.factor());
  CandidateResult measured;
  measured.measurement = slow;
  EXPECT_DOUBLE_EQ(driftFactorOf(measured, drift), drift.factorFor(slow));
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
