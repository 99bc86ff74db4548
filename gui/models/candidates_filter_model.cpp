// Sorting and filtering of the candidates table by text, status and schedule.
#include "models/candidates_filter_model.h"

#include "models/candidates_model.h"

namespace pipeprof::gui {

CandidatesFilterModel::CandidatesFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(CandidatesModel::SortRole);
}

void CandidatesFilterModel::setFilterText(const QString& text) {
  if (text == text_) return;
  text_ = text;
  invalidateRowsFilter();
}

void CandidatesFilterModel::setStatusFilter(std::optional<CandidateStatus> status) {
  if (status == status_) return;
  status_ = status;
  invalidateRowsFilter();
}

void CandidatesFilterModel::setScheduleFilter(std::optional<ScheduleKind> schedule) {
  if (schedule == schedule_) return;
  schedule_ = schedule;
  invalidateRowsFilter();
}

bool CandidatesFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  const QModelIndex index = sourceModel()->index(sourceRow, CandidatesModel::Status, sourceParent);
  if (status_ && index.data(CandidatesModel::StatusRole).toInt() != static_cast<int>(*status_)) return false;
  if (schedule_ && index.data(CandidatesModel::ScheduleRole).toInt() != static_cast<int>(*schedule_)) return false;
  if (text_.trimmed().isEmpty()) return true;
  const QString haystack = index.data(CandidatesModel::LabelRole).toString() + QLatin1Char(' ') +
                           index.data(Qt::DisplayRole).toString();
  return haystack.contains(text_.trimmed(), Qt::CaseInsensitive);
}

}  // namespace pipeprof::gui
