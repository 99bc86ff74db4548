// Accuracy of predictions against measurements: errors, MAPE and Spearman rank correlation.
#include <pipeprof/core/accuracy.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pipeprof {
namespace {

/// Ranks from 1, ties sharing the average of the ranks they span.
std::vector<double> averageRanks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  std::size_t start = 0;
  while (start < order.size()) {
    std::size_t end = start;
    while (end + 1 < order.size() && values[order[end + 1]] == values[order[start]]) ++end;
    double rank = (static_cast<double>(start + end) / 2.0) + 1.0;
    for (std::size_t k = start; k <= end; ++k) ranks[order[k]] = rank;
    start = end + 1;
  }
  return ranks;
}

bool isMeasured(const CandidateResult& result) {
  return result.status == CandidateStatus::Measured && result.measurement.has_value();
}

/// Counts a measured candidate with late-frees peaks in summary's latePeakCandidates, and where
/// a device's measured peak passes its predicted one, or its late-frees one, in the others.
void countPeaksOver(const CandidateResult& result, AccuracySummary& summary) {
  const Prediction& p = result.prediction;
  const std::vector<Bytes>& measured = result.measurement->peakBytes;
  if (p.latePeakBytes.empty() || p.latePeakBytes.size() != measured.size() || p.peakBytes.size() != measured.size()) {
    return;
  }
  ++summary.latePeakCandidates;
  auto over = [&](const std::vector<Bytes>& predicted) {
    for (std::size_t d = 0; d < measured.size(); ++d) {
      if (static_cast<double>(measured[d]) > static_cast<double>(predicted[d]) * (1.0 + kPeakOverTolerance)) {
        return true;
      }
    }
    return false;
  };
  if (over(p.peakBytes)) ++summary.peaksOverPrediction;
  if (over(p.latePeakBytes)) ++summary.peaksOverLatePeak;
}

}  // namespace

std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return std::nullopt;
  std::vector<double> x = averageRanks(a);
  std::vector<double> y = averageRanks(b);
  auto n = static_cast<double>(x.size());
  double meanX = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double meanY = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double covariance = 0.0;
  double varianceX = 0.0;
  double varianceY = 0.0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    covariance += (x[k] - meanX) * (y[k] - meanY);
    varianceX += (x[k] - meanX) * (x[k] - meanX);
    varianceY += (y[k] - meanY) * (y[k] - meanY);
  }
  if (varianceX == 0.0 || varianceY == 0.0) return std::nullopt;
  return covariance / std::sqrt(varianceX * varianceY);
}

AccuracySummary summarizeAccuracy(const Report& report) {
  AccuracySummary summary;
  double stepErrorSum = 0.0;
  double stepSignedErrorSum = 0.0;
  std::int64_t stepErrors = 0;
  double beforeDriftErrorSum = 0.0;
  std::int64_t beforeDriftErrors = 0;
  double peakErrorSum = 0.0;
  std::int64_t peakErrors = 0;
  std::vector<double> predictedNs;
  std::vector<double> measuredNs;
  std::optional<std::size_t> bestMeasured;
  std::optional<std::size_t> suggested;         // the best-ranked measured candidate by prediction
  std::optional<std::size_t> fastestPredicted;  // fallback when no measured candidate has a rank
  for (std::size_t index = 0; index < report.candidates.size(); ++index) {
    const CandidateResult& result = report.candidates[index];
    if (!isMeasured(result)) continue;
    ++summary.measuredCount;
    if (auto error = result.stepTimeErrorPct()) {
      stepErrorSum += std::fabs(*error);
      stepSignedErrorSum += *error;
      ++stepErrors;
    }
    if (auto error = result.stepTimeErrorBeforeDriftPct()) {
      beforeDriftErrorSum += std::fabs(*error);
      ++beforeDriftErrors;
    }
    if (auto error = result.peakBytesErrorPct()) {
      peakErrorSum += std::fabs(*error);
      ++peakErrors;
    }
    countPeaksOver(result, summary);
    predictedNs.push_back(static_cast<double>(result.prediction.iterationNs));
    measuredNs.push_back(static_cast<double>(result.measurement->stepNsMedian));
    if (!bestMeasured || result.measurement->samplesPerS > report.candidates[*bestMeasured].measurement->samplesPerS) {
      bestMeasured = index;
    }
    if (result.predictedRank > 0 &&
        (!suggested || result.predictedRank < report.candidates[*suggested].predictedRank)) {
      suggested = index;
    }
    if (!fastestPredicted ||
        result.prediction.samplesPerS > report.candidates[*fastestPredicted].prediction.samplesPerS) {
      fastestPredicted = index;
    }
  }
  if (!suggested) suggested = fastestPredicted;
  if (stepErrors > 0) {
    summary.stepTimeMapePct = stepErrorSum / static_cast<double>(stepErrors);
    summary.stepTimeBiasPct = stepSignedErrorSum / static_cast<double>(stepErrors);
  }
  if (beforeDriftErrors > 0) {
    summary.stepTimeMapeBeforeDriftPct = beforeDriftErrorSum / static_cast<double>(beforeDriftErrors);
  }
  if (peakErrors > 0) summary.peakBytesMapePct = peakErrorSum / static_cast<double>(peakErrors);
  summary.spearman = spearman(predictedNs, measuredNs);
  if (bestMeasured && suggested) {
    double best = report.candidates[*bestMeasured].measurement->samplesPerS;
    if (best > 0.0) summary.suggestionThroughputRatio = report.candidates[*suggested].measurement->samplesPerS / best;
  }
  return summary;
}

}  // namespace pipeprof
