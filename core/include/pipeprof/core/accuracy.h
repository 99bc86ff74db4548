// Accuracy of predictions against measurements: errors, MAPE and Spearman rank correlation.
#pragma once

#include <pipeprof/core/report.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace pipeprof {

struct AccuracySummary {
  std::int64_t measuredCount = 0;
  std::optional<double> stepTimeMapePct;  ///< mean |error| of predicted step time, percent
  /// Mean signed error of predicted step time, percent: > 0 when predictions run high on
  /// average. Close to +-MAPE, the error is mostly one offset shared by every candidate (on a
  /// shared machine: it ran at another speed while calibrating than while measuring).
  std::optional<double> stepTimeBiasPct;
  /// Step-time MAPE of the predictions before the sweep's drift factor (what a user gets
  /// before measuring anything), over the measured candidates that keep one.
  std::optional<double> stepTimeMapeBeforeDriftPct;
  std::optional<double> peakBytesMapePct;  ///< mean |error| of predicted peak memory, percent
  std::optional<double> spearman;          ///< rank correlation of predicted vs measured step time
  /// Measured throughput of the best-predicted measured candidate over the best measured, as
  /// a fraction (1.0 = the suggestion is the best measured); nullopt without measurements.
  std::optional<double> suggestionThroughputRatio;
  /// The measured candidates whose prediction has late-frees peaks (Prediction::latePeakBytes);
  /// those of them with a device's measured peak over its predicted one by more than
  /// kPeakOverTolerance; and those over its late-frees peak as well. Where the second counts
  /// more than the third, the misses are other devices' frees coming late in some steps.
  std::int64_t latePeakCandidates = 0;
  std::int64_t peaksOverPrediction = 0;
  std::int64_t peaksOverLatePeak = 0;
};

/// A measured peak this far (a fraction) over a predicted one counts as over it.
inline constexpr double kPeakOverTolerance = 0.005;

/// Spearman's rank correlation with average ranks for ties; nullopt for fewer than 2 values
/// or when either side is constant.
std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b);

/// Summary over the report's measured candidates.
AccuracySummary summarizeAccuracy(const Report& report);

}  // namespace pipeprof
