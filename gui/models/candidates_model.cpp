// The report's candidates as a table: configuration, predicted and measured time, memory, error.
#include "models/candidates_model.h"

#include <pipeprof/core/measuring_conditions.h>

#include "models/format.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipeprof::gui {
namespace {

QString peaksText(const std::vector<Bytes>& peaks) {
  QStringList parts;
  for (Bytes bytes : peaks) parts << bytesText(bytes);
  return parts.join(QStringLiteral(" | "));
}

qlonglong maxPeak(const std::vector<Bytes>& peaks) {
  return peaks.empty() ? 0 : static_cast<qlonglong>(*std::max_element(peaks.begin(), peaks.end()));
}

// Missing values sort after every real one in ascending order.
constexpr double kMissing = std::numeric_limits<double>::max();

}  // namespace

CandidatesModel::CandidatesModel(QObject* parent) : QAbstractTableModel(parent) {}

void CandidatesModel::setReport(std::shared_ptr<const Report> report) {
  beginResetModel();
  report_ = std::move(report);
  endResetModel();
}

std::optional<std::size_t> CandidatesModel::suggested() const {
  if (!report_) return std::nullopt;
  if (report_->suggestion.bestMeasured) return report_->suggestion.bestMeasured;
  return report_->suggestion.bestPredicted;
}

QModelIndex CandidatesModel::indexOfCandidate(std::size_t candidate, int column) const {
  if (!report_ || candidate >= report_->candidates.size()) return {};
  return index(static_cast<int>(candidate), column);
}

int CandidatesModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !report_) return 0;
  return static_cast<int>(report_->candidates.size());
}

int CandidatesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CandidatesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !report_) return {};
  const auto row = static_cast<std::size_t>(index.row());
  const CandidateResult& result = report_->candidates[row];
  const bool isSuggested = suggested() == row;
  switch (role) {
    case Qt::DisplayRole:
      return display(result, index.column())
          .toString()
          .prepend(index.column() == Rank && isSuggested ? QStringLiteral("★ ") : QString());
    case SortRole: return sortValue(result, index.column());
    case CandidateIndexRole: return QVariant::fromValue<qulonglong>(row);
    case StatusRole: return static_cast<int>(result.status);
    case SuggestedRole: return isSuggested;
    case LabelRole: return qs(result.candidate.label());
    case ScheduleRole: return static_cast<int>(result.candidate.schedule);
    case Qt::TextAlignmentRole:
      if (index.column() == Balance || index.column() == Mode || index.column() == Schedule ||
          index.column() == Status) {
        return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
      }
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::FontRole:
      if (isSuggested) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case Qt::ForegroundRole:
      if (index.column() == Status && result.status == CandidateStatus::Failed) return QBrush(QColor(0xc0, 0x39, 0x2b));
      if ((index.column() == PredictedPeak) && !result.prediction.fits) return QBrush(QColor(0xc0, 0x39, 0x2b));
      return {};
    case Qt::BackgroundRole:
      if (isSuggested) return QBrush(QColor(0xfd, 0xf3, 0xc7));
      return {};
    case Qt::ToolTipRole:
      if (isSuggested)
        return tr("Suggested: %1")
            .arg(report_->suggestion.bestMeasured ? tr("best measured throughput") : tr("best predicted throughput"));
      if (result.status == CandidateStatus::Failed) return qs(result.error);
      if (result.status == CandidateStatus::Predicted && !result.notMeasuredReason.empty()) {
        return tr("Not measured: %1").arg(qs(result.notMeasuredReason));
      }
      return {};
    default: return {};
  }
}

QVariant CandidatesModel::display(const CandidateResult& result, int column) const {
  const Prediction& predicted = result.prediction;
  const std::optional<Measurement>& measured = result.measurement;
  switch (column) {
    case Rank: return result.predictedRank > 0 ? QString::number(result.predictedRank) : QStringLiteral("–");
    case Balance: return QStringLiteral("[%1]").arg(qs(formatBalance(result.candidate.balance)));
    case Chunks: return QString::number(result.candidate.chunks);
    case Mode: return qs(std::string(checkpointName(result.candidate.checkpoint)));
    case Schedule: return scheduleText(result.candidate.schedule, result.candidate.stagesPerDevice);
    case PredictedStep: return durationText(predicted.iterationNs);
    case MeasuredStep: {
      if (!measured) return QString();
      if (measured->roundMediansNs().size() < 2) return durationText(measured->stepNsMedian);
      return tr("%1 ±%2 %")
          .arg(durationText(measured->stepNsMedian))
          .arg(roundUncertainty(*measured) * 100.0, 0, 'f', 0);
    }
    case PredictedThroughput: return throughputText(predicted.samplesPerS);
    case MeasuredThroughput: return measured ? throughputText(measured->samplesPerS) : QString();
    case PredictedPeak: return peaksText(predicted.peakBytes) + (predicted.fits ? QString() : tr(" (does not fit)"));
    case MeasuredPeak: return measured ? peaksText(measured->peakBytes) : QString();
    case StepError: {
      const std::optional<double> error = result.stepTimeErrorPct();
      return error ? errorText(*error) : QString();
    }
    case Status: {
      const QString status = qs(candidateStatusName(result.status));
      if (result.status != CandidateStatus::Measured || !measured) return status;
      QStringList notes;
      if (!measured->roundsAgree()) {
        notes << tr("rounds disagree by %1 %").arg(measured->roundSpread() * 100.0, 0, 'f', 0);
      }
      if (const std::string slowdown = slowdownNote(*measured); !slowdown.empty()) notes << qs(slowdown);
      return notes.isEmpty() ? status : tr("%1 (%2)").arg(status, notes.join(QStringLiteral("; ")));
    }
    default: return {};
  }
}

QVariant CandidatesModel::sortValue(const CandidateResult& result, int column) const {
  const Prediction& predicted = result.prediction;
  const std::optional<Measurement>& measured = result.measurement;
  switch (column) {
    case Rank: return result.predictedRank > 0 ? static_cast<double>(result.predictedRank) : kMissing;
    case Balance: return qs(formatBalance(result.candidate.balance));
    case Chunks: return static_cast<qlonglong>(result.candidate.chunks);
    case Mode: return static_cast<int>(result.candidate.checkpoint);
    case Schedule:
      return static_cast<qlonglong>(static_cast<int>(result.candidate.schedule)) * 1000 +
             result.candidate.stagesPerDevice;
    case PredictedStep: return static_cast<double>(predicted.iterationNs);
    case MeasuredStep: return measured ? static_cast<double>(measured->stepNsMedian) : kMissing;
    case PredictedThroughput: return predicted.samplesPerS;
    case MeasuredThroughput: return measured ? measured->samplesPerS : -1.0;
    case PredictedPeak: return maxPeak(predicted.peakBytes);
    case MeasuredPeak: return measured ? maxPeak(measured->peakBytes) : -1;
    case StepError: {
      const std::optional<double> error = result.stepTimeErrorPct();
      return error ? std::abs(*error) : kMissing;
    }
    case Status: return static_cast<int>(result.status);
    default: return {};
  }
}

QVariant CandidatesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Rank: return tr("Predicted rank among the candidates that fit (★ = suggested)");
      case PredictedStep: return tr("Predicted time of one training step");
      case MeasuredStep:
        return tr("Median measured time of one training step, ± half the range of its rounds' medians: how far the "
                  "machine let the rounds apart");
      case Schedule: return tr("Schedule family, with the stages per device v of interleaved 1F1B");
      case PredictedPeak: return tr("Predicted peak memory per pipeline device (device 0 | device 1 | ...)");
      case MeasuredPeak: return tr("Measured peak memory per pipeline device");
      case StepError: return tr("(predicted - measured) / measured step time");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Rank: return tr("Rank");
    case Balance: return tr("Balance");
    case Chunks: return tr("Chunks");
    case Mode: return tr("Checkpoint");
    case Schedule: return tr("Schedule");
    case PredictedStep: return tr("Pred. step");
    case MeasuredStep: return tr("Meas. step");
    case PredictedThroughput: return tr("Pred. throughput");
    case MeasuredThroughput: return tr("Meas. throughput");
    case PredictedPeak: return tr("Pred. peak memory");
    case MeasuredPeak: return tr("Meas. peak memory");
    case StepError: return tr("Step error");
    case Status: return tr("Status");
    default: return {};
  }
}

}  // namespace pipeprof::gui
