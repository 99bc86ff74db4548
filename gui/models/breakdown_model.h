// The step breakdown of one candidate: per device, the measured and the predicted step by
// category (core/step_breakdown.h), one row per bar of the chart.
#pragma once

#include <pipeprof/core/report.h>

#include <QAbstractTableModel>

#include <memory>
#include <optional>
#include <vector>

namespace pipeprof::gui {

/// Rows: for each pipeline device d, its measured breakdown then its predicted one (each only
/// where the report holds it). Columns: the bar's label, one per category (stepCategories()),
/// then the step. DisplayRole is a duration with its unit; NsRole the mean ns per step
/// (qlonglong).
class BreakdownModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Bar = 0, FirstCategory = 1, Step = FirstCategory + static_cast<int>(kStepCategories), ColumnCount };
  enum Role { NsRole = Qt::UserRole + 1 };

  explicit BreakdownModel(QObject* parent = nullptr);

  /// Shows candidate `candidate` of the report; nullopt (or a null report) clears the table.
  void setCandidate(std::shared_ptr<const Report> report, std::optional<std::size_t> candidate);
  std::optional<std::size_t> candidate() const { return candidate_; }
  /// "[2,6] x8 except_last", or empty.
  QString candidateLabel() const;
  /// The category of a category column.
  static StepCategory categoryOf(int column) {
    return stepCategories()[static_cast<std::size_t>(column - FirstCategory)];
  }
  /// Whether any row spends time in the category (the chart leaves out those that do not).
  bool used(StepCategory category) const;
  /// Whether the row is a measured breakdown (else predicted).
  bool measuredRow(int row) const;
  /// The longest step of any row, in ns (for the chart's axis).
  qint64 maxStepNs() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString label;  ///< "device 0 · measured"
    bool measured = true;
    DeviceStepBreakdown breakdown;
  };
  std::shared_ptr<const Report> report_;
  std::optional<std::size_t> candidate_;
  std::vector<Row> rows_;
};

}  // namespace pipeprof::gui
