// Tests of TuningModel: edits re-simulate at once; invalid edits keep the last prediction.
#include "models/tuning_model.h"

#include "sample.h"

#include <pipeprof/core/schedule.h>
#include <pipeprof/simulator/simulator.h>

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>

namespace pipeprof::gui {
namespace {

class TuningModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    report_ = test::sampleReport();
    model_.setInputs(*report_->profile, *report_->cluster, report_->candidates[0].candidate);  // [4,4] x4 except_last
  }
  TimeNs simulated(const Candidate& candidate) const {
    return simulate(*report_->profile, *report_->cluster, candidate).prediction.iterationNs;
  }

  std::shared_ptr<const Report> report_;
  TuningModel model_;
};

TEST_F(TuningModelTest, PassesTheModelTesterWithOneRowPerLayer) {
  QAbstractItemModelTester tester(&model_, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_EQ(model_.rowCount(), 8);
  EXPECT_EQ(model_.index(0, TuningModel::Name).data().toString(), QStringLiteral("fc0"));
  EXPECT_EQ(model_.index(3, TuningModel::StageColumn).data(TuningModel::ValueRole).toLongLong(), 0);
  EXPECT_EQ(model_.index(4, TuningModel::StageColumn).data(TuningModel::ValueRole).toLongLong(), 1);
  EXPECT_EQ(model_.microBatch(), 8);
  const CostSample cost = report_->profile->layers[2].costAt(8);
  EXPECT_EQ(model_.index(2, TuningModel::Forward).data(TuningModel::ValueRole).toLongLong(), cost.forwardNs);
  EXPECT_EQ(model_.layerTimesNs()[2], cost.forwardNs + cost.backwardNs);
  EXPECT_TRUE(model_.trace().events.size() > 0);
}

TEST_F(TuningModelTest, EditingTheBalanceChangesThePrediction) {
  QAbstractItemModelTester tester(&model_, QAbstractItemModelTester::FailureReportingMode::Fatal);
  QSignalSpy changed(&model_, &TuningModel::predictionChanged);
  const TimeNs before = model_.prediction().iterationNs;
  EXPECT_EQ(before, report_->candidates[0].prediction.iterationNs);
  ASSERT_TRUE(model_.setBalance({6, 2}));
  EXPECT_EQ(changed.count(), 1);
  Candidate expected = report_->candidates[0].candidate;
  expected.balance = {6, 2};
  EXPECT_EQ(model_.candidate(), expected);
  EXPECT_EQ(model_.prediction().iterationNs, simulated(expected));
  EXPECT_NE(model_.prediction().iterationNs, before);
  EXPECT_EQ(model_.index(5, TuningModel::StageColumn).data(TuningModel::ValueRole).toLongLong(), 0);
}

TEST_F(TuningModelTest, ChunksModeAndBoundaryEditsResimulate) {
  ASSERT_TRUE(model_.setChunks(8));
  ASSERT_TRUE(model_.setCheckpoint(Checkpoint::Never));
  ASSERT_TRUE(model_.moveBoundary(0, 5));
  Candidate expected = report_->candidates[0].candidate;
  expected.chunks = 8;
  expected.checkpoint = Checkpoint::Never;
  expected.balance = {5, 3};
  EXPECT_EQ(model_.candidate(), expected);
  EXPECT_EQ(model_.prediction().iterationNs, simulated(expected));
}

TEST_F(TuningModelTest, InvalidEditsEmitAMessageAndKeepTheLastPrediction) {
  QSignalSpy invalid(&model_, &TuningModel::invalidEdit);
  QSignalSpy changed(&model_, &TuningModel::predictionChanged);
  const Prediction before = model_.prediction();
  EXPECT_FALSE(model_.setBalance({3, 3}));  // sums to 6, the model has 8 layers
  EXPECT_FALSE(model_.setChunks(64));       // more than the mini-batch of 32
  EXPECT_FALSE(model_.moveBoundary(0, 8));  // would leave partition 1 empty
  EXPECT_FALSE(model_.moveBoundary(1, 3));  // a 2-partition balance has one boundary
  ASSERT_EQ(invalid.count(), 4);
  EXPECT_TRUE(invalid.at(1).at(0).toString().contains(QStringLiteral("64")))
      << invalid.at(1).at(0).toString().toStdString();
  EXPECT_EQ(changed.count(), 0);
  EXPECT_EQ(model_.candidate(), report_->candidates[0].candidate);
  EXPECT_EQ(model_.prediction().iterationNs, before.iterationNs);
}

TEST_F(TuningModelTest, ChangingTheScheduleResimulatesWithPTimesVStages) {
  QSignalSpy changed(&model_, &TuningModel::predictionChanged);
  const Prediction gpipe = model_.prediction();
  ASSERT_TRUE(model_.setSchedule(ScheduleKind::OneFOneB, 7));  // v is 1 for 1f1b
  Candidate expected = report_->candidates[0].candidate;
  expected.schedule = ScheduleKind::OneFOneB;
  EXPECT_EQ(model_.candidate(), expected);
  EXPECT_EQ(model_.prediction().peakBytes, report_->candidates[test::kSampleOneFOneB].prediction.peakBytes);
  EXPECT_NE(model_.prediction().peakBytes, gpipe.peakBytes);  // 1f1b holds fewer micro-batches
  ASSERT_TRUE(model_.setSchedule(ScheduleKind::Interleaved, 2));
  EXPECT_EQ(model_.candidate().stagesPerDevice, 2);
  ASSERT_EQ(model_.candidate().balance.size(), 4u);  // p = 2 devices x v = 2
  EXPECT_EQ(model_.candidate().pipelineDevices(), 2);
  EXPECT_EQ(model_.prediction().peakBytes.size(), 2u);  // per pipeline device
  EXPECT_EQ(model_.prediction().iterationNs, simulated(model_.candidate()));
  EXPECT_LT(model_.prediction().iterationNs, gpipe.iterationNs);  // the bubble shrinks
  EXPECT_EQ(model_.index(7, TuningModel::StageColumn).data(TuningModel::ValueRole).toLongLong(), 3);
  EXPECT_EQ(changed.count(), 2);
}

TEST_F(TuningModelTest, AZeroBubbleScheduleOnAProfileWithoutTheSplitSaysToProfileAgain) {
  // The sample report's profile predates zero bubble: its layers have no I/W split.
  QSignalSpy invalid(&model_, &TuningModel::invalidEdit);
  EXPECT_FALSE(model_.setSchedule(ScheduleKind::ZeroBubble));
  ASSERT_EQ(invalid.count(), 1);
  EXPECT_TRUE(invalid.at(0).at(0).toString().contains(QStringLiteral("profile the model again")))
      << invalid.at(0).at(0).toString().toStdString();
  EXPECT_EQ(model_.edited().schedule, ScheduleKind::ZeroBubble);
}

TEST_F(TuningModelTest, AnInvalidScheduleShapeShowsItsReasonAndTheNextEditKeepsTheSchedule) {
  ASSERT_TRUE(model_.setSchedule(ScheduleKind::Interleaved, 2));
  const Candidate valid = model_.candidate();
  QSignalSpy invalid(&model_, &TuningModel::invalidEdit);
  QSignalSpy changed(&model_, &TuningModel::predictionChanged);
  EXPECT_FALSE(model_.setChunks(3));  // 3 micro-batches on 2 devices
  ASSERT_EQ(invalid.count(), 1);
  EXPECT_EQ(invalid.at(0).at(0).toString().toStdString(), scheduleShapeError(ScheduleKind::Interleaved, 2, 4, 3));
  EXPECT_EQ(model_.candidate(), valid);  // the prediction stays that of the last valid one
  EXPECT_EQ(model_.edited().chunks, 3);
  EXPECT_EQ(model_.edited().schedule, ScheduleKind::Interleaved);
  ASSERT_TRUE(model_.setChunks(8));  // builds on the edit: still interleaved
  EXPECT_EQ(model_.candidate().schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(model_.candidate().chunks, 8);
  EXPECT_EQ(changed.count(), 1);
  EXPECT_FALSE(model_.setSchedule(ScheduleKind::Interleaved, 8));  // 16 stages, 8 layers
  EXPECT_TRUE(invalid.last().at(0).toString().contains(QStringLiteral("8 layers")))
      << invalid.last().at(0).toString().toStdString();
  ASSERT_TRUE(model_.setSchedule(ScheduleKind::GPipe));  // back to 2 stages
  EXPECT_EQ(model_.candidate().balance.size(), 2u);
  EXPECT_EQ(model_.candidate().stagesPerDevice, 1);
}

}  // namespace
}  // namespace pipeprof::gui
