// The main window: menus, drag and drop, the five views and the selection they share.
#include "views/main_window.h"

#include "models/accuracy_model.h"
#include "models/breakdown_model.h"
#include "models/candidates_model.h"
#include "models/format.h"
#include "models/memory_model.h"
#include "models/report_document.h"
#include "models/timeline_model.h"
#include "views/accuracy_chart_view.h"
#include "views/breakdown_chart_view.h"
#include "views/candidate_picker.h"
#include "views/candidates_view.h"
#include "views/export.h"
#include "views/memory_chart_view.h"
#include "views/timeline_view.h"
#include "views/tuning_panel.h"

#include <QAction>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTime>

namespace pipeprof::gui {
namespace {

constexpr int kMaxRecent = 8;
const char* const kRecentKey = "recentFiles";

}  // namespace

std::optional<MainWindow::View> MainWindow::parseView(const QString& name) {
  if (name == QLatin1String("candidates")) return View::Candidates;
  if (name == QLatin1String("accuracy")) return View::Accuracy;
  if (name == QLatin1String("memory")) return View::Memory;
  if (name == QLatin1String("breakdown")) return View::Breakdown;
  if (name == QLatin1String("timeline")) return View::Timeline;
  if (name == QLatin1String("tuning")) return View::Tuning;
  return std::nullopt;
}

MainWindow::MainWindow(Options options, QWidget* parent)
    : QMainWindow(parent),
      options_(options),
      document_(new ReportDocument(this)),
      candidates_(new CandidatesModel(this)),
      accuracy_(new AccuracyModel(this)),
      memory_(new MemoryModel(this)),
      breakdown_(new BreakdownModel(this)),
      timeline_(new TimelineModel(this)),
      tabs_(new QTabWidget(this)),
      candidatesView_(new CandidatesView(candidates_, this)),
      accuracyView_(new AccuracyChartView(accuracy_, this)),
      memoryView_(new MemoryChartView(memory_, this)),
      breakdownView_(new BreakdownChartView(breakdown_, this)),
      timelineView_(new TimelineView(timeline_, this)),
      tuningPanel_(new TuningPanel(this)),
      statusInfo_(new QLabel(this)) {
  setWindowTitle(tr("pipeprof-gui"));
  setAcceptDrops(true);
  tabs_->setDocumentMode(true);
  tabs_->addTab(candidatesView_, tr("Candidates"));
  tabs_->addTab(accuracyView_, tr("Predicted vs measured"));
  tabs_->addTab(memoryView_, tr("Memory"));
  tabs_->addTab(breakdownView_, tr("Step breakdown"));
  tabs_->addTab(timelineView_, tr("Timeline"));
  tabs_->addTab(tuningPanel_, tr("Tuning"));
  setCentralWidget(tabs_);
  statusBar()->addPermanentWidget(statusInfo_);
  buildMenus();
  timeline_->clear();

  connect(document_, &ReportDocument::reportChanged, this, &MainWindow::onReportChanged);
  connect(document_, &ReportDocument::loadFailed, this, [this](const QString& path, const QString& message) {
    showError(tr("Cannot open %1").arg(QFileInfo(path).fileName()), message);
  });
  connect(document_, &ReportDocument::reloadFailed, this, [this](const QString& message) {
    lastError_ = message;
    statusBar()->showMessage(tr("Reload failed, showing the previous version: %1").arg(message));
  });
  connect(candidatesView_, &CandidatesView::candidateSelected, this, [this](std::size_t c) { selectCandidate(c); });
  connect(candidatesView_, &CandidatesView::tuneRequested, this, [this](std::size_t c) {
    selectCandidate(c);
    showView(View::Tuning);
  });
  connect(memoryView_->picker(), &CandidatePicker::candidatePicked, this,
          [this](std::size_t c) { selectCandidate(c); });
  connect(breakdownView_->picker(), &CandidatePicker::candidatePicked, this,
          [this](std::size_t c) { selectCandidate(c); });
  connect(timelineView_->picker(), &CandidatePicker::candidatePicked, this,
          [this](std::size_t c) { selectCandidate(c); });
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open report…"), QKeySequence::Open, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open a pipeprof report"), QFileInfo(openPath_).absolutePath(),
                                     tr("pipeprof reports (*.json);;All files (*)"));
    if (!path.isEmpty()) openReport(path);
  });
  recentMenu_ = file->addMenu(tr("Open &recent"));
  connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
  file->addAction(tr("Re&load"), QKeySequence::Refresh, document_, &ReportDocument::reload);
  file->addSeparator();
  file->addAction(tr("Export view as &PNG…"), this, [this] { exportCurrent(QStringLiteral("png")); });
  file->addAction(tr("Export view as &SVG…"), this, [this] { exportCurrent(QStringLiteral("svg")); });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (int tab = 0; tab < tabs_->count(); ++tab) {
    view->addAction(tabs_->tabText(tab), QKeySequence(Qt::ALT | static_cast<Qt::Key>(Qt::Key_1 + tab)), this,
                    [this, tab] { tabs_->setCurrentIndex(tab); });
  }
}

bool MainWindow::openReport(const QString& path) {
  if (!document_->open(path)) return false;
  addRecent(document_->path());
  return true;
}

void MainWindow::onReportChanged() {
  const std::shared_ptr<const Report> report = document_->report();
  const bool reloaded = openPath_ == document_->path();
  // Keep the selected candidate across a live reload when it is still there.
  std::optional<Candidate> previous;
  if (reloaded && selected_ && candidates_->report() && *selected_ < candidates_->report()->candidates.size()) {
    previous = candidates_->report()->candidates[*selected_].candidate;
  }
  if (!reloaded) tunedFrom_.reset();
  openPath_ = document_->path();
  candidates_->setReport(report);
  accuracy_->setReport(report);
  const std::optional<std::size_t> suggested = candidates_->suggested();
  memoryView_->picker()->setReport(report.get(), suggested);
  breakdownView_->picker()->setReport(report.get(), suggested);
  timelineView_->picker()->setReport(report.get(), suggested);
  tuningPanel_->setReport(report, reloaded);
  std::optional<std::size_t> next = suggested;
  if (previous) {
    for (std::size_t c = 0; c < report->candidates.size(); ++c) {
      if (report->candidates[c].candidate == *previous) next = c;
    }
  }
  if (!next && !report->candidates.empty()) next = 0;
  selected_.reset();
  selectCandidate(next);

  const QString name = QFileInfo(document_->path()).fileName();
  setWindowTitle(tr("%1 — pipeprof-gui").arg(name));
  QStringList devices;
  for (const std::string& device : report->environment.devices) devices << qs(device);
  statusInfo_->setText(tr("%1 · batch %2 · %3 · %4 · %5")
                           .arg(qs(report->environment.model), QString::number(report->environment.batch),
                                devices.join(QLatin1Char(',')),
                                trainingStepName(report->environment.optimizer.kind, report->environment.precision),
                                report->complete ? tr("sweep complete") : tr("sweep running or interrupted")));
  if (reloaded) statusBar()->showMessage(tr("Reloaded %1 at %2").arg(name, QTime::currentTime().toString()), 5000);
}

void MainWindow::selectCandidate(std::optional<std::size_t> candidate) {
  const std::shared_ptr<const Report> report = document_->report();
  if (!report || (candidate && *candidate >= report->candidates.size())) candidate.reset();
  const bool changed = candidate != selected_ || memory_->candidate() != candidate;
  selected_ = candidate;
  candidatesView_->setCurrentCandidate(candidate);
  memoryView_->picker()->setCurrentCandidate(candidate);
  breakdownView_->picker()->setCurrentCandidate(candidate);
  timelineView_->picker()->setCurrentCandidate(candidate);
  if (!changed) return;
  memory_->setCandidate(report, candidate);
  breakdown_->setCandidate(report, candidate);
  timeline_->loadCandidateAsync(*document_, candidate);
  // A live reload re-selects the same candidate: keep the user's tuning edits then.
  if (candidate && !(tunedFrom_ && *tunedFrom_ == report->candidates[*candidate].candidate)) {
    tunedFrom_ = report->candidates[*candidate].candidate;
    tuningPanel_->loadCandidate(*candidate);
  }
}

void MainWindow::showView(View view) { tabs_->setCurrentIndex(static_cast<int>(view)); }

QString MainWindow::exportView(View view, const QString& path) {
  QWidget* target = nullptr;
  switch (view) {
    case View::Candidates: target = candidatesView_->exportTarget(); break;
    case View::Accuracy: target = accuracyView_->exportTarget(); break;
    case View::Memory: target = memoryView_->exportTarget(); break;
    case View::Breakdown: target = breakdownView_->exportTarget(); break;
    case View::Timeline: target = timelineView_->exportTarget(); break;
    case View::Tuning: target = tuningPanel_->exportTarget(); break;
  }
  return exportWidget(target, path, tabs_->tabText(static_cast<int>(view)));
}

void MainWindow::exportCurrent(const QString& suffix) {
  const auto view = static_cast<View>(tabs_->currentIndex());
  const QString suggestion = QFileInfo(openPath_).absoluteDir().filePath(QStringLiteral("%1.%2").arg(
      tabs_->tabText(tabs_->currentIndex()).toLower().replace(QLatin1Char(' '), QLatin1Char('-')), suffix));
  const QString path = QFileDialog::getSaveFileName(this, tr("Export view"), suggestion,
                                                    suffix == QLatin1String("svg") ? tr("SVG images (*.svg)")
                                                                                   : tr("PNG images (*.png)"));
  if (path.isEmpty()) return;
  const QString error = exportView(view, path);
  if (!error.isEmpty()) showError(tr("Export failed"), error);
  else statusBar()->showMessage(tr("Exported %1").arg(path), 5000);
}

void MainWindow::showError(const QString& title, const QString& message) {
  lastError_ = message;
  statusBar()->showMessage(title + QStringLiteral(": ") + message, 10000);
  if (!options_.dialogs) return;
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // window-modal but not blocking: the window stays as it was behind it
}

void MainWindow::addRecent(const QString& path) {
  if (!options_.persistSettings) return;
  QSettings settings;
  QStringList recent = settings.value(kRecentKey).toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(kRecentKey, recent);
}

void MainWindow::fillRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = options_.persistSettings ? QSettings().value(kRecentKey).toStringList() : QStringList();
  for (const QString& path : recent) {
    recentMenu_->addAction(path, this, [this, path] { openReport(path); });
  }
  if (recent.isEmpty()) recentMenu_->addAction(tr("(none)"))->setEnabled(false);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) {
    openReport(urls.front().toLocalFile());
    event->acceptProposedAction();
  }
}

}  // namespace pipeprof::gui
