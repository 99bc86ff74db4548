// The comparison table and summary printed by `pipeprof sweep` and `pipeprof compare`.
#include "comparison_table.h"

#include "schedule_options.h"

#include <pipeprof/core/accuracy.h>
#include <pipeprof/core/measuring_conditions.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace pipeprof::cli {
namespace {

Bytes largest(const std::vector<Bytes>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

std::string percent(const std::optional<double>& value) { return value ? fmt::format("{:+.1f}%", *value) : "-"; }

std::string modeLabel(const Candidate& candidate) { return std::string(checkpointName(candidate.checkpoint)); }

/// Measured rank (1 = fastest median step) of each measured candidate, by report index.
std::map<std::size_t, std::int64_t> measuredRanks(const Report& report) {
  std::vector<std::size_t> measured;
  for (std::size_t index = 0; index < report.candidates.size(); ++index) {
    const CandidateResult& result = report.candidates[index];
    if (result.status == CandidateStatus::Measured && result.measurement) measured.push_back(index);
  }
  std::stable_sort(measured.begin(), measured.end(), [&](std::size_t a, std::size_t b) {
    return report.candidates[a].measurement->stepNsMedian < report.candidates[b].measurement->stepNsMedian;
  });
  std::map<std::size_t, std::int64_t> ranks;
  for (std::size_t position = 0; position < measured.size(); ++position) {
    ranks[measured[position]] = static_cast<std::int64_t>(position) + 1;
  }
  return ranks;
}

/// The measured step with what its rounds leave it uncertain by: "13.2 ms ±4%" ("13.2 ms" for
/// one round).
std::string measuredStep(const Measurement& measurement) {
  const std::string step = formatDuration(measurement.stepNsMedian);
  if (measurement.roundMediansNs().size() < 2) return step;
  return fmt::format("{} ±{:.0f}%", step, roundUncertainty(measurement) * 100.0);
}

/// What the status column adds about how a measured candidate's rounds went: "" when they
/// agree and none was measured again.
std::string roundsNote(const Measurement& measurement) {
  std::vector<std::string> notes;
  if (!measurement.roundsAgree()) {
    notes.push_back(fmt::format("rounds disagree by {:.0f}%", measurement.roundSpread() * 100.0));
  }
  std::int64_t contended = 0;
  for (const std::optional<double>& wait : measurement.roundCpuWait()) contended += contendedForCpus(wait);
  if (contended > 0) notes.push_back(fmt::format("{} round(s) with the CPUs contended", contended));
  if (!measurement.discardedRounds.empty()) {
    notes.push_back(fmt::format("{} round(s) measured again", measurement.discardedRounds.size()));
  }
  if (std::string slowdown = slowdownNote(measurement); !slowdown.empty()) notes.push_back(std::move(slowdown));
  if (notes.empty()) return "";
  return " (" + fmt::format("{}", fmt::join(notes, "; ")) + ")";
}

std::string labelAt(const Report& report, const std::optional<std::size_t>& index) {
  if (!index || *index >= report.candidates.size()) return "none";
  return report.candidates[*index].candidate.label();
}

}  // namespace

void printComparison(const Report& report, std::ostream& out, const ComparisonOptions& options) {
  const auto ranks = measuredRanks(report);
  // The measured and failed candidates, or every one with --all; where nothing was measured
  // (--measure none), the best predicted rather than an empty table.
  const bool measuredNone =
      std::all_of(report.candidates.begin(), report.candidates.end(),
                  [](const CandidateResult& result) { return result.status == CandidateStatus::Predicted; });
  std::vector<std::size_t> rows;
  for (std::size_t index = 0; index < report.candidates.size(); ++index) {
    const CandidateResult& result = report.candidates[index];
    const bool shown = measuredNone ? result.predictedRank > 0 : result.status != CandidateStatus::Predicted;
    if (options.allCandidates || shown) rows.push_back(index);
  }
  // Fitting candidates by predicted rank, then those predicted not to fit.
  std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
    const std::int64_t ra = report.candidates[a].predictedRank;
    const std::int64_t rb = report.candidates[b].predictedRank;
    if ((ra == 0) != (rb == 0)) return rb == 0;
    return ra < rb;
  });
  if (measuredNone && !options.allCandidates) rows.resize(std::min(rows.size(), kBestPredictedWithoutMeasurements));
  const std::size_t hidden = report.candidates.size() - rows.size();

  const std::string header = fmt::format("{:>5} {:>5}  {:<24} {:<14} {:>10} {:>15} {:>7}  {:>10} {:>10} {:>7}  {}",
                                         "pred#", "meas#", "candidate", "schedule", "pred step", "meas step", "error",
                                         "pred peak", "meas peak", "error", "status");
  out << header << "\n" << std::string(header.size(), '-') << "\n";
  for (const std::size_t index : rows) {
    const CandidateResult& result = report.candidates[index];
    const auto rank = ranks.find(index);
    const std::string candidate = fmt::format("[{}] x{} {}", formatBalance(result.candidate.balance),
                                              result.candidate.chunks, modeLabel(result.candidate));
    std::string step = "-";
    std::string measuredPeak = "-";
    if (result.measurement) {
      step = measuredStep(*result.measurement);
      measuredPeak = formatBytes(largest(result.measurement->peakBytes));
    }
    std::string status = candidateStatusName(result.status);
    if (result.status == CandidateStatus::Measured) status += roundsNote(*result.measurement);
    if (result.status == CandidateStatus::Failed) status += ": " + result.error;
    if (result.status == CandidateStatus::Predicted && !result.notMeasuredReason.empty()) {
      status += " (" + result.notMeasuredReason + ")";
    }
    out << fmt::format("{:>5} {:>5}  {:<24} {:<14} {:>10} {:>15} {:>7}  {:>10} {:>10} {:>7}  {}\n",
                       result.predictedRank > 0 ? std::to_string(result.predictedRank) : "-",
                       rank != ranks.end() ? std::to_string(rank->second) : "-", candidate,
                       result.candidate.orderLabel(), formatDuration(result.prediction.iterationNs), step,
                       percent(result.stepTimeErrorPct()), formatBytes(largest(result.prediction.peakBytes)),
                       measuredPeak, percent(result.peakBytesErrorPct()), status);
  }
  if (hidden > 0) {
    out << fmt::format("({} more candidates predicted only; `pipeprof compare --all` lists them)\n", hidden);
  }
  out << "\n";
  printSummary(report, out);
}

namespace {

/// " (the sweep scaled every prediction by x1.042, ...)", or "" when the report has no drift.
std::string driftNote(const Report& report) {
  if (!report.calibrationDrift.is_object()) return "";
  const double factor = report.calibrationDrift.value("factor", 1.0);
  return fmt::format(
      " (the sweep scaled every prediction by x{:.3f}, measured on its reference pipelines, and each measured one "
      "by the machine's speed during its rounds)",
      factor);
}

/// How steady the machine was while measuring, in up to three lines: the rounds, the machine's
/// speed, and whether the best measured candidate stands apart.
void printMeasuringConditions(const Report& report, std::ostream& out) {
  const MeasuringConditions conditions = summarizeMeasuringConditions(report);
  if (conditions.measuredCount == 0) return;
  std::string rounds = fmt::format("rounds agree within {:.0f}% on {} of {} candidates", kRoundsAgreeSpread * 100.0,
                                   conditions.roundsAgreeCount, conditions.measuredCount);
  if (conditions.remeasuredRounds > 0) {
    rounds += fmt::format("; {} round(s) measured again (another process competed for the CPUs)",
                          conditions.remeasuredRounds);
  }
  if (conditions.contendedRounds > 0) {
    rounds += fmt::format("; {} round(s) kept though the CPUs stayed contended", conditions.contendedRounds);
  }
  out << fmt::format("measuring:                {}\n", rounds);
  if (conditions.referenceRatioMedian) {
    out << fmt::format(
        "machine speed:            the reference pipelines took {:.2f}-{:.2f}x (median {:.2f}x) their calibrated "
        "time over {} runs while measuring\n",
        *conditions.referenceRatioLow, *conditions.referenceRatioHigh, *conditions.referenceRatioMedian,
        conditions.referenceRuns);
  }
  if (conditions.candidateSlowdownLow) {
    out << fmt::format(
        "                          the candidates' rounds ran at {:.2f}-{:.2f}x the measuring's average time; "
        "each prediction is taken at its own rounds' speed\n",
        *conditions.candidateSlowdownLow, *conditions.candidateSlowdownHigh);
  }
  const std::string runOff = conditions.runOffCandidates > 0
                                 ? fmt::format("a run-off measured {} candidates up to {} more round(s) each; ",
                                               conditions.runOffCandidates, conditions.runOffRounds)
                                 : std::string();
  if (!conditions.tiedWithBest.empty()) {
    out << fmt::format(
        "ranking:                  {}the best measured is not told apart from {} other candidate(s), whose "
        "rounds overlap its own: their order is not settled on this machine\n",
        runOff, conditions.tiedWithBest.size());
  } else if (!runOff.empty()) {
    out << fmt::format("ranking:                  {}the best measured now stands apart\n", runOff);
  }
}

}  // namespace

void printSummary(const Report& report, std::ostream& out) {
  const AccuracySummary summary = summarizeAccuracy(report);
  auto figure = [](const std::optional<double>& value, const char* format) {
    return value ? fmt::format(fmt::runtime(format), *value) : std::string("n/a");
  };
  out << fmt::format("measured candidates:      {}\n", summary.measuredCount);
  out << fmt::format("step-time MAPE:           {}\n", figure(summary.stepTimeMapePct, "{:.1f}%"));
  out << fmt::format("  before the drift factor {}{}\n", figure(summary.stepTimeMapeBeforeDriftPct, "{:.1f}%"),
                     summary.measuredCount > 0 ? driftNote(report) : "");
  out << fmt::format("step-time bias:           {}\n", figure(summary.stepTimeBiasPct, "{:+.1f}%"));
  out << fmt::format("peak-memory MAPE:         {}\n", figure(summary.peakBytesMapePct, "{:.1f}%"));
  if (summary.peaksOverPrediction > 0) {
    out << fmt::format(
        "                          {} of {} measured candidates peaked over the prediction on a device, {} over "
        "its peak with another device's frees late (a long run's unluckiest step)\n",
        summary.peaksOverPrediction, summary.latePeakCandidates, summary.peaksOverLatePeak);
  }
  out << fmt::format("Spearman (pred vs meas):  {}\n", figure(summary.spearman, "{:.3f}"));
  const Suggestion& suggestion = report.suggestion;
  std::string bestMeasured = labelAt(report, suggestion.bestMeasured);
  if (suggestion.bestMeasured && report.candidates[*suggestion.bestMeasured].measurement) {
    bestMeasured +=
        fmt::format(" ({:.1f} samples/s)", report.candidates[*suggestion.bestMeasured].measurement->samplesPerS);
  }
  std::string bestPredicted = labelAt(report, suggestion.bestPredicted);
  if (suggestion.bestPredicted) {
    bestPredicted += fmt::format(" ({:.1f} samples/s predicted)",
                                 report.candidates[*suggestion.bestPredicted].prediction.samplesPerS);
  }
  out << fmt::format("best measured:            {}\n", bestMeasured);
  out << fmt::format("best predicted:           {}\n", bestPredicted);
  out << fmt::format("agree:                    {}\n", summary.measuredCount == 0 ? "n/a (nothing measured)"
                                                       : suggestion.agree         ? "yes"
                                                                                  : "no");
  out << fmt::format("suggestion / best measured throughput: {}\n",
                     figure(summary.suggestionThroughputRatio, "{:.3f}"));
  printMeasuringConditions(report, out);
  if (!report.complete) out << "(the sweep did not finish: continue it with `pipeprof sweep ... --resume`)\n";
}

nlohmann::json summaryJson(const Report& report) {
  const AccuracySummary summary = summarizeAccuracy(report);
  auto optional = [](const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  auto label = [&](const std::optional<std::size_t>& index) {
    return index && *index < report.candidates.size() ? nlohmann::json(report.candidates[*index].candidate.label())
                                                      : nlohmann::json(nullptr);
  };
  const MeasuringConditions conditions = summarizeMeasuringConditions(report);
  nlohmann::json tied = nlohmann::json::array();
  for (const std::size_t index : conditions.tiedWithBest) tied.push_back(report.candidates[index].candidate.label());
  return {{"measured", summary.measuredCount},
          {"rounds_agree", conditions.roundsAgreeCount},
          {"rounds_measured_again", conditions.remeasuredRounds},
          {"contended_rounds", conditions.contendedRounds},
          {"reference_ratio_low", optional(conditions.referenceRatioLow)},
          {"reference_ratio_median", optional(conditions.referenceRatioMedian)},
          {"reference_ratio_high", optional(conditions.referenceRatioHigh)},
          {"tied_with_best_measured", tied},
          {"run_off_candidates", conditions.runOffCandidates},
          {"step_time_mape_pct", optional(summary.stepTimeMapePct)},
          {"step_time_bias_pct", optional(summary.stepTimeBiasPct)},
          {"step_time_mape_before_drift_pct", optional(summary.stepTimeMapeBeforeDriftPct)},
          {"peak_bytes_mape_pct", optional(summary.peakBytesMapePct)},
          {"peaks_over_prediction", summary.peaksOverPrediction},
          {"peaks_over_late_peak", summary.peaksOverLatePeak},
          {"late_peak_candidates", summary.latePeakCandidates},
          {"spearman", optional(summary.spearman)},
          {"suggestion_throughput_ratio", optional(summary.suggestionThroughputRatio)},
          {"best_measured", label(report.suggestion.bestMeasured)},
          {"best_predicted", label(report.suggestion.bestPredicted)},
          {"agree", report.suggestion.agree},
          {"complete", report.complete}};
}

}  // namespace pipeprof::cli
