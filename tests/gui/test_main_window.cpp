// Widget tests of the main window on the offscreen platform: open, select, fail, export.
#include "views/main_window.h"

#include "models/breakdown_model.h"
#include "models/candidates_filter_model.h"
#include "models/candidates_model.h"
#include "models/memory_model.h"
#include "models/report_document.h"
#include "models/timeline_model.h"
#include "models/tuning_model.h"
#include "views/accuracy_chart_view.h"
#include "views/breakdown_chart_view.h"
#include "views/candidates_view.h"
#include "views/memory_chart_view.h"
#include "views/tuning_panel.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QImage>
#include <QMimeData>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QUrl>

namespace pipeprof::gui {
namespace {

MainWindow::Options quiet() { return MainWindow::Options{false, false}; }

TEST(MainWindow, OpeningTheSampleFillsTheTableAndSelectsTheSuggestion) {
  MainWindow window(quiet());
  window.resize(1200, 800);
  window.show();
  ASSERT_TRUE(window.openReport(test::samplePath()));
  EXPECT_EQ(window.candidatesView()->table()->model()->rowCount(), test::kSampleCandidates);
  EXPECT_EQ(window.selectedCandidate(), test::kSampleSuggested);
  EXPECT_EQ(window.memoryModel()->candidate(), test::kSampleSuggested);
  EXPECT_EQ(window.accuracyView()->pointCount(), 6);
  if (window.timelineModel()->isLoading()) {
    QSignalSpy loaded(window.timelineModel(), &TimelineModel::loaded);
    ASSERT_TRUE(loaded.wait(10000));
  }
  EXPECT_EQ(window.timelineModel()->sections().size(), 2u);
  EXPECT_TRUE(window.tuningPanel()->model()->hasInputs());
  EXPECT_TRUE(window.windowTitle().startsWith(QStringLiteral("sample_report.json")));
}

TEST(MainWindow, TheScheduleComboFiltersTheTable) {
  MainWindow window(quiet());
  ASSERT_TRUE(window.openReport(test::samplePath()));
  QComboBox* schedule = window.candidatesView()->scheduleCombo();
  ASSERT_EQ(schedule->count(), 7);  // all, gpipe, 1f1b, interleaved, zb1p, interleaved-zb, zbv
  EXPECT_EQ(schedule->itemText(0), QStringLiteral("All schedules"));
  schedule->setCurrentIndex(schedule->findText(QStringLiteral("1f1b")));
  QAbstractItemModel* table = window.candidatesView()->table()->model();
  ASSERT_EQ(table->rowCount(), 1);
  EXPECT_EQ(table->index(0, CandidatesModel::Schedule).data().toString(), QStringLiteral("1f1b"));
  schedule->setCurrentIndex(schedule->findText(QStringLiteral("interleaved")));
  EXPECT_EQ(table->rowCount(), 0);
  schedule->setCurrentIndex(0);
  EXPECT_EQ(table->rowCount(), test::kSampleCandidates);
}

TEST(MainWindow, SelectingARowUpdatesTheMemoryChartAndTheTimeline) {
  MainWindow window(quiet());
  window.show();
  ASSERT_TRUE(window.openReport(test::samplePath()));
  QSignalSpy memoryReset(window.memoryModel(), &QAbstractItemModel::modelReset);
  QSignalSpy timelineLoaded(window.timelineModel(), &TimelineModel::loaded);
  QTableView* table = window.candidatesView()->table();
  const QModelIndex row =
      window.candidatesView()->proxy()->mapFromSource(window.candidatesModel()->indexOfCandidate(1));
  table->selectionModel()->setCurrentIndex(row, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  EXPECT_EQ(window.selectedCandidate(), 1u);
  EXPECT_EQ(memoryReset.count(), 1);
  ASSERT_TRUE(timelineLoaded.wait(10000));  // traces are read on the thread pool
  EXPECT_EQ(timelineLoaded.count(), 1);
  EXPECT_EQ(window.memoryModel()->candidateLabel(), QStringLiteral("[3,5] x4 except_last"));
  EXPECT_EQ(window.memoryView()->chartView()->chart()->title(),
            QStringLiteral("Peak memory per device: [3,5] x4 except_last"));
  EXPECT_EQ(window.breakdownModel()->candidateLabel(), QStringLiteral("[3,5] x4 except_last"));
  EXPECT_EQ(window.breakdownModel()->rowCount(), 4);  // 2 devices, measured and predicted
  EXPECT_EQ(window.breakdownView()->chartView()->chart()->title(),
            QStringLiteral("Where the step goes: [3,5] x4 except_last"));
  // [3,5] x4 except_last: 4 forward, 3 recompute, 4 backward on partition 0.
  EXPECT_EQ(window.timelineModel()->lanes()[0].spans.size(), 11u);
  EXPECT_EQ(window.tuningPanel()->model()->candidate().balance, (std::vector<std::int64_t>{3, 5}));
  EXPECT_TRUE(window.candidatesView()->detailsText().contains(QStringLiteral("[3,5] x4 except_last")));
  EXPECT_TRUE(window.candidatesView()->detailsText().contains(QStringLiteral("over 5 steps")));
}

TEST(MainWindow, AMalformedFileLeavesTheWindowAsItWas) {
  QTemporaryDir dir;
  const QString bad = dir.filePath(QStringLiteral("broken.json"));
  {
    QFile file(bad);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("{\"schema\": \"pipeprof.report/v1\", \"candidates\": 7}");
  }
  MainWindow window(quiet());
  window.show();
  ASSERT_TRUE(window.openReport(test::samplePath()));
  window.selectCandidate(2);
  const QString title = window.windowTitle();
  const std::shared_ptr<const Report> before = window.document()->report();
  EXPECT_FALSE(window.openReport(bad));
  EXPECT_TRUE(window.lastError().contains(QStringLiteral("broken.json"))) << window.lastError().toStdString();
  EXPECT_EQ(window.document()->report(), before);
  EXPECT_EQ(window.windowTitle(), title);
  EXPECT_EQ(window.candidatesView()->table()->model()->rowCount(), test::kSampleCandidates);
  EXPECT_EQ(window.selectedCandidate(), 2u);
  EXPECT_EQ(window.memoryModel()->candidate(), 2u);
}

TEST(MainWindow, ExportsChartsAndTimelineAsPngAndSvg) {
  QTemporaryDir dir;
  MainWindow window(quiet());
  window.resize(1200, 800);
  window.show();
  ASSERT_TRUE(window.openReport(test::samplePath()));
  for (MainWindow::View view : {MainWindow::View::Accuracy, MainWindow::View::Memory, MainWindow::View::Breakdown,
                                MainWindow::View::Timeline}) {
    window.showView(view);
    const QString png = dir.filePath(QStringLiteral("view%1.png").arg(static_cast<int>(view)));
    const QString svg = dir.filePath(QStringLiteral("view%1.svg").arg(static_cast<int>(view)));
    EXPECT_EQ(window.exportView(view, png), QString());
    EXPECT_EQ(window.exportView(view, svg), QString());
    EXPECT_FALSE(QImage(png).isNull()) << png.toStdString();
    QFile file(svg);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    EXPECT_TRUE(file.readAll().contains("<svg"));
  }
  EXPECT_FALSE(window.exportView(MainWindow::View::Memory, QStringLiteral("/nonexistent/dir/x.png")).isEmpty());
}

TEST(MainWindow, AReportWithoutProfileOrClusterOpensWithTuningDisabled) {
  QTemporaryDir dir;
  Report report = *test::sampleReport();
  report.profile.reset();
  report.cluster.reset();
  const QString path = dir.filePath(QStringLiteral("bare.json"));
  writeReport(report, path.toStdString());
  MainWindow window(quiet());
  window.show();
  ASSERT_TRUE(window.openReport(path));
  EXPECT_EQ(window.candidatesView()->table()->model()->rowCount(), test::kSampleCandidates);
  EXPECT_FALSE(window.tuningPanel()->model()->hasInputs());
  EXPECT_EQ(window.memoryModel()->index(0, MemoryModel::Capacity).data().toString(), QStringLiteral("unbounded"));
  window.selectCandidate(6);  // no trace files and nothing to simulate from
  QSignalSpy loaded(window.timelineModel(), &TimelineModel::loaded);
  ASSERT_TRUE(loaded.wait(10000));
  ASSERT_EQ(window.timelineModel()->sections().size(), 2u);
  EXPECT_EQ(window.timelineModel()->sections()[0].message,
            QStringLiteral("The report has no predicted trace for this candidate."));
}

TEST(MainWindow, DroppingAReportOpensIt) {
  MainWindow window(quiet());
  window.show();
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(test::samplePath())});
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &drop);
  EXPECT_EQ(window.candidatesView()->table()->model()->rowCount(), test::kSampleCandidates);
}

TEST(MainWindow, ParsesViewNames) {
  EXPECT_EQ(MainWindow::parseView(QStringLiteral("breakdown")), MainWindow::View::Breakdown);
  EXPECT_EQ(MainWindow::parseView(QStringLiteral("timeline")), MainWindow::View::Timeline);
  EXPECT_EQ(MainWindow::parseView(QStringLiteral("tuning")), MainWindow::View::Tuning);
  EXPECT_EQ(MainWindow::parseView(QStringLiteral("charts")), std::nullopt);
}

}  // namespace
}  // namespace pipeprof::gui
