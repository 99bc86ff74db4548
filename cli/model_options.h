// Shared CLI flags for choosing a model and its batch (--model, --batch, --width, --depth, --seed,
// --threads) and for naming devices.
#pragma once

#include <pipeprof/core/device.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/models.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// What the model flags hold after parsing. A flag left out holds 0 ("the model's default");
/// a flag given must be at least 1 (CLI11 refuses 0 and negative values with exit code 2).
struct ModelFlags {
  std::string model = "mlp";   ///< zoo name or TorchScript file (.pt)
  std::int64_t batch = 0;      ///< mini-batch in samples; 0 = the model's default batch
  std::int64_t width = 0;      ///< 0 = the model's default
  std::int64_t depth = 0;      ///< 0 = the model's default
  std::int64_t seed = 0;       ///< parameter initialisation seed
  std::int64_t threads = 0;    ///< intra-op threads (LibTorch and OpenBLAS); 0 = leave their defaults

  /// The model to build (runtime/models.h).
  ModelSpec spec() const;
};

/// Adds --model, --batch, --width, --depth, --seed and --threads to a subcommand.
void addModelFlags(CLI::App& command, ModelFlags& flags);

/// A CLI11 check for a count flag whose absence means a default: the value given must be an
/// integer of at least 1; the message says what leaving the flag out means.
CLI::Validator atLeastOne(const std::string& whenLeftOut);

/// Builds the model the flags name and applies --threads. Throws std::invalid_argument (exit 2,
/// as a UsageError) for an unknown model or an unreadable file.
Model buildModelFromFlags(const ModelFlags& flags);

/// The batch the flags ask for, or the model's default batch.
std::int64_t batchFromFlags(const ModelFlags& flags, const Model& model);

/// Parses a comma-separated device list ("cpu,cpu", "cuda:0,cuda:1"); UsageError on bad text.
std::vector<DeviceDesc> parseDevicesFlag(const std::string& text);

/// The model on its pipeline devices, as sweep and calibrate take them.
struct ModelOnDevices {
  ModelSpec spec;  ///< threads resolved: --threads, else max(1, cores / devices)
  std::vector<DeviceDesc> devices;
  std::int64_t batch = 0;   ///< --batch, else the model's default
  std::int64_t layers = 0;  ///< of the model, built once to check
};

/// Resolves the model flags and --devices (`devicesText`): at least one device, all of one
/// type, present (CUDA available, indices in range), and no more devices than layers. Throws
/// UsageError (or std::invalid_argument from the runtime, exit 2 alike) naming what is wrong.
ModelOnDevices resolveModelOnDevices(const ModelFlags& flags, const std::string& devicesText);

/// The profile cached at `path` when that file exists (nullopt for an empty path or no file),
/// checked against the model it is to predict (tuner::profileMismatch). Throws UsageError
/// naming the file and the difference, FormatError for a malformed file.
std::optional<Profile> readCachedProfile(const std::string& path, const ModelOnDevices& model);

}  // namespace pipeprof::cli
