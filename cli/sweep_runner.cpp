// The main job: profile, simulate every candidate, measure a chosen subset, write the report.
#include "sweep_runner.h"

#include "environment_info.h"
#include "sweep_calibration.h"
#include "training_loop.h"

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
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

namespace pipeprof::cli {
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

std::string relativeTo(const fs::path& file, const fs::path& directory) {
  return fs::proximate(fs::absolute(file), fs::absolute(directory)).generic_string();
}

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

/// One round of a candidate's measured run: the shared training loop (cli/training_loop.h) on a
/// fresh copy of the model, `steps` timed steps, traced when `traced`.
TrainingResult measureRound(const SweepConfig& config, const Candidate& candidate, std::int64_t steps, bool traced,
                            const std::atomic<bool>& stop) {
  if (envOr(kFailCandidateEnv) == candidate.label()) {
    throw std::runtime_error("failure injected by " + std::string(kFailCandidateEnv) + " (a testing hook)");
  }
  Model model = buildModelFromFlags(config.modelFlags);
  TrainingOptions options;
  options.balance = candidate.balance;
  options.devices = torchDevices(config.devices);
  options.chunks = candidate.chunks;
  options.checkpoint = candidate.checkpoint;
  options.batch = config.batch;
  options.warmupSteps = config.warmupSteps;
  options.steps = steps;
  options.captureTrace = traced;
  options.shouldStop = [&stop] { return stop.load(); };
  TrainingResult result = trainAndMeasure(model, options);
  result.trace.metadata["candidate"] = candidate.label();
  return result;
}

void pauseForTests() {
  const std::string delay = envOr(kCandidateDelayEnv);
  if (delay.empty()) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::stoll(delay)));
}

Profile obtainProfile(const SweepConfig& config, const SweepInputs& inputs, ProgressReporter& progress) {
  if (inputs.cachedProfile) return *inputs.cachedProfile;
  progress.phase(fmt::format("profiling {} on {} with {} thread{} (micro-batches {})", config.model,
                             config.devices.front().typeName(), config.threads, config.threads == 1 ? "" : "s",
                             formatBalance(microBatchSizes(config.batch, config.chunks))));
  Model model = buildModelFromFlags(config.modelFlags);
  LayerProfilerOptions options;
  options.device = torchDevice(config.devices.front());
  options.microBatches = microBatchSizes(config.batch, config.chunks);
  options.timeBudgetSeconds = config.profileBudgetSeconds;
  Profile profile = profileModel(model, options);
  profile.environment.model = config.model;
  profile.environment.threads = config.threads;
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
/// traced: it writes the measured trace and the predicted twin and marks the result Measured.
/// Throws whatever the run throws; the result is untouched then.
void measureRoundInto(CandidateResult& result, std::int64_t round, const SweepConfig& config,
                      const Profile& profile, const Cluster& cluster, const fs::path& reportDir,
                      const std::atomic<bool>& stop) {
  const bool last = round + 1 == config.rounds;
  TrainingResult run = measureRound(config, result.candidate, roundSteps(config, round), last, stop);
  Measurement measurement = round > 0 && result.measurement ? *result.measurement : Measurement{};
  measurement.warmupSteps = config.warmupSteps;
  measurement.rounds = round + 1;
  measurement.addRound(run.measurement.stepNs, run.measurement.peakBytes, config.batch);
  if (!last) {
    result.measurement = std::move(measurement);
    result.notMeasuredReason = fmt::format("measuring: {} of {} rounds done", round + 1, config.rounds);
    return;
  }
  const std::string slug = candidateSlug(result.candidate);
  const fs::path measuredPath = fs::path(config.tracesDir) / (slug + ".measured.json");
  const fs::path predictedPath = fs::path(config.tracesDir) / (slug + ".predicted.json");
  writeChromeTraceFile(run.trace, measuredPath.string());
  SimulationOptions simulationOptions;
  simulationOptions.recordTrace = true;
  SimulationResult twin = simulate(profile, cluster, result.candidate, simulationOptions);
  twin.trace.metadata["source"] = "predicted";
  twin.trace.metadata["candidate"] = result.candidate.label();
  // What the prediction adds to the simulator's step (the calibrated step overhead; for a
  // resumed report, whatever its kept prediction carries).
  const TimeNs overheadNs = std::max<TimeNs>(0, result.prediction.iterationNs - twin.prediction.iterationNs);
  appendStepOverheadSpan(twin.trace, overheadNs);
  writeChromeTraceFile(twin.trace, predictedPath.string());
  result.measuredAnalysis = toJson(analyzeTimeline(run.trace));
  result.predictedAnalysis = toJson(analyzeTimeline(twin.trace));
  result.predictedAnalysis["calibrated_step_overhead_ns"] = overheadNs;
  measurement.tracePath = relativeTo(measuredPath, reportDir);
  result.prediction.tracePath = relativeTo(predictedPath, reportDir);
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

std::string candidateSlug(const Candidate& candidate) {
  std::string balance = formatBalance(candidate.balance);
  std::replace(balance.begin(), balance.end(), ',', '-');
  return fmt::format("b{}_m{}_{}", balance, candidate.chunks, checkpointName(candidate.checkpoint));
}

std::string profileMismatch(const Profile& profile, const SweepConfig& config, std::int64_t layerCount) {
  const ProfileEnvironment& env = profile.environment;
  const std::string deviceType = config.devices.front().typeName();
  if (env.deviceType != deviceType) {
    return fmt::format("it was measured on device type '{}', this sweep runs on '{}'", env.deviceType, deviceType);
  }
  if (env.threads != config.threads) {
    return fmt::format("it was measured with {} intra-op thread(s), this sweep uses {} (pass --threads {} or re-profile)",
                       env.threads, config.threads, env.threads);
  }
  if (env.torchVersion != torchVersion()) {
    return fmt::format("it was measured with LibTorch {}, this is LibTorch {}", env.torchVersion, torchVersion());
  }
  if (!env.model.empty() && env.model != config.model) {
    return fmt::format("it profiles model '{}', this sweep is of '{}'", env.model, config.model);
  }
  if (profile.layerCount() != layerCount) {
    return fmt::format("it has {} layers, the model has {}", profile.layerCount(), layerCount);
  }
  return "";
}

std::string resumeMismatch(const Report& report, const SweepConfig& config) {
  const ReportEnvironment& env = report.environment;
  std::vector<std::string> devices;
  for (const DeviceDesc& device : config.devices) devices.push_back(device.str());
  if (env.model != config.model) return fmt::format("model '{}' there, '{}' here", env.model, config.model);
  if (env.batch != config.batch) return fmt::format("batch {} there, {} here", env.batch, config.batch);
  if (env.devices != devices) {
    return fmt::format("devices {} there, {} here", fmt::join(env.devices, ","), fmt::join(devices, ","));
  }
  if (env.threads != config.threads) return fmt::format("{} thread(s) there, {} here", env.threads, config.threads);
  return "";
}

namespace {

/// The profile and cluster the predictions use, and the calibration that made them.
struct CalibratedSetup {
  Profile profile;
  Cluster cluster;
  ChainedCalibration chained;
  nlohmann::json json;  ///< the report's "calibration": {"chained": ...} or {"error": ...}
};

/// Calibrates the simulator with reference runs (cli/chained_calibration.h). A resumed sweep
/// keeps its report's calibration: its embedded profile is the calibrated one. When the
/// references fail (e.g. the even-balance `never` reference does not fit a device), the
/// candidates are predicted from the raw profile and can still be measured.
CalibratedSetup calibrate(const SweepConfig& config, const SweepInputs& inputs, Profile profile,
                          ProgressReporter& progress) {
  CalibratedSetup setup{std::move(profile), sweepCluster(config), {}, {}};
  if (inputs.resumedReport) {
    const Report& resumed = *inputs.resumedReport;
    if (resumed.cluster && resumed.cluster->deviceCount() == setup.cluster.deviceCount()) {
      setup.cluster = *resumed.cluster;
    }
    setup.json = resumed.calibration;
    if (setup.json.is_object()) {
      setup.chained = chainedCalibrationFromJson(setup.json.value("chained", nlohmann::json()));
    }
    return setup;
  }
  progress.phase(fmt::format("calibrating: one reference pipeline per chunk count, in rounds for {:g} s",
                             config.calibrationBudgetSeconds));
  std::string error;
  try {
    if (envOr(kFailCandidateEnv) == "calibration") {
      throw std::runtime_error("failure injected by " + std::string(kFailCandidateEnv) + " (a testing hook)");
    }
    CalibrationRounds rounds;
    rounds.budgetSeconds = config.calibrationBudgetSeconds;
    rounds.warmupSteps = std::max<std::int64_t>(1, config.warmupSteps);
    setup.chained = measureChainedCalibration(config.modelFlags, setup.profile, setup.cluster, config.batch,
                                              config.chunks, torchDevices(config.devices), rounds);
  } catch (const std::exception& failure) {
    error = firstLine(errorText(failure));
  }
  if (!error.empty()) {
    progress.phase("calibration failed, predicting from the raw profile: " + error);
    setup.json = {{"error", error}};
    return setup;
  }
  setup.profile = calibratedProfile(std::move(setup.profile), setup.chained);
  setup.cluster = calibratedCluster(std::move(setup.cluster), setup.chained);
  progress.phase(describeChainedCalibration(setup.chained));
  setup.json = {{"chained", toJson(setup.chained)}};
  return setup;
}

/// A report holding every candidate of the search, predicted: first those that fit, best
/// predicted throughput first (predictedRank 1, 2, ...), then those predicted not to fit. Each
/// prediction carries the calibrated step overhead of its chunk count; a resumed sweep keeps
/// its report's predictions.
Report predictedReport(const SweepConfig& config, const SweepInputs& inputs, const CalibratedSetup& setup) {
  SearchSpace space;
  space.batch = config.batch;
  space.partitions = static_cast<std::int64_t>(config.devices.size());
  space.chunks = config.chunks;
  space.modes = config.modes;
  space.enumeration = config.enumeration;
  space.balances = config.balances;
  SearchResult searched = search(setup.profile, setup.cluster, space);

  auto addOverhead = [&](RankedCandidate& entry) {
    if (entry.prediction.iterationNs <= 0) return;
    if (inputs.resumedReport) {
      for (const CandidateResult& old : inputs.resumedReport->candidates) {
        if (old.candidate == entry.candidate) {
          entry.prediction = old.prediction;
          return;
        }
      }
    }
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
  report.calibration = setup.json;
  for (std::size_t index = 0; index < searched.ranked.size(); ++index) {
    CandidateResult result;
    result.candidate = searched.ranked[index].candidate;
    result.prediction = searched.ranked[index].prediction;
    result.predictedRank = static_cast<std::int64_t>(index) + 1;
    report.candidates.push_back(std::move(result));
  }
  for (const RankedCandidate& rejected : searched.rejected) {
    CandidateResult result;
    result.candidate = rejected.candidate;
    result.prediction = rejected.prediction;
    result.notMeasuredReason = rejected.rejection.empty() ? "predicted not to fit" : rejected.rejection;
    report.candidates.push_back(std::move(result));
  }
  return report;
}

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
      result.predictedAnalysis = old.predictedAnalysis;
      result.measuredAnalysis = old.measuredAnalysis;
      ++counts.finished;
    }
  }
  return counts;
}

/// Measures the selected candidates that are not finished yet, in interleaved rounds, and
/// rewrites the report after every round of a candidate. Round r trains every candidate once,
/// so a slow spell of a shared machine spoils one round of several candidates rather than
/// every step of one. A failed candidate is recorded and not measured again. Trace paths are
/// written relative to `reportDir`, the report's directory.
void measureInRounds(Report& report, const std::vector<std::size_t>& selected, const SweepConfig& config,
                     const CalibratedSetup& setup, const fs::path& reportDir, ProgressReporter& progress,
                     const std::atomic<bool>& stop) {
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

  for (std::int64_t round = 0; round < config.rounds; ++round) {
    for (const std::size_t index : todo) {
      CandidateResult& result = report.candidates[index];
      if (result.status != CandidateStatus::Predicted || roundsDone(result, config) > round) continue;
      const std::string label = result.candidate.label();
      const std::string roundLabel =
          config.rounds > 1 ? fmt::format("{} (round {}/{})", label, round + 1, config.rounds) : label;
      if (stop.load()) {
        progress.finish();
        throw SweepInterrupted(fmt::format("interrupted before {}; {} holds what finished -- continue with the "
                                           "same command and --resume", roundLabel, config.reportPath));
      }
      progress.begin(roundLabel);
      std::string error;
      try {
        measureRoundInto(result, round, config, setup.profile, setup.cluster, reportDir, stop);
        if (result.status == CandidateStatus::Measured) {
          progress.measured(label, result.measurement->stepNsMedian, result.prediction.iterationNs);
        } else {
          progress.roundDone(roundLabel, result.measurement->stepNsMedian);
        }
      } catch (const TrainingStopped&) {
        // Ctrl-C during this round's steps: the round is dropped, the earlier ones are kept.
        progress.finish();
        throw SweepInterrupted(fmt::format("interrupted during {}; {} holds what finished -- continue with the "
                                           "same command and --resume", roundLabel, config.reportPath));
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
}

}  // namespace

Report runSweep(const SweepConfig& config, const SweepInputs& inputs, ProgressReporter& progress,
                const std::atomic<bool>& stop) {
  setThreads(config.threads);  // LibTorch and OpenBLAS, before profiling (model_options.h)
  const CalibratedSetup setup = calibrate(config, inputs, obtainProfile(config, inputs, progress), progress);
  Report report = predictedReport(config, inputs, setup);

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
  report.updateSuggestion();
  writeReport(report, config.reportPath);
  measureInRounds(report, selected, config, setup, reportDir, progress, stop);
  report.complete = true;
  report.updateSuggestion();
  writeReport(report, config.reportPath);
  return report;
}

}  // namespace pipeprof::cli
