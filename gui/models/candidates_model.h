// The report's candidates as a table: configuration, predicted and measured time, memory, error.
#pragma once

#include <pipeprof/core/report.h>

#include <QAbstractTableModel>

#include <memory>
#include <optional>

namespace pipeprof::gui {

/// One row per candidate of the report, in report order. DisplayRole is text with units;
/// SortRole is the raw number (ns, bytes, samples/s, percent) so sorting is numeric. Missing
/// values (not measured) sort last.
class CandidatesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    Rank,             ///< predicted rank; "★" marks the suggestion
    Balance,
    Chunks,
    Mode,
    Schedule,         ///< "gpipe", "1f1b", "interleaved v2"
    PredictedStep,
    MeasuredStep,
    PredictedThroughput,
    MeasuredThroughput,
    PredictedPeak,    ///< per device, "1.2 GiB | 0.9 GiB"
    MeasuredPeak,
    StepError,        ///< (predicted - measured) / measured of the median step time
    Status,
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole + 1,
    CandidateIndexRole,  ///< index into Report::candidates (std::size_t as qulonglong)
    StatusRole,          ///< CandidateStatus as int
    SuggestedRole,       ///< bool: best measured, or best predicted when nothing is measured
    LabelRole,           ///< Candidate::label()
    ScheduleRole,        ///< ScheduleKind as int
  };

  explicit CandidatesModel(QObject* parent = nullptr);

  /// Shows the report's candidates (null clears the table).
  void setReport(std::shared_ptr<const Report> report);
  const Report* report() const { return report_.get(); }

  /// The suggested candidate: best measured when any was measured, else best predicted.
  std::optional<std::size_t> suggested() const;
  /// Row of the candidate with this index (rows are in report order).
  QModelIndex indexOfCandidate(std::size_t candidate, int column = 0) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant display(const CandidateResult& result, int column) const;
  QVariant sortValue(const CandidateResult& result, int column) const;

  std::shared_ptr<const Report> report_;
};

}  // namespace pipeprof::gui
