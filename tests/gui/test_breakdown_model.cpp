// Tests of BreakdownModel: each device's step by category, measured then predicted.
#include "models/breakdown_model.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>

namespace pipeprof::gui {
namespace {

TEST(BreakdownModel, ShowsEachDevicesMeasuredAndPredictedStepByCategory) {
  BreakdownModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const std::shared_ptr<const Report> report = test::sampleReport();
  model.setCandidate(report, test::kSampleSuggested);
  const CandidateResult& result = report->candidates[test::kSampleSuggested];
  ASSERT_TRUE(result.measuredBreakdown && result.predictedBreakdown);
  ASSERT_EQ(model.rowCount(), 4);
  EXPECT_EQ(model.candidateLabel(), QStringLiteral("[5,3] x4 never"));
  EXPECT_EQ(model.index(0, BreakdownModel::Bar).data().toString(), QStringLiteral("device 0 · measured"));
  EXPECT_EQ(model.index(3, BreakdownModel::Bar).data().toString(), QStringLiteral("device 1 · predicted"));
  EXPECT_TRUE(model.measuredRow(2));
  EXPECT_FALSE(model.measuredRow(3));
  EXPECT_EQ(model.headerData(BreakdownModel::FirstCategory, Qt::Horizontal).toString(), QStringLiteral("forward"));
  for (int row = 0; row < model.rowCount(); ++row) {
    qlonglong sum = 0;
    for (int column = BreakdownModel::FirstCategory; column < BreakdownModel::Step; ++column) {
      sum += model.index(row, column).data(BreakdownModel::NsRole).toLongLong();
    }
    EXPECT_EQ(model.index(row, BreakdownModel::Step).data(BreakdownModel::NsRole).toLongLong(), sum) << row;
  }
  const DeviceStepBreakdown& measured = result.measuredBreakdown->devices[1];
  EXPECT_EQ(model.index(2, BreakdownModel::FirstCategory + static_cast<int>(StepCategory::Bubble))
                .data(BreakdownModel::NsRole)
                .toLongLong(),
            measured.at(StepCategory::Bubble));
  EXPECT_TRUE(model.used(StepCategory::Forward));
  EXPECT_FALSE(model.used(StepCategory::BackwardWeight));  // gpipe: no split backward
  EXPECT_EQ(model.maxStepNs(),
            std::max({result.measuredBreakdown->devices[0].stepNs(), measured.stepNs(),
                      result.predictedBreakdown->devices[0].stepNs(), result.predictedBreakdown->devices[1].stepNs()}));
}

TEST(BreakdownModel, ACandidateWithoutTracesHasNoRowsAndNulloptClears) {
  BreakdownModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const std::shared_ptr<const Report> report = test::sampleReport();
  model.setCandidate(report, 6);  // predicted only
  EXPECT_EQ(model.rowCount(), 0);
  EXPECT_FALSE(model.candidateLabel().isEmpty());
  model.setCandidate(report, std::nullopt);
  EXPECT_EQ(model.rowCount(), 0);
  EXPECT_TRUE(model.candidateLabel().isEmpty());
}

}  // namespace
}  // namespace pipeprof::gui
