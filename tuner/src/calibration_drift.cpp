// The sweep's drift correction: the reference pipelines timed during measuring, one factor for
// the sweep and one for each measured candidate at the moments of its rounds.
#include <pipeprof/tuner/calibration_drift.h>

#include <pipeprof/core/statistics.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

namespace pipeprof::tuner {
namespace {

constexpr double kLowestRatio = 0.5;
constexpr double kHighestRatio = 2.0;

TimeNs scaled(TimeNs ns, double factor) { return std::llround(static_cast<double>(ns) * factor); }

/// The middle of steps [first, last) that began `startS`: startS plus half their time, in seconds.
template <typename Iterator>
double middleS(double startS, Iterator first, Iterator last) {
  return startS + std::accumulate(first, last, 0.0) / 2e9;
}

/// One timed reference run: its chunk count, its middle, log(its median step / its prediction).
struct TimedRatio {
  std::int64_t chunks = 0;
  double middleS = 0.0;
  double logRatio = 0.0;
};

/// Every timed run of `drift` that has a prediction, in order.
std::vector<TimedRatio> timedRatios(const CalibrationDrift& drift) {
  std::vector<TimedRatio> runs;
  for (const ReferenceTiming& timing : drift.timings) {
    auto predicted = drift.predictedNs.find(timing.chunks);
    if (predicted == drift.predictedNs.end() || predicted->second <= 0 || timing.stepNs.empty()) continue;
    const double ratio = static_cast<double>(medianNs(timing.stepNs)) / static_cast<double>(predicted->second);
    runs.push_back({timing.chunks, middleS(timing.startS, timing.stepNs.begin(), timing.stepNs.end()),
                    std::log(std::max(ratio, 1e-9))});
  }
  return runs;
}

/// A timed run's middle and its log ratio less its chunk count's mean: how far the machine ran
/// from the measuring phase's average at that moment.
struct Deviation {
  double middleS = 0.0;
  double logRatio = 0.0;
};

/// Every timed run's deviation; empty with fewer than two runs.
std::vector<Deviation> deviations(const CalibrationDrift& drift) {
  const std::vector<TimedRatio> runs = timedRatios(drift);
  if (runs.size() < 2) return {};
  std::map<std::int64_t, std::pair<double, std::size_t>> sums;  // per chunk count: log ratios, runs
  for (const TimedRatio& run : runs) {
    auto& [sum, count] = sums[run.chunks];
    sum += run.logRatio;
    ++count;
  }
  std::vector<Deviation> out;
  for (const TimedRatio& run : runs) {
    const auto& [sum, count] = sums.at(run.chunks);
    out.push_back({run.middleS, run.logRatio - sum / static_cast<double>(count)});
  }
  return out;
}

/// The mean of `known` at `atS`, each weighted by exp(-d^2 / 2), d its distance from `atS` in
/// kLocalSpeedBandwidthS; 0 where none is known or every one is too far to weigh.
double logDeviationAt(const std::vector<Deviation>& known, double atS) {
  double weighted = 0.0;
  double weights = 0.0;
  for (const Deviation& run : known) {
    const double distance = (run.middleS - atS) / kLocalSpeedBandwidthS;
    const double weight = std::exp(-0.5 * distance * distance);
    weighted += weight * run.logRatio;
    weights += weight;
  }
  return weights < 1e-9 ? 0.0 : weighted / weights;
}

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
  const std::vector<TimedRatio> timed = timedRatios(*this);
  for (const TimedRatio& run : timed) logRatios[run.chunks].push_back(run.logRatio);
  const std::size_t runs = timed.size();
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

double CalibrationDrift::localRatioAt(double atS) const { return std::exp(logDeviationAt(deviations(*this), atS)); }

std::optional<double> CalibrationDrift::localRatioWhile(const Measurement& measurement) const {
  const std::vector<std::int64_t>& counts = measurement.roundSteps;
  const std::vector<Deviation> known = deviations(*this);
  if (counts.empty() || counts.size() != measurement.roundStartS.size() || known.empty()) return std::nullopt;
  double weighted = 0.0;
  double steps = 0.0;
  std::size_t at = 0;
  for (std::size_t round = 0; round < counts.size(); ++round) {
    const auto count = static_cast<std::size_t>(std::max<std::int64_t>(counts[round], 0));
    if (at + count > measurement.stepNs.size()) return std::nullopt;
    const auto first = measurement.stepNs.begin() + static_cast<std::ptrdiff_t>(at);
    at += count;
    const double middle = middleS(measurement.roundStartS[round], first, first + static_cast<std::ptrdiff_t>(count));
    weighted += static_cast<double>(count) * logDeviationAt(known, middle);
    steps += static_cast<double>(count);
  }
  if (steps <= 0.0) return std::nullopt;
  return std::exp(weighted / steps);
}

double CalibrationDrift::factorFor(const Measurement& measurement) const {
  return factorAtSlowdown(localRatioWhile(measurement).value_or(1.0));
}

double CalibrationDrift::factorAtSlowdown(double slowdown) const {
  return std::pow(std::clamp(referenceRatio() * slowdown, kLowestRatio, kHighestRatio), share());
}

double driftFactorOf(const CandidateResult& result, const CalibrationDrift& drift) {
  return result.measurement ? drift.factorFor(*result.measurement) : drift.factor();
}

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
                     "that ratio in log terms ({}); a measured candidate's by the machine's speed during its own "
                     "rounds",
                     drift.referenceRatio(), steps, drift.factor(), 100.0 * drift.share(), why);
}

}  // namespace pipeprof::tuner
