// Tests of AccuracyModel: rows by predicted throughput, measured values, summary.
#include "models/accuracy_model.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>

namespace pipeprof::gui {
namespace {

TEST(AccuracyModel, OrdersByPredictedThroughputAndKeepsMissingValuesInvalid) {
  AccuracyModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const std::shared_ptr<const Report> report = test::sampleReport();
  model.setReport(report);
  ASSERT_EQ(model.rowCount(), test::kSampleCandidates);
  EXPECT_EQ(model.measuredCount(), 6);
  EXPECT_EQ(model.summary().measuredCount, 6);
  for (int row = 1; row < model.rowCount(); ++row) {
    EXPECT_GE(model.index(row - 1, AccuracyModel::PredictedThroughput).data().toDouble(),
              model.index(row, AccuracyModel::PredictedThroughput).data().toDouble());
  }
  EXPECT_EQ(model.index(0, 0).data(AccuracyModel::CandidateIndexRole).toULongLong(), test::kSampleSuggested);
  EXPECT_TRUE(model.index(0, 0).data(AccuracyModel::SuggestedRole).toBool());
  const CandidateResult& best = report->candidates[test::kSampleSuggested];
  EXPECT_DOUBLE_EQ(model.index(0, AccuracyModel::PredictedStepMs).data().toDouble(), best.prediction.iterationNs / 1e6);
  EXPECT_DOUBLE_EQ(model.index(0, AccuracyModel::MeasuredStepMs).data().toDouble(),
                   best.measurement->stepNsMedian / 1e6);
  EXPECT_DOUBLE_EQ(model.index(0, AccuracyModel::StepErrorPct).data().toDouble(), *best.stepTimeErrorPct());
  int invalid = 0;
  for (int row = 0; row < model.rowCount(); ++row)
    invalid += model.index(row, AccuracyModel::MeasuredStepMs).data().isValid() ? 0 : 1;
  EXPECT_EQ(invalid, 4);
  model.setReport(nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(AccuracyModel, SaysHowSteadyTheMachineWasWhileMeasuring) {
  MeasuringConditions conditions;
  EXPECT_TRUE(AccuracyModel::conditionsParts(conditions).isEmpty()) << "nothing measured, nothing to say";
  conditions.measuredCount = 12;
  conditions.roundsAgreeCount = 9;
  conditions.remeasuredRounds = 2;
  conditions.referenceRuns = 16;
  conditions.referenceRatioLow = 0.94;
  conditions.referenceRatioMedian = 1.1;
  conditions.referenceRatioHigh = 1.31;
  conditions.tiedWithBest = {3, 4};
  EXPECT_EQ(AccuracyModel::conditionsParts(conditions).join(QStringLiteral(" · ")),
            QStringLiteral("rounds agree on <b>9</b> of 12 · 2 round(s) measured again (the CPUs contended) · machine "
                           "speed while measuring <b>0.94–1.31×</b> the calibration's · the best measured is not told "
                           "apart from <b>2</b> other(s)"));
  conditions.candidateSlowdownLow = 0.95;
  conditions.candidateSlowdownHigh = 1.12;
  EXPECT_TRUE(AccuracyModel::conditionsParts(conditions)
                  .contains(QStringLiteral(
                      "the candidates' rounds at <b>0.95–1.12×</b> the measuring's average time, each predicted at its "
                      "own")));
  conditions.runOffCandidates = 4;
  conditions.runOffRounds = 3;
  EXPECT_TRUE(AccuracyModel::conditionsParts(conditions)
                  .contains(QStringLiteral("a run-off measured <b>4</b> candidates up to 3 more round(s) each")));
}

}  // namespace
}  // namespace pipeprof::gui
