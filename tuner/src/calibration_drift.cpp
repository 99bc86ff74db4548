// The sweep's drift correction: one factor from the reference pipelines timed during measuring.
#include <pipeprof/tuner/calibration_drift.h>

#include <pipeprof/core/statistics.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace pipeprof::tuner {
namespace {

constexpr double kLowestRatio = 0.5;
constexpr double kHighestRatio = 2.0;

TimeNs scaled(TimeNs ns, double factor) { return std::llround(static_cast<double>(ns) * factor); }

}  // namespace

void CalibrationDrift::add(std::int64_t chunks, double startS, const std::vector<TimeNs>& stepNs) {
  std::vector<TimeNs>& pooled = measuredNs[chunks];
  pooled.insert(pooled.end(), stepNs.begin(), stepNs.end());
  timings.push_back({chunks, startS, stepNs});
}

double CalibrationDrift::referenceRatio() const {
  std::vector<double> ratios;
  for (const auto& [chunks, steps] : measuredNs) {
    auto predicted = predictedNs.find(chunks);
    if (predicted == predictedNs.end() || predicted->second <= 0 || steps.empty()) continue;
    ratios.push_back(static_cast<double>(medianNs(steps)) / static_cast<double>(predicted->second));
  }
  if (ratios.empty()) return 1.0;
  return std::clamp(median(std::move(ratios)), kLowestRatio, kHighestRatio);
}

double CalibrationDrift::factor() const { return std::sqrt(referenceRatio()); }

Prediction driftedPrediction(Prediction base, double factor, std::int64_t batch) {
  base.iterationNs = scaled(base.iterationNs, factor);
  for (TimeNs& busy : base.busyNs) busy = scaled(busy, factor);
  base.samplesPerS =
      base.iterationNs > 0 ? static_cast<double>(batch) * 1e9 / static_cast<double>(base.iterationNs) : 0.0;
  return base;
}

nlohmann::json toJson(const CalibrationDrift& drift) {
  nlohmann::json references = nlohmann::json::array();
  for (const auto& [chunks, predictedNs] : drift.predictedNs) {
    auto measured = drift.measuredNs.find(chunks);
    references.push_back({{"chunks", chunks},
                          {"predicted_ns", predictedNs},
                          {"step_ns", measured == drift.measuredNs.end() ? std::vector<TimeNs>{} : measured->second}});
  }
  nlohmann::json timings = nlohmann::json::array();
  for (const ReferenceTiming& timing : drift.timings) {
    timings.push_back({{"chunks", timing.chunks}, {"start_s", timing.startS}, {"step_ns", timing.stepNs}});
  }
  return {{"factor", drift.factor()},
          {"reference_ratio", drift.referenceRatio()},
          {"references", references},
          {"timings", timings}};
}

CalibrationDrift calibrationDriftFromJson(const nlohmann::json& json) {
  CalibrationDrift drift;
  if (!json.is_object()) return drift;
  for (const auto& item : json.value("references", nlohmann::json::array())) {
    const auto chunks = item.at("chunks").get<std::int64_t>();
    drift.predictedNs[chunks] = item.at("predicted_ns").get<TimeNs>();
    auto steps = item.value("step_ns", std::vector<TimeNs>{});
    if (!steps.empty()) drift.measuredNs[chunks] = std::move(steps);
  }
  for (const auto& item : json.value("timings", nlohmann::json::array())) {
    drift.timings.push_back({item.at("chunks").get<std::int64_t>(), item.at("start_s").get<double>(),
                             item.at("step_ns").get<std::vector<TimeNs>>()});
  }
  return drift;
}

std::string describeCalibrationDrift(const CalibrationDrift& drift) {
  std::size_t steps = 0;
  for (const auto& [chunks, measured] : drift.measuredNs) steps += measured.size();
  if (steps == 0) return "calibration drift: none measured (no reference steps during the measuring rounds)";
  return fmt::format("calibration drift: the reference pipelines took {:.3f}x their calibrated prediction while "
                     "the candidates were measured ({} steps); every predicted time is scaled by {:.3f} (its square "
                     "root: the references' drift is partly noise)",
                     drift.referenceRatio(), steps, drift.factor());
}

}  // namespace pipeprof::tuner
