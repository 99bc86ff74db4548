// Tests of TuningModel: edits re-simulate at once; invalid edits keep the last prediction.
#include "models/tuning_model.h"

#include "sample.h"

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
  EXPECT_EQ(model_.index(3, TuningModel::PartitionColumn).data(TuningModel::ValueRole).toLongLong(), 0);
  EXPECT_EQ(model_.index(4, TuningModel::PartitionColumn).data(TuningModel::ValueRole).toLongLong(), 1);
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
  EXPECT_EQ(model_.index(5, TuningModel::PartitionColumn).data(TuningModel::ValueRole).toLongLong(), 0);
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
  EXPECT_TRUE(invalid.at(1).at(0).toString().contains(QStringLiteral("64"))) << invalid.at(1).at(0).toString().toStdString();
  EXPECT_EQ(changed.count(), 0);
  EXPECT_EQ(model_.candidate(), report_->candidates[0].candidate);
  EXPECT_EQ(model_.prediction().iterationNs, before.iterationNs);
}

}  // namespace
}  // namespace pipeprof::gui
