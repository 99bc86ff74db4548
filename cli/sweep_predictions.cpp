// The sweep's predictions: calibrated simulator inputs, every candidate predicted, drift applied.
#include "sweep_predictions.h"

#include "environment_info.h"
#include "sweep_calibration.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/profiler/timeline_analysis.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include <fmt/format.h>

#include <algorithm>

namespace pipeprof::cli {
namespace {

namespace fs = std::filesystem;

/// One cluster device per sweep device. CPU partitions share the host's memory, so their
/// links cost nothing (no copies); CUDA devices get the same zero-cost links until the
/// cluster flags say otherwise.
Cluster sweepCluster(const SweepConfig& config) {
  Cluster cluster;
  const auto n = static_cast<std::int64_t>(config.devices.size());
  for (std::int64_t j = 0; j < n; ++j) {
    DeviceSpec spec;
    spec.name = config.devices[static_cast<std::size_t>(j)].typeName() + ":" + std::to_string(j);
    spec.memoryBytes = config.deviceMemoryBytes;
    cluster.devices.push_back(spec);
  }
  cluster.links.assign(static_cast<std::size_t>(n), std::vector<Link>(static_cast<std::size_t>(n)));
  return cluster;
}

/// Each reference pipeline's predicted step time (calibrated simulation plus its step
/// overhead), by chunk count: what the drift correction compares the references' steps with.
std::map<std::int64_t, TimeNs> referencePredictions(const SweepConfig& config, const CalibratedSetup& setup) {
  std::map<std::int64_t, TimeNs> predicted;
  for (const std::int64_t m : config.chunks) {
    if (m < 1 || m > config.batch) continue;
    const Candidate reference = referenceCandidate(setup.profile.layerCount(),
                                                   static_cast<std::int64_t>(config.devices.size()), m, config.batch);
    predicted[m] = simulate(setup.profile, setup.cluster, reference).prediction.iterationNs +
                   setup.chained.stepOverheadNs(m);
  }
  return predicted;
}

std::string relativeTo(const fs::path& file, const fs::path& directory) {
  return fs::proximate(fs::absolute(file), fs::absolute(directory)).generic_string();
}

}  // namespace

nlohmann::json CalibratedSetup::json() const {
  if (!calibrationError.empty()) return {{"error", calibrationError}};
  nlohmann::json result = {{"chained", toJson(chained)}};
  if (!drift.predictedNs.empty()) result["drift"] = toJson(drift);
  return result;
}

CalibratedSetup calibrate(const SweepConfig& config, const SweepInputs& inputs, Profile profile,
                          ProgressReporter& progress) {
  CalibratedSetup setup{std::move(profile), sweepCluster(config), {}, {}, {}};
  if (inputs.resumedReport) {
    const nlohmann::json& calibration = inputs.resumedReport->calibration;
    if (calibration.is_object()) {
      setup.chained = chainedCalibrationFromJson(calibration.value("chained", nlohmann::json()));
      setup.drift = calibrationDriftFromJson(calibration.value("drift", nlohmann::json()));
      setup.calibrationError = calibration.value("error", std::string());
    }
    setup.cluster = calibratedCluster(std::move(setup.cluster), setup.chained);
  } else {
    progress.phase(fmt::format("calibrating: one reference pipeline per chunk count, in rounds for {:g} s",
                               config.calibrationBudgetSeconds));
    try {
      throwIfFailureInjected("calibration");
      CalibrationRounds rounds;
      rounds.budgetSeconds = config.calibrationBudgetSeconds;
      rounds.warmupSteps = std::max<std::int64_t>(1, config.warmupSteps);
      setup.chained = measureChainedCalibration(config.modelFlags, setup.profile, setup.cluster, config.batch,
                                                config.chunks, torchDevices(config.devices), rounds);
    } catch (const std::exception& failure) {
      setup.calibrationError = firstLine(errorText(failure));
    }
    if (!setup.calibrationError.empty()) {
      progress.phase("calibration failed, predicting from the raw profile: " + setup.calibrationError);
      return setup;
    }
    setup.profile = calibratedProfile(std::move(setup.profile), setup.chained);
    setup.cluster = calibratedCluster(std::move(setup.cluster), setup.chained);
    progress.phase(describeChainedCalibration(setup.chained));
  }
  if (setup.calibrationError.empty() && !setup.chained.scales.empty()) {
    setup.drift.predictedNs = referencePredictions(config, setup);
  }
  return setup;
}

Report predictedReport(const SweepConfig& config, const CalibratedSetup& setup) {
  SearchSpace space;
  space.batch = config.batch;
  space.partitions = static_cast<std::int64_t>(config.devices.size());
  space.schedules = config.schedules;
  space.stagesPerDevice = config.stagesPerDevice;
  space.chunks = config.chunks;
  space.modes = config.modes;
  space.enumeration = config.enumeration;
  space.balances = config.balances;
  SearchResult searched = search(setup.profile, setup.cluster, space);

  auto addOverhead = [&](RankedCandidate& entry) {
    if (entry.prediction.iterationNs <= 0) return;
    addStepOverhead(entry.prediction, setup.chained.stepOverheadNs(entry.candidate.chunks), config.batch);
  };
  for (RankedCandidate& entry : searched.ranked) addOverhead(entry);
  for (RankedCandidate& entry : searched.rejected) addOverhead(entry);
  std::stable_sort(searched.ranked.begin(), searched.ranked.end(),
                   [](const RankedCandidate& a, const RankedCandidate& b) {
                     return a.prediction.samplesPerS > b.prediction.samplesPerS;
                   });

  Report report;
  ReportEnvironment& env = report.environment;
  env.model = config.model;
  env.batch = config.batch;
  for (const DeviceDesc& device : config.devices) env.devices.push_back(device.str());
  env.threads = config.threads;
  env.torchVersion = torchVersion();
  env.pipeprofRevision = pipeprofRevision();
  env.createdAt = utcNowIso8601();
  report.profilePath = config.profilePath;
  report.profile = setup.profile;
  report.cluster = setup.cluster;
  report.calibration = setup.json();
  for (std::size_t index = 0; index < searched.ranked.size(); ++index) {
    CandidateResult result;
    result.candidate = searched.ranked[index].candidate;
    result.prediction = searched.ranked[index].prediction;
    result.predictedRank = static_cast<std::int64_t>(index) + 1;
    report.candidates.push_back(std::move(result));
  }
  for (const RankedCandidate& rejected : searched.rejected) {
    // A candidate the schedule cannot run (interleaved chunks not a multiple of the devices,
    // more stages than layers) was never simulated: it is no candidate of the report.
    if (rejected.candidate.balance.empty() || rejected.prediction.peakBytes.empty()) continue;
    CandidateResult result;
    result.candidate = rejected.candidate;
    result.prediction = rejected.prediction;
    result.notMeasuredReason = rejected.rejection.empty() ? "predicted not to fit" : rejected.rejection;
    report.candidates.push_back(std::move(result));
  }
  return report;
}

std::vector<Prediction> predictionsOf(const Report& report) {
  std::vector<Prediction> predictions;
  predictions.reserve(report.candidates.size());
  for (const CandidateResult& result : report.candidates) predictions.push_back(result.prediction);
  return predictions;
}

void applyDrift(Report& report, const std::vector<Prediction>& base, const CalibratedSetup& setup) {
  const double factor = setup.drift.factor();
  for (std::size_t index = 0; index < report.candidates.size() && index < base.size(); ++index) {
    Prediction& prediction = report.candidates[index].prediction;
    std::string tracePath = std::move(prediction.tracePath);
    prediction = driftedPrediction(base[index], factor, report.environment.batch);
    prediction.tracePath = std::move(tracePath);
  }
  report.calibration = setup.json();
}

void writePredictedTwin(CandidateResult& result, const Prediction& base, const CalibratedSetup& setup,
                        const fs::path& tracesDir, const fs::path& reportDir) {
  SimulationOptions options;
  options.recordTrace = true;
  SimulationResult twin = simulate(setup.profile, setup.cluster, result.candidate, options);
  twin.trace.metadata["source"] = "predicted";
  twin.trace.metadata["candidate"] = result.candidate.label();
  // What the prediction adds to the simulator's step: the calibrated step overhead.
  const TimeNs overheadNs = std::max<TimeNs>(0, base.iterationNs - twin.prediction.iterationNs);
  appendStepOverheadSpan(twin.trace, overheadNs);
  const double factor = setup.drift.factor();
  scaleTraceTimes(twin.trace, factor);
  const fs::path path = tracesDir / (candidateSlug(result.candidate) + ".predicted.json");
  writeChromeTraceFile(twin.trace, path.string());
  result.predictedAnalysis = toJson(analyzeTimeline(twin.trace));
  result.predictedAnalysis["calibrated_step_overhead_ns"] = std::llround(static_cast<double>(overheadNs) * factor);
  result.predictedAnalysis["calibration_drift_factor"] = factor;
  result.prediction.tracePath = relativeTo(path, reportDir);
}

double twinDriftFactor(const CandidateResult& result) {
  if (!result.predictedAnalysis.is_object()) return 1.0;
  return result.predictedAnalysis.value("calibration_drift_factor", 1.0);
}

}  // namespace pipeprof::cli
