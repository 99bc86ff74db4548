// Tests of MemoryModel: per-partition predicted and measured peaks against capacity.
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
    EXPECT_EQ(model.index(j, MemoryModel::Predicted).data(MemoryModel::BytesRole).toLongLong(), result.prediction.peakBytes[static_cast<std::size_t>(j)]);
    EXPECT_EQ(model.index(j, MemoryModel::Measured).data(MemoryModel::BytesRole).toLongLong(), result.measurement->peakBytes[static_cast<std::size_t>(j)]);
    EXPECT_EQ(model.index(j, MemoryModel::Capacity).data(MemoryModel::BytesRole).toLongLong(), 112LL * 1024 * 1024);
  }
  EXPECT_EQ(model.index(0, MemoryModel::Capacity).data().toString(), QStringLiteral("112 MiB"));
  EXPECT_EQ(model.index(1, MemoryModel::Device).data().toString(), QString::fromStdString(report->cluster->devices[1].name));
  EXPECT_TRUE(model.hasMeasurement());
  EXPECT_EQ(model.maxBytes(), 112LL * 1024 * 1024);
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

}  // namespace
}  // namespace pipeprof::gui
