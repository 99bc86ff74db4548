// The main job as a library: profile, calibrate, predict every candidate, measure a chosen subset, write the report.
#include <pipeprof/tuner/sweep.h>

#include "measuring_rounds.h"

#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/tuner/reference_calibration.h>
#include <pipeprof/tuner/sweep_predictions.h>

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/profiler/timeline_analysis.h>
#include <pipeprof/runtime/layer_profiler.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/simulator/simulator.h>

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

Profile obtainProfile(const SweepConfig& config, const SweepInputs& inputs, SweepProgress& progress,
                      const StopToken& stop) {
  if (inputs.cachedProfile) return *inputs.cachedProfile;
  const std::vector<std::int64_t> sizes = microBatchSizes(config.batch, config.chunks);
  progress.phase(fmt::format("profiling {} on {} with {} thread{} (micro-batches {})", config.model.name,
                             config.devices.front().typeName(), config.model.threads,
                             config.model.threads == 1 ? "" : "s", formatBalance(sizes)));
  Profile profile =
      measureProfile(config.model, config.devices.front(), sizes, config.profileBudgetSeconds, config.step, stop);
  progress.phase("profiled in " + describeProfilingTime(profile.environment.profiling));
  if (!config.profilePath.empty()) {
    fs::create_directories(fs::absolute(config.profilePath).parent_path());
    writeProfile(profile, config.profilePath);
  }
  return profile;
}

}  // namespace

SweepConfig withinTime(SweepConfig config) {
  if (config.timeLimitSeconds <= 0) return config;
  config.profileBudgetSeconds = std::min(config.profileBudgetSeconds, kProfileTimeShare * config.timeLimitSeconds);
  config.calibrationBudgetSeconds =
      std::min(config.calibrationBudgetSeconds, kCalibrationTimeShare * config.timeLimitSeconds);
  return config;
}

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

std::int64_t roundSteps(const SweepConfig& config, std::int64_t round) {
  return config.steps / config.rounds + (round < config.steps % config.rounds ? 1 : 0);
}

std::vector<std::int64_t> microBatchSizes(std::int64_t batch, const std::vector<std::int64_t>& chunks) {
  std::set<std::int64_t> sizes;
  for (const std::int64_t m : chunks) {
    if (m < 1 || m > batch) continue;
    const std::int64_t full = (batch + m - 1) / m;
    const std::int64_t count = (batch + full - 1) / full;
    sizes.insert(full);
    sizes.insert(batch - full * (count - 1));
  }
  return {sizes.begin(), sizes.end()};
}

Profile measureProfile(const ModelSpec& model, const DeviceDesc& device, const std::vector<std::int64_t>& microBatches,
                       double budgetSeconds, const TrainingStepOptions& step, const StopToken& stop) {
  Model built = buildModel(model);
  LayerProfilerOptions options;
  options.device = torchDevice(device);
  options.microBatches = microBatches;
  options.timeBudgetSeconds = budgetSeconds;
  options.optimizer = step.optimizer;
  options.precision = step.precision;
  options.stop = stop;
  Profile profile = profileModel(built, options);
  profile.environment.model = model.name;
  profile.environment.threads = model.threads;
  return profile;
}

std::string profileMismatch(const Profile& profile, const ModelSpec& model, const std::string& deviceType,
                            std::int64_t layerCount, const TrainingStepOptions& step) {
  const ProfileEnvironment& env = profile.environment;
  if (env.deviceType != deviceType) {
    return fmt::format("it was measured on device type '{}', this sweep runs on '{}'", env.deviceType, deviceType);
  }
  if (env.threads != model.threads) {
    return fmt::format(
        "it was measured with {} intra-op thread(s), this sweep uses {} (pass --threads {} or re-profile)", env.threads,
        model.threads, env.threads);
  }
  if (env.torchVersion != torchVersion()) {
    return fmt::format("it was measured with LibTorch {}, this is LibTorch {}", env.torchVersion, torchVersion());
  }
  if (!env.model.empty() && env.model != model.name) {
    return fmt::format("it profiles model '{}', this sweep is of '{}'", env.model, model.name);
  }
  if (profile.layerCount() != layerCount) {
    return fmt::format("it has {} layers, the model has {}", profile.layerCount(), layerCount);
  }
  if (env.precision != step.precision) {
    return fmt::format("it was measured in {}, this sweep trains in {}", precisionName(env.precision),
                       precisionName(step.precision));
  }
  // The kind decides the state, the step's time and its temporaries (the rate does not): a
  // profile stands for another kind whose steps it measured (withOptimizer).
  if (!profile.predictsOptimizer(step.optimizer.kind)) {
    return fmt::format("it was measured with {} and has no {} steps, this sweep trains with {}",
                       describeOptimizer(env.optimizer), optimizerName(step.optimizer.kind),
                       describeOptimizer(step.optimizer));
  }
  return "";
}

std::string resumeMismatch(const Report& report, const SweepConfig& config) {
  const ReportEnvironment& env = report.environment;
  std::vector<std::string> devices;
  for (const DeviceDesc& device : config.devices) devices.push_back(device.str());
  if (env.model != config.model.name) return fmt::format("model '{}' there, '{}' here", env.model, config.model.name);
  if (env.batch != config.batch) return fmt::format("batch {} there, {} here", env.batch, config.batch);
  if (env.devices != devices) {
    return fmt::format("devices {} there, {} here", fmt::join(env.devices, ","), fmt::join(devices, ","));
  }
  if (env.threads != config.model.threads) {
    return fmt::format("{} thread(s) there, {} here", env.threads, config.model.threads);
  }
  const auto procs = [](const nlohmann::json& layout) { return layout.is_object() ? layout.value("procs", 0) : 0; };
  if (procs(report.processLayout) != procs(config.processLayout)) {
    const auto layout = [&](int n) {
      return n == 0 ? std::string("threads of one process") : fmt::format("{} processes", n);
    };
    return fmt::format("{} there, {} here", layout(procs(report.processLayout)), layout(procs(config.processLayout)));
  }
  return "";
}

namespace {

/// The indices of the candidates --measure selects (among those predicted to fit, which come
/// first in the report); every other one that fits gets the reason it is not measured.
std::vector<std::size_t> selectCandidates(Report& report, const MeasurePolicy& measure) {
  std::vector<Candidate> ranked;
  for (const CandidateResult& result : report.candidates) {
    if (result.predictedRank > 0) ranked.push_back(result.candidate);
  }
  const std::vector<std::size_t> selected = selectForMeasurement(ranked, measure);
  const std::set<std::size_t> selectedSet(selected.begin(), selected.end());
  const std::string notSelected = measure.kind == MeasureKind::None
                                      ? "--measure none"
                                      : fmt::format("not selected by --measure top:{}", measure.count);
  for (std::size_t index = 0; index < ranked.size(); ++index) {
    if (selectedSet.count(index) == 0) report.candidates[index].notMeasuredReason = notSelected;
  }
  return selected;
}

struct ResumeCounts {
  std::int64_t finished = 0;  ///< measured or failed candidates kept as they were
  std::int64_t partial = 0;   ///< partly measured candidates that go on from their next round
};

/// --resume: keeps every finished (measured or failed) candidate of `resumed` as it was, and
/// the rounds a partly measured one has done when it is still selected.
ResumeCounts keepResumedResults(Report& report, const Report& resumed, const SweepConfig& config) {
  ResumeCounts counts;
  for (const CandidateResult& old : resumed.candidates) {
    const std::int64_t done = roundsDone(old, config);
    if (old.status == CandidateStatus::Predicted && done == 0) continue;
    for (CandidateResult& result : report.candidates) {
      if (!(result.candidate == old.candidate)) continue;
      if (old.status == CandidateStatus::Predicted) {
        if (!result.notMeasuredReason.empty()) continue;  // no longer selected
        result.measurement = old.measurement;
        result.notMeasuredReason = old.notMeasuredReason;
        ++counts.partial;
        continue;
      }
      result.status = old.status;
      result.measurement = old.measurement;
      result.error = old.error;
      result.notMeasuredReason.clear();
      result.prediction.tracePath = old.prediction.tracePath;
      result.predictedAnalysis = old.predictedAnalysis;
      result.measuredAnalysis = old.measuredAnalysis;
      result.predictedBreakdown = old.predictedBreakdown;
      result.measuredBreakdown = old.measuredBreakdown;
      ++counts.finished;
    }
  }
  return counts;
}

/// A sweep stopped while calibrating: its report holds the profile and the raw profile's
/// predictions, nothing measured, for --resume to calibrate and measure.
void writeCalibrationPending(const SweepConfig& config, Profile profile) {
  const CalibratedSetup raw{
      std::move(profile), sweepCluster(config.devices, config.deviceMemoryBytes, config.rankLink), {}, {}, {}};
  Report report = predictedReport(config, raw);
  selectCandidates(report, config.measure);
  report.calibrationPending = true;
  report.updateSuggestion();
  fs::create_directories(fs::absolute(config.reportPath).parent_path());
  writeReport(report, config.reportPath);
}

}  // namespace

std::string describePlan(const SweepConfig& config, const SweepInputs& inputs) {
  const std::string profile =
      inputs.resumedReport && inputs.resumedReport->profile ? std::string("the report's profile")
      : !inputs.cachedProfile      ? fmt::format("profiling within {:g} s", config.profileBudgetSeconds)
      : config.profilePath.empty() ? std::string("the profile given")
                                   : "the profile of " + config.profilePath;
  const std::string calibration =
      inputs.resumedReport && !inputs.resumedReport->calibrationPending ? std::string("the report's calibration")
      : inputs.calibration                                              ? "the calibration of " + config.calibrationPath
                           : fmt::format("calibrating within {:g} s", config.calibrationBudgetSeconds);
  std::string measuring;
  switch (config.measure.kind) {
    case MeasureKind::None: measuring = "measuring none (--measure none)"; break;
    case MeasureKind::All: measuring = "measuring every candidate predicted to fit"; break;
    case MeasureKind::Top: measuring = fmt::format("measuring {} of the best predicted", config.measure.count); break;
  }
  if (config.measure.kind != MeasureKind::None) {
    measuring +=
        fmt::format(" in {} round{} of {} steps in all", config.rounds, config.rounds == 1 ? "" : "s", config.steps);
    measuring +=
        config.timeLimitSeconds > 0 ? ", those expected to end in the time left" : " (about how long, once calibrated)";
  }
  const std::string limit =
      config.timeLimitSeconds > 0 ? fmt::format("--time {:g}s: ", config.timeLimitSeconds) : "plan: ";
  return limit + profile + ", " + calibration + ", then " + measuring;
}

Report runSweep(const SweepConfig& requested, const SweepInputs& inputs, CandidateMeasurer& measurer,
                SweepProgress& progress, const StopToken& stop) {
  const SweepClock clock;
  const SweepConfig config = withinTime(requested);
  progress.phase(describePlan(config, inputs));
  ProcStatLoad machineLoad;
  MachineLoad& load = inputs.machineLoad ? *inputs.machineLoad : machineLoad;
  setIntraOpThreads(config.model.threads);  // LibTorch's (OpenBLAS on one), before profiling
  Profile profile = obtainProfile(config, inputs, progress, stop);
  CalibratedSetup setup = [&] {
    try {
      return calibrate(config, inputs, profile, measurer, progress, stop);
    } catch (const TrainingStopped&) {
      progress.finish();
      writeCalibrationPending(config, std::move(profile));
      throw SweepInterrupted(fmt::format("interrupted while calibrating; {} holds the profile and its uncalibrated "
                                         "predictions -- continue with the same command and --resume",
                                         config.reportPath));
    }
  }();
  Report report = predictedReport(config, setup);
  const std::vector<Prediction> base = predictionsOf(report);

  const std::vector<std::size_t> selected = selectCandidates(report, config.measure);
  if (inputs.resumedReport) {
    const ResumeCounts counts = keepResumedResults(report, *inputs.resumedReport, config);
    std::int64_t toMeasure = 0;
    for (const std::size_t index : selected) toMeasure += report.candidates[index].status == CandidateStatus::Predicted;
    progress.phase(fmt::format("resuming: {} finished candidate(s) kept, {} to measure{}", counts.finished, toMeasure,
                               counts.partial > 0 ? fmt::format(" ({} partly measured)", counts.partial) : ""));
  }

  const fs::path reportDir = fs::absolute(config.reportPath).parent_path();
  fs::create_directories(reportDir);
  fs::create_directories(config.tracesDir);
  applyDrift(report, base, setup);  // a resumed sweep's drift so far
  report.updateSuggestion();
  writeReport(report, config.reportPath);
  MeasuringContext context{report, base, config, setup, reportDir, measurer, load, progress, clock, stop};
  const double measuringStartS = clock.seconds();
  report.complete = measureInRounds(context, selected);
  report.updateSuggestion();
  writeReport(report, config.reportPath);
  if (config.timeLimitSeconds > 0) {
    progress.phase(fmt::format("--time {:g}s: {:.0f} s in all -- {:.0f} s profiling, calibrating and predicting, "
                               "{:.0f} s measuring{}",
                               config.timeLimitSeconds, clock.seconds(), measuringStartS,
                               clock.seconds() - measuringStartS,
                               report.complete ? "" : "; candidates left short: continue with --resume"));
  }
  return report;
}

}  // namespace pipeprof::tuner
