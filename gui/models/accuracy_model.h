// Predicted against measured step time and throughput per candidate, for the accuracy charts.
#pragma once

#include <pipeprof/core/accuracy.h>
#include <pipeprof/core/measuring_conditions.h>
#include <pipeprof/core/report.h>

#include <QAbstractTableModel>
#include <QStringList>

#include <memory>

namespace pipeprof::gui {

/// One row per candidate, best predicted throughput first. Numeric columns hold doubles in
/// DisplayRole (ms, samples/s, percent); values that do not exist (not measured) are an
/// invalid QVariant.
class AccuracyModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    Label,
    PredictedStepMs,
    MeasuredStepMs,
    PredictedThroughput,
    MeasuredThroughput,
    StepErrorPct,
    ColumnCount
  };
  enum Role {
    CandidateIndexRole = Qt::UserRole + 1,  ///< index into Report::candidates
    SuggestedRole,                          ///< bool
    MeasuredRole,                           ///< bool: has a measurement
  };

  explicit AccuracyModel(QObject* parent = nullptr);

  void setReport(std::shared_ptr<const Report> report);
  /// MAPE, Spearman and suggestion quality over the measured candidates.
  const AccuracySummary& summary() const { return summary_; }
  /// The summary as rich-text phrases for the view's header: measured count, step-time MAPE
  /// (bias) after and before the sweep's drift factor, peak-memory MAPE, Spearman, the
  /// suggestion's share of the best measured throughput; then how steady the machine was while
  /// measuring (conditionsParts).
  QStringList summaryParts() const;
  /// How steady the machine was while the sweep measured, as rich-text phrases: the candidates
  /// whose rounds agree, rounds measured again or kept contended, the reference pipelines'
  /// speed range, and how many candidates the best measured is not told apart from.
  static QStringList conditionsParts(const MeasuringConditions& conditions);
  /// Number of rows with a measurement.
  int measuredCount() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const Report> report_;
  std::vector<std::size_t> order_;  ///< row -> candidate index
  AccuracySummary summary_;
};

}  // namespace pipeprof::gui
