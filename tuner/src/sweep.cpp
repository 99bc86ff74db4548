// The main job as a library: profile, calibrate, predict every candidate, measure a chosen subset, write the report.
#include <pipeprof/tuner/sweep.h>

#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/simulator/calibration_fit.h>
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
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

/// Testing hooks (documented in docs/cli.md as for tests only): make the candidate with this
/// label fail, or pause after each measured candidate so a test can kill the sweep mid-way.
constexpr const char* kFailCandidateEnv = "PIPEPROF_TEST_FAIL_CANDIDATE";
constexpr const char* kCandidateDelayEnv = "PIPEPROF_TEST_CANDIDATE_DELAY_MS";

std::string envOr(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

/// One round of a candidate's measured run through the measurer: `steps` timed steps, traced
/// when `traced`.
MeasuredRun measureRound(CandidateMeasurer& measurer, const SweepConfig& config, const Candidate& candidate,
                         std::int64_t steps, bool traced, const StopToken& stop) {
  throwIfFailureInjected(candidate.label());
  MeasureRequest request;
  request.warmupSteps = config.warmupSteps;
  request.steps = steps;
  request.traced = traced;
  request.stop = stop;
  MeasuredRun run = measurer.measure(candidate, request);
  run.trace.metadata["candidate"] = candidate.label();
  return run;
}

void pauseForTests() {
  const std::string delay = envOr(kCandidateDelayEnv);
  if (delay.empty()) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::stoll(delay)));
}

Profile obtainProfile(const SweepConfig& config, const SweepInputs& inputs, SweepProgress& progress) {
  if (inputs.cachedProfile) return *inputs.cachedProfile;
  const std::vector<std::int64_t> sizes = microBatchSizes(config.batch, config.chunks);
  progress.phase(fmt::format("profiling {} on {} with {} thread{} (micro-batches {})", config.model.name,
                             config.devices.front().typeName(), config.model.threads,
                             config.model.threads == 1 ? "" : "s", formatBalance(sizes)));
  Profile profile =
      measureProfile(config.model, config.devices.front(), sizes, config.profileBudgetSeconds, config.step);
  if (!config.profilePath.empty()) {
    fs::create_directories(fs::absolute(config.profilePath).parent_path());
    writeProfile(profile, config.profilePath);
  }
  return profile;
}

void recordFailure(CandidateResult& result, const std::string& error) {
  result.status = CandidateStatus::Failed;
  result.error = error;
  result.measurement.reset();
  result.notMeasuredReason.clear();
}

/// Measures round `round` of a candidate into its (partial) measurement. The final round is
/// traced: it writes the measured trace and the predicted twin and marks the result Measured. Throws whatever the run
/// throws; the result is untouched then.
void measureRoundInto(CandidateResult& result, std::int64_t round, const SweepConfig& config,
                      const CalibratedSetup& setup, const fs::path& reportDir, CandidateMeasurer& measurer,
                      const StopToken& stop) {
  const bool last = round + 1 == config.rounds;
  const MeasuredRun run = measureRound(measurer, config, result.candidate, roundSteps(config, round), last, stop);
  Measurement measurement = round > 0 && result.measurement ? *result.measurement : Measurement{};
  measurement.warmupSteps = config.warmupSteps;
  measurement.rounds = round + 1;
  measurement.addRound(run.measurement.stepNs, run.measurement.peakBytes, config.batch);
  if (!last) {
    result.measurement = std::move(measurement);
    result.notMeasuredReason = fmt::format("measuring: {} of {} rounds done", round + 1, config.rounds);
    return;
  }
  const fs::path measuredPath = fs::path(config.tracesDir) / (candidateSlug(result.candidate) + ".measured.json");
  writeChromeTraceFile(run.trace, measuredPath.string());
  writePredictedTwin(result, setup, config.tracesDir, reportDir);
  result.measuredAnalysis = toJson(analyzeTimeline(run.trace));
  measurement.tracePath = fs::proximate(fs::absolute(measuredPath), reportDir).generic_string();
  result.measurement = std::move(measurement);
  result.status = CandidateStatus::Measured;
  result.notMeasuredReason.clear();
}

/// The rounds a partially measured candidate of a resumed report has done (0 for none, or for
/// a partial measurement this sweep cannot continue).
std::int64_t roundsDone(const CandidateResult& result, const SweepConfig& config) {
  if (result.status != CandidateStatus::Predicted || !result.measurement) return 0;
  const Measurement& partial = *result.measurement;
  std::int64_t expectedSteps = 0;
  for (std::int64_t round = 0; round < partial.rounds; ++round) expectedSteps += roundSteps(config, round);
  const bool continuable = partial.rounds < config.rounds && partial.warmupSteps == config.warmupSteps &&
                           static_cast<std::int64_t>(partial.stepNs.size()) == expectedSteps;
  return continuable ? partial.rounds : 0;
}

}  // namespace

void throwIfFailureInjected(const std::string& what) {
  if (envOr(kFailCandidateEnv) == what) {
    throw std::runtime_error("failure injected by " + std::string(kFailCandidateEnv) + " (a testing hook)");
  }
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
                       double budgetSeconds, const TrainingStepOptions& step) {
  Model built = buildModel(model);
  LayerProfilerOptions options;
  options.device = torchDevice(device);
  options.microBatches = microBatches;
  options.timeBudgetSeconds = budgetSeconds;
  options.optimizer = step.optimizer;
  options.precision = step.precision;
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
      ++counts.finished;
    }
  }
  return counts;
}

/// Ctrl-C between or during runs: the report on disk holds what finished.
SweepInterrupted interruption(const std::string& when, const SweepConfig& config, SweepProgress& progress) {
  progress.finish();
  return SweepInterrupted(fmt::format("interrupted {}; {} holds what finished -- continue with the same command and "
                                      "--resume",
                                      when, config.reportPath));
}

/// The drift correction in round `round`: trains the reference pipeline with `chunks` chunks
/// once more (untraced, at most kReferenceStepsPerRound timed steps) and adds its steps to the
/// drift. A reference that fails is left out with a note; the others still correct the drift.
void timeReference(CalibratedSetup& setup, std::int64_t chunks, std::int64_t round, const SweepConfig& config,
                   CandidateMeasurer& measurer, SweepProgress& progress, const StopToken& stop) {
  constexpr std::int64_t kReferenceStepsPerRound = 5;
  const std::string label = fmt::format("reference x{} (round {}/{})", chunks, round + 1, config.rounds);
  if (stop.stopRequested()) throw interruption("before " + label, config, progress);
  progress.begin(label);
  const Candidate reference = referenceCandidate(
      setup.profile.layerCount(), static_cast<std::int64_t>(config.devices.size()), chunks, config.batch);
  try {
    MeasureRequest request;
    request.warmupSteps = std::max<std::int64_t>(1, config.warmupSteps);
    request.steps = std::min(roundSteps(config, round), kReferenceStepsPerRound);
    request.stop = stop;
    const MeasuredRun run = measurer.measure(reference, request);
    std::vector<TimeNs>& timed = setup.drift.measuredNs[chunks];
    timed.insert(timed.end(), run.measurement.stepNs.begin(), run.measurement.stepNs.end());
  } catch (const TrainingStopped&) {
    throw interruption("during " + label, config, progress);
  } catch (const std::exception& failure) {
    progress.phase(
        fmt::format("{} failed, left out of the drift correction: {}", label, firstLine(errorText(failure))));
  }
}

/// Rewrites the predicted twins whose drift factor is not the final one: those written before
/// the last references of the final round were timed, or before a --resume.
void refreshPredictedTwins(Report& report, const CalibratedSetup& setup, const SweepConfig& config,
                           const fs::path& reportDir) {
  const double factor = setup.drift.factor();
  for (std::size_t index = 0; index < report.candidates.size(); ++index) {
    CandidateResult& result = report.candidates[index];
    if (result.status != CandidateStatus::Measured || std::abs(twinDriftFactor(result) - factor) < 1e-9) continue;
    writePredictedTwin(result, setup, config.tracesDir, reportDir);
  }
}

/// Measures the selected candidates that are not finished yet, in interleaved rounds, and
/// rewrites the report after every round of a candidate. Round r trains every candidate once,
/// and the reference pipelines once in between (the drift correction), so a slow spell of a
/// shared machine spoils one round of several candidates rather than every step of one. A
/// failed candidate is recorded and not measured again. `base` holds the predictions before drift.
/// Trace paths are written relative to `reportDir`, the report's directory.
void measureInRounds(Report& report, const std::vector<Prediction>& base, const std::vector<std::size_t>& selected,
                     const SweepConfig& config, CalibratedSetup& setup, const fs::path& reportDir,
                     CandidateMeasurer& measurer, SweepProgress& progress, const StopToken& stop) {
  std::vector<std::size_t> todo;
  std::int64_t roundsToRun = 0;
  for (const std::size_t index : selected) {
    const CandidateResult& result = report.candidates[index];
    if (result.status != CandidateStatus::Predicted) continue;
    todo.push_back(index);
    roundsToRun += config.rounds - roundsDone(result, config);
  }
  progress.phase(fmt::format("predicted {} candidates ({} fit); measuring {}{}", report.candidates.size(),
                             std::count_if(report.candidates.begin(), report.candidates.end(),
                                           [](const CandidateResult& result) { return result.predictedRank > 0; }),
                             todo.size(),
                             config.rounds > 1 ? fmt::format(" in {} interleaved rounds", config.rounds) : ""));
  progress.setTotal(roundsToRun);

  std::vector<std::int64_t> references;  // chunk counts of the reference pipelines
  if (setup.timesReferences()) {
    for (const auto& entry : setup.drift.predictedNs) references.push_back(entry.first);
  }
  for (std::int64_t round = 0; round < config.rounds; ++round) {
    std::vector<std::size_t> running;  // the candidates this round trains
    for (const std::size_t index : todo) {
      const CandidateResult& result = report.candidates[index];
      if (result.status == CandidateStatus::Predicted && roundsDone(result, config) <= round) running.push_back(index);
    }
    std::size_t referencesTimed = 0;
    for (std::size_t position = 0; position < running.size(); ++position) {
      // The references spread evenly over the round (reference k before candidate k*n/R), so
      // that they sample the machine's speed over the same span as the candidates.
      while (referencesTimed < references.size() && referencesTimed * running.size() / references.size() <= position) {
        timeReference(setup, references[referencesTimed++], round, config, measurer, progress, stop);
        applyDrift(report, base, setup);
      }
      CandidateResult& result = report.candidates[running[position]];
      const std::string label = result.candidate.label();
      const std::string roundLabel =
          config.rounds > 1 ? fmt::format("{} (round {}/{})", label, round + 1, config.rounds) : label;
      if (stop.stopRequested()) throw interruption("before " + roundLabel, config, progress);
      progress.begin(roundLabel);
      std::string error;
      try {
        measureRoundInto(result, round, config, setup, reportDir, measurer, stop);
        if (result.status == CandidateStatus::Measured) {
          progress.measured(label, result.measurement->stepNsMedian, result.prediction.iterationNs);
        } else {
          progress.roundDone(roundLabel, result.measurement->stepNsMedian);
        }
      } catch (const TrainingStopped&) {
        // Ctrl-C during this round's steps: the round is dropped, the earlier ones are kept.
        throw interruption("during " + roundLabel, config, progress);
      } catch (const std::exception& failure) {
        error = firstLine(errorText(failure));
      }
      if (!error.empty()) {
        recordFailure(result, error);
        roundsToRun -= config.rounds - round - 1;  // its later rounds leave the progress total
        progress.setTotal(roundsToRun);
        progress.failed(label, result.error);
      }
      report.updateSuggestion();
      writeReport(report, config.reportPath);
      pauseForTests();
    }
  }
  progress.finish();
  if (setup.timesReferences()) {
    progress.phase(describeCalibrationDrift(setup.drift));
    refreshPredictedTwins(report, setup, config, reportDir);
    applyDrift(report, base, setup);
  }
}

}  // namespace

Report runSweep(const SweepConfig& config, const SweepInputs& inputs, CandidateMeasurer& measurer,
                SweepProgress& progress, const StopToken& stop) {
  setIntraOpThreads(config.model.threads);  // LibTorch and OpenBLAS, before profiling
  CalibratedSetup setup = [&] {
    try {
      return calibrate(config, inputs, obtainProfile(config, inputs, progress), measurer, progress, stop);
    } catch (const TrainingStopped&) {
      progress.finish();
      throw SweepInterrupted("interrupted while calibrating, before any report was written -- run the command again");
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
  measureInRounds(report, base, selected, config, setup, reportDir, measurer, progress, stop);
  report.complete = true;
  report.updateSuggestion();
  writeReport(report, config.reportPath);
  return report;
}

}  // namespace pipeprof::tuner
