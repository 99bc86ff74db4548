// How steady the machine was while a sweep measured.
#include <pipeprof/core/measuring_conditions.h>

#include <pipeprof/core/statistics.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace pipeprof {
namespace {

/// Each timed reference run's median step over its chunk count's calibrated prediction, read
/// from the report's calibration_drift (docs/formats.md).
std::vector<double> referenceRatios(const nlohmann::json& drift) {
  std::vector<double> ratios;
  if (!drift.is_object() || !drift.contains("timings") || !drift.contains("references")) return ratios;
  std::map<std::int64_t, double> predictedNs;
  for (const nlohmann::json& reference : drift.at("references")) {
    if (reference.contains("chunks") && reference.contains("predicted_ns")) {
      predictedNs[reference.at("chunks").get<std::int64_t>()] = reference.at("predicted_ns").get<double>();
    }
  }
  for (const nlohmann::json& timing : drift.at("timings")) {
    const auto predicted = predictedNs.find(timing.value("chunks", std::int64_t{0}));
    const std::vector<TimeNs> steps = timing.value("step_ns", std::vector<TimeNs>{});
    if (predicted == predictedNs.end() || predicted->second <= 0 || steps.empty()) continue;
    ratios.push_back(static_cast<double>(medianNs(steps)) / predicted->second);
  }
  return ratios;
}

std::pair<TimeNs, TimeNs> roundRange(const Measurement& measurement) {
  const std::vector<TimeNs> medians = measurement.roundMediansNs();
  if (medians.empty()) return {measurement.stepNsMedian, measurement.stepNsMedian};
  const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
  return {*low, *high};
}

}  // namespace

double roundUncertainty(const Measurement& measurement) {
  if (measurement.stepNsMedian <= 0) return 0.0;
  const auto [low, high] = roundRange(measurement);
  return static_cast<double>(high - low) / 2.0 / static_cast<double>(measurement.stepNsMedian);
}

std::string slowdownNote(const Measurement& measurement) {
  if (!measurement.machineSlowdown) return "";
  const double off = *measurement.machineSlowdown - 1.0;
  if (std::abs(off) < kNotableSlowdown) return "";
  return "machine " + std::to_string(std::lround(std::abs(off) * 100.0)) + "% " + (off > 0.0 ? "slow" : "fast") +
         " during its rounds";
}

MeasuringConditions summarizeMeasuringConditions(const Report& report) {
  MeasuringConditions conditions;
  std::optional<std::size_t> best;
  for (std::size_t index = 0; index < report.candidates.size(); ++index) {
    const CandidateResult& result = report.candidates[index];
    if (result.status != CandidateStatus::Measured || !result.measurement) continue;
    const Measurement& measurement = *result.measurement;
    ++conditions.measuredCount;
    conditions.roundsAgreeCount += measurement.roundsAgree() ? 1 : 0;
    conditions.remeasuredRounds += static_cast<std::int64_t>(measurement.discardedRounds.size());
    if (measurement.runOffRounds > 0) {
      ++conditions.runOffCandidates;
      conditions.runOffRounds = std::max(conditions.runOffRounds, measurement.runOffRounds);
    }
    for (const std::optional<double>& wait : measurement.roundCpuWait()) {
      conditions.contendedRounds += contendedForCpus(wait) ? 1 : 0;
    }
    if (!best || measurement.stepNsMedian < report.candidates[*best].measurement->stepNsMedian) best = index;
    if (const std::optional<double> slowdown = measurement.machineSlowdown) {
      conditions.candidateSlowdownLow = std::min(conditions.candidateSlowdownLow.value_or(*slowdown), *slowdown);
      conditions.candidateSlowdownHigh = std::max(conditions.candidateSlowdownHigh.value_or(*slowdown), *slowdown);
    }
  }
  if (best) {
    const auto [bestLow, bestHigh] = roundRange(*report.candidates[*best].measurement);
    for (std::size_t index = 0; index < report.candidates.size(); ++index) {
      const CandidateResult& result = report.candidates[index];
      if (index == *best || result.status != CandidateStatus::Measured || !result.measurement) continue;
      const auto [low, high] = roundRange(*result.measurement);
      if (low <= bestHigh && bestLow <= high) conditions.tiedWithBest.push_back(index);
    }
  }
  std::vector<double> ratios = referenceRatios(report.calibrationDrift);
  conditions.referenceRuns = static_cast<std::int64_t>(ratios.size());
  if (!ratios.empty()) {
    conditions.referenceRatioLow = *std::min_element(ratios.begin(), ratios.end());
    conditions.referenceRatioHigh = *std::max_element(ratios.begin(), ratios.end());
    conditions.referenceRatioMedian = median(std::move(ratios));
  }
  return conditions;
}

}  // namespace pipeprof
