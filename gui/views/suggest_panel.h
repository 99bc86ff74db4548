// "Suggest": the simulator's search under the user's constraints, on a worker thread, with results.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/simulator/search.h>

#include <QWidget>

#include <iterator>
#include <optional>

QT_BEGIN_NAMESPACE
class QCheckBox;
class QFormLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
QT_END_NAMESPACE

namespace pipeprof::gui {

class SuggestWorker;

/// Constraints (devices, memory per device, schedules, stages per device of interleaved, chunk
/// counts, checkpoint modes), a Suggest button
/// that runs SuggestWorker with a progress bar and a Cancel button, and the best candidates
/// with actions to tune one or copy its `pipeprof run` / `pipeprof sweep` command line.
class SuggestPanel : public QWidget {
  Q_OBJECT

 public:
  /// How many of the best candidates are listed.
  static constexpr int kShown = 10;

  explicit SuggestPanel(QWidget* parent = nullptr);

  /// What to search: the profile, cluster and calibration of the report (the search predicts
  /// as the report does before its drift factor), its environment (for command lines) and
  /// mini-batch. A null profile disables the panel.
  void setContext(const std::optional<Profile>& profile, const Cluster& cluster, const ReportEnvironment& environment,
                  std::int64_t batch, const Calibration& calibration = {});
  /// The search space and cluster from the constraints; nullopt with a message when a
  /// constraint is malformed.
  std::optional<SearchSpace> searchSpace(QString* error) const;
  Cluster constrainedCluster() const;

  SuggestWorker* worker() const { return worker_; }
  QPushButton* suggestButton() const { return suggest_; }
  QPushButton* cancelButton() const { return cancel_; }
  QTableWidget* results() const { return results_; }
  QLineEdit* chunksEdit() const { return chunks_; }
  /// gpipe, 1f1b, interleaved (in that order).
  QCheckBox* scheduleCheck(ScheduleKind kind) const { return schedules_[static_cast<std::size_t>(kind)]; }
  /// Whether a family with several stages per device (interleaved, interleaved-zb) is ticked.
  bool virtualStagesChecked() const;
  /// Stages per device to try for interleaved, e.g. "2,4".
  QLineEdit* stagesPerDeviceEdit() const { return stagesPerDevice_; }

 public slots:
  void startSuggest();

 signals:
  void tuneRequested(const pipeprof::Candidate& candidate);

 private:
  /// The constructor's steps: the constraints' form (devices, memory, schedules and v, chunks,
  /// checkpoint modes); the row of Suggest, the progress bar and Cancel; the results table; the
  /// worker's progress, end and failure into the view; the selected result into the actions.
  QFormLayout* constraintsForm();
  QHBoxLayout* runRow();
  void setUpResults();
  void connectWorker();
  void connectResults();
  void showResults();
  std::optional<Candidate> selectedCandidate() const;

  std::optional<Profile> profile_;
  Cluster cluster_;
  Calibration calibration_;
  ReportEnvironment environment_;
  std::int64_t batch_ = 1;
  SuggestWorker* worker_;
  QSpinBox* devices_;
  QLineEdit* memory_;
  QLineEdit* chunks_;
  QCheckBox* modes_[std::size(kAllCheckpoints)];
  QCheckBox* schedules_[std::size(kScheduleKinds)];
  QLineEdit* stagesPerDevice_;
  QPushButton* suggest_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* status_;
  QTableWidget* results_;
  QPushButton* tune_;
  QPushButton* copyRun_;
  QPushButton* copySweep_;
};

}  // namespace pipeprof::gui
