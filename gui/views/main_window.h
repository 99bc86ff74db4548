// The main window: menus, drag and drop, the six views and the selection they share.
#pragma once

#include <pipeprof/core/candidate.h>

#include <QMainWindow>

#include <memory>
#include <optional>

QT_BEGIN_NAMESPACE
class QLabel;
class QMenu;
class QTabWidget;
QT_END_NAMESPACE

namespace pipeprof::gui {

class AccuracyChartView;
class AccuracyModel;
class BreakdownChartView;
class BreakdownModel;
class CandidatesModel;
class CandidatesView;
class MemoryChartView;
class MemoryModel;
class ReportDocument;
class TimelineModel;
class TimelineView;
class TuningPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  enum class View { Candidates, Accuracy, Memory, Breakdown, Timeline, Tuning };
  /// "candidates", "accuracy", "memory", "breakdown", "timeline", "tuning"; nullopt for anything else.
  static std::optional<View> parseView(const QString& name);

  struct Options {
    bool persistSettings = true;  ///< remember recent files (off for tests and screenshots)
    bool dialogs = true;          ///< show errors in dialogs (off for tests and screenshots)
  };

  explicit MainWindow(Options options, QWidget* parent = nullptr);
  MainWindow() : MainWindow(Options{}) {}

  /// Opens a report; on failure shows the reader's message and keeps everything as it was.
  bool openReport(const QString& path);
  void showView(View view);
  /// Selects a candidate everywhere: table, memory chart, step breakdown, timeline, tuning.
  void selectCandidate(std::optional<std::size_t> candidate);
  std::optional<std::size_t> selectedCandidate() const { return selected_; }
  /// Writes the current (or given) view as PNG or SVG; returns an error message or empty.
  QString exportView(View view, const QString& path);
  /// The last error shown to the user (load failures), for tests.
  const QString& lastError() const { return lastError_; }

  ReportDocument* document() const { return document_; }
  CandidatesModel* candidatesModel() const { return candidates_; }
  AccuracyModel* accuracyModel() const { return accuracy_; }
  MemoryModel* memoryModel() const { return memory_; }
  BreakdownModel* breakdownModel() const { return breakdown_; }
  TimelineModel* timelineModel() const { return timeline_; }
  CandidatesView* candidatesView() const { return candidatesView_; }
  AccuracyChartView* accuracyView() const { return accuracyView_; }
  MemoryChartView* memoryView() const { return memoryView_; }
  BreakdownChartView* breakdownView() const { return breakdownView_; }
  TimelineView* timelineView() const { return timelineView_; }
  TuningPanel* tuningPanel() const { return tuningPanel_; }

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildMenus();
  void onReportChanged();
  void showError(const QString& title, const QString& message);
  void addRecent(const QString& path);
  void fillRecentMenu();
  void exportCurrent(const QString& suffix);

  Options options_;
  ReportDocument* document_;
  CandidatesModel* candidates_;
  AccuracyModel* accuracy_;
  MemoryModel* memory_;
  BreakdownModel* breakdown_;
  TimelineModel* timeline_;
  QTabWidget* tabs_;
  CandidatesView* candidatesView_;
  AccuracyChartView* accuracyView_;
  MemoryChartView* memoryView_;
  BreakdownChartView* breakdownView_;
  TimelineView* timelineView_;
  TuningPanel* tuningPanel_;
  QMenu* recentMenu_ = nullptr;
  QLabel* statusInfo_;
  std::optional<std::size_t> selected_;
  std::optional<Candidate> tunedFrom_;  ///< what the tuning panel was last loaded from
  QString openPath_;
  QString lastError_;
};

}  // namespace pipeprof::gui
