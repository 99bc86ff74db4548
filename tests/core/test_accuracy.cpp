// Tests for accuracy.cpp: Spearman with ties and the report summary.
#include <pipeprof/core/accuracy.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pipeprof {
namespace {

TEST(Spearman, PerfectAndReversed) {
  EXPECT_DOUBLE_EQ(*spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(*spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(*spearman({1, 2, 3}, {1, 3, 2}), 0.5);
}

TEST(Spearman, TiesShareAverageRanks) {
  // a ranks 1.5 1.5 3 4, b ranks 1 2 3 4: Pearson of the ranks.
  double expected = 4.5 / std::sqrt(4.5 * 5.0);
  EXPECT_DOUBLE_EQ(*spearman({5, 5, 7, 9}, {1, 2, 3, 4}), expected);
}

TEST(Spearman, UndefinedCases) {
  EXPECT_FALSE(spearman({1}, {2}).has_value());
  EXPECT_FALSE(spearman({}, {}).has_value());
  EXPECT_FALSE(spearman({3, 3, 3}, {1, 2, 3}).has_value());
  EXPECT_FALSE(spearman({1, 2, 3}, {4, 4, 4}).has_value());
  EXPECT_FALSE(spearman({1, 2}, {1, 2, 3}).has_value());
}

CandidateResult measured(std::int64_t rank, TimeNs predictedNs, Bytes predictedPeak, TimeNs measuredNs,
                         Bytes measuredPeak, double samplesPerS) {
  CandidateResult result;
  result.candidate.balance = {1, 1};
  result.predictedRank = rank;
  result.prediction.iterationNs = predictedNs;
  result.prediction.peakBytes = {predictedPeak, 1};
  result.status = CandidateStatus::Measured;
  Measurement measurement;
  measurement.stepNsMedian = measuredNs;
  measurement.peakBytes = {1, measuredPeak};
  measurement.samplesPerS = samplesPerS;
  result.measurement = measurement;
  return result;
}

TEST(SummarizeAccuracy, OverMeasuredCandidates) {
  Report report;
  report.candidates = {measured(1, 1100, 1000, 1000, 800, 80.0),   // +10 %, +25 %
                       measured(2, 1200, 500, 1500, 1000, 100.0),  // -20 %, -50 %
                       measured(3, 1300, 900, 1200, 900, 90.0)};   // +8.33 %, 0 %
  CandidateResult predictedOnly;
  predictedOnly.predictedRank = 4;
  report.candidates.push_back(predictedOnly);
  AccuracySummary summary = summarizeAccuracy(report);
  EXPECT_FALSE(summary.stepTimeMapeBeforeDriftPct.has_value());  // no candidate kept one
  report.candidates[0].predictionBeforeDrift = report.candidates[0].prediction;
  report.candidates[0].predictionBeforeDrift->iterationNs = 900;  // -10 %
  report.candidates[1].predictionBeforeDrift = report.candidates[1].prediction;
  report.candidates[1].predictionBeforeDrift->iterationNs = 1800;  // +20 %
  summary = summarizeAccuracy(report);
  EXPECT_DOUBLE_EQ(*summary.stepTimeMapeBeforeDriftPct, 15.0);
  EXPECT_EQ(summary.measuredCount, 3);
  EXPECT_DOUBLE_EQ(*summary.stepTimeMapePct, (10.0 + 20.0 + 100.0 / 12.0) / 3.0);
  EXPECT_NEAR(*summary.stepTimeBiasPct, (10.0 - 20.0 + 100.0 / 12.0) / 3.0, 1e-12);  // cancellation
  EXPECT_DOUBLE_EQ(*summary.peakBytesMapePct, (25.0 + 50.0 + 0.0) / 3.0);
  EXPECT_DOUBLE_EQ(*summary.spearman, 0.5);  // predicted ranks 1 2 3, measured 1 3 2
  EXPECT_DOUBLE_EQ(*summary.suggestionThroughputRatio, 0.8);
}

TEST(SummarizeAccuracy, SuggestionNotMeasuredFallsBackToBestRankedMeasured) {
  Report report;
  CandidateResult best;
  best.predictedRank = 1;
  report.candidates = {best, measured(3, 1000, 1, 1000, 1, 50.0), measured(2, 1000, 1, 1000, 1, 40.0),
                       measured(0, 1000, 1, 1000, 1, 100.0)};
  AccuracySummary summary = summarizeAccuracy(report);
  EXPECT_DOUBLE_EQ(*summary.suggestionThroughputRatio, 0.4);  // rank 2 measured 40 against best 100
  EXPECT_FALSE(summary.spearman.has_value());                 // predicted times all equal
}

// Device 1 predicted at 1000 bytes, 1200 with another device's frees late: a measured peak over
// the prediction (past kPeakOverTolerance) counts once per candidate, and again where it passes
// the late-frees peak too; a candidate without late-frees peaks (an older report) in neither.
TEST(SummarizeAccuracy, CountsThePeaksOverThePredictionAndOverItsLateFreesPeak) {
  Report report;
  for (const Bytes measuredPeak : {1000, 1004, 1100, 1300, 1300}) {
    CandidateResult result = measured(1, 1000, 1, 1000, measuredPeak, 1.0);
    result.prediction.peakBytes = {1, 1000};
    result.prediction.latePeakBytes = {1, 1200};
    report.candidates.push_back(result);
  }
  report.candidates.back().prediction.latePeakBytes.clear();
  const AccuracySummary summary = summarizeAccuracy(report);
  EXPECT_EQ(summary.latePeakCandidates, 4);
  EXPECT_EQ(summary.peaksOverPrediction, 2);  // 1100 and 1300; 1004 within 0.5 %
  EXPECT_EQ(summary.peaksOverLatePeak, 1);
}

TEST(SummarizeAccuracy, NothingMeasured) {
  Report report;
  report.candidates.resize(2);
  AccuracySummary summary = summarizeAccuracy(report);
  EXPECT_EQ(summary.measuredCount, 0);
  EXPECT_FALSE(summary.stepTimeMapePct.has_value());
  EXPECT_FALSE(summary.stepTimeBiasPct.has_value());
  EXPECT_FALSE(summary.peakBytesMapePct.has_value());
  EXPECT_FALSE(summary.spearman.has_value());
  EXPECT_FALSE(summary.suggestionThroughputRatio.has_value());
}

}  // namespace
}  // namespace pipeprof
