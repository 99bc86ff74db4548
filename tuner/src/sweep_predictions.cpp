// The sweep's predictions: the calibration, every candidate predicted by one Predictor, drift applied.
#include <pipeprof/tuner/sweep_predictions.h>

#include "sweep_calibration.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/launch/cpu_binding.h>
#include <pipeprof/profiler/timeline_analysis.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/tuner/environment_info.h>
#include <pipeprof/tuner/reference_calibration.h>
#include <pipeprof/tuner/reference_traces.h>
#include <pipeprof/tuner/sweep_setup.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

/// Each reference pipeline's predicted step time (the calibrated prediction, step overhead
/// included), by chunk count: what the drift correction compares the references' steps with.
std::map<std::int64_t, TimeNs> referencePredictions(const SweepConfig& config, const CalibratedSetup& setup) {
  const Predictor predictor = setup.predictor();
  std::map<std::int64_t, TimeNs> predicted;
  for (const std::int64_t m : config.chunks) {
    if (m < 1 || m > config.batch) continue;
    const Candidate reference = referenceCandidate(setup.profile.layerCount(),
                                                   static_cast<std::int64_t>(config.devices.size()), m, config.batch);
    predicted[m] = predictor.predict(reference).prediction.iterationNs;
  }
  return predicted;
}

std::string relativeTo(const fs::path& file, const fs::path& directory) {
  return fs::proximate(fs::absolute(file), fs::absolute(directory)).generic_string();
}

/// What a resumed report holds: its calibration (and drift and error), in the format of today
/// or of the reports written before calibration files.
void resumeCalibration(CalibratedSetup& setup, const Report& resumed, const std::string& reportPath) {
  setup.calibration = reportCalibration(resumed, reportPath);
  nlohmann::json drift = resumed.calibrationDrift;
  setup.calibrationError = resumed.calibrationError;
  if (resumed.calibration.is_object() && resumed.calibration.contains("chained")) {
    // Its profile is calibrated already, and so are its cluster's device speeds: keep those
    // (the memory stays this sweep's --device-memory).
    drift = resumed.calibration.value("drift", nlohmann::json());
    setup.calibrationError = resumed.calibration.value("error", std::string());
    for (std::size_t d = 0; resumed.cluster && d < resumed.cluster->devices.size() && d < setup.cluster.devices.size();
         ++d) {
      setup.cluster.devices[d].relativeSpeed = resumed.cluster->devices[d].relativeSpeed;
    }
  }
  setup.drift = calibrationDriftFromJson(drift);
}

}  // namespace

void CalibratedSetup::storeIn(Report& report) const {
  report.calibration = calibration.empty() ? nlohmann::json() : toJson(calibration);
  report.calibrationDrift = drift.predictedNs.empty() ? nlohmann::json() : toJson(drift);
  report.calibrationError = calibrationError;
}

Schedule CalibratedSetup::scheduleOf(const Candidate& candidate) const {
  return Schedule::build(candidate.scheduleSpec(profile.skipRoutes()));
}

namespace {

/// CalibratedSetup::runSetupSeconds of `runs` reference runs of `steps` steps each (warm-up
/// included) that took `seconds` in all.
double runSetupSeconds(const Calibration& calibration, double seconds, std::size_t runs, std::int64_t steps) {
  const std::vector<CalibrationReference>& references = calibration.provenance.references;
  if (runs == 0 || references.empty()) return 0.0;
  double stepS = 0.0;
  for (const CalibrationReference& reference : references) stepS += static_cast<double>(reference.stepNsMedian) / 1e9;
  stepS /= static_cast<double>(references.size());
  return std::max(0.0, seconds / static_cast<double>(runs) - static_cast<double>(steps) * stepS);
}

}  // namespace

CalibratedSetup calibrate(const SweepConfig& config, const SweepInputs& inputs, Profile profile,
                          CandidateMeasurer& measurer, SweepProgress& progress, const StopToken& stop) {
  CalibratedSetup setup{
      std::move(profile), sweepCluster(config.devices, config.deviceMemoryBytes, config.rankLink), {}, {}, {}};
  if (inputs.resumedReport && !inputs.resumedReport->calibrationPending) {
    resumeCalibration(setup, *inputs.resumedReport, config.reportPath);
  } else if (inputs.calibration) {
    // Timed elsewhere: an earlier sweep's reference traces here would be refitted as this one's.
    if (!config.tracesDir.empty()) std::filesystem::remove_all(referenceTracesDir(config.tracesDir));
    setup.calibration = *inputs.calibration;
    progress.phase(describeCalibration(setup.calibration) + " (from " + config.calibrationPath + ")");
  } else {
    const std::int64_t rounds = config.calibrationRoundsAtMost();
    progress.phase(fmt::format("calibrating within {:g} s: GPipe and the shapes (schedule and checkpoint mode) of "
                               "the candidates to measure, at their chunk counts, {}",
                               config.calibrationBudgetSeconds,
                               rounds > 0 ? fmt::format("{} round(s) each", rounds)
                                          : std::string("as many rounds as the budget holds")));
    try {
      const SweepCalibration timed =
          calibrateForMeasuring(config, setup.profile, setup.cluster, measurer, progress, stop);
      setup.calibration = timed.calibration;
      stampProvenance(setup.calibration, config.model, config.batch, config.devices);
      setup.runSetupSeconds =
          runSetupSeconds(setup.calibration, timed.referenceSeconds, timed.referenceRuns, timed.stepsPerRun);
    } catch (const TrainingStopped&) {
      throw;  // not a failed calibration: the sweep was interrupted
    } catch (const std::exception& failure) {
      setup.calibrationError = firstLine(errorText(failure));
    }
    if (!setup.calibrationError.empty()) {
      progress.phase("calibration failed, predicting from the raw profile: " + setup.calibrationError);
      return setup;
    }
    progress.phase(describeCalibration(setup.calibration));
  }
  if (setup.calibrationError.empty() && !setup.calibration.empty() && setup.drift.predictedNs.empty()) {
    setup.drift.predictedNs = referencePredictions(config, setup);
  }
  return setup;
}

Report predictedReport(const SweepConfig& config, const CalibratedSetup& setup) {
  const SearchResult searched = setup.predictor().search(sweepSearchSpace(config));

  Report report;
  ReportEnvironment& env = report.environment;
  env.model = config.model.name;
  env.batch = config.batch;
  for (const DeviceDesc& device : config.devices) env.devices.push_back(device.str());
  env.threads = config.model.threads;
  env.torchVersion = torchVersion();
  env.pipeprofRevision = pipeprofRevision();
  env.createdAt = utcNowIso8601();
  env.precision = config.step.precision;
  env.optimizer = config.step.optimizer;
  const launch::CpuBinding layoutDefault =
      config.processLayout.is_null() ? launch::CpuBinding::None : launch::CpuBinding::Cores;
  env.cpuBinding = launch::cpuBindingName(config.step.cpuBinding.value_or(layoutDefault));
  report.profilePath = config.profilePath;
  report.profile = setup.profile;
  report.cluster = setup.cluster;
  report.processLayout = config.processLayout;
  setup.storeIn(report);
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
  for (const CandidateResult& result : report.candidates) {
    predictions.push_back(result.predictionBeforeDrift ? *result.predictionBeforeDrift : result.prediction);
  }
  return predictions;
}

void applyDrift(Report& report, const std::vector<Prediction>& base, const CalibratedSetup& setup) {
  const double sweepFactor = setup.drift.factor();  // once: a sweep predicts tens of thousands
  for (std::size_t index = 0; index < report.candidates.size() && index < base.size(); ++index) {
    CandidateResult& result = report.candidates[index];
    double factor = sweepFactor;
    if (result.measurement) {
      result.measurement->machineSlowdown = setup.drift.localRatioWhile(*result.measurement);
      factor = setup.drift.factorAtSlowdown(result.measurement->machineSlowdown.value_or(1.0));
    }
    std::string tracePath = std::move(result.prediction.tracePath);
    std::vector<Bytes> latePeakBytes = std::move(result.prediction.latePeakBytes);  // the twin's, where written
    result.prediction = driftedPrediction(base[index], factor, report.environment.batch);
    result.prediction.tracePath = std::move(tracePath);
    if (result.prediction.latePeakBytes.empty()) result.prediction.latePeakBytes = std::move(latePeakBytes);
    result.predictionBeforeDrift = base[index];
    result.predictionBeforeDrift->tracePath.clear();
  }
  setup.storeIn(report);
}

void writePredictedTwin(CandidateResult& result, const CalibratedSetup& setup, const fs::path& tracesDir,
                        const fs::path& reportDir) {
  SimulationOptions options;
  options.recordTrace = true;
  SimulationResult twin = setup.predictor().predict(result.candidate, options);
  twin.trace.metadata["source"] = "predicted";
  twin.trace.metadata["candidate"] = result.candidate.label();
  const double factor = driftFactorOf(result, setup.drift);
  scaleTraceTimes(twin.trace, factor);
  const fs::path path = tracesDir / (candidateSlug(result.candidate) + ".predicted.json");
  writeChromeTraceFile(twin.trace, path.string());
  result.predictedAnalysis = toJson(analyzeTimeline(twin.trace));
  const TimeNs overheadNs = setup.calibration.stepOverheadNsFor(result.candidate.chunks);
  result.predictedAnalysis["calibrated_step_overhead_ns"] = std::llround(static_cast<double>(overheadNs) * factor);
  result.predictedAnalysis["calibration_drift_factor"] = factor;
  result.predictedBreakdown = breakDownSteps(setup.scheduleOf(result.candidate), twin.trace);
  result.prediction.tracePath = relativeTo(path, reportDir);
  result.prediction.latePeakBytes = twin.prediction.latePeakBytes;  // memory: no drift to apply
}

double twinDriftFactor(const CandidateResult& result) {
  if (!result.predictedAnalysis.is_object()) return 1.0;
  return result.predictedAnalysis.value("calibration_drift_factor", 1.0);
}

}  // namespace pipeprof::tuner
