// Tuning: the profile's layers with their stage, re-simulated on every edit of balance, chunks, mode or schedule.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/simulator/predictor.h>

#include <QAbstractTableModel>

#include <optional>
#include <vector>

namespace pipeprof::gui {

/// One row per layer of the profile: its stage under the edited balance and its
/// costs at the micro-batch size batch / chunks (rounded up). Every edit that yields a valid
/// candidate runs the simulator at once (a step of a small model simulates in well under a
/// millisecond) and emits predictionChanged(); an invalid edit (a balance that does not sum to
/// the layers, a shape the schedule cannot run: scheduleShapeError's text) emits
/// invalidEdit(message) and keeps the last valid candidate and prediction. Edits build on the
/// last edited configuration, valid or not (edited()), so that fixing the chunks after picking
/// interleaved keeps interleaved.
class TuningModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Layer, Name, StageColumn, Forward, Backward, Saved, Params, ColumnCount };
  enum Role { ValueRole = Qt::UserRole + 1 };  ///< raw ns / bytes / index as qlonglong

  explicit TuningModel(QObject* parent = nullptr);

  /// Starts tuning from the candidate (its balance must sum to the profile's layer count),
  /// predicting with the profile, cluster and calibration through one Predictor -- the
  /// prediction `pipeprof simulate --calibration` and the report (before drift) make. Throws
  /// std::invalid_argument (the simulator's message) when it does not match.
  void setInputs(const Profile& profile, const Cluster& cluster, const Candidate& candidate,
                 const Calibration& calibration = {});
  void clear();
  bool hasInputs() const { return profile_.has_value(); }

  /// Edits. Each returns false (and emits invalidEdit) when the result is not a valid
  /// candidate, e.g. a balance that does not sum to the layer count.
  bool setBalance(const std::vector<std::int64_t>& balance);
  bool setChunks(std::int64_t chunks);
  bool setCheckpoint(Checkpoint checkpoint);
  /// Sets the schedule family and v (forced to 1 for gpipe, 1f1b and zb1p, 2 for zbv, at least
  /// 2 for interleaved and interleaved-zb), dropping a custom order, keeping the p pipeline devices: when the balance
  /// does not have p * v stages, it is replaced by the min-bottleneck balance of p * v stages over the layers' compute
  /// times.
  bool setSchedule(ScheduleKind schedule, std::int64_t stagesPerDevice = 1);
  /// Runs the order of a schedule CSV (torch's, or `pipeprof schedule export`'s; the CLI's
  /// --schedule-file): schedule custom, its stages, placement, v and micro-batches; the balance
  /// kept when it has the order's stages, else the fastest by layer time. An unreadable file or
  /// an order that breaks a rule is an invalid edit naming the rank and the action.
  bool setScheduleFile(const QString& path);
  /// Moves the boundary after stage `boundary` (0 <= boundary < n - 1) so that stage
  /// boundary + 1 starts at layer `firstLayer`; every stage keeps at least one layer.
  bool moveBoundary(std::int64_t boundary, std::int64_t firstLayer);

  const std::optional<Profile>& profile() const { return profile_; }
  const Cluster& cluster() const { return cluster_; }
  /// The calibration the predictions apply (empty: the raw profile).
  const Calibration& calibration() const { return predictor_ ? predictor_->calibration() : noCalibration_; }
  /// The last valid candidate (the one predicted).
  const Candidate& candidate() const { return candidate_; }
  /// The last edited configuration: candidate() after a valid edit, else what was asked.
  const Candidate& edited() const { return edited_; }
  const Prediction& prediction() const { return prediction_; }
  /// The predicted timeline of the current candidate.
  const Trace& trace() const { return trace_; }
  /// Micro-batch size the per-layer costs are shown at.
  std::int64_t microBatch() const;
  /// Per-layer compute time (forward + backward) and memory (saved activations of one
  /// micro-batch + parameters, gradients and optimizer state) at microBatch().
  std::vector<TimeNs> layerTimesNs() const;
  std::vector<Bytes> layerBytes() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void predictionChanged();
  void invalidEdit(const QString& message);

 private:
  /// The profile's layers (0 without one).
  std::int64_t layerCount() const;
  /// Keeps next's balance when it has `stages` entries, else gives it the min-bottleneck balance
  /// of that many stages over the layers' compute times; false when the model has fewer layers.
  bool keepOrRebalance(Candidate& next, std::int64_t stages) const;
  bool apply(const Candidate& candidate);
  /// Why the candidate cannot be simulated before the simulator is asked, or empty.
  std::string shapeError(const Candidate& candidate) const;
  std::int64_t stageOfLayer(std::int64_t layer) const;

  std::optional<Profile> profile_;
  Cluster cluster_;
  std::optional<Predictor> predictor_;  ///< the profile, cluster and calibration, applied once
  Calibration noCalibration_;
  Candidate candidate_;
  Candidate edited_;
  Prediction prediction_;
  Trace trace_;
};

}  // namespace pipeprof::gui
