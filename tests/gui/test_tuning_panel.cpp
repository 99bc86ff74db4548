// Widget tests of the tuning panel: typing a balance, dragging a boundary, Suggest and Cancel.
#include "views/tuning_panel.h"

#include "models/suggest_worker.h"
#include "models/timeline_model.h"
#include "models/tuning_model.h"
#include "views/balance_editor.h"
#include "views/suggest_panel.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTest>

namespace pipeprof::gui {
namespace {

class TuningPanelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    report_ = test::sampleReport();
    panel_.resize(1200, 800);
    panel_.show();
    panel_.setReport(report_);
    panel_.loadCandidate(0);  // [4,4] x4 except_last
  }
  std::shared_ptr<const Report> report_;
  TuningPanel panel_;
};

TEST_F(TuningPanelTest, TypingABalanceChangesThePredictionAndTheTimeline) {
  QSignalSpy changed(panel_.model(), &TuningModel::predictionChanged);
  QSignalSpy timeline(panel_.timelineModel(), &QAbstractItemModel::modelReset);
  const TimeNs before = panel_.model()->prediction().iterationNs;
  QLineEdit* balance = panel_.balanceEdit();
  balance->setFocus();
  balance->selectAll();
  QTest::keyClicks(balance, QStringLiteral("6,2"));
  EXPECT_EQ(panel_.model()->candidate().balance, (std::vector<std::int64_t>{6, 2}));
  EXPECT_NE(panel_.model()->prediction().iterationNs, before);
  EXPECT_GE(changed.count(), 1);
  EXPECT_GE(timeline.count(), 1);
  EXPECT_EQ(panel_.timelineModel()->sections().size(), 1u);  // predicted only
}

TEST_F(TuningPanelTest, ShowsTheTrainingStepTheProfileWasMeasuredWith) {
  EXPECT_EQ(panel_.trainingStepText(), QStringLiteral("sgd, fp32"));
  auto report = std::make_shared<Report>(*report_);
  report->profile->environment.optimizer.kind = OptimizerKind::AdamW;
  report->profile->environment.optimizer.weightDecay.reset();
  report->profile->environment.precision = Precision::Bf16;
  panel_.setReport(report);
  EXPECT_EQ(panel_.trainingStepText(), QStringLiteral("adamw, bf16"));
}

// A profile that measured AdamW's steps too (every profile `pipeprof profile` writes does) can be
// tuned for AdamW: its two moments on every device, its step after the pipeline. Momentum's
// steps are taken out here, so momentum cannot be picked.
TEST_F(TuningPanelTest, PickingAnotherOptimizerTheProfileMeasuredRepredicts) {
  auto report = std::make_shared<Report>(*report_);
  for (LayerProfile& layer : report->profile->layers) {
    layer.optimizerSteps.erase(OptimizerKind::Momentum);
    if (layer.gradBytes > 0) layer.optimizerSteps[OptimizerKind::AdamW] = {1000000, 4096};
  }
  panel_.setReport(report);
  panel_.loadCandidate(0);
  QComboBox* optimizer = panel_.optimizerCombo();
  const auto* items = qobject_cast<QStandardItemModel*>(optimizer->model());
  ASSERT_NE(items, nullptr);
  auto row = [&](OptimizerKind kind) { return optimizer->findData(static_cast<int>(kind)); };
  EXPECT_TRUE(items->item(row(OptimizerKind::AdamW))->isEnabled());
  EXPECT_FALSE(items->item(row(OptimizerKind::Momentum))->isEnabled());
  const Prediction sgd = panel_.model()->prediction();
  optimizer->setCurrentIndex(row(OptimizerKind::AdamW));
  EXPECT_EQ(panel_.trainingStepText(), QStringLiteral("adamw, fp32"));
  const Prediction adamw = panel_.model()->prediction();
  EXPECT_GE(adamw.iterationNs, sgd.iterationNs + 1000000) << "a 1 ms step per layer, after the pipeline";
  ASSERT_EQ(adamw.peakBytes.size(), sgd.peakBytes.size());
  for (std::size_t d = 0; d < sgd.peakBytes.size(); ++d) EXPECT_GT(adamw.peakBytes[d], sgd.peakBytes[d]) << d;
  EXPECT_TRUE(panel_.predictionText().contains(QStringLiteral("predicted for adamw")));
  optimizer->setCurrentIndex(row(OptimizerKind::Sgd));
  EXPECT_EQ(panel_.model()->prediction().iterationNs, sgd.iterationNs);
  EXPECT_EQ(panel_.trainingStepText(), QStringLiteral("sgd, fp32"));
}

TEST_F(TuningPanelTest, DraggingABoundaryMovesLayers) {
  BalanceEditor* editor = panel_.balanceEditor();
  const QPoint from(static_cast<int>(editor->boundaryX(0)), editor->height() / 2);
  const double column = (editor->boundaryX(0) - editor->boundaryX(-1)) / 4.0;  // 4 layers left of it
  const QPoint to(static_cast<int>(editor->boundaryX(0) + 2 * column), editor->height() / 2);
  QTest::mousePress(editor, Qt::LeftButton, Qt::NoModifier, from);
  QTest::mouseMove(editor, to);
  QTest::mouseRelease(editor, Qt::LeftButton, Qt::NoModifier, to);
  EXPECT_EQ(panel_.model()->candidate().balance, (std::vector<std::int64_t>{6, 2}));
}

TEST_F(TuningPanelTest, SuggestListsTheBestCandidatesAndTuneLoadsOne) {
  SuggestPanel* suggest = panel_.suggestPanel();
  QSignalSpy finished(suggest->worker(), &SuggestWorker::finished);
  QTest::mouseClick(suggest->suggestButton(), Qt::LeftButton);
  EXPECT_TRUE(suggest->cancelButton()->isEnabled());
  ASSERT_TRUE(finished.wait(20000));
  EXPECT_FALSE(suggest->cancelButton()->isEnabled());
  ASSERT_EQ(suggest->results()->rowCount(), SuggestPanel::kShown);
  const Candidate best = suggest->worker()->result().ranked.front().candidate;
  EXPECT_EQ(suggest->results()->item(0, 0)->text(), QString::fromStdString(best.label()));
  const QString schedule =
      QString::fromStdString(scheduleKindName(best.schedule)) +
      (best.schedule == ScheduleKind::Interleaved ? QStringLiteral(" v%1").arg(best.stagesPerDevice) : QString());
  EXPECT_EQ(suggest->results()->item(0, 1)->text(), schedule);
  emit suggest->tuneRequested(best);
  EXPECT_EQ(panel_.model()->candidate(), best);
}

TEST_F(TuningPanelTest, SuggestRejectsAMalformedChunkList) {
  SuggestPanel* suggest = panel_.suggestPanel();
  suggest->chunksEdit()->setText(QStringLiteral("1,two"));
  QString error;
  EXPECT_FALSE(suggest->searchSpace(&error).has_value());
  EXPECT_TRUE(error.contains(QStringLiteral("1,two"))) << error.toStdString();
  suggest->startSuggest();
  EXPECT_FALSE(suggest->worker()->isRunning());
}

TEST_F(TuningPanelTest, PickingAScheduleAndVRepredictsAndAnInvalidShapeShowsItsReason) {
  QSignalSpy changed(panel_.model(), &TuningModel::predictionChanged);
  const TimeNs gpipe = panel_.model()->prediction().iterationNs;
  QComboBox* schedule = panel_.scheduleCombo();
  QSpinBox* v = panel_.stagesPerDeviceSpin();
  EXPECT_FALSE(v->isEnabled());
  schedule->setCurrentIndex(schedule->findData(static_cast<int>(ScheduleKind::Interleaved)));
  EXPECT_EQ(changed.count(), 1);
  EXPECT_TRUE(v->isEnabled());
  EXPECT_EQ(v->value(), 2);
  EXPECT_EQ(panel_.model()->candidate().schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(panel_.balanceEdit()->text().split(QLatin1Char(',')).size(), 4);  // p * v stages
  EXPECT_NE(panel_.model()->prediction().iterationNs, gpipe);
  EXPECT_TRUE(panel_.errorText().isEmpty());
  v->setValue(4);
  EXPECT_EQ(changed.count(), 2);
  EXPECT_EQ(panel_.model()->candidate().stagesPerDevice, 4);
  EXPECT_EQ(panel_.balanceEdit()->text(), QStringLiteral("1,1,1,1,1,1,1,1"));
  const Prediction valid = panel_.model()->prediction();
  panel_.chunksSpin()->setValue(3);  // interleaved needs chunks a multiple of the 2 devices
  EXPECT_EQ(changed.count(), 2);
  EXPECT_EQ(panel_.errorText().toStdString(), scheduleShapeError(ScheduleKind::Interleaved, 4, 8, 3));
  EXPECT_EQ(panel_.model()->prediction().iterationNs, valid.iterationNs);
  EXPECT_EQ(schedule->currentData().toInt(), static_cast<int>(ScheduleKind::Interleaved));  // the edit stays
  panel_.chunksSpin()->setValue(6);
  EXPECT_EQ(changed.count(), 3);
  EXPECT_TRUE(panel_.errorText().isEmpty());
  EXPECT_EQ(panel_.model()->candidate().chunks, 6);
  EXPECT_EQ(panel_.model()->candidate().stagesPerDevice, 4);
  schedule->setCurrentIndex(schedule->findData(static_cast<int>(ScheduleKind::OneFOneB)));
  EXPECT_FALSE(v->isEnabled());
  EXPECT_EQ(panel_.model()->candidate().balance.size(), 2u);
  EXPECT_EQ(panel_.model()->candidate().schedule, ScheduleKind::OneFOneB);
}

// The CLI's --schedule-file in the panel: PyTorch's looped BFS order predicted as it runs;
// its ZBV refused for a profile without the backward's split, and an order that cannot run
// with the ranks and actions of its cyclic wait.
TEST_F(TuningPanelTest, AScheduleFileRunsItsOrder) {
  TuningModel* model = panel_.model();
  const QString fixtures = QStringLiteral(PIPEPROF_SOURCE_DIR "/tests/fixtures/pytorch-2.6-schedules/");
  QSignalSpy invalid(model, &TuningModel::invalidEdit);
  ASSERT_TRUE(model->setScheduleFile(fixtures + QStringLiteral("looped_bfs_p2_m4_v2.csv")))
      << invalid.value(0).value(0).toString().toStdString();
  EXPECT_EQ(model->candidate().schedule, ScheduleKind::Custom);
  EXPECT_EQ(model->candidate().balance.size(), 4u);
  EXPECT_EQ(model->candidate().chunks, 4);
  EXPECT_EQ(model->candidate().deviceOfStage(3), 1);
  EXPECT_EQ(panel_.scheduleCombo()->currentText(), QStringLiteral("custom"));
  EXPECT_EQ(panel_.scheduleFileButton()->text(), QStringLiteral("looped_bfs_p2_m4_v2.csv"));
  EXPECT_FALSE(panel_.stagesPerDeviceSpin()->isEnabled());
  EXPECT_GT(model->prediction().iterationNs, 0);

  // Ranks holding different numbers of stages: three stages on two devices.
  const QString unequal = QString::fromStdString(::testing::TempDir()) + QStringLiteral("unequal.csv");
  QFile three(unequal);
  ASSERT_TRUE(three.open(QIODevice::WriteOnly));
  three.write("0F0,0F1,2F0,2F1,2B0,2B1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  three.close();
  ASSERT_TRUE(model->setScheduleFile(unequal)) << invalid.value(0).value(0).toString().toStdString();
  EXPECT_EQ(model->candidate().balance.size(), 3u);
  EXPECT_EQ(model->candidate().deviceOfStage(2), 0);
  EXPECT_EQ(model->prediction().peakBytes.size(), 2u);
  EXPECT_GT(model->prediction().iterationNs, 0);

  EXPECT_FALSE(model->setScheduleFile(fixtures + QStringLiteral("zbv_zero_bubble_p2_m4_v2.csv")));
  ASSERT_GE(invalid.count(), 1);
  EXPECT_TRUE(invalid.last().value(0).toString().contains(QStringLiteral("profile the model again")));

  const QString cycle = QString::fromStdString(::testing::TempDir()) + QStringLiteral("cycle.csv");
  QFile file(cycle);
  ASSERT_TRUE(file.open(QIODevice::WriteOnly));
  file.write("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
  file.close();
  EXPECT_FALSE(model->setScheduleFile(cycle));
  ASSERT_GE(invalid.count(), 1);
  EXPECT_TRUE(invalid.last().value(0).toString().contains(QStringLiteral("rank 1 runs 1B0 after 1F1")))
      << invalid.last().value(0).toString().toStdString();
  EXPECT_EQ(model->candidate().schedule, ScheduleKind::Custom) << "the last valid order stays";

  panel_.scheduleCombo()->setCurrentIndex(panel_.scheduleCombo()->findText(QStringLiteral("1f1b")));
  EXPECT_EQ(model->candidate().schedule, ScheduleKind::OneFOneB);
  EXPECT_FALSE(model->candidate().order);
}

TEST_F(TuningPanelTest, SuggestSearchesTheTickedSchedulesAndStagesPerDevice) {
  SuggestPanel* suggest = panel_.suggestPanel();
  QString error;
  std::optional<SearchSpace> space = suggest->searchSpace(&error);
  ASSERT_TRUE(space.has_value()) << error.toStdString();
  EXPECT_EQ(space->schedules, (std::vector<ScheduleKind>{std::begin(kScheduleKinds), std::end(kScheduleKinds)}));
  EXPECT_EQ(space->stagesPerDevice, (std::vector<std::int64_t>{1, 2}));
  suggest->scheduleCheck(ScheduleKind::GPipe)->setChecked(false);
  suggest->stagesPerDeviceEdit()->setText(QStringLiteral("2,4"));
  space = suggest->searchSpace(&error);
  ASSERT_TRUE(space.has_value()) << error.toStdString();
  EXPECT_EQ(space->schedules,
            (std::vector<ScheduleKind>{ScheduleKind::OneFOneB, ScheduleKind::Interleaved, ScheduleKind::ZeroBubble,
                                       ScheduleKind::InterleavedZeroBubble, ScheduleKind::ZeroBubbleV}));
  EXPECT_EQ(space->stagesPerDevice, (std::vector<std::int64_t>{1, 2, 4}));
  suggest->stagesPerDeviceEdit()->setText(QStringLiteral("1"));
  EXPECT_FALSE(suggest->searchSpace(&error).has_value());
  EXPECT_TRUE(error.contains(QStringLiteral("at least 2"))) << error.toStdString();
  for (ScheduleKind kind : {ScheduleKind::OneFOneB, ScheduleKind::Interleaved, ScheduleKind::ZeroBubble,
                            ScheduleKind::InterleavedZeroBubble, ScheduleKind::ZeroBubbleV})
    suggest->scheduleCheck(kind)->setChecked(false);
  EXPECT_FALSE(suggest->searchSpace(&error).has_value());
  EXPECT_EQ(error, QStringLiteral("Tick at least one schedule."));
}

}  // namespace
}  // namespace pipeprof::gui
