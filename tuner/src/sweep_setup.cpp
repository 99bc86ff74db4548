// Before a sweep runs: its model on its devices, its config checked, and what it starts from loaded.
#include <pipeprof/tuner/sweep_setup.h>

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/report.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/tuner/environment_info.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

namespace pipeprof::tuner {

namespace fs = std::filesystem;

SweepModel resolveSweepModel(ModelSpec spec, std::vector<DeviceDesc> devices, std::int64_t batch) {
  if (devices.empty()) throw ConfigError("devices", ": give at least one device, e.g. cpu,cpu");
  for (const DeviceDesc& device : devices) {
    if (device.type == devices.front().type) continue;
    std::vector<std::string> names;
    for (const DeviceDesc& each : devices) names.push_back(each.str());
    throw ConfigError("devices",
                      fmt::format(" '{}': mix of device types; use all cpu or all cuda", fmt::join(names, ",")));
  }
  torchDevices(devices);  // CUDA present and indices in range
  const auto count = static_cast<std::int64_t>(devices.size());
  spec.threads = sweepThreads(spec.threads, count, hardwareThreads());
  Model model = buildModel(spec);
  checkSamplesFit(model);
  SweepModel resolved{std::move(spec), std::move(devices), batch > 0 ? batch : model.defaultBatch,
                      static_cast<std::int64_t>(model.sequential->size())};
  if (resolved.layers < count) {
    throw ConfigError("devices",
                      fmt::format(": {} devices need at least one layer each but model '{}' has only {} layers", count,
                                  resolved.spec.name, resolved.layers));
  }
  return resolved;
}

SearchSpace sweepSearchSpace(const SweepConfig& config) {
  SearchSpace space;
  space.batch = config.batch;
  space.devices = static_cast<std::int64_t>(config.devices.size());
  space.schedules = config.schedules;
  space.stagesPerDevice = config.stagesPerDevice;
  space.chunks = config.chunks;
  space.modes = config.modes;
  space.enumeration = config.enumeration;
  space.balances = config.balances;
  return space;
}

void checkSweepConfig(const SweepConfig& config, std::int64_t layers) {
  const SearchSpace space = sweepSearchSpace(config);
  const std::vector<std::int64_t> stages = stageCounts(space, space.devices);
  for (const std::vector<std::int64_t>& balance : config.balances) {
    const bool shaped =
        std::find(stages.begin(), stages.end(), static_cast<std::int64_t>(balance.size())) != stages.end();
    const bool positive = std::all_of(balance.begin(), balance.end(), [](std::int64_t part) { return part > 0; });
    if (shaped && positive && std::accumulate(balance.begin(), balance.end(), std::int64_t{0}) == layers) continue;
    throw ConfigError("balances",
                      fmt::format(": '{}' must have {} positive parts ({} devices x the stages per device of the "
                                  "schedules) summing to {} (the layers of '{}')",
                                  formatBalance(balance), fmt::join(stages, " or "), space.devices, layers,
                                  config.model.name),
                      formatBalance(balance));
  }
  if (config.steps < 1) throw ConfigError("steps", fmt::format(" {}: must be at least 1", config.steps));
  if (config.warmupSteps < 0)
    throw ConfigError("warmupSteps", fmt::format(" {}: must be at least 0", config.warmupSteps));
  if (config.rounds < 1) throw ConfigError("rounds", fmt::format(" {}: must be at least 1", config.rounds));
  if (config.rounds > config.steps) {
    throw ConfigError("rounds", fmt::format(" {}: must be at most the steps ({})", config.rounds, config.steps));
  }
  if (config.maxRounds != 0 && config.maxRounds < config.rounds) {
    throw ConfigError("maxRounds",
                      fmt::format(" {}: must be at least the rounds ({})", config.maxRounds, config.rounds));
  }
  if (config.runOffCandidates < 0) {
    throw ConfigError("runOffCandidates",
                      fmt::format(" {}: must be 0 (no run-off) or more candidates", config.runOffCandidates));
  }
  if (!(config.profileBudgetSeconds > 0)) {
    throw ConfigError("profileBudgetSeconds",
                      fmt::format(" {}: must be a positive number of seconds", config.profileBudgetSeconds));
  }
  if (config.calibrationRounds && *config.calibrationRounds < 0) {
    throw ConfigError("calibrationRounds", fmt::format(" {}: must not be negative", *config.calibrationRounds));
  }
  if (!(config.timeLimitSeconds >= 0)) {
    throw ConfigError("timeLimitSeconds", fmt::format(" {}: must not be negative", config.timeLimitSeconds));
  }
  if (!(config.calibrationBudgetSeconds >= 0)) {
    throw ConfigError("calibrationBudgetSeconds",
                      fmt::format(" {}: must not be negative", config.calibrationBudgetSeconds));
  }
}

std::string defaultTracesDir(const std::string& reportPath) {
  const fs::path report(reportPath);
  return (report.parent_path() / (report.stem().string() + ".traces")).string();
}

namespace {

std::string inputErrorText(SweepInputError::Input input, const std::string& path, const std::string& reason) {
  switch (input) {
    case SweepInputError::Input::ResumedReport: return "the report " + path + " is from another sweep (" + reason + ")";
    case SweepInputError::Input::ResumedProfile:
      return "the profile of " + path + " does not fit this sweep: " + reason;
    case SweepInputError::Input::CachedProfile: return "cached profile " + path + " does not fit: " + reason;
    case SweepInputError::Input::ResumedCalibration: break;
  }
  return "calibration " + path + ": " + reason;
}

}  // namespace

SweepInputError::SweepInputError(Input input, std::string path, std::string reason)
    : std::invalid_argument(inputErrorText(input, path, reason)),
      input_(input),
      path_(std::move(path)),
      reason_(std::move(reason)) {}

std::optional<Profile> readCachedProfile(const std::string& path, const SweepModel& model,
                                         const TrainingStepOptions& step, bool needsBackwardSplit) {
  if (path.empty() || !fs::exists(path)) return std::nullopt;
  Profile profile = readProfile(path);
  // One measured before zero-bubble schedules existed has no I/W times: it is measured again.
  if (needsBackwardSplit && !profile.hasBackwardSplit()) return std::nullopt;
  const std::string mismatch =
      profileMismatch(profile, model.spec, model.devices.front().typeName(), model.layers, step);
  if (!mismatch.empty()) throw SweepInputError(SweepInputError::Input::CachedProfile, path, mismatch);
  if (profile.environment.optimizer.kind != step.optimizer.kind)
    profile = withOptimizer(std::move(profile), step.optimizer);
  return profile;
}

SweepInputs loadSweepInputs(const SweepConfig& config, std::int64_t layers, bool resume) {
  using Input = SweepInputError::Input;
  SweepInputs inputs;
  const SweepModel model{config.model, config.devices, config.batch, layers};
  if (resume && fs::exists(config.reportPath)) {
    Report resumed = readReport(config.reportPath);
    const std::string mismatch = resumeMismatch(resumed, config);
    if (!mismatch.empty()) throw SweepInputError(Input::ResumedReport, config.reportPath, mismatch);
    if (resumed.profile) {
      const std::string profileMisfit =
          profileMismatch(*resumed.profile, model.spec, model.devices.front().typeName(), layers, config.step);
      if (!profileMisfit.empty()) throw SweepInputError(Input::ResumedProfile, config.reportPath, profileMisfit);
      inputs.cachedProfile = resumed.profile;
    }
    inputs.resumedReport = std::move(resumed);
  }
  if (!inputs.cachedProfile) {
    const bool zeroBubble = std::any_of(config.schedules.begin(), config.schedules.end(),
                                        [](ScheduleKind kind) { return splitsBackward(kind); });
    inputs.cachedProfile = readCachedProfile(config.profilePath, model, config.step, zeroBubble);
  }
  if (!config.calibrationPath.empty()) {
    if (resume) {
      throw SweepInputError(Input::ResumedCalibration, config.calibrationPath,
                            "a resumed sweep keeps its report's calibration");
    }
    inputs.calibration = readCalibration(config.calibrationPath);
  }
  return inputs;
}

}  // namespace pipeprof::tuner
