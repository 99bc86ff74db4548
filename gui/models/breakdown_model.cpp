// The step breakdown of one candidate, one row per bar: device by device, measured then predicted.
#include "models/breakdown_model.h"

#include "models/format.h"

#include <algorithm>

namespace pipeprof::gui {

BreakdownModel::BreakdownModel(QObject* parent) : QAbstractTableModel(parent) {}

void BreakdownModel::setCandidate(std::shared_ptr<const Report> report, std::optional<std::size_t> candidate) {
  beginResetModel();
  report_ = std::move(report);
  candidate_ = report_ && candidate && *candidate < report_->candidates.size() ? candidate : std::nullopt;
  rows_.clear();
  if (candidate_) {
    const CandidateResult& result = report_->candidates[*candidate_];
    const std::size_t devices = std::max(result.measuredBreakdown ? result.measuredBreakdown->devices.size() : 0,
                                         result.predictedBreakdown ? result.predictedBreakdown->devices.size() : 0);
    for (std::size_t d = 0; d < devices; ++d) {
      if (result.measuredBreakdown && d < result.measuredBreakdown->devices.size()) {
        rows_.push_back({tr("device %1 · measured").arg(d), true, result.measuredBreakdown->devices[d]});
      }
      if (result.predictedBreakdown && d < result.predictedBreakdown->devices.size()) {
        rows_.push_back({tr("device %1 · predicted").arg(d), false, result.predictedBreakdown->devices[d]});
      }
    }
  }
  endResetModel();
}

QString BreakdownModel::candidateLabel() const {
  return candidate_ ? qs(report_->candidates[*candidate_].candidate.label()) : QString();
}

bool BreakdownModel::used(StepCategory category) const {
  return std::any_of(rows_.begin(), rows_.end(), [category](const Row& row) { return row.breakdown.at(category) > 0; });
}

bool BreakdownModel::measuredRow(int row) const { return rows_.at(static_cast<std::size_t>(row)).measured; }

qint64 BreakdownModel::maxStepNs() const {
  TimeNs most = 0;
  for (const Row& row : rows_) most = std::max(most, row.breakdown.stepNs());
  return most;
}

int BreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BreakdownModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BreakdownModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& row = rows_[static_cast<std::size_t>(index.row())];
  if (index.column() == Bar) return role == Qt::DisplayRole ? QVariant(row.label) : QVariant();
  const TimeNs ns = index.column() == Step ? row.breakdown.stepNs() : row.breakdown.at(categoryOf(index.column()));
  if (role == NsRole) return static_cast<qlonglong>(ns);
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::DisplayRole) return durationText(ns);
  return {};
}

QVariant BreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == Bar) return tr("Device");
  if (section == Step) return tr("Step");
  if (section > Bar && section < Step) return qs(stepCategoryName(categoryOf(section)));
  return {};
}

}  // namespace pipeprof::gui
