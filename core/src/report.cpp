// The sweep report (pipeprof.report/v1): candidates with predictions, measurements and a suggestion.
#include <pipeprof/core/report.h>

#include <pipeprof/core/json_file.h>
#include <pipeprof/core/statistics.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pipeprof {
namespace {

constexpr CandidateStatus kStatuses[] = {CandidateStatus::Predicted, CandidateStatus::Measured,
                                         CandidateStatus::Failed};

template <typename T>
nlohmann::json array(const std::vector<T>& values) {
  nlohmann::json json = nlohmann::json::array();
  for (const T& value : values) json.push_back(value);
  return json;
}

std::vector<std::int64_t> nonNegativeInts(const JsonCursor& json) {
  std::vector<std::int64_t> values;
  for (const JsonCursor& item : json.items()) values.push_back(item.asNonNegativeInt());
  return values;
}

std::string optionalString(const JsonCursor& json, const char* key) {
  return json.has(key) ? json.at(key).asString() : std::string();
}

/// Per-device lists are empty or have one entry per pipeline device (per stage when every
/// device holds one stage).
void requirePerDevice(const JsonCursor& json, std::size_t size, std::size_t devices) {
  if (size != 0 && size != devices) {
    json.fail("expected one entry per pipeline device (" + std::to_string(devices) + "), got " + std::to_string(size));
  }
}

/// A number in [0, 1].
double fraction(const JsonCursor& json) {
  const double value = json.asNonNegativeNumber();
  if (value > 1.0) json.fail("expected a fraction between 0 and 1, got " + json.value().dump());
  return value;
}

Prediction predictionFromJson(const JsonCursor& json, std::size_t devices) {
  if (!json.value().is_object()) json.fail("expected a prediction object");
  Prediction prediction;
  prediction.iterationNs = json.at("iteration_ns").asNonNegativeInt();
  prediction.samplesPerS = json.at("samples_per_s").asNonNegativeNumber();
  prediction.bubbleFraction = fraction(json.at("bubble_fraction"));
  JsonCursor busy = json.at("busy_ns");
  prediction.busyNs = nonNegativeInts(busy);
  requirePerDevice(busy, prediction.busyNs.size(), devices);
  JsonCursor peak = json.at("peak_bytes");
  prediction.peakBytes = nonNegativeInts(peak);
  requirePerDevice(peak, prediction.peakBytes.size(), devices);
  if (json.has("peak_op")) {
    JsonCursor peakOp = json.at("peak_op");
    for (const JsonCursor& item : peakOp.items()) prediction.peakOp.push_back(item.asString());
    requirePerDevice(peakOp, prediction.peakOp.size(), devices);
  }
  if (json.has("late_peak_bytes")) {
    JsonCursor latePeak = json.at("late_peak_bytes");
    prediction.latePeakBytes = nonNegativeInts(latePeak);
    requirePerDevice(latePeak, prediction.latePeakBytes.size(), devices);
  }
  prediction.fits = json.at("fits").asBool();
  if (json.has("overflow_devices")) prediction.overflowDevices = nonNegativeInts(json.at("overflow_devices"));
  prediction.tracePath = optionalString(json, "trace_path");
  return prediction;
}

Measurement measurementFromJson(const JsonCursor& json, std::size_t devices) {
  if (!json.value().is_object()) json.fail("expected a measurement object");
  Measurement measurement;
  measurement.warmupSteps = json.at("warmup_steps").asNonNegativeInt();
  if (json.has("rounds")) {
    measurement.rounds = json.at("rounds").asNonNegativeInt();
    if (measurement.rounds < 1) json.at("rounds").fail("expected at least 1 round, got 0");
  }
  measurement.stepNs = nonNegativeInts(json.at("step_ns"));
  measurement.stepNsMedian = json.at("step_ns_median").asNonNegativeInt();
  measurement.stepNsMin = json.at("step_ns_min").asNonNegativeInt();
  measurement.stepNsMax = json.at("step_ns_max").asNonNegativeInt();
  if (measurement.stepNsMin > measurement.stepNsMedian || measurement.stepNsMedian > measurement.stepNsMax) {
    json.at("step_ns_median")
        .fail("expected step_ns_min <= step_ns_median <= step_ns_max, got " + std::to_string(measurement.stepNsMin) +
              ", " + std::to_string(measurement.stepNsMedian) + ", " + std::to_string(measurement.stepNsMax));
  }
  measurement.samplesPerS = json.at("samples_per_s").asNonNegativeNumber();
  JsonCursor peak = json.at("peak_bytes");
  measurement.peakBytes = nonNegativeInts(peak);
  requirePerDevice(peak, measurement.peakBytes.size(), devices);
  measurement.tracePath = optionalString(json, "trace_path");
  if (json.has("round_steps")) {
    JsonCursor rounds = json.at("round_steps");
    measurement.roundSteps = nonNegativeInts(rounds);
    const std::int64_t total =
        std::accumulate(measurement.roundSteps.begin(), measurement.roundSteps.end(), std::int64_t{0});
    if (!measurement.roundSteps.empty() && total != static_cast<std::int64_t>(measurement.stepNs.size())) {
      rounds.fail("expected round step counts summing to the " + std::to_string(measurement.stepNs.size()) +
                  " steps of step_ns, got " + std::to_string(total));
    }
  }
  if (json.has("round_start_s")) {
    JsonCursor starts = json.at("round_start_s");
    for (std::size_t r = 0; r < starts.size(); ++r) {
      measurement.roundStartS.push_back(starts.at(r).asNonNegativeNumber());
    }
    if (!measurement.roundStartS.empty() && measurement.roundStartS.size() != measurement.roundSteps.size()) {
      starts.fail("expected one start per round of round_steps (" + std::to_string(measurement.roundSteps.size()) +
                  "), got " + std::to_string(measurement.roundStartS.size()));
    }
  }
  if (json.has("step_cpu_wait_ns")) {
    JsonCursor waits = json.at("step_cpu_wait_ns");
    measurement.stepCpuWaitNs = nonNegativeInts(waits);
    if (!measurement.stepCpuWaitNs.empty() && measurement.stepCpuWaitNs.size() != measurement.stepNs.size()) {
      waits.fail("expected one entry per step of step_ns (" + std::to_string(measurement.stepNs.size()) + "), got " +
                 std::to_string(measurement.stepCpuWaitNs.size()));
    }
  }
  if (json.has("discarded_rounds")) {
    JsonCursor discarded = json.at("discarded_rounds");
    for (std::size_t r = 0; r < discarded.size(); ++r) {
      const JsonCursor round = discarded.at(r);
      measurement.discardedRounds.push_back({round.at("start_s").asNonNegativeNumber(),
                                             round.at("median_ns").asNonNegativeInt(),
                                             round.at("cpu_wait").asNonNegativeNumber()});
    }
  }
  if (json.has("machine_slowdown")) {
    const JsonCursor slowdown = json.at("machine_slowdown");
    measurement.machineSlowdown = slowdown.asNonNegativeNumber();
    if (*measurement.machineSlowdown <= 0.0) slowdown.fail("expected a positive ratio");
  }
  if (json.has("run_off_rounds")) {
    const JsonCursor runOff = json.at("run_off_rounds");
    measurement.runOffRounds = runOff.asNonNegativeInt();
    if (measurement.runOffRounds > measurement.rounds) {
      runOff.fail("expected at most the measurement's " + std::to_string(measurement.rounds) + " rounds, got " +
                  std::to_string(measurement.runOffRounds));
    }
  }
  return measurement;
}

/// Runs a reader written for a whole file on an embedded object, moving its error paths under
/// the embedding path ("$.schema" -> "$.profile.schema").
template <typename Read>
auto embedded(const JsonCursor& json, Read read) {
  try {
    return read(json.value(), json.file());
  } catch (const FormatError& error) {
    std::string prefix = error.file() + ": " + (error.jsonPath().empty() ? "" : error.jsonPath() + ": ");
    std::string what = error.what();
    std::string problem = what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
    std::string path = error.jsonPath().empty() ? json.path() : json.path() + error.jsonPath().substr(1);
    throw FormatError(error.file(), path, problem);
  }
}

/// The prediction before drift: its times (iteration_ns, samples_per_s, busy_ns,
/// bubble_fraction) over `drifted`, whose memory the drift never changes.
Prediction timesBeforeDrift(const JsonCursor& json, Prediction drifted, std::size_t devices) {
  if (!json.value().is_object()) json.fail("expected an object");
  drifted.iterationNs = json.at("iteration_ns").asNonNegativeInt();
  drifted.samplesPerS = json.at("samples_per_s").asNonNegativeNumber();
  drifted.bubbleFraction = json.has("bubble_fraction") ? json.at("bubble_fraction").asNonNegativeNumber() : 0.0;
  drifted.busyNs.clear();
  if (json.has("busy_ns")) {
    JsonCursor busy = json.at("busy_ns");
    if (busy.size() != devices) {
      busy.fail("expected " + std::to_string(devices) + " entries (one per pipeline device), got " +
                std::to_string(busy.size()));
    }
    for (const JsonCursor& item : busy.items()) drifted.busyNs.push_back(item.asNonNegativeInt());
  }
  drifted.tracePath.clear();
  return drifted;
}

CandidateResult resultFromJson(const JsonCursor& json) {
  if (!json.value().is_object()) json.fail("expected a candidate result object");
  CandidateResult result;
  JsonCursor candidate = json.at("candidate");
  result.candidate = candidateFromJson(candidate.value(), candidate.file(), candidate.path());
  const auto devices = static_cast<std::size_t>(result.candidate.pipelineDevices());
  result.prediction = predictionFromJson(json.at("prediction"), devices);
  if (json.has("prediction_before_drift") && !json.at("prediction_before_drift").value().is_null()) {
    result.predictionBeforeDrift = timesBeforeDrift(json.at("prediction_before_drift"), result.prediction, devices);
  }
  result.predictedRank = json.at("predicted_rank").asNonNegativeInt();
  JsonCursor status = json.at("status");
  std::string statusText = status.asString();
  bool known = false;
  for (CandidateStatus value : kStatuses) {
    if (candidateStatusName(value) == statusText) {
      result.status = value;
      known = true;
    }
  }
  if (!known) status.fail("expected one of predicted, measured, failed, got '" + statusText + "'");
  if (json.has("measurement") && !json.at("measurement").value().is_null()) {
    result.measurement = measurementFromJson(json.at("measurement"), devices);
  }
  if (result.status == CandidateStatus::Measured && !result.measurement) {
    json.fail("missing required field 'measurement' (status is measured)");
  }
  result.notMeasuredReason = optionalString(json, "not_measured_reason");
  result.error = optionalString(json, "error");
  if (json.has("predicted_analysis")) result.predictedAnalysis = json.at("predicted_analysis").value();
  if (json.has("measured_analysis")) result.measuredAnalysis = json.at("measured_analysis").value();
  if (json.has("predicted_breakdown"))
    result.predictedBreakdown = stepBreakdownFromJson(json.at("predicted_breakdown"));
  if (json.has("measured_breakdown")) result.measuredBreakdown = stepBreakdownFromJson(json.at("measured_breakdown"));
  return result;
}

std::optional<std::size_t> optionalIndex(const JsonCursor& json, const char* key, std::size_t count) {
  if (!json.has(key) || json.at(key).value().is_null()) return std::nullopt;
  JsonCursor index = json.at(key);
  auto value = static_cast<std::size_t>(index.asNonNegativeInt());
  if (value >= count) {
    index.fail("expected a candidate index below " + std::to_string(count) + ", got " + std::to_string(value));
  }
  return value;
}

nlohmann::json optionalIndexJson(const std::optional<std::size_t>& index) {
  return index ? nlohmann::json(*index) : nlohmann::json(nullptr);
}

Bytes largest(const std::vector<Bytes>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

}  // namespace

std::string candidateStatusName(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::Predicted: return "predicted";
    case CandidateStatus::Measured: return "measured";
    case CandidateStatus::Failed: return "failed";
  }
  return "unknown";
}

void Measurement::addRound(const std::vector<TimeNs>& roundStepNs, const std::vector<Bytes>& roundPeakBytes,
                           std::int64_t batch, double startS, const std::vector<TimeNs>& roundCpuWaitNs) {
  if (roundSteps.empty() && !stepNs.empty()) roundSteps.push_back(static_cast<std::int64_t>(stepNs.size()));
  // The waits stay one per step, or go: a round without them leaves the whole measurement without.
  if (stepCpuWaitNs.size() == stepNs.size() && roundCpuWaitNs.size() == roundStepNs.size()) {
    stepCpuWaitNs.insert(stepCpuWaitNs.end(), roundCpuWaitNs.begin(), roundCpuWaitNs.end());
  } else {
    stepCpuWaitNs.clear();
  }
  stepNs.insert(stepNs.end(), roundStepNs.begin(), roundStepNs.end());
  roundSteps.push_back(static_cast<std::int64_t>(roundStepNs.size()));
  roundStartS.resize(roundSteps.size() - 1, 0.0);
  roundStartS.push_back(startS);
  if (peakBytes.size() < roundPeakBytes.size()) peakBytes.resize(roundPeakBytes.size(), 0);
  for (std::size_t j = 0; j < roundPeakBytes.size(); ++j) peakBytes[j] = std::max(peakBytes[j], roundPeakBytes[j]);
  updateStatistics(batch);
}

void Measurement::updateStatistics(std::int64_t batch) {
  if (stepNs.empty()) {
    stepNsMedian = stepNsMin = stepNsMax = 0;
    samplesPerS = 0.0;
    return;
  }
  stepNsMedian = medianNs(stepNs);
  const auto [lowest, highest] = std::minmax_element(stepNs.begin(), stepNs.end());
  stepNsMin = *lowest;
  stepNsMax = *highest;
  samplesPerS = stepNsMedian > 0 ? static_cast<double>(batch) * 1e9 / static_cast<double>(stepNsMedian) : 0.0;
}

std::vector<TimeNs> Measurement::roundMediansNs() const {
  if (roundSteps.empty()) return stepNs.empty() ? std::vector<TimeNs>{} : std::vector<TimeNs>{medianNs(stepNs)};
  std::vector<TimeNs> medians;
  auto first = stepNs.begin();
  for (const std::int64_t count : roundSteps) {
    const auto last = first + std::min<std::ptrdiff_t>(count, stepNs.end() - first);
    if (last > first) medians.push_back(medianNs(std::vector<TimeNs>(first, last)));
    first = last;
  }
  return medians;
}

std::optional<double> cpuWaitShare(const std::vector<TimeNs>& stepNs, const std::vector<TimeNs>& cpuWaitNs) {
  if (stepNs.empty() || cpuWaitNs.size() != stepNs.size()) return std::nullopt;
  const double waitNs = std::accumulate(cpuWaitNs.begin(), cpuWaitNs.end(), 0.0);
  const double wallNs = std::accumulate(stepNs.begin(), stepNs.end(), 0.0);
  return wallNs > 0 ? std::optional<double>(waitNs / wallNs) : std::nullopt;
}

std::vector<std::optional<double>> Measurement::roundCpuWait() const {
  const std::vector<std::int64_t> counts =
      roundSteps.empty() ? std::vector<std::int64_t>{static_cast<std::int64_t>(stepNs.size())} : roundSteps;
  std::vector<std::optional<double>> shares;
  std::size_t first = 0;
  for (const std::int64_t count : counts) {
    const std::size_t last = std::min(stepNs.size(), first + static_cast<std::size_t>(count));
    if (stepCpuWaitNs.size() != stepNs.size()) {
      shares.emplace_back();
    } else {
      shares.push_back(cpuWaitShare({stepNs.begin() + first, stepNs.begin() + last},
                                    {stepCpuWaitNs.begin() + first, stepCpuWaitNs.begin() + last}));
    }
    first = last;
  }
  return shares;
}

double Measurement::roundSpread() const {
  const std::vector<TimeNs> medians = roundMediansNs();
  if (medians.size() < 2) return 0.0;
  const auto [fastest, slowest] = std::minmax_element(medians.begin(), medians.end());
  return *fastest > 0 ? static_cast<double>(*slowest) / static_cast<double>(*fastest) - 1.0 : 0.0;
}

std::optional<double> CandidateResult::stepTimeErrorPct() const {
  if (status != CandidateStatus::Measured || !measurement || measurement->stepNsMedian <= 0) return std::nullopt;
  auto measured = static_cast<double>(measurement->stepNsMedian);
  return (static_cast<double>(prediction.iterationNs) - measured) / measured * 100.0;
}

std::optional<double> CandidateResult::stepTimeErrorBeforeDriftPct() const {
  if (!predictionBeforeDrift) return std::nullopt;
  CandidateResult before = *this;
  before.prediction = *predictionBeforeDrift;
  return before.stepTimeErrorPct();
}

std::optional<double> CandidateResult::peakBytesErrorPct() const {
  if (status != CandidateStatus::Measured || !measurement || prediction.peakBytes.empty()) return std::nullopt;
  Bytes measured = largest(measurement->peakBytes);
  if (measured <= 0) return std::nullopt;
  auto measuredBytes = static_cast<double>(measured);
  return (static_cast<double>(largest(prediction.peakBytes)) - measuredBytes) / measuredBytes * 100.0;
}

std::optional<std::size_t> Report::candidateOfRank(std::int64_t predictedRank) const {
  for (std::size_t index = 0; index < candidates.size(); ++index) {
    if (candidates[index].predictedRank == predictedRank) return index;
  }
  return std::nullopt;
}

void Report::updateSuggestion() {
  suggestion = Suggestion{};
  for (std::size_t index = 0; index < candidates.size(); ++index) {
    const CandidateResult& result = candidates[index];
    if (result.status == CandidateStatus::Measured && result.measurement &&
        (!suggestion.bestMeasured ||
         result.measurement->samplesPerS > candidates[*suggestion.bestMeasured].measurement->samplesPerS)) {
      suggestion.bestMeasured = index;
    }
    if (result.predictedRank == 1 && !suggestion.bestPredicted) suggestion.bestPredicted = index;
  }
  suggestion.agree =
      suggestion.bestMeasured && suggestion.bestPredicted && *suggestion.bestMeasured == *suggestion.bestPredicted;
}

nlohmann::json toJson(const Prediction& prediction) {
  nlohmann::json out = {{"iteration_ns", prediction.iterationNs},
                        {"samples_per_s", prediction.samplesPerS},
                        {"bubble_fraction", prediction.bubbleFraction},
                        {"busy_ns", array(prediction.busyNs)},
                        {"peak_bytes", array(prediction.peakBytes)},
                        {"peak_op", array(prediction.peakOp)},
                        {"fits", prediction.fits},
                        {"overflow_devices", array(prediction.overflowDevices)},
                        {"trace_path", prediction.tracePath}};
  if (!prediction.latePeakBytes.empty()) out["late_peak_bytes"] = array(prediction.latePeakBytes);
  return out;
}

nlohmann::json toJson(const Measurement& measurement) {
  nlohmann::json discarded = nlohmann::json::array();
  for (const DiscardedRound& round : measurement.discardedRounds) {
    discarded.push_back({{"start_s", round.startS}, {"median_ns", round.medianNs}, {"cpu_wait", round.cpuWait}});
  }
  nlohmann::json out = {{"warmup_steps", measurement.warmupSteps},
                        {"rounds", measurement.rounds},
                        {"step_ns", array(measurement.stepNs)},
                        {"step_ns_median", measurement.stepNsMedian},
                        {"step_ns_min", measurement.stepNsMin},
                        {"step_ns_max", measurement.stepNsMax},
                        {"samples_per_s", measurement.samplesPerS},
                        {"peak_bytes", array(measurement.peakBytes)},
                        {"trace_path", measurement.tracePath},
                        {"round_steps", array(measurement.roundSteps)},
                        {"round_start_s", measurement.roundStartS},
                        {"step_cpu_wait_ns", array(measurement.stepCpuWaitNs)},
                        {"discarded_rounds", discarded}};
  if (measurement.machineSlowdown) out["machine_slowdown"] = *measurement.machineSlowdown;
  if (measurement.runOffRounds > 0) out["run_off_rounds"] = measurement.runOffRounds;
  return out;
}

nlohmann::json toJson(const Report& report) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const CandidateResult& result : report.candidates) {
    nlohmann::json item = {
        {"candidate", toJson(result.candidate)},           {"prediction", toJson(result.prediction)},
        {"predicted_rank", result.predictedRank},          {"status", candidateStatusName(result.status)},
        {"not_measured_reason", result.notMeasuredReason}, {"error", result.error}};
    if (result.predictionBeforeDrift) {
      const Prediction& before = *result.predictionBeforeDrift;
      item["prediction_before_drift"] = {{"iteration_ns", before.iterationNs},
                                         {"samples_per_s", before.samplesPerS},
                                         {"bubble_fraction", before.bubbleFraction},
                                         {"busy_ns", before.busyNs}};
    }
    if (result.measurement) item["measurement"] = toJson(*result.measurement);
    if (!result.predictedAnalysis.is_null()) item["predicted_analysis"] = result.predictedAnalysis;
    if (!result.measuredAnalysis.is_null()) item["measured_analysis"] = result.measuredAnalysis;
    if (result.predictedBreakdown) item["predicted_breakdown"] = toJson(*result.predictedBreakdown);
    if (result.measuredBreakdown) item["measured_breakdown"] = toJson(*result.measuredBreakdown);
    candidates.push_back(item);
  }
  const ReportEnvironment& environment = report.environment;
  nlohmann::json json = {{"schema", kReportSchema},
                         {"complete", report.complete},
                         {"environment",
                          {{"model", environment.model},
                           {"batch", environment.batch},
                           {"devices", array(environment.devices)},
                           {"threads", environment.threads},
                           {"torch_version", environment.torchVersion},
                           {"pipeprof_revision", environment.pipeprofRevision},
                           {"created_at", environment.createdAt},
                           {"precision", precisionName(environment.precision)},
                           {"optimizer", toJson(environment.optimizer)}}},
                         {"profile_path", report.profilePath},
                         {"candidates", candidates},
                         {"suggestion",
                          {{"best_measured", optionalIndexJson(report.suggestion.bestMeasured)},
                           {"best_predicted", optionalIndexJson(report.suggestion.bestPredicted)},
                           {"agree", report.suggestion.agree}}}};
  if (report.profile) json["profile"] = toJson(*report.profile);
  if (report.cluster) json["cluster"] = toJson(*report.cluster);
  if (!report.calibration.is_null()) json["calibration"] = report.calibration;
  if (!report.calibrationDrift.is_null()) json["calibration_drift"] = report.calibrationDrift;
  if (!report.processLayout.is_null()) json["process_layout"] = report.processLayout;
  if (!report.calibrationError.empty()) json["calibration_error"] = report.calibrationError;
  if (report.calibrationPending) json["calibration_pending"] = true;
  if (!environment.cpuBinding.empty()) json["environment"]["cpu_binding"] = environment.cpuBinding;
  return json;
}

Report reportFromJson(const nlohmann::json& json, const std::string& file) {
  JsonCursor root(json, file);
  if (!json.is_object()) root.fail("expected an object with schema '" + std::string(kReportSchema) + "'");
  root.requireSchema(kReportSchema);
  Report report;
  report.complete = root.has("complete") && root.at("complete").asBool();
  JsonCursor environment = root.at("environment");
  if (!environment.value().is_object()) environment.fail("expected an object");
  report.environment.model = environment.at("model").asString();
  report.environment.batch = environment.at("batch").asNonNegativeInt();
  if (environment.has("devices")) {
    for (const JsonCursor& item : environment.at("devices").items())
      report.environment.devices.push_back(item.asString());
  }
  if (environment.has("threads")) report.environment.threads = environment.at("threads").asPositiveInt();
  report.environment.torchVersion = optionalString(environment, "torch_version");
  report.environment.pipeprofRevision = optionalString(environment, "pipeprof_revision");
  report.environment.createdAt = optionalString(environment, "created_at");
  if (environment.has("precision")) report.environment.precision = parseAt(environment.at("precision"), parsePrecision);
  if (environment.has("optimizer")) report.environment.optimizer = optimizerFromJson(environment.at("optimizer"));
  report.environment.cpuBinding = optionalString(environment, "cpu_binding");
  report.profilePath = optionalString(root, "profile_path");
  if (root.has("profile") && !root.at("profile").value().is_null()) {
    report.profile = embedded(root.at("profile"), profileFromJson);
  }
  if (root.has("cluster") && !root.at("cluster").value().is_null()) {
    report.cluster = embedded(root.at("cluster"), clusterFromJson);
  }
  if (root.has("calibration")) {
    JsonCursor calibration = root.at("calibration");
    if (!calibration.value().is_null() && !calibration.value().is_object()) {
      calibration.fail("expected an object, got " + calibration.value().dump());
    }
    report.calibration = calibration.value();
  }
  if (root.has("calibration_drift")) {
    JsonCursor drift = root.at("calibration_drift");
    if (!drift.value().is_null() && !drift.value().is_object())
      drift.fail("expected an object, got " + drift.value().dump());
    report.calibrationDrift = drift.value();
  }
  if (root.has("process_layout")) {
    JsonCursor layout = root.at("process_layout");
    if (!layout.value().is_null() && !layout.value().is_object())
      layout.fail("expected an object, got " + layout.value().dump());
    report.processLayout = layout.value();
  }
  report.calibrationError = optionalString(root, "calibration_error");
  if (root.has("calibration_pending")) report.calibrationPending = root.at("calibration_pending").asBool();
  for (const JsonCursor& item : root.at("candidates").items()) report.candidates.push_back(resultFromJson(item));
  if (root.has("suggestion")) {
    JsonCursor suggestion = root.at("suggestion");
    if (!suggestion.value().is_object()) suggestion.fail("expected an object");
    report.suggestion.bestMeasured = optionalIndex(suggestion, "best_measured", report.candidates.size());
    report.suggestion.bestPredicted = optionalIndex(suggestion, "best_predicted", report.candidates.size());
    report.suggestion.agree = suggestion.has("agree") && suggestion.at("agree").asBool();
  }
  return report;
}

Report readReport(const std::string& path) { return reportFromJson(readJsonFile(path), path); }

void writeReport(const Report& report, const std::string& path) {
  writeFileAtomically(path, toJson(report).dump(2) + "\n");
}

}  // namespace pipeprof
