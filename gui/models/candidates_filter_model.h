// Sorting and filtering of the candidates table by text, status and schedule.
#pragma once

#include <pipeprof/core/report.h>

#include <QSortFilterProxyModel>

#include <optional>

namespace pipeprof::gui {

/// Sorts CandidatesModel numerically (its SortRole) and keeps the rows whose label or status
/// contains the filter text (case-insensitive), whose status matches the status filter and
/// whose schedule family matches the schedule filter.
class CandidatesFilterModel : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit CandidatesFilterModel(QObject* parent = nullptr);

  void setFilterText(const QString& text);
  const QString& filterText() const { return text_; }
  /// nullopt shows every status.
  void setStatusFilter(std::optional<CandidateStatus> status);
  std::optional<CandidateStatus> statusFilter() const { return status_; }
  /// nullopt shows every schedule family (interleaved matches every v).
  void setScheduleFilter(std::optional<ScheduleKind> schedule);
  std::optional<ScheduleKind> scheduleFilter() const { return schedule_; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  QString text_;
  std::optional<CandidateStatus> status_;
  std::optional<ScheduleKind> schedule_;
};

}  // namespace pipeprof::gui
