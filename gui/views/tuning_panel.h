// Tuning: edit schedule, stages per device, balance, chunks and mode (or drag boundaries) and see the prediction at
// once.
#pragma once

#include <pipeprof/core/report.h>
#include <pipeprof/simulator/calibration.h>

#include <QWidget>

#include <memory>
#include <optional>

QT_BEGIN_NAMESPACE
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
QT_END_NAMESPACE

namespace pipeprof::gui {

class BalanceEditor;
class CandidatePicker;
class SuggestPanel;
class TimelineCanvas;
class TimelineModel;
class TuningModel;

class TuningPanel : public QWidget {
  Q_OBJECT

 public:
  explicit TuningPanel(QWidget* parent = nullptr);

  /// The report whose profile and cluster are tuned. A live reload of the same sweep
  /// (reloaded = true) keeps the user's edits; anything else resets the panel.
  void setReport(std::shared_ptr<const Report> report, bool reloaded = false);
  /// Starts tuning from a candidate of the report / from any candidate (e.g. a suggestion).
  void loadCandidate(std::size_t candidate);
  void loadCandidate(const Candidate& candidate, const QString& origin);

  TuningModel* model() const { return model_; }
  TimelineModel* timelineModel() const { return timeline_; }
  QLineEdit* balanceEdit() const { return balance_; }
  QSpinBox* chunksSpin() const { return chunks_; }
  QComboBox* modeCombo() const { return mode_; }
  /// gpipe / 1f1b / interleaved; the item data is the ScheduleKind as int.
  QComboBox* scheduleCombo() const { return schedule_; }
  QPushButton* scheduleFileButton() const { return scheduleFile_; }
  /// v, stages per device: enabled for interleaved only (minimum 2).
  QSpinBox* stagesPerDeviceSpin() const { return stagesPerDevice_; }
  /// sgd / momentum / adam / adamw (beside the checkpoint mode); the item data is the OptimizerKind as int. A kind is
  /// enabled when the profile can stand for it (Profile::predictsOptimizer: its own, or one whose steps it measured);
  /// picking one predicts for it.
  QComboBox* optimizerCombo() const { return optimizer_; }
  /// The red message under the controls (an invalid edit's reason), empty when valid.
  QString errorText() const;
  /// The training step the predictions are for, as the configuration's title shows it: the
  /// optimizer picked (at first the profile's) and the profile's precision ("adamw, bf16"; the
  /// hyperparameters in its tooltip).
  QString trainingStepText() const;
  /// The prediction summary as shown (rich text), with how it relates to the report's own.
  QString predictionText() const;
  CandidatePicker* picker() const { return picker_; }
  SuggestPanel* suggestPanel() const { return suggest_; }
  BalanceEditor* balanceEditor() const { return editor_; }
  QWidget* exportTarget() const { return const_cast<TuningPanel*>(this); }

 private:
  /// The constructor's steps: the controls' ranges, items and tooltips; the layout (the
  /// configuration, prediction and Suggest on the left, the balance editor and the timeline on
  /// the right); the controls' edits into the model; the model's changes into the view, and
  /// Suggest's picks into the model.
  void setUpControls();
  void layOut();
  void connectControls();
  void connectModel();
  void syncControls();
  void showPrediction();
  /// Predicts for another optimizer: the report's profile as if measured with it.
  void setOptimizer(OptimizerKind kind);
  /// The configuration's title and tooltip for the training step predicted.
  void showTrainingStep();
  /// The cluster a candidate is predicted on: the report's, or one unbounded device per stage.
  Cluster clusterFor(const Candidate& candidate) const;
  /// The cluster Suggest searches: the report's, or one unbounded device per measured device.
  Cluster suggestCluster() const;
  /// Whether the optimizer predicted is the one the report's profile was measured with.
  bool tuningTheReportsStep() const;

  std::shared_ptr<const Report> report_;
  TuningModel* model_;
  TimelineModel* timeline_;
  CandidatePicker* picker_;
  QLineEdit* balance_;
  QSpinBox* chunks_;
  QComboBox* mode_;
  QComboBox* schedule_;
  QPushButton* scheduleFile_;  ///< "Order file…": a schedule CSV to run (schedule custom)
  QSpinBox* stagesPerDevice_;
  QComboBox* optimizer_;
  QGroupBox* configuration_;
  QLabel* error_;
  QLabel* prediction_;
  BalanceEditor* editor_;
  TimelineCanvas* canvas_;
  SuggestPanel* suggest_;
  /// The report's profile as tuned: as measured, or as if measured with the optimizer picked.
  std::optional<Profile> profile_;
  std::optional<Prediction> basePrediction_;
  /// The calibration of the report (reportCalibration): the panel predicts with the report's
  /// profile, cluster and calibration, as the sweep did before its drift factor.
  Calibration calibration_;
  /// Why the report's calibration could not be read (the panel then predicts from the raw
  /// profile); empty when it could.
  QString calibrationError_;
  /// The report's own predictions of the starting candidate: after the sweep's drift factor,
  /// and before it (equal to this panel's prediction; absent in older reports).
  std::optional<TimeNs> reportIterationNs_;
  std::optional<TimeNs> reportBeforeDriftNs_;
  QString baseLabel_;
};

}  // namespace pipeprof::gui
