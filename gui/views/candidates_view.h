// The candidates table with its filter bar and accuracy summary.
#pragma once

#include <QWidget>

#include <optional>

QT_BEGIN_NAMESPACE
class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;
QT_END_NAMESPACE

namespace pipeprof::gui {

class CandidatesModel;
class CandidatesFilterModel;

/// Sortable, filterable table of candidates. Selecting a row emits candidateSelected; the
/// context menu copies the `pipeprof run` / `pipeprof sweep` command of a row or tunes it.
class CandidatesView : public QWidget {
  Q_OBJECT

 public:
  CandidatesView(CandidatesModel* model, QWidget* parent = nullptr);

  /// Selects the candidate's row without emitting candidateSelected.
  void setCurrentCandidate(std::optional<std::size_t> candidate);
  QTableView* table() const { return table_; }
  CandidatesFilterModel* proxy() const { return proxy_; }
  QLineEdit* filterEdit() const { return filter_; }
  /// "All schedules", "gpipe", "1f1b", "interleaved": keeps one schedule family.
  QComboBox* scheduleCombo() const { return schedule_; }
  /// Rich text describing the current candidate under the table.
  QString detailsText() const;
  QWidget* exportTarget() const;

 signals:
  void candidateSelected(std::size_t candidate);
  void tuneRequested(std::size_t candidate);

 private:
  void refreshSummary();
  void showDetails(std::optional<std::size_t> candidate);
  void showContextMenu(const QPoint& position);

  CandidatesModel* model_;
  CandidatesFilterModel* proxy_;
  QLineEdit* filter_;
  QComboBox* status_;
  QComboBox* schedule_;
  QLabel* summary_;
  QTableView* table_;
  QLabel* details_;
  bool settingSelection_ = false;
};

}  // namespace pipeprof::gui
