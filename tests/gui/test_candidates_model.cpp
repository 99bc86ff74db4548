// Tests of CandidatesModel and CandidatesFilterModel on the sample report.
#include "models/candidates_filter_model.h"
#include "models/candidates_model.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>

namespace pipeprof::gui {
namespace {

std::size_t candidateAt(const QAbstractItemModel& model, int row) {
  return static_cast<std::size_t>(model.index(row, 0).data(CandidatesModel::CandidateIndexRole).toULongLong());
}

TEST(CandidatesModel, PassesTheModelTesterAndListsEveryCandidate) {
  CandidatesModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_EQ(model.rowCount(), 0);
  model.setReport(test::sampleReport());
  EXPECT_EQ(model.rowCount(), test::kSampleCandidates);
  EXPECT_EQ(model.columnCount(), CandidatesModel::ColumnCount);
  model.setReport(nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(CandidatesModel, ShowsConfigurationTimesAndStatusWithUnits) {
  CandidatesModel model;
  model.setReport(test::sampleReport());
  auto text = [&model](int row, int column) { return model.index(row, column).data().toString(); };
  EXPECT_EQ(text(0, CandidatesModel::Balance), QStringLiteral("[4,4]"));
  EXPECT_EQ(text(0, CandidatesModel::Chunks), QStringLiteral("4"));
  EXPECT_EQ(text(0, CandidatesModel::Mode), QStringLiteral("except_last"));
  EXPECT_EQ(text(0, CandidatesModel::PredictedStep), QStringLiteral("17.0 ms"));
  EXPECT_EQ(text(0, CandidatesModel::MeasuredStep), QStringLiteral("18.0 ms"));
  EXPECT_EQ(text(0, CandidatesModel::Schedule), QStringLiteral("gpipe"));
  EXPECT_EQ(text(test::kSampleOneFOneB, CandidatesModel::Schedule), QStringLiteral("1f1b"));
  EXPECT_EQ(text(0, CandidatesModel::PredictedPeak), QStringLiteral("48.3 MiB | 60.7 MiB"));
  EXPECT_EQ(text(0, CandidatesModel::StepError), QStringLiteral("-5.7 %"));
  EXPECT_EQ(text(0, CandidatesModel::Status), QStringLiteral("measured"));
  EXPECT_EQ(text(5, CandidatesModel::Status), QStringLiteral("failed"));
  EXPECT_EQ(text(6, CandidatesModel::MeasuredStep), QString());
  EXPECT_EQ(text(8, CandidatesModel::Rank), QStringLiteral("–"));
  EXPECT_TRUE(text(8, CandidatesModel::PredictedPeak).endsWith(QStringLiteral("(does not fit)")));
}

TEST(CandidatesModel, ShowsWhatARoundsSpreadLeavesTheMeasuredStepUncertainBy) {
  auto report = std::make_shared<Report>(*test::sampleReport());
  Measurement rounds;
  rounds.addRound({20'000'000, 20'000'000}, {1, 1}, 8, 1.0);
  rounds.addRound({20'800'000}, {1, 1}, 8, 2.0);
  report->candidates[0].measurement = rounds;  // rounds of 20 and 20.8 ms: +-2%, agreeing
  Measurement apart;
  apart.addRound({10'000'000}, {1, 1}, 8, 1.0);
  apart.addRound({15'000'000}, {1, 1}, 8, 2.0);
  report->candidates[1].measurement = apart;  // 10 and 15 ms: 50% apart
  CandidatesModel model;
  model.setReport(report);
  auto text = [&model](int row, int column) { return model.index(row, column).data().toString(); };
  EXPECT_EQ(text(0, CandidatesModel::MeasuredStep), QStringLiteral("20.0 ms ±2 %"));
  EXPECT_EQ(text(0, CandidatesModel::Status), QStringLiteral("measured"));
  EXPECT_EQ(text(1, CandidatesModel::MeasuredStep), QStringLiteral("12.5 ms ±20 %"));
  EXPECT_EQ(text(1, CandidatesModel::Status), QStringLiteral("measured (rounds disagree by 50 %)"));
  report->candidates[1].measurement->machineSlowdown = 1.2;  // the machine 20% slow during them
  report->candidates[0].measurement->machineSlowdown = 0.9;
  model.setReport(report);
  EXPECT_EQ(text(1, CandidatesModel::Status),
            QStringLiteral("measured (rounds disagree by 50 %; machine 20% slow during its rounds)"));
  EXPECT_EQ(text(0, CandidatesModel::Status), QStringLiteral("measured (machine 10% fast during its rounds)"));
}

TEST(CandidatesModel, MarksTheSuggestedCandidate) {
  CandidatesModel model;
  model.setReport(test::sampleReport());
  ASSERT_EQ(model.suggested(), test::kSampleSuggested);
  const int row = static_cast<int>(test::kSampleSuggested);
  EXPECT_TRUE(model.index(row, 0).data(CandidatesModel::SuggestedRole).toBool());
  EXPECT_EQ(model.index(row, CandidatesModel::Rank).data().toString(), QStringLiteral("★ 1"));
  EXPECT_FALSE(model.index(0, 0).data(CandidatesModel::SuggestedRole).toBool());
}

TEST(CandidatesFilterModel, SortsNumericallyWithMissingValuesLast) {
  CandidatesModel model;
  model.setReport(test::sampleReport());
  CandidatesFilterModel proxy;
  QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);
  proxy.setSourceModel(&model);
  proxy.sort(CandidatesModel::MeasuredStep, Qt::AscendingOrder);
  EXPECT_EQ(candidateAt(proxy, 0), 3u);  // 15.9 ms
  EXPECT_EQ(candidateAt(proxy, 5), 2u);  // 20.8 ms, the slowest measured
  EXPECT_FALSE(proxy.index(6, CandidatesModel::MeasuredStep).data().toString().size() > 0);
  proxy.sort(CandidatesModel::Rank, Qt::AscendingOrder);
  EXPECT_EQ(candidateAt(proxy, 0), 3u);
  EXPECT_EQ(candidateAt(proxy, 9), 8u);  // does not fit: no rank, last
}

TEST(CandidatesFilterModel, FiltersByTextAndStatus) {
  CandidatesModel model;
  model.setReport(test::sampleReport());
  CandidatesFilterModel proxy;
  QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);
  proxy.setSourceModel(&model);
  proxy.setFilterText(QStringLiteral("x8"));
  EXPECT_EQ(proxy.rowCount(), 2);  // [4,4] x8 except_last and [6,2] x8 always
  proxy.setFilterText(QStringLiteral("NEVER"));
  EXPECT_EQ(proxy.rowCount(), 3);
  proxy.setFilterText(QStringLiteral("1f1b"));  // the label names the schedule
  ASSERT_EQ(proxy.rowCount(), 1);
  EXPECT_EQ(candidateAt(proxy, 0), test::kSampleOneFOneB);
  proxy.setFilterText(QString());
  proxy.setStatusFilter(CandidateStatus::Failed);
  ASSERT_EQ(proxy.rowCount(), 1);
  EXPECT_EQ(candidateAt(proxy, 0), 5u);
  proxy.setStatusFilter(CandidateStatus::Measured);
  proxy.setFilterText(QStringLiteral("[4,4]"));
  EXPECT_EQ(proxy.rowCount(), 4);  // x4, x8, x2 and x4 1f1b
  proxy.setStatusFilter(std::nullopt);
  proxy.setFilterText(QString());
  EXPECT_EQ(proxy.rowCount(), test::kSampleCandidates);
}

TEST(CandidatesModel, ShowsTheScheduleWithStagesPerDeviceAndSortsByIt) {
  CandidatesModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.setReport(test::sampleReportWithInterleaved());
  ASSERT_EQ(model.rowCount(), test::kSampleCandidates + 2);
  EXPECT_EQ(model.headerData(CandidatesModel::Schedule, Qt::Horizontal).toString(), QStringLiteral("Schedule"));
  EXPECT_EQ(model.index(10, CandidatesModel::Schedule).data().toString(), QStringLiteral("interleaved v2"));
  EXPECT_EQ(model.index(10, CandidatesModel::Balance).data().toString(), QStringLiteral("[2,2,2,2]"));
  EXPECT_EQ(model.index(10, 0).data(CandidatesModel::ScheduleRole).toInt(),
            static_cast<int>(ScheduleKind::Interleaved));
  EXPECT_EQ(model.index(10, 0).data(CandidatesModel::LabelRole).toString(),
            QStringLiteral("[2,2,2,2] x4 except_last interleaved v2"));
  // Peaks are per pipeline device: 2 devices for 4 stages.
  EXPECT_EQ(model.index(10, CandidatesModel::PredictedPeak).data().toString().count(QLatin1Char('|')), 1);
  CandidatesFilterModel proxy;
  proxy.setSourceModel(&model);
  proxy.sort(CandidatesModel::Schedule, Qt::DescendingOrder);
  EXPECT_EQ(proxy.index(0, CandidatesModel::Schedule).data().toString(), QStringLiteral("interleaved v2"));
  EXPECT_EQ(proxy.index(2, CandidatesModel::Schedule).data().toString(), QStringLiteral("1f1b"));
  EXPECT_EQ(proxy.index(3, CandidatesModel::Schedule).data().toString(), QStringLiteral("gpipe"));
}

TEST(CandidatesFilterModel, FiltersBySchedule) {
  CandidatesModel model;
  model.setReport(test::sampleReportWithInterleaved());
  CandidatesFilterModel proxy;
  QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);
  proxy.setSourceModel(&model);
  proxy.setScheduleFilter(ScheduleKind::Interleaved);
  ASSERT_EQ(proxy.rowCount(), 2);
  EXPECT_EQ(candidateAt(proxy, 0), 10u);
  EXPECT_EQ(candidateAt(proxy, 1), 11u);
  proxy.setScheduleFilter(ScheduleKind::OneFOneB);
  ASSERT_EQ(proxy.rowCount(), 1);
  EXPECT_EQ(candidateAt(proxy, 0), test::kSampleOneFOneB);
  proxy.setScheduleFilter(ScheduleKind::GPipe);
  EXPECT_EQ(proxy.rowCount(), 9);
  proxy.setStatusFilter(CandidateStatus::Measured);  // the filters combine
  EXPECT_EQ(proxy.rowCount(), 5);
  proxy.setScheduleFilter(std::nullopt);
  EXPECT_EQ(proxy.rowCount(), 6);
  proxy.setStatusFilter(std::nullopt);
  EXPECT_EQ(proxy.rowCount(), test::kSampleCandidates + 2);
}

}  // namespace
}  // namespace pipeprof::gui
