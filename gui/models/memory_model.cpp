// Per-device peak memory of one candidate, predicted beside measured, against device capacity.
#include "models/memory_model.h"

#include "models/format.h"

#include <QStringList>

#include <algorithm>

namespace pipeprof::gui {

MemoryModel::MemoryModel(QObject* parent) : QAbstractTableModel(parent) {}

void MemoryModel::setCandidate(std::shared_ptr<const Report> report, std::optional<std::size_t> candidate) {
  beginResetModel();
  report_ = std::move(report);
  candidate_ = report_ && candidate && *candidate < report_->candidates.size() ? candidate : std::nullopt;
  rows_.clear();
  if (candidate_) {
    const CandidateResult& result = report_->candidates[*candidate_];
    const auto n = static_cast<std::int64_t>(result.candidate.balance.size());
    const std::int64_t p = std::max<std::int64_t>(1, result.candidate.pipelineDevices());
    for (std::int64_t d = 0; d < p && d < n; ++d) {
      const auto j = static_cast<std::size_t>(d);
      Row row;
      QStringList stages;
      for (std::int64_t stage = 0; stage < n; ++stage) {
        if (result.candidate.deviceOfStage(stage) == d) stages << QString::number(stage);  // zbv: d and 2p-1-d
      }
      row.stages = (stages.size() == 1 ? tr("stage %1") : tr("stages %1")).arg(stages.join(QStringLiteral(", ")));
      const std::int64_t device = result.candidate.deviceOf(d);
      if (report_->cluster && device < report_->cluster->deviceCount()) {
        const DeviceSpec& spec = report_->cluster->devices[static_cast<std::size_t>(device)];
        row.device = qs(spec.name);
        row.capacity = spec.memoryBytes;
      } else if (static_cast<std::size_t>(device) < report_->environment.devices.size()) {
        row.device = qs(report_->environment.devices[static_cast<std::size_t>(device)]);
      } else {
        row.device = QStringLiteral("device %1").arg(device);
      }
      if (j < result.prediction.peakBytes.size()) row.predicted = result.prediction.peakBytes[j];
      if (j < result.prediction.latePeakBytes.size()) row.latePredicted = result.prediction.latePeakBytes[j];
      if (j < result.prediction.peakOp.size()) row.peakOp = qs(result.prediction.peakOp[j]);
      if (result.measurement && j < result.measurement->peakBytes.size())
        row.measured = result.measurement->peakBytes[j];
      rows_.push_back(row);
    }
  }
  endResetModel();
}

QString MemoryModel::candidateLabel() const {
  return candidate_ ? qs(report_->candidates[*candidate_].candidate.label()) : QString();
}

bool MemoryModel::hasMeasurement() const {
  return std::any_of(rows_.begin(), rows_.end(), [](const Row& row) { return row.measured.has_value(); });
}

qint64 MemoryModel::maxBytes() const {
  Bytes most = 0;
  for (const Row& row : rows_) {
    most = std::max({most, row.predicted.value_or(0), row.latePredicted.value_or(0), row.measured.value_or(0),
                     row.capacity.value_or(0)});
  }
  return most;
}

int MemoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int MemoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant MemoryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& row = rows_[static_cast<std::size_t>(index.row())];
  auto bytesOf = [&row](int column) -> std::optional<Bytes> {
    if (column == Predicted) return row.predicted;
    if (column == LatePredicted) return row.latePredicted;
    if (column == Measured) return row.measured;
    if (column == Capacity) return row.capacity;
    return std::nullopt;
  };
  if (role == BytesRole) {
    const std::optional<Bytes> bytes = bytesOf(index.column());
    return bytes ? QVariant(static_cast<qlonglong>(*bytes)) : QVariant();
  }
  if (role == Qt::TextAlignmentRole) {
    const int column = index.column();
    return column == Predicted || column == LatePredicted || column == Measured || column == Capacity
               ? QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter)
               : QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case PipelineDevice: return tr("device %1 · %2").arg(index.row()).arg(row.stages);
    case Device: return row.device;
    case Capacity: return row.capacity ? bytesText(*row.capacity) : tr("unbounded");
    case PeakOp: return row.peakOp;
    default: {
      const std::optional<Bytes> bytes = bytesOf(index.column());
      return bytes ? bytesText(*bytes) : QString();
    }
  }
}

QVariant MemoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section == LatePredicted) {
    return tr("The predicted peak with every free another device makes of this device's tensors seen as late as "
              "the schedule allows: what a long run reaches in its unluckiest step");
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case PipelineDevice: return tr("Pipeline device");
    case Device: return tr("Device");
    case Predicted: return tr("Predicted peak");
    case LatePredicted: return tr("Frees late");
    case Measured: return tr("Measured peak");
    case Capacity: return tr("Capacity");
    case PeakOp: return tr("Predicted peak at");
    default: return {};
  }
}

}  // namespace pipeprof::gui
