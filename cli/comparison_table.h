// The comparison table and summary printed by `pipeprof sweep` and `pipeprof compare`.
#pragma once

#include <pipeprof/core/report.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <iosfwd>

namespace pipeprof::cli {

struct ComparisonOptions {
  bool allCandidates = false;  ///< also list candidates that were only predicted
};

/// The rows the table shows of a report that measured nothing: its best predicted.
inline constexpr std::size_t kBestPredictedWithoutMeasurements = 12;

/// Writes the table (candidate, schedule -- "gpipe", "1f1b", "interleaved v2" --, predicted vs
/// measured step time and the largest per-pipeline-device peak, error %, predicted and measured
/// rank, status) and the summary lines (step-time MAPE, peak-memory MAPE, Spearman,
/// suggestion). Candidates only predicted are left out unless `options` asks for them, but for a
/// report that measured none, whose best kBestPredictedWithoutMeasurements predicted are listed.
/// Both commands call this on the same Report, so compare reproduces the sweep.
void printComparison(const Report& report, std::ostream& out, const ComparisonOptions& options = {});

/// The summary lines only (also part of printComparison's output).
void printSummary(const Report& report, std::ostream& out);

/// The summary as JSON: {"measured", "step_time_mape_pct", "step_time_bias_pct", "peak_bytes_mape_pct", "spearman",
/// "suggestion_throughput_ratio", "best_measured", "best_predicted", "agree"} (labels or null).
nlohmann::json summaryJson(const Report& report);

}  // namespace pipeprof::cli
