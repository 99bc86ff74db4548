// Tests of MemoryModel: per-device predicted and measured peaks against capacity.
#include "models/memory_model.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>

namespace pipeprof::gui {
namespace {

TEST(MemoryModel, ShowsTheSelectedCandidatesPeaksAndCapacity) {
  MemoryModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const std::shared_ptr<const Report> report = test::sampleReport();
  model.setCandidate(report, test::kSampleSuggested);
  ASSERT_EQ(model.rowCount(), 2);
  EXPECT_EQ(model.candidateLabel(), QStringLiteral("[5,3] x4 never"));
  const CandidateResult& result = report->candidates[test::kSampleSuggested];
  for (int j = 0; j < 2; ++j) {
    EXPECT_EQ(model.index(j, MemoryModel::Predicted).data(MemoryModel::BytesRole).toLongLong(),
              result.prediction.peakBytes[static_cast<std::size_t>(j)]);
    EXPECT_EQ(model.index(j, MemoryModel::Measured).data(MemoryModel::BytesRole).toLongLong(),
              result.measurement->peakBytes[static_cast<std::size_t>(j)]);
    EXPECT_EQ(model.index(j, MemoryModel::Capacity).data(MemoryModel::BytesRole).toLongLong(), 112LL * 1024 * 1024);
  }
  EXPECT_EQ(model.index(0, MemoryModel::Capacity).data().toString(), QStringLiteral("112 MiB"));
  EXPECT_EQ(model.index(1, MemoryModel::Device).data().toString(),
            QString::fromStdString(report->cluster->devices[1].name));
  EXPECT_TRUE(model.hasMeasurement());
  EXPECT_EQ(model.maxBytes(), 112LL * 1024 * 1024);
}

// Beside the prediction, the peak with other devices' frees late where the report has it (a
// sweep's measured candidates since 2026-12-06); blank where it has none, as the sample.
TEST(MemoryModel, ShowsThePeakWithOtherDevicesFreesLateWhereThePredictionHasIt) {
  MemoryModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.setCandidate(test::sampleReport(), test::kSampleSuggested);
  EXPECT_FALSE(model.index(1, MemoryModel::LatePredicted).data(MemoryModel::BytesRole).isValid());
  EXPECT_EQ(model.index(1, MemoryModel::LatePredicted).data().toString(), QString());
  auto report = std::make_shared<Report>(*test::sampleReport());
  Prediction& prediction = report->candidates[test::kSampleSuggested].prediction;
  const Bytes late = 200LL * 1024 * 1024;
  prediction.latePeakBytes = {prediction.peakBytes[0], late};
  model.setCandidate(report, test::kSampleSuggested);
  EXPECT_EQ(model.index(0, MemoryModel::LatePredicted).data(MemoryModel::BytesRole).toLongLong(),
            prediction.peakBytes[0]);
  EXPECT_EQ(model.index(1, MemoryModel::LatePredicted).data(MemoryModel::BytesRole).toLongLong(), late);
  EXPECT_EQ(model.index(1, MemoryModel::LatePredicted).data().toString(), QStringLiteral("200 MiB"));
  EXPECT_EQ(model.maxBytes(), late);
  EXPECT_EQ(model.headerData(MemoryModel::LatePredicted, Qt::Horizontal).toString(), QStringLiteral("Frees late"));
}

TEST(MemoryModel, UnmeasuredCandidateHasNoMeasuredValuesAndNulloptClears) {
  MemoryModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const std::shared_ptr<const Report> report = test::sampleReport();
  model.setCandidate(report, 8);
  ASSERT_EQ(model.rowCount(), 2);
  EXPECT_FALSE(model.hasMeasurement());
  EXPECT_FALSE(model.index(0, MemoryModel::Measured).data(MemoryModel::BytesRole).isValid());
  EXPECT_EQ(model.maxBytes(), report->candidates[8].prediction.peakBytes[0]);  // over capacity
  model.setCandidate(report, std::nullopt);
  EXPECT_EQ(model.rowCount(), 0);
  model.setCandidate(report, 99);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(MemoryModel, InterleavedHasOneRowPerPipelineDeviceNamingItsStages) {
  MemoryModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const std::shared_ptr<const Report> report = test::sampleReportWithInterleaved();
  model.setCandidate(report, 10);  // [2,2,2,2] x4 except_last interleaved v2
  ASSERT_EQ(model.rowCount(), 2);  // p = 2 devices, not 4 stages
  EXPECT_EQ(model.index(0, MemoryModel::PipelineDevice).data().toString(), QStringLiteral("device 0 · stages 0, 2"));
  EXPECT_EQ(model.index(1, MemoryModel::PipelineDevice).data().toString(), QStringLiteral("device 1 · stages 1, 3"));
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(model.index(d, MemoryModel::Predicted).data(MemoryModel::BytesRole).toLongLong(),
              report->candidates[10].prediction.peakBytes[static_cast<std::size_t>(d)]);
  }
  model.setCandidate(report, 0);
  EXPECT_EQ(model.index(1, MemoryModel::PipelineDevice).data().toString(), QStringLiteral("device 1 · stage 1"));
}

TEST(MemoryModel, NamesTheStagesEachDeviceHoldsUnderZbv) {
  MemoryModel model;
  auto report = std::make_shared<Report>(*test::sampleReport());
  CandidateResult& result = report->candidates[test::kSampleSuggested];
  result.candidate.schedule = ScheduleKind::ZeroBubbleV;
  result.candidate.stagesPerDevice = 2;
  result.candidate.balance = {2, 2, 2, 2};
  model.setCandidate(report, test::kSampleSuggested);
  ASSERT_EQ(model.rowCount(), 2);
  // The V: device 0 holds stages 0 and 3, device 1 stages 1 and 2.
  EXPECT_EQ(model.index(0, MemoryModel::PipelineDevice).data().toString(), QStringLiteral("device 0 · stages 0, 3"));
  EXPECT_EQ(model.index(1, MemoryModel::PipelineDevice).data().toString(), QStringLiteral("device 1 · stages 1, 2"));
}

}  // namespace
}  // namespace pipeprof::gui
