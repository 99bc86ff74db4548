// The sweep's drift correction: one factor from the reference pipelines timed during measuring.
#include <pipeprof/tuner/calibration_drift.h>

#include <pipeprof/core/statistics.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
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

std::optional<double> CalibrationDrift::referenceNoise() const {
  // Each timed run's log ratio, grouped by chunk count.
  std::map<std::int64_t, std::vector<double>> logRatios;
  std::size_t runs = 0;
  for (const ReferenceTiming& timing : timings) {
    auto predicted = predictedNs.find(timing.chunks);
    if (predicted == predictedNs.end() || predicted->second <= 0 || timing.stepNs.empty()) continue;
    const double ratio = static_cast<double>(medianNs(timing.stepNs)) / static_cast<double>(predicted->second);
    logRatios[timing.chunks].push_back(std::log(std::max(ratio, 1e-9)));
    ++runs;
  }
  if (runs < 2) return std::nullopt;
  // Within a chunk count: the machine's moments apart; between chunk counts: each reference's
  // own prediction error as well.
  std::vector<double> means;
  for (const auto& [chunks, values] : logRatios)
    means.push_back(std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()));
  const auto groups = static_cast<double>(means.size());
  const double within = pooledVariance(logRatios).value_or(0.0);
  double between = 0.0;
  if (means.size() > 1) {
    const double grand = std::accumulate(means.begin(), means.end(), 0.0) / groups;
    for (double mean : means) between += (mean - grand) * (mean - grand);
    between /= groups - 1.0;
  }
  return std::sqrt(between / groups + within / static_cast<double>(runs));
}

double CalibrationDrift::share() const {
  const std::optional<double> noise = referenceNoise();
  if (!noise) return 0.5;
  return shrinkageShare(kMachineDriftSd, *noise * *noise);
}

double CalibrationDrift::factor() const { return std::pow(referenceRatio(), share()); }

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
  const std::optional<double> noise = drift.referenceNoise();
  nlohmann::json out;
  out["factor"] = drift.factor();
  out["reference_ratio"] = drift.referenceRatio();
  out["share"] = drift.share();
  out["reference_noise"] = noise ? nlohmann::json(*noise) : nlohmann::json();
  out["references"] = std::move(references);
  out["timings"] = std::move(timings);
  return out;
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
  const std::optional<double> noise = drift.referenceNoise();
  const std::string why =
      noise ? fmt::format("its reference runs leave it uncertain by {:.1f}% against the {:.1f}% the machine's speed "
                          "usually moves between calibrating and measuring",
                          100.0 * *noise, 100.0 * kMachineDriftSd)
            : std::string("a half: too few reference runs to tell how uncertain it is");
  return fmt::format("calibration drift: the reference pipelines took {:.3f}x their calibrated prediction while "
                     "the candidates were measured ({} steps); every predicted time is scaled by {:.3f}, {:.0f}% of "
                     "that ratio in log terms ({})",
                     drift.referenceRatio(), steps, drift.factor(), 100.0 * drift.share(), why);
}

}  // namespace pipeprof::tuner
