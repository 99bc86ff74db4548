// Before a sweep runs: its model on its devices, its config checked, and what it starts from loaded.
//
//   resolveSweepModel (devices checked, threads chosen, layers counted) -> SweepConfig filled by
//   the caller -> checkSweepConfig -> loadSweepInputs (a resumed report, a cached profile, a
//   calibration file; each checked against the sweep) -> runSweep (tuner/sweep.h)
//
// Every check throws before any file is created. ConfigError names the field of the struct it
// checked, so a caller with its own names for them (the command line's flags) can say them.
#pragma once

#include <pipeprof/core/device.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/tuner/sweep.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// A field of a request that cannot run. what() is the field's name as the struct spells it
/// followed by rest(), e.g. "steps" + " 0: must be at least 1"; value() is the offending value
/// as text, for callers that say it their own way.
class ConfigError : public std::invalid_argument {
 public:
  ConfigError(const std::string& field, const std::string& rest, std::string value = "")
      : std::invalid_argument(field + rest), field_(field), rest_(rest), value_(std::move(value)) {}
  const std::string& field() const { return field_; }
  const std::string& rest() const { return rest_; }
  const std::string& value() const { return value_; }

 private:
  std::string field_;
  std::string rest_;
  std::string value_;
};

/// The model of a sweep (or a calibration) on its pipeline devices.
struct SweepModel {
  ModelSpec spec;  ///< threads resolved: the given ones, else max(1, cores / devices) (sweepThreads)
  std::vector<DeviceDesc> devices;
  std::int64_t batch = 0;   ///< the given batch, else the model's default
  std::int64_t layers = 0;  ///< of the model, built once to count them
};

/// Checks the devices -- at least one, all of one type (the profile is measured on the first),
/// present (CUDA available, indices in range), no more than the model has layers -- and builds
/// the model once. `batch` <= 0 takes the model's default. Throws ConfigError("devices") for the
/// devices, std::invalid_argument from the runtime for an unknown model, an unreadable model
/// file or a device that is not there.
SweepModel resolveSweepModel(ModelSpec spec, std::vector<DeviceDesc> devices, std::int64_t batch = 0);

/// The search space of the sweep's candidates (its schedules, v, chunks, modes and balances on
/// its devices).
SearchSpace sweepSearchSpace(const SweepConfig& config);

/// Checks what the sweep would do with `config` on a model of `layers` layers, in this order:
/// every given balance has one of the stage counts its schedules give the devices
/// (stageCounts), positive parts and `layers` in all (ConfigError "balances", value() the
/// balance); steps >= 1; warmupSteps >= 0; 1 <= rounds <= steps; profileBudgetSeconds > 0;
/// calibrationBudgetSeconds >= 0. Throws ConfigError naming the first that is not.
void checkSweepConfig(const SweepConfig& config, std::int64_t layers);

/// Where a sweep writing its report to `reportPath` puts its traces unless told:
/// "<report stem>.traces" beside the report ("out/report.json" -> "out/report.traces").
std::string defaultTracesDir(const std::string& reportPath);

/// One of a sweep's inputs does not fit it; what() says which, and why.
class SweepInputError : public std::invalid_argument {
 public:
  enum class Input {
    ResumedReport,       ///< the report to resume was written by another sweep
    ResumedProfile,      ///< the profile in the report to resume does not fit the model
    CachedProfile,       ///< the profile cache does not fit the model
    ResumedCalibration,  ///< a calibration file for a resumed sweep, which keeps its report's
  };
  SweepInputError(Input input, std::string path, std::string reason);
  Input input() const { return input_; }
  /// The file: the report, the profile cache or the calibration file.
  const std::string& path() const { return path_; }
  /// Why it does not fit, e.g. "batch 8 there, 4 here".
  const std::string& reason() const { return reason_; }

 private:
  Input input_;
  std::string path_;
  std::string reason_;
};

/// The profile cached at `path` when that file exists (nullopt for an empty path or no file),
/// checked against the model it is to predict and the training step (profileMismatch), as if
/// measured with the step's optimizer when it measured that kind's steps too (withOptimizer).
/// Throws SweepInputError (CachedProfile) when it does not fit, FormatError for a malformed file.
/// `needsBackwardSplit` (zero-bubble schedules asked for): a profile measured before they
/// existed, without the backward's I/W split, is left for the caller to measure again (nullopt).
std::optional<Profile> readCachedProfile(const std::string& path, const SweepModel& model,
                                         const TrainingStepOptions& step = {}, bool needsBackwardSplit = false);

/// What a sweep of `config` on a model of `layers` layers starts from: with `resume` and a
/// report at config.reportPath, that report and its profile (it must be this sweep's:
/// resumeMismatch, profileMismatch); else the profile cached at config.profilePath, when it
/// exists; and the calibration config.calibrationPath names (none with `resume`: a resumed
/// sweep keeps its report's). Throws SweepInputError naming the input that does not fit,
/// FormatError for a malformed file.
SweepInputs loadSweepInputs(const SweepConfig& config, std::int64_t layers, bool resume);

}  // namespace pipeprof::tuner
