// Per-device peak memory of one candidate, predicted beside measured, against device capacity.
#pragma once

#include <pipeprof/core/report.h>

#include <QAbstractTableModel>

#include <memory>
#include <optional>

namespace pipeprof::gui {

/// One row per pipeline device d of the selected candidate (p rows: under interleaved a device
/// holds the v stages d, d + p, ..., under zbv stages d and 2p - 1 - d; Prediction::peakBytes and
/// Measurement::peakBytes are per pipeline device). DisplayRole is text with units; BytesRole holds the raw byte count
/// (qlonglong) or an invalid QVariant when unknown (not measured, or an unbounded device).
class MemoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    PipelineDevice,  ///< "device 0 · stage 0" or, interleaved, "device 0 · stages 0, 2"
    Device,          ///< the cluster device's name
    Predicted,
    LatePredicted,  ///< the predicted peak with other devices' frees late (Prediction::latePeakBytes)
    Measured,
    Capacity,
    PeakOp,
    ColumnCount
  };
  enum Role { BytesRole = Qt::UserRole + 1 };

  explicit MemoryModel(QObject* parent = nullptr);

  /// Shows candidate `candidate` of the report; nullopt (or a null report) clears the table.
  void setCandidate(std::shared_ptr<const Report> report, std::optional<std::size_t> candidate);
  std::optional<std::size_t> candidate() const { return candidate_; }
  /// "[2,6] x8 except_last", or empty.
  QString candidateLabel() const;
  bool hasMeasurement() const;
  /// The largest value of any column, in bytes (for the chart's axis range).
  qint64 maxBytes() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString stages;  ///< "stage 0" / "stages 0, 2"
    QString device;
    std::optional<Bytes> predicted;
    std::optional<Bytes> latePredicted;
    std::optional<Bytes> measured;
    std::optional<Bytes> capacity;
    QString peakOp;
  };
  std::shared_ptr<const Report> report_;
  std::optional<std::size_t> candidate_;
  std::vector<Row> rows_;
};

}  // namespace pipeprof::gui
