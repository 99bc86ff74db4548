// Predicted against measured step time and throughput per candidate, for the accuracy charts.
#include "models/accuracy_model.h"

#include "models/format.h"

#include <algorithm>
#include <numeric>

namespace pipeprof::gui {

AccuracyModel::AccuracyModel(QObject* parent) : QAbstractTableModel(parent) {}

void AccuracyModel::setReport(std::shared_ptr<const Report> report) {
  beginResetModel();
  report_ = std::move(report);
  order_.clear();
  summary_ = {};
  if (report_) {
    order_.resize(report_->candidates.size());
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    const auto& candidates = report_->candidates;
    std::stable_sort(order_.begin(), order_.end(), [&candidates](std::size_t a, std::size_t b) {
      return candidates[a].prediction.samplesPerS > candidates[b].prediction.samplesPerS;
    });
    summary_ = summarizeAccuracy(*report_);
  }
  endResetModel();
}

QStringList AccuracyModel::summaryParts() const {
  const AccuracySummary& summary = summary_;
  QStringList parts;
  parts << tr("<b>%1</b> of %2 candidates measured").arg(summary.measuredCount).arg(rowCount());
  if (summary.stepTimeMapePct) {
    parts << tr("step-time MAPE <b>%1 %</b> (bias %2 %)")
                 .arg(*summary.stepTimeMapePct, 0, 'f', 1)
                 .arg(QString::asprintf("%+.1f", summary.stepTimeBiasPct.value_or(0.0)));
    parts << (summary.stepTimeMapeBeforeDriftPct
                  ? tr("before the drift factor <b>%1 %</b>").arg(*summary.stepTimeMapeBeforeDriftPct, 0, 'f', 1)
                  : tr("before the drift factor -"));
  }
  if (summary.peakBytesMapePct) parts << tr("peak-memory MAPE <b>%1 %</b>").arg(*summary.peakBytesMapePct, 0, 'f', 1);
  if (summary.peaksOverPrediction > 0) {
    parts << tr("%1 of %2 peaks over the prediction, %3 over it with another device's frees late")
                 .arg(summary.peaksOverPrediction)
                 .arg(summary.latePeakCandidates)
                 .arg(summary.peaksOverLatePeak);
  }
  if (summary.spearman) parts << tr("Spearman rank correlation <b>%1</b>").arg(*summary.spearman, 0, 'f', 2);
  if (summary.suggestionThroughputRatio) {
    parts << tr("best-predicted reaches <b>%1 %</b> of the best measured throughput")
                 .arg(*summary.suggestionThroughputRatio * 100.0, 0, 'f', 1);
  }
  if (report_) parts << conditionsParts(summarizeMeasuringConditions(*report_));
  return parts;
}

QStringList AccuracyModel::conditionsParts(const MeasuringConditions& conditions) {
  QStringList parts;
  if (conditions.measuredCount == 0) return parts;
  parts << tr("rounds agree on <b>%1</b> of %2").arg(conditions.roundsAgreeCount).arg(conditions.measuredCount);
  if (conditions.remeasuredRounds > 0) {
    parts << tr("%1 round(s) measured again (the CPUs contended)").arg(conditions.remeasuredRounds);
  }
  if (conditions.contendedRounds > 0) parts << tr("%1 round(s) kept contended").arg(conditions.contendedRounds);
  if (conditions.referenceRatioMedian) {
    parts << tr("machine speed while measuring <b>%1–%2×</b> the calibration's")
                 .arg(*conditions.referenceRatioLow, 0, 'f', 2)
                 .arg(*conditions.referenceRatioHigh, 0, 'f', 2);
  }
  if (conditions.candidateSlowdownLow) {
    parts << tr("the candidates' rounds at <b>%1–%2×</b> the measuring's average time, each predicted at its own")
                 .arg(*conditions.candidateSlowdownLow, 0, 'f', 2)
                 .arg(*conditions.candidateSlowdownHigh, 0, 'f', 2);
  }
  if (conditions.runOffCandidates > 0) {
    parts << tr("a run-off measured <b>%1</b> candidates up to %2 more round(s) each")
                 .arg(conditions.runOffCandidates)
                 .arg(conditions.runOffRounds);
  }
  if (!conditions.tiedWithBest.empty()) {
    parts << tr("the best measured is not told apart from <b>%1</b> other(s)").arg(conditions.tiedWithBest.size());
  }
  return parts;
}

int AccuracyModel::measuredCount() const {
  if (!report_) return 0;
  return static_cast<int>(std::count_if(report_->candidates.begin(), report_->candidates.end(),
                                        [](const CandidateResult& r) { return r.measurement.has_value(); }));
}

int AccuracyModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(order_.size());
}

int AccuracyModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AccuracyModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const std::size_t candidate = order_[static_cast<std::size_t>(index.row())];
  const CandidateResult& result = report_->candidates[candidate];
  const std::optional<Measurement>& measured = result.measurement;
  if (role == CandidateIndexRole) return QVariant::fromValue<qulonglong>(candidate);
  if (role == MeasuredRole) return measured.has_value();
  if (role == SuggestedRole) {
    const Suggestion& s = report_->suggestion;
    return (s.bestMeasured ? s.bestMeasured : s.bestPredicted) == candidate;
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Label: return qs(result.candidate.label());
    case PredictedStepMs: return toMs(result.prediction.iterationNs);
    case MeasuredStepMs: return measured ? QVariant(toMs(measured->stepNsMedian)) : QVariant();
    case PredictedThroughput: return result.prediction.samplesPerS;
    case MeasuredThroughput: return measured ? QVariant(measured->samplesPerS) : QVariant();
    case StepErrorPct: {
      const std::optional<double> error = result.stepTimeErrorPct();
      return error ? QVariant(*error) : QVariant();
    }
    default: return {};
  }
}

QVariant AccuracyModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Label: return tr("Candidate");
    case PredictedStepMs: return tr("Predicted step (ms)");
    case MeasuredStepMs: return tr("Measured step (ms)");
    case PredictedThroughput: return tr("Predicted (samples/s)");
    case MeasuredThroughput: return tr("Measured (samples/s)");
    case StepErrorPct: return tr("Step error (%)");
    default: return {};
  }
}

}  // namespace pipeprof::gui
